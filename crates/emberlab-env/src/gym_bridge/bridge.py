# The worker side of Ember's Gymnasium bridge (emberlab-env, feature `gym`): one process per
# environment, run as `python -u -c <this file> ENV_ID`, speaking a little-endian binary
# protocol over its stdin/stdout (the environment's own prints go to stderr).
#
# Worker -> Ember, once: b"H" + observation space + action space, where a space is
#   b"B" + u32 n + f32[n] low + f32[n] high   (a Box, flattened)
#   b"D" + u64 n                               (a Discrete with start 0)
# or b"E" + u32 length + UTF-8 message, then exit (no gymnasium, unknown id, unsupported space).
# Ember -> worker: b"R" + u8 has_seed + u64 seed | b"S" + action (f32[n] or u64) | b"Q".
# Worker -> Ember: b"O" + f32[n] obs (after R) | b"T" + f32[n] obs + f64 reward
#   + u8 terminated + u8 truncated (after S) | b"E" + u32 length + message (the environment
#   raised; the worker goes on).
# (pipe.py, prepended by Ember, gives: struct, sys, send, fail, read, serve.)


def describe(space, what, np, spaces):
    if isinstance(space, spaces.Box):
        if not np.issubdtype(space.dtype, np.floating):
            raise TypeError(f"{what} space {space} has dtype {space.dtype}: Ember takes float Boxes")
        low = np.asarray(space.low, dtype=np.float32).ravel()
        high = np.asarray(space.high, dtype=np.float32).ravel()
        return b"B" + struct.pack("<I", low.size) + low.tobytes() + high.tobytes()
    if isinstance(space, spaces.Discrete):
        if int(space.start) != 0:
            raise TypeError(f"{what} space {space} starts at {space.start}: Ember takes Discrete(n) from 0")
        return b"D" + struct.pack("<Q", int(space.n))
    raise TypeError(f"{what} space {space} is not supported: Ember takes Box and Discrete spaces")


def main():
    env_id = sys.argv[1]
    try:
        import numpy as np
        import gymnasium as gym
        from gymnasium import spaces
    except ImportError as e:
        fail(f"{type(e).__name__}: {e} (in {sys.executable}; pip install gymnasium)")
        return
    try:
        env = gym.make(env_id)
        head = b"H" + describe(env.observation_space, "observation", np, spaces)
        head += describe(env.action_space, "action", np, spaces)
    except Exception as e:
        fail(f"{type(e).__name__}: {e}")
        return
    send(head)
    obs_box = isinstance(env.observation_space, spaces.Box)
    act = env.action_space
    if isinstance(act, spaces.Box):
        act_len, act_shape, act_dtype = int(np.prod(act.shape)), act.shape, act.dtype
    else:
        act_len = None

    def flat(obs):
        if obs_box:
            return np.asarray(obs, dtype=np.float32).ravel().tobytes()
        return struct.pack("<f", float(obs))

    def read_action():
        if act_len is None:
            (a,) = struct.unpack("<Q", read(8))
            return int(a)
        raw = np.frombuffer(read(4 * act_len), dtype=np.float32)
        return raw.reshape(act_shape).astype(act_dtype)

    def step(_, result):
        obs, reward, terminated, truncated, _ = result
        return flat(obs) + struct.pack("<dBB", float(reward), bool(terminated), bool(truncated))

    serve([env], lambda _, obs: flat(obs), read_action, step)

main()
