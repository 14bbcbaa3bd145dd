"""Ember from Python: Rust replay buffers and environments behind NumPy arrays.

- :class:`ReplayBuffer`: uniform, prioritized and return-weighted (without replacement)
  replay with n-step returns; ``add`` takes one transition or a batch, ``sample`` returns
  NumPy arrays; the GIL is released while the buffer works.
- :func:`make_vec` / :func:`make`: Ember's Gymnasium-exact environments as a
  ``gymnasium.vector.VectorEnv`` / ``gymnasium.Env`` (needs ``gymnasium``).
- :mod:`ember.sb3`: the buffers as Stable-Baselines3 ``replay_buffer_class`` es.

See ``docs/python.md`` in the repository.
"""

from ember._ember import Env, ReplayBuffer, VecEnv, __version__, env_ids

__all__ = ["Env", "ReplayBuffer", "VecEnv", "__version__", "env_ids", "make", "make_vec"]


def make_vec(env_id, num_envs, workers=1):
    """``num_envs`` copies of ``env_id`` stepped by ``workers`` threads, as a
    ``gymnasium.vector.VectorEnv`` with next-step autoreset (Gymnasium 1.x's default)."""
    from ember.gym import EmberVectorEnv

    return EmberVectorEnv(env_id, num_envs, workers=workers)


def make(env_id):
    """One environment ``env_id`` as a ``gymnasium.Env``."""
    from ember.gym import EmberEnv

    return EmberEnv(env_id)
