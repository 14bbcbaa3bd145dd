"""The native MuJoCo tasks in the wheel (built with ``--features mujoco``) against Gymnasium's
own, with the same seeds and actions.

``scripts/check-python.sh --mujoco`` builds the wheel with MuJoCo (``scripts/setup-mujoco.sh``
first) and runs these tests; they fail, never skip, when the wheel has no MuJoCo tasks. The
plain wheel (PyPI's) is tested without this file (``--ignore``), which the script says.
"""

import os

import gymnasium as gym
import numpy as np
import pytest

import emberlab

BUILT = "HalfCheetah-v5" in emberlab.env_ids()


@pytest.fixture(autouse=True)
def mujoco_wheel():
    assert BUILT, "the wheel has no MuJoCo tasks: build it with --features mujoco (scripts/check-python.sh --mujoco)"


def test_every_mujoco_task_is_registered():
    ids = set(emberlab.env_ids())
    for task in ["HalfCheetah", "Hopper", "Walker2d", "Ant", "Humanoid", "Swimmer", "InvertedPendulum",
                 "InvertedDoublePendulum", "Reacher"]:
        assert f"{task}-v5" in ids


@pytest.mark.parametrize("env_id", ["HalfCheetah-v5", "Hopper-v5"])
def test_vector_env_matches_gymnasiums(env_id):
    n, steps = 2, 1100
    ours = emberlab.make_vec(env_id, n, workers=2)
    theirs = gym.vector.SyncVectorEnv([lambda: gym.make(env_id) for _ in range(n)])
    assert ours.single_action_space == theirs.single_action_space
    assert ours.single_observation_space.shape == theirs.single_observation_space.shape
    o1, _ = ours.reset(seed=7)
    o2, _ = theirs.reset(seed=7)
    np.testing.assert_array_equal(o1, o2.astype(np.float32))
    rng = np.random.default_rng(0)
    ends = 0
    for t in range(steps):
        a = rng.uniform(-1.0, 1.0, size=(n, *theirs.single_action_space.shape)).astype(np.float32)
        r1 = ours.step(a)
        r2 = theirs.step(a)
        np.testing.assert_array_equal(r1[0], r2[0].astype(np.float32), err_msg=f"step {t}")
        np.testing.assert_allclose(r1[1], r2[1], rtol=1e-12, atol=1e-12, err_msg=f"step {t}")
        np.testing.assert_array_equal(r1[2], r2[2])
        np.testing.assert_array_equal(r1[3], r2[3])
        ends += int(r1[2].sum() + r1[3].sum())
    assert ends >= n, f"{env_id}: {ends} episode ends in {steps} steps: autoreset untested"


def test_the_models_come_from_the_installed_gymnasium():
    assets = os.environ.get("EMBER_GYMNASIUM_ASSETS")
    assert assets and os.path.isfile(os.path.join(assets, "half_cheetah.xml")), assets
