#!/usr/bin/env bash
# Installs libtorch for Ember's `tch` feature from PyPI's torch wheel (never a download at
# build time). burn 0.22.1 -> tch 0.22 -> libtorch 2.9.0, so torch==2.9.0 it is.
#
# Usage: scripts/setup-libtorch.sh [VENV_DIR]     (default: .venv-torch in the repo root)
# Idempotent: skips the install when the venv already has torch 2.9.0 (and numpy, for the
# reference scripts). Prints the
# environment to export before `cargo build --features tch`; `source` its output:
#   eval "$(scripts/setup-libtorch.sh)"
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${1:-$ROOT/.venv-torch}"
WANT="2.9.0"

have_torch() {
    [ -x "$VENV/bin/python" ] &&
        "$VENV/bin/python" -c "import numpy, torch, sys; sys.exit(0 if torch.__version__.split('+')[0] == '$WANT' else 1)" 2>/dev/null
}

if have_torch; then
    echo "# torch $WANT already in $VENV" >&2
else
    echo "# installing torch==$WANT into $VENV (about 4 GB, a few minutes)" >&2
    python3 -m venv "$VENV" >&2
    "$VENV/bin/pip" install --quiet --no-cache-dir --disable-pip-version-check "torch==$WANT" numpy >&2
    have_torch || { echo "torch $WANT did not install into $VENV" >&2; exit 1; }
fi

LIBDIR="$("$VENV/bin/python" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')"
echo "export VIRTUAL_ENV=\"$VENV\""
echo "export PATH=\"$VENV/bin:\$PATH\""
echo "export LIBTORCH_USE_PYTORCH=1"
# Binaries built with `--features tch` carry an rpath to this folder (build scripts of
# ember-backend and ember); it is printed for tools that need it.
echo "export EMBER_LIBTORCH_LIB=\"$LIBDIR\""
