//! `ember train`: drives a [`Trainer`] step by step, writing metrics, evaluations,
//! TensorBoard events, the best weights and exact checkpoints into the run folder, and
//! resumes from the last checkpoint bit for bit.

use super::progress::{Output, Progress};
use crate::evaluations::{EvalLog, EvalRow};
use crate::metrics::{MetricsLog, Row};
use crate::plot::{Curve, plot_curves};
use crate::tensorboard::EventWriter;
use anyhow::{Context, Result, anyhow};
use emberlab_algo::checkpoint::{existing_dir, save_checkpoint, write_dir_atomically};
use emberlab_algo::{
    CheckpointInfo, OffPolicyLearner, OffPolicyTrainer, OnPolicyTrainer, TrainReport, Trainer,
};
use emberlab_env::{SyncVecEnv, VecEnv};
use emberlab_run::RunConfig;
use emberlab_run::{BEST, CHECKPOINT};
use emberlab_run::{Trainee, devices, metric_names};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Why training stopped without finishing.
#[derive(Debug)]
pub struct Interrupted {
    /// Env steps of the checkpoint written on the way out.
    pub env_steps: u64,
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "interrupted at {} env steps (checkpoint written)",
            self.env_steps
        )
    }
}

impl std::error::Error for Interrupted {}

/// An error that happened while training (not a mistake in the command): exit code 1.
#[derive(Debug)]
pub struct Runtime(pub anyhow::Error);

impl std::fmt::Display for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for Runtime {}

fn runtime(e: impl Into<anyhow::Error>) -> anyhow::Error {
    anyhow::Error::new(Runtime(e.into()))
}

/// Trains the run in `dir` (created beforehand), from its last checkpoint if `resume`.
///
/// # Errors
/// A set-up problem (environment, device, a missing or damaged checkpoint: the run folder
/// is left as it was); a [`Runtime`] error during training; [`Interrupted`] after Ctrl-C.
pub fn train(
    dir: &Path,
    config: &RunConfig,
    resume: bool,
    out: Output,
    stop: &AtomicBool,
) -> Result<TrainReport> {
    let devices = devices(&config.device)?;
    let session = Session {
        dir,
        config,
        resume,
        out,
        stop,
    };
    if emberlab_env::is_atari_id(&config.env) {
        return atari(config, &devices, session);
    }
    let mut env = SyncVecEnv::from_id(&config.env, config.num_envs).map_err(|e| {
        anyhow!(
            "{e}; known environments: {}",
            emberlab_env::ids().join(", ")
        )
    })?;
    let eval = emberlab_env::factory(&config.env)?;
    let (obs, act) = (
        env.single_observation_space().clone(),
        env.single_action_space().clone(),
    );
    let mut learner = config.build_learner(&obs, &act, &devices)?;
    match (learner.trainee(), &config.off_policy, &config.on_policy) {
        (Trainee::OffPolicy(l), Some(tc), _) => off(l, &mut env, eval.as_ref(), tc, session),
        (Trainee::OnPolicy(mut l), _, Some(tc)) => {
            let t = OnPolicyTrainer::new(&mut l, &mut env, eval.as_ref(), tc)?;
            session.drive(Box::new(t))
        }
        _ => Err(anyhow!(
            "config for {} has the wrong trainer section",
            config.algo
        )),
    }
}

fn off(
    mut learner: &mut dyn OffPolicyLearner,
    env: &mut SyncVecEnv,
    eval: &dyn emberlab_env::EnvFactory,
    tc: &emberlab_algo::OffPolicyConfig,
    session: Session<'_>,
) -> Result<TrainReport> {
    let mut replay = tc.build_replay(env)?;
    let t = OffPolicyTrainer::new(&mut learner, env, &mut replay, eval, tc)?;
    session.drive(Box::new(t))
}

/// Frames stacked per observation on Atari (SB3 zoo's `frame_stack: 4`).
#[cfg(feature = "gym")]
pub(crate) const ATARI_STACK: usize = 4;

/// Games of the Atari id `id` through SB3's `AtariWrapper` (`emberlab_env::AtariEnv`, each
/// in a worker process of its own), as training evaluates and `ember eval` plays them.
#[cfg(feature = "gym")]
pub(crate) fn atari_games(id: &str) -> impl emberlab_env::FrameEnvFactory + use<> {
    use emberlab_env::{AtariConfig, AtariEnv, FrameEnv};
    let id = id.to_owned();
    move || -> emberlab_core::Result<Box<dyn FrameEnv>> {
        Ok(Box::new(AtariEnv::new(&id, &AtariConfig::default())?))
    }
}

/// One game of the Atari id `id`, stacked as in training (`ember eval` plays it; `ember
/// export` reads the policy's frame and action shapes from it).
///
/// # Errors
/// The game's worker cannot start (no Python with `ale-py`, an unknown game).
#[cfg(feature = "gym")]
pub(crate) fn one_atari_game(id: &str) -> Result<emberlab_env::FrameVecEnv> {
    Ok(emberlab_env::FrameVecEnv::from_factory(
        &atari_games(id),
        1,
        ATARI_STACK,
    )?)
}

/// The error of an Atari run asked of a build without Python workers.
#[cfg(not(feature = "gym"))]
pub(crate) fn atari_needs_gym(id: &str) -> anyhow::Error {
    anyhow!(
        "{id}: Atari games run in Python workers, which need the `gym` feature: rebuild \
         ember with `--features gym`"
    )
}

/// An Atari game through SB3's `AtariWrapper` (`emberlab_env::AtariEnv`), `num_envs`
/// games in one worker process per core, stacked by 4 frames: frame replay and the image off-policy loop for DQN, the
/// image on-policy loop for PPO and A2C.
#[cfg(feature = "gym")]
fn atari(
    config: &RunConfig,
    devices: &emberlab_algo::Devices,
    session: Session<'_>,
) -> Result<TrainReport> {
    use emberlab_env::{AtariConfig, AtariEnv, FrameEnv};
    let played = AtariEnv::games(&config.env, &AtariConfig::default(), config.num_envs)?;
    let played = played.into_iter().map(|g| Box::new(g) as Box<dyn FrameEnv>);
    let mut env = emberlab_env::FrameVecEnv::new(played.collect(), ATARI_STACK)?;
    // Evaluation games, each in a worker of its own.
    let games = atari_games(&config.env);
    let (stack, actions) = (env.obs_shape(), env.actions());
    // What the policy reads and does, for `ember export` and `emberlab.load_policy`
    // (written on resume too, for runs started before the file was).
    emberlab_run::FrameSpaces { stack, actions }.save(session.dir)?;
    let mut learner = config.build_pixel_learner(stack, actions, devices)?;
    match (learner.trainee(), &config.off_policy, &config.on_policy) {
        (Trainee::OffPolicy(mut l), Some(tc), _) => {
            let frame = env.frame_shape().iter().product();
            let gamma = l.gamma().unwrap_or(0.99);
            let mut replay =
                tc.replay
                    .build_frames(frame, ATARI_STACK, env.num_envs(), gamma, tc.seed)?;
            let t = emberlab_algo::FrameOffPolicyTrainer::new(
                &mut l,
                &mut env,
                &mut replay,
                &games,
                tc,
            )?;
            session.drive(Box::new(t))
        }
        (Trainee::OnPolicy(mut l), _, Some(tc)) => {
            let t = emberlab_algo::FrameOnPolicyTrainer::new(&mut l, &mut env, &games, tc)?;
            session.drive(Box::new(t))
        }
        _ => Err(anyhow!(
            "config for {} has the wrong trainer section",
            config.algo
        )),
    }
}

#[cfg(not(feature = "gym"))]
fn atari(config: &RunConfig, _: &emberlab_algo::Devices, _: Session<'_>) -> Result<TrainReport> {
    Err(atari_needs_gym(&config.env))
}

struct Session<'a> {
    dir: &'a Path,
    config: &'a RunConfig,
    resume: bool,
    out: Output,
    stop: &'a AtomicBool,
}

/// The next multiple of `every` above `steps` (`u64::MAX` for `every == 0`).
fn next_multiple(steps: u64, every: u64) -> u64 {
    steps
        .checked_div(every)
        .map_or(u64::MAX, |k| (k + 1).saturating_mul(every))
}

impl Session<'_> {
    fn drive(self, mut t: Box<dyn Trainer + '_>) -> Result<TrainReport> {
        let (dir, config) = (self.dir, self.config);
        let names = metric_names(&config.algo);
        let ckpt = dir.join(CHECKPOINT);
        let from = existing_dir(&ckpt);
        let never_started = |dir: &Path| {
            crate::metrics::read_metrics_csv(&dir.join(crate::metrics::METRICS_CSV))
                .map_or(true, |rows| rows.is_empty())
        };
        let (mut metrics, mut evals) = match (self.resume, from) {
            (true, Some(from)) if !from.join("trainer.state").exists() => {
                return Err(anyhow!(
                    "{} holds weights only (the environment `{}` has no exact snapshots): \
                     this run cannot be resumed; evaluate it with `ember eval {}`",
                    from.display(),
                    config.env,
                    dir.display()
                ));
            }
            (true, Some(from)) => {
                t.load_state(&from).with_context(|| {
                    format!(
                        "cannot resume from {} (the run folder is left untouched)",
                        from.display()
                    )
                })?;
                let at = t.report().env_steps;
                (MetricsLog::resume(dir, at)?, EvalLog::resume(dir, at)?)
            }
            // Killed before its first checkpoint: nothing was learned, so starting over
            // is the exact continuation.
            (true, None) if never_started(dir) => {
                for f in [
                    crate::metrics::METRICS_CSV,
                    crate::metrics::METRICS_JSONL,
                    crate::evaluations::EVALUATIONS_CSV,
                ] {
                    let _ = std::fs::remove_file(dir.join(f));
                }
                (MetricsLog::create(dir, names)?, EvalLog::create(dir)?)
            }
            (true, None) => {
                return Err(anyhow!(
                    "{} has metrics but no checkpoint folder `{CHECKPOINT}` to resume from (was it deleted?)",
                    dir.display()
                ));
            }
            (false, _) => (MetricsLog::create(dir, names)?, EvalLog::create(dir)?),
        };
        if !self.out.quiet && !self.out.json {
            eprintln!(
                "{} {} on {} ({}) at {} of {} env steps, seed {} → {}",
                if self.resume { "resuming" } else { "training" },
                config.algo,
                config.env,
                config.device,
                t.report().env_steps,
                config.total_steps(),
                config.seed(),
                dir.display()
            );
        }
        // Exact checkpoints need snapshots of the environments (and the learner's training
        // state); without them (a user's environment that has none) checkpoints hold the
        // weights only and the run cannot be resumed.
        let mut exact = true;
        if !self.resume || t.report().env_steps == 0 {
            // A checkpoint from the first instant: a run killed at any point resumes.
            match save(&mut *t, &ckpt) {
                Ok(()) => {}
                Err(emberlab_core::Error::Unavailable { what, hint }) => {
                    exact = false;
                    eprintln!(
                        "warning: {what} is not available ({hint}); checkpoints of this run \
                         hold its weights only and it cannot be resumed"
                    );
                    save_weights(&mut *t, &ckpt).map_err(runtime)?;
                }
                Err(e) => return Err(runtime(e)),
            }
        }
        let save = |t: &mut dyn Trainer, ckpt: &Path| {
            if exact {
                save(t, ckpt)
            } else {
                save_weights(t, ckpt)
            }
        };
        let mut tb = EventWriter::create(dir)?;
        let mut progress = Progress::new(config.total_steps(), self.out);
        let start_steps = t.report().env_steps;
        let (start_updates, session) = (t.report().updates, std::time::Instant::now());
        let mut next_log = next_multiple(start_steps, config.log_every);
        let mut next_save = next_multiple(start_steps, config.save_every);
        let mut seen = t.report().evals.len();
        let mut best = t
            .report()
            .evals
            .iter()
            .map(|e| e.mean_return)
            .fold(f64::NEG_INFINITY, f64::max);
        let mut saved_at = None;
        while !t.is_done() {
            if self.stop.load(Ordering::SeqCst) {
                let at = t.report().env_steps;
                if saved_at != Some(at) {
                    save(&mut *t, &ckpt).map_err(runtime)?;
                }
                progress.finish();
                return Err(anyhow::Error::new(Interrupted { env_steps: at }));
            }
            t.step().map_err(runtime)?;
            let r = t.report();
            let steps = r.env_steps;
            for e in &r.evals[seen..] {
                log_eval(e, &mut evals, &mut tb, &mut progress)?;
            }
            let new_best = r.evals[seen..]
                .iter()
                .map(|e| e.mean_return)
                .fold(f64::NEG_INFINITY, f64::max);
            seen = r.evals.len();
            if steps >= next_log {
                let secs = session.elapsed().as_secs_f64().max(1e-9);
                let row = Row {
                    env_steps: steps,
                    updates: r.updates,
                    episodes: r.episodes,
                    wall_secs: r.wall_secs,
                    env_steps_per_sec: (steps - start_steps) as f64 / secs,
                    updates_per_sec: (r.updates - start_updates) as f64 / secs,
                    train_return: Some(r.recent_train_return).filter(|x| x.is_finite()),
                    eval_return: r.evals.last().map(|e| e.mean_return),
                    extra: names
                        .iter()
                        .map(|n| r.last_metrics.get(n).unwrap_or(f64::NAN))
                        .collect(),
                };
                metrics.append(&row)?;
                let mut scalars: Vec<(String, f64)> = vec![
                    ("train/return".into(), r.recent_train_return),
                    ("speed/env_steps_per_sec".into(), row.env_steps_per_sec),
                ];
                scalars.extend(
                    names
                        .iter()
                        .zip(&row.extra)
                        .map(|(n, &v)| (format!("loss/{n}"), v)),
                );
                let scalars: Vec<(&str, f64)> = scalars
                    .iter()
                    .filter(|(_, v)| v.is_finite())
                    .map(|(n, v)| (n.as_str(), *v))
                    .collect();
                tb.scalars(steps, &scalars)?;
                tb.flush()?;
                progress.row(&row, config.algo.as_str());
                next_log = next_multiple(steps, config.log_every);
            }
            progress.tick(r);
            if new_best > best {
                best = new_best;
                save_best(&mut *t, &dir.join(BEST), steps).map_err(runtime)?;
            }
            if steps >= next_save {
                save(&mut *t, &ckpt).map_err(runtime)?;
                saved_at = Some(steps);
                next_save = next_multiple(steps, config.save_every);
            }
        }
        let at = t.report().env_steps;
        if saved_at != Some(at) {
            save(&mut *t, &ckpt).map_err(runtime)?;
        }
        let seen_before = seen;
        let report = t.finish().map_err(runtime)?;
        for e in &report.evals[seen_before.min(report.evals.len())..] {
            log_eval(e, &mut evals, &mut tb, &mut progress)?;
        }
        tb.flush()?;
        progress.finish();
        if let Err(e) = draw_curve(dir, config) {
            eprintln!("warning: {e:#}");
        }
        Ok(report)
    }
}

/// An evaluation into `evaluations.csv`, TensorBoard and the progress display.
fn log_eval(
    e: &emberlab_algo::EvalPoint,
    evals: &mut EvalLog,
    tb: &mut EventWriter,
    progress: &mut Progress,
) -> Result<()> {
    evals.append(&EvalRow {
        env_steps: e.env_steps,
        mean_return: e.mean_return,
        std_return: e.std_return,
        episodes: e.episodes as u64,
        mean_length: e.mean_length,
        truncated: e.truncated.map(|t| t as u64),
    })?;
    tb.scalars(
        e.env_steps,
        &[
            ("eval/mean_return", e.mean_return),
            ("eval/std_return", e.std_return),
        ],
    )?;
    progress.eval(e.env_steps, e.mean_return);
    Ok(())
}

/// The full state, atomically: a crash at any instant leaves the previous or this one.
fn save(t: &mut dyn Trainer, ckpt: &Path) -> emberlab_core::Result<()> {
    write_dir_atomically(ckpt, |tmp| t.save_state(tmp))
}

/// The weights alone (for runs whose environments have no snapshots), atomically.
fn save_weights(t: &mut dyn Trainer, dir: &Path) -> emberlab_core::Result<()> {
    let env_steps = t.report().env_steps;
    save_best(t, dir, env_steps)
}

/// The weights of the best evaluation (safetensors, loadable by any learner of the config).
fn save_best(t: &mut dyn Trainer, best: &Path, env_steps: u64) -> emberlab_core::Result<()> {
    let updates = t.report().updates;
    let normalizer = t.obs_normalizer();
    match t.checkpoint() {
        Some(c) => save_checkpoint(
            c,
            best,
            &CheckpointInfo { env_steps, updates },
            normalizer.as_ref(),
        ),
        None => Ok(()),
    }
}

/// `curve.png`: training return and evaluations over env steps, from the run's files.
pub fn draw_curve(dir: &Path, config: &RunConfig) -> Result<()> {
    let points = crate::metrics::read_metrics_csv(&dir.join(crate::metrics::METRICS_CSV))?
        .into_iter()
        .filter_map(|(s, r)| r.map(|r| (s as f64, r)))
        .collect();
    let evals =
        crate::evaluations::read_evaluations_csv(&dir.join(crate::evaluations::EVALUATIONS_CSV))?
            .into_iter()
            .map(|(s, r)| (s as f64, r))
            .collect();
    let curve = Curve {
        label: format!("{} s{}", config.algo, config.seed()),
        points,
        evals,
    };
    let title = format!("{} on {}", config.algo.to_uppercase(), config.env);
    plot_curves(&dir.join("curve.png"), &title, &[curve]).context("cannot draw curve.png")
}
