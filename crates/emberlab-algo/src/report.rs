//! What a training run reports.

use crate::learner::{Metrics, Progress};
use emberlab_core::state::{StateReader, StateWriter};
use emberlab_core::{Error, Result};
use emberlab_env::EnvFactory;

/// One evaluation during training.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalPoint {
    /// Env steps collected when the evaluation ran.
    pub env_steps: u64,
    /// Mean return of the deterministic evaluation episodes.
    pub mean_return: f64,
    /// Standard deviation of their returns.
    pub std_return: f64,
    /// Number of episodes.
    pub episodes: usize,
    /// Mean episode length in steps (NaN when read from a state saved before lengths were
    /// kept).
    pub mean_length: f64,
    /// Episodes cut short rather than ended ([`crate::EvalResult::truncated`]); `None` when
    /// read from a state saved before it was kept.
    pub truncated: Option<usize>,
}

/// Set in the saved count of evaluations when each carries its mean length and truncated
/// count (states written before these were kept lack it and are read without them).
const EVALS_WITH_LENGTHS: u64 = 1 << 62;

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
    /// Rounds of updates skipped because the sampler could not yet draw a batch (fewer
    /// transitions stored than a batch without replacement takes; prioritized replay
    /// whose priorities are all zero).
    pub sample_waits: u64,
    /// The learner's counters after this call, over every call.
    pub progress: Progress,
    /// Wall-clock seconds.
    pub wall_secs: f64,
}

impl TrainReport {
    /// Appends the counters, evaluations and last metrics (not `progress` or `wall_secs`,
    /// which the trainer restores from elsewhere).
    pub(crate) fn save_state(&self, out: &mut StateWriter) {
        out.u64(self.env_steps)
            .u64(self.updates)
            .u64(self.episodes)
            .f64(self.recent_train_return)
            .u64(self.sample_waits)
            .u64(self.evals.len() as u64 | EVALS_WITH_LENGTHS);
        for e in &self.evals {
            out.u64(e.env_steps)
                .f64(e.mean_return)
                .f64(e.std_return)
                .usize(e.episodes)
                .f64(e.mean_length)
                .u64(e.truncated.map_or(u64::MAX, |t| t as u64));
        }
        out.usize(self.last_metrics.0.len());
        for &(name, value) in &self.last_metrics.0 {
            out.str(name).f64(value);
        }
    }

    /// Restores what [`TrainReport::save_state`] wrote.
    pub(crate) fn load_state(&mut self, src: &mut StateReader<'_>) -> Result<()> {
        self.env_steps = src.u64()?;
        self.updates = src.u64()?;
        self.episodes = src.u64()?;
        self.recent_train_return = src.f64()?;
        self.sample_waits = src.u64()?;
        let word = src.u64()?;
        let with_lengths = word & EVALS_WITH_LENGTHS != 0;
        let n = (word & !EVALS_WITH_LENGTHS).min(1 << 20);
        self.evals = (0..n)
            .map(|_| {
                let mut e = EvalPoint {
                    env_steps: src.u64()?,
                    mean_return: src.f64()?,
                    std_return: src.f64()?,
                    episodes: src.usize()?,
                    mean_length: f64::NAN,
                    truncated: None,
                };
                if with_lengths {
                    e.mean_length = src.f64()?;
                    let t = src.u64()?;
                    e.truncated = (t != u64::MAX).then_some(t as usize);
                }
                Ok(e)
            })
            .collect::<Result<_>>()?;
        let n = src.usize()?;
        let mut metrics = Metrics::default();
        for _ in 0..n.min(1 << 10) {
            let name = metric_name(&src.string()?);
            metrics.push(name, src.f64()?);
        }
        self.last_metrics = metrics;
        Ok(())
    }

    /// The mean return of the last evaluation, if any ran.
    pub fn final_eval(&self) -> Option<f64> {
        self.evals.last().map(|e| e.mean_return)
    }
}

/// A metric name as `&'static str` (what [`Metrics`] holds): names are few and fixed per
/// learner, so each distinct one read back from a snapshot is interned once for the process.
fn metric_name(name: &str) -> &'static str {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock, PoisonError};
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(&known) = names.get(name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// Per-sub-environment episode bookkeeping (returns of running episodes, the last 20
/// finished ones), shared by the trainers and distributed actors.
#[derive(Clone, Debug)]
pub struct EpisodeTracker {
    running: Vec<f64>,
    recent: std::collections::VecDeque<f64>,
    pub(crate) episodes: u64,
}

impl EpisodeTracker {
    /// No episodes yet, for `num_envs` sub-environments.
    pub fn new(num_envs: usize) -> Self {
        EpisodeTracker {
            running: vec![0.0; num_envs],
            recent: Default::default(),
            episodes: 0,
        }
    }

    /// Adds a real (non-reset) step's reward; closes the episode when it ended.
    pub fn record(&mut self, env: usize, reward: f64, done: bool) {
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

    pub(crate) fn save_state(&self, out: &mut StateWriter) {
        let recent: Vec<f64> = self.recent.iter().copied().collect();
        out.f64s(&self.running).f64s(&recent).u64(self.episodes);
    }

    pub(crate) fn load_state(&mut self, src: &mut StateReader<'_>) -> Result<()> {
        let running = src.f64s(Some(self.running.len()))?;
        let recent = src.f64s(None)?;
        self.episodes = src.u64()?;
        self.running = running;
        self.recent = recent.into();
        Ok(())
    }

    /// Forgets the running episodes (their environments were reset mid-episode).
    pub fn drop_running(&mut self) {
        self.running.fill(0.0);
    }

    /// Episodes finished so far.
    pub fn episodes(&self) -> u64 {
        self.episodes
    }

    /// Mean return of the last (up to) 20 finished episodes; NaN before the first.
    pub fn recent_mean(&self) -> f64 {
        if self.recent.is_empty() {
            return f64::NAN;
        }
        self.recent.iter().sum::<f64>() / self.recent.len() as f64
    }
}

/// A borrowed factory as an owned one.
pub(crate) struct Borrowed<'a>(pub(crate) &'a dyn EnvFactory);

impl EnvFactory for Borrowed<'_> {
    fn make(&self) -> Result<Box<dyn emberlab_core::Env>> {
        self.0.make()
    }
}

/// What an evaluation runs on: fresh environments of a factory (vector or image ones).
pub(crate) trait Evaluator {
    /// `episodes` deterministic episodes of `agent`, episode `i` seeded with `seed + i`.
    fn evaluate(
        &self,
        agent: &mut dyn crate::agent::Agent,
        episodes: usize,
        seed: u64,
    ) -> Result<crate::evaluate::EvalResult>;
}

/// Vector environments of a factory.
fn evaluate_factory(
    factory: &dyn EnvFactory,
    agent: &mut dyn crate::agent::Agent,
    episodes: usize,
    seed: u64,
) -> Result<crate::evaluate::EvalResult> {
    crate::evaluate::evaluate(agent, factory, episodes, seed)
}

impl Evaluator for Borrowed<'_> {
    fn evaluate(
        &self,
        agent: &mut dyn crate::agent::Agent,
        episodes: usize,
        seed: u64,
    ) -> Result<crate::evaluate::EvalResult> {
        evaluate_factory(self.0, agent, episodes, seed)
    }
}

impl Evaluator for Box<dyn EnvFactory + '_> {
    fn evaluate(
        &self,
        agent: &mut dyn crate::agent::Agent,
        episodes: usize,
        seed: u64,
    ) -> Result<crate::evaluate::EvalResult> {
        evaluate_factory(self.as_ref(), agent, episodes, seed)
    }
}

/// Image environments of a factory, observed as stacks of `stack` frames.
pub(crate) struct FrameEval<'a> {
    pub(crate) factory: &'a dyn emberlab_env::FrameEnvFactory,
    pub(crate) stack: usize,
}

impl Evaluator for FrameEval<'_> {
    fn evaluate(
        &self,
        agent: &mut dyn crate::agent::Agent,
        episodes: usize,
        seed: u64,
    ) -> Result<crate::evaluate::EvalResult> {
        crate::evaluate::evaluate_frames(agent, self.factory, self.stack, episodes, seed)
    }
}

/// When and how the trainers evaluate: every `every` env steps and once at the end.
pub(crate) struct EvalSchedule<'a> {
    env: Box<dyn Evaluator + 'a>,
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
        env: Box<dyn Evaluator + 'a>,
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

    /// Appends the next evaluation point and the wall-clock seconds so far.
    pub(crate) fn save_state(&self, out: &mut StateWriter) {
        out.u64(self.next).f64(self.start.elapsed().as_secs_f64());
    }

    /// Puts the schedule where a snapshot says: the next evaluation point, and the clock
    /// going on from `secs` wall seconds (a value that is no duration counts as 0).
    pub(crate) fn restore(&mut self, next: u64, secs: f64) {
        let elapsed = std::time::Duration::try_from_secs_f64(secs).unwrap_or_default();
        let now = std::time::Instant::now();
        self.next = next;
        self.start = now.checked_sub(elapsed).unwrap_or(now);
    }

    /// Seconds since training started (over resumed runs).
    pub(crate) fn wall_secs(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Evaluates if `report.env_steps` reached the next evaluation point; returns whether
    /// training should stop (the evaluation reached the target return).
    pub(crate) fn maybe(
        &mut self,
        agent: &mut dyn crate::agent::Agent,
        report: &mut TrainReport,
    ) -> Result<bool> {
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
    ) -> Result<TrainReport> {
        if self.episodes > 0 && report.evals.last().map(|e| e.env_steps) != Some(report.env_steps) {
            self.run(agent, &mut report)?;
        }
        report.episodes = episodes.episodes;
        report.recent_train_return = episodes.recent_mean();
        report.wall_secs = self.start.elapsed().as_secs_f64();
        Ok(report)
    }

    fn run(&self, agent: &mut dyn crate::agent::Agent, report: &mut TrainReport) -> Result<()> {
        let seed = self.seed.wrapping_add(1_000_000);
        let result = self.env.evaluate(agent, self.episodes, seed)?;
        report.evals.push(EvalPoint {
            env_steps: report.env_steps,
            mean_return: result.mean_return(),
            std_return: result.std_return(),
            episodes: result.returns.len(),
            mean_length: result.mean_length(),
            truncated: Some(result.truncated_count()),
        });
        Ok(())
    }
}

/// `eval_episodes = 0` turns evaluation off, which a `target_return` needs.
pub(crate) fn check_eval_settings(episodes: usize, target: Option<f64>) -> Result<()> {
    if let Some(t) = target {
        Error::check_finite(|| "target_return".into(), t)?;
        if episodes == 0 {
            return Err(Error::invalid(
                "eval_episodes",
                0,
                ">= 1 (target_return stops training at an evaluation)",
            ));
        }
    }
    Ok(())
}

/// How [`after_steps`] reads a learner's counters and its weight checkpoints.
pub(crate) type LearnerCounters<L> = (
    fn(&mut L) -> crate::learner::Progress,
    fn(&mut L) -> Option<&mut dyn crate::checkpoint::Checkpoint>,
);

/// After a loop's env steps and updates, in every trainer: a checkpoint when due, the
/// report's episodes and returns, and an evaluation when due; whether it reached the target
/// return. `counters` and `weights` read the learner's [`crate::Progress`] and
/// [`crate::Checkpoint`] (the two learner traits each have their own).
pub(crate) fn after_steps<L: crate::agent::Agent>(
    learner: &mut L,
    (counters, weights): LearnerCounters<L>,
    report: &mut TrainReport,
    (checkpoints, episodes, evals): (
        &mut crate::checkpoint::Checkpointer,
        &EpisodeTracker,
        &mut EvalSchedule<'_>,
    ),
) -> Result<bool> {
    let crate::learner::Progress { env_steps, updates } = counters(learner);
    checkpoints.maybe(weights(learner), env_steps, updates)?;
    report.episodes = episodes.episodes;
    report.recent_train_return = episodes.recent_mean();
    report.progress = counters(learner);
    let reached = evals.maybe(learner, report)?;
    report.wall_secs = evals.wall_secs();
    Ok(reached)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(evals: Vec<EvalPoint>) -> TrainReport {
        TrainReport {
            env_steps: 300,
            updates: 7,
            evals,
            last_metrics: Metrics(vec![("loss", 0.5)]),
            ..TrainReport::default()
        }
    }

    fn point(env_steps: u64, truncated: Option<usize>) -> EvalPoint {
        EvalPoint {
            env_steps,
            mean_return: -3.5,
            std_return: 1.0,
            episodes: 4,
            mean_length: 812.25,
            truncated,
        }
    }

    #[test]
    fn evaluations_keep_their_lengths_through_a_state() {
        let saved = report(vec![point(100, Some(1)), point(200, None)]);
        let mut out = StateWriter::new();
        saved.save_state(&mut out);
        let mut back = TrainReport::default();
        let words = out.into_words();
        let mut src = StateReader::new(&words, "report");
        back.load_state(&mut src).unwrap();
        src.finish().unwrap();
        assert_eq!(back, saved);
    }

    #[test]
    fn states_saved_before_lengths_were_kept_still_load() {
        // The words an earlier version wrote: a plain count, four words per evaluation.
        let mut out = StateWriter::new();
        out.u64(300).u64(7).u64(0).f64(0.0).u64(0).usize(1);
        out.u64(100).f64(-3.5).f64(1.0).usize(4);
        out.usize(1).str("loss").f64(0.5);
        let words = out.into_words();
        let mut back = TrainReport::default();
        let mut src = StateReader::new(&words, "report");
        back.load_state(&mut src).unwrap();
        src.finish().unwrap();
        let e = &back.evals[0];
        assert_eq!((e.env_steps, e.mean_return, e.episodes), (100, -3.5, 4));
        assert!(e.mean_length.is_nan() && e.truncated.is_none());
        assert_eq!(back.last_metrics, Metrics(vec![("loss", 0.5)]));
    }
}
