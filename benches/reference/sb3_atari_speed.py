"""SB3's own Atari stack for `atari_speed` to compare with: `VecFrameStack(VecEnv([AtariWrapper(
gym.make("PongNoFrameskip-v4"))] * n), 4)` stepped with random actions for 5 s, as
DummyVecEnv (one process) and SubprocVecEnv (one process per game).

Run: .venv-torch/bin/python benches/reference/sb3_atari_speed.py
Prints `sb3 KIND envs=N steps_per_s=X`.
"""
import sys, time, numpy as np, gymnasium as gym, ale_py
from stable_baselines3.common.atari_wrappers import AtariWrapper
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecFrameStack
gym.register_envs(ale_py)
def meas(venv, n, secs=5.0):
    venv.seed(0); venv.reset()
    rng=np.random.default_rng(0); k=0; t0=time.perf_counter()
    while time.perf_counter()-t0<secs:
        venv.step(rng.integers(0,6,size=n)); k+=n
    return k/(time.perf_counter()-t0)
mk = lambda: AtariWrapper(gym.make("PongNoFrameskip-v4"))
if __name__ == "__main__":
    for kind, n in [("dummy", 1), ("dummy", 8), ("subproc", 2), ("subproc", 8)]:
        cls = DummyVecEnv if kind == "dummy" else SubprocVecEnv
        v = VecFrameStack(cls([mk for _ in range(n)]), 4)
        print(f"sb3 {kind} envs={n} steps_per_s={meas(v, n):.0f}", flush=True)
        v.close()
