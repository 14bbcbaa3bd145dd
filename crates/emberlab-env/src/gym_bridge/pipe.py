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
    out.write(data)


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
