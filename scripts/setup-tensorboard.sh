#!/usr/bin/env bash
# Installs the `tensorboard` Python package into a venv, for emberlab-cli's read-back test
# (crates/emberlab-cli/tests/tensorboard_reader.rs reads our event files with TensorBoard's own
# EventAccumulator). Nothing in the build needs it.
#
# Usage: scripts/setup-tensorboard.sh [VENV_DIR]     (default: .venv-tb in the repo root)
# Idempotent: skips the install when the venv can already import the reader. Prints the
# environment to export before `cargo test -p emberlab-cli`; `source` its output:
#   scripts/setup-tensorboard.sh > /tmp/tb.env && . /tmp/tb.env
# (a failed install then stops there; `eval "$(…)"` would hide it)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${1:-$ROOT/.venv-tb}"

have_tensorboard() {
    [ -x "$VENV/bin/python" ] &&
        "$VENV/bin/python" -c "from tensorboard.backend.event_processing.event_accumulator import EventAccumulator" 2>/dev/null
}

if have_tensorboard; then
    echo "# tensorboard already in $VENV" >&2
else
    echo "# installing tensorboard into $VENV (about 180 MB with its dependencies)" >&2
    python3 -m venv "$VENV" >&2
    "$VENV/bin/pip" install --quiet --no-cache-dir --disable-pip-version-check tensorboard >&2
    have_tensorboard || { echo "tensorboard did not install into $VENV" >&2; exit 1; }
fi

echo "export EMBER_TB_PYTHON=\"$VENV/bin/python\""
