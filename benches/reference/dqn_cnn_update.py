"""PyTorch reference for one DQN update on Atari frames with SB3's NatureCNN (CleanRL's
dqn_atari.py layout): obs uint8 (32, 4, 84, 84) scaled by 1/255 on the device, Q-network
conv 32·8×8/4, 64·4×4/2, 64·3×3/1, linear 3136→512, ReLUs, head 512→6 (Pong's actions);
the target network's max over next observations under no_grad, the TD target
r + γ·(1−done)·max Q', a smooth L1 (SB3) loss, backward and an Adam step (lr 1e-4).
Batches are pregenerated random bytes (no replay cost).

Also times the forward alone at batch 1 (acting on one stack) and at batch 32.

`--count` prints the parameter counts of the Nature CNN's encoder and of CleanRL's IMPALA
encoder (procgen's ConvSequence ×3 over 4×84×84, 3872→256), which `emberlab-nn`'s tests
assert, and exits.

Run: .venv-torch/bin/python benches/reference/dqn_cnn_update.py [--threads 1 2] [--seconds 5]
Prints `dqn_cnn_update threads=N ms_per_update=X updates=K` and
`nature_cnn_forward threads=N batch=B us_per_forward=X`.
"""

import argparse
import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, STACK, SIDE, ACTIONS, GAMMA = 32, 4, 84, 6, 0.99


def nature_cnn():
    return nn.Sequential(
        nn.Conv2d(STACK, 32, 8, stride=4), nn.ReLU(),
        nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
        nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(),
        nn.Flatten(), nn.Linear(3136, 512), nn.ReLU(), nn.Linear(512, ACTIONS))


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv0 = nn.Conv2d(c, c, 3, padding=1)
        self.conv1 = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return x + self.conv1(F.relu(self.conv0(F.relu(x))))


def impala_cnn():
    layers, c = [], STACK
    for depth in (16, 32, 32):
        layers += [nn.Conv2d(c, depth, 3, padding=1), nn.MaxPool2d(3, 2, padding=1),
                   Residual(depth), Residual(depth)]
        c = depth
    return nn.Sequential(*layers, nn.ReLU(), nn.Flatten(), nn.Linear(32 * 11 * 11, 256), nn.ReLU())


def count(module):
    return sum(p.numel() for p in module.parameters())


def timed(fn, seconds):
    for _ in range(3):
        fn()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        n += 1
    return (time.perf_counter() - start) / n, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--count", action="store_true")
    args = ap.parse_args()
    if args.count:
        nature = nature_cnn()[:-1]  # without the Q head
        impala = impala_cnn()
        assert impala(torch.zeros(1, STACK, SIDE, SIDE)).shape == (1, 256)
        print(f"nature_cnn_params={count(nature)} impala_cnn_params={count(impala)}")
        return
    torch.manual_seed(0)
    q = nature_cnn()
    target = copy.deepcopy(q)
    opt = torch.optim.Adam(q.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(1)
    obs = torch.randint(0, 256, (BATCH, STACK, SIDE, SIDE), dtype=torch.uint8, generator=g)
    next_obs = torch.randint(0, 256, (BATCH, STACK, SIDE, SIDE), dtype=torch.uint8, generator=g)
    actions = torch.randint(0, ACTIONS, (BATCH, 1), generator=g)
    rewards = torch.randn(BATCH, generator=g)
    dones = (torch.rand(BATCH, generator=g) < 0.1).float()

    def update():
        with torch.no_grad():
            next_q = target(next_obs.float() / 255.0).max(1).values
            td = rewards + GAMMA * (1 - dones) * next_q
        qa = q(obs.float() / 255.0).gather(1, actions).squeeze(1)
        loss = F.smooth_l1_loss(qa, td)
        opt.zero_grad()
        loss.backward()
        opt.step()

    for threads in args.threads:
        torch.set_num_threads(threads)
        sec, n = timed(update, args.seconds)
        print(f"dqn_cnn_update threads={threads} ms_per_update={sec * 1e3:.2f} updates={n}", flush=True)
        for batch in [1, BATCH]:
            x = obs[:batch]

            def fwd():
                with torch.no_grad():
                    q(x.float() / 255.0)

            sec, n = timed(fwd, args.seconds / 2)
            print(f"nature_cnn_forward threads={threads} batch={batch} us_per_forward={sec * 1e6:.1f}", flush=True)


if __name__ == "__main__":
    main()
