"""Ember from Python: Rust replay buffers and environments behind NumPy arrays.

- :class:`ReplayBuffer`: uniform, prioritized and return-weighted (without replacement)
  replay with n-step returns; ``add`` takes one transition or a batch, ``sample`` returns
  NumPy arrays; the GIL is released while the buffer works.
- :func:`make_vec` / :func:`make`: Ember's Gymnasium-exact environments as a
  ``gymnasium.vector.VectorEnv`` / ``gymnasium.Env`` (needs ``gymnasium``).
- :mod:`emberlab.sb3`: the buffers as Stable-Baselines3 ``replay_buffer_class`` es.
- :func:`load_policy`: a run's trained policy (``ember train``'s run folder) acting on
  NumPy observations, loaded as ``ember eval`` loads it.

See ``docs/python.md`` in the repository.
"""

import importlib.util as _util
import os as _os


def _gymnasium_assets():
    """Points the MuJoCo tasks (a wheel built with ``--features mujoco``) at the model XML
    files of the installed ``gymnasium`` package, unless ``EMBER_GYMNASIUM_ASSETS`` says
    otherwise; found without importing Gymnasium."""
    if "EMBER_GYMNASIUM_ASSETS" in _os.environ:
        return
    spec = _util.find_spec("gymnasium")
    for root in (spec.submodule_search_locations or []) if spec else []:
        assets = _os.path.join(root, "envs", "mujoco", "assets")
        if _os.path.isdir(assets):
            _os.environ["EMBER_GYMNASIUM_ASSETS"] = assets
            return


_gymnasium_assets()

from emberlab._emberlab import Env, Policy, ReplayBuffer, VecEnv, __version__, env_ids, load_policy

__all__ = [
    "Env",
    "Policy",
    "ReplayBuffer",
    "VecEnv",
    "__version__",
    "env_ids",
    "load_policy",
    "make",
    "make_vec",
]


def make_vec(env_id, num_envs, workers=1):
    """``num_envs`` copies of ``env_id`` stepped by ``workers`` threads, as a
    ``gymnasium.vector.VectorEnv`` with next-step autoreset (Gymnasium 1.x's default)."""
    from emberlab.gym import EmberVectorEnv

    return EmberVectorEnv(env_id, num_envs, workers=workers)


def make(env_id):
    """One environment ``env_id`` as a ``gymnasium.Env``."""
    from emberlab.gym import EmberEnv

    return EmberEnv(env_id)
