"""PyTorch reference for `policy_forward/*` and `inference/*`: a SAC actor
17->256->256->(6 means, 6 log-stds) sampling a tanh-Gaussian action as an actor does
(observation from the host, action back to the host), and for `inference_ppo/*` RLlib's
default PPO model (two hidden layers of 256, tanh; a 2-action logit network and a value
network) on CartPole shapes, in eager mode and under torch.compile, at batch 1, 4, 16, 64
and 256.

Run: .venv-torch/bin/python benches/reference/policy_forward.py [--threads N] [--no-compile]
     [--device cuda]  (networks on that device; observations still come from the host and
     actions go back to it, so each call includes both copies and the wait for the device)
Prints calls per second for each model, mode and batch size.
"""

import argparse
import time

import numpy as np
import torch
import torch.nn as nn


class Actor(nn.Module):
    def __init__(self, obs_dim=17, act_dim=6, hidden=256):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(obs_dim, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, 2 * act_dim),
        )
        self.act_dim = act_dim

    def forward(self, obs, noise):
        out = self.net(obs)
        mean, log_std = out[:, :self.act_dim], out[:, self.act_dim:].clamp(-20.0, 2.0)
        return torch.tanh(mean + log_std.exp() * noise)


class PpoModel(nn.Module):
    def __init__(self, obs_dim=4, actions=2, hidden=256):
        super().__init__()
        self.pi = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(),
                                nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, actions))
        self.vf = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(),
                                nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, obs):
        return self.pi(obs), self.vf(obs)


def calls_per_second(fn, seconds=2.0):
    for _ in range(50):
        fn()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(20):
            fn()
        n += 20
    return n / (time.perf_counter() - start)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: default)")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--device", default="cpu", help="torch device of the networks")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    dev = torch.device(args.device)
    actor, ppo = Actor().eval().to(dev), PpoModel().eval().to(dev)
    modes = [("eager", actor, ppo)]
    if not args.no_compile:
        modes.append(("compile", torch.compile(actor), torch.compile(ppo)))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {dev}")
    prefix = "torch" if dev.type == "cpu" else f"torch_{dev.type}"
    rng = np.random.default_rng(0)
    for name, model, ppo_model in modes:
        for batch in (1, 4, 16, 64, 256):
            obs = rng.uniform(-1, 1, (batch, 17)).astype(np.float32)

            def call():
                with torch.no_grad():
                    x = torch.from_numpy(obs).to(dev)
                    eps = torch.randn(batch, 6, device=dev)
                    return model(x, eps).cpu().numpy()

            print(f"inference/{prefix}_{name}_b{batch:<4} {calls_per_second(call):12.0f} calls/s")
        for batch in (1, 4, 16, 64, 256):
            obs4 = rng.uniform(-1, 1, (batch, 4)).astype(np.float32)

            def call_ppo():
                with torch.no_grad():
                    logits, value = ppo_model(torch.from_numpy(obs4).to(dev))
                    return logits.cpu().numpy(), value.cpu().numpy()

            print(f"inference_ppo/{prefix}_{name}_b{batch:<4} {calls_per_second(call_ppo):12.0f} calls/s")


if __name__ == "__main__":
    main()
