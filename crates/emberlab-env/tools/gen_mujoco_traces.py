#!/usr/bin/env python3
"""Traces of Gymnasium 1.4's MuJoCo v5 tasks (MuJoCo 3.17.0) for emberlab-env's tests.

Nothing is committed: `crates/emberlab-env/tests/mujoco_traces.rs` runs this script with the
venv of `scripts/setup-mujoco.sh` into a temporary folder and replays what it wrote:

    scripts/setup-mujoco.sh > /tmp/mujoco.env && . /tmp/mujoco.env
    $EMBER_MUJOCO_PYTHON crates/emberlab-env/tools/gen_mujoco_traces.py OUT_DIR

For each task it writes `OUT_DIR/<id>.json` with episodes of two kinds:
- "seed": `gym.make(id)` (with its TimeLimit) reset with a seed, then fixed actions until the
  episode ends (terminated or truncated) or `max_steps`. The qpos/qvel right after the reset
  are recorded too.
- "state": the unwrapped task reset, then put into a state of its own (`set_state(qpos,
  qvel)`: larger perturbations than the reset noise), then fixed actions.
Actions are float32 draws from [1.25 low, 1.25 high] of the action space (so that MuJoCo
clamps some controls and the control cost sees the unclamped ones). Each step records the
observation (float64), reward, its terms (the info keys named `reward_*`, or InvertedDouble-
Pendulum's penalties), terminated and truncated. Numbers are written with Python's
shortest round-trip repr, so the JSON holds the exact float64 values.

`numpy_random.json` holds NumPy's `default_rng(seed)` draws (raw 64-bit words, `random()`,
`uniform()` and `standard_normal()`), which Ember's `NumpyRng` reproduces.
"""

import json
import os
import sys

import gymnasium as gym
import mujoco
import numpy as np

assert gym.__version__ == "1.4.0", gym.__version__
assert mujoco.__version__ == "3.17.0", mujoco.__version__

TASKS = {
    # id: (steps of a seeded episode, terms)
    "HalfCheetah-v5": (1000, ["reward_forward", "reward_ctrl"]),
    "Hopper-v5": (300, ["reward_forward", "reward_ctrl", "reward_survive"]),
    "Walker2d-v5": (300, ["reward_forward", "reward_ctrl", "reward_survive"]),
    "Ant-v5": (300, ["reward_forward", "reward_ctrl", "reward_contact", "reward_survive"]),
    "Humanoid-v5": (200, ["reward_survive", "reward_forward", "reward_ctrl", "reward_contact"]),
    "Swimmer-v5": (300, ["reward_forward", "reward_ctrl"]),
    "InvertedPendulum-v5": (300, ["reward_survive"]),
    "InvertedDoublePendulum-v5": (300, ["reward_survive", "distance_penalty", "velocity_penalty"]),
    "Reacher-v5": (100, ["reward_dist", "reward_ctrl"]),
}
STATE_STEPS = 100


def floats(values):
    return [float(v) for v in np.asarray(values, dtype=np.float64).ravel()]


def actions_for(space, n, seed):
    rng = np.random.default_rng(seed)
    low, high = space.low.astype(np.float64), space.high.astype(np.float64)
    mid, half = (low + high) / 2, (high - low) / 2 * 1.25
    return [(mid + half * rng.uniform(-1, 1, size=low.shape)).astype(np.float32) for _ in range(n)]


def run(env, actions, terms):
    steps = []
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
        steps.append(
            {
                "action": floats(a),
                "obs": floats(obs),
                "reward": float(reward),
                "terms": [float(info[t]) for t in terms],
                "terminated": bool(terminated),
                "truncated": bool(truncated),
            }
        )
        if terminated or truncated:
            break
    return steps


def record(env_id, max_steps, terms):
    episodes = []
    env = gym.make(env_id)
    for seed in (0, 1, 12345):
        obs, _ = env.reset(seed=seed)
        u = env.unwrapped
        episodes.append(
            {
                "kind": "seed",
                "seed": seed,
                "reset_qpos": floats(u.data.qpos),
                "reset_qvel": floats(u.data.qvel),
                "reset_obs": floats(obs),
                "steps": run(env, actions_for(env.action_space, max_steps, 100 + seed), terms),
            }
        )
    raw = gym.make(env_id).unwrapped
    for k in range(2):
        raw.reset(seed=50 + k)
        rng = np.random.default_rng(200 + k)
        qpos = raw.init_qpos + rng.uniform(-0.3, 0.3, size=raw.model.nq)
        qvel = raw.init_qvel + rng.normal(0.0, 1.0, size=raw.model.nv)
        if env_id == "Reacher-v5":
            qpos[-2:] = [0.1, -0.1]
            qvel[-2:] = 0
        raw.set_state(qpos, qvel)
        episodes.append(
            {
                "kind": "state",
                "qpos": floats(qpos),
                "qvel": floats(qvel),
                "reset_obs": floats(raw._get_obs()),
                "steps": run(raw, actions_for(raw.action_space, STATE_STEPS, 300 + k), terms),
            }
        )
    return {
        "env": env_id,
        "nq": int(raw.model.nq),
        "nv": int(raw.model.nv),
        "max_episode_steps": int(env.spec.max_episode_steps),
        "action_low": floats(env.action_space.low),
        "action_high": floats(env.action_space.high),
        "episodes": episodes,
    }


NORMAL_DRAWS = 20_000


def numpy_random():
    out = []
    for seed in (0, 1, 42, 2**32 + 5, 2**63 + 11):
        raw = np.random.default_rng(seed).bit_generator.random_raw(4)
        g = np.random.default_rng(seed)
        out.append(
            {
                "seed": str(seed),
                "raw": [str(int(x)) for x in raw],
                "random": floats(g.random(4)),
                "uniform": floats(g.uniform(-0.1, 0.1, size=4)),
                # Enough draws to take the ziggurat's slow paths (wedges, the tail) often.
                "normal": floats(g.standard_normal(NORMAL_DRAWS)),
            }
        )
    return out


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "mujoco-traces"
    os.makedirs(out, exist_ok=True)
    only = sys.argv[2:] or list(TASKS)
    for env_id in only:
        max_steps, terms = TASKS[env_id]
        with open(os.path.join(out, f"{env_id}.json"), "w") as f:
            json.dump(record(env_id, max_steps, terms), f)
    with open(os.path.join(out, "numpy_random.json"), "w") as f:
        json.dump(numpy_random(), f)
    print(f"wrote {len(only)} task traces and numpy_random.json to {out}")


if __name__ == "__main__":
    main()
