#!/usr/bin/env python3
"""Reference Atari traces: Gymnasium `*NoFrameskip-v4` + SB3 `AtariWrapper` + `VecFrameStack(4)`.

    .venv-torch/bin/pip install ale-py==0.12.1 gymnasium==1.4.0 stable-baselines3==2.9.2 \
        opencv-python-headless
    .venv-torch/bin/python crates/emberlab-env/tools/gen_atari_traces.py \
        --env-id BreakoutNoFrameskip-v4 [--seed 0] [--steps 2000] [--action-seed 123] \
        [--noop-max 0] [--full-obs] [--no-compress] (--out breakout.npz | --raw DIR)

`--raw DIR` writes the arrays Ember's test reads (crates/emberlab-env/tests/atari.rs) as
raw little-endian files instead: actions.i64, frames.u8, rewards.f32, terminated.u8,
truncated.u8, game_over.u8, terminal_frames.u8, lives.i32, obs.u8 (with --full-obs) and
meta.json. `--max-frames N` sets ALE's frame budget per episode (to reach a truncation).

Runs the exact stack that SB3's `make_atari_env(env_id, n_envs=1, seed=seed)` +
`VecFrameStack(n_stack=4)` builds (minus `Monitor`, which changes nothing the agent sees):
`DummyVecEnv([AtariWrapper(gym.make(env_id), noop_max=...)])`, same-step autoreset. Actions
are `numpy.random.default_rng(action_seed).integers(0, n_actions, size=steps)` over the minimal
action set, and are stored, so a consumer never has to reproduce NumPy's generator.

The output is a NumPy `.npz` (a zip of `.npy` files; `--no-compress` stores them uncompressed
so a reader needs no deflate). Index 0 of per-observation arrays is the reset observation;
index t+1 is what `step(actions[t])` returned (after any autoreset, as DummyVecEnv does).

    meta              0-d str: JSON with env id, seeds, settings and package versions
    actions           int64[steps]
    frames            uint8[steps+1, 84, 84]  newest frame of each stacked observation
    obs               uint8[steps+1, 84, 84, 4]  only with --full-obs; SB3 layout: channels
                      last, oldest frame first, zeros after every done (incl. life loss)
    obs_sha256        uint8[steps+1, 32]  SHA-256 of each stacked observation's bytes in the
                      layout above (C order, 84*84*4 bytes)
    terminal_frames   uint8[steps, 84, 84]  the newest frame of the episode's last observation
                      (`terminal_observation`) where the step ended one, zeros elsewhere
    rewards           float32[steps]  clipped to sign, as the agent sees them
    raw_rewards       float32[steps]  sum of raw ALE rewards over the agent step's frames
    terminated        bool[steps]  game over OR life loss (EpisodicLifeEnv)
    truncated         bool[steps]  `TimeLimit.truncated`: ALE frame budget (108000 frames
                      since the last real reset, counted by ALE) hit without termination
    game_over         bool[steps]  ALE game over (terminal, no truncation) at the end of the
                      step, before any autoreset; terminated & ~game_over & ~truncated = life loss
    lives             int32[steps]  ALE lives at the end of the step, before any autoreset
    episode_frame_number, frame_number  int32[steps]  ALE counters, end of step, before reset
    post_frame_number int32[steps+1]  ALE frame counter after the full step incl. autoreset
                      (index 0: after the initial reset); differences give frames per step
    frame_actions     int8[n]  every raw ALE frame's action index in order; -1 = base reset
                      (`AtariEnv.reset`, i.e. `ale.reset_game()`)
    frame_offsets     int64[steps+2]  frame_actions[frame_offsets[i]:frame_offsets[i+1]] are
                      the raw frames of observation i (0: initial reset sequence)
    noops             int32[k]  noop count drawn by each `NoopResetEnv.reset` (empty if
                      --noop-max 0), in order; noop_step[k] = agent step it happened in (-1:
                      initial reset)

SB3 semantics recorded here (see AtariWrapper, stable_baselines3/common/atari_wrappers.py):
noop reset = 1..noop_max single NOOP frames (`unwrapped.np_random`, seeded by Gymnasium's
`AtariEnv.seed_game`) right after `reset_game`; MaxAndSkip = repeat 4 frames, max of the RGB
frames 3 and 4 (break on game over, keeping stale buffer entries); EpisodicLife = terminated
when 0 < lives < previous lives, then "reset" = one NOOP agent step unless the game is over;
FireReset (games with FIRE) = agent steps FIRE then action 2 after every reset, including the
life-loss pseudo reset; WarpFrame = cv2 RGB2GRAY then cv2.resize(84x84, INTER_AREA); reward =
sign. `--noop-max 0` drops NoopResetEnv entirely (AtariWrapper only adds it when > 0).
"""

import argparse
import os
import hashlib
import json
import platform

import ale_py
import cv2
import gymnasium as gym
import numpy as np
import stable_baselines3
from stable_baselines3.common.atari_wrappers import AtariWrapper, NoopResetEnv
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack

gym.register_envs(ale_py)


class FrameLog(gym.Wrapper):
    """Innermost wrapper: logs every raw frame action and base reset."""

    def __init__(self, env, log):
        super().__init__(env)
        self.log = log

    def reset(self, **kwargs):
        self.log.append(-1)
        return self.env.reset(**kwargs)

    def step(self, action):
        self.log.append(int(action))
        return self.env.step(action)


class Probe(gym.Wrapper):
    """Outermost wrapper (inside DummyVecEnv): reads ALE state at the end of each agent step,
    before DummyVecEnv's autoreset, and the unclipped reward."""

    def __init__(self, env):
        super().__init__(env)
        self.last = None

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        ale = self.env.unwrapped.ale
        self.last = dict(
            raw_reward=float(reward),
            game_over=bool(ale.game_over(with_truncation=False)),
            lives=int(ale.lives()),
            episode_frame_number=int(ale.getEpisodeFrameNumber()),
            frame_number=int(ale.getFrameNumber()),
        )
        return obs, float(np.sign(reward)), terminated, truncated, info


def build(env_id, noop_max, frame_log, noop_log, step_ref, max_frames=None):
    def thunk():
        kwargs = {} if max_frames is None else {"max_num_frames_per_episode": max_frames}
        env = FrameLog(gym.make(env_id, **kwargs), frame_log)
        # clip_reward=False + sign in Probe is identical to clip_reward=True (ClipRewardEnv is
        # AtariWrapper's outermost layer and only maps the reward); it lets us keep the raw sum.
        env = AtariWrapper(env, noop_max=noop_max, clip_reward=False)
        inner = env
        while not isinstance(inner, NoopResetEnv) and hasattr(inner, "env"):
            inner = inner.env
        if isinstance(inner, NoopResetEnv):
            orig = inner.reset

            def reset(**kwargs):
                start = len(frame_log)
                out = orig(**kwargs)
                # frames logged = base reset marker(s) + the noop frames
                noop_log.append((sum(1 for a in frame_log[start:] if a >= 0), step_ref[0]))
                return out

            inner.reset = reset  # instance attribute shadows the method; SB3 code unchanged
        return Probe(env)

    venv = VecFrameStack(DummyVecEnv([thunk]), n_stack=4)
    return venv


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env-id", default="BreakoutNoFrameskip-v4")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--action-seed", type=int, default=123)
    p.add_argument("--noop-max", type=int, default=0, help="SB3 default is 30; 0 disables")
    p.add_argument("--full-obs", action="store_true", help="also store full stacked obs")
    p.add_argument("--max-frames", type=int, default=None,
                   help="ALE's frame budget per episode (Gymnasium's default: 108000)")
    p.add_argument("--no-compress", action="store_true", help="np.savez instead of savez_compressed")
    p.add_argument("--out")
    p.add_argument("--raw", help="write raw little-endian arrays into this folder")
    args = p.parse_args()
    if (args.out is None) == (args.raw is None):
        p.error("give exactly one of --out and --raw")
    if not args.env_id.endswith("NoFrameskip-v4"):
        p.error("AtariWrapper expects a *NoFrameskip-v4 env id")

    frame_log, noop_log, step_ref = [], [], [-1]
    venv = build(args.env_id, args.noop_max, frame_log, noop_log, step_ref, args.max_frames)
    probe = venv.venv.envs[0]
    n_actions = int(venv.action_space.n)
    actions = np.random.default_rng(args.action_seed).integers(0, n_actions, size=args.steps)

    n = args.steps
    frames = np.zeros((n + 1, 84, 84), np.uint8)
    obs_all = np.zeros((n + 1, 84, 84, 4), np.uint8) if args.full_obs else None
    sha = np.zeros((n + 1, 32), np.uint8)
    rewards = np.zeros(n, np.float32)
    raw_rewards = np.zeros(n, np.float32)
    terminated = np.zeros(n, bool)
    truncated = np.zeros(n, bool)
    terminal_frames = np.zeros((n, 84, 84), np.uint8)
    game_over = np.zeros(n, bool)
    lives = np.zeros(n, np.int32)
    ep_frame = np.zeros(n, np.int32)
    frame_no = np.zeros(n, np.int32)
    post_frame = np.zeros(n + 1, np.int32)
    offsets = [0]

    def record(i, obs):
        o = np.ascontiguousarray(obs[0])
        assert o.shape == (84, 84, 4) and o.dtype == np.uint8
        frames[i] = o[..., -1]
        if obs_all is not None:
            obs_all[i] = o
        sha[i] = np.frombuffer(hashlib.sha256(o.tobytes()).digest(), np.uint8)
        post_frame[i] = probe.unwrapped.ale.getFrameNumber()
        offsets.append(len(frame_log))

    venv.seed(args.seed)
    record(0, venv.reset())
    for t in range(n):
        step_ref[0] = t
        obs, rew, done, infos = venv.step(np.array([actions[t]]))
        info = infos[0]
        if done[0]:
            # The episode's last observation, before the autoreset (VecFrameStack stacked it).
            terminal_frames[t] = np.asarray(info["terminal_observation"])[..., -1]
        trunc = bool(info.get("TimeLimit.truncated", False))
        rewards[t] = rew[0]
        truncated[t] = trunc
        terminated[t] = bool(done[0]) and not trunc
        last = probe.last
        raw_rewards[t] = last["raw_reward"]
        game_over[t] = last["game_over"]
        lives[t] = last["lives"]
        ep_frame[t] = last["episode_frame_number"]
        frame_no[t] = last["frame_number"]
        record(t + 1, obs)
    venv.close()

    meta = dict(
        env_id=args.env_id, seed=args.seed, steps=n, action_seed=args.action_seed,
        noop_max=args.noop_max, max_frames=args.max_frames, n_actions=n_actions,
        action_meanings=probe.unwrapped.get_action_meanings(),
        actions_rule="numpy.random.default_rng(action_seed).integers(0, n_actions, size=steps)",
        wrappers="VecFrameStack(DummyVecEnv([AtariWrapper(gym.make(env_id), noop_max, "
                 "frame_skip=4, screen_size=84, terminal_on_life_loss=True, clip_reward=True)]), 4)",
        obs_layout="84x84x4 uint8, channels last, oldest first",
        versions={"ale_py": ale_py.__version__, "gymnasium": gym.__version__,
                  "stable_baselines3": stable_baselines3.__version__, "numpy": np.__version__,
                  "opencv": cv2.__version__, "python": platform.python_version()},
    )
    arrays = dict(
        meta=np.array(json.dumps(meta)), actions=actions.astype(np.int64), frames=frames,
        obs_sha256=sha, rewards=rewards, raw_rewards=raw_rewards, terminated=terminated,
        truncated=truncated, terminal_frames=terminal_frames, game_over=game_over, lives=lives, episode_frame_number=ep_frame,
        frame_number=frame_no, post_frame_number=post_frame,
        frame_actions=np.array(frame_log, np.int8), frame_offsets=np.array(offsets, np.int64),
        noops=np.array([c for c, _ in noop_log], np.int32),
        noop_step=np.array([s for _, s in noop_log], np.int32),
    )
    if obs_all is not None:
        arrays["obs"] = obs_all
    if args.raw:
        os.makedirs(args.raw, exist_ok=True)
        for name, kind in [("actions", "<i8"), ("frames", "u1"), ("rewards", "<f4"),
                           ("terminated", "u1"), ("truncated", "u1"), ("game_over", "u1"),
                           ("terminal_frames", "u1"),
                           ("lives", "<i4")] + ([("obs", "u1")] if obs_all is not None else []):
            ext = {"<i8": "i64", "u1": "u8", "<f4": "f32", "<i4": "i32"}[kind]
            arrays[name].astype(kind).tofile(os.path.join(args.raw, f"{name}.{ext}"))
        with open(os.path.join(args.raw, "meta.json"), "w") as f:
            json.dump(meta, f)
        args.out = args.raw
    else:
        (np.savez if args.no_compress else np.savez_compressed)(args.out, **arrays)
    dones = terminated | truncated
    print(f"{args.env_id} seed={args.seed} steps={n}: {int(dones.sum())} dones "
          f"({int((terminated & ~game_over).sum())} life losses, {int(game_over.sum())} game overs, "
          f"{int(truncated.sum())} truncations), clipped return {rewards.sum():.0f}, "
          f"{len(frame_log)} raw frames -> {args.out}")


if __name__ == "__main__":
    main()
