//! `ember eval`: a run's final (or best) policy on fresh episodes, and GIFs of them.

use super::learners::{AnyLearner, devices};
use super::run_dir::{BEST, CHECKPOINT, load_config};
use anyhow::{Context, Result, anyhow, bail};
use emberlab_algo::checkpoint::existing_dir;
use emberlab_algo::{ActionBuf, Agent, load_checkpoint};
use emberlab_core::Env;
use std::path::{Path, PathBuf};

/// What `ember eval` was asked.
#[derive(Clone, Debug)]
pub struct EvalArgs {
    /// The run folder.
    pub run: PathBuf,
    /// Episodes to run.
    pub episodes: usize,
    /// The best evaluation's weights instead of the last checkpoint's.
    pub best: bool,
    /// Act with the behaviour policy (sampled actions, ε-greedy) instead of the greedy one.
    pub stochastic: bool,
    /// Another device than the run's.
    pub device: Option<String>,
    /// Seed of the first episode (episode `i` uses `seed + i`).
    pub seed: u64,
    /// Render the first episode to this GIF.
    pub gif: Option<PathBuf>,
}

/// The returns of the episodes.
pub fn eval(args: &EvalArgs) -> Result<Vec<f64>> {
    if args.episodes == 0 {
        bail!("invalid --episodes: got 0, expected >= 1");
    }
    let config = load_config(&args.run)?;
    let classic = crate::render::RENDER_ENVS.contains(&config.env.as_str());
    #[cfg(feature = "mujoco")]
    let mujoco = !classic && crate::mujoco_frames::is_mujoco(&config.env);
    #[cfg(not(feature = "mujoco"))]
    let mujoco = false;
    if args.gif.is_some() && !classic && !mujoco {
        // Say so before evaluating, in one line.
        bail!(
            "--gif cannot render {}: GIFs are drawn for {} and, in a build with --features \
             mujoco, the MuJoCo tasks (gym: environments have no renderer here)",
            config.env,
            crate::render::RENDER_ENVS.join(", ")
        );
    }
    let device = args.device.clone().unwrap_or_else(|| config.device.clone());
    let mut env = emberlab_env::make(&config.env)?;
    let mut learner = AnyLearner::build(
        &config,
        env.observation_space(),
        env.action_space(),
        &devices(&device)?,
    )?;
    let from = load_weights(&mut learner, &args.run, args.best)?;
    let normalizer = obs_normalizer(&config, &from, env.observation_space().flat_dim())?;
    let agent = learner.agent();
    let mut returns = Vec::with_capacity(args.episodes);
    for i in 0..args.episodes {
        let record = i == 0 && args.gif.is_some();
        let (ret, frames, taken) = episode(
            agent,
            env.as_mut(),
            normalizer.as_ref(),
            args.seed + i as u64,
            args.stochastic,
            record,
        )?;
        returns.push(ret);
        if let (true, Some(path)) = (record, &args.gif) {
            if mujoco {
                gif_of_mujoco(&config.env, args.seed, &taken, &frames, path)?;
            } else {
                crate::render::render_gif(&config.env, &frames, path, 30)
                    .with_context(|| format!("cannot render {}", path.display()))?;
            }
        }
    }
    Ok(returns)
}

/// The observation statistics saved beside a run's weights in `from`, when the run learned
/// on normalised observations: its policy acts through them.
pub(super) fn obs_normalizer(
    config: &super::run_config::RunConfig,
    from: &Path,
    obs_dim: usize,
) -> Result<Option<emberlab_env::ObsNormalizer>> {
    let normalize = config.on_policy.as_ref().and_then(|c| c.normalize.as_ref());
    let Some(nc) = normalize.filter(|n| n.observations) else {
        return Ok(None);
    };
    let n = emberlab_env::ObsNormalizer::new(obs_dim, nc.clip_obs, nc.epsilon);
    let path = from.join(emberlab_env::OBS_NORMALIZER_FILE);
    n.load_file(&path)
        .with_context(|| format!("cannot load the observation statistics {}", path.display()))?;
    Ok(Some(n))
}

/// Loads the last checkpoint's training state, or the best weights; returns the folder.
pub(super) fn load_weights(learner: &mut AnyLearner, run: &Path, best: bool) -> Result<PathBuf> {
    if best {
        let dir = run.join(BEST);
        if existing_dir(&dir).is_none() {
            bail!(
                "{} has no best weights yet (written at the first evaluation that improves)",
                run.display()
            );
        }
        load_checkpoint(learner.checkpoint(), &dir)
            .with_context(|| format!("cannot load {}", dir.display()))?;
        return Ok(dir);
    }
    let dir = existing_dir(&run.join(CHECKPOINT))
        .ok_or_else(|| anyhow!("{} has no checkpoint yet", run.display()))?;
    if !dir.join("learner").is_dir() {
        // A run whose environment has no snapshots keeps weights only.
        load_checkpoint(learner.checkpoint(), &dir)
            .with_context(|| format!("cannot load {}", dir.display()))?;
        return Ok(dir);
    }
    learner
        .training_state()
        .load_state(&dir.join("learner"))
        .with_context(|| format!("cannot load the checkpoint in {}", dir.display()))?;
    Ok(dir)
}

/// A GIF of a MuJoCo episode: its actions replayed from `seed` and drawn offscreen.
#[cfg(feature = "mujoco")]
fn gif_of_mujoco(
    env_id: &str,
    seed: u64,
    actions: &[Vec<f32>],
    observations: &[Vec<f32>],
    path: &Path,
) -> Result<()> {
    let (frames, fps) = crate::mujoco_frames::frames(env_id, seed, actions, observations)?;
    let (w, h) = crate::mujoco_frames::SIZE;
    crate::render::render_rgb_gif(&frames, (w as u32, h as u32), path, fps, env_id)
        .with_context(|| format!("cannot render {}", path.display()))
}

#[cfg(not(feature = "mujoco"))]
fn gif_of_mujoco(_: &str, _: u64, _: &[Vec<f32>], _: &[Vec<f32>], _: &Path) -> Result<()> {
    unreachable!("MuJoCo tasks exist only with the mujoco feature")
}

/// An episode's return, and if recorded, its observations and continuous actions.
type Episode = (f64, Vec<Vec<f32>>, Vec<Vec<f32>>);

/// One episode to its end (at most 100,000 steps); its return and, if `record`, every
/// observation and every continuous action taken. The agent sees observations through
/// `normalizer` if given; frames are the environment's own.
fn episode(
    agent: &mut dyn Agent,
    env: &mut dyn Env,
    normalizer: Option<&emberlab_env::ObsNormalizer>,
    seed: u64,
    stochastic: bool,
    record: bool,
) -> Result<Episode> {
    let mut obs = env.reset(Some(seed))?;
    let mut frames = Vec::new();
    let mut taken = Vec::new();
    let mut actions = ActionBuf::for_space(env.action_space());
    let mut ret = 0.0;
    for _ in 0..100_000 {
        if record {
            frames.push(obs.clone());
        }
        let mut seen = obs.clone();
        if let Some(n) = normalizer {
            n.normalize(&mut seen);
        }
        agent.act(&seen, stochastic, &mut actions)?;
        let action = match &actions {
            ActionBuf::Discrete(a) => emberlab_core::Action::Discrete(a[0]),
            ActionBuf::Continuous(a) => {
                if record {
                    taken.push(a.clone());
                }
                emberlab_core::Action::Continuous(a)
            }
        };
        let step = env.step(action)?;
        ret += step.reward;
        obs = step.obs;
        if step.terminated || step.truncated {
            if record {
                frames.push(obs);
            }
            return Ok((ret, frames, taken));
        }
    }
    Ok((ret, frames, taken))
}
