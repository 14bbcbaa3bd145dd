//! What a training run reports.

use crate::learner::{Metrics, Progress};
use ember_env::EnvFactory;

/// One evaluation during training.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalPoint {
    /// Env steps collected when the evaluation ran.
    pub env_steps: u64,
    /// Mean return of the deterministic evaluation episodes.
    pub mean_return: f64,
}

/// The outcome of one training call (counts are of this call; the learner's totals over
/// every call are in `progress`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrainReport {
    /// Env steps collected (all sub-environments).
    pub env_steps: u64,
    /// Gradient updates made.
    pub updates: u64,
    /// Training episodes completed.
    pub episodes: u64,
    /// Mean return of the last (up to) 20 training episodes.
    pub recent_train_return: f64,
    /// Evaluations, in order (the last one runs at the end of training).
    pub evals: Vec<EvalPoint>,
    /// Metrics of the last update.
    pub last_metrics: Metrics,
    /// Rounds of updates skipped because the sampler could not yet draw a batch (e.g.
    /// return-weighted replay before `batch_size` transitions have non-zero weight).
    pub sample_waits: u64,
    /// The learner's counters after this call, over every call.
    pub progress: Progress,
    /// Wall-clock seconds.
    pub wall_secs: f64,
}

impl TrainReport {
    /// The mean return of the last evaluation, if any ran.
    pub fn final_eval(&self) -> Option<f64> {
        self.evals.last().map(|e| e.mean_return)
    }
}

/// Per-sub-environment episode bookkeeping shared by the trainers.
#[derive(Clone, Debug)]
pub(crate) struct EpisodeTracker {
    running: Vec<f64>,
    recent: std::collections::VecDeque<f64>,
    pub(crate) episodes: u64,
}

impl EpisodeTracker {
    pub(crate) fn new(num_envs: usize) -> Self {
        EpisodeTracker {
            running: vec![0.0; num_envs],
            recent: Default::default(),
            episodes: 0,
        }
    }

    /// Adds a real (non-reset) step's reward; closes the episode when it ended.
    pub(crate) fn record(&mut self, env: usize, reward: f64, done: bool) {
        self.running[env] += reward;
        if done {
            self.recent.push_back(self.running[env]);
            if self.recent.len() > 20 {
                self.recent.pop_front();
            }
            self.running[env] = 0.0;
            self.episodes += 1;
        }
    }

    pub(crate) fn recent_mean(&self) -> f64 {
        if self.recent.is_empty() {
            return f64::NAN;
        }
        self.recent.iter().sum::<f64>() / self.recent.len() as f64
    }
}

/// When and how the trainers evaluate: every `every` env steps and once at the end.
pub(crate) struct EvalSchedule<'a> {
    env: &'a dyn EnvFactory,
    episodes: usize,
    seed: u64,
    every: u64,
    next: u64,
    target: Option<f64>,
    start: std::time::Instant,
}

impl<'a> EvalSchedule<'a> {
    /// Evaluates `episodes` episodes of environments from `env` every `every` env steps (0:
    /// only at the end); with a `target`, training may stop once an evaluation reaches it.
    pub(crate) fn new(
        env: &'a dyn EnvFactory,
        episodes: usize,
        seed: u64,
        every: u64,
        target: Option<f64>,
    ) -> Self {
        EvalSchedule {
            env,
            episodes,
            seed,
            every,
            next: if every > 0 { every } else { u64::MAX },
            target,
            start: std::time::Instant::now(),
        }
    }

    /// Evaluates if `report.env_steps` reached the next evaluation point; returns whether
    /// training should stop (the evaluation reached the target return).
    pub(crate) fn maybe(
        &mut self,
        agent: &mut dyn crate::agent::Agent,
        report: &mut TrainReport,
    ) -> ember_core::Result<bool> {
        if report.env_steps < self.next || self.episodes == 0 {
            return Ok(false);
        }
        self.next += self.every;
        self.run(agent, report)?;
        let last = report.evals.last().map(|e| e.mean_return);
        Ok(matches!((self.target, last), (Some(t), Some(r)) if r >= t))
    }

    /// The final evaluation (unless one just ran) and the report's totals.
    pub(crate) fn finish(
        &mut self,
        agent: &mut dyn crate::agent::Agent,
        mut report: TrainReport,
        episodes: &EpisodeTracker,
    ) -> ember_core::Result<TrainReport> {
        if self.episodes > 0 && report.evals.last().map(|e| e.env_steps) != Some(report.env_steps) {
            self.run(agent, &mut report)?;
        }
        report.episodes = episodes.episodes;
        report.recent_train_return = episodes.recent_mean();
        report.wall_secs = self.start.elapsed().as_secs_f64();
        Ok(report)
    }

    fn run(
        &self,
        agent: &mut dyn crate::agent::Agent,
        report: &mut TrainReport,
    ) -> ember_core::Result<()> {
        let seed = self.seed.wrapping_add(1_000_000);
        let result = crate::evaluate::evaluate(agent, self.env, self.episodes, seed)?;
        report.evals.push(EvalPoint {
            env_steps: report.env_steps,
            mean_return: result.mean_return(),
        });
        Ok(())
    }
}

/// `eval_episodes = 0` turns evaluation off, which a `target_return` needs.
pub(crate) fn check_eval_settings(episodes: usize, target: Option<f64>) -> ember_core::Result<()> {
    if let Some(t) = target {
        ember_core::Error::check_finite(|| "target_return".into(), t)?;
        if episodes == 0 {
            return Err(ember_core::Error::invalid(
                "eval_episodes",
                0,
                ">= 1 (target_return stops training at an evaluation)",
            ));
        }
    }
    Ok(())
}
