#!/usr/bin/env python3
"""Reference for emberlab-env's `env_steps/pendulum_tensor_4096_flex`: Gymnasium's Pendulum steps/s.

    .venv/bin/pip install gymnasium==1.4.0 numpy
    .venv/bin/python benches/reference/gym_pendulum.py [--envs 64] [--seconds 5]

Measures `gymnasium.vector.SyncVectorEnv` over `Pendulum-v1` (each with its 200-step
TimeLimit; next-step autoreset) with random torques in [-2, 2] drawn beforehand, as the
Rust bench does. Gymnasium 1.4 has no NumPy-vectorised Pendulum (only a JAX one), so there is no second row.
"""

import argparse
import time

import gymnasium as gym
import numpy as np


def measure(envs, num_envs, seconds):
    rng = np.random.default_rng(7)
    table = rng.uniform(-2.0, 2.0, size=(1024, num_envs, 1)).astype(np.float32)
    envs.reset(seed=0)
    for t in range(200):  # warm-up
        envs.step(table[t % 1024])
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(100):
            envs.step(table[steps % 1024])
            steps += 1
    elapsed = time.perf_counter() - start
    envs.close()
    return steps * num_envs / elapsed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--envs", type=int, default=64)
    p.add_argument("--seconds", type=float, default=5.0)
    args = p.parse_args()
    n = args.envs
    sync = measure(gym.make_vec("Pendulum-v1", num_envs=n, vectorization_mode="sync"), n, args.seconds)
    print(f"gymnasium {gym.__version__} SyncVectorEnv Pendulum-v1 x{n}: {sync:,.0f} env steps/s")


if __name__ == "__main__":
    main()
