//! [`VecNormalize`]: observations and rewards normalised by statistics shared across the
//! sub-environments, as Stable-Baselines3's `VecNormalize` does (what rl-baselines3-zoo's
//! `normalize: true` means), and [`ObsNormalizer`], the handle that lets evaluation
//! environments see observations through the same, frozen, statistics.

use super::vec_env::{VecActions, VecEnv, VecStep};
use crate::EnvFactory;
use emberlab_core::state::{StateReader, StateWriter, load_words, save_words};
use emberlab_core::{Action, BoxSpace, Env, Error, Result, Space, StepInfo};
use std::path::Path;
use std::sync::{Arc, RwLock};

/// How [`VecNormalize`] normalises (SB3's `VecNormalize` arguments and defaults).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NormalizeConfig {
    /// Centre and scale observations by their running mean and variance.
    pub observations: bool,
    /// Scale rewards by the running standard deviation of the discounted return.
    pub rewards: bool,
    /// Normalised observations are clipped to `±clip_obs`.
    pub clip_obs: f64,
    /// Normalised rewards are clipped to `±clip_reward`.
    pub clip_reward: f64,
    /// Discount of the return whose variance scales rewards (zoo sets the algorithm's).
    pub gamma: f64,
    /// Added to variances before the square root.
    pub epsilon: f64,
}

impl Default for NormalizeConfig {
    fn default() -> Self {
        NormalizeConfig {
            observations: true,
            rewards: true,
            clip_obs: 10.0,
            clip_reward: 10.0,
            gamma: 0.99,
            epsilon: 1e-8,
        }
    }
}

impl NormalizeConfig {
    /// Checks the values.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        let positive = |name: &str, v: f64| {
            if v > 0.0 && v.is_finite() {
                Ok(())
            } else {
                Err(Error::invalid(name, v, "a finite value > 0"))
            }
        };
        positive("normalize.clip_obs", self.clip_obs)?;
        positive("normalize.clip_reward", self.clip_reward)?;
        positive("normalize.epsilon", self.epsilon)?;
        if !(0.0..=1.0).contains(&self.gamma) {
            return Err(Error::invalid("normalize.gamma", self.gamma, "in [0, 1]"));
        }
        Ok(())
    }
}

/// Running per-dimension mean and population variance in `f64`, updated a batch of rows at
/// a time with the parallel formula of Chan et al. (SB3's `RunningMeanStd`: count starts
/// at `1e-4`).
#[derive(Clone, Debug, PartialEq)]
pub struct BatchMeanVar {
    mean: Vec<f64>,
    var: Vec<f64>,
    count: f64,
}

impl BatchMeanVar {
    /// Mean 0, variance 1, count `1e-4`, for `dim`-vectors.
    pub fn new(dim: usize) -> Self {
        BatchMeanVar {
            mean: vec![0.0; dim],
            var: vec![1.0; dim],
            count: 1e-4,
        }
    }

    /// Folds in `rows` (row-major, a whole number of rows of the statistics' dimension).
    pub fn update(&mut self, rows: &[f32]) {
        let dim = self.mean.len().max(1);
        let n = rows.len() / dim;
        if n == 0 {
            return;
        }
        let tot = self.count + n as f64;
        for d in 0..self.mean.len() {
            let column = rows.chunks_exact(dim).map(|r| r[d] as f64);
            let batch_mean = column.clone().sum::<f64>() / n as f64;
            let batch_var = column.map(|x| (x - batch_mean).powi(2)).sum::<f64>() / n as f64;
            let delta = batch_mean - self.mean[d];
            let m2 = self.var[d] * self.count
                + batch_var * n as f64
                + delta * delta * self.count * n as f64 / tot;
            self.mean[d] += delta * n as f64 / tot;
            self.var[d] = m2 / tot;
        }
        self.count = tot;
    }

    /// The running means.
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// The running variances.
    pub fn var(&self) -> &[f64] {
        &self.var
    }

    /// The (fractional) number of rows folded in.
    pub fn count(&self) -> f64 {
        self.count
    }

    fn save_state(&self, out: &mut StateWriter) {
        out.f64s(&self.mean).f64s(&self.var).f64(self.count);
    }

    fn load_state(&mut self, src: &mut StateReader<'_>) -> Result<()> {
        let mean = src.f64s(Some(self.mean.len()))?;
        let var = src.f64s(Some(self.var.len()))?;
        let count = src.f64()?;
        if !(count > 0.0 && count.is_finite()) || var.iter().any(|v| v.is_nan() || *v < 0.0) {
            return Err(Error::invalid(
                "normalisation statistics",
                count,
                "a positive count and non-negative variances",
            ));
        }
        (self.mean, self.var, self.count) = (mean, var, count);
        Ok(())
    }
}

#[derive(Debug)]
struct ObsStats {
    stats: BatchMeanVar,
    clip: f64,
    epsilon: f64,
}

/// A shared handle on the observation statistics of a [`VecNormalize`]: clones see the same
/// (live) statistics. Evaluation environments built with [`ObsNormalizer::factory`] read
/// them without ever updating them.
#[derive(Clone, Debug)]
pub struct ObsNormalizer(Arc<RwLock<ObsStats>>);

/// The file name trainers and the `ember` command give [`ObsNormalizer::save_file`] in a
/// checkpoint folder.
pub const OBS_NORMALIZER_FILE: &str = "obs_normalizer.state";

/// The snapshot kind of an [`ObsNormalizer`] file.
const OBS_NORMALIZER: &str = "observation normalizer";

impl ObsNormalizer {
    /// Fresh statistics for `dim`-vectors.
    pub fn new(dim: usize, clip: f64, epsilon: f64) -> Self {
        ObsNormalizer(Arc::new(RwLock::new(ObsStats {
            stats: BatchMeanVar::new(dim),
            clip,
            epsilon,
        })))
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, ObsStats> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, ObsStats> {
        self.0.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The observation width.
    pub fn dim(&self) -> usize {
        self.read().stats.mean.len()
    }

    /// The clip applied to normalised observations (`±clip`).
    pub fn clip(&self) -> f64 {
        self.read().clip
    }

    /// The `ε` added to the variance before its square root.
    pub fn epsilon(&self) -> f64 {
        self.read().epsilon
    }

    /// A copy of the statistics now.
    pub fn statistics(&self) -> BatchMeanVar {
        self.read().stats.clone()
    }

    /// Folds the rows of `obs` into the statistics.
    pub fn update(&self, obs: &[f32]) {
        self.write().stats.update(obs);
    }

    /// `obs ← clip((obs − mean) / √(var + ε), ±clip)`, row by row.
    pub fn normalize(&self, obs: &mut [f32]) {
        let s = self.read();
        let dim = s.stats.mean.len().max(1);
        for row in obs.chunks_exact_mut(dim) {
            for ((o, &m), &v) in row.iter_mut().zip(&s.stats.mean).zip(&s.stats.var) {
                let z = (*o as f64 - m) / (v + s.epsilon).sqrt();
                *o = z.clamp(-s.clip, s.clip) as f32;
            }
        }
    }

    /// Appends the statistics to a snapshot.
    pub fn save_state(&self, out: &mut StateWriter) {
        self.read().stats.save_state(out);
    }

    /// Restores what [`ObsNormalizer::save_state`] wrote (same width); nothing changes on
    /// an error.
    ///
    /// # Errors
    /// A snapshot of another width, a short or implausible one.
    pub fn load_state(&self, src: &mut StateReader<'_>) -> Result<()> {
        let mut stats = self.statistics();
        stats.load_state(src)?;
        self.write().stats = stats;
        Ok(())
    }

    /// Writes the statistics to `path` (checksummed, written beside it and renamed).
    ///
    /// # Errors
    /// An I/O error.
    pub fn save_file(&self, path: &Path) -> Result<()> {
        let mut out = StateWriter::new();
        out.usize(self.dim());
        self.save_state(&mut out);
        save_words(path, OBS_NORMALIZER, out.words())
    }

    /// Loads statistics [`ObsNormalizer::save_file`] wrote; nothing changes on an error.
    ///
    /// # Errors
    /// A missing, damaged or foreign file, or one of another width.
    pub fn load_file(&self, path: &Path) -> Result<()> {
        let words = load_words(path, OBS_NORMALIZER)?;
        let mut src = StateReader::new(&words, OBS_NORMALIZER);
        Error::check_len("observation normalizer width", self.dim(), src.usize()?)?;
        let mut stats = self.statistics();
        stats.load_state(&mut src)?;
        src.finish()?;
        self.write().stats = stats;
        Ok(())
    }

    /// `env` with its observations normalised by these statistics (never updated by it).
    ///
    /// # Errors
    /// An observation space that is not a box of this width.
    pub fn wrap(&self, env: Box<dyn Env>) -> Result<Box<dyn Env>> {
        Ok(Box::new(NormalizedObservations::new(env, self.clone())?))
    }

    /// A factory of `inner`'s environments seen through [`ObsNormalizer::wrap`] (for
    /// evaluation during and after training).
    pub fn factory<F: EnvFactory>(&self, inner: F) -> NormalizedFactory<F> {
        NormalizedFactory {
            inner,
            normalizer: self.clone(),
        }
    }
}

/// Environments of a factory with observations normalised by an [`ObsNormalizer`].
pub struct NormalizedFactory<F> {
    inner: F,
    normalizer: ObsNormalizer,
}

impl<F: EnvFactory> EnvFactory for NormalizedFactory<F> {
    fn make(&self) -> Result<Box<dyn Env>> {
        self.normalizer.wrap(self.inner.make()?)
    }
}

fn unbounded_box(space: &Space, what: &str) -> Result<Space> {
    match space {
        Space::Box(b) => Ok(Space::Box(BoxSpace::uniform(
            b.dim(),
            f32::NEG_INFINITY,
            f32::INFINITY,
        )?)),
        other => Err(Error::invalid(what, other, "a Box space")),
    }
}

/// An environment whose observations pass through an [`ObsNormalizer`] (frozen).
struct NormalizedObservations {
    env: Box<dyn Env>,
    normalizer: ObsNormalizer,
    space: Space,
}

impl NormalizedObservations {
    fn new(env: Box<dyn Env>, normalizer: ObsNormalizer) -> Result<Self> {
        let space = unbounded_box(env.observation_space(), "observation space to normalise")?;
        Error::check_len(
            "observation width for the normalizer",
            normalizer.dim(),
            space.flat_dim(),
        )?;
        Ok(NormalizedObservations {
            env,
            normalizer,
            space,
        })
    }
}

impl Env for NormalizedObservations {
    fn observation_space(&self) -> &Space {
        &self.space
    }

    fn action_space(&self) -> &Space {
        self.env.action_space()
    }

    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<()> {
        self.env.reset_into(seed, obs)?;
        self.normalizer.normalize(obs);
        Ok(())
    }

    fn step_into(&mut self, action: Action<'_>, obs: &mut [f32]) -> Result<StepInfo> {
        let info = self.env.step_into(action, obs)?;
        self.normalizer.normalize(obs);
        Ok(info)
    }
}

/// SB3's `VecNormalize` over any [`VecEnv`]: while training, every observation batch first
/// updates shared running statistics and is then returned as
/// `clip((obs − mean) / √(var + ε), ±clip_obs)`; every reward is divided by the running
/// standard deviation of the per-sub-environment discounted return (`R ← γR + r`, reset at
/// the end of an episode) and clipped to `±clip_reward`. [`VecStep::raw_rewards`] keeps the
/// environment's own rewards for episode statistics. With [`VecNormalize::set_training`]
/// off the statistics are frozen. Snapshots hold the statistics, so a resumed run goes on
/// exactly; [`VecNormalize::obs_normalizer`] hands the same statistics to evaluation
/// environments.
///
/// ```
/// use emberlab_env::{EnvFactory, NormalizeConfig, SyncVecEnv, VecActions, VecEnv, VecNormalize};
///
/// let mut env = VecNormalize::new(SyncVecEnv::from_id("Pendulum-v1", 4)?, NormalizeConfig::default())?;
/// env.reset(Some(0))?;
/// let step = env.step(VecActions::Continuous(&[0.5; 4]))?;
/// assert!(step.rewards.iter().all(|r| r.abs() <= 10.0));
/// assert_ne!(step.raw_rewards, Some(step.rewards));
/// // Evaluation environments see observations through the same statistics:
/// let pendulum = emberlab_env::factory("Pendulum-v1")?;
/// let eval = env.obs_normalizer().factory(move || pendulum.make());
/// let mut eval_env = eval.make()?;
/// assert!(eval_env.reset(Some(0))?.iter().all(|x| x.abs() <= 10.0));
/// # Ok::<(), emberlab_core::Error>(())
/// ```
pub struct VecNormalize<V> {
    env: V,
    config: NormalizeConfig,
    obs_normalizer: ObsNormalizer,
    return_stats: BatchMeanVar,
    returns: Vec<f64>,
    /// `returns` as the statistics take them (kept to avoid an allocation per step).
    returns_row: Vec<f32>,
    training: bool,
    space: Space,
    obs: Vec<f32>,
    rewards: Vec<f64>,
    raw_rewards: Vec<f64>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
}

/// The snapshot kind of a [`VecNormalize`]'s own state.
const VEC_NORMALIZE: &str = "VecNormalize";

impl<V: VecEnv> VecNormalize<V> {
    /// Wraps `env` (whose observations must be a box when `config.observations`).
    ///
    /// # Errors
    /// An invalid config; observations to normalise that are not a box.
    pub fn new(env: V, config: NormalizeConfig) -> Result<Self> {
        config.validate()?;
        let single = env.single_observation_space();
        let space = if config.observations {
            unbounded_box(single, "observation space to normalise")?
        } else {
            single.clone()
        };
        let n = env.num_envs();
        Ok(VecNormalize {
            obs_normalizer: ObsNormalizer::new(single.flat_dim(), config.clip_obs, config.epsilon),
            env,
            config,
            return_stats: BatchMeanVar::new(1),
            returns: vec![0.0; n],
            returns_row: Vec::with_capacity(n),
            training: true,
            space,
            obs: Vec::new(),
            rewards: vec![0.0; n],
            raw_rewards: vec![0.0; n],
            terminated: vec![false; n],
            truncated: vec![false; n],
        })
    }

    /// The observation statistics (a shared handle: evaluation environments built from it
    /// see every later update).
    pub fn obs_normalizer(&self) -> ObsNormalizer {
        self.obs_normalizer.clone()
    }

    /// The statistics of the discounted return that scale rewards.
    pub fn return_statistics(&self) -> &BatchMeanVar {
        &self.return_stats
    }

    /// Whether steps update the statistics.
    pub fn training(&self) -> bool {
        self.training
    }

    /// Freezes (`false`) or resumes (`true`) updating the statistics.
    pub fn set_training(&mut self, on: bool) {
        self.training = on;
    }

    /// The settings.
    pub fn config(&self) -> &NormalizeConfig {
        &self.config
    }

    /// The wrapped vector environment.
    pub fn inner(&self) -> &V {
        &self.env
    }

    /// Statistics updated (when training) and observations normalised, in place.
    fn normalize_obs(&mut self) {
        if self.config.observations {
            if self.training {
                self.obs_normalizer.update(&self.obs);
            }
            self.obs_normalizer.normalize(&mut self.obs);
        }
    }
}

impl<V: VecEnv> VecEnv for VecNormalize<V> {
    fn num_envs(&self) -> usize {
        self.env.num_envs()
    }

    fn single_observation_space(&self) -> &Space {
        &self.space
    }

    fn single_action_space(&self) -> &Space {
        self.env.single_action_space()
    }

    fn reset(&mut self, seed: Option<u64>) -> Result<&[f32]> {
        let raw = self.env.reset(seed)?;
        self.obs.clear();
        self.obs.extend_from_slice(raw);
        self.returns.iter_mut().for_each(|r| *r = 0.0);
        self.normalize_obs();
        Ok(&self.obs)
    }

    fn step(&mut self, actions: VecActions<'_>) -> Result<VecStep<'_>> {
        let step = self.env.step(actions)?;
        self.raw_rewards
            .copy_from_slice(step.raw_rewards.unwrap_or(step.rewards));
        self.rewards.copy_from_slice(step.rewards);
        self.terminated.copy_from_slice(step.terminated);
        self.truncated.copy_from_slice(step.truncated);
        self.obs.clear();
        self.obs.extend_from_slice(step.obs);
        self.normalize_obs();
        let gamma = self.config.gamma;
        for (ret, &r) in self.returns.iter_mut().zip(&self.rewards) {
            *ret = *ret * gamma + r;
        }
        if self.training {
            self.returns_row.clear();
            self.returns_row
                .extend(self.returns.iter().map(|&r| r as f32));
            self.return_stats.update(&self.returns_row);
        }
        if self.config.rewards {
            let scale = (self.return_stats.var[0] + self.config.epsilon).sqrt();
            let clip = self.config.clip_reward;
            for r in &mut self.rewards {
                *r = (*r / scale).clamp(-clip, clip);
            }
        }
        for (i, ret) in self.returns.iter_mut().enumerate() {
            if self.terminated[i] || self.truncated[i] {
                *ret = 0.0;
            }
        }
        Ok(VecStep {
            obs: &self.obs,
            rewards: &self.rewards,
            terminated: &self.terminated,
            truncated: &self.truncated,
            raw_rewards: Some(&self.raw_rewards),
        })
    }

    fn save_state(&self, out: &mut StateWriter) -> Result<()> {
        self.env.save_state(out)?;
        let mut own = StateWriter::new();
        own.bool(self.training).f64s(&self.returns);
        self.obs_normalizer.save_state(&mut own);
        self.return_stats.save_state(&mut own);
        out.str(VEC_NORMALIZE).nested(own.words());
        Ok(())
    }

    fn load_state(&mut self, src: &mut StateReader<'_>) -> Result<()> {
        self.env.load_state(src)?;
        let kind = src.string()?;
        if kind != VEC_NORMALIZE {
            return Err(Error::invalid(
                "vector env snapshot",
                kind,
                "a VecNormalize snapshot",
            ));
        }
        let mut own = StateReader::new(src.nested()?, VEC_NORMALIZE);
        let training = own.bool()?;
        let returns = own.f64s(Some(self.returns.len()))?;
        let mut obs_stats = self.obs_normalizer.statistics();
        obs_stats.load_state(&mut own)?;
        let mut return_stats = self.return_stats.clone();
        return_stats.load_state(&mut own)?;
        own.finish()?;
        self.training = training;
        self.returns = returns;
        self.obs_normalizer.write().stats = obs_stats;
        self.return_stats = return_stats;
        Ok(())
    }
}
