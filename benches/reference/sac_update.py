"""PyTorch reference for one full SAC update, laid out as CleanRL's sac_continuous_action.py
does it, at HalfCheetah shapes (obs 17, act 6, batch 256, hidden 256) on the CPU.

One update = target with no_grad (next actions from the actor, min of the two target Qs minus
alpha * logp), critic loss (sum of two MSEs) backward + Adam step (lr 1e-3), actor loss
backward + step (lr 3e-4, policy_frequency 1), alpha loss (extra no_grad actor pass, target
entropy -6, Adam lr 1e-3 on log_alpha) backward + step, then a Polyak update (tau 0.005) of
both target Q nets. The Polyak update is timed both as a per-parameter mul_/add_ loop and with
torch._foreach_mul_/_foreach_add_; the faster is the main figure. Batches are pregenerated
random tensors (no replay-buffer cost). Adam keeps PyTorch's defaults, as CleanRL does.

Run: .venv-torch/bin/python benches/reference/sac_update.py [--threads 1 2] [--seconds 5]
     [--device cuda]  (networks and batches on that device; the temperature's `.item()`
     ends every update with a wait for the device; Ember's reads its losses before stepping)
Prints, per thread count, `sac_update threads=N polyak=MODE ms_per_update=X updates=K` for
each mode and a main line `sac_update threads=N ms_per_update=X updates=K polyak=FASTEST`.
"""

import argparse
import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

OBS, ACT, HIDDEN, BATCH = 17, 6, 256, 256
GAMMA, TAU, Q_LR, POLICY_LR, LOG_STD_MIN, LOG_STD_MAX = 0.99, 0.005, 1e-3, 3e-4, -5.0, 2.0


class QNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(OBS + ACT, HIDDEN), nn.ReLU(),
                                 nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 1))

    def forward(self, obs, act):
        return self.net(torch.cat([obs, act], 1))


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(OBS, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU())
        self.mean, self.log_std = nn.Linear(HIDDEN, ACT), nn.Linear(HIDDEN, ACT)

    def sample(self, obs):
        h = self.trunk(obs)
        mean = self.mean(h)
        log_std = torch.tanh(self.log_std(h))  # squash into [LOG_STD_MIN, LOG_STD_MAX]
        log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (log_std + 1)
        dist = torch.distributions.Normal(mean, log_std.exp())
        x = dist.rsample()
        y = torch.tanh(x)  # action scale 1, bias 0 for HalfCheetah
        logp = (dist.log_prob(x) - torch.log(1 - y.pow(2) + 1e-6)).sum(1, keepdim=True)
        return y, logp


class Sac:
    def __init__(self):
        self.actor, self.qf1, self.qf2 = Actor(), QNet(), QNet()
        self.qf1_t, self.qf2_t = copy.deepcopy(self.qf1), copy.deepcopy(self.qf2)
        self.q_opt = torch.optim.Adam(list(self.qf1.parameters()) + list(self.qf2.parameters()), lr=Q_LR)
        self.pi_opt = torch.optim.Adam(self.actor.parameters(), lr=POLICY_LR)
        self.log_alpha = torch.zeros(1, requires_grad=True)
        self.a_opt = torch.optim.Adam([self.log_alpha], lr=Q_LR)
        self.alpha, self.target_entropy = self.log_alpha.exp().item(), -float(ACT)
        self.src = list(self.qf1.parameters()) + list(self.qf2.parameters())
        self.dst = list(self.qf1_t.parameters()) + list(self.qf2_t.parameters())

    def update(self, obs, act, rew, next_obs, done, foreach):
        with torch.no_grad():
            next_a, next_logp = self.actor.sample(next_obs)
            min_next = torch.min(self.qf1_t(next_obs, next_a), self.qf2_t(next_obs, next_a))
            target = rew + (1 - done) * GAMMA * (min_next - self.alpha * next_logp).view(-1)
        q_loss = F.mse_loss(self.qf1(obs, act).view(-1), target) + F.mse_loss(self.qf2(obs, act).view(-1), target)
        self.q_opt.zero_grad()
        q_loss.backward()
        self.q_opt.step()

        pi, logp = self.actor.sample(obs)
        actor_loss = (self.alpha * logp - torch.min(self.qf1(obs, pi), self.qf2(obs, pi))).mean()
        self.pi_opt.zero_grad()
        actor_loss.backward()
        self.pi_opt.step()

        with torch.no_grad():
            _, logp = self.actor.sample(obs)
        alpha_loss = (-self.log_alpha.exp() * (logp + self.target_entropy)).mean()
        self.a_opt.zero_grad()
        alpha_loss.backward()
        self.a_opt.step()
        self.alpha = self.log_alpha.exp().item()

        with torch.no_grad():
            if foreach:
                torch._foreach_mul_(self.dst, 1 - TAU)
                torch._foreach_add_(self.dst, self.src, alpha=TAU)
            else:
                for p, t in zip(self.src, self.dst):
                    t.mul_(1 - TAU).add_(p, alpha=TAU)


def measure(foreach, batches, seconds, warmup=50):
    torch.manual_seed(0)
    sac = Sac()
    for i in range(warmup):
        sac.update(*batches[i % len(batches)], foreach=foreach)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        sac.update(*batches[n % len(batches)], foreach=foreach)
        n += 1
    return (time.perf_counter() - start) / n * 1e3, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch intra-op thread counts")
    ap.add_argument("--seconds", type=float, default=5.0, help="timed seconds per thread count and mode")
    ap.add_argument("--device", default="cpu", help="torch device of networks and batches")
    args = ap.parse_args()
    print(f"torch {torch.__version__}, default {torch.get_num_threads()} threads, device {args.device}")
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randn(BATCH, OBS, generator=g), torch.rand(BATCH, ACT, generator=g) * 2 - 1,
                torch.randn(BATCH, generator=g), torch.randn(BATCH, OBS, generator=g),
                (torch.rand(BATCH, generator=g) < 0.01).float()) for _ in range(64)]
    batches = [tuple(t.to(args.device) for t in b) for b in batches]
    torch.set_default_device(args.device)
    for threads in args.threads:
        torch.set_num_threads(threads)
        print(f"torch.get_num_threads() = {torch.get_num_threads()}")
        results = {}
        for mode in ("loop", "foreach"):
            ms, n = measure(mode == "foreach", batches, args.seconds)
            results[mode] = (ms, n)
            print(f"sac_update threads={threads} polyak={mode} ms_per_update={ms:.2f} updates={n}")
        best = min(results, key=lambda m: results[m][0])
        ms, n = results[best]
        print(f"sac_update threads={threads} ms_per_update={ms:.2f} updates={n} polyak={best}")


if __name__ == "__main__":
    main()
