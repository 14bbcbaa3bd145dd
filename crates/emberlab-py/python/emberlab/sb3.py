"""Ember's replay buffers for Stable-Baselines3 (``replay_buffer_class=``).

- :class:`ReturnWeightedReplayBuffer`: transitions drawn without replacement in proportion
  to their episode's return, shifted so that the lowest return weighs zero (a transition's
  score is its episode's return so far, then the whole episode's return when it ends).
- :class:`PrioritizedReplayBuffer`: proportional prioritized replay. SB3's algorithms
  neither weigh their losses nor update priorities: read ``last_indices`` and
  ``last_weights`` after ``sample`` and call ``update_priorities`` from your own ``train``.
- :class:`UniformReplayBuffer`: uniform with replacement, as SB3's own buffer.

Return-weighted draws are without replacement: while fewer than ``batch_size`` transitions
weigh more than zero (early on: the worst episode so far weighs zero), a batch holds every
transition that does, so it is smaller. When every transition weighs zero (all scores
equal: the first episode has just ended), a batch is drawn uniformly.

``replay_buffer_kwargs`` reach :class:`emberlab.ReplayBuffer` (``n_step``, ``gamma``,
``alpha``, ``beta``, ``eps``, ``seed``). With ``n_step > 1`` the samples carry SB3's
``discounts`` (``gamma ** m``), which SB3's SAC, TD3 and DQN use.

    from stable_baselines3 import SAC
    from emberlab.sb3 import ReturnWeightedReplayBuffer

    model = SAC("MlpPolicy", "Pendulum-v1", replay_buffer_class=ReturnWeightedReplayBuffer)
"""

import os
import tempfile

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.buffers import BaseBuffer, ReplayBuffer as _SB3ReplayBuffer
from stable_baselines3.common.type_aliases import ReplayBufferSamples

from emberlab._emberlab import ReplayBuffer as _Native


class EmberReplayBuffer(_SB3ReplayBuffer):
    """An SB3 replay buffer backed by :class:`emberlab.ReplayBuffer` (no NumPy storage of its
    own). Subclasses set ``sampler``."""

    sampler = "uniform"

    def __init__(
        self,
        buffer_size,
        observation_space,
        action_space,
        device="auto",
        n_envs=1,
        optimize_memory_usage=False,
        handle_timeout_termination=True,
        **ember_kwargs,
    ):
        # BaseBuffer only: SB3's ReplayBuffer.__init__ would allocate its own arrays.
        BaseBuffer.__init__(self, buffer_size, observation_space, action_space, device, n_envs=n_envs)
        if optimize_memory_usage:
            raise ValueError(f"{type(self).__name__} does not support optimize_memory_usage=True")
        if not isinstance(observation_space, spaces.Box):
            raise TypeError(
                f"{type(self).__name__} stores Box observations, got {observation_space}"
            )
        self.optimize_memory_usage = False
        self.handle_timeout_termination = handle_timeout_termination
        # One slot per transition: SB3's buffer_size counts steps of all envs together
        # divided by n_envs; Ember's capacity counts transitions.
        self.capacity = max(buffer_size // n_envs, 1) * n_envs
        self.ember = _Native(
            self.capacity,
            tuple(self.obs_shape),
            (self.action_dim,),
            sampler=self.sampler,
            num_envs=n_envs,
            **ember_kwargs,
        )
        self.last_indices = None
        self.last_weights = None

    def add(self, obs, next_obs, action, reward, done, infos):
        n = self.n_envs
        done = np.asarray(done, dtype=bool).reshape(n)
        if self.handle_timeout_termination:
            timeout = np.array([info.get("TimeLimit.truncated", False) for info in infos], dtype=bool)
        else:
            timeout = np.zeros(n, dtype=bool)
        self.ember.add(
            np.asarray(obs).reshape((n, *self.obs_shape)),
            np.asarray(action).reshape((n, self.action_dim)),
            np.asarray(reward).reshape(n),
            np.asarray(next_obs).reshape((n, *self.obs_shape)),
            done & ~timeout,
            done & timeout,
        )
        stored = len(self.ember)
        self.full = stored >= self.capacity
        self.pos = (stored // n) % self.buffer_size if not self.full else 0

    def size(self):
        return len(self.ember) // self.n_envs

    def reset(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be emptied; make a new one")

    def sample(self, batch_size, env=None):
        d = self.ember.sample(batch_size, at_most=True)
        self.last_indices, self.last_weights = d["indices"], d["weights"]
        obs = self._normalize_obs(d["obs"], env)
        next_obs = self._normalize_obs(d["next_obs"], env)
        reward = self._normalize_reward(d["reward"].reshape(-1, 1), env)
        discount = d.get("discount")
        return ReplayBufferSamples(
            self.to_torch(obs),
            self.to_torch(d["action"]),
            self.to_torch(next_obs),
            self.to_torch(d["terminated"].astype(np.float32).reshape(-1, 1)),
            self.to_torch(reward.astype(np.float32)),
            None if discount is None else self.to_torch(discount.reshape(-1, 1)),
        )

    def __getstate__(self):
        # Pickled (SB3's save_replay_buffer) as Ember's replay files: storage, sampler state,
        # generator, open episodes and n-step windows, so a loaded buffer draws on as this one.
        state = self.__dict__.copy()
        native = state.pop("ember")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "replay.bin")
            native.save(path)
            state["_ember_files"] = tuple(_read(p) for p in (path, path + ".episodes"))
        return state

    def __setstate__(self, state):
        state = dict(state)
        files = state.pop("_ember_files")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "replay.bin")
            for p, data in zip((path, path + ".episodes"), files):
                with open(p, "wb") as f:
                    f.write(data)
            state["ember"] = _Native.load(path)
        self.__dict__.update(state)

    def _get_samples(self, batch_inds, env=None):
        raise NotImplementedError("Ember's buffers draw their own indices: call sample()")


class UniformReplayBuffer(EmberReplayBuffer):
    """Uniform sampling with replacement (SB3's own rule), in Ember."""

    sampler = "uniform"


class ReturnWeightedReplayBuffer(EmberReplayBuffer):
    """Return-weighted sampling without replacement (see the module docs)."""

    sampler = "return_weighted"


class PrioritizedReplayBuffer(EmberReplayBuffer):
    """Proportional prioritized replay; see the module docs for what SB3 leaves to you."""

    sampler = "prioritized"

    def update_priorities(self, indices, priorities):
        """Sets the priorities of sampled transitions (e.g. ``|TD error|``)."""
        self.ember.update_priorities(indices, priorities)


def _read(path):
    with open(path, "rb") as f:
        return f.read()
