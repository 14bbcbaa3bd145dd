#!/usr/bin/env bash
# The 1M-step MuJoCo results of docs/results.md, one run after another, resumable: run it
# again after a kill (or in the next session) and it continues each unfinished run from its
# last checkpoint (`ember train --resume`), skipping finished ones (marked `done`).
#
# Usage: scripts/mujoco-results.sh RUNS_DIR [EMBER_BINARY]
#   RUNS_DIR/ALGO-ENV/sSEED per run; RUNS_DIR/queue.log collects the output.
#   EMBER_BINARY: a release `ember` built with `--features mujoco` (default
#   target/release/ember; copy it elsewhere so that rebuilding does not change a run).
# Needs the environment of scripts/setup-mujoco.sh. Runs at nice 19: pause it with
# `pkill -STOP -f "ember.* train"` while measuring speed, `pkill -CONT ...` after.
set -uo pipefail
RUNS="${1:?usage: scripts/mujoco-results.sh RUNS_DIR [EMBER_BINARY]}"
EMBER="${2:-$(cd "$(dirname "$0")/.." && pwd)/target/release/ember}"
[ -x "$EMBER" ] || { echo "no ember binary at $EMBER" >&2; exit 1; }
mkdir -p "$RUNS"
run() { # ALGO ENV SEED
    local dir="$RUNS/$1-$2/s$3"
    [ -f "$dir/done" ] && return 0
    if [ -d "$dir/checkpoint" ]; then
        nice -n 19 "$EMBER" train --resume "$dir" >> "$RUNS/queue.log" 2>&1
    else
        mkdir -p "$RUNS/$1-$2"
        rm -rf "$dir" # a run killed before its first checkpoint starts over
        nice -n 19 "$EMBER" train "$1" --env "$2" --seed "$3" --quiet --out "$dir" \
            >> "$RUNS/queue.log" 2>&1
    fi || { echo "$(date -u) $dir failed (see queue.log)" >> "$RUNS/queue.log"; return 1; }
    touch "$dir/done"
    echo "$(date -u) done $dir" >> "$RUNS/queue.log"
}
for seed in 0 1 2; do run sac HalfCheetah-v5 "$seed" || exit 1; done
for seed in 0 1 2; do run sac Hopper-v5 "$seed" || exit 1; done
for seed in 0 1 2; do run td3 HalfCheetah-v5 "$seed" || exit 1; done
