"""Stable-Baselines3 reference for end-to-end training speed, with rl-baselines3-zoo's
hyper-parameters, to compare with Ember's `train_speed` example in the same window.

  ppo CartPole-v1: 8 envs (DummyVecEnv), n_steps 32, batch 256, 20 epochs, gamma 0.98,
                   GAE 0.8, learning rate lin_1e-3, clip range lin_0.2, MlpPolicy 64x64 tanh
  sac Pendulum-v1: 1 env, learning rate 1e-3, otherwise SAC's defaults (buffer 1M,
                   learning_starts 100, batch 256, train_freq 1, MlpPolicy 256x256)
  sac HalfCheetah-v5: zoo's mujoco-defaults: SAC's defaults, learning_starts 10000
  td3 Pendulum-v1: zoo's: gamma 0.98, buffer 200000, learning_starts 10000, normal action
                   noise 0.1, lr 1e-3, batch 256, net_arch [400, 300], train_freq 1
  td3 HalfCheetah-v5: zoo's mujoco-defaults: learning_starts 10000, normal action noise 0.1,
                   lr 1e-3, batch 256, net_arch [400, 300], train_freq 1, gradient_steps 1
  dqn PongNoFrameskip-v4 (any Atari id): zoo's atari: AtariWrapper, 1 env, frame stack 4,
                   CnnPolicy (NatureCNN), buffer 100000, lr 1e-4, batch 32, train_freq 4,
                   gradient_steps 1, target_update_interval 1000, exploration 0.1 -> 0.01;
                   learning_starts is `--warmup` (zoo: 100000) so that timing starts with the
                   updates
  ppo PongNoFrameskip-v4 (any Atari id): zoo's atari: AtariWrapper, 8 envs (DummyVecEnv),
                   frame stack 4, CnnPolicy (NatureCNN shared by both heads), n_steps 128,
                   4 epochs, batch 256, learning rate lin_2.5e-4, clip range lin_0.1,
                   ent_coef 0.01, vf_coef 0.5
  a2c PongNoFrameskip-v4 (any Atari id): zoo's atari: 16 envs, frame stack 4, CnnPolicy,
                   ent_coef 0.01, vf_coef 0.25, RMSpropTFLike(eps 1e-5)

`--warmup N` first runs `learn(N)` untimed (e.g. the 10,000 random steps of the MuJoCo
presets), then times `learn(STEPS)` continuing from there.

No evaluation, no logging: the timed part is `model.learn(STEPS)` alone.

Run: .venv-torch/bin/python benches/reference/sb3_train.py ALGO ENV STEPS [--threads N]
Prints `algo=… env=… threads=N env_steps=… updates=… wall_s=… env_steps_per_s=…`
(`updates`: gradient steps taken, SB3's `_n_updates`; SAC's start after `learning_starts`
transitions, Ember's once the buffer holds a batch, since it samples without replacement).
"""

import argparse
import time

import torch


def linear(start):
    return lambda progress_remaining: progress_remaining * start


def build(algo, env_id, seed, learning_starts=100000):
    from stable_baselines3 import PPO, SAC
    from stable_baselines3.common.env_util import make_vec_env

    if algo == "ppo" and env_id == "CartPole-v1":
        env = make_vec_env(env_id, n_envs=8, seed=seed)
        return PPO("MlpPolicy", env, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98,
                   n_epochs=20, ent_coef=0.0, learning_rate=linear(1e-3),
                   clip_range=linear(0.2), seed=seed, device="cpu", verbose=0)
    if algo == "sac" and env_id == "Pendulum-v1":
        env = make_vec_env(env_id, n_envs=1, seed=seed)
        return SAC("MlpPolicy", env, learning_rate=1e-3, seed=seed, device="cpu", verbose=0)
    if env_id == "HalfCheetah-v5" and algo == "sac":
        env = make_vec_env(env_id, n_envs=1, seed=seed)
        return SAC("MlpPolicy", env, learning_starts=10000, seed=seed, device="cpu", verbose=0)
    if algo == "td3" and env_id in ("HalfCheetah-v5", "Pendulum-v1"):
        import numpy as np
        from stable_baselines3 import TD3
        from stable_baselines3.common.noise import NormalActionNoise

        env = make_vec_env(env_id, n_envs=1, seed=seed)
        n = env.action_space.shape[0]
        noise = NormalActionNoise(mean=np.zeros(n), sigma=0.1 * np.ones(n))
        extra = dict(gamma=0.98, buffer_size=200000) if env_id == "Pendulum-v1" else {}
        return TD3("MlpPolicy", env, learning_starts=10000, action_noise=noise, learning_rate=1e-3,
                   batch_size=256, train_freq=1, gradient_steps=1,
                   policy_kwargs=dict(net_arch=[400, 300]), seed=seed, device="cpu", verbose=0,
                   **extra)
    atari = env_id.startswith("ALE/") or env_id.endswith("NoFrameskip-v4")
    if algo in ("dqn", "ppo", "a2c") and atari:
        import ale_py
        import gymnasium as gym
        from stable_baselines3 import A2C, DQN
        from stable_baselines3.common.env_util import make_atari_env
        from stable_baselines3.common.vec_env import VecFrameStack

        gym.register_envs(ale_py)
        n_envs = {"dqn": 1, "ppo": 8, "a2c": 16}[algo]
        env = VecFrameStack(make_atari_env(env_id, n_envs=n_envs, seed=seed), 4)
        if algo == "ppo":
            return PPO("CnnPolicy", env, n_steps=128, n_epochs=4, batch_size=256,
                       learning_rate=linear(2.5e-4), clip_range=linear(0.1), vf_coef=0.5,
                       ent_coef=0.01, seed=seed, device="cpu", verbose=0)
        if algo == "a2c":
            from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike

            return A2C("CnnPolicy", env, ent_coef=0.01, vf_coef=0.25,
                       policy_kwargs=dict(optimizer_class=RMSpropTFLike,
                                          optimizer_kwargs=dict(eps=1e-5)),
                       seed=seed, device="cpu", verbose=0)
        return DQN("CnnPolicy", env, buffer_size=100000, learning_rate=1e-4, batch_size=32,
                   learning_starts=learning_starts, target_update_interval=1000, train_freq=4,
                   gradient_steps=1, exploration_fraction=0.1, exploration_final_eps=0.01,
                   seed=seed, device="cpu", verbose=0)
    raise SystemExit(f"no preset for {algo} {env_id} (ppo CartPole-v1, sac Pendulum-v1, "
                     "sac HalfCheetah-v5, td3 Pendulum-v1 / HalfCheetah-v5, dqn/ppo/a2c on an Atari id)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("algo")
    parser.add_argument("env")
    parser.add_argument("steps", type=int)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = build(args.algo, args.env, args.seed, learning_starts=args.warmup or 100000)
    if args.warmup:
        model.learn(total_timesteps=args.warmup)
    before, updates_before = model.num_timesteps, getattr(model, "_n_updates", 0)
    start = time.perf_counter()
    model.learn(total_timesteps=args.steps, reset_num_timesteps=not args.warmup)
    wall = time.perf_counter() - start
    steps = model.num_timesteps - before
    updates = getattr(model, "_n_updates", 0) - updates_before
    print(f"algo={args.algo} env={args.env} threads={args.threads} env_steps={steps} "
          f"updates={updates} wall_s={wall:.2f} env_steps_per_s={steps / wall:.1f}")


if __name__ == "__main__":
    main()
