"""The machine's GEMM rate through PyTorch (MKL or oneDNN inside the torch wheel).

Default: `matmul` of two 2048x2048 f32 matrices, 1 and 2 threads (the yardstick of the
performance issue's "share of the machine's GEMM rate").

`--shapes`: the products of SAC's and TD3's updates that `emberlab-labs --bin gemm_libraries`
times for flex, MKL and OpenBLAS (batch 256 through 256-wide layers, HalfCheetah's 23 inputs,
TD3's 400x300), in the forward layout and the two transposed layouts of the backward pass,
on one thread; median of 7 rounds and their range, GFLOP/s (each call also pays PyTorch's
dispatch, a few microseconds against ~100-200 of a product).

Run: .venv-torch/bin/python benches/reference/gemm_rate.py [--shapes]
"""
import sys
import time

import torch

SHAPES = [
    ((256, 256, 256), "Plain"),
    ((256, 256, 256), "LhsT"),
    ((256, 256, 256), "RhsT"),
    ((256, 256, 23), "Plain"),
    ((23, 256, 256), "LhsT"),
    ((256, 300, 400), "Plain"),
    ((400, 300, 256), "LhsT"),
    ((256, 400, 300), "RhsT"),
]


def rate(f, flop, seconds=0.25):
    for _ in range(3):
        f()
    n, t = 0, time.perf_counter()
    while time.perf_counter() - t < seconds:
        f()
        n += 1
    return flop * n / (time.perf_counter() - t) / 1e9


def shapes():
    torch.set_num_threads(1)
    print(f"gemm_rate torch {torch.__version__} mkl={torch.backends.mkl.is_available()} "
          f"mkldnn={torch.backends.mkldnn.is_available()} threads=1")
    for (m, n, k), layout in SHAPES:
        # Stored as a training step stores them: transposed operands are views.
        a = torch.randn(k, m).t() if layout == "LhsT" else torch.randn(m, k)
        b = torch.randn(n, k).t() if layout == "RhsT" else torch.randn(k, n)
        out = torch.empty(m, n)
        rounds = sorted(rate(lambda: torch.mm(a, b, out=out), 2 * m * n * k) for _ in range(7))
        print(f"gemm_rate {m}x{n}x{k} layout={layout} threads=1 library=torch "
              f"GFLOP/s per thread: median {rounds[3]:.1f} ({rounds[0]:.1f}-{rounds[-1]:.1f})")


def large():
    N = 2048
    for threads in (1, 2):
        torch.set_num_threads(threads)
        a = torch.randn(N, N)
        b = torch.randn(N, N)
        for _ in range(3):
            a @ b
        reps = 20
        t = time.perf_counter()
        for _ in range(reps):
            a @ b
        dt = (time.perf_counter() - t) / reps
        print(f"gemm_rate/torch_matmul_{N}_t{threads}: {dt * 1e3:.2f} ms, {2 * N**3 / dt / 1e9:.1f} GFLOP/s")


if __name__ == "__main__":
    shapes() if "--shapes" in sys.argv[1:] else large()
