#!/usr/bin/env bash
# Installs what the Python wheel (crates/emberlab-py) is built and tested with, into the torch
# venv of scripts/setup-libtorch.sh (torch 2.9.0 from PyPI; Stable-Baselines3 needs torch):
# maturin, pytest, gymnasium 1.4.0, stable-baselines3, onnxruntime (emberlab-cli's
# tests/export_onnx.rs runs exported policies in it), mujoco 3.17.0 (the wheel's MuJoCo
# tasks are checked against Gymnasium's, which step through it; Gymnasium's MuJoCo
# environments also import `imageio`, which no package here depends on, so it is named),
# and ale-py 0.12.1 with opencv-python-headless (emberlab-env's Atari worker and its traces:
# SB3's AtariWrapper resizes frames with OpenCV; ale-py's wheel ships the ROMs).
#
# Usage: scripts/setup-python.sh > /tmp/py.env && . /tmp/py.env
# Idempotent. Prints the environment to export (EMBER_PY_PYTHON: the venv's interpreter).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/scripts/setup-libtorch.sh" > /dev/null
PY="$ROOT/.venv-torch/bin/python"
if ! "$PY" -c "import maturin, pytest, gymnasium, gymnasium.envs.mujoco, stable_baselines3, onnxruntime, mujoco, ale_py, cv2, sys; sys.exit(0 if (gymnasium.__version__, mujoco.__version__, ale_py.__version__) == ('1.4.0', '3.17.0', '0.12.1') else 1)" 2>/dev/null; then
    echo "# installing maturin, pytest, gymnasium 1.4.0, stable-baselines3, onnxruntime, mujoco 3.17.0, imageio, ale-py 0.12.1 and opencv-python-headless into $ROOT/.venv-torch" >&2
    "$PY" -m pip install --quiet --disable-pip-version-check \
        "maturin>=1.9,<2" pytest "gymnasium==1.4.0" "stable-baselines3>=2.7" onnxruntime "mujoco==3.17.0" imageio \
        "ale-py==0.12.1" opencv-python-headless >&2
fi
# Gymnasium's MuJoCo environments included: the wheel's tests step them.
"$PY" -c "import maturin, pytest, gymnasium, gymnasium.envs.mujoco, stable_baselines3, onnxruntime, mujoco, ale_py, cv2" >&2
echo "export EMBER_PY_PYTHON=\"$PY\""
