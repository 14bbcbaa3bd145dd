"""Ember's environments as Gymnasium environments (``pip install gymnasium``)."""

import numpy as np
import gymnasium as gym
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from emberlab._emberlab import Env, VecEnv


def _space(d):
    """A Gymnasium space from the dict the native module describes a space with."""
    if d["kind"] == "box":
        return gym.spaces.Box(d["low"], d["high"], dtype=np.float32)
    return gym.spaces.Discrete(d["n"])


def _seed(seed):
    if seed is None or isinstance(seed, (int, np.integer)):
        return None if seed is None else int(seed)
    raise TypeError(
        "seed must be an int (sub-environment i is seeded with seed + i, as Gymnasium does) "
        f"or None, got {seed!r}"
    )


class EmberVectorEnv(VectorEnv):
    """``num_envs`` copies of an Ember environment, stepped in Rust by ``workers`` threads
    with the GIL released. Autoreset is Gymnasium's ``NEXT_STEP``: the step after an episode
    ends resets that sub-environment (its action is ignored, reward 0, not terminated)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, env_id, num_envs, workers=1):
        self._native = VecEnv(env_id, num_envs, workers)
        self.num_envs = num_envs
        self.single_observation_space = _space(self._native.single_observation_space)
        self.single_action_space = _space(self._native.single_action_space)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.env_id = env_id

    def reset(self, *, seed=None, options=None):
        seed = _seed(seed)
        super().reset(seed=seed)
        return self._native.reset(seed), {}

    def step(self, actions):
        obs, rewards, terminated, truncated = self._native.step(actions)
        return obs, rewards, terminated, truncated, {}

    def __repr__(self):
        return f"EmberVectorEnv({self.env_id!r}, num_envs={self.num_envs})"


class EmberEnv(gym.Env):
    """One Ember environment as a ``gymnasium.Env``."""

    metadata = {"render_modes": []}

    def __init__(self, env_id):
        self._native = Env(env_id)
        self.observation_space = _space(self._native.observation_space)
        self.action_space = _space(self._native.action_space)
        self.env_id = env_id

    def reset(self, *, seed=None, options=None):
        seed = _seed(seed)
        super().reset(seed=seed)
        return self._native.reset(seed), {}

    def step(self, action):
        obs, reward, terminated, truncated = self._native.step(action)
        return obs, reward, terminated, truncated, {}

    def __repr__(self):
        return f"EmberEnv({self.env_id!r})"
