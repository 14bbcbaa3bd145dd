#!/usr/bin/env bash
# Installs the Python references the benchmarks compare with (docs/benchmarks.md):
# - into the torch venv of scripts/setup-libtorch.sh (`.venv-torch`, torch 2.9.0):
#   stable-baselines3, gymnasium 1.4.0 with MuJoCo 3.17.0 (sb3_train.py, sac_update.py, ...),
#   cpprb (python_wheel.py replay);
# - into `.venv-envpool`: EnvPool (mujoco_envs.py envpool), which pins its own NumPy and
#   ships its own MuJoCo, so it gets a venv of its own.
# Gymnasium alone (mujoco_envs.py gym, the trace generator) is scripts/setup-mujoco.sh's venv.
#
# Usage: benches/reference/setup.sh        (idempotent; a few minutes the first time)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
"$ROOT/scripts/setup-libtorch.sh" > /dev/null
"$ROOT/.venv-torch/bin/python" -m pip install --quiet --disable-pip-version-check \
    stable-baselines3 "gymnasium[mujoco]==1.4.0" "mujoco==3.17.0" cpprb
"$ROOT/.venv-torch/bin/python" -c "import stable_baselines3, gymnasium.envs.mujoco"
if [ ! -x "$ROOT/.venv-envpool/bin/python" ]; then
    python3 -m venv "$ROOT/.venv-envpool"
fi
"$ROOT/.venv-envpool/bin/python" -m pip install --quiet --disable-pip-version-check envpool
"$ROOT/.venv-envpool/bin/python" -c "import envpool"
echo "references installed: .venv-torch (SB3, Gymnasium + MuJoCo), .venv-envpool (EnvPool)" >&2
