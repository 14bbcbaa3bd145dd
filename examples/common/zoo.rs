//! Shared by the `results_table` and `train_speed` examples: train an algorithm of the
//! library on a registered environment with its rl-baselines3-zoo preset (REINFORCE, which
//! zoo lacks, with fixed settings), on one device.

use emberlab::algo::{
    A2cConfig, Devices, DqnConfig, OffPolicyConfig, OffPolicyLearner, OnPolicyConfig, PpoConfig,
    ReinforceConfig, ReplayKind, SacConfig, Td3Config, TrainReport, UpdateSchedule,
    train_off_policy, train_on_policy,
};
use emberlab::core::{EmberRng, Error, Result, Space, Transition};
use emberlab::env::{SyncVecEnv, VecEnv};
use emberlab::replay::{AnySampler, ReplayBuffer};

/// How to deviate from the preset.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Env steps (`None`: the preset's).
    pub steps: Option<u64>,
    /// Evaluate ten times over the run (and at the end); otherwise never.
    pub evaluate: bool,
    /// Replay sampler of off-policy algorithms (`None`: the preset's, uniform).
    pub replay: Option<ReplayKind>,
    /// Synthetic transitions pushed into the replay buffer before training.
    pub prefill: usize,
    /// Seed of the weights, the noise and the environments.
    pub seed: u64,
    /// Update schedule of SAC, TD3 and DQN (`None`: the preset's).
    pub schedule: Option<UpdateSchedule>,
}

/// The algorithms this runs, by the names the examples take.
pub const ALGOS: &[&str] = &["sac", "td3", "dqn", "ppo", "a2c", "reinforce"];

fn eval_episodes(options: &RunOptions) -> usize {
    if options.evaluate { 10 } else { 0 }
}

fn eval_every(options: &RunOptions, total: u64) -> u64 {
    if options.evaluate {
        (total / 10).max(1)
    } else {
        0
    }
}

/// Trains `algo` on `env_id` with its preset on `device`.
pub fn run(
    algo: &str,
    env_id: &str,
    device: &burn::tensor::Device,
    options: &RunOptions,
) -> Result<TrainReport> {
    let devices = Devices::same(device);
    match algo.to_ascii_lowercase().as_str() {
        "sac" => {
            let (config, trainer) = SacConfig::zoo(env_id)?;
            let config = SacConfig {
                seed: options.seed,
                update_schedule: options.schedule.unwrap_or(config.update_schedule),
                ..config
            };
            let mut env = SyncVecEnv::from_id(env_id, 1)?;
            let sac = config.build(
                env.single_observation_space(),
                env.single_action_space(),
                &devices,
            )?;
            off_policy(sac, &mut env, env_id, trainer, options)
        }
        "td3" => {
            let (config, trainer) = Td3Config::zoo(env_id)?;
            let config = Td3Config {
                seed: options.seed,
                update_schedule: options.schedule.unwrap_or(config.update_schedule),
                ..config
            };
            let mut env = SyncVecEnv::from_id(env_id, 1)?;
            let td3 = config.build(
                env.single_observation_space(),
                env.single_action_space(),
                &devices,
            )?;
            off_policy(td3, &mut env, env_id, trainer, options)
        }
        "dqn" => {
            let (config, trainer) = DqnConfig::zoo(env_id)?;
            let config = DqnConfig {
                seed: options.seed,
                update_schedule: options.schedule.unwrap_or(config.update_schedule),
                ..config
            };
            let mut env = SyncVecEnv::from_id(env_id, 1)?;
            let dqn = config.build(
                env.single_observation_space(),
                env.single_action_space(),
                &devices,
            )?;
            off_policy(dqn, &mut env, env_id, trainer, options)
        }
        "ppo" => {
            let (config, trainer, envs) = PpoConfig::zoo(env_id)?;
            let config = PpoConfig {
                seed: options.seed,
                ..config
            };
            let mut env = SyncVecEnv::from_id(env_id, envs)?;
            let mut ppo = config.build(
                env.single_observation_space(),
                env.single_action_space(),
                &devices,
            )?;
            let trainer = on_policy_settings(trainer, options);
            let eval = emberlab::env::factory(env_id)?;
            train_on_policy(&mut ppo, &mut env, eval.as_ref(), &trainer)
        }
        "a2c" => {
            let (config, trainer, envs) = A2cConfig::zoo(env_id)?;
            let config = A2cConfig {
                seed: options.seed,
                ..config
            };
            let mut env = SyncVecEnv::from_id(env_id, envs)?;
            let mut a2c = config.build(
                env.single_observation_space(),
                env.single_action_space(),
                &devices,
            )?;
            let trainer = on_policy_settings(trainer, options);
            let eval = emberlab::env::factory(env_id)?;
            train_on_policy(&mut a2c, &mut env, eval.as_ref(), &trainer)
        }
        "reinforce" => {
            let trainer = OnPolicyConfig {
                total_steps: 400_000,
                n_steps: 1000,
                ..OnPolicyConfig::default()
            };
            let mut env = SyncVecEnv::from_id(env_id, 8)?;
            let mut learner = ReinforceConfig {
                seed: options.seed,
                ..ReinforceConfig::default()
            }
            .build(
                env.single_observation_space(),
                env.single_action_space(),
                &devices,
            )?;
            let trainer = on_policy_settings(trainer, options);
            let eval = emberlab::env::factory(env_id)?;
            train_on_policy(&mut learner, &mut env, eval.as_ref(), &trainer)
        }
        other => Err(Error::invalid(
            "algorithm",
            other,
            format!("one of {}", ALGOS.join(", ")),
        )),
    }
}

fn on_policy_settings(trainer: OnPolicyConfig, options: &RunOptions) -> OnPolicyConfig {
    let total_steps = options.steps.unwrap_or(trainer.total_steps);
    OnPolicyConfig {
        total_steps,
        eval_every: eval_every(options, total_steps),
        eval_episodes: eval_episodes(options),
        seed: options.seed,
        ..trainer
    }
}

fn off_policy<L: OffPolicyLearner>(
    mut learner: L,
    env: &mut SyncVecEnv,
    env_id: &str,
    mut trainer: OffPolicyConfig,
    options: &RunOptions,
) -> Result<TrainReport> {
    trainer.total_steps = options.steps.unwrap_or(trainer.total_steps);
    trainer.eval_every = eval_every(options, trainer.total_steps);
    trainer.eval_episodes = eval_episodes(options);
    trainer.seed = options.seed;
    if let Some(kind) = options.replay {
        trainer.replay.kind = kind;
    }
    trainer.replay.capacity = trainer.replay.capacity.max(options.prefill);
    let mut replay = trainer.build_replay(env)?;
    prefill(
        &mut replay,
        env.single_action_space(),
        options.prefill,
        trainer.seed,
    )?;
    let eval = emberlab::env::factory(env_id)?;
    train_off_policy(&mut learner, env, &mut replay, eval.as_ref(), &trainer)
}

/// Pushes `n` synthetic transitions (observations in `[-1, 1]`, random actions, rewards in
/// `[-16, 0]`, episode-return scores in `[-1600, 0]`) so that sampling runs on a full
/// buffer from the first update.
pub fn prefill(
    replay: &mut ReplayBuffer<AnySampler>,
    space: &Space,
    n: usize,
    seed: u64,
) -> Result<()> {
    let (o, a) = (replay.storage().obs_dim(), replay.storage().act_dim());
    let mut rng = EmberRng::seed_from(seed).fork(99);
    let mut obs = vec![0.0f32; o];
    let mut next = vec![0.0f32; o];
    let mut action = vec![0.0f32; a];
    for _ in 0..n {
        obs.iter_mut()
            .for_each(|x| *x = rng.next_f64() as f32 * 2.0 - 1.0);
        next.iter_mut()
            .for_each(|x| *x = rng.next_f64() as f32 * 2.0 - 1.0);
        match space {
            Space::Discrete(d) => action[0] = rng.below(d.n() as u64) as f32,
            Space::Box(_) => action
                .iter_mut()
                .for_each(|x| *x = rng.next_f64() as f32 * 2.0 - 1.0),
        }
        let t = Transition {
            obs: &obs,
            action: &action,
            reward: -16.0 * rng.next_f64() as f32,
            next_obs: &next,
            terminated: false,
            truncated: false,
        };
        replay.push_scored(&t, -1600.0 * rng.next_f64(), &[])?;
    }
    Ok(())
}
