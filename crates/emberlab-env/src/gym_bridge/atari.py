# The worker side of Ember's Atari environments (emberlab-env, feature `gym`): GAMES games in
# one process, run as `python -u -c <this file> ENV_ID NOOP_MAX FRAME_SKIP LIFE_LOSS CLIP
# MAX_FRAMES GAMES` (MAX_FRAMES 0: the game's own budget, 108000 frames), each
# stepping Gymnasium's ALE environment (ale-py, GPL-2: it stays in this process) through the
# semantics of Stable-Baselines3's `AtariWrapper` (no-op starts, frame skip with the max of
# the last two frames, episodic life, fire reset, 84x84 grayscale, reward clipping), written
# out below without importing SB3: its package imports PyTorch, which took 1.8 s and 610 MB
# of every worker (tests/atari.rs checks these layers against SB3's own). It sends the newest
# 84x84 frame of each observation; Ember stacks frames itself. Little-endian, over
# stdin/stdout (the game's own prints go to stderr). The games are independent (each its
# own environment and generators); requests are answered in the order they come.
#
# Worker -> Ember, once: b"H" + u32 actions + u32 height + u32 width, or b"E" + u32 length +
#   UTF-8 message, then exit (no gymnasium / ale-py / OpenCV, an unknown id).
# Ember -> worker, each request but Q naming its game by a u32 index (from 0) after its byte:
#   b"R" + u32 game + u8 has_seed + u64 seed | b"S" + u32 game + u32 action
#   | b"P" + u32 game | b"Q".
# Worker -> Ember: b"O" + frame + u32 lives (after R) | b"T" + frame + f32 reward
#   + f32 score (the game's own rewards since the last step, before clipping) + u8 terminated
#   + u8 truncated + u8 game_over + u32 lives (after S) | b"P" + u32 height + u32 width +
#   the screen as RGB bytes, row-major (after P: what the game shows, for GIFs) | b"E" + u32
#   length + message (the game raised; the worker goes on).
# After a step that terminated (a life lost counts, as in SB3) or truncated, Ember sends R
# without a seed: SB3's DummyVecEnv resets the same way, which after a lost life continues the
# game (EpisodicLifeEnv) rather than starting a new one.
# (pipe.py, prepended by Ember, gives: struct, sys, send, fail, read, serve.)


class Score:
    """The game's own rewards summed under the clipping and frame skip above it (a game's
    sum starts afresh at each real reset, as SB3's Monitor's)."""

    def __init__(self, env):
        self.env, self.unwrapped, self.total = env, env.unwrapped, 0.0

    def reset(self, **kwargs):
        self.total = 0.0
        return self.env.reset(**kwargs)

    def step(self, action):
        result = self.env.step(action)
        self.total += float(result[1])
        return result


class NoopReset:
    """A reset followed by 1..=noop_max no-op frames drawn from the game's own generator
    (a game that ends meanwhile is reset with the same arguments)."""

    def __init__(self, env, noop_max):
        self.env, self.unwrapped, self.noop_max = env, env.unwrapped, noop_max

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        noops = int(self.unwrapped.np_random.integers(1, self.noop_max + 1))
        for _ in range(noops):
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        return obs, info

    def step(self, action):
        return self.env.step(action)


class MaxAndSkip:
    """Each action repeated `skip` frames, rewards summed, stopping at the end of a game;
    the observation is the pixel-wise max of the buffer holding the last two frames of the
    full skip (after an early stop it keeps frames of an earlier step, as SB3's does)."""

    def __init__(self, env, skip, np):
        self.env, self.unwrapped, self.skip = env, env.unwrapped, skip
        space = env.unwrapped.observation_space
        self.buffer = np.zeros((2, *space.shape), dtype=space.dtype)

    def reset(self, **kwargs):
        return self.env.reset(**kwargs)

    def step(self, action):
        total, terminated, truncated, info = 0.0, False, False, {}
        for i in range(self.skip):
            obs, reward, terminated, truncated, info = self.env.step(action)
            if i == self.skip - 2:
                self.buffer[0] = obs
            if i == self.skip - 1:
                self.buffer[1] = obs
            total += float(reward)
            if terminated or truncated:
                break
        return self.buffer.max(axis=0), total, terminated, truncated, info


class EpisodicLife:
    """A lost life ends the episode; the reset after it continues the game with a no-op
    step (a real reset only after the game ended, or if that step ends it)."""

    def __init__(self, env):
        self.env, self.unwrapped = env, env.unwrapped
        self.lives, self.real_done = 0, True

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.real_done = terminated or truncated
        lives = self.unwrapped.ale.lives()
        if 0 < lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs):
        if self.real_done:
            obs, info = self.env.reset(**kwargs)
        else:
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        self.lives = self.unwrapped.ale.lives()
        return obs, info


class FireReset:
    """FIRE (action 1), then action 2, after every reset, resetting again where either ends
    the game; the observation is the one after action 2."""

    def __init__(self, env):
        self.env, self.unwrapped = env, env.unwrapped

    def reset(self, **kwargs):
        self.env.reset(**kwargs)
        obs, _, terminated, truncated, _ = self.env.step(1)
        if terminated or truncated:
            self.env.reset(**kwargs)
        obs, _, terminated, truncated, _ = self.env.step(2)
        if terminated or truncated:
            self.env.reset(**kwargs)
        return obs, {}

    def step(self, action):
        return self.env.step(action)


class Frames:
    """84x84 grayscale (OpenCV's RGB-to-gray, area resize) and rewards clipped to their
    sign: the outermost layer."""

    def __init__(self, env, clip, size, np, cv2):
        self.env, self.unwrapped, self.clip, self.size = env, env.unwrapped, clip, size
        self.np, self.cv2 = np, cv2

    def frame(self, obs):
        gray = self.cv2.cvtColor(obs, self.cv2.COLOR_RGB2GRAY)
        return self.cv2.resize(gray, (self.size, self.size), interpolation=self.cv2.INTER_AREA)

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return self.frame(obs), info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.clip:
            reward = float(self.np.sign(float(reward)))
        return self.frame(obs), reward, terminated, truncated, info

    def close(self):
        self.unwrapped.close()


def wrap(env, noop_max, frame_skip, life_loss, clip, np, cv2):
    """SB3's AtariWrapper's layers, innermost first, each only where its setting asks."""
    if noop_max > 0:
        env = NoopReset(env, noop_max)
    if frame_skip > 1:
        env = MaxAndSkip(env, frame_skip, np)
    if life_loss:
        env = EpisodicLife(env)
    if "FIRE" in env.unwrapped.get_action_meanings():
        env = FireReset(env)
    return Frames(env, clip, SIZE, np, cv2)


# The frames' side (SB3's default screen size).
SIZE = 84



def main():
    env_id, noop_max, frame_skip, life_loss, clip, max_frames, games = sys.argv[1:8]
    try:
        import numpy as np
        import gymnasium as gym
        import ale_py
        import cv2
    except ImportError as e:
        fail(
            f"{type(e).__name__}: {e} (in {sys.executable}; "
            "pip install gymnasium ale-py opencv-python-headless)"
        )
        return
    try:
        gym.register_envs(ale_py)
        # The layers skip frames themselves: the v5 ids' own skip is turned off.
        kwargs = {"frameskip": 1} if env_id.startswith("ALE/") else {}
        if int(max_frames) > 0:
            kwargs["max_num_frames_per_episode"] = int(max_frames)
        scores = [Score(gym.make(env_id, **kwargs)) for _ in range(int(games))]
        envs = [
            wrap(score, int(noop_max), int(frame_skip), life_loss == "1", clip == "1", np, cv2)
            for score in scores
        ]
        actions = int(envs[0].unwrapped.action_space.n)
        height = width = SIZE
    except Exception as e:
        fail(f"{type(e).__name__}: {e}")
        return
    send(b"H" + struct.pack("<III", actions, height, width))
    ales = [env.unwrapped.ale for env in envs]

    def frame(obs):
        return np.ascontiguousarray(obs, dtype=np.uint8).tobytes()

    def reset(i, obs):
        return frame(obs) + struct.pack("<I", int(ales[i].lives()))

    def read_action():
        return int(struct.unpack("<I", read(4))[0])

    def step(i, result):
        obs, reward, terminated, truncated, _ = result
        ale = ales[i]
        game_over = bool(ale.game_over(with_truncation=False))
        score, scores[i].total = scores[i].total, 0.0
        flags = struct.pack(
            "<ffBBBI",
            float(reward),
            score,
            bool(terminated),
            bool(truncated),
            game_over,
            int(ale.lives()),
        )
        return frame(obs) + flags

    def screen(i):
        rgb = np.ascontiguousarray(ales[i].getScreenRGB(), dtype=np.uint8)
        height, width, _ = rgb.shape
        return b"P" + struct.pack("<II", height, width) + rgb.tobytes()

    serve(envs, reset, read_action, step, {b"P": screen}, indexed=True)

main()
