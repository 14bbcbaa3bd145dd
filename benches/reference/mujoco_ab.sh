#!/usr/bin/env bash
# Two Ember binaries and SB3 alternated in one window on SAC or TD3 HalfCheetah-v5, with
# mujoco_e2e.sh's protocol (zoo's preset, rate over env steps 10,000..14,000 from the run's
# metrics.csv; SB3 timed over 2,000 steps after its 10,000 random ones): for a change's
# before and after against the same SB3 runs. Each round runs BEFORE, AFTER, then SB3.
# Needs scripts/setup-mujoco.sh's environment and benches/reference/setup.sh's references.
#
# Usage: benches/reference/mujoco_ab.sh BEFORE_EMBER AFTER_EMBER sac|td3 [ROUNDS]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BEFORE="$1"
AFTER="$2"
ALGO="$3"
ROUNDS="${4:-3}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
rate() {
    python3 - "$1" <<'PY'
import csv, sys
rows = {int(r["env_steps"]): r for r in csv.DictReader(open(sys.argv[1]))}
a, b = rows[10000], rows[14000]
print(f"{4000 / (float(b['wall_secs']) - float(a['wall_secs'])):.1f}")
PY
}
for i in $(seq "$ROUNDS"); do
    for which in before after; do
        bin="$BEFORE"
        [ "$which" = after ] && bin="$AFTER"
        "$bin" train "$ALGO" --env HalfCheetah-v5 --steps 14000 \
            --set off_policy.eval_episodes=0 --out "$OUT/$which$i" --quiet > /dev/null 2>&1
        echo "ember-$which algo=$ALGO env=HalfCheetah-v5 env_steps_per_s=$(rate "$OUT/$which$i/metrics.csv")"
    done
    "$ROOT/.venv-torch/bin/python" "$ROOT/benches/reference/sb3_train.py" "$ALGO" HalfCheetah-v5 \
        2000 --warmup 10000 --threads 2 2> /dev/null
done
