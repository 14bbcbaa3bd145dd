//! The SAC update's losses and gradients written on host buffers, for learners on flex
//! ([`HostUpdate`]): the burn paths of [`super::update`] without their autodiff graph.
//!
//! The actor half ([`HostUpdate::run`]): the actor's forward pass, the tanh-Gaussian sample and its log-probability, the frozen
//! critics at the sampled actions, the minimum, and the backward pass through each row's
//! smaller critic to the action, through the squashing and through the actor — the same
//! mathematics as the burn path of [`super::update::ActorJob`], without its autodiff graph:
//! activations live in buffers kept from update to update, the large products go to the
//! same kernels ([`ember_kernels::host_product`]), and the element-wise passes are loops
//! over rows. A Pendulum update's actor half spent ~28% of its time around its products
//! on the burn path (a whole run's profile, docs/journal/benchmarks-2026-11.md); `sac_update_floor`
//! measured ~15% for this way of computing it.
//!
//! The soft target's next values, without gradients ([`HostUpdate::next_values`]: the
//! actor's sample at the next observations and the target critics' minimum there). The
//! critic half ([`HostUpdate::critic_forward_at`], then [`HostUpdate::critic_grads`] once
//! the targets are known): the critics' loss, the TD errors and the critics' gradients.
//! Each runs on buffers of its own thread (the halves run on two). The weights are read
//! where they are, never copied ([`ember_kernels::with_host_values`]).
//!
//! The gradients go to the same optimizers as the burn path's, as [`GradientsParams`]:
//! checkpoints, resumption and the optimizer's state are unchanged. The results agree with
//! the burn path to float rounding (the order of some sums differs; tested on random
//! networks in this module). It applies to the plain policy with ReLU layers, no layer
//! norms and biases everywhere ([`HostUpdate::applies`]); gSDE and the other forms keep the
//! burn paths.

use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData};
use ember_kernels::kernels::{bias_relu_rows, dot, relu_backward_in_place};
use ember_kernels::{HostMatrix, host_product, read_values, with_host_values};
use ember_nn::{Activation, CriticEnsemble, GaussianTanhPolicy, Temperature};

/// The gradients and loss values of one actor half ([`HostUpdate::run`]).
pub(super) struct ActorHalfResult {
    /// `mean(α log π(a|s) − min Q(s, a))`.
    pub actor_loss: f64,
    /// `−log α · mean(log π(a|s) + H̄)` when the temperature is learnt.
    pub alpha_loss: Option<f64>,
    /// The actor's parameter gradients.
    pub actor_grads: GradientsParams,
    /// The temperature's gradient when it is learnt.
    pub alpha_grads: Option<GradientsParams>,
}

/// One network's layers, borrowed from its parameters: per layer the weights `[in, out]`
/// (critics: `[members, in, out]`) and the biases, row-major.
struct Net<'a> {
    weights: Vec<&'a [f32]>,
    biases: Vec<&'a [f32]>,
    /// Per layer, `(in, out)`.
    sizes: Vec<(usize, usize)>,
    /// Critics in the ensemble (1 for the actor).
    members: usize,
}

/// The shapes of a network's layers and its parameters flattened (weights, then biases,
/// layer by layer), for [`with_host_values`].
struct Flat {
    sizes: Vec<(usize, usize)>,
    members: usize,
    params: Vec<Tensor<1>>,
}

impl Flat {
    fn actor(actor: &GaussianTanhPolicy) -> Flat {
        let mut f = Flat {
            sizes: Vec::new(),
            members: 1,
            params: Vec::new(),
        };
        for layer in &actor.net.layers {
            let w = layer.weight.val().inner();
            let [i, o] = w.dims();
            f.sizes.push((i, o));
            f.params.push(w.reshape([i * o]));
            let b = layer.bias.as_ref().expect("checked by `applies`");
            f.params.push(b.val().inner());
        }
        f
    }

    fn critic(critic: &CriticEnsemble) -> Flat {
        let mut f = Flat {
            sizes: Vec::new(),
            members: critic.members(),
            params: Vec::new(),
        };
        for (w, b) in critic.weights.iter().zip(&critic.biases) {
            let w = w.val().inner();
            let [e, i, o] = w.dims();
            f.sizes.push((i, o));
            f.params.push(w.reshape([e * i * o]));
            f.params.push(b.val().inner().reshape([e * o]));
        }
        f
    }

    /// The network over `values` (this network's parameters' values, in order).
    fn net<'a>(&self, values: &[&'a [f32]]) -> Net<'a> {
        Net {
            weights: values.iter().step_by(2).copied().collect(),
            biases: values.iter().skip(1).step_by(2).copied().collect(),
            sizes: self.sizes.clone(),
            members: self.members,
        }
    }
}

/// `f` of the two networks' layers, borrowed.
fn with_nets<R>(a: &Flat, b: &Flat, f: impl FnOnce(&Net<'_>, &Net<'_>) -> R) -> R {
    let params: Vec<Tensor<1>> = a.params.iter().chain(&b.params).cloned().collect();
    with_host_values(&params, |v| {
        let (va, vb) = v.split_at(a.params.len());
        f(&a.net(va), &b.net(vb))
    })
}

/// The buffers of the host paths (module docs), kept between updates so that an update
/// allocates only the gradients it hands over; one set per path and thread.
#[derive(Default)]
pub(super) struct HostUpdate {
    /// The actor's hidden activations (after ReLU), per hidden layer `[batch, width]`.
    hidden: Vec<Vec<f32>>,
    /// The actor's output `[batch, 2·act]`: means, then raw log standard deviations.
    out: Vec<f32>,
    /// `tanh u` of the pre-squash actions `[batch, act]`.
    tanh_u: Vec<f32>,
    log_prob: Vec<f32>,
    /// The critics' input `[batch, obs + act]`.
    critic_in: Vec<f32>,
    /// The critics' hidden activations, member-major: `[member][layer]` `[batch, width]`.
    critic_hidden: Vec<Vec<f32>>,
    /// The critics' values `[members, batch]`.
    q: Vec<f32>,
    /// Per row, the member with the smallest value.
    smallest: Vec<usize>,
    /// The rows a member is the smallest for.
    rows: Vec<usize>,
    d_action: Vec<f32>,
    d_out: Vec<f32>,
    /// Two gradient buffers `[batch, width]` the backward passes alternate between.
    grad_a: Vec<f32>,
    grad_b: Vec<f32>,
    weight_grads: Vec<Vec<f32>>,
    bias_grads: Vec<Vec<f32>>,
    /// The last [`HostUpdate::compute`]'s actor loss.
    actor_loss: f64,
}

ember_kernels::multiversion! {
    /// [`HostUpdate::compute`] with its loops vectorised for the widest instructions the
    /// CPU has.
    fn compute(
        host: &mut HostUpdate,
        a: &Net<'_>,
        c: &Net<'_>,
        actor: &GaussianTanhPolicy,
        obs: &[f32],
        noise: &[f32],
        alpha: f32
    ) {
        host.compute(a, c, actor, obs, noise, alpha);
    }
}

ember_kernels::multiversion! {
    /// [`HostUpdate::critic_step`], vectorised as [`compute`] is.
    fn critic_step(host: &mut HostUpdate, c: &Net<'_>, y: &[f32], weights: &[f32]) -> f64 {
        host.critic_step(c, y, weights)
    }
}

ember_kernels::multiversion! {
    /// [`HostUpdate::critic_forward`], vectorised as [`compute`] is.
    fn critic_forward(host: &mut HostUpdate, c: &Net<'_>, batch: usize) {
        host.critic_forward(c, batch);
    }
}

ember_kernels::multiversion! {
    /// [`HostUpdate::next`], vectorised as [`compute`] is.
    fn next(
        host: &mut HostUpdate,
        a: &Net<'_>,
        c: &Net<'_>,
        actor: &GaussianTanhPolicy,
        obs: &[f32],
        noise: &[f32]
    ) {
        host.next(a, c, actor, obs, noise);
    }
}

impl HostUpdate {
    /// Whether this path computes `actor`'s half with `critic` on `device` (the learner's
    /// device without autodiff): flex, the plain policy (no gSDE), ReLU layers with biases
    /// and no layer norms in both networks, one output per critic.
    pub(super) fn applies(
        actor: &GaussianTanhPolicy,
        critic: &CriticEnsemble,
        device: &Device,
    ) -> bool {
        let net = &actor.net;
        Self::applies_to_critic(critic, device)
            && !actor.is_sde()
            && net.norms.is_empty()
            && net.activation == Activation::Relu
            && net.layers.len() >= 2
            && net.layers.iter().all(|l| l.bias.is_some())
    }

    /// Whether [`HostUpdate::critic_grads`] computes `critic`'s loss on `device` (the
    /// learner's device without autodiff): flex, ReLU layers, one output per critic.
    pub(super) fn applies_to_critic(critic: &CriticEnsemble, device: &Device) -> bool {
        device.clone().inner() == Device::flex()
            && critic.activation == Activation::Relu
            && critic.weights.len() >= 2
            && critic
                .weights
                .last()
                .is_some_and(|w| w.shape().dims::<3>()[2] == 1)
    }

    /// The critics' forward pass at `rows` observations `obs` and actions `action`, its
    /// activations kept for [`HostUpdate::critic_grads`]. Only call it where
    /// [`HostUpdate::applies_to_critic`].
    pub(super) fn critic_forward_at(
        &mut self,
        critic: &CriticEnsemble,
        obs: &[f32],
        action: &[f32],
        rows: usize,
    ) {
        let act = action.len() / rows;
        self.critic_obs(obs, rows, act);
        let o = obs.len() / rows;
        for (row, a) in self
            .critic_in
            .chunks_exact_mut(o + act)
            .zip(action.chunks_exact(act))
        {
            row[o..].copy_from_slice(a);
        }
        let flat = Flat::critic(critic);
        with_host_values(&flat.params, |v| critic_forward(self, &flat.net(v), rows));
    }

    /// The critics' input `[obs, action]` `[rows, obs + act]` with the observations copied
    /// in; the callers write the actions.
    fn critic_obs(&mut self, obs: &[f32], rows: usize, act: usize) {
        let o = obs.len() / rows;
        self.critic_in.resize(rows * (o + act), 0.0);
        for (row, x) in self
            .critic_in
            .chunks_exact_mut(o + act)
            .zip(obs.chunks_exact(o))
        {
            row[..o].copy_from_slice(x);
        }
    }

    /// The critic half's loss `Σ_e mean(w·(Q_e(s, a) − y)²)` (`w` = 1 when `weights` is
    /// empty), the per-row TD errors `mean_e |Q_e(s, a) − y|` and the critics' parameter
    /// gradients (made on `device`) for the soft targets `y`, after
    /// [`HostUpdate::critic_forward_at`] with the same `critic`: what
    /// [`super::update::CriticJob`]'s burn path computes.
    pub(super) fn critic_grads(
        &mut self,
        critic: &CriticEnsemble,
        y: &[f32],
        weights: &[f32],
        device: &Device,
    ) -> (f64, Vec<f32>, GradientsParams) {
        let batch = y.len();
        let flat = Flat::critic(critic);
        let loss = with_host_values(&flat.params, |v| {
            critic_step(self, &flat.net(v), y, weights)
        });
        let members = flat.members;
        let td = (0..batch)
            .map(|r| {
                let sum: f32 = (0..members)
                    .map(|e| (self.q[e * batch + r] - y[r]).abs())
                    .sum();
                sum / members as f32
            })
            .collect();
        let mut grads = GradientsParams::new();
        for (l, (w, b)) in critic.weights.iter().zip(&critic.biases).enumerate() {
            let (i, o) = flat.sizes[l];
            let gw = std::mem::take(&mut self.weight_grads[l]);
            let gw = TensorData::new(gw, [members, i, o]);
            grads.register(w.id, Tensor::<3>::from_data(gw, device));
            let gb = TensorData::new(std::mem::take(&mut self.bias_grads[l]), [members, 1, o]);
            grads.register(b.id, Tensor::<3>::from_data(gb, device));
        }
        (loss, td, grads)
    }

    /// [`HostUpdate::critic_grads`] from the critics' input (in `critic_in`) to the
    /// gradients (in `weight_grads`, `bias_grads`); returns the loss.
    #[inline(always)]
    fn critic_step(&mut self, c: &Net<'_>, y: &[f32], weights: &[f32]) -> f64 {
        let batch = y.len();
        let members = c.members;
        let hidden = c.sizes.len() - 1;
        let layers = hidden + 1;
        self.weight_grads.resize_with(layers, Vec::new);
        self.bias_grads.resize_with(layers, Vec::new);
        for l in 0..layers {
            let (i, o) = c.sizes[l];
            self.weight_grads[l].resize(members * i * o, 0.0);
            self.bias_grads[l].clear();
            self.bias_grads[l].resize(members * o, 0.0);
        }
        let mut loss = 0.0f64;
        self.d_out.resize(batch, 0.0);
        for e in 0..members {
            // d loss / d q_e = 2 w (q_e − y) / batch.
            let q = &self.q[e * batch..][..batch];
            let mut sum = 0.0f64;
            for (r, d) in self.d_out.iter_mut().enumerate() {
                let diff = q[r] - y[r];
                let w = weights.get(r).copied().unwrap_or(1.0);
                sum += (diff * diff * w) as f64;
                *d = 2.0 * w * diff / batch as f32;
            }
            loss += sum / batch as f64;
            // The output layer, then the hidden layers down to the first.
            let (width, _) = c.sizes[hidden];
            let last = &self.critic_hidden[e * hidden + hidden - 1];
            host_product(
                HostMatrix::row_major(last, batch, width).t(),
                HostMatrix::row_major(&self.d_out, batch, 1),
                &mut self.weight_grads[hidden][e * width..][..width],
            );
            self.bias_grads[hidden][e] = self.d_out.iter().sum();
            let w_out = &c.weights[hidden][e * width..][..width];
            self.grad_a.resize(batch * width, 0.0);
            for (r, g) in self.grad_a.chunks_exact_mut(width).enumerate() {
                let (h, d) = (&last[r * width..][..width], self.d_out[r]);
                for ((g, &h), &w) in g.iter_mut().zip(h).zip(w_out) {
                    *g = if h > 0.0 { d * w } else { 0.0 };
                }
            }
            for l in (0..hidden).rev() {
                let (i, o) = c.sizes[l];
                let gb = &mut self.bias_grads[l][e * o..][..o];
                for row in self.grad_a.chunks_exact(o) {
                    gb.iter_mut().zip(row).for_each(|(b, &g)| *b += g);
                }
                let x = if l == 0 {
                    &self.critic_in
                } else {
                    &self.critic_hidden[e * hidden + l - 1]
                };
                host_product(
                    HostMatrix::row_major(x, batch, i).t(),
                    HostMatrix::row_major(&self.grad_a, batch, o),
                    &mut self.weight_grads[l][e * i * o..][..i * o],
                );
                if l > 0 {
                    self.grad_b.resize(batch * i, 0.0);
                    host_product(
                        HostMatrix::row_major(&self.grad_a, batch, o),
                        HostMatrix::row_major(&c.weights[l][e * i * o..][..i * o], i, o).t(),
                        &mut self.grad_b,
                    );
                    relu_backward_in_place(
                        &mut self.grad_b,
                        &self.critic_hidden[e * hidden + l - 1],
                    );
                    std::mem::swap(&mut self.grad_a, &mut self.grad_b);
                }
            }
        }
        loss
    }

    /// The actor half's losses and gradients for observations `obs` `[batch, obs]` and
    /// standard-normal `noise` `[batch, act]`, with the temperature `alpha` (and its
    /// parameter, when learnt, towards `target_entropy`). Gradients are made on `device`.
    /// Only call it where [`HostUpdate::applies`].
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run(
        &mut self,
        actor: &GaussianTanhPolicy,
        critic: &CriticEnsemble,
        temperature: Option<&Temperature>,
        obs: &[f32],
        noise: &[f32],
        alpha: f64,
        target_entropy: f64,
        device: &Device,
    ) -> ActorHalfResult {
        let (a, c) = (Flat::actor(actor), Flat::critic(critic));
        with_nets(&a, &c, |a, c| {
            compute(self, a, c, actor, obs, noise, alpha as f32)
        });
        let batch = self.log_prob.len();
        let actor_loss = self.actor_loss;
        let actor_grads = self.actor_grads(actor, &a.sizes, device);
        let (alpha_loss, alpha_grads) = match temperature {
            None => (None, None),
            Some(t) => {
                let (loss, grads) = self.temperature(t, batch, target_entropy, device);
                (Some(loss), Some(grads))
            }
        };
        ActorHalfResult {
            actor_loss,
            alpha_loss,
            actor_grads,
            alpha_grads,
        }
    }

    /// Everything between reading the weights and handing over the gradients (see
    /// [`compute`]).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn compute(
        &mut self,
        a: &Net<'_>,
        c: &Net<'_>,
        actor: &GaussianTanhPolicy,
        obs: &[f32],
        noise: &[f32],
        alpha: f32,
    ) {
        let act = actor.act_dim;
        let batch = noise.len() / act;
        self.actor_forward(a, obs, batch);
        self.sample(actor, obs, noise, batch);
        self.critic_forward(c, batch);
        self.actor_loss = self.smallest_values(c.members, batch, alpha);
        self.critic_backward(c, batch, act);
        self.head_backward(actor, noise, batch, alpha);
        self.actor_backward(a, obs, batch);
    }

    /// The soft target's next values for next observations `obs` `[rows, obs]` and
    /// standard-normal `noise` `[rows, act]`: `(min_e Q̄_e(s', a'), log π(a'|s'))`, one
    /// value each per row, with `a'` sampled by `actor` and `target` the target critics.
    /// Only call it where [`HostUpdate::applies`].
    pub(super) fn next_values(
        &mut self,
        actor: &GaussianTanhPolicy,
        target: &CriticEnsemble,
        obs: &[f32],
        noise: &[f32],
    ) -> (Vec<f32>, Vec<f32>) {
        let (a, c) = (Flat::actor(actor), Flat::critic(target));
        with_nets(&a, &c, |a, c| next(self, a, c, actor, obs, noise));
        let rows = self.log_prob.len();
        let min_q = (0..rows)
            .map(|r| {
                (1..c.members).fold(self.q[r], |m, e| {
                    let q = self.q[e * rows + r];
                    if q < m || q.is_nan() { q } else { m }
                })
            })
            .collect();
        (min_q, self.log_prob.clone())
    }

    /// [`HostUpdate::next_values`] up to the critics' values.
    #[inline(always)]
    fn next(
        &mut self,
        a: &Net<'_>,
        c: &Net<'_>,
        actor: &GaussianTanhPolicy,
        obs: &[f32],
        noise: &[f32],
    ) {
        let batch = noise.len() / actor.act_dim;
        self.actor_forward(a, obs, batch);
        self.sample(actor, obs, noise, batch);
        self.critic_forward(c, batch);
    }

    /// The actor's hidden activations and output.
    #[inline(always)]
    fn actor_forward(&mut self, a: &Net<'_>, obs: &[f32], batch: usize) {
        let hidden = a.sizes.len() - 1;
        self.hidden.resize_with(hidden, Vec::new);
        for l in 0..hidden {
            let (i, o) = a.sizes[l];
            let (done, rest) = self.hidden.split_at_mut(l);
            let x = if l == 0 { obs } else { &done[l - 1] };
            let h = &mut rest[0];
            h.resize(batch * o, 0.0);
            linear(x, batch, a.weights[l], (i, o), h);
            bias_relu_rows(h, a.biases[l]);
        }
        let (i, o) = a.sizes[hidden];
        self.out.resize(batch * o, 0.0);
        linear(
            &self.hidden[hidden - 1],
            batch,
            a.weights[hidden],
            (i, o),
            &mut self.out,
        );
        add_rows(&mut self.out, a.biases[hidden]);
    }

    /// The squashed actions (into the critics' input, after the observations), `tanh u`
    /// and the log-probabilities, as [`GaussianTanhPolicy::sample`] computes them.
    #[inline(always)]
    fn sample(&mut self, actor: &GaussianTanhPolicy, obs: &[f32], noise: &[f32], batch: usize) {
        let act = actor.act_dim;
        let obs_dim = obs.len() / batch;
        let width = obs_dim + act;
        let (lo, hi) = actor.log_std_bounds;
        let half_log_2pi = (0.5 * (2.0 * std::f64::consts::PI).ln()) as f32;
        let scale_log = actor.scale.iter().map(|&s| (s as f64).ln()).sum::<f64>() as f32;
        self.tanh_u.resize(batch * act, 0.0);
        self.log_prob.resize(batch, 0.0);
        self.critic_obs(obs, batch, act);
        for r in 0..batch {
            let out = &self.out[r * 2 * act..][..2 * act];
            let input = &mut self.critic_in[r * width..][..width];
            let mut log_prob = 0.0f32;
            for c in 0..act {
                let log_std = out[act + c].clamp(lo, hi);
                let e = noise[r * act + c];
                let u = out[c] + log_std.exp() * e;
                let t = u.tanh();
                self.tanh_u[r * act + c] = t;
                input[obs_dim + c] = t * actor.scale[c] + actor.bias[c];
                let gauss = e * e * -0.5 - log_std - half_log_2pi;
                let log_det = (-u + std::f32::consts::LN_2 - softplus(-2.0 * u)) * 2.0;
                log_prob += gauss - log_det;
            }
            self.log_prob[r] = log_prob - scale_log;
        }
    }

    /// Every critic's hidden activations and value at the sampled actions.
    #[inline(always)]
    fn critic_forward(&mut self, c: &Net<'_>, batch: usize) {
        let members = c.members;
        let hidden = c.sizes.len() - 1;
        self.critic_hidden.resize_with(members * hidden, Vec::new);
        self.q.resize(members * batch, 0.0);
        for e in 0..members {
            for l in 0..hidden {
                let (i, o) = c.sizes[l];
                let (done, rest) = self.critic_hidden.split_at_mut(e * hidden + l);
                let x = if l == 0 {
                    &self.critic_in
                } else {
                    &done[e * hidden + l - 1]
                };
                let h = &mut rest[0];
                h.resize(batch * o, 0.0);
                linear(x, batch, &c.weights[l][e * i * o..][..i * o], (i, o), h);
                bias_relu_rows(h, &c.biases[l][e * o..][..o]);
            }
            let (i, _) = c.sizes[hidden];
            let q = &mut self.q[e * batch..][..batch];
            let x = &self.critic_hidden[e * hidden + hidden - 1];
            linear(x, batch, &c.weights[hidden][e * i..][..i], (i, 1), q);
            q.iter_mut().for_each(|v| *v += c.biases[hidden][e]);
        }
    }

    /// Each row's smallest critic (the first of equal ones, as `min_dim` picks) and the
    /// actor loss `mean(α log π − min Q)`.
    #[inline(always)]
    fn smallest_values(&mut self, members: usize, batch: usize, alpha: f32) -> f64 {
        self.smallest.clear();
        let mut sum = 0.0f64;
        for r in 0..batch {
            let mut best = 0;
            for e in 1..members {
                // A NaN value is the minimum, as it is for `min_dim`: the loss is NaN then.
                let q = self.q[e * batch + r];
                if q < self.q[best * batch + r] || q.is_nan() {
                    best = e;
                }
            }
            self.smallest.push(best);
            sum += (self.log_prob[r] * alpha - self.q[best * batch + r]) as f64;
        }
        sum / batch as f64
    }

    /// `d loss / d action` `[batch, act]` through each row's smallest critic (its weights
    /// get no gradient): the rows of one member at a time, gathered.
    #[inline(always)]
    fn critic_backward(&mut self, c: &Net<'_>, batch: usize, act: usize) {
        let members = c.members;
        let hidden = c.sizes.len() - 1;
        let d_q = -1.0 / batch as f32;
        self.d_action.clear();
        self.d_action.resize(batch * act, 0.0);
        for e in 0..members {
            self.rows.clear();
            self.rows
                .extend((0..batch).filter(|&r| self.smallest[r] == e));
            let n = self.rows.len();
            if n == 0 {
                continue;
            }
            // The output layer: d h = d q · wᵀ where the last hidden layer is positive.
            let (width, _) = c.sizes[hidden];
            let w_out = &c.weights[hidden][e * width..][..width];
            let last = &self.critic_hidden[e * hidden + hidden - 1];
            self.grad_a.resize(n * width, 0.0);
            for (k, &r) in self.rows.iter().enumerate() {
                let h = &last[r * width..][..width];
                let g = &mut self.grad_a[k * width..][..width];
                for ((g, &h), &w) in g.iter_mut().zip(h).zip(w_out) {
                    *g = if h > 0.0 { d_q * w } else { 0.0 };
                }
            }
            // Hidden layers down to the first: d x = d z · Wᵀ, masked by the layer below.
            for l in (1..hidden).rev() {
                let (i, o) = c.sizes[l];
                let w = &c.weights[l][e * i * o..][..i * o];
                self.grad_b.resize(n * i, 0.0);
                host_product(
                    HostMatrix::row_major(&self.grad_a, n, o),
                    HostMatrix::row_major(w, i, o).t(),
                    &mut self.grad_b,
                );
                let below = &self.critic_hidden[e * hidden + l - 1];
                for (k, &r) in self.rows.iter().enumerate() {
                    relu_backward_in_place(&mut self.grad_b[k * i..][..i], &below[r * i..][..i]);
                }
                std::mem::swap(&mut self.grad_a, &mut self.grad_b);
            }
            // The first layer, for the action's columns only.
            let (i, o) = c.sizes[0];
            let w = &c.weights[0][e * i * o..][..i * o];
            let obs_dim = i - act;
            for (k, &r) in self.rows.iter().enumerate() {
                let g = &self.grad_a[k * o..][..o];
                for a in 0..act {
                    let row = &w[(obs_dim + a) * o..][..o];
                    self.d_action[r * act + a] += dot(g, row);
                }
            }
        }
    }

    /// `d loss / d [mean, raw log σ]` `[batch, 2·act]`: through the squashing, the
    /// sampling and the clamp of log σ, plus the log-probability's own terms.
    #[inline(always)]
    fn head_backward(
        &mut self,
        actor: &GaussianTanhPolicy,
        noise: &[f32],
        batch: usize,
        alpha: f32,
    ) {
        let act = actor.act_dim;
        let (lo, hi) = actor.log_std_bounds;
        let d_log_prob = alpha / batch as f32;
        self.d_out.resize(batch * 2 * act, 0.0);
        for r in 0..batch {
            for c in 0..act {
                let t = self.tanh_u[r * act + c];
                let raw = self.out[r * 2 * act + act + c];
                let log_std = raw.clamp(lo, hi);
                let e = noise[r * act + c];
                let u = self.out[r * 2 * act + c] + log_std.exp() * e;
                // log π's `−log_det` term: d/du = 2 − 4·softplus'(−2u).
                let d_u = self.d_action[r * act + c] * actor.scale[c] * (1.0 - t * t)
                    + d_log_prob * (2.0 - 4.0 * softplus_slope(-2.0 * u));
                let d_log_std = d_u * log_std.exp() * e - d_log_prob;
                self.d_out[r * 2 * act + c] = d_u;
                self.d_out[r * 2 * act + act + c] = if raw >= lo && raw <= hi {
                    d_log_std
                } else {
                    0.0
                };
            }
        }
    }

    /// The actor's parameter gradients from `d_out`.
    #[inline(always)]
    fn actor_backward(&mut self, a: &Net<'_>, obs: &[f32], batch: usize) {
        let layers = a.sizes.len();
        self.weight_grads.resize_with(layers, Vec::new);
        self.bias_grads.resize_with(layers, Vec::new);
        self.grad_a.clear();
        self.grad_a.extend_from_slice(&self.d_out);
        for l in (0..layers).rev() {
            let (i, o) = a.sizes[l];
            let x = if l == 0 { obs } else { &self.hidden[l - 1] };
            let gw = &mut self.weight_grads[l];
            gw.resize(i * o, 0.0);
            host_product(
                HostMatrix::row_major(x, batch, i).t(),
                HostMatrix::row_major(&self.grad_a, batch, o),
                gw,
            );
            let gb = &mut self.bias_grads[l];
            gb.clear();
            gb.resize(o, 0.0);
            for row in self.grad_a.chunks_exact(o) {
                gb.iter_mut().zip(row).for_each(|(b, &g)| *b += g);
            }
            if l > 0 {
                self.grad_b.resize(batch * i, 0.0);
                host_product(
                    HostMatrix::row_major(&self.grad_a, batch, o),
                    HostMatrix::row_major(a.weights[l], i, o).t(),
                    &mut self.grad_b,
                );
                relu_backward_in_place(&mut self.grad_b, &self.hidden[l - 1]);
                std::mem::swap(&mut self.grad_a, &mut self.grad_b);
            }
        }
    }

    /// The actor's gradients as tensors on `device`, by parameter.
    fn actor_grads(
        &mut self,
        actor: &GaussianTanhPolicy,
        sizes: &[(usize, usize)],
        device: &Device,
    ) -> GradientsParams {
        let mut grads = GradientsParams::new();
        for (l, layer) in actor.net.layers.iter().enumerate() {
            let (i, o) = sizes[l];
            let w = std::mem::take(&mut self.weight_grads[l]);
            grads.register(
                layer.weight.id,
                Tensor::<2>::from_data(TensorData::new(w, [i, o]), device),
            );
            let b = std::mem::take(&mut self.bias_grads[l]);
            let bias = layer.bias.as_ref().expect("checked by `applies`");
            grads.register(
                bias.id,
                Tensor::<1>::from_data(TensorData::new(b, [o]), device),
            );
        }
        grads
    }

    /// The temperature loss `−mean(log α · (log π + H̄))` and its gradient.
    fn temperature(
        &self,
        t: &Temperature,
        batch: usize,
        target_entropy: f64,
        device: &Device,
    ) -> (f64, GradientsParams) {
        let mut log_alpha = Vec::with_capacity(1);
        read_values(&t.log_alpha.val().inner(), &mut log_alpha);
        let weight: f64 = self
            .log_prob
            .iter()
            .map(|&l| (l + target_entropy as f32) as f64)
            .sum::<f64>()
            / batch as f64;
        let mut grads = GradientsParams::new();
        let g = TensorData::new(vec![-weight as f32], [1]);
        grads.register(t.log_alpha.id, Tensor::<1>::from_data(g, device));
        (-(log_alpha[0] as f64) * weight, grads)
    }
}

/// `y = x · w` for `x` `[rows, i]` and `w` `[i, o]`, row-major.
#[inline(always)]
fn linear(x: &[f32], rows: usize, w: &[f32], (i, o): (usize, usize), y: &mut [f32]) {
    host_product(
        HostMatrix::row_major(x, rows, i),
        HostMatrix::row_major(w, i, o),
        y,
    );
}

/// `b` added to every row of `x`.
#[inline(always)]
fn add_rows(x: &mut [f32], b: &[f32]) {
    for row in x.chunks_exact_mut(b.len()) {
        row.iter_mut().zip(b).for_each(|(v, &b)| *v += b);
    }
}

/// Above this `ln(1 + eˣ)` is `x` (burn's `softplus` threshold).
const SOFTPLUS_THRESHOLD: f32 = 20.0;

/// `ln(1 + eˣ)` as burn's `softplus` computes it.
#[inline(always)]
fn softplus(x: f32) -> f32 {
    if x > SOFTPLUS_THRESHOLD {
        x
    } else {
        x.exp().ln_1p()
    }
}

/// The slope of [`softplus`] at `x`: `eˣ / (1 + eˣ)`, 1 past the threshold.
#[inline(always)]
fn softplus_slope(x: f32) -> f32 {
    if x > SOFTPLUS_THRESHOLD {
        1.0
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

#[cfg(test)]
mod tests {
    use super::super::update::{ActorJob, CriticJob, HostInputs, Inputs, NextValues, next_values};
    use super::*;
    use burn::module::Module;
    use ember_core::EmberRng;
    use ember_nn::{CriticEnsembleConfig, GaussianTanhPolicyConfig};
    use std::sync::{Arc, Mutex};

    fn matrix(v: &[f32], rows: usize, cols: usize, device: &Device) -> Tensor<2> {
        Tensor::from_data(TensorData::new(v.to_vec(), [rows, cols]), device)
    }

    fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
        t.into_data().try_to_vec::<f32>().expect("f32 values")
    }

    /// The host path against the burn path of the same job, gradient by gradient.
    fn compare(log_std_bounds: (f32, f32), learn_alpha: bool, seed: u64) {
        // Builds networks: not while another test seeds and builds its learners.
        let _lock = super::super::building_networks();
        let plain = Device::flex();
        let learn = plain.clone().autodiff();
        let (batch, obs_dim, act) = (96, 5, 2);
        let mut config = GaussianTanhPolicyConfig::new(obs_dim, act)
            .with_hidden(vec![64, 48])
            .with_bounds(vec![-2.0, -1.0], vec![2.0, 3.0]);
        config.log_std_bounds = log_std_bounds;
        let actor = config.init(&learn).unwrap();
        let critic = CriticEnsembleConfig::new(2, obs_dim + act, vec![40, 56])
            .init(&learn)
            .unwrap()
            .no_grad();
        let temperature = Temperature::new(0.3, &learn).unwrap();
        assert!(HostUpdate::applies(&actor, &critic, &plain));
        let mut rng = EmberRng::seed_from(seed);
        let mut draw = |n: usize, scale: f32| -> Vec<f32> {
            (0..n)
                .map(|_| (rng.next_f64() as f32 * 2.0 - 1.0) * scale)
                .collect()
        };
        let obs = draw(batch * obs_dim, 3.0);
        let noise = draw(batch * act, 2.0);
        let x = Inputs {
            obs: matrix(&obs, batch, obs_dim, &learn),
            action: matrix(&draw(batch * act, 1.0), batch, act, &learn),
            next_obs: matrix(&obs, batch, obs_dim, &plain),
            reward: matrix(&draw(batch, 1.0), batch, 1, &plain),
            terminated: matrix(&vec![0.0; batch], batch, 1, &plain),
            discount: None,
            weights: None,
            noise_next: matrix(&noise, batch, act, &plain),
            noise_pi: matrix(&noise, batch, act, &learn),
            host: Some(HostInputs {
                next_obs: obs.clone(),
                noise_next: noise.clone(),
                obs,
                noise_pi: noise,
                ..HostInputs::default()
            }),
        };
        let mut host = HostUpdate::default();
        let job = |host: Option<(&mut HostUpdate, &Device)>| {
            let mut job = ActorJob {
                actor: &actor,
                temperature: learn_alpha.then_some(&temperature),
                frozen_critic: &critic,
                x: &x,
                alpha: 0.3,
                target_entropy: -(act as f64),
                step: 7,
                host,
            };
            job.losses_and_grads()
        };
        // Twice through the host path: the kept buffers must not change a result.
        let _ = job(Some((&mut host, &plain)));
        let (h_loss, h_alpha, mut h_grads, h_t) = job(Some((&mut host, &plain)));
        let (b_loss, b_alpha, mut b_grads, b_t) = job(None);
        let (h_loss, b_loss) = (h_loss.unwrap(), b_loss.unwrap());
        assert!(
            (h_loss - b_loss).abs() <= 1e-5 * (1.0 + b_loss.abs()),
            "{h_loss} vs {b_loss}"
        );
        match (h_alpha, b_alpha) {
            (None, None) => assert!(!learn_alpha),
            (Some(h), Some(b)) => {
                let (h, b) = (h.unwrap(), b.unwrap());
                assert!(
                    (h - b).abs() <= 1e-5 * (1.0 + b.abs()),
                    "alpha loss {h} vs {b}"
                );
            }
            _ => panic!("one path learns the temperature, the other not"),
        }
        for (l, layer) in actor.net.layers.iter().enumerate() {
            let id = layer.weight.id;
            let (h, b) = (
                h_grads.remove::<2>(id).unwrap(),
                b_grads.remove::<2>(id).unwrap(),
            );
            close(&format!("layer {l} weight"), values(h), values(b));
            let id = layer.bias.as_ref().unwrap().id;
            let (h, b) = (
                h_grads.remove::<1>(id).unwrap(),
                b_grads.remove::<1>(id).unwrap(),
            );
            close(&format!("layer {l} bias"), values(h), values(b));
        }
        assert!(
            h_grads.is_empty() && b_grads.is_empty(),
            "gradients of other parameters"
        );
        if let (Some(mut h), Some(mut b)) = (h_t, b_t) {
            let id = temperature.log_alpha.id;
            let (h, b) = (h.remove::<1>(id).unwrap(), b.remove::<1>(id).unwrap());
            close("log alpha", values(h), values(b));
        }
    }

    #[test]
    fn next_values_match_the_burn_path_for_any_rows() {
        // Builds networks: not while another test seeds and builds its learners.
        let _lock = super::super::building_networks();
        let plain = Device::flex();
        let (batch, obs_dim, act) = (80, 4, 3);
        let actor = GaussianTanhPolicyConfig::new(obs_dim, act)
            .with_hidden(vec![48, 40])
            .with_bounds(vec![-2.0, -1.0, 0.0], vec![2.0, 3.0, 0.5])
            .init(&plain)
            .unwrap();
        let target = CriticEnsembleConfig::new(3, obs_dim + act, vec![32, 64])
            .init(&plain)
            .unwrap();
        let mut rng = EmberRng::seed_from(5);
        let mut draw = |n: usize, scale: f32| -> Vec<f32> {
            (0..n)
                .map(|_| (rng.next_f64() as f32 * 2.0 - 1.0) * scale)
                .collect()
        };
        let (next_obs, noise) = (draw(batch * obs_dim, 3.0), draw(batch * act, 2.0));
        let column = |n: usize| matrix(&vec![0.0; n], n, 1, &plain);
        let mut x = Inputs {
            obs: matrix(&next_obs, batch, obs_dim, &plain),
            action: matrix(&noise, batch, act, &plain),
            next_obs: matrix(&next_obs, batch, obs_dim, &plain),
            reward: column(batch),
            terminated: column(batch),
            discount: None,
            weights: None,
            noise_next: matrix(&noise, batch, act, &plain),
            noise_pi: matrix(&noise, batch, act, &plain),
            host: None,
        };
        let burn = next_values(&actor, &target, &x, 0, batch);
        let (burn_q, burn_l) = (values(burn.0), values(burn.1));
        x.host = Some(HostInputs {
            next_obs,
            noise_next: noise,
            ..HostInputs::default()
        });
        for (from, to) in [(0, batch), (0, 24), (24, batch), (7, 8)] {
            let (q, l) = next_values(&actor, &target, &x, from, to);
            assert_eq!(q.dims(), [to - from, 1]);
            for (name, got, want) in [
                ("min q", values(q), &burn_q),
                ("log prob", values(l), &burn_l),
            ] {
                for (r, (g, w)) in got.iter().zip(&want[from..to]).enumerate() {
                    assert!(
                        (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
                        "{name} row {}: {g} vs {w}",
                        from + r
                    );
                }
            }
        }
    }

    /// The critic half's host path against its burn path: loss, TD errors, gradients.
    fn compare_critic(weighted: bool, seed: u64) {
        // Builds networks: not while another test seeds and builds its learners.
        let _lock = super::super::building_networks();
        let plain = Device::flex();
        let learn = plain.clone().autodiff();
        let (batch, obs_dim, act) = (72, 3, 2);
        let actor = GaussianTanhPolicyConfig::new(obs_dim, act)
            .with_hidden(vec![32, 24])
            .init(&plain)
            .unwrap();
        let critic = CriticEnsembleConfig::new(2, obs_dim + act, vec![48, 40])
            .init(&learn)
            .unwrap();
        let target = CriticEnsembleConfig::new(2, obs_dim + act, vec![48, 40])
            .init(&plain)
            .unwrap();
        let mut rng = EmberRng::seed_from(seed);
        let mut draw = |n: usize, lo: f32, hi: f32| -> Vec<f32> {
            (0..n)
                .map(|_| lo + rng.next_f64() as f32 * (hi - lo))
                .collect()
        };
        let h = HostInputs {
            obs: draw(batch * obs_dim, -3.0, 3.0),
            action: draw(batch * act, -1.0, 1.0),
            reward: draw(batch, -2.0, 1.0),
            terminated: (0..batch).map(|r| (r % 7 == 0) as u8 as f32).collect(),
            discount: if weighted {
                draw(batch, 0.9, 0.99)
            } else {
                Vec::new()
            },
            weights: if weighted {
                draw(batch, 0.2, 1.5)
            } else {
                Vec::new()
            },
            noise_pi: Vec::new(),
            next_obs: draw(batch * obs_dim, -3.0, 3.0),
            noise_next: draw(batch * act, -2.0, 2.0),
        };
        let column = |v: &[f32], device: &Device| matrix(v, batch, 1, device);
        let mut x = Inputs {
            obs: matrix(&h.obs, batch, obs_dim, &learn),
            action: matrix(&h.action, batch, act, &learn),
            next_obs: matrix(&h.next_obs, batch, obs_dim, &plain),
            reward: column(&h.reward, &plain),
            terminated: column(&h.terminated, &plain),
            discount: weighted.then(|| column(&h.discount, &plain)),
            weights: weighted.then(|| column(&h.weights, &learn)),
            noise_next: matrix(&h.noise_next, batch, act, &plain),
            noise_pi: matrix(&h.noise_next, batch, act, &learn),
            host: None,
        };
        let job = |x: &Inputs| CriticJob {
            critic: critic.clone(),
            target: target.clone(),
            optim: Arc::new(Mutex::new(
                crate::optimizer::OptimizerKind::Adam.build(0.0, &learn),
            )),
            next: NextValues {
                actor: actor.clone(),
                handed: None,
            },
            x: x.clone(),
            lr: 1e-3,
            alpha: 0.2,
            gamma: 0.97,
            tau: 0.005,
            step: 3,
        };
        let (b_loss, mut b_grads, b_td) = job(&x).grads();
        x.host = Some(h);
        let _ = job(&x).grads();
        let (h_loss, mut h_grads, h_td) = job(&x).grads();
        let (h_loss, b_loss) = (h_loss.unwrap(), b_loss.unwrap());
        assert!(
            (h_loss - b_loss).abs() <= 1e-5 * (1.0 + b_loss.abs()),
            "{h_loss} vs {b_loss}"
        );
        close("td errors", h_td, b_td);
        for (l, (w, b)) in critic.weights.iter().zip(&critic.biases).enumerate() {
            for (name, id) in [("weight", w.id), ("bias", b.id)] {
                let (h, b) = (
                    h_grads.remove::<3>(id).unwrap(),
                    b_grads.remove::<3>(id).unwrap(),
                );
                assert_eq!(h.dims(), b.dims());
                close(&format!("critic layer {l} {name}"), values(h), values(b));
            }
        }
        assert!(
            h_grads.is_empty() && b_grads.is_empty(),
            "gradients of other parameters"
        );
    }

    /// Equal to within float rounding, relative to the largest value.
    fn close(name: &str, h: Vec<f32>, b: Vec<f32>) {
        assert_eq!(h.len(), b.len(), "{name}");
        let top = b.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        assert!(top > 0.0, "{name}: all zero checks nothing");
        for (i, (h, b)) in h.iter().zip(&b).enumerate() {
            assert!(
                (h - b).abs() <= 2e-4 * top + 1e-7,
                "{name}[{i}]: {h} vs {b} (largest {top})"
            );
        }
    }

    #[test]
    fn critic_half_matches_the_burn_path() {
        compare_critic(false, 11);
    }

    #[test]
    fn critic_half_matches_the_burn_path_with_weights_and_discounts() {
        compare_critic(true, 12);
    }

    #[test]
    fn host_path_matches_the_burn_path() {
        compare((-20.0, 2.0), true, 1);
        compare((-20.0, 2.0), false, 2);
    }

    #[test]
    fn host_path_matches_the_burn_path_where_log_std_is_clamped() {
        // Most raw log σ of a fresh network fall outside ±0.05: their gradient is 0.
        compare((-0.05, 0.05), true, 3);
    }

    #[test]
    fn host_path_applies_only_where_it_computes_the_same() {
        // Builds networks: not while another test seeds and builds its learners.
        let _lock = super::super::building_networks();
        let plain = Device::flex();
        let learn = plain.clone().autodiff();
        let critic = CriticEnsembleConfig::new(2, 4, vec![8, 8])
            .init(&learn)
            .unwrap();
        let plain_policy = GaussianTanhPolicyConfig::new(3, 1).with_hidden(vec![8, 8]);
        assert!(HostUpdate::applies(
            &plain_policy.init(&learn).unwrap(),
            &critic,
            &plain
        ));
        let sde = plain_policy
            .clone()
            .with_sde(Some(-3.0))
            .init(&learn)
            .unwrap();
        assert!(!HostUpdate::applies(&sde, &critic, &plain));
        let mut tanh = plain_policy.clone();
        tanh.activation = Activation::Tanh;
        assert!(!HostUpdate::applies(
            &tanh.init(&learn).unwrap(),
            &critic,
            &plain
        ));
        let policy = plain_policy.init(&learn).unwrap();
        if let Ok(ndarray) = "ndarray"
            .parse::<ember_backend::DeviceSpec>()
            .and_then(|s| s.device())
        {
            assert!(!HostUpdate::applies(&policy, &critic, &ndarray));
        }
    }
}
