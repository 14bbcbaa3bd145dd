//! `ember eval`: a run's final (or best) policy on fresh episodes, and GIFs of them.

use anyhow::{Context, Result, bail};
use emberlab_algo::{ActionBuf, Agent};
use emberlab_core::Env;
use emberlab_run::{devices, load_config, load_weights, obs_normalizer};
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
    if emberlab_env::is_atari_id(&config.env) {
        return atari(args, &config);
    }
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
    let mut learner = config.build_learner(
        env.observation_space(),
        env.action_space(),
        &devices(&device)?,
    )?;
    let from = load_weights(learner.as_mut(), &args.run, args.best)?;
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

/// Whole games of an Atari run (`emberlab_env::AtariEnv`, stacks of 4 as in training,
/// [`emberlab_algo::play_frames`]) and their scores (unclipped); the first game drawn as the
/// agent sees it (84×84 gray) when `args.gif` asks.
#[cfg(feature = "gym")]
fn atari(args: &EvalArgs, config: &emberlab_run::RunConfig) -> Result<Vec<f64>> {
    use super::train::{ATARI_STACK, atari_games};
    let games = atari_games(&config.env);
    let mut env = emberlab_env::FrameVecEnv::from_factory(&games, 1, ATARI_STACK)?;
    let device = args.device.clone().unwrap_or_else(|| config.device.clone());
    let mut learner =
        config.build_pixel_learner(env.obs_shape(), env.actions(), &devices(&device)?)?;
    load_weights(learner.as_mut(), &args.run, args.best)?;
    let [_, h, w] = env.frame_shape();
    let frame = h * w;
    // The first game's newest frame of every stack, gray turned into RGB.
    let mut frames = Vec::new();
    let mut watch = |_: usize, stack: &[u8]| {
        if args.gif.is_some() {
            let gray = &stack[stack.len() - frame..];
            frames.push(gray.iter().flat_map(|&g| [g, g, g]).collect::<Vec<u8>>());
        }
    };
    let agent = learner.agent();
    let play = emberlab_algo::play_frames;
    // The first game alone, so that its GIF is written (and its frames freed) before the
    // others are played.
    let mut returns = play(agent, &mut env, 1, args.seed, args.stochastic, &mut watch)?.returns;
    if let Some(path) = &args.gif {
        crate::render::render_rgb_gif(&frames, (w as u32, h as u32), path, 15, &config.env)
            .with_context(|| format!("cannot render {}", path.display()))?;
    }
    drop(frames);
    if args.episodes > 1 {
        let (n, seed) = (args.episodes - 1, args.seed.wrapping_add(1));
        let rest = play(agent, &mut env, n, seed, args.stochastic, &mut |_, _| {})?;
        returns.extend(rest.returns);
    }
    Ok(returns)
}

#[cfg(not(feature = "gym"))]
fn atari(_: &EvalArgs, config: &emberlab_run::RunConfig) -> Result<Vec<f64>> {
    bail!(
        "{} runs in Python workers, which need the `gym` feature: rebuild ember with \
         `--features gym`",
        config.env
    )
}
