# The pipe half every Ember worker script shares (worker.rs prepends it to bridge.py and
# atari.py): binary messages on the real stdout, which the script's own prints no longer
# reach (they go to stderr), requests read from stdin, and errors sent as b"E" + u32 length
# + UTF-8 message.
import os
import struct
import sys

out = os.fdopen(os.dup(1), "wb", buffering=0)
os.dup2(2, 1)  # print() in the environment must not reach the protocol
inp = os.fdopen(os.dup(0), "rb", buffering=0)


def send(data):
    view = memoryview(data)
    while view:  # a write to a pipe may take only part of the bytes
        view = view[out.write(view):]


def fail(message):
    data = message.encode("utf-8", "replace")
    send(b"E" + struct.pack("<I", len(data)) + data)


def read(n):
    buf = b""
    while len(buf) < n:
        chunk = inp.read(n - len(buf))
        if not chunk:
            sys.exit(0)  # Ember closed the pipe
        buf += chunk
    return buf


def serve(envs, reset, read_action, step, extra=None, indexed=False):
    """Answers requests until Ember quits: `R` resets (`reset(i, obs)` gives the reply after
    b"O"), `S` steps with the action `read_action()` reads (`step(i, result)` gives the reply
    after b"T", from what `env.step` returned), and each request of `extra` (a dict of
    one-byte requests to functions of `i` giving the whole reply), where `i` is the index of
    the environment in `envs`: read as a u32 after each request's byte when `indexed`, else
    0. An exception in an environment is sent as an error and the worker goes on; an unknown
    request or index ends it."""
    extra = extra or {}
    while True:
        op = read(1)
        if op == b"Q":
            for env in envs:
                env.close()
            return
        i = struct.unpack("<I", read(4))[0] if indexed else 0
        if i >= len(envs):
            fail(f"protocol error: environment {i} of {len(envs)}")
            return
        env = envs[i]
        if op in extra:
            try:
                send(extra[op](i))
            except Exception as e:
                fail(f"{type(e).__name__} in {op.decode()}: {e}")
            continue
        if op == b"R":
            has_seed, seed = struct.unpack("<BQ", read(9))
            try:
                obs, _ = env.reset(seed=seed if has_seed else None)
                send(b"O" + reset(i, obs))
            except Exception as e:
                fail(f"{type(e).__name__} in reset: {e}")
        elif op == b"S":
            action = read_action()
            try:
                send(b"T" + step(i, env.step(action)))
            except Exception as e:
                fail(f"{type(e).__name__} in step: {e}")
        else:
            fail(f"protocol error: unknown request {op!r}")
            return
