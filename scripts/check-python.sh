#!/usr/bin/env bash
# Builds the `ember-rl` wheel (crates/ember-py, maturin, release) into target/wheels, installs
# it into the venv of scripts/setup-python.sh and runs its pytest suite (with EMBER_BIN, the
# `ember` command its policy tests train runs with). A failing or empty
# pytest run (exit 5: no test collected) fails this script.
#
# Usage: scripts/check-python.sh [pytest args...]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ENV_FILE="$(mktemp)"
trap 'rm -f "$ENV_FILE"' EXIT
"$ROOT/scripts/setup-python.sh" > "$ENV_FILE"
. "$ENV_FILE"
OUT="${CARGO_TARGET_DIR:-$ROOT/target}/wheels"
rm -f "$OUT"/ember_rl-*.whl
# With MuJoCo set up (scripts/setup-mujoco.sh exported MUJOCO_DYNAMIC_LINK_DIR), the wheel
# carries the MuJoCo tasks and tests/test_mujoco.py must find them. The module then links
# the MuJoCo library of that folder (an rpath): a wheel for this machine, not for PyPI.
FEATURES=()
if [ -n "${MUJOCO_DYNAMIC_LINK_DIR:-}" ]; then
    FEATURES=(--features mujoco --auditwheel skip)
    export EMBER_PY_MUJOCO=1
fi
"$EMBER_PY_PYTHON" -m maturin build --release --locked -m "$ROOT/crates/ember-py/Cargo.toml" \
    -i "$EMBER_PY_PYTHON" -o "$OUT" "${FEATURES[@]}"
WHEEL="$(ls "$OUT"/ember_rl-*.whl)"
# tests/test_policy.py trains runs with the `ember` command: EMBER_BIN when set (CI: the
# binary its workspace tests built), else the test profile's binary, built here without
# MuJoCo's variable, as the workspace test build ran (the build scripts watch it, and a
# change would rebuild ember-env and everything above it).
if [ -z "${EMBER_BIN:-}" ]; then
    env -u MUJOCO_DYNAMIC_LINK_DIR cargo build --manifest-path "$ROOT/Cargo.toml" \
        --profile test --locked -p ember-cli --bin ember --quiet
    export EMBER_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/ember"
fi
[ -x "$EMBER_BIN" ] || { echo "EMBER_BIN=$EMBER_BIN is not an executable" >&2; exit 1; }
export EMBER_BIN
echo "== wheel: $WHEEL ($(du -h "$WHEEL" | cut -f1))"
"$EMBER_PY_PYTHON" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$WHEEL"
cd "$ROOT/crates/ember-py"
# Run from the crate folder with the installed package (not the source tree's python/ember,
# which has no native module): --import-mode=importlib keeps tests/ off sys.path[0].
"$EMBER_PY_PYTHON" -m pytest -q --import-mode=importlib tests "$@"
