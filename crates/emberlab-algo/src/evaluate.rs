//! Evaluation: deterministic episodes on a fresh environment.

use crate::agent::{ActionBuf, Agent};
use emberlab_core::{Action, Env, Error, Result};
use emberlab_env::{EnvFactory, FrameEnvFactory, FrameVecEnv};

/// Returns, lengths and cuts of evaluation episodes.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalResult {
    /// One undiscounted return per episode.
    pub returns: Vec<f64>,
    /// One length per episode.
    pub lengths: Vec<usize>,
    /// Per episode: it was cut short (a time limit, a frame budget or [`GAME_STEP_LIMIT`])
    /// rather than ended in a terminal state.
    pub truncated: Vec<bool>,
}

impl EvalResult {
    fn with_capacity(episodes: usize) -> Self {
        EvalResult {
            returns: Vec::with_capacity(episodes),
            lengths: Vec::with_capacity(episodes),
            truncated: Vec::with_capacity(episodes),
        }
    }

    fn push(&mut self, ret: f64, len: usize, truncated: bool) {
        self.returns.push(ret);
        self.lengths.push(len);
        self.truncated.push(truncated);
    }

    /// Mean episode length in steps (NaN for no episodes).
    pub fn mean_length(&self) -> f64 {
        self.lengths.iter().sum::<usize>() as f64 / self.lengths.len() as f64
    }

    /// Episodes cut short rather than ended (a greedy policy that stalls a game shows here).
    pub fn truncated_count(&self) -> usize {
        self.truncated.iter().filter(|&&t| t).count()
    }

    /// Mean return.
    pub fn mean_return(&self) -> f64 {
        self.returns.iter().sum::<f64>() / self.returns.len().max(1) as f64
    }

    /// Population standard deviation of the returns (0 for one episode).
    pub fn std_return(&self) -> f64 {
        let m = self.mean_return();
        let n = self.returns.len().max(1) as f64;
        (self.returns.iter().map(|r| (r - m) * (r - m)).sum::<f64>() / n).sqrt()
    }
}

/// Runs `episodes` deterministic episodes on a fresh environment from `env` (a factory:
/// `emberlab_env::factory("Pendulum-v1")?`, or a closure making the user's own environment);
/// episode `i` is reset with seed `seed + i`. An episode that has not ended after
/// [`GAME_STEP_LIMIT`] steps is cut there.
///
/// # Errors
/// Zero episodes, an observation width other than the agent's, or an error of the
/// environment or the agent.
pub fn evaluate(
    agent: &mut dyn Agent,
    env: &dyn EnvFactory,
    episodes: usize,
    seed: u64,
) -> Result<EvalResult> {
    if episodes == 0 {
        return Err(Error::invalid("evaluation episodes", 0, ">= 1"));
    }
    evaluate_env(agent, env.make()?.as_mut(), episodes, seed)
}

/// [`evaluate`] on an environment the caller made: [`play_env`] with greedy actions.
///
/// # Errors
/// As [`evaluate`].
pub fn evaluate_env(
    agent: &mut dyn Agent,
    env: &mut dyn Env,
    episodes: usize,
    seed: u64,
) -> Result<EvalResult> {
    play_env(agent, env, episodes, seed, false, &mut |_, _, _| {})
}

/// What [`play_env`] shows each observation to: `(episode, obs, action taken on it)`, and
/// `(episode, last obs, None)` at each episode's end.
pub type EpisodeWatcher<'a> = dyn FnMut(usize, &[f32], Option<Action<'_>>) + 'a;

/// Plays `episodes` episodes of `agent` on `env`: episode `i` starts from a reset with seed
/// `seed + i` and runs until it terminates, is truncated, or reaches [`GAME_STEP_LIMIT`]
/// steps (then counted as cut short). `explore` asks the agent for its exploring actions.
/// `watch(episode, obs, Some(action))` sees every observation with the action taken on it,
/// and `watch(episode, last_obs, None)` the observation an episode ended on (`ember eval
/// --gif` draws from them). The agent acts with denormals flushed, and a panic inside its
/// `act` is returned as an error.
///
/// # Errors
/// As [`evaluate`].
pub fn play_env(
    agent: &mut dyn Agent,
    env: &mut dyn Env,
    episodes: usize,
    seed: u64,
    explore: bool,
    watch: &mut EpisodeWatcher<'_>,
) -> Result<EvalResult> {
    if episodes == 0 {
        return Err(Error::invalid("evaluation episodes", 0, ">= 1"));
    }
    let mut actions = ActionBuf::for_space(env.action_space());
    let act_dim = env.action_space().flat_dim();
    let mut obs = vec![0.0; env.observation_space().flat_dim()];
    Error::check_len("agent observation width", obs.len(), agent.obs_dim())?;
    let mut result = EvalResult::with_capacity(episodes);
    for i in 0..episodes {
        env.reset_into(Some(seed.wrapping_add(i as u64)), &mut obs)?;
        let (mut ret, mut len, mut cut) = (0.0, 0usize, true);
        while len < GAME_STEP_LIMIT {
            crate::guard::run_learner(
                || "the agent's act during evaluation".into(),
                || agent.act(&obs, explore, &mut actions),
            )?;
            let action = actions.as_vec_actions().get(0, act_dim);
            watch(i, &obs, Some(action));
            let info = env.step_into(action, &mut obs)?;
            ret += info.reward;
            len += 1;
            if info.terminated || info.truncated {
                cut = !info.terminated;
                break;
            }
        }
        watch(i, &obs, None);
        result.push(ret, len, cut);
    }
    Ok(result)
}

/// Runs `episodes` deterministic games of `agent` on a fresh image environment from `env`,
/// observed as stacks of `stack` frames ([`FrameVecEnv`]): [`play_frames`] with greedy
/// actions. A game still running after [`GAME_STEP_LIMIT`] steps is cut there and counted
/// with the score it had (its length says so).
///
/// # Errors
/// Zero episodes, an observation length other than the agent's, or an error of the
/// environment or the agent (an agent without [`Agent::act_pixels`] among them).
pub fn evaluate_frames(
    agent: &mut dyn Agent,
    env: &dyn FrameEnvFactory,
    stack: usize,
    episodes: usize,
    seed: u64,
) -> Result<EvalResult> {
    if episodes == 0 {
        return Err(Error::invalid("evaluation episodes", 0, ">= 1"));
    }
    let mut env = FrameVecEnv::new(vec![env.make()?], stack)?;
    play_frames(agent, &mut env, episodes, seed, false, &mut |_, _| Ok(()))
}

/// Steps after which [`play_env`] and [`play_frames`] cut an episode or game that has not
/// ended (Atari's frame budget, 108,000 frames, ends a game within 27,000 steps).
pub const GAME_STEP_LIMIT: usize = 100_000;

/// What [`play_frames`] shows each position to, before the agent acts on it:
/// `(game, env)`, the stack in `env.obs()` and the picture in `env.screen(0)` (the position
/// a game ends on is not shown: the environment has started the next game by then). A
/// watcher should only look: stepping or resetting `env` changes the game played.
pub type GameWatcher<'a> = dyn FnMut(usize, &mut FrameVecEnv) -> Result<()> + 'a;

/// Plays `episodes` whole games of `agent` on `env` (one game, its stacks as observations):
/// game `i` starts from a reset with seed `seed + i` and runs until
/// [`emberlab_env::FrameStep::game_over`] (through lost lives, which end episodes for
/// learning but not games) or [`GAME_STEP_LIMIT`] steps, summing its scores. `explore`
/// asks the agent for its exploring actions; `watch(game, env)` sees every position
/// before the agent acts on it (`ember eval --gif` draws the first game's screens) and may
/// fail the game with its error.
///
/// # Errors
/// Zero episodes, an environment of more than one game, an observation length other than
/// the agent's, or an error of the environment or the agent (an agent without
/// [`Agent::act_pixels`] among them).
pub fn play_frames(
    agent: &mut dyn Agent,
    env: &mut FrameVecEnv,
    episodes: usize,
    seed: u64,
    explore: bool,
    watch: &mut GameWatcher<'_>,
) -> Result<EvalResult> {
    if episodes == 0 {
        return Err(Error::invalid("evaluation episodes", 0, ">= 1"));
    }
    Error::check_len("games played at once", 1, env.num_envs())?;
    let [c, h, w] = env.obs_shape();
    Error::check_len("agent observation length", c * h * w, agent.obs_dim())?;
    let mut actions = ActionBuf::Discrete(Vec::with_capacity(1));
    let mut result = EvalResult::with_capacity(episodes);
    for i in 0..episodes {
        env.reset(Some(seed.wrapping_add(i as u64)))?;
        let (mut ret, mut len, mut cut) = (0.0, 0usize, true);
        while len < GAME_STEP_LIMIT {
            watch(i, env)?;
            crate::guard::run_learner(
                || "the agent's act during evaluation".into(),
                || agent.act_pixels(env.obs(), explore, &mut actions),
            )?;
            let action = actions.discrete_mut("evaluation")?.first().copied();
            let action = action.ok_or_else(|| {
                Error::invalid("agent actions", "none", "one action per observation")
            })?;
            let step = env.step(&[action])?;
            ret += step.scores[0] as f64;
            len += 1;
            if step.game_over[0] {
                // A budget that runs out on the step a life is lost cuts the game too.
                cut = step.truncated[0];
                break;
            }
        }
        result.push(ret, len, cut);
    }
    Ok(result)
}

/// Checks, before a training run on images, that games from `eval` have the training
/// environments' frames and actions.
///
/// # Errors
/// The factory's own error, or [`Error::InvalidArgument`] naming both.
pub(crate) fn check_frame_eval_env(train: &FrameVecEnv, eval: &dyn FrameEnvFactory) -> Result<()> {
    let probe = eval.make()?;
    if probe.frame_shape() != train.frame_shape() || probe.actions() != train.actions() {
        return Err(Error::invalid(
            "evaluation env",
            format!(
                "frames {:?}, {} actions",
                probe.frame_shape(),
                probe.actions()
            ),
            format!(
                "the training env's frames {:?} and {} actions",
                train.frame_shape(),
                train.actions()
            ),
        ));
    }
    Ok(())
}

/// Checks, before a training run, that environments from `eval` have the training
/// environment's spaces (so that a wrong factory fails at once, not after the budget).
///
/// # Errors
/// The factory's own error, or [`Error::InvalidArgument`] naming the space that differs.
pub(crate) fn check_eval_env(
    train: &dyn emberlab_env::VecEnv,
    eval: &dyn EnvFactory,
) -> Result<()> {
    let env = eval.make()?;
    if env.observation_space() != train.single_observation_space() {
        return Err(Error::invalid(
            "evaluation environment observation space",
            env.observation_space(),
            format!(
                "the training environment's {}",
                train.single_observation_space()
            ),
        ));
    }
    if env.action_space() != train.single_action_space() {
        return Err(Error::invalid(
            "evaluation environment action space",
            env.action_space(),
            format!("the training environment's {}", train.single_action_space()),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use emberlab_env::{Catch, FrameEnv};

    /// Keeps the paddle still and notes how it was asked to act.
    struct Stay {
        obs_dim: usize,
        explored: Vec<bool>,
    }

    impl Agent for Stay {
        fn obs_dim(&self) -> usize {
            self.obs_dim
        }

        fn act(&mut self, _: &[f32], _: bool, _: &mut ActionBuf) -> Result<()> {
            Err(Error::invalid("observations", "vectors", "images"))
        }

        fn act_pixels(&mut self, obs: &[u8], explore: bool, out: &mut ActionBuf) -> Result<()> {
            Error::check_len("stack", self.obs_dim, obs.len())?;
            self.explored.push(explore);
            let actions = out.discrete_mut("test")?;
            actions.clear();
            actions.push(1);
            Ok(())
        }
    }

    /// Acts 0 (a discrete index, or a zero vector) on vector observations of `obs_dim`.
    struct Zero {
        obs_dim: usize,
        act_dim: usize,
    }

    impl Agent for Zero {
        fn obs_dim(&self) -> usize {
            self.obs_dim
        }

        fn act(&mut self, obs: &[f32], _: bool, out: &mut ActionBuf) -> Result<()> {
            Error::check_len("observation", self.obs_dim, obs.len())?;
            match out {
                ActionBuf::Discrete(a) => *a = vec![0],
                ActionBuf::Continuous(a) => *a = vec![0.0; self.act_dim],
            }
            Ok(())
        }
    }

    #[test]
    fn evaluations_tell_episodes_cut_short_from_ended_ones() {
        // Pendulum never ends: every episode is cut at its 200-step limit.
        let pendulum = emberlab_env::factory("Pendulum-v1").unwrap();
        let mut agent = Zero {
            obs_dim: 3,
            act_dim: 1,
        };
        let r = evaluate(&mut agent, pendulum.as_ref(), 2, 0).unwrap();
        assert_eq!((r.mean_length(), r.truncated_count()), (200.0, 2));
        assert_eq!(r.truncated, vec![true, true]);
        // CartPole pushed left falls over long before its limit.
        let cartpole = emberlab_env::factory("CartPole-v1").unwrap();
        let mut agent = Zero {
            obs_dim: 4,
            act_dim: 1,
        };
        let r = evaluate(&mut agent, cartpole.as_ref(), 3, 0).unwrap();
        assert_eq!(r.truncated_count(), 0);
        assert!(r.mean_length() < 20.0, "{r:?}");
        // The watcher sees each observation with its action, then the one it ended on.
        let mut seen = Vec::new();
        let mut env = cartpole.make().unwrap();
        let mut watch = |i: usize, obs: &[f32], a: Option<Action<'_>>| {
            assert_eq!(obs.len(), 4);
            seen.push((i, a.map(|a| matches!(a, Action::Discrete(0)))));
        };
        let again = play_env(&mut agent, env.as_mut(), 3, 0, true, &mut watch).unwrap();
        assert_eq!(again, r);
        assert_eq!(seen.len(), r.lengths.iter().sum::<usize>() + 3);
        let ends: Vec<usize> = seen.iter().filter(|s| s.1.is_none()).map(|s| s.0).collect();
        assert_eq!(ends, vec![0, 1, 2]);
        assert!(seen.iter().all(|s| s.1 != Some(false)));
        assert!(play_env(&mut agent, env.as_mut(), 0, 0, false, &mut |_, _, _| {}).is_err());
    }

    fn catch() -> Result<Box<dyn FrameEnv>> {
        Ok(Box::new(Catch::default()))
    }

    #[test]
    fn play_frames_plays_whole_games_and_shows_every_stack_it_acts_on() {
        let mut env = FrameVecEnv::new(vec![catch().unwrap()], 2).unwrap();
        let obs_dim = env.obs_shape().iter().product();
        let mut agent = Stay {
            obs_dim,
            explored: Vec::new(),
        };
        let mut seen = Vec::new();
        let mut watch = |game: usize, env: &mut FrameVecEnv| {
            assert_eq!(env.screen(0)?, None, "Catch's frames are its picture");
            seen.push((game, env.obs().len()));
            Ok(())
        };
        let played = play_frames(&mut agent, &mut env, 3, 7, true, &mut watch).unwrap();
        // bsuite's Catch: the ball falls through 10 rows, 9 steps a game.
        assert_eq!(played.lengths, vec![9, 9, 9]);
        assert_eq!((played.mean_length(), played.truncated_count()), (9.0, 0));
        assert!(played.returns.iter().all(|r| r.abs() == 1.0));
        assert_eq!(seen.len(), 27);
        assert!(seen.iter().all(|&(_, len)| len == obs_dim));
        let games: Vec<usize> = seen.iter().map(|&(g, _)| g).collect();
        assert_eq!(&games[..9], &[0; 9]);
        assert_eq!(&games[18..], &[2; 9]);
        assert!(
            agent.explored.iter().all(|&e| e),
            "the explore flag reaches the agent"
        );
        // The same seeds, greedy: the same games.
        let again = evaluate_frames(&mut agent, &catch, 2, 3, 7).unwrap();
        assert_eq!(again, played);
        assert!(!agent.explored[27..].iter().any(|&e| e));
        // One game at a time, and at least one episode.
        let mut two = FrameVecEnv::new(vec![catch().unwrap(), catch().unwrap()], 2).unwrap();
        let mut quiet = |_: usize, _: &mut FrameVecEnv| Ok(());
        assert!(play_frames(&mut agent, &mut two, 1, 0, false, &mut quiet).is_err());
        assert!(play_frames(&mut agent, &mut env, 0, 0, false, &mut quiet).is_err());
        // A watcher's error ends the game with it.
        let mut refuse = |_: usize, _: &mut FrameVecEnv| Err(Error::invalid("watcher", 1, "0"));
        assert!(play_frames(&mut agent, &mut env, 1, 0, false, &mut refuse).is_err());
    }
}
