#!/usr/bin/env bash
# End-to-end SAC or TD3 on HalfCheetah-v5, Ember then SB3, in one window (docs/benchmarks.md,
# "MuJoCo: HalfCheetah-v5"): both with zoo's MuJoCo preset, timed after the 10,000 random
# steps. Ember: `ember train ALGO --env HalfCheetah-v5 --steps 14000`, rate over env steps
# 10,000..14,000 from its metrics.csv. SB3: sb3_train.py with --warmup 10000, then 2,000
# timed steps. Needs a release `ember` built with --features mujoco, the environment of
# scripts/setup-mujoco.sh, and benches/reference/setup.sh's references.
#
# Usage: benches/reference/mujoco_e2e.sh sac|td3 [PAIRS]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
ALGO="$1"
PAIRS="${2:-3}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
for i in $(seq "$PAIRS"); do
    "$ROOT/target/release/ember" train "$ALGO" --env HalfCheetah-v5 --steps 14000 \
        --set off_policy.eval_episodes=0 --out "$OUT/$ALGO$i" --quiet > /dev/null 2>&1
    python3 - "$OUT/$ALGO$i/metrics.csv" "$ALGO" <<'PY'
import csv, sys
rows = {int(r["env_steps"]): r for r in csv.DictReader(open(sys.argv[1]))}
a, b = rows[10000], rows[14000]
rate = 4000 / (float(b["wall_secs"]) - float(a["wall_secs"]))
print(f"ember algo={sys.argv[2]} env=HalfCheetah-v5 updates={int(b['updates']) - int(a['updates'])} "
      f"env_steps_per_s={rate:.1f}")
PY
    "$ROOT/.venv-torch/bin/python" "$ROOT/benches/reference/sb3_train.py" "$ALGO" HalfCheetah-v5 \
        2000 --warmup 10000 --threads 2 2> /dev/null
done
