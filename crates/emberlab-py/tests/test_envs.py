"""Ember's environments from Python against Gymnasium's own, with the same seeds and actions."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import emberlab


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1", "MountainCarContinuous-v0", "Acrobot-v1"])
def test_vector_env_matches_gymnasiums_sync_vector_env(env_id):
    n, steps = 4, 600
    ours = emberlab.make_vec(env_id, n, workers=2)
    theirs = gym.vector.SyncVectorEnv([lambda: gym.make(env_id) for _ in range(n)])
    assert ours.single_observation_space == theirs.single_observation_space
    assert ours.single_action_space == theirs.single_action_space
    o1, _ = ours.reset(seed=42)
    o2, _ = theirs.reset(seed=42)
    np.testing.assert_allclose(o1, o2, rtol=0, atol=1e-6)
    theirs.single_action_space.seed(0)
    ends = 0
    for _ in range(steps):
        a = np.stack([theirs.single_action_space.sample() for _ in range(n)])
        r1 = ours.step(a)
        r2 = theirs.step(a)
        np.testing.assert_allclose(r1[0], r2[0], rtol=0, atol=1e-5)
        np.testing.assert_allclose(r1[1], r2[1], rtol=0, atol=1e-5)
        np.testing.assert_array_equal(r1[2], r2[2])
        np.testing.assert_array_equal(r1[3], r2[3])
        assert r1[0].dtype == np.float32 and r1[1].dtype == np.float64
        ends += int(r1[2].sum() + r1[3].sum())
    assert ends > 0 or env_id == "MountainCarContinuous-v0", "no episode ended: autoreset untested"


def test_workers_do_not_change_trajectories():
    a = emberlab.VecEnv("CartPole-v1", 8, workers=1)
    b = emberlab.VecEnv("CartPole-v1", 8, workers=2)
    np.testing.assert_array_equal(a.reset(seed=3), b.reset(seed=3))
    rng = np.random.default_rng(0)
    for _ in range(300):
        act = rng.integers(0, 2, 8)
        for x, y in zip(a.step(act), b.step(act)):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_single_envs_pass_gymnasiums_checker(env_id):
    check_env(emberlab.make(env_id), skip_render_check=True)


def test_bad_actions_and_ids_raise():
    v = emberlab.VecEnv("CartPole-v1", 2)
    v.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        v.step(np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="Discrete"):
        v.step(np.array([0, 2]))
    with pytest.raises(TypeError, match="integers"):
        v.step(np.array([0.0, 1.0]))
    p = emberlab.VecEnv("Pendulum-v1", 2)
    p.reset(seed=0)
    with pytest.raises(ValueError):
        p.step(np.array([[0.0], [np.nan]], np.float32))
    with pytest.raises(ValueError, match="NoSuchEnv"):
        emberlab.VecEnv("NoSuchEnv-v0", 2)
    with pytest.raises(ValueError, match="multiple of workers"):
        emberlab.VecEnv("CartPole-v1", 3, workers=2)
    assert "CartPole-v1" in emberlab.env_ids()
