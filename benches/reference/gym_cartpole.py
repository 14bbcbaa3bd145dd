#!/usr/bin/env python3
"""Baseline for emberlab-env's `env_steps` bench: Gymnasium's vectorised CartPole steps/s.

    .venv/bin/pip install gymnasium==1.4.0 numpy
    .venv/bin/python benches/reference/gym_cartpole.py [--envs 64] [--seconds 5]

Measures `gymnasium.vector.SyncVectorEnv` (the Python loop over `CartPole-v1` envs, each
with its TimeLimit; next-step autoreset) with random actions drawn beforehand, as the Rust
bench does. Also reports Gymnasium's NumPy-vectorised `CartPoleVectorEnv`
(`vectorization_mode="vector_entry_point"`) for reference.
"""

import argparse
import time

import gymnasium as gym
import numpy as np


def measure(envs, num_envs, seconds):
    rng = np.random.default_rng(7)
    table = rng.integers(0, 2, size=(1024, num_envs))
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
    sync = measure(gym.make_vec("CartPole-v1", num_envs=n, vectorization_mode="sync"), n, args.seconds)
    print(f"gymnasium {gym.__version__} SyncVectorEnv CartPole-v1 x{n}: {sync:,.0f} env steps/s")
    vec = measure(
        gym.make_vec("CartPole-v1", num_envs=n, vectorization_mode="vector_entry_point"), n, args.seconds
    )
    print(f"gymnasium {gym.__version__} CartPoleVectorEnv (NumPy) x{n}: {vec:,.0f} env steps/s")


if __name__ == "__main__":
    main()
