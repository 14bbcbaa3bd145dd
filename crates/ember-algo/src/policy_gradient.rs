//! The policy-gradient learner behind A2C and REINFORCE: a categorical policy with an
//! optional value head (an [`ActorCriticNet`]: separate networks or a shared trunk),
//! trained on the on-policy trainer's advantages with an entropy bonus. A2C and REINFORCE are configs of it
//! ([`crate::A2cConfig`], [`crate::ReinforceConfig`]).

use crate::acting::ActingCopy;
use crate::agent::{ActionBuf, Agent};
use crate::checkpoint::{Checkpoint, load_module, save_module};
use crate::devices::Devices;
use crate::learner::{
    AdvantageMode, Metrics, OnPolicyLearner, Progress, RolloutBatch, check_discrete_actions,
};
use crate::optimizer::{OptimizerKind, step_in_place};
use crate::tensors::{column, host, index_vector, matrix};
use crate::training_state::{
    TrainingState, load_net, load_optim, load_scalars, save_net, save_optim, save_scalars,
};
use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::Device;
use ember_core::state::StateWriter;
use ember_core::{EmberRng, Error, Result, Space};
use ember_loss::{checked_loss, entropy_loss, mse, policy_gradient_loss};
use ember_nn::{Activation, ActorCriticNet, ActorCriticNetConfig, evaluate_logits};
use std::path::Path;

/// Everything that distinguishes A2C from REINFORCE, as the learner needs it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PgSettings {
    pub name: &'static str,
    pub hidden: Vec<usize>,
    pub activation: Activation,
    pub shared_trunk: bool,
    pub value: bool,
    pub learning_rate: f64,
    pub optimizer: OptimizerKind,
    pub max_grad_norm: f64,
    pub ent_coef: f64,
    pub vf_coef: f64,
    pub normalize_advantage: bool,
    pub mode: AdvantageMode,
    pub sync_every: u64,
    pub seed: u64,
}

/// An on-policy actor-critic / REINFORCE learner for discrete action spaces.
pub struct PolicyGradient {
    settings: PgSettings,
    obs_dim: usize,
    learn: Device,
    plain: Device,
    actions: usize,
    net: ActorCriticNet,
    optim: ModuleOptimizer,
    rng: EmberRng,
    acting: ActingCopy<ActorCriticNet>,
    progress: Progress,
}

impl std::fmt::Debug for PolicyGradient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyGradient")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl PolicyGradient {
    pub(crate) fn new(
        settings: PgSettings,
        obs_space: &Space,
        action_space: &Space,
        devices: &Devices,
    ) -> Result<PolicyGradient> {
        let Space::Discrete(d) = action_space else {
            return Err(Error::invalid(
                format!("{} action space", settings.name),
                action_space,
                "a Discrete space (continuous policies are not implemented for this learner)",
            ));
        };
        let obs_dim = obs_space.flat_dim();
        let (plain, learn) = crate::tensors::learner_devices(&devices.learn, settings.seed);
        let net = ActorCriticNetConfig {
            obs_dim,
            actions: d.n(),
            hidden: settings.hidden.clone(),
            activation: settings.activation,
            shared_trunk: settings.shared_trunk,
            value: settings.value,
        }
        .init(&learn)?;
        Ok(PolicyGradient {
            obs_dim,
            actions: d.n(),
            acting: ActingCopy::new(&net, &devices.act, settings.sync_every),
            net,
            optim: settings.optimizer.build(settings.max_grad_norm, &learn),
            rng: EmberRng::seed_from(settings.seed).fork(4),
            progress: Progress::default(),
            learn,
            plain,
            settings,
        })
    }

    /// The network being trained.
    pub fn net(&self) -> &ActorCriticNet {
        &self.net
    }
}

/// Samples one index per row of `logits` (`rows × k`) from `softmax(row)`.
fn sample_rows(logits: &[f32], k: usize, rng: &mut EmberRng, out: &mut Vec<usize>) {
    out.clear();
    for row in logits.chunks_exact(k) {
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let total: f64 = row.iter().map(|&l| ((l - max) as f64).exp()).sum();
        let mut u = rng.next_f64() * total;
        let mut pick = k - 1;
        for (j, &l) in row.iter().enumerate() {
            u -= ((l - max) as f64).exp();
            if u < 0.0 {
                pick = j;
                break;
            }
        }
        out.push(pick);
    }
}

fn argmax_rows(logits: &[f32], k: usize, out: &mut Vec<usize>) {
    out.clear();
    out.extend(logits.chunks_exact(k).map(|row| {
        row.iter()
            .enumerate()
            .fold((0, f32::NEG_INFINITY), |best, (j, &l)| {
                if l > best.1 { (j, l) } else { best }
            })
            .0
    }));
}

impl Checkpoint for PolicyGradient {
    /// One `actor_critic` safetensors file.
    fn save_networks(&self, dir: &Path) -> Result<()> {
        save_module(&self.net, dir, "actor_critic")
    }

    fn load_networks(&mut self, dir: &Path) -> Result<()> {
        let net = load_module(self.net.clone(), dir, "actor_critic")?;
        self.acting.refresh(&net);
        self.net = net;
        Ok(())
    }
}

impl Agent for PolicyGradient {
    fn obs_dim(&self) -> usize {
        self.obs_dim
    }

    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<()> {
        let _flush = ember_core::denormals::flush_denormals_here();
        let out = out.discrete_mut(self.settings.name)?;
        let (x, n) = crate::tensors::obs_batch(obs, self.obs_dim, self.acting.device())?;
        let (logits, _) = self.acting.module().forward(x);
        let logits = host(logits);
        let k = logits.len() / n.max(1);
        if explore {
            sample_rows(&logits, k, &mut self.rng, out);
        } else {
            argmax_rows(&logits, k, out);
        }
        Ok(())
    }
}

impl OnPolicyLearner for PolicyGradient {
    fn advantage_mode(&self) -> AdvantageMode {
        self.settings.mode
    }

    fn values(&mut self, obs: &[f32]) -> Result<Option<Vec<f32>>> {
        let _flush = ember_core::denormals::flush_denormals_here();
        let (x, _) = crate::tensors::obs_batch(obs, self.obs_dim, &self.plain)?;
        Ok(self.net.valid().values(x).map(host))
    }

    fn update(&mut self, batch: &RolloutBatch, step: u64) -> Result<Metrics> {
        batch.check(self.obs_dim, 1)?;
        check_discrete_actions("rollout.actions", &batch.actions, self.actions)?;
        let _flush = ember_core::denormals::flush_denormals_here();

        let s = &self.settings;
        let n = batch.len;
        let mut adv = batch.advantages.clone();
        if s.normalize_advantage && n > 1 {
            let mean = adv.iter().sum::<f32>() / n as f32;
            let var = adv.iter().map(|a| (a - mean) * (a - mean)).sum::<f32>() / (n - 1) as f32;
            let scale = 1.0 / (var.sqrt() + 1e-8);
            adv.iter_mut().for_each(|a| *a = (*a - mean) * scale);
        }
        let (logits, values) = self
            .net
            .forward(matrix(&batch.obs, n, self.obs_dim, &self.learn));
        let (log_prob, entropy) =
            evaluate_logits(logits, index_vector(&batch.actions, &self.learn));
        let entropy_value = entropy.clone().mean().into_scalar::<f64>();
        let policy_loss = policy_gradient_loss(log_prob, column(&adv, &self.learn));
        let mut m = Metrics::default();
        m.push(
            "policy_loss",
            checked_loss("policy loss", &policy_loss, step)?,
        );
        let mut total = policy_loss + entropy_loss(entropy).mul_scalar(s.ent_coef);
        if let Some(v) = values {
            let value_loss = mse(v, column(&batch.returns, &self.learn));
            m.push("value_loss", checked_loss("value loss", &value_loss, step)?);
            total = total + value_loss.mul_scalar(s.vf_coef);
        }
        checked_loss(&format!("{} loss", s.name), &total, step)?;
        m.push("entropy", entropy_value);
        let grads = GradientsParams::from_grads(total.backward(), &self.net);
        crate::faults::site("policy_gradient.step");
        step_in_place(&mut self.optim, s.learning_rate, &mut self.net, grads);
        self.acting.after_update(&self.net);
        Ok(m)
    }

    fn progress(&mut self) -> &mut Progress {
        &mut self.progress
    }

    fn checkpoint(&self) -> Option<&dyn Checkpoint> {
        Some(self)
    }

    fn training_state(&mut self) -> Option<&mut dyn TrainingState> {
        Some(self)
    }
}

impl TrainingState for PolicyGradient {
    /// The network, its optimizer and the acting copy (burnpack files); the generator and
    /// the counters (`learner.state`).
    fn save_state(&self, dir: &Path) -> Result<()> {
        save_net(&self.net, dir, "actor_critic")?;
        save_optim(&self.optim, dir, "optim")?;
        self.acting.save_state(dir)?;
        let mut w = StateWriter::new();
        w.rng(&self.rng)
            .u64(self.progress.env_steps)
            .u64(self.progress.updates)
            .u64(self.acting.since());
        save_scalars(dir, self.settings.name, w)
    }

    fn load_state(&mut self, dir: &Path) -> Result<()> {
        let net = load_net(self.net.clone(), dir, "actor_critic")?;
        let optim = load_optim(&self.optim, dir, "optim")?;
        let acting = self.acting.load_module(dir)?;
        let (rng, progress, since) = load_scalars(dir, self.settings.name, |r| {
            Ok((
                r.rng()?,
                Progress {
                    env_steps: r.u64()?,
                    updates: r.u64()?,
                },
                r.u64()?,
            ))
        })?;
        (self.net, self.optim) = (net, optim);
        self.acting.restore(acting, since);
        (self.rng, self.progress) = (rng, progress);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_sampling_follows_the_softmax() {
        // logits ln(1), ln(3): probabilities 1/4, 3/4.
        let logits: Vec<f32> = (0..20_000).flat_map(|_| [0.0, 3f32.ln()]).collect();
        let mut rng = EmberRng::seed_from(7);
        let mut out = Vec::new();
        sample_rows(&logits, 2, &mut rng, &mut out);
        let ones = out.iter().filter(|&&a| a == 1).count() as f64 / out.len() as f64;
        // Standard error sqrt(.75 * .25 / 20000) ≈ 0.003: 5 sigma.
        assert!((ones - 0.75).abs() < 0.015, "{ones}");
        argmax_rows(&[0.0, 2.0, 1.0, 5.0, 0.0, 0.0], 3, &mut out);
        assert_eq!(out, vec![1, 0]);
    }
}
