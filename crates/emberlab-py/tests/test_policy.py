"""``emberlab.load_policy``: a run that the ``ember`` command trained, acting from Python as
``ember eval`` and the exported ONNX model act.

The runs are trained by the ``ember`` binary named by ``EMBER_BIN`` (``scripts/check-python.sh``
builds it and sets it); without it these tests fail rather than skip.
"""

import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

import emberlab

# algorithm, environment, hidden layers, steps (tiny networks: seconds each).
RUNS = {
    "sac": ("Pendulum-v1", "[32, 32]", 600),
    "dqn": ("CartPole-v1", "[32]", 600),
    # zoo's A2C Pendulum preset: gSDE and normalised observations.
    "a2c": ("Pendulum-v1", "[16, 16]", 2048),
}


def ember_bin() -> str:
    path = os.environ.get("EMBER_BIN")
    if not path or not Path(path).is_file():
        pytest.fail(
            f"EMBER_BIN={path!r} is not the ember binary: these tests train runs with it "
            "(scripts/check-python.sh builds it and sets EMBER_BIN)"
        )
    return path


def ember_cmd(*args, cwd):
    out = subprocess.run([ember_bin(), *args], cwd=cwd, capture_output=True, text=True)
    assert out.returncode == 0, f"ember {' '.join(args)} failed:\n{out.stderr}"
    return out.stdout


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One short run per algorithm of ``RUNS``, trained with ``ember train``."""
    root = tmp_path_factory.mktemp("runs")
    made = {}
    for algo, (env, hidden, steps) in RUNS.items():
        args = ["train", algo, "--env", env, "--seed", "3", "--steps", str(steps)]
        args += ["--set", f"{algo}.hidden={hidden}", "--quiet", "--out", algo]
        if algo == "a2c":
            args += ["--set", "on_policy.eval_episodes=1", "--eval-every", str(steps)]
        else:
            args += ["--set", "off_policy.batch_size=32", "--set", "off_policy.learning_starts=200"]
            args += ["--set", "off_policy.eval_episodes=1", "--eval-every", str(steps)]
        ember_cmd(*args, cwd=root)
        made[algo] = root / algo
    return made


def episode_returns(policy, env_id, seed, episodes):
    """Returns of greedy episodes with ``emberlab.Env`` (episode ``i`` seeded ``seed + i``)."""
    env = emberlab.Env(env_id)
    returns = []
    for i in range(episodes):
        obs = env.reset(seed + i)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated = env.step(policy.act(obs))
            total += reward
            done = terminated or truncated
        returns.append(total)
    return returns


@pytest.mark.parametrize("algo", list(RUNS))
def test_policy_acts_as_ember_eval(runs, algo):
    run = runs[algo]
    policy = emberlab.load_policy(run)
    env_id = RUNS[algo][0]
    assert policy.algo == algo and policy.env_id == env_id
    assert policy.obs_dim == emberlab.Env(env_id).observation_space["low"].shape[0]
    ours = np.mean(episode_returns(policy, env_id, seed=5, episodes=2))
    printed = ember_cmd("eval", str(run), "--episodes", "2", "--seed", "5", cwd=run.parent)
    theirs = float(re.search(r"mean return (-?[0-9.]+)", printed).group(1))
    # `ember eval` prints two decimals; the episodes themselves are the same computation.
    assert abs(ours - theirs) <= 0.005 + 1e-9, (ours, printed)


def test_a_batch_acts_as_its_rows_and_as_the_onnx_model(runs, tmp_path):
    import onnxruntime as ort  # scripts/setup-python.sh installs it; missing, this test fails

    rng = np.random.default_rng(0)
    for algo in ["sac", "dqn"]:
        policy = emberlab.load_policy(runs[algo])
        obs = rng.uniform(-2.0, 2.0, size=(1000, policy.obs_dim)).astype(np.float32)
        batch = policy.act(obs)
        rows = np.stack([policy.act(o) for o in obs])
        if algo == "dqn":
            np.testing.assert_array_equal(batch, rows)
        else:  # one row and 1,000 rows take different product kernels: float rounding only
            np.testing.assert_allclose(batch, rows, rtol=0, atol=1e-6)
        model = tmp_path / f"{algo}.onnx"
        ember_cmd("export", str(runs[algo]), "--onnx", str(model), cwd=tmp_path)
        session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        (onnx,) = session.run(["action"], {"obs": obs})
        if algo == "dqn":
            assert batch.dtype == np.int64 and batch.shape == (1000,)
            assert policy.act(obs[0]).shape == ()
            np.testing.assert_array_equal(batch, onnx)
        else:
            assert batch.dtype == np.float32 and batch.shape == (1000, 1)
            np.testing.assert_allclose(batch, onnx, rtol=0, atol=1e-4)


@pytest.fixture(scope="module")
def pong(tmp_path_factory):
    """A tiny PPO run on Pong (2 games, 2 rollouts of 64 steps) trained with ``ember train``;
    its games run in workers on ``EMBER_PY_PYTHON`` (gymnasium, ale-py, SB3)."""
    python = os.environ.get("EMBER_PY_PYTHON")
    if not python:
        pytest.fail("EMBER_PY_PYTHON is unset: the Atari run's workers need it")
    root = tmp_path_factory.mktemp("pong")
    args = ["train", "ppo", "--env", "PongNoFrameskip-v4", "--steps", "256", "--quiet"]
    for setting in ["num_envs=2", "on_policy.n_steps=64", "on_policy.eval_episodes=0"]:
        args += ["--set", setting]
    out = subprocess.run(
        [ember_bin(), *args, "--out", "pong"],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "EMBER_PYTHON": python},
    )
    assert out.returncode == 0, f"ember {' '.join(args)} failed:\n{out.stderr}"
    return root / "pong"


def test_an_atari_policy_acts_on_frame_stacks_as_its_onnx_model(pong, tmp_path):
    import onnxruntime as ort

    policy = emberlab.load_policy(pong)
    assert policy.frame_stack == (4, 84, 84) and policy.obs_dim == 4 * 84 * 84
    assert policy.action_space["n"] == 6
    rng = np.random.default_rng(1)
    stacks = rng.integers(0, 256, size=(64, 4, 84, 84), dtype=np.uint8)
    batch = policy.act(stacks)
    assert batch.dtype == np.int64 and batch.shape == (64,)
    assert policy.act(stacks[0]).shape == ()
    np.testing.assert_array_equal(np.stack([policy.act(s) for s in stacks]), batch)
    # SB3's VecFrameStack gives channels last: the same stacks, the same actions.
    np.testing.assert_array_equal(policy.act(np.transpose(stacks, (0, 2, 3, 1))), batch)
    model = tmp_path / "pong.onnx"
    ember_cmd("export", str(pong), "--onnx", str(model), cwd=tmp_path)
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    (onnx,) = session.run(["action"], {"obs": stacks})
    np.testing.assert_array_equal(batch, onnx)
    sampled = policy.act(stacks, deterministic=False)
    assert sampled.shape == (64,) and ((sampled >= 0) & (sampled < 6)).all()
    with pytest.raises(TypeError, match="uint8"):
        policy.act(stacks.astype(np.float32))
    with pytest.raises(ValueError, match=r"\(4, 84, 84\)"):
        policy.act(stacks[:, :3])


def test_sampled_actions_explore_inside_the_box(runs):
    policy = emberlab.load_policy(runs["sac"])
    space = policy.action_space
    obs = np.zeros((256, policy.obs_dim), np.float32)
    greedy = policy.act(obs)
    a = policy.act(obs, deterministic=False)
    b = policy.act(obs, deterministic=False)
    assert np.all(greedy == greedy[0]), "one observation, one greedy action"
    assert np.all(a >= space["low"]) and np.all(a <= space["high"])
    assert np.std(a) > 1e-3 and not np.array_equal(a, b), "sampled actions do not vary"


def test_best_weights_load_and_act(runs):
    best = emberlab.load_policy(runs["sac"], best=True)
    assert best.act(np.zeros(3, np.float32)).shape == (1,)


def test_bad_runs_and_observations_raise_naming_the_problem(runs, tmp_path):
    with pytest.raises(FileNotFoundError, match="no run folder"):
        emberlab.load_policy(tmp_path / "missing")
    with pytest.raises(ValueError, match="not a run folder"):
        emberlab.load_policy(tmp_path)
    policy = emberlab.load_policy(runs["sac"])
    with pytest.raises(ValueError, match=r"obs has shape \(4,\), expected \(3,\)"):
        policy.act(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match=r"obs has shape \(0, 3\)"):
        policy.act(np.zeros((0, 3), np.float32))
    with pytest.raises(ValueError, match="NaN"):
        policy.act(np.array([0.0, np.nan, 0.0]))
    with pytest.raises(TypeError, match="obs"):
        policy.act(np.array(["a", "b", "c"]))


def test_a_damaged_checkpoint_is_an_error_not_a_crash(runs, tmp_path):
    import shutil

    run = tmp_path / "damaged"
    shutil.copytree(runs["sac"], run)
    files = sorted(p for p in (run / "checkpoint").rglob("*") if p.is_file() and p.stat().st_size > 64)
    assert files, "the checkpoint holds no files"
    for f in files:
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    with pytest.raises(ValueError, match="damaged|cannot load|truncated|checkpoint"):
        emberlab.load_policy(run)
