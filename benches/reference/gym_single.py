#!/usr/bin/env python3
"""Reference for `ember bench gym-bridge`: one Gymnasium environment stepped alone.

    $EMBER_MUJOCO_PYTHON benches/reference/gym_single.py CartPole-v1 [--seconds 3]

`gym.make(ID)` stepped with random actions drawn beforehand (uniform in a Box, uniform
indices for Discrete), `reset()` at each episode end; prints `gym/ID_single  <steps/s>`.
"""

import argparse
import time

import gymnasium as gym
import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("env")
    p.add_argument("--seconds", type=float, default=3.0)
    args = p.parse_args()
    env = gym.make(args.env)
    rng = np.random.default_rng(7)
    space = env.action_space
    if isinstance(space, gym.spaces.Discrete):
        table = [int(a) for a in rng.integers(0, space.n, size=1024)]
    else:
        table = list(rng.uniform(-1, 1, size=(1024,) + space.shape).astype(np.float32))
    env.reset(seed=0)
    k = 0

    def step():
        nonlocal k
        _, _, term, trunc, _ = env.step(table[k % 1024])
        k += 1
        if term or trunc:
            env.reset()

    for _ in range(500):
        step()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        for _ in range(100):
            step()
        n += 100
    print(f"gym/{args.env}_single\t{n / (time.perf_counter() - start):.0f} steps/s")


if __name__ == "__main__":
    main()
