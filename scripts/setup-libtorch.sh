#!/usr/bin/env bash
# Installs libtorch for Ember's `tch` feature from PyPI's torch wheel (never a download at
# build time). burn 0.22.1 -> tch 0.22 -> libtorch 2.9.0, so torch==2.9.0 it is.
#
# Usage: scripts/setup-libtorch.sh [VENV_DIR]
# The venv takes about 7 GB (PyPI's Linux wheel brings CUDA's libraries), so by default it
# lives once per user, in $EMBER_TORCH_VENV or else ~/.cache/ember/venv-torch-2.9.0, and
# every clone gets a `.venv-torch` link to it (the reference scripts run as
# `.venv-torch/bin/python ...`); a `.venv-torch` folder already in the clone is used as is.
# Idempotent: skips the install when the venv already has torch 2.9.0 (and numpy, for the
# reference scripts). Prints the environment to export before `cargo build --features tch`;
# write it to a file and source that, so that a failed install stops the caller:
#   scripts/setup-libtorch.sh > /tmp/torch.env && . /tmp/torch.env
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WANT="2.9.0"
LINK="$ROOT/.venv-torch"
if [ $# -ge 1 ]; then
    VENV="$1"
elif [ -d "$LINK" ] && [ ! -L "$LINK" ]; then
    VENV="$LINK"
else
    VENV="${EMBER_TORCH_VENV:-${XDG_CACHE_HOME:-${HOME:-$ROOT}/.cache}/ember/venv-torch-$WANT}"
fi

have_torch() {
    [ -x "$VENV/bin/python" ] &&
        "$VENV/bin/python" -c "import numpy, torch, sys; sys.exit(0 if torch.__version__.split('+')[0] == '$WANT' else 1)" 2>/dev/null
}

if have_torch; then
    echo "# torch $WANT already in $VENV" >&2
else
    mkdir -p "$(dirname "$VENV")"
    echo "# installing torch==$WANT into $VENV (about 7 GB, a few minutes;" \
        "$(df -h "$(dirname "$VENV")" | awk 'NR==2 {print $4}') free)" >&2
    python3 -m venv "$VENV" >&2
    # A failed install leaves no half-filled venv behind to take the disk.
    if ! "$VENV/bin/python" -m pip install --quiet --no-cache-dir --disable-pip-version-check \
        "torch==$WANT" numpy >&2 || ! have_torch; then
        rm -rf "$VENV"
        echo "torch $WANT did not install into $VENV" >&2
        exit 1
    fi
fi

if [ "$VENV" != "$LINK" ] && { [ -L "$LINK" ] || [ ! -e "$LINK" ]; }; then
    ln -sfn "$VENV" "$LINK"
fi

LIBDIR="$("$VENV/bin/python" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')"
echo "export VIRTUAL_ENV=\"$VENV\""
echo "export PATH=\"$VENV/bin:\$PATH\""
echo "export LIBTORCH_USE_PYTORCH=1"
# Binaries built with `--features tch` carry an rpath to this folder (build scripts of
# emberlab-backend and emberlab); it is printed for tools that need it.
echo "export EMBER_LIBTORCH_LIB=\"$LIBDIR\""
