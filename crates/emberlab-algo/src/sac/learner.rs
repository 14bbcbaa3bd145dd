//! The [`Sac`] learner: its networks and optimizers, acting, checkpoints, and the
//! [`OffPolicyLearner`] glue around the update of [`super::update`].

use super::SacConfig;
use super::actor::{ActorGrads, ActorStep};
use super::update::{ActorDone, ActorJob, CriticDone, CriticJob, Inputs};
use crate::acting::{ActingBefore, GaussianActing};
use crate::agent::{ActionBuf, Agent};
use crate::checkpoint::Checkpoint;
use crate::config::Validate;
use crate::devices::Devices;
use crate::learner::{Metrics, OffPolicyLearner, Progress, Update};
use crate::optimizer::{OptimizerKind, step_in_place};
use crate::parts::{Parts, part};
use crate::persist::{Loaded, Persist, Visitor};
use crate::sde::SdeSchedule;
use crate::tensors::{column, matrix};
use crate::training_state::TrainingState;
use burn::module::Module;
use burn::optim::ModuleOptimizer;
use burn::tensor::Device;
use emberlab_core::{Batch, EmberRng, Result, Space};
use emberlab_nn::{
    CriticEnsemble, CriticEnsembleConfig, GaussianTanhPolicy, GaussianTanhPolicyConfig,
    Temperature, hard_target,
};
use std::sync::{Arc, Mutex};

/// A SAC learner and agent, built by [`SacConfig::build`]. Learns on `devices.learn`
/// (with autodiff), acts on `devices.act` through an inference copy refreshed every
/// `sync_every` updates.
pub struct Sac {
    config: SacConfig,
    obs_dim: usize,
    act_dim: usize,
    learn: Device,
    plain: Device,
    actor: GaussianTanhPolicy,
    critic: CriticEnsemble,
    target: CriticEnsemble,
    temperature: Temperature,
    actor_optim: ModuleOptimizer,
    alpha_optim: ModuleOptimizer,
    /// The critic's optimizer travels to the helper thread with the critic half.
    critic_optim: Arc<Mutex<ModuleOptimizer>>,
    alpha: f64,
    target_entropy: f64,
    noise_rng: EmberRng,
    act_rng: EmberRng,
    /// The acting copy, with the host fast path when it acts on flex or ndarray.
    acting: GaussianActing,
    /// gSDE: the exploration weights acting uses now and when to draw new ones.
    sde: SdeSchedule,
    /// Runs the critic half beside the actor half (the config's schedule).
    parts: Parts,
    /// The acting copy (module, updates since its refresh) from before the parallel
    /// schedule refreshed it while the critic half was still stepping; taken when the
    /// update commits, restored when it fails.
    acting_undo: Option<ActingBefore<GaussianTanhPolicy>>,
    progress: Progress,
}

impl std::fmt::Debug for Sac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sac")
            .field("config", &self.config)
            .field("alpha", &self.alpha)
            .field("progress", &self.progress)
            .finish_non_exhaustive()
    }
}

impl Sac {
    pub(super) fn new(
        config: &SacConfig,
        obs_space: &Space,
        action_space: &Space,
        devices: &Devices,
    ) -> Result<Sac> {
        config.validate()?;
        let bounds = action_space.as_box("SAC")?;
        let obs_dim = obs_space.flat_dim();
        let act_dim = bounds.dim();
        let (plain, learn, _seeded) = crate::tensors::learner_devices(&devices.learn, config.seed);
        let actor = GaussianTanhPolicyConfig::new(obs_dim, act_dim)
            .with_hidden(config.hidden.clone())
            .with_bounds(bounds.low().to_vec(), bounds.high().to_vec())
            .with_sde(config.use_sde.then_some(config.sde_log_std_init as f32))
            .init(&learn)?;
        let critic =
            CriticEnsembleConfig::new(2, obs_dim + act_dim, config.hidden.clone()).init(&learn)?;
        let target = hard_target(&critic);
        let temperature = Temperature::new(config.init_alpha, &learn)?;
        let adam = || OptimizerKind::Adam.build(0.0, &learn);
        let acting = GaussianActing::new(&actor, &devices.act, config.sync_every);
        let mut rng = EmberRng::seed_from(config.seed);
        Ok(Sac {
            obs_dim,
            act_dim,
            actor,
            critic,
            target,
            temperature,
            actor_optim: adam(),
            alpha_optim: adam(),
            critic_optim: Arc::new(Mutex::new(adam())),
            alpha: config.init_alpha,
            target_entropy: config.target_entropy.unwrap_or(-(act_dim as f64)),
            noise_rng: rng.fork(1),
            act_rng: rng.fork(2),
            acting,
            sde: SdeSchedule::new(config.sde_sample_freq),
            parts: config.update_schedule.parts("ember-sac"),
            acting_undo: None,
            progress: Progress::default(),
            learn,
            plain,
            config: config.clone(),
        })
    }

    /// The current temperature α.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The actor being trained.
    pub fn actor(&self) -> &GaussianTanhPolicy {
        &self.actor
    }

    /// The critic ensemble being trained.
    pub fn critic(&self) -> &CriticEnsemble {
        &self.critic
    }

    /// The target critics.
    pub fn target_critic(&self) -> &CriticEnsemble {
        &self.target
    }

    /// The config this learner was built with.
    pub fn config(&self) -> &SacConfig {
        &self.config
    }

    /// The update's tensors from a checked batch, with noise drawn from `rng`.
    fn inputs(&self, batch: &Batch, rng: &mut EmberRng) -> Inputs {
        let (b, o, a) = (batch.len, self.obs_dim, self.act_dim);
        // [b, a] per row, or one [features, a] matrix with gSDE.
        let [rows, cols] = self.actor.noise_shape(b);
        let mut noise = Vec::with_capacity(2 * rows * cols);
        emberlab_nn::noise::fill_standard_normal(2 * rows * cols, rng, &mut noise);
        let (noise_next, noise_pi) = noise.split_at(rows * cols);
        Inputs {
            obs: matrix(&batch.obs, b, o, &self.learn),
            action: matrix(&batch.action, b, a, &self.learn),
            next_obs: matrix(&batch.next_obs, b, o, &self.plain),
            reward: column(&batch.reward, &self.plain),
            terminated: column(&batch.terminated, &self.plain),
            discount: (!batch.discount.is_empty()).then(|| column(&batch.discount, &self.plain)),
            weights: (!batch.unweighted()).then(|| column(&batch.weights, &self.learn)),
            noise_next: matrix(noise_next, rows, cols, &self.plain),
            noise_pi: matrix(noise_pi, rows, cols, &self.learn),
        }
    }

    /// Runs both halves as two parts ([`crate::parts`]) on the configured schedule: the
    /// critic half and the actor + temperature half. Under the parallel schedule
    /// the actor half's step also brings the acting copy up to the stepped actor while the
    /// critic half steps; `update` undoes it if the update fails.
    fn run_halves(
        &mut self,
        job: CriticJob,
        x: &Inputs,
        step: u64,
    ) -> Result<(CriticDone, ActorDone)> {
        let lr = self.config.learning_rate;
        let frozen = self.critic.clone().no_grad();
        // The schedule of this run (an auto schedule may change between updates).
        let parallel = self.parts.threads() > 1;
        let actor_job = ActorJob {
            step: ActorStep {
                actor: &self.actor,
                temperature: Some(&self.temperature).filter(|_| self.config.auto_alpha),
                alpha: self.alpha,
                target_entropy: self.target_entropy,
                update: step,
            },
            frozen_critic: &frozen,
            x,
        };
        let (actor_opt, alpha_opt) = (&mut self.actor_optim, &mut self.alpha_optim);
        let acting = &mut self.acting;
        let acting_undo = &mut self.acting_undo;
        let critic_half = part(move || {
            let (loss, grads, td) = job.grads();
            let loss = loss?;
            Ok(move || job.finish(loss, grads, td))
        });
        let actor_half = part(move || {
            let ActorGrads {
                actor: actor_grads,
                temperature: t_grads,
                actor_loss,
                temperature_loss: alpha_loss,
            } = actor_job.losses_and_grads()?;
            let (actor, temperature) = (actor_job.step.actor, actor_job.step.temperature);
            Ok(move || {
                let mut actor = actor.clone();
                crate::faults::site("sac.actor_step");
                step_in_place(actor_opt, lr, &mut actor, actor_grads);
                let temperature = temperature.zip(t_grads).map(|(t, g)| {
                    let mut t = t.clone();
                    step_in_place(alpha_opt, lr, &mut t, g);
                    t
                });
                if parallel {
                    *acting_undo = Some(acting.after_update_early(&actor));
                }
                ActorDone {
                    actor,
                    temperature,
                    actor_loss,
                    alpha_loss,
                }
            })
        });
        self.parts
            .run(&format!("SAC update {step}"), (critic_half, actor_half))
    }
}

impl crate::agent::OnnxPolicy for Sac {
    /// `action = scale · tanh(μ(obs)) + bias` from the actor.
    fn onnx_outputs(
        &self,
        g: &mut emberlab_nn::OnnxGraph,
        obs: &str,
    ) -> Result<Vec<crate::agent::OnnxOutput>> {
        let action = self.actor.deterministic_onnx(g, obs)?;
        Ok(vec![crate::agent::OnnxOutput {
            value: action,
            name: "action",
            width: Some(self.actor.act_dim),
        }])
    }
}

impl Agent for Sac {
    fn obs_dim(&self) -> usize {
        self.obs_dim
    }

    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<()> {
        let _flush = emberlab_core::denormals::flush_denormals_here();
        let out = out.continuous_mut("SAC")?;
        let policy = self.acting.module();
        if !(explore && policy.is_sde()) {
            return self
                .acting
                .act(obs, self.obs_dim, explore, &mut self.act_rng, out);
        }
        let (x, _) = crate::tensors::obs_batch(obs, self.obs_dim, self.acting.device())?;
        let rng = &mut self.act_rng;
        let weights = self.sde.weights(|| policy.sde_weights(rng));
        policy.act_host_sde(x, weights, out);
        Ok(())
    }
}

impl OffPolicyLearner for Sac {
    fn update(&mut self, batch: &Batch, step: u64) -> Result<Update> {
        batch.check(self.obs_dim, self.act_dim)?;
        let _flush = emberlab_core::denormals::flush_denormals_here();

        // Noise comes from a copy of the generator, kept only if the update succeeds.
        let mut rng = self.noise_rng.clone();
        let x = self.inputs(batch, &mut rng);
        let job = CriticJob {
            critic: self.critic.clone(),
            target: self.target.clone(),
            optim: self.critic_optim.clone(),
            next_actor: self.actor.valid(),
            x: x.clone(),
            lr: self.config.learning_rate,
            alpha: self.alpha,
            gamma: self.config.gamma,
            tau: self.config.tau,
            step,
        };
        let (critic, actor) = match self.run_halves(job, &x, step) {
            Ok(done) => done,
            Err(e) => {
                self.acting.failed(self.acting_undo.take());
                return Err(e);
            }
        };
        let (critic_loss, actor_loss, alpha_loss) =
            (critic.loss, actor.actor_loss, actor.alpha_loss);
        // Everything succeeded: commit.
        self.critic = critic.critic;
        self.target = critic.target;
        self.actor = actor.actor;
        if let Some(t) = actor.temperature {
            self.alpha = t.alpha();
            self.temperature = t;
        }
        self.noise_rng = rng;
        self.sde.updated();
        self.acting.committed(&self.actor, self.acting_undo.take());
        let mut m = Metrics::default();
        m.push("critic_loss", critic_loss);
        m.push("actor_loss", actor_loss);
        if let Some(l) = alpha_loss {
            m.push("alpha_loss", l);
        }
        m.push("alpha", self.alpha);
        Ok(Update {
            metrics: m,
            td_errors: Some(critic.td_errors),
        })
    }

    fn progress(&mut self) -> &mut Progress {
        &mut self.progress
    }

    fn gamma(&self) -> Option<f64> {
        Some(self.config.gamma)
    }

    fn checkpoint(&mut self) -> Option<&mut dyn Checkpoint> {
        Some(self)
    }

    fn training_state(&mut self) -> Option<&mut dyn TrainingState> {
        Some(self)
    }
}

fn locked(optim: &Mutex<ModuleOptimizer>) -> std::sync::MutexGuard<'_, ModuleOptimizer> {
    // A panic on the helper never leaves the optimizer half-stepped (it steps a clone).
    optim
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Persist for Sac {
    fn kind(&self) -> &str {
        "sac"
    }

    /// The actor, the critic ensemble, its target and the temperature; their optimizers;
    /// α, both generators, the counters, the acting copy of the actor (the published
    /// policy) and the gSDE schedule.
    fn persist<V: Visitor>(&mut self, v: &mut V) -> Result<()> {
        v.net("actor", &mut self.actor)?;
        v.net("critic", &mut self.critic)?;
        v.net("target_critic", &mut self.target)?;
        v.net("temperature", &mut self.temperature)?;
        v.optim("actor_optim", &mut self.actor_optim)?;
        v.optim("critic_optim", &mut locked(&self.critic_optim))?;
        v.optim("alpha_optim", &mut self.alpha_optim)?;
        v.value(&mut self.alpha)?;
        v.value(&mut self.noise_rng)?;
        v.value(&mut self.act_rng)?;
        v.value(&mut self.progress)?;
        v.acting(&mut self.acting, &mut self.actor)?;
        v.value(&mut self.sde)
    }

    /// α follows a loaded temperature; the host copy of the policy follows the acting copy.
    fn loaded(&mut self, what: Loaded) -> Result<()> {
        if what == Loaded::Networks {
            self.alpha = self.temperature.alpha();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::UpdateSchedule;
    use super::*;
    use emberlab_core::BoxSpace;

    /// A small learner, built under [`super::super::building_networks`].
    fn learner(schedule: UpdateSchedule) -> Sac {
        let _one_at_a_time = super::super::building_networks();
        let config = SacConfig {
            hidden: vec![32, 32],
            update_schedule: schedule,
            seed: 3,
            ..SacConfig::default()
        };
        let obs = Space::Box(BoxSpace::uniform(3, -1.0, 1.0).unwrap());
        let act = Space::Box(BoxSpace::uniform(2, -1.0, 1.0).unwrap());
        let device = emberlab_backend::DeviceSpec::Flex.device().unwrap();
        config.build(&obs, &act, &Devices::same(&device)).unwrap()
    }

    fn state(s: &Sac) -> Vec<u32> {
        let mut all = emberlab_nn::flat_params(&s.actor);
        all.extend(emberlab_nn::flat_params(&s.critic));
        all.extend(emberlab_nn::flat_params(&s.target));
        all.push(s.alpha as f32);
        all.iter().map(|v| v.to_bits()).collect()
    }

    /// `n` random transitions of the learner's spaces (3 observations, 2 actions).
    fn batch(rng: &mut EmberRng, n: usize) -> Batch {
        let mut b = Batch::with_capacity(3, 2, n);
        let mut draw =
            |k: usize| -> Vec<f32> { (0..k).map(|_| rng.next_f64() as f32 * 2.0 - 1.0).collect() };
        (b.obs, b.action, b.next_obs) = (draw(n * 3), draw(n * 2), draw(n * 3));
        (b.reward, b.terminated) = (draw(n), vec![0.0; n]);
        (b.truncated, b.weights, b.len) = (vec![0.0; n], vec![1.0; n], n);
        b
    }

    #[test]
    fn the_parallel_schedule_gives_the_sequential_bits() {
        let mut seq = learner(UpdateSchedule::Sequential);
        let mut par = learner(UpdateSchedule::Parallel);
        assert_eq!(state(&seq), state(&par), "same seed, same weights");
        let before = state(&seq);
        let mut rng = EmberRng::seed_from(9);
        let n = 60;
        for step in 0..7 {
            let b = batch(&mut rng, n);
            let (s, p) = (seq.update(&b, step), par.update(&b, step));
            assert_eq!(s.unwrap(), p.unwrap(), "update {step}");
            assert_eq!(state(&seq), state(&par), "update {step}");
        }
        assert_ne!(state(&seq), before);
    }

    /// The auto schedule moves between parallel and sequential updates while it times
    /// them; every update gives the sequential bits.
    #[test]
    fn an_auto_schedule_gives_the_sequential_bits_as_it_changes() {
        let mut seq = learner(UpdateSchedule::Sequential);
        let mut auto = learner(UpdateSchedule::Auto);
        let mut rng = EmberRng::seed_from(5);
        let n = 16;
        let mut threads = std::collections::BTreeSet::new();
        for step in 0..200u64 {
            threads.insert(auto.parts.threads());
            let b = batch(&mut rng, n);
            let (s, a) = (seq.update(&b, step), auto.update(&b, step));
            assert_eq!(s.unwrap(), a.unwrap(), "update {step}");
        }
        assert_eq!(state(&seq), state(&auto));
        assert_eq!(threads.into_iter().collect::<Vec<_>>(), vec![1, 2]);
        assert!(
            auto.parts.tuning().is_some(),
            "the trial ended within 200 updates"
        );
    }
}
