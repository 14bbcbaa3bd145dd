#!/usr/bin/env python3
"""Golden traces of Gymnasium's classic-control environments for emberlab-env's tests.

Run by hand with gymnasium==1.4.0 and numpy 2.x (CI replays the committed JSON and needs no
Python):

    python3 -m venv .venv && .venv/bin/pip install gymnasium==1.4.0 numpy
    .venv/bin/python crates/emberlab-env/tools/gen_env_traces.py

For each environment, every episode starts from an explicitly set state
(`env.unwrapped.state = ...`, right after a `reset`, since Ember cannot reproduce NumPy's
generator), applies a fixed action sequence and records, per step,
`[state, action, next_state, obs, reward, terminated]`. Episodes cover the corners: clipped
actions and speeds, walls, angle wrapping, termination (and CartPole's steps after it).
Values stored in float64 are written with Python's shortest round-trip repr; float32 values
(observations, MountainCarContinuous's state) with NumPy's shortest float32 repr.

Also writes `normalize_observation.json`: raw CartPole observations and what Gymnasium's
`NormalizeObservation` returns for them (updating for 20 steps, then frozen).
"""

import json
import os

import gymnasium as gym
import numpy as np

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "data")


def f32(values):
    """Shortest float32 reprs, as JSON numbers."""
    return [float(str(np.float32(v))) for v in np.asarray(values, dtype=np.float32).ravel()]


def f64(values):
    return [float(v) for v in np.asarray(values, dtype=np.float64).ravel()]


def record(env_id, episodes, state_dtype, max_steps=60):
    """episodes: list of (start_state, policy) with policy(t, state) -> action or None (stop)."""
    env = gym.make(env_id).unwrapped
    enc = f32 if state_dtype == np.float32 else f64
    out = []
    for start, policy in episodes:
        env.reset(seed=0)
        env.state = np.array(start, dtype=state_dtype)
        steps = []
        after_end = 0
        for t in range(max_steps):
            action = policy(t, np.array(env.state, dtype=np.float64))
            if action is None:
                break
            state = enc(env.state)
            obs, reward, terminated, truncated, _ = env.step(action)
            assert not truncated
            steps.append(
                [
                    state,
                    int(action) if np.isscalar(action) else f32(action),
                    enc(env.state),
                    f32(obs),
                    float(reward),
                    bool(terminated),
                ]
            )
            if terminated:
                after_end += 1
                # CartPole: two more steps past termination (reward 0); others stop.
                if env_id != "CartPole-v1" or after_end > 2:
                    break
        out.append(steps)
    return {
        "env": env_id,
        "gymnasium": gym.__version__,
        "numpy": np.__version__,
        "state_precision": "f32" if state_dtype == np.float32 else "f64",
        "step_layout": ["state", "action", "next_state", "obs", "reward", "terminated"],
        "episodes": out,
    }


def const(a, n=60):
    return lambda t, s: a if t < n else None


def random_discrete(n_actions, seed, n):
    rng = np.random.default_rng(seed)
    acts = rng.integers(0, n_actions, size=n)
    return lambda t, s: int(acts[t]) if t < n else None


def random_box(low, high, seed, n):
    rng = np.random.default_rng(seed)
    acts = rng.uniform(low, high, size=(n, 1)).astype(np.float32)
    return lambda t, s: acts[t] if t < n else None


def box(v, n):
    return lambda t, s: np.array([v], dtype=np.float32) if t < n else None


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(2024)
    traces = {
        "cartpole": record(
            "CartPole-v1",
            [
                (rng.uniform(-0.05, 0.05, 4), random_discrete(2, 1, 40)),
                ([0.01, -0.02, 0.03, 0.04], const(1)),
                ([2.3, 1.5, 0.0, 0.0], const(1)),
                ([0.0, 0.0, -0.15, -1.2], random_discrete(2, 2, 20)),
            ],
            np.float64,
        ),
        "pendulum": record(
            "Pendulum-v1",
            [
                ([rng.uniform(-np.pi, np.pi), rng.uniform(-1, 1)], random_box(-3.0, 3.0, 3, 40)),
                ([10.0, 7.9], box(2.0, 15)),
                ([-7.0, -7.95], box(-2.5, 15)),
                ([np.pi - 1e-3, 0.0], box(0.7, 10)),
            ],
            np.float64,
        ),
        "mountain_car": record(
            "MountainCar-v0",
            [
                ([rng.uniform(-0.6, -0.4), 0.0], random_discrete(3, 4, 30)),
                ([0.3, 0.03], const(2)),
                ([-1.15, -0.04], const(0, 8)),
                ([-0.8, 0.069], const(2, 6)),
                ([-0.55, 0.0], lambda t, s: (2 if s[1] >= 0 else 0) if t < 30 else None),
            ],
            np.float64,
        ),
        "mountain_car_continuous": record(
            "MountainCarContinuous-v0",
            [
                ([rng.uniform(-0.6, -0.4), 0.0], random_box(-1.5, 1.5, 5, 40)),
                ([0.40, 0.03], box(1.0, 60)),
                ([0.40, 0.03], box(3.0, 60)),
                ([-1.15, -0.05], box(-1.0, 8)),
                ([-0.8, 0.069], box(1.0, 6)),
                ([-0.5, 0.01], box(-2.0, 10)),
            ],
            np.float32,
        ),
        "acrobot": record(
            "Acrobot-v1",
            [
                (np.float32(rng.uniform(-0.1, 0.1, 4)), random_discrete(3, 6, 30)),
                ([2.0, 0.5, 1.0, 1.0], random_discrete(3, 7, 40)),
                ([0.0, 0.0, 12.5, 28.0], const(2, 12)),
                ([3.0, 3.0, 2.0, -3.0], const(0, 12)),
                (rng.uniform(-1.0, 1.0, 4), random_discrete(3, 9, 25)),
            ],
            np.float64,
        ),
    }
    total = 0
    for name, trace in traces.items():
        assert any(ep[-1][5] for ep in trace["episodes"]) or name == "pendulum", name
        path = os.path.join(OUT, f"{name}.json")
        with open(path, "w") as fh:
            json.dump(trace, fh, separators=(",", ":"))
        total += os.path.getsize(path)
        print(f"{path}: {sum(map(len, trace['episodes']))} steps")

    # NormalizeObservation on CartPole: raw observation in, normalized observation out.
    env = gym.wrappers.NormalizeObservation(gym.make("CartPole-v1"))
    obs, _ = env.reset(seed=0)
    rows = []
    raw = np.array(env.unwrapped.state, dtype=np.float32)
    rows.append([f32(raw), f32(obs), True])
    acts = np.random.default_rng(8).integers(0, 2, size=25)
    for t, a in enumerate(acts):
        update = t < 20
        env.update_running_mean = update
        obs, _, term, trunc, _ = env.step(int(a))
        raw = np.array(env.unwrapped.state, dtype=np.float32)
        rows.append([f32(raw), f32(obs), update])
        if term or trunc:
            break
    path = os.path.join(OUT, "normalize_observation.json")
    with open(path, "w") as fh:
        json.dump(
            {
                "gymnasium": gym.__version__,
                "row_layout": ["raw_obs", "normalized_obs", "update_running_mean"],
                "rows": rows,
                "final_mean": f32(env.obs_rms.mean),
                "final_var": f32(env.obs_rms.var),
            },
            fh,
            separators=(",", ":"),
        )
    total += os.path.getsize(path)
    print(f"{path}: {len(rows)} rows; total {total} bytes")


if __name__ == "__main__":
    main()
