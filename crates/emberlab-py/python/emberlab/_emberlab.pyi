"""Type stubs of the native module ``emberlab._emberlab`` (Rust, PyO3)."""

from os import PathLike
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str

Shape = Union[int, Sequence[int]]
ArrayLike = npt.ArrayLike

def env_ids() -> list[str]:
    """The ids of every registered environment."""

class ReplayBuffer:
    """Uniform, prioritized or return-weighted replay with n-step returns.

    ``add`` takes one transition (``obs`` of ``obs_shape``) or a batch (``(B, *obs_shape)``);
    batch rows are consecutive steps of ``num_envs`` sub-environments (row ``r`` belongs to
    sub-environment ``r % num_envs``). Every argument is checked before anything is stored:
    wrong shapes, NaN and out-of-range indices raise ``ValueError``, non-numeric dtypes
    ``TypeError``.
    """

    def __init__(
        self,
        capacity: int,
        obs_shape: Shape,
        action_shape: Optional[Shape] = None,
        *,
        sampler: str = "uniform",
        n_step: int = 1,
        gamma: float = 0.99,
        alpha: float = 0.6,
        beta: float = 0.4,
        eps: float = 1e-6,
        num_envs: int = 1,
        seed: int = 0,
    ) -> None: ...
    def add(
        self,
        obs: ArrayLike,
        action: ArrayLike,
        reward: ArrayLike,
        next_obs: ArrayLike,
        terminated: ArrayLike,
        truncated: Optional[ArrayLike] = None,
    ) -> npt.NDArray[np.int64]:
        """Stores transitions; returns the slots written."""
    def sample(self, batch_size: int, *, at_most: bool = False) -> dict[str, np.ndarray]:
        """``obs``, ``action``, ``reward``, ``next_obs``, ``terminated``, ``truncated``,
        ``indices``, ``weights`` (and ``discount`` with ``n_step > 1``). ``at_most``: a
        return-weighted batch holds every transition of non-zero weight when there are fewer
        than ``batch_size``, instead of raising ``ValueError``. When every weight is zero,
        the draw is uniform."""
    def update_priorities(self, indices: ArrayLike, priorities: ArrayLike) -> None: ...
    def set_scores(self, indices: ArrayLike, scores: ArrayLike) -> None: ...
    def scores(self, indices: ArrayLike) -> npt.NDArray[np.float64]: ...
    beta: float
    def __len__(self) -> int: ...
    @property
    def capacity(self) -> int: ...
    @property
    def obs_shape(self) -> list[int]: ...
    @property
    def action_shape(self) -> list[int]: ...
    @property
    def sampler(self) -> str: ...
    @property
    def n_step(self) -> int: ...
    @property
    def num_envs(self) -> int: ...
    def save(self, path: Union[str, PathLike[str]]) -> None:
        """Writes ``path`` (Ember's replay file) and ``path + ".episodes"``."""
    @staticmethod
    def load(
        path: Union[str, PathLike[str]], *, n_step: int = 1, gamma: float = 0.99, num_envs: int = 1
    ) -> "ReplayBuffer": ...

class VecEnv:
    """``num_envs`` copies of a registered environment stepped by ``workers`` threads."""

    def __init__(self, env_id: str, num_envs: int, workers: int = 1) -> None: ...
    def reset(self, seed: Optional[int] = None) -> npt.NDArray[np.float32]: ...
    def step(
        self, actions: ArrayLike
    ) -> Tuple[
        npt.NDArray[np.float32], npt.NDArray[np.float64], npt.NDArray[np.bool_], npt.NDArray[np.bool_]
    ]: ...
    @property
    def single_observation_space(self) -> dict[str, Any]: ...
    @property
    def single_action_space(self) -> dict[str, Any]: ...
    @property
    def num_envs(self) -> int: ...
    @property
    def env_id(self) -> str: ...

class Env:
    """One registered environment."""

    def __init__(self, env_id: str) -> None: ...
    def reset(self, seed: Optional[int] = None) -> npt.NDArray[np.float32]: ...
    def step(self, action: ArrayLike) -> Tuple[npt.NDArray[np.float32], float, bool, bool]: ...
    @property
    def observation_space(self) -> dict[str, Any]: ...
    @property
    def action_space(self) -> dict[str, Any]: ...
    @property
    def env_id(self) -> str: ...

def load_policy(run: Union[str, PathLike[str]], best: bool = False) -> Policy:
    """The policy of a run folder that ``ember train`` wrote (its last checkpoint, or with
    ``best`` its best evaluation's weights), loaded as ``ember eval`` loads it.

    Raises ``FileNotFoundError`` for a missing folder and ``ValueError`` naming the problem
    for a folder that is not a run, has no weights yet or holds weights that do not load.
    """

class Policy:
    """A trained run's policy; ``act`` releases the GIL while it works."""

    def act(
        self, obs: ArrayLike, deterministic: bool = True
    ) -> Union[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """Actions for one observation ``(obs_dim,)`` or a batch ``(n, obs_dim)``: float32
        ``(act_dim,)`` / ``(n, act_dim)`` for a Box action space, int64 ``()`` / ``(n,)`` for
        a Discrete one. ``deterministic=False`` samples from the behaviour policy."""
    @property
    def obs_dim(self) -> int: ...
    @property
    def action_space(self) -> dict[str, Any]: ...
    @property
    def env_id(self) -> str: ...
    @property
    def algo(self) -> str: ...
    @property
    def run(self) -> PathLike[str]: ...
