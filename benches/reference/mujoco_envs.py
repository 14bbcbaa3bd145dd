#!/usr/bin/env python3
"""Reference for `ember bench mujoco-envs`: HalfCheetah env steps/s in Gymnasium and EnvPool.

    scripts/setup-mujoco.sh > /tmp/mujoco.env && . /tmp/mujoco.env
    $EMBER_MUJOCO_PYTHON benches/reference/mujoco_envs.py gym [--seconds 5]
    # EnvPool in a venv of its own (benches/reference/setup.sh; it ships its own MuJoCo,
    # and its newest task is v4):
    .venv-envpool/bin/python benches/reference/mujoco_envs.py envpool [--threads 2]

`gym`: Gymnasium 1.4's `HalfCheetah-v5` (MuJoCo 3.17.0) alone (`env.step`, resetting at
the end of each 1,000-step episode), then `gymnasium.vector.SyncVectorEnv` of 1, 2 and 16
(next-step autoreset). `envpool`: EnvPool's `HalfCheetah-v4` with `num_envs` 1, 2 and 16 and
`num_threads` = min(num_envs, --threads), stepped synchronously (`env.step(actions)`).
Actions are uniform in [-1, 1], drawn beforehand as in the Rust bench. Prints one line per
figure: name, env steps per second.
"""

import argparse
import time

import numpy as np


def table(num_envs, dim):
    rng = np.random.default_rng(7)
    return rng.uniform(-1.0, 1.0, size=(1024, num_envs, dim)).astype(np.float32)


def timed(step, seconds):
    for _ in range(200):  # warm-up
        step()
    n = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(50):
            step()
        n += 50
    return n / (time.perf_counter() - start)


def gym_figures(seconds):
    import gymnasium as gym

    env = gym.make("HalfCheetah-v5")
    env.reset(seed=0)
    acts = table(1, 6)[:, 0]
    k = [0]

    def single():
        _, _, term, trunc, _ = env.step(acts[k[0] % 1024])
        k[0] += 1
        if term or trunc:
            env.reset()

    yield "gym/HalfCheetah-v5_single", timed(single, seconds)
    for n in (1, 2, 16):
        envs = gym.vector.SyncVectorEnv([lambda: gym.make("HalfCheetah-v5") for _ in range(n)])
        envs.reset(seed=0)
        acts = table(n, 6)
        k = [0]

        def step():
            envs.step(acts[k[0] % 1024])
            k[0] += 1

        yield f"gym/HalfCheetah-v5_sync{n}", n * timed(step, seconds)


def envpool_figures(seconds, threads):
    import envpool

    for n in (1, 2, 16):
        env = envpool.make_gymnasium(
            "HalfCheetah-v4", num_envs=n, num_threads=min(n, threads), seed=0
        )
        env.reset()
        acts = table(n, 6).astype(np.float64)
        k = [0]

        def step():
            env.step(acts[k[0] % 1024])
            k[0] += 1

        yield f"envpool/HalfCheetah-v4_{n}envs_{min(n, threads)}threads", n * timed(step, seconds)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("which", choices=["gym", "envpool"])
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    figures = gym_figures(args.seconds) if args.which == "gym" else envpool_figures(args.seconds, args.threads)
    for name, value in figures:
        print(f"{name}\t{value:.0f} steps/s", flush=True)


if __name__ == "__main__":
    main()
