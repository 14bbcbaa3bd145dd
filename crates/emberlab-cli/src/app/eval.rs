//! `ember eval`: a run's final (or best) policy on fresh episodes, and GIFs of them.

use anyhow::{Context, Result, bail};
use emberlab_algo::{ActionBuf, Agent, EvalResult};
use emberlab_core::Action;
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

/// The returns, lengths and cuts of the episodes.
pub fn eval(args: &EvalArgs) -> Result<EvalResult> {
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
    let mut agent = Normalized {
        agent: learner.agent(),
        normalizer: normalizer.as_ref(),
        seen: Vec::new(),
    };
    // The first episode's observations (the environment's own) and continuous actions.
    let (mut frames, mut taken) = (Vec::new(), Vec::new());
    let mut watch = |_: usize, obs: &[f32], action: Option<Action<'_>>| {
        frames.push(obs.to_vec());
        if let Some(Action::Continuous(a)) = action {
            taken.push(a.to_vec());
        }
    };
    let env = env.as_mut();
    let play = emberlab_algo::play_env;
    let mut played = if args.gif.is_some() {
        play(&mut agent, env, 1, args.seed, args.stochastic, &mut watch)?
    } else {
        play(
            &mut agent,
            env,
            1,
            args.seed,
            args.stochastic,
            &mut |_, _, _| {},
        )?
    };
    if let Some(path) = &args.gif {
        if mujoco {
            gif_of_mujoco(&config.env, args.seed, &taken, &frames, path)?;
        } else {
            crate::render::render_gif(&config.env, &frames, path, 30)
                .with_context(|| format!("cannot render {}", path.display()))?;
        }
    }
    if args.episodes > 1 {
        let (n, seed) = (args.episodes - 1, args.seed.wrapping_add(1));
        let rest = play(&mut agent, env, n, seed, args.stochastic, &mut |_, _, _| {})?;
        append(&mut played, rest);
    }
    Ok(played)
}

/// `more` episodes after those of `played`.
fn append(played: &mut EvalResult, more: EvalResult) {
    played.returns.extend(more.returns);
    played.lengths.extend(more.lengths);
    played.truncated.extend(more.truncated);
}

/// An agent that sees observations through a run's normalizer, when it has one.
struct Normalized<'a> {
    agent: &'a mut dyn Agent,
    normalizer: Option<&'a emberlab_env::ObsNormalizer>,
    seen: Vec<f32>,
}

impl Agent for Normalized<'_> {
    fn obs_dim(&self) -> usize {
        self.agent.obs_dim()
    }

    fn act(
        &mut self,
        obs: &[f32],
        explore: bool,
        out: &mut ActionBuf,
    ) -> emberlab_core::Result<()> {
        let Some(n) = self.normalizer else {
            return self.agent.act(obs, explore, out);
        };
        self.seen.clear();
        self.seen.extend_from_slice(obs);
        n.normalize(&mut self.seen);
        self.agent.act(&self.seen, explore, out)
    }
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

/// Whole games of an Atari run (`emberlab_env::AtariEnv`, stacks of 4 as in training,
/// [`emberlab_algo::play_frames`]) and their scores (unclipped); the first game drawn as the
/// emulator shows it (210×160 RGB) when `args.gif` asks.
#[cfg(feature = "gym")]
fn atari(args: &EvalArgs, config: &emberlab_run::RunConfig) -> Result<EvalResult> {
    let mut env = super::train::one_atari_game(&config.env)?;
    let device = args.device.clone().unwrap_or_else(|| config.device.clone());
    let mut learner =
        config.build_pixel_learner(env.obs_shape(), env.actions(), &devices(&device)?)?;
    load_weights(learner.as_mut(), &args.run, args.best)?;
    let agent = learner.agent();
    let play = emberlab_algo::play_frames;
    let quiet = &mut |_: usize, _: &mut emberlab_env::FrameVecEnv| Ok(());
    // The first game alone, drawn into its GIF as it is played.
    let mut played = match &args.gif {
        Some(path) => {
            let mut gif = None;
            let mut watch = |_: usize, env: &mut emberlab_env::FrameVecEnv| {
                draw_screen(env, &mut gif, path, &config.env)
            };
            let played = play(agent, &mut env, 1, args.seed, args.stochastic, &mut watch)?;
            gif.map(crate::render::RgbGif::finish)
                .unwrap_or_else(|| Err(anyhow::anyhow!("no frames to draw")))
                .with_context(|| format!("cannot render {}", path.display()))?;
            played
        }
        None => play(agent, &mut env, 1, args.seed, args.stochastic, quiet)?,
    };
    if args.episodes > 1 {
        let (n, seed) = (args.episodes - 1, args.seed.wrapping_add(1));
        let rest = play(agent, &mut env, n, seed, args.stochastic, quiet)?;
        append(&mut played, rest);
    }
    Ok(played)
}

/// Appends what game 0 of `env` shows now to the GIF at `path` (started at the first
/// frame): the emulator's RGB screen, or for games without one the newest frame of the
/// stack, gray turned into RGB.
#[cfg(feature = "gym")]
fn draw_screen<'a>(
    env: &mut emberlab_env::FrameVecEnv,
    gif: &mut Option<crate::render::RgbGif<'a>>,
    path: &'a Path,
    caption: &str,
) -> emberlab_core::Result<()> {
    let (rgb, [h, w]) = match env.screen(0)? {
        Some(screen) => screen,
        None => {
            let [_, h, w] = env.frame_shape();
            let stack = env.obs();
            let gray = &stack[stack.len() - h * w..];
            (gray.iter().flat_map(|&g| [g, g, g]).collect(), [h, w])
        }
    };
    let io = |e: anyhow::Error| emberlab_core::Error::io_other(path, format!("{e:#}"));
    let gif = match gif {
        Some(gif) => gif,
        None => {
            let size = (w as u32, h as u32);
            gif.insert(crate::render::RgbGif::create(path, size, 15, caption).map_err(io)?)
        }
    };
    gif.push(rgb).map_err(io)
}

#[cfg(not(feature = "gym"))]
fn atari(_: &EvalArgs, config: &emberlab_run::RunConfig) -> Result<EvalResult> {
    Err(super::train::atari_needs_gym(&config.env))
}
