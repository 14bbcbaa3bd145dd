#!/usr/bin/env bash
# Builds the `ember-rl` wheel (crates/ember-py, maturin, release) into target/wheels, installs
# it into the venv of scripts/setup-python.sh and runs its pytest suite. A failing or empty
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
"$EMBER_PY_PYTHON" -m maturin build --release --locked -m "$ROOT/crates/ember-py/Cargo.toml" \
    -i "$EMBER_PY_PYTHON" -o "$OUT"
WHEEL="$(ls "$OUT"/ember_rl-*.whl)"
echo "== wheel: $WHEEL ($(du -h "$WHEEL" | cut -f1))"
"$EMBER_PY_PYTHON" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$WHEEL"
cd "$ROOT/crates/ember-py"
# Run from the crate folder with the installed package (not the source tree's python/ember,
# which has no native module): --import-mode=importlib keeps tests/ off sys.path[0].
"$EMBER_PY_PYTHON" -m pytest -q --import-mode=importlib tests "$@"
