"""The machine's large-GEMM rate: PyTorch `matmul` of two 2048x2048 f32 matrices, 1 and 2
threads (the yardstick of the performance issue's "share of the machine's GEMM rate").

Run: .venv-torch/bin/python benches/reference/gemm_rate.py
"""
import time

import torch

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
