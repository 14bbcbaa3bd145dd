"""Reference for `return_weighted/*`: drawing 256 of 1M transitions without replacement,
proportionally to returns shifted to be non-negative, as the Python stacks do it.

Run: python3 benches/reference/replay_numpy.py   (needs numpy; torch optional)
Prints milliseconds per draw for NumPy's `Generator.choice(replace=False, p=...)`, the
legacy `np.random.choice`, and `torch.multinomial` when torch is installed.
"""

import time

import numpy as np

N, K, REPEATS = 1 << 20, 256, 30


def shifted_probs(returns):
    w = returns + abs(min(returns.min(), 0.0))
    return w / w.sum()


def timed(name, fn):
    fn()
    start = time.perf_counter()
    for _ in range(REPEATS):
        fn()
    ms = (time.perf_counter() - start) / REPEATS * 1e3
    print(f"{name:<44} {ms:8.3f} ms per draw of {K} from {N}")


def main():
    rng = np.random.default_rng(0)
    returns = rng.uniform(-100.0, 100.0, N)
    timed("numpy Generator.choice(replace=False, p)",
          lambda: rng.choice(N, K, replace=False, p=shifted_probs(returns)))
    timed("numpy np.random.choice(replace=False, p)",
          lambda: np.random.choice(N, K, replace=False, p=shifted_probs(returns)))
    try:
        import torch
    except ImportError:
        print("torch not installed: torch.multinomial skipped")
        return
    torch.set_num_threads(1)
    r = torch.from_numpy(returns)
    timed("torch.multinomial(replacement=False)",
          lambda: torch.multinomial(r + abs(min(r.min().item(), 0.0)), K, replacement=False))


if __name__ == "__main__":
    main()
