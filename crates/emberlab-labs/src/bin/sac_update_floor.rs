//! How fast a SAC update could be on this CPU: both halves of a Pendulum-shaped update
//! (critics `2 × (obs + act) → 256 → 256 → 1`, actor `obs → 256 → 256 → 2·act`, batch 256)
//! written by hand on preallocated host buffers — the GEMM library for the 256-wide
//! products, plain vectorised loops for everything else, no autodiff graph, no allocation —
//! timed against the same products alone. It is a timing model of a fused update, not an
//! implementation (its values are not checked against burn's): it makes the same 15 large
//! products and the same passes over the activations as Ember's update, so its
//! products-only share says how much of a real update's time around the products a fused
//! host update could remove.
//!
//! Per update, the critic half: target critics' forward at the next observations, both
//! critics' forward, the squared-error gradient, the backward pass, Adam, Polyak. The actor
//! half: the actor's forward at the next observations (the next actions), its forward and
//! tanh-Gaussian sample at the observations, both critics' forward at the sampled actions,
//! the backward pass through each row's smaller critic to the action, through the squashing
//! and the actor, Adam on the actor and on `log α`.
//!
//! ```sh
//! cargo run --release -p emberlab-labs --bin sac_update_floor              # 2000 updates
//! cargo run --release -p emberlab-labs --bin sac_update_floor -- 500
//! ```
//!
//! Prints, for each half alone on one thread and for both halves at once on two threads
//! (one each, meeting after every update as Ember's parallel schedule does), the mean time
//! per update of the whole model and of its products alone, e.g.
//! `sac_update_floor threads=2 update_us=3712.4 products_us=3241.0 products_share=0.873`.
//!
//! Its threads flush denormals as Ember's learner threads do
//! ([`emberlab::core::denormals::flush_denormals_here`]; `EMBER_IEEE_DENORMALS=1` keeps IEEE
//! behaviour): on Intel CPUs a pass over denormal floats is many times slower.

use emberlab::kernels::kernels::dot;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Observation width (Pendulum-v1).
const OBS: usize = 3;
/// Action width (Pendulum-v1).
const ACT: usize = 1;
/// Hidden width.
const H: usize = 256;
/// Batch rows.
const B: usize = 256;
/// Critics.
const E: usize = 2;
/// A critic's input width.
const CIN: usize = OBS + ACT;
/// The action box's half-width (Pendulum-v1: `[-2, 2]`).
const SCALE: f32 = 2.0;

/// Multiply-adds of every [`product`] so far, all threads.
static MULTIPLY_ADDS: AtomicU64 = AtomicU64::new(0);

/// What a run computes: everything, or only the large products.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Full,
    ProductsOnly,
}

/// `dst = a · b` on one thread ([`emberlab_labs::host_gemm`]), its multiply-adds counted.
fn product(
    dims: (usize, usize, usize),
    dst: &mut [f32],
    a: (&[f32], usize, usize),
    b: (&[f32], usize, usize),
) {
    let (m, n, k) = dims;
    MULTIPLY_ADDS.fetch_add((m * n * k) as u64, Ordering::Relaxed);
    emberlab_labs::host_gemm(dims, dst, a, b);
}

/// `Σ x·y` over the lanes where `mask > 0` (a ReLU's backward pass folded into a dot).
#[inline(always)]
fn dot_masked(x: &[f32], y: &[f32], mask: &[f32]) -> f32 {
    let mut acc = [0.0f32; 16];
    for ((xs, ys), ms) in x
        .chunks_exact(16)
        .zip(y.chunks_exact(16))
        .zip(mask.chunks(16))
    {
        for l in 0..16 {
            acc[l] += if ms[l] > 0.0 { xs[l] * ys[l] } else { 0.0 };
        }
    }
    acc.iter().sum()
}

/// A ReLU MLP `inp → H → H → out`: `w0` `[inp, H]`, `w1` `[H, H]`, `w2` stored `[out, H]`.
struct Mlp {
    inp: usize,
    out: usize,
    p: [Vec<f32>; 6],
}

impl Mlp {
    fn new(inp: usize, out: usize, seed: &mut u64) -> Mlp {
        let sizes = [inp * H, H, H * H, H, out * H, out];
        Mlp {
            inp,
            out,
            p: sizes.map(|n| emberlab_labs::values(n, seed)),
        }
    }

    fn zeros_like(&self) -> Mlp {
        Mlp {
            inp: self.inp,
            out: self.out,
            p: self.p.clone().map(|v| vec![0.0; v.len()]),
        }
    }

    /// `x` `[B, inp]` → `h0`, `h1` `[B, H]` (after ReLU) and `y` `[B, out]`.
    #[inline(always)]
    fn forward(&self, x: &[f32], h0: &mut [f32], h1: &mut [f32], y: &mut [f32], mode: Mode) {
        let [w0, b0, w1, b1, w2, b2] = &self.p;
        if mode == Mode::Full {
            for (xr, h) in x.chunks_exact(self.inp).zip(h0.chunks_exact_mut(H)) {
                h.copy_from_slice(b0);
                for (&xp, wp) in xr.iter().zip(w0.chunks_exact(H)) {
                    for (h, &w) in h.iter_mut().zip(wp) {
                        *h += xp * w;
                    }
                }
                h.iter_mut().for_each(|v| *v = v.max(0.0));
            }
        }
        product((B, H, H), h1, (h0, H, 1), (w1, H, 1));
        if mode == Mode::ProductsOnly {
            return;
        }
        for (h, yr) in h1.chunks_exact_mut(H).zip(y.chunks_exact_mut(self.out)) {
            for (h, &b) in h.iter_mut().zip(b1) {
                *h = (*h + b).max(0.0);
            }
            for ((yc, wc), &bc) in yr.iter_mut().zip(w2.chunks_exact(H)).zip(b2) {
                *yc = dot(h, wc) + bc;
            }
        }
    }

    /// Parameter gradients (into `g`) for the output gradient `dy` `[B, out]`, from the
    /// forward pass's `x`, `h0`, `h1`; `dh1`, `dh0` are scratch `[B, H]`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn backward(
        &self,
        g: &mut Mlp,
        x: &[f32],
        (h0, h1): (&[f32], &[f32]),
        dy: &[f32],
        (dh1, dh0): (&mut [f32], &mut [f32]),
        mode: Mode,
    ) {
        let out = self.out;
        let [gw0, gb0, gw1, gb1, gw2, gb2] = &mut g.p;
        if mode == Mode::Full {
            gw2.fill(0.0);
            gb2.fill(0.0);
            gb1.fill(0.0);
            for ((h, d), o) in h1
                .chunks_exact(H)
                .zip(dy.chunks_exact(out))
                .zip(dh1.chunks_exact_mut(H))
            {
                o.fill(0.0);
                for (c, &dc) in d.iter().enumerate() {
                    gb2[c] += dc;
                    let (gw, w) = (&mut gw2[c * H..][..H], &self.p[4][c * H..][..H]);
                    for j in 0..H {
                        gw[j] += h[j] * dc;
                        o[j] += dc * w[j];
                    }
                }
                for j in 0..H {
                    if h[j] <= 0.0 {
                        o[j] = 0.0;
                    }
                    gb1[j] += o[j];
                }
            }
        }
        product((H, H, B), gw1, (h0, 1, H), (dh1, H, 1));
        product((B, H, H), dh0, (dh1, H, 1), (&self.p[2], 1, H));
        if mode == Mode::ProductsOnly {
            return;
        }
        gw0.fill(0.0);
        gb0.fill(0.0);
        for ((o, h), xr) in dh0
            .chunks_exact_mut(H)
            .zip(h0.chunks_exact(H))
            .zip(x.chunks_exact(self.inp))
        {
            for j in 0..H {
                if h[j] <= 0.0 {
                    o[j] = 0.0;
                }
                gb0[j] += o[j];
            }
            for (&xp, gp) in xr.iter().zip(gw0.chunks_exact_mut(H)) {
                for (g, &d) in gp.iter_mut().zip(o.iter()) {
                    *g += xp * d;
                }
            }
        }
    }
}

/// Adam's moments for one network.
struct Adam {
    m: Mlp,
    v: Mlp,
    t: i32,
}

impl Adam {
    fn new(net: &Mlp) -> Adam {
        Adam {
            m: net.zeros_like(),
            v: net.zeros_like(),
            t: 0,
        }
    }

    /// One Adam step (PyTorch's defaults, lr 1e-3) of `net` with gradients `g`.
    #[inline(always)]
    fn step(&mut self, net: &mut Mlp, g: &Mlp) {
        let (b1, b2, lr, eps) = (0.9f32, 0.999f32, 1e-3f32, 1e-8f32);
        self.t += 1;
        let (c1, c2) = (1.0 - b1.powi(self.t), 1.0 - b2.powi(self.t));
        for (((p, g), m), v) in net
            .p
            .iter_mut()
            .zip(&g.p)
            .zip(&mut self.m.p)
            .zip(&mut self.v.p)
        {
            for (((p, &g), m), v) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
                *m = *m * b1 + g * (1.0 - b1);
                *v = *v * b2 + g * g * (1.0 - b2);
                *p -= lr * (*m / c1) / ((*v / c2).sqrt() + eps);
            }
        }
    }
}

/// One network's activations and scratch.
struct Acts {
    h0: Vec<f32>,
    h1: Vec<f32>,
    y: Vec<f32>,
}

impl Acts {
    fn new(out: usize) -> Acts {
        Acts {
            h0: vec![0.0; B * H],
            h1: vec![0.0; B * H],
            y: vec![0.0; B * out],
        }
    }
}

/// The critic half's state: critics, targets, their optimizers, inputs and buffers.
struct CriticHalf {
    critics: Vec<Mlp>,
    targets: Vec<Mlp>,
    adam: Vec<Adam>,
    grads: Vec<Mlp>,
    input: Vec<f32>,
    next_input: Vec<f32>,
    reward: Vec<f32>,
    acts: Vec<Acts>,
    target_acts: Acts,
    next_q: Vec<f32>,
    dq: Vec<f32>,
    dh1: Vec<f32>,
    dh0: Vec<f32>,
}

impl CriticHalf {
    fn new(seed: &mut u64) -> CriticHalf {
        let critics: Vec<Mlp> = (0..E).map(|_| Mlp::new(CIN, 1, seed)).collect();
        let targets = (0..E).map(|_| Mlp::new(CIN, 1, seed)).collect();
        CriticHalf {
            adam: critics.iter().map(Adam::new).collect(),
            grads: critics.iter().map(Mlp::zeros_like).collect(),
            critics,
            targets,
            input: emberlab_labs::values(B * CIN, seed),
            next_input: emberlab_labs::values(B * CIN, seed),
            reward: emberlab_labs::values(B, seed),
            acts: (0..E).map(|_| Acts::new(1)).collect(),
            target_acts: Acts::new(1),
            next_q: vec![f32::INFINITY; B],
            dq: vec![0.0; B],
            dh1: vec![0.0; B * H],
            dh0: vec![0.0; B * H],
        }
    }

    #[inline(always)]
    fn update(&mut self, mode: Mode) {
        self.next_q.fill(f32::INFINITY);
        for t in &self.targets {
            let a = &mut self.target_acts;
            t.forward(&self.next_input, &mut a.h0, &mut a.h1, &mut a.y, mode);
            for (n, &q) in self.next_q.iter_mut().zip(&a.y) {
                *n = n.min(q);
            }
        }
        for (c, a) in self.critics.iter().zip(&mut self.acts) {
            c.forward(&self.input, &mut a.h0, &mut a.h1, &mut a.y, mode);
        }
        for e in 0..E {
            if mode == Mode::Full {
                let q = &self.acts[e].y;
                let targets = self.reward.iter().zip(&self.next_q);
                for ((d, &q), (&r, &next)) in self.dq.iter_mut().zip(q).zip(targets) {
                    *d = (q - (r + 0.99 * next)) / B as f32;
                }
            }
            let a = &self.acts[e];
            let (dh1, dh0) = (&mut self.dh1[..], &mut self.dh0[..]);
            self.critics[e].backward(
                &mut self.grads[e],
                &self.input,
                (&a.h0, &a.h1),
                &self.dq,
                (dh1, dh0),
                mode,
            );
        }
        if mode == Mode::ProductsOnly {
            return;
        }
        for ((c, g), adam) in self.critics.iter_mut().zip(&self.grads).zip(&mut self.adam) {
            adam.step(c, g);
        }
        for (t, c) in self.targets.iter_mut().zip(&self.critics) {
            for (t, c) in t.p.iter_mut().zip(&c.p) {
                for (t, &c) in t.iter_mut().zip(c) {
                    *t = *t * 0.995 + c * 0.005;
                }
            }
        }
    }
}

/// The actor half's state.
struct ActorHalf {
    actor: Mlp,
    adam: Adam,
    grads: Mlp,
    critics: Vec<Mlp>,
    obs: Vec<f32>,
    next_obs: Vec<f32>,
    noise: Vec<f32>,
    next: Acts,
    acts: Acts,
    critic_input: Vec<f32>,
    critic_acts: Vec<Acts>,
    u: Vec<f32>,
    tanh_u: Vec<f32>,
    log_prob: Vec<f32>,
    d_action: Vec<f32>,
    d_out: Vec<f32>,
    gathered: Vec<f32>,
    rows: Vec<usize>,
    dg0: Vec<f32>,
    dh1: Vec<f32>,
    dh0: Vec<f32>,
    log_alpha: [f32; 3],
}

impl ActorHalf {
    fn new(seed: &mut u64) -> ActorHalf {
        let actor = Mlp::new(OBS, 2 * ACT, seed);
        ActorHalf {
            adam: Adam::new(&actor),
            grads: actor.zeros_like(),
            actor,
            critics: (0..E).map(|_| Mlp::new(CIN, 1, seed)).collect(),
            obs: emberlab_labs::values(B * OBS, seed),
            next_obs: emberlab_labs::values(B * OBS, seed),
            noise: emberlab_labs::values(B * ACT, seed)
                .iter()
                .map(|v| v * 20.0)
                .collect(),
            next: Acts::new(2 * ACT),
            acts: Acts::new(2 * ACT),
            critic_input: vec![0.0; B * CIN],
            critic_acts: (0..E).map(|_| Acts::new(1)).collect(),
            u: vec![0.0; B * ACT],
            tanh_u: vec![0.0; B * ACT],
            log_prob: vec![0.0; B],
            d_action: vec![0.0; B * ACT],
            d_out: vec![0.0; B * 2 * ACT],
            gathered: vec![0.0; B * H],
            rows: Vec::with_capacity(B),
            dg0: vec![0.0; B * H],
            dh1: vec![0.0; B * H],
            dh0: vec![0.0; B * H],
            log_alpha: [0.0; 3],
        }
    }

    /// The squashed actions (into the critics' input) and log-probabilities of the
    /// actor's output `y` `[B, 2·ACT]`.
    #[inline(always)]
    fn sample(&mut self, from_next: bool) {
        let y = if from_next {
            &self.next.y
        } else {
            &self.acts.y
        };
        let half_log_2pi = 0.5 * (2.0 * std::f32::consts::PI).ln();
        for r in 0..B {
            let mut lp = -SCALE.ln() * ACT as f32;
            for c in 0..ACT {
                let (mean, ls) = (
                    y[r * 2 * ACT + c],
                    y[r * 2 * ACT + ACT + c].clamp(-20.0, 2.0),
                );
                let e = self.noise[r * ACT + c];
                let u = mean + ls.exp() * e;
                let t = u.tanh();
                let x = -2.0 * u;
                let softplus = if x > 20.0 { x } else { x.exp().ln_1p() };
                lp += -0.5 * e * e
                    - ls
                    - half_log_2pi
                    - 2.0 * (std::f32::consts::LN_2 - u - softplus);
                if !from_next {
                    self.u[r * ACT + c] = u;
                    self.tanh_u[r * ACT + c] = t;
                    self.critic_input[r * CIN + OBS + c] = t * SCALE;
                }
            }
            if !from_next {
                self.critic_input[r * CIN..r * CIN + OBS]
                    .copy_from_slice(&self.obs[r * OBS..][..OBS]);
                self.log_prob[r] = lp;
            }
        }
    }

    #[inline(always)]
    fn update(&mut self, mode: Mode) {
        let (alpha, target_entropy) = (0.2f32, -(ACT as f32));
        let n = &mut self.next;
        self.actor
            .forward(&self.next_obs, &mut n.h0, &mut n.h1, &mut n.y, mode);
        let a = &mut self.acts;
        self.actor
            .forward(&self.obs, &mut a.h0, &mut a.h1, &mut a.y, mode);
        if mode == Mode::Full {
            self.sample(true);
            self.sample(false);
        }
        for (c, a) in self.critics.iter().zip(&mut self.critic_acts) {
            c.forward(&self.critic_input, &mut a.h0, &mut a.h1, &mut a.y, mode);
        }
        // Through each row's smaller critic to the action; the other rows get nothing.
        self.d_action.fill(0.0);
        for e in 0..E {
            let (q, other) = (&self.critic_acts[e].y, &self.critic_acts[1 - e].y);
            self.rows.clear();
            self.rows
                .extend((0..B).filter(|&r| q[r] < other[r] || (e == 0 && q[r] == other[r])));
            let rows = self.rows.len();
            if rows == 0 {
                continue;
            }
            let (c, a) = (&self.critics[e], &self.critic_acts[e]);
            let dq = -1.0 / B as f32;
            if mode == Mode::Full {
                for (&r, o) in self.rows.iter().zip(self.gathered.chunks_exact_mut(H)) {
                    let h = &a.h1[r * H..][..H];
                    for j in 0..H {
                        o[j] = if h[j] > 0.0 { dq * c.p[4][j] } else { 0.0 };
                    }
                }
            }
            product(
                (rows, H, H),
                &mut self.dg0,
                (&self.gathered, H, 1),
                (&c.p[2], 1, H),
            );
            if mode == Mode::Full {
                for (&r, g) in self.rows.iter().zip(self.dg0.chunks_exact(H)) {
                    let h = &a.h0[r * H..][..H];
                    for ac in 0..ACT {
                        let w = &c.p[0][(OBS + ac) * H..][..H];
                        self.d_action[r * ACT + ac] += dot_masked(g, w, h);
                    }
                }
            }
        }
        if mode == Mode::Full {
            // Through the squashing and sampling to the mean and log σ; the temperature.
            let mut mean_log_prob = 0.0;
            for r in 0..B {
                mean_log_prob += self.log_prob[r] / B as f32;
                for c in 0..ACT {
                    let t = self.tanh_u[r * ACT + c];
                    let raw = self.acts.y[r * 2 * ACT + ACT + c];
                    let du = self.d_action[r * ACT + c] * SCALE * (1.0 - t * t)
                        + alpha / B as f32 * 2.0 * t;
                    let dls = du * raw.clamp(-20.0, 2.0).exp() * self.noise[r * ACT + c]
                        - alpha / B as f32;
                    self.d_out[r * 2 * ACT + c] = du;
                    self.d_out[r * 2 * ACT + ACT + c] = if (-20.0..=2.0).contains(&raw) {
                        dls
                    } else {
                        0.0
                    };
                }
            }
            let g = -(mean_log_prob + target_entropy);
            let [la, m, v] = &mut self.log_alpha;
            *m = *m * 0.9 + g * 0.1;
            *v = *v * 0.999 + g * g * 0.001;
            *la -= 1e-3 * *m / (v.sqrt() + 1e-8);
        }
        let a = &self.acts;
        let (dh1, dh0) = (&mut self.dh1[..], &mut self.dh0[..]);
        self.actor.backward(
            &mut self.grads,
            &self.obs,
            (&a.h0, &a.h1),
            &self.d_out,
            (dh1, dh0),
            mode,
        );
        if mode == Mode::Full {
            self.adam.step(&mut self.actor, &self.grads);
        }
    }
}

fn main() -> Result<(), String> {
    let updates = match std::env::args().nth(1) {
        None => 2000,
        Some(a) => a
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("usage: sac_update_floor [updates > 0], got {a:?}"))?,
    };
    let _flush = emberlab::core::denormals::flush_denormals_here();
    let mut seed = 7;
    let critic = &mut CriticHalf::new(&mut seed);
    let actor = &mut ActorHalf::new(&mut seed);
    // Warm both paths up (caches, the library's packing buffers, the CPU's clock).
    for mode in [Mode::Full, Mode::ProductsOnly] {
        for _ in 0..updates.div_ceil(10) {
            critic_update(critic, mode);
            actor_update(actor, mode);
        }
    }
    for round in 0..2 {
        let time = |f: &mut dyn FnMut()| {
            let start = Instant::now();
            for _ in 0..updates {
                f();
            }
            start.elapsed().as_secs_f64() / updates as f64 * 1e6
        };
        let mut one = Vec::new();
        let counted = MULTIPLY_ADDS.load(Ordering::Relaxed);
        for mode in [Mode::Full, Mode::ProductsOnly] {
            one.push((
                time(&mut || critic_update(critic, mode)),
                time(&mut || actor_update(actor, mode)),
            ));
        }
        let per_update =
            (MULTIPLY_ADDS.load(Ordering::Relaxed) - counted) as f64 / (2 * updates) as f64;
        let ((cf, af), (cp, ap)) = (one[0], one[1]);
        println!(
            "sac_update_floor round={round} threads=1 critic_half_us={cf:.1} actor_half_us={af:.1} \
             critic_products_us={cp:.1} actor_products_us={ap:.1} products_share={:.3} \
             mfma_per_update={:.1}",
            (cp + ap) / (cf + af),
            per_update / 1e6
        );
        let both =
            [Mode::Full, Mode::ProductsOnly].map(|mode| two_threads(critic, actor, mode, updates));
        println!(
            "sac_update_floor round={round} threads=2 update_us={:.1} products_us={:.1} products_share={:.3}",
            both[0],
            both[1],
            both[1] / both[0]
        );
    }
    Ok(())
}

emberlab::kernels::multiversion! {
    /// The critic half, its loops vectorised for the widest instructions the CPU has.
    fn critic_update(half: &mut CriticHalf, mode: Mode) {
        half.update(mode);
    }
}

emberlab::kernels::multiversion! {
    /// The actor half, its loops vectorised for the widest instructions the CPU has.
    fn actor_update(half: &mut ActorHalf, mode: Mode) {
        half.update(mode);
    }
}

/// Mean microseconds per update with each half on its own thread, meeting after every
/// update.
fn two_threads(critic: &mut CriticHalf, actor: &mut ActorHalf, mode: Mode, updates: usize) -> f64 {
    let meet = Barrier::new(2);
    let start = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            let _flush = emberlab::core::denormals::flush_denormals_here();
            for _ in 0..updates {
                critic_update(critic, mode);
                meet.wait();
            }
        });
        for _ in 0..updates {
            actor_update(actor, mode);
            meet.wait();
        }
    });
    start.elapsed().as_secs_f64() / updates as f64 * 1e6
}
