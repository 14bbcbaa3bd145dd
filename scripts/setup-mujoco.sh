#!/usr/bin/env bash
# MuJoCo 3.17.0, Gymnasium 1.4.0's task files and NumPy's libnpyrandom.a from PyPI, for the
# `mujoco` feature: the script emberlab-env ships in its package
# (crates/emberlab-env/setup-mujoco.sh, which says what it exports), with the venv in the
# repository root.
#
# Usage: scripts/setup-mujoco.sh [VENV_DIR] > /tmp/mujoco.env && . /tmp/mujoco.env
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
exec "$ROOT/crates/emberlab-env/setup-mujoco.sh" "${1:-$ROOT/.venv-mujoco}"
