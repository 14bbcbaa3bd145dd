#!/usr/bin/env bash
# Whole runs of every learner that schedules its update's parts, on every fixed setting and
# on the default (`auto`), alternated in one window (docs/benchmarks.md, "Speed on every
# CPU: the schedule chosen by timing"). A setting is an update schedule (`parallel`,
# `sequential`) with the spin of waits (EMBER_SPIN_US unset: spinning up to 500 µs; 0:
# waits block at once); `auto` picks among them from the run's first updates.
#
# Each line: task, setting, env steps per second after the warm-up steps (from the run's
# metrics.csv; the REDQ example's whole run), and what `auto` chose (with its trials: the
# first and each re-trial; and the drift that started the last one). Needs a release `ember`
# built with --features mujoco (scripts/setup-mujoco.sh's environment for the MuJoCo tasks)
# and the REDQ example (`cargo build --release --example custom_redq`).
#
# Usage: benches/reference/schedules.sh [ROUNDS] [TASK...]
#   TASK: sac-cheetah td3-cheetah sac-pendulum td3-pendulum dqn-cartpole redq (default all)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
ROUNDS="${1:-1}"
[ $# -gt 0 ] && shift
TASKS=("$@")
[ ${#TASKS[@]} -gt 0 ] || TASKS=(sac-cheetah td3-cheetah sac-pendulum td3-pendulum dqn-cartpole redq)
EMBER="$ROOT/target/release/ember"
REDQ="$ROOT/target/release/examples/custom_redq"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
echo "# $(lscpu | grep -m1 'Model name' | sed 's/ \+/ /g'), model $(lscpu | awk -F: '/^Model:/ {gsub(/ /,"",$2); print $2}'), $(nproc) CPUs; $(date -u +%F)"

# task -> algo env total_steps rate_from
spec() {
    case "$1" in
        sac-cheetah) echo "sac HalfCheetah-v5 14000 10000" ;;
        td3-cheetah) echo "td3 HalfCheetah-v5 14000 10000" ;;
        sac-pendulum) echo "sac Pendulum-v1 4000 1000" ;;
        td3-pendulum) echo "td3 Pendulum-v1 14000 10000" ;;
        dqn-cartpole) echo "dqn CartPole-v1 12000 2000" ;;
        redq) echo "redq - - -" ;;
        *) echo "unknown task $1" >&2; exit 2 ;;
    esac
}

# setting -> schedule and spin
run_one() {
    local task="$1" setting="$2" algo env steps from schedule spin
    read -r algo env steps from <<<"$(spec "$task")"
    case "$setting" in
        auto) schedule=auto spin= ;;
        parallel) schedule=parallel spin= ;;
        parallel-block) schedule=parallel spin=0 ;;
        sequential) schedule=sequential spin= ;;
    esac
    local dir="$OUT/$task-$setting-$RANDOM" line chosen
    if [ "$algo" = redq ]; then
        # The REDQ example runs the command itself: its whole run's rate (as before).
        env ${spin:+EMBER_SPIN_US=$spin} "$REDQ" train redq --env Pendulum-v1 --steps 1000 \
            --set "redq.update_schedule=$schedule" --set off_policy.eval_episodes=0 \
            --out "$dir" --quiet --json > "$dir.json" 2>/dev/null
        line="$(python3 -c 'import json,sys
d=[json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")][-1]
print("%.1f" % (d["env_steps"] / d["wall_secs"]))' "$dir.json")"
        echo "$task $setting $line"
        return
    fi
    env ${spin:+EMBER_SPIN_US=$spin} "$EMBER" train "$algo" --env "$env" --steps "$steps" \
        --set "$algo.update_schedule=$schedule" --set off_policy.eval_episodes=0 \
        --out "$dir" --quiet --json > "$dir.json" 2>/dev/null
    chosen="$(python3 -c 'import json,sys
d=[json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")][-1]
print("; ".join("%s: %s, trials %d%s" % (k, v["chosen"], v["trials"], ", last drift %.2f" % v["drift"] if v.get("drift") else "") for k, v in d.get("schedules", {}).items()) or "-")' "$dir.json")"
    python3 - "$dir/metrics.csv" "$from" "$steps" "$task" "$setting" "$chosen" <<'PY'
import csv, sys
path, a, b, task, setting, chosen = sys.argv[1:]
rows = {int(r["env_steps"]): r for r in csv.DictReader(open(path))}
ra, rb = rows[int(a)], rows[int(b)]
rate = (int(b) - int(a)) / (float(rb["wall_secs"]) - float(ra["wall_secs"]))
print(f"{task} {setting} {rate:.1f} {chosen}")
PY
}

for round in $(seq "$ROUNDS"); do
    for task in "${TASKS[@]}"; do
        for setting in auto parallel parallel-block sequential; do
            run_one "$task" "$setting"
        done
    done
done
