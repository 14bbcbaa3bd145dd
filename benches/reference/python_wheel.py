"""The `emberlab` wheel against the Python stacks, in one process per part (docs/benchmarks.md,
"From Python"). Install: benches/reference/setup.sh, then scripts/check-python.sh (builds and
installs the wheel into .venv-torch).

  .venv-torch/bin/python benches/reference/python_wheel.py replay   # draws and adds vs NumPy, torch, cpprb
  .venv-torch/bin/python benches/reference/python_wheel.py envs     # vector envs vs Gymnasium
  .venv-envpool/bin/python benches/reference/python_wheel.py envpool
  .venv-torch/bin/python benches/reference/python_wheel.py sb3      # SB3 SAC with a 1M buffer
  .venv-torch/bin/python benches/reference/python_wheel.py policy RUN  # load_policy vs onnxruntime
"""

import sys
import time

import numpy as np

N, K = 1 << 20, 256


def timed(name, fn, repeats, unit="ms per call"):
    fn()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        best = min(best, (time.perf_counter() - start) / repeats)
    print(f"{name:<58} {best * 1e3:10.4f} {unit}", flush=True)
    return best


def shifted_probs(returns):
    w = returns + abs(min(returns.min(), 0.0))
    return w / w.sum()


def replay():
    import emberlab

    rng = np.random.default_rng(0)
    obs = rng.normal(size=(N, 3)).astype(np.float32)
    act = rng.normal(size=(N, 1)).astype(np.float32)
    rew = rng.normal(size=N).astype(np.float32)
    done = np.zeros(N, bool)
    returns = rng.uniform(-100.0, 100.0, N)
    print(f"# {N} transitions (obs 3, action 1); draws of {K}")

    rw = emberlab.ReplayBuffer(N, 3, 1, sampler="return_weighted")
    rw.add(obs, act, rew, obs, done)
    rw.set_scores(np.arange(N), returns)
    ours = timed("ember return_weighted sample(256) (batch gathered)", lambda: rw.sample(K), 2000)
    npy = timed("numpy choice(replace=False, p=shifted) (indices only)",
                lambda: np.random.choice(N, K, replace=False, p=shifted_probs(returns)), 5)
    import torch

    torch.set_num_threads(1)
    r = torch.from_numpy(returns)
    tor = timed("torch.multinomial(replacement=False) (indices only)",
                lambda: torch.multinomial(r + abs(min(r.min().item(), 0.0)), K, replacement=False), 20)
    print(f"ratio: {npy / ours:.0f}x NumPy, {tor / ours:.0f}x torch.multinomial")

    import cpprb

    env_dict = {"obs": {"shape": 3}, "act": {"shape": 1}, "rew": {}, "next_obs": {"shape": 3}, "done": {}}
    pc = cpprb.PrioritizedReplayBuffer(N, env_dict, alpha=0.6)
    pc.add(obs=obs, act=act, rew=rew, next_obs=obs, done=done.astype(np.float32))
    pri = rng.uniform(0.1, 10.0, N)
    pc.update_priorities(np.arange(N), pri)
    pe = emberlab.ReplayBuffer(N, 3, 1, sampler="prioritized", alpha=0.6, beta=0.4)
    pe.add(obs, act, rew, obs, done)
    pe.update_priorities(np.arange(N), pri)
    a = timed("ember prioritized sample(256)", lambda: pe.sample(K), 2000)
    b = timed("cpprb PrioritizedReplayBuffer.sample(256, beta=0.4)", lambda: pc.sample(K, beta=0.4), 2000)
    print(f"ratio: {b / a:.1f}x cpprb")

    for batch in (1, 1000):
        m = N if batch > 1 else 100_000
        chunks = [(obs[i:i + batch], act[i:i + batch], rew[i:i + batch], done[i:i + batch]) for i in range(0, m, batch)]

        def fill_ember():
            e = emberlab.ReplayBuffer(N, 3, 1)
            for o, a_, r_, d in chunks:
                e.add(o, a_, r_, o, d)

        def fill_cpprb():
            c = cpprb.ReplayBuffer(N, env_dict)
            for o, a_, r_, d in chunks:
                c.add(obs=o, act=a_, rew=r_, next_obs=o, done=d)

        x = timed(f"ember add {m} transitions in batches of {batch}", fill_ember, 1, "ms per fill")
        y = timed(f"cpprb add {m} transitions in batches of {batch}", fill_cpprb, 1, "ms per fill")
        print(f"ratio: {y / x:.2f}x cpprb")


def step_rate(name, env, n, actions, steps):
    env.reset(seed=0)
    start = time.perf_counter()
    for i in range(steps):
        env.step(actions[i % len(actions)])
    rate = steps * n / (time.perf_counter() - start)
    print(f"{name:<58} {rate:12.0f} env steps/s", flush=True)
    return rate


def vec_actions(env_id, n):
    rng = np.random.default_rng(0)
    if env_id.startswith("CartPole"):
        return [rng.integers(0, 2, n) for _ in range(64)]
    return [rng.uniform(-2, 2, (n, 1)).astype(np.float32) for _ in range(64)]


def envs():
    import gymnasium as gym

    import emberlab

    for env_id in ("CartPole-v1", "Pendulum-v1"):
        for n in (1, 16):
            acts = vec_actions(env_id, n)
            steps = 20000 // n if n > 1 else 20000
            for w in (1, 2) if n > 1 else (1,):
                step_rate(f"ember make_vec({env_id}, {n}, workers={w})", emberlab.make_vec(env_id, n, workers=w), n, acts, steps)
            sync = gym.vector.SyncVectorEnv([lambda: gym.make(env_id) for _ in range(n)])
            step_rate(f"gymnasium SyncVectorEnv({env_id}, {n})", sync, n, acts, steps // 4)


def envpool():
    import envpool as ep

    for env_id in ("CartPole-v1", "Pendulum-v1"):
        for n in (1, 16):
            acts = vec_actions(env_id, n)
            steps = 20000 // n if n > 1 else 20000
            for threads in (1, 2) if n > 1 else (1,):
                env = ep.make_gymnasium(env_id, num_envs=n, num_threads=threads, seed=0)
                rate = step_rate(f"envpool make_gymnasium({env_id}, {n}, num_threads={threads})", env, n, acts, steps)
                del env, rate


def sb3(steps=1500):
    import torch
    from stable_baselines3 import SAC

    from emberlab.sb3 import ReturnWeightedReplayBuffer

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    obs = rng.uniform(-1, 1, (N, 3)).astype(np.float32)
    act = rng.uniform(-2, 2, (N, 1)).astype(np.float32)
    rew = rng.uniform(-16, 0, N).astype(np.float32)

    def prefilled(kind):
        model = SAC("MlpPolicy", "Pendulum-v1", buffer_size=N, learning_starts=0, seed=0, verbose=0,
                    replay_buffer_class=ReturnWeightedReplayBuffer if kind == "ember" else None)
        buf = model.replay_buffer
        if kind == "ember":
            ends = np.zeros(N, bool)
            ends[199::200] = True
            for i in range(0, N, 1 << 16):
                s = slice(i, i + (1 << 16))
                buf.ember.add(obs[s], act[s], rew[s], obs[s], np.zeros(ends[s].shape, bool), ends[s])
        else:
            buf.observations[:, 0] = obs
            buf.next_observations[:, 0] = obs
            buf.actions[:, 0] = act
            buf.rewards[:, 0] = rew
            buf.full, buf.pos = True, 0
        return model

    times = {"sb3": [], "ember": []}
    for _ in range(2):
        for kind in ("sb3", "ember"):
            model = prefilled(kind)
            start = time.perf_counter()
            model.learn(steps, reset_num_timesteps=False)
            times[kind].append((time.perf_counter() - start) / steps)
            print(f"SAC Pendulum-v1, 1M-transition buffer, {kind:<6} {times[kind][-1] * 1e3:8.3f} ms per env step", flush=True)
    a, b = min(times["sb3"]), min(times["ember"])
    print(f"return-weighted (ember) vs SB3's uniform buffer: {100 * (b / a - 1):+.1f}% time per env step")


def policy(run):
    """A run's greedy actions from Python: ``emberlab.load_policy`` against onnxruntime on the
    model ``ember export RUN --onnx`` wrote (``RUN/policy.onnx``), one observation and 256."""
    import onnxruntime as ort

    import emberlab

    pol = emberlab.load_policy(run)
    session = ort.InferenceSession(f"{run}/policy.onnx", providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for rows in [1, 256]:
        obs = rng.uniform(-1, 1, size=(rows, pol.obs_dim)).astype(np.float32)
        one = obs[0] if rows == 1 else obs
        timed(f"emberlab.load_policy act, {rows} obs", lambda: pol.act(one), 2000, "ms per call")
        timed(f"onnxruntime run, {rows} obs", lambda: session.run(["action"], {"obs": obs}), 2000, "ms per call")


if __name__ == "__main__":
    parts = {"replay": replay, "envs": envs, "envpool": envpool, "sb3": sb3, "policy": policy}
    parts[sys.argv[1]](*sys.argv[2:])
