#!/usr/bin/env bash
# Installs MuJoCo for emberlab-env's `mujoco` feature from PyPI's wheels (never a download at build
# time): `mujoco==3.17.0` ships `libmujoco.so.3.17.0`, which `mujoco-rs = "=7.0.0"` links;
# `gymnasium==1.4.0` ships the task XML files the native environments load, and is the
# reference the trace generator (crates/emberlab-env/tools/gen_mujoco_traces.py) records from (its MuJoCo
# environments import `imageio`, and `packaging`, which the venv gets too); `numpy==2.4.6`
# ships `libnpyrandom.a`, NumPy's samplers for C users, from which the tasks' normal reset
# noise is drawn (so a seeded reset matches Gymnasium's to the bit).
#
# Shipped in emberlab-env's package (crates.io users run it from the crate's folder in
# ~/.cargo/registry/src/*/emberlab-env-*/); the repository's scripts/setup-mujoco.sh calls it.
#
# Usage: setup-mujoco.sh [VENV_DIR]     (default: .venv-mujoco in the current folder)
# Idempotent: skips the install when the venv already has both versions. Prints the
# environment to export before `cargo build --features mujoco`; write it to a file and
# source that, so that a failed install stops the caller:
#   scripts/setup-mujoco.sh > /tmp/mujoco.env && . /tmp/mujoco.env
#
# What it exports:
# - MUJOCO_DYNAMIC_LINK_DIR: a folder (`.mujoco-lib/` beside the venv) holding a
#   `libmujoco.so` link to the wheel's library: mujoco-rs links against it, and emberlab-env's
#   build script embeds it as an rpath, so binaries run without LD_LIBRARY_PATH. It also
#   holds a `libnpyrandom.a` link to the NumPy wheel's archive, which emberlab-env links.
# - EMBER_GYMNASIUM_ASSETS: Gymnasium's `envs/mujoco/assets` folder, where the native tasks
#   read their model XML files (each task's file can also be given per environment).
# - EMBER_MUJOCO_PYTHON: the venv's python, for the trace generator and the bridge tests.
set -euo pipefail
VENV="${1:-$PWD/.venv-mujoco}"
mkdir -p "$(dirname "$VENV")"
VENV="$(cd "$(dirname "$VENV")" && pwd)/$(basename "$VENV")"
MUJOCO="3.17.0"
GYMNASIUM="1.4.0"
NUMPY="2.4.6"

have_both() {
    [ -x "$VENV/bin/python" ] &&
        "$VENV/bin/python" - <<EOF 2>/dev/null
import sys, mujoco, gymnasium, gymnasium.envs.mujoco, numpy
have = (mujoco.__version__, gymnasium.__version__, numpy.__version__)
sys.exit(0 if have == ("$MUJOCO", "$GYMNASIUM", "$NUMPY") else 1)
EOF
}

if have_both; then
    echo "# mujoco $MUJOCO, gymnasium $GYMNASIUM and numpy $NUMPY already in $VENV" >&2
else
    echo "# installing mujoco==$MUJOCO, gymnasium==$GYMNASIUM and numpy==$NUMPY into $VENV (about 100 MB)" >&2
    python3 -m venv "$VENV" >&2
    if ! "$VENV/bin/python" -m pip install --quiet --no-cache-dir --disable-pip-version-check \
        "mujoco==$MUJOCO" "gymnasium==$GYMNASIUM" "numpy==$NUMPY" imageio packaging >&2 ||
        ! have_both; then
        rm -rf "$VENV"
        echo "mujoco $MUJOCO / gymnasium $GYMNASIUM / numpy $NUMPY did not install into $VENV" >&2
        exit 1
    fi
fi

# The wheel's library, found by its version rather than by a guessed path.
SO="$("$VENV/bin/python" - <<'EOF'
import glob, os, mujoco
hits = sorted(glob.glob(os.path.join(os.path.dirname(mujoco.__file__), "libmujoco.so.*")))
print(hits[0] if hits else "")
EOF
)"
if [ -z "$SO" ] || [ ! -f "$SO" ]; then
    echo "the mujoco wheel in $VENV ships no libmujoco.so.*" >&2
    exit 1
fi
LIBDIR="$(dirname "$VENV")/.mujoco-lib"
mkdir -p "$LIBDIR"
ln -sfn "$SO" "$LIBDIR/libmujoco.so"
ln -sfn "$SO" "$LIBDIR/$(basename "$SO")"
# NumPy's samplers for C users (its normal sampler draws the tasks' reset noise).
NPYRANDOM="$("$VENV/bin/python" -c 'import os, numpy.random as r; print(os.path.join(os.path.dirname(r.__file__), "lib", "libnpyrandom.a"))')"
[ -f "$NPYRANDOM" ] || { echo "the numpy wheel in $VENV ships no $NPYRANDOM" >&2; exit 1; }
ln -sfn "$NPYRANDOM" "$LIBDIR/libnpyrandom.a"
ASSETS="$("$VENV/bin/python" -c 'import os, gymnasium.envs.mujoco as m; print(os.path.join(os.path.dirname(m.__file__), "assets"))')"
[ -f "$ASSETS/half_cheetah.xml" ] || { echo "no half_cheetah.xml in $ASSETS" >&2; exit 1; }

echo "export MUJOCO_DYNAMIC_LINK_DIR=\"$LIBDIR\""
echo "export EMBER_GYMNASIUM_ASSETS=\"$ASSETS\""
echo "export EMBER_MUJOCO_PYTHON=\"$VENV/bin/python\""
