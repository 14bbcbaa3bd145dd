#!/usr/bin/env bash
# Installs `ember` as a new user would (`cargo install --path crates/ember-cli`), then trains,
# evaluates and plots from an empty folder outside the repository: presets, fonts and all
# it reads must be inside the binary or found without the source tree.
#
# Usage: scripts/check-install.sh ALGO ENV STEPS [cargo install flags, e.g. --features mujoco]
#
# It installs with the test profile (a cold release build takes ~15 minutes on 2 cores); users
# install with the default (release). With EMBER_BIN set (CI: the binary its workspace tests
# built), that binary is installed instead of building one: `cargo install` builds the crate
# on its own, with other features for shared dependencies, which rebuilds burn.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { echo "usage: $0 ALGO ENV STEPS [cargo install flags]" >&2; exit 2; }
algo="$1" env="$2" steps="$3"
shift 3
target="${CARGO_TARGET_DIR:-$(pwd)/target}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [ -n "${EMBER_BIN:-}" ]; then
    [ -x "$EMBER_BIN" ] || { echo "EMBER_BIN=$EMBER_BIN is not an executable" >&2; exit 1; }
    install -D -m 755 "$EMBER_BIN" "$work/installed/bin/ember"
    echo "installed $EMBER_BIN (not built: EMBER_BIN is set)"
else
    CARGO_TARGET_DIR="$target" cargo install --path crates/ember-cli --profile test --locked \
        --root "$work/installed" --quiet "$@"
fi
mkdir "$work/empty"
cd "$work/empty"
ember="$work/installed/bin/ember"
"$ember" train "$algo" --env "$env" --steps "$steps" --quiet
run="runs/$algo-$env-s0"
[ -f "$run/meta.json" ] && [ -f "$run/checkpoint/trainer.state" ] ||
    { echo "no run folder $run after ember train" >&2; exit 1; }
"$ember" eval "$run" --episodes 2
"$ember" plot "$run" -o curve.png
[ -s curve.png ] || { echo "ember plot wrote no curve.png" >&2; exit 1; }
echo "installed ember trained, evaluated and plotted $algo on $env from an empty folder"
