# The worker side of Ember's Atari environments (emberlab-env, feature `gym`): GAMES games in
# one process, run as `python -u -c <this file> ENV_ID NOOP_MAX FRAME_SKIP LIFE_LOSS CLIP
# MAX_FRAMES GAMES` (MAX_FRAMES 0: the game's own budget, 108000 frames), each
# stepping Gymnasium's ALE environment (ale-py, GPL-2: it stays in this process) through
# Stable-Baselines3's `AtariWrapper` (no-op starts, frame skip with the max of the last two
# frames, episodic life, fire reset, 84x84 grayscale, reward clipping). It sends the newest
# 84x84 frame of each observation; Ember stacks frames itself. Little-endian, over
# stdin/stdout (the game's own prints go to stderr). The games are independent (each its
# own environment and generators); requests are answered in the order they come.
#
# Worker -> Ember, once: b"H" + u32 actions + u32 height + u32 width, or b"E" + u32 length +
#   UTF-8 message, then exit (no gymnasium / ale-py / SB3, an unknown id).
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


def main():
    env_id, noop_max, frame_skip, life_loss, clip, max_frames, games = sys.argv[1:8]
    try:
        import numpy as np
        import gymnasium as gym
        import ale_py
        from stable_baselines3.common.atari_wrappers import AtariWrapper
    except ImportError as e:
        fail(
            f"{type(e).__name__}: {e} (in {sys.executable}; "
            "pip install gymnasium ale-py stable-baselines3 opencv-python-headless)"
        )
        return
    try:
        gym.register_envs(ale_py)
        # AtariWrapper skips frames itself: the v5 ids' own skip is turned off.
        kwargs = {"frameskip": 1} if env_id.startswith("ALE/") else {}
        if int(max_frames) > 0:
            kwargs["max_num_frames_per_episode"] = int(max_frames)
        class Score(gym.Wrapper):
            """Sums the game's own rewards under AtariWrapper's clipping and frame skip."""

            def __init__(self, env):
                super().__init__(env)
                self.total = 0.0

            def reset(self, **kwargs):
                self.total = 0.0  # as SB3's Monitor starts each game's sum afresh
                return self.env.reset(**kwargs)

            def step(self, action):
                result = self.env.step(action)
                self.total += float(result[1])
                return result

        scores = [Score(gym.make(env_id, **kwargs)) for _ in range(int(games))]
        envs = [
            AtariWrapper(
                score,
                noop_max=int(noop_max),
                frame_skip=int(frame_skip),
                terminal_on_life_loss=life_loss == "1",
                clip_reward=clip == "1",
            )
            for score in scores
        ]
        actions = int(envs[0].action_space.n)
        height, width, _ = envs[0].observation_space.shape
    except Exception as e:
        fail(f"{type(e).__name__}: {e}")
        return
    send(b"H" + struct.pack("<III", actions, height, width))
    ales = [env.unwrapped.ale for env in envs]

    def frame(obs):
        return np.ascontiguousarray(obs[:, :, 0], dtype=np.uint8).tobytes()

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
