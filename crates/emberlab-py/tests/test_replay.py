"""emberlab.ReplayBuffer from Python: contents, samplers against naive references, errors that
leave the buffer unchanged, files, and the GIL released while it works."""

import os
import threading
import time

import numpy as np
import pytest

import emberlab


def rows(n, obs_shape=(3,), start=0):
    """n transitions whose observations encode their row number."""
    i = np.arange(start, start + n, dtype=np.float32)
    obs = np.broadcast_to(i.reshape((n,) + (1,) * len(obs_shape)), (n, *obs_shape)).copy()
    return obs, i.reshape(n, 1) * 2, i * 0.5, obs + 1, np.zeros(n, bool)


def test_single_and_batched_adds_sample_back_what_was_stored():
    b = emberlab.ReplayBuffer(100, (2, 3), 1)
    obs, act, rew, nxt, done = rows(10, (2, 3))
    assert list(b.add(obs[0], act[0], rew[0], nxt[0], False)) == [0]
    assert list(b.add(obs[1:], act[1:], rew[1:], nxt[1:], done[1:], done[1:])) == list(range(1, 10))
    assert len(b) == 10 and b.obs_shape == [2, 3] and b.action_shape == [1]
    d = b.sample(64)
    assert d["obs"].shape == (64, 2, 3) and d["obs"].dtype == np.float32
    assert d["action"].shape == (64, 1) and d["reward"].shape == (64,)
    assert d["terminated"].dtype == np.bool_ and d["indices"].dtype == np.int64
    for k in range(64):
        i = d["indices"][k]
        assert np.all(d["obs"][k] == i) and np.all(d["next_obs"][k] == i + 1)
        assert d["action"][k, 0] == 2 * i and d["reward"][k] == 0.5 * i
    assert np.all(d["weights"] == 1.0)
    assert "discount" not in d


def test_a_ring_overwrites_the_oldest_and_returns_the_slots_written():
    b = emberlab.ReplayBuffer(8, 3, 1)
    obs, act, rew, nxt, done = rows(12)
    slots = b.add(obs, act, rew, nxt, done)
    assert list(slots) == [4, 5, 6, 7, 0, 1, 2, 3]
    assert len(b) == 8
    d = b.sample(200)
    assert set(d["obs"][:, 0].astype(int)) == set(range(4, 12))


def test_return_weighted_draws_distinct_slots_in_proportion_to_shifted_returns():
    n = 6
    b = emberlab.ReplayBuffer(n, 1, 1, sampler="return_weighted", seed=3)
    obs, act, rew, nxt, done = rows(n, (1,))
    done[:] = True  # one-step episodes: each transition's score is its own reward
    b.add(obs, act, np.array([-2.0, 0.0, 1.0, 2.0, 3.0, 6.0]), nxt, done)
    scores = b.scores(np.arange(n))
    assert list(scores) == [-2.0, 0.0, 1.0, 2.0, 3.0, 6.0]
    # Weights r + 2: 0, 2, 3, 4, 5, 8 (sum 22).
    d = b.sample(5)
    assert len(set(d["indices"])) == 5 and 0 not in d["indices"]
    draws = 20000
    counts = np.zeros(n)
    for _ in range(draws):
        counts[b.sample(1)["indices"][0]] += 1
    expected = np.array([0, 2, 3, 4, 5, 8]) / 22 * draws
    assert counts[0] == 0
    # Chi-square with 4 degrees of freedom: 18.5 is the 0.999 quantile.
    chi2 = ((counts[1:] - expected[1:]) ** 2 / expected[1:]).sum()
    assert chi2 < 18.5, (counts, expected)
    with pytest.raises(ValueError, match="non-zero weight"):
        b.sample(6)  # only five slots weigh more than zero
    assert sorted(b.sample(6, at_most=True)["indices"]) == [1, 2, 3, 4, 5]


def test_second_draws_follow_the_weights_without_replacement():
    # Naive reference: the second of two draws without replacement from weights w.
    w = np.array([1.0, 2.0, 7.0])
    b = emberlab.ReplayBuffer(3, 1, 1, sampler="return_weighted", seed=11)
    obs, act, _, nxt, done = rows(3, (1,))
    b.add(obs, act, w, nxt, np.ones(3, bool))
    p = w / w.sum()
    second = np.array([sum(p[i] * p[j] / (1 - p[i]) for i in range(3) if i != j) for j in range(3)])
    draws = 20000
    counts = np.zeros(3)
    for _ in range(draws):
        counts[b.sample(2)["indices"][1]] += 1
    chi2 = ((counts - second * draws) ** 2 / (second * draws)).sum()
    assert chi2 < 13.8, (counts / draws, second)  # 2 d.o.f., 0.999 quantile


def test_scores_are_episode_returns_per_sub_environment():
    b = emberlab.ReplayBuffer(16, 1, 1, sampler="return_weighted", num_envs=2)
    o = np.zeros((2, 1), np.float32)
    a = np.zeros((2, 1), np.float32)
    # Step 1: env 0 reward 1, env 1 reward 10; step 2: env 0 reward 2 and ends.
    b.add(o, a, [1.0, 10.0], o, [False, False])
    b.add(o, a, [2.0, 10.0], o, [True, False])
    assert list(b.scores([0, 1, 2, 3])) == [3.0, 10.0, 3.0, 20.0]
    b.set_scores([1], [-5.0])
    assert b.scores([1])[0] == -5.0
    with pytest.raises(ValueError, match="whole steps"):
        b.add(o[:1], a[:1], [1.0], o[:1], [False])


def test_prioritized_replay_follows_priorities_and_weighs_by_them():
    b = emberlab.ReplayBuffer(4, 1, 1, sampler="prioritized", alpha=1.0, beta=1.0, seed=5)
    obs, act, rew, nxt, done = rows(4, (1,))
    b.add(obs, act, rew, nxt, done)
    b.update_priorities([0, 1, 2, 3], [1.0, 1.0, 1.0, 5.0])
    counts = np.zeros(4)
    for _ in range(4000):
        d = b.sample(1)
        counts[d["indices"][0]] += 1
    assert abs(counts[3] / 4000 - 5 / 8) < 0.04, counts
    d = b.sample(32)
    # w_i = (N p_i)^-beta / max_j: the top-priority slot weighs 1/5 of the others.
    w = dict(zip(d["indices"], d["weights"]))
    if 3 in w and 0 in w:
        assert w[3] == pytest.approx(w[0] / 5, rel=1e-4)
    b.beta = 0.5
    assert b.beta == 0.5
    with pytest.raises(ValueError, match="out of range"):
        b.update_priorities([4], [1.0])
    with pytest.raises(ValueError, match="non-finite"):
        b.update_priorities([0], [np.nan])
    with pytest.raises(ValueError, match="one value per index"):
        b.update_priorities([0, 1], [1.0])
    with pytest.raises(ValueError, match="prioritized"):
        emberlab.ReplayBuffer(4, 1, 1).update_priorities([0], [1.0])


def test_n_step_transitions_carry_returns_and_discounts():
    b = emberlab.ReplayBuffer(32, 1, 1, n_step=3, gamma=0.5)
    for i in range(4):
        b.add([float(i)], [0.0], 1.0, [float(i + 1)], i == 3)
    assert len(b) == 4
    d = b.sample(64)
    want = {0: (1.75, 0.125), 1: (1.75, 0.125), 2: (1.5, 0.25), 3: (1.0, 0.5)}
    for o, r, g, t in zip(d["obs"][:, 0], d["reward"], d["discount"], d["terminated"]):
        # Window 0 closed before the episode ended; the others were cut by the terminal step.
        assert (r, g) == want[int(o)] and t == (int(o) != 0)


def test_bad_input_raises_naming_the_argument_and_stores_nothing():
    b = emberlab.ReplayBuffer(10, 3, 2)
    good = dict(obs=np.zeros((4, 3)), action=np.zeros((4, 2)), reward=np.zeros(4),
                next_obs=np.zeros((4, 3)), terminated=np.zeros(4, bool))
    b.add(**good)

    def bad(match, error=ValueError, **change):
        with pytest.raises(error, match=match):
            b.add(**{**good, **change})
        assert len(b) == 4

    bad("obs has shape", obs=np.zeros((4, 2)))
    bad("next_obs has shape", next_obs=np.zeros((3, 3)))
    bad("action has shape", action=np.zeros((4, 3)))
    bad("reward has shape", reward=np.zeros(5))
    bad("terminated", terminated=np.array([0, 2, 0, 0]))
    last_nan = np.zeros((4, 3))
    last_nan[3, 1] = np.nan
    bad("next_obs holds a non-finite", next_obs=last_nan)
    bad("action holds a non-finite", action=np.full((4, 2), np.inf))
    bad("obs must hold numbers", TypeError, obs=np.array([["a", "b", "c"]] * 4))
    bad("reward must hold numbers", TypeError, reward=np.zeros(4, dtype=complex))
    bad("action must hold numbers", TypeError, action=object())
    p = emberlab.ReplayBuffer(10, 3, 2, sampler="prioritized")
    p.add(**good)
    with pytest.raises(TypeError, match="indices must hold integers"):
        p.update_priorities(np.array([0.5]), [1.0])
    with pytest.raises(ValueError, match="sampler must be"):
        emberlab.ReplayBuffer(10, 3, sampler="prioritised")
    with pytest.raises(ValueError, match="capacity"):
        emberlab.ReplayBuffer(0, 3)
    with pytest.raises(ValueError, match="zero dimension"):
        emberlab.ReplayBuffer(10, (3, 0))


def test_save_and_load_continue_exactly(tmp_path):
    b = emberlab.ReplayBuffer(50, (2,), 1, sampler="return_weighted", n_step=2, gamma=0.9, seed=7)
    rng = np.random.default_rng(0)
    for t in range(30):
        b.add(rng.normal(size=2), rng.normal(size=1), rng.normal(), rng.normal(size=2), t % 7 == 6)
    path = tmp_path / "replay.bin"
    b.save(path)
    c = emberlab.ReplayBuffer.load(path)
    assert (len(c), c.sampler, c.n_step, c.obs_shape) == (len(b), "return_weighted", 2, [2])
    # The open episode and the pending n-step window continue in both alike.
    for t in range(5):
        args = (rng.normal(size=2), [0.5], 1.0, rng.normal(size=2), t == 4)
        b.add(*args)
        c.add(*args)
    for _ in range(5):
        x, y = b.sample(8), c.sample(8)
        for k in x:
            np.testing.assert_array_equal(x[k], y[k])
    np.testing.assert_array_equal(b.scores(np.arange(len(b))), c.scores(np.arange(len(c))))


def test_missing_and_corrupted_files_raise(tmp_path):
    with pytest.raises(FileNotFoundError):
        emberlab.ReplayBuffer.load(tmp_path / "absent.bin")
    b = emberlab.ReplayBuffer(10, 3, 1)
    b.add(*rows(4))
    path = tmp_path / "r.bin"
    b.save(path)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="checksum"):
        emberlab.ReplayBuffer.load(path)
    # A buffer file and an .episodes file of two different saves are refused.
    b.save(path)
    side = path.read_bytes(), (tmp_path / "r.bin.episodes").read_bytes()
    b.add(*rows(1))
    b.save(path)
    (tmp_path / "r.bin.episodes").write_bytes(side[1])
    with pytest.raises(ValueError, match="different saves"):
        emberlab.ReplayBuffer.load(path)


def test_the_gil_is_released_while_the_buffer_works():
    n = 1 << 21
    b = emberlab.ReplayBuffer(n, 8, 2)
    obs, act = np.ones((n, 8), np.float32), np.ones((n, 2), np.float32)
    rew, done = np.ones(n, np.float32), np.zeros(n, bool)
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(time.perf_counter())

    t = threading.Thread(target=count)
    t.start()
    time.sleep(0.05)
    start = time.perf_counter()
    b.add(obs, act, rew, obs, done)
    end = time.perf_counter()
    stop.set()
    t.join()
    during = [x for x in ticks if start < x < end]
    # Python's switch interval is 5 ms: a call holding the GIL would let the counter run
    # at most at its ends; released, it counts all along.
    assert end - start > 0.02, "the add was too quick to tell"
    assert len(during) > 100, (len(during), end - start)
    assert len(b) == n


def test_all_weights_zero_draw_uniformly():
    # One episode just ended: every transition's score is its return, every weight zero.
    n = 5
    b = emberlab.ReplayBuffer(n, 1, 1, sampler="return_weighted", seed=4)
    obs, act, _, nxt, done = rows(n, (1,))
    done[:] = False
    done[-1] = True
    b.add(obs, act, np.full(n, -2.0), nxt, done)
    assert len(set(b.scores(np.arange(n)))) == 1
    assert sorted(b.sample(n)["indices"]) == list(range(n))
    draws = 10000
    counts = np.zeros(n)
    for _ in range(draws):
        counts[b.sample(1)["indices"][0]] += 1
    # Chi-square with 4 degrees of freedom against uniform: 18.5 is the 0.999 quantile.
    expected = draws / n
    assert ((counts - expected) ** 2 / expected).sum() < 18.5, counts
