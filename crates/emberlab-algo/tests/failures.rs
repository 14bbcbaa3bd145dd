//! Failures injected into every learner — a NaN (overflowing) loss, a wrong-length batch,
//! an out-of-range action, a panic inside the update (on SAC's worker thread too) — leave
//! it unchanged and usable; the trainers turn a user learner's panic into an error, check
//! what they can before the first step, and continue counters over a second call.

mod common;

use emberlab_algo::{
    A2cConfig, ActionBuf, Agent, CheckpointConfig, Dqn, DqnConfig, OffPolicyConfig,
    OffPolicyLearner, OnPolicyLearner, PolicyGradient, PpoConfig, Progress, ReinforceConfig,
    RolloutBatch, Sac, SacConfig, Td3, Td3Config, Update, UpdateSchedule, faults,
};
use emberlab_core::{Batch, BoxSpace, Discrete, EmberRng, Error, Result, Space};
use emberlab_env::{SyncVecEnv, VecEnv};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn flex() -> burn::tensor::Device {
    emberlab_backend::DeviceSpec::Flex.device().unwrap()
}

const OBS: usize = 3;

fn obs_space() -> Space {
    Space::Box(BoxSpace::uniform(OBS, -1.0, 1.0).unwrap())
}

fn replay_batch(
    rng: &mut EmberRng,
    n: usize,
    act_dim: usize,
    action: impl Fn(f64) -> f32,
) -> Batch {
    let mut u =
        |k: usize| -> Vec<f32> { (0..k).map(|_| rng.next_f64() as f32 * 2.0 - 1.0).collect() };
    Batch {
        len: n,
        obs_dim: OBS,
        act_dim,
        obs: u(n * OBS),
        next_obs: u(n * OBS),
        reward: u(n),
        terminated: vec![0.0; n],
        truncated: vec![0.0; n],
        weights: vec![1.0; n],
        action: u(n * act_dim)
            .into_iter()
            .map(|x| action(x as f64))
            .collect(),
        ..Batch::default()
    }
}

/// Runs the failure cases on an off-policy learner: each failed update must leave
/// `state` unchanged, and the next good update must work.
fn off_policy_failures<L: OffPolicyLearner>(
    name: &str,
    learner: &mut L,
    state: impl Fn(&L) -> Vec<u32>,
    good: impl Fn(&mut EmberRng) -> Batch,
    bad_action: Option<f32>,
    fault: &'static str,
) {
    let mut rng = EmberRng::seed_from(3);
    learner.update(&good(&mut rng), 0).unwrap();
    let mut failures: Vec<(&str, Batch)> = Vec::new();
    let mut b = good(&mut rng);
    b.reward.pop();
    failures.push(("batch.reward", b));
    let mut b = good(&mut rng);
    b.obs.truncate(5);
    failures.push(("batch.obs", b));
    let mut b = good(&mut rng);
    b.next_obs[1] = f32::NAN;
    failures.push(("batch.next_obs[row 0]", b));
    let mut b = good(&mut rng);
    b.weights[2] = f32::INFINITY;
    failures.push(("batch.weights[2]", b));
    let mut b = good(&mut rng);
    b.reward[0] = f32::MAX; // finite: the loss overflows
    b.reward[1] = f32::MAX;
    failures.push(("loss is inf", b));
    if let Some(a) = bad_action {
        let mut b = good(&mut rng);
        b.action[1] = a;
        failures.push(("batch.action[1]", b));
    }
    for (what, batch) in &failures {
        let before = state(learner);
        let e = learner.update(batch, 1).unwrap_err().to_string();
        assert!(e.contains(what), "{name}: expected `{what}` in: {e}");
        assert_eq!(
            state(learner),
            before,
            "{name}: `{what}` changed the learner"
        );
    }
    let before = state(learner);
    faults::arm(fault);
    let e = emberlab_core::Error::catch(|| "update".into(), || learner.update(&good(&mut rng), 1))
        .unwrap_err();
    assert!(
        matches!(e, Error::Panicked { .. }) && e.to_string().contains(fault),
        "{name}: {e}"
    );
    assert_eq!(
        state(learner),
        before,
        "{name}: the panic changed the learner"
    );
    let update = learner.update(&good(&mut rng), 2).unwrap();
    assert_ne!(state(learner), before, "{name}: usable after every failure");
    let td = update.td_errors.expect("TD errors");
    assert_eq!(td.len(), 16);
    assert!(
        td.iter().all(|e| e.is_finite() && *e >= 0.0),
        "{name}: {td:?}"
    );
}

fn sac(schedule: UpdateSchedule) -> Sac {
    let act = Space::Box(BoxSpace::uniform(2, -1.0, 1.0).unwrap());
    SacConfig {
        hidden: vec![16],
        update_schedule: schedule,
        ..SacConfig::default()
    }
    .build(&obs_space(), &act, &common::same(&flex()))
    .unwrap()
}

fn sac_state(s: &Sac) -> Vec<u32> {
    let mut v = common::bits(s.actor());
    v.extend(common::bits(s.critic()));
    v.extend(common::bits(s.target_critic()));
    v.push((s.alpha() as f32).to_bits());
    v
}

#[test]
fn sac_survives_every_failure_on_both_schedules() {
    let _serial = common::serial();
    for (schedule, fault) in [
        (UpdateSchedule::Sequential, "sac.actor_step"),
        (UpdateSchedule::Parallel, "sac.critic_step"),
        (UpdateSchedule::Parallel, "sac.actor_step"),
    ] {
        let mut s = sac(schedule);
        let good = |rng: &mut EmberRng| replay_batch(rng, 16, 2, |x| x as f32);
        off_policy_failures(
            &format!("SAC {schedule:?}"),
            &mut s,
            sac_state,
            good,
            None,
            fault,
        );
    }
}

fn td3(schedule: UpdateSchedule, policy_delay: u64) -> Td3 {
    let act = Space::Box(BoxSpace::uniform(2, -1.0, 1.0).unwrap());
    Td3Config {
        hidden: vec![16],
        update_schedule: schedule,
        policy_delay,
        ..Td3Config::default()
    }
    .build(&obs_space(), &act, &common::same(&flex()))
    .unwrap()
}

fn td3_state(t: &Td3) -> Vec<u32> {
    let mut v = common::bits(t.actor());
    v.extend(common::bits(t.critic()));
    v.extend(common::bits(t.actor_target()));
    v.extend(common::bits(t.critic_target()));
    v
}

#[test]
fn td3_survives_every_failure_on_both_schedules() {
    let _serial = common::serial();
    // Step 1 of the checks is an actor step when the actor steps every update.
    for (schedule, delay, fault) in [
        (UpdateSchedule::Sequential, 2, "td3.step"),
        (UpdateSchedule::Parallel, 2, "td3.step"),
        (UpdateSchedule::Sequential, 1, "td3.actor_step"),
        (UpdateSchedule::Parallel, 1, "td3.actor_step"),
        (UpdateSchedule::Parallel, 1, "td3.step"),
    ] {
        let mut t = td3(schedule, delay);
        let good = |rng: &mut EmberRng| replay_batch(rng, 16, 2, |x| x as f32);
        let name = format!("TD3 {schedule:?}, delay {delay}");
        off_policy_failures(&name, &mut t, td3_state, good, None, fault);
    }
}

#[test]
fn td3_parallel_updates_give_the_sequential_bits() {
    let _serial = common::serial();
    let (mut seq, mut par) = (
        td3(UpdateSchedule::Sequential, 2),
        td3(UpdateSchedule::Parallel, 2),
    );
    assert_eq!(td3_state(&seq), td3_state(&par), "built alike");
    let mut rng = EmberRng::seed_from(8);
    for step in 0..6 {
        let batch = replay_batch(&mut rng, 16, 2, |x| x as f32);
        let (a, b) = (
            seq.update(&batch, step).unwrap(),
            par.update(&batch, step).unwrap(),
        );
        assert_eq!(a.td_errors, b.td_errors, "step {step}");
        assert_eq!(format!("{:?}", a.metrics), format!("{:?}", b.metrics));
    }
    assert_eq!(td3_state(&seq), td3_state(&par));
}

/// Greedy actions of `s` for a few observations (through its acting copy).
fn greedy_bits(s: &mut impl Agent) -> Vec<u32> {
    let act = Space::Box(BoxSpace::uniform(2, -1.0, 1.0).unwrap());
    let mut out = ActionBuf::for_space(&act);
    let obs: Vec<f32> = (0..2 * OBS).map(|i| i as f32 / 7.0 - 0.5).collect();
    s.act(&obs, false, &mut out).unwrap();
    out.continuous_mut("test")
        .unwrap()
        .iter()
        .map(|a| a.to_bits())
        .collect()
}

/// Under the parallel schedule the actor's part refreshes the acting copy in its commit,
/// beside the critic's step: a failure there (`fault`) must put the copy back, and the next
/// good update must move it.
fn acts_as_before_when_the_critic_step_fails(
    learner: &mut impl OffPolicyLearner,
    fault: &'static str,
) {
    let mut rng = EmberRng::seed_from(4);
    let good = |rng: &mut EmberRng| replay_batch(rng, 16, 2, |x| x as f32);
    learner.update(&good(&mut rng), 0).unwrap();
    let before = greedy_bits(learner);
    faults::arm(fault);
    let r = Error::catch(|| "update".into(), || learner.update(&good(&mut rng), 1));
    assert!(r.is_err(), "{fault}");
    assert_eq!(
        greedy_bits(learner),
        before,
        "acting after a failed update ({fault})"
    );
    learner.update(&good(&mut rng), 2).unwrap();
    assert_ne!(
        greedy_bits(learner),
        before,
        "acting after a good update ({fault})"
    );
}

#[test]
fn sac_acts_as_before_when_the_critic_step_fails_after_the_actor_stepped() {
    let _serial = common::serial();
    acts_as_before_when_the_critic_step_fails(
        &mut sac(UpdateSchedule::Parallel),
        "sac.critic_step",
    );
}

#[test]
fn td3_acts_as_before_when_the_critic_step_fails_after_the_actor_stepped() {
    let _serial = common::serial();
    // A policy delay of 1: every update steps the actor.
    acts_as_before_when_the_critic_step_fails(&mut td3(UpdateSchedule::Parallel, 1), "td3.step");
}

#[test]
fn dqn_survives_every_failure() {
    let _serial = common::serial();
    let mut dqn: Dqn = DqnConfig {
        hidden: vec![16],
        ..DqnConfig::default()
    }
    .build(
        &obs_space(),
        &Space::Discrete(Discrete::new(3).unwrap()),
        &common::same(&flex()),
    )
    .unwrap();
    let good = |rng: &mut EmberRng| replay_batch(rng, 16, 1, |x| ((x + 1.0) * 1.49) as u32 as f32);
    off_policy_failures(
        "DQN",
        &mut dqn,
        |d| common::bits(d.q()),
        good,
        Some(3.0),
        "dqn.step",
    );
    let mut b = good(&mut EmberRng::seed_from(9));
    b.action[0] = 0.5;
    let e = dqn.update(&b, 9).unwrap_err().to_string();
    assert!(
        e.contains("batch.action[0]") && e.contains("Discrete(3)"),
        "{e}"
    );
}

#[test]
fn dqn_parallel_updates_give_the_sequential_bits() {
    let _serial = common::serial();
    let dqn = |schedule| -> Dqn {
        DqnConfig {
            hidden: vec![16],
            update_schedule: schedule,
            ..DqnConfig::default()
        }
        .build(
            &obs_space(),
            &Space::Discrete(Discrete::new(3).unwrap()),
            &common::same(&flex()),
        )
        .unwrap()
    };
    let (mut seq, mut par) = (
        dqn(UpdateSchedule::Sequential),
        dqn(UpdateSchedule::Parallel),
    );
    assert_eq!(common::bits(seq.q()), common::bits(par.q()), "built alike");
    let before = common::bits(seq.q());
    let mut rng = EmberRng::seed_from(8);
    // Even and odd batches (uneven halves) and a batch of one row.
    for (step, n) in [16, 17, 1, 16].into_iter().enumerate() {
        let batch = replay_batch(&mut rng, n, 1, |x| ((x + 1.0) * 1.49) as u32 as f32);
        let (a, b) = (
            seq.update(&batch, step as u64).unwrap(),
            par.update(&batch, step as u64).unwrap(),
        );
        assert_eq!(
            a.td_errors.as_ref().map(Vec::len),
            Some(n),
            "a TD error per row"
        );
        assert_eq!(a.td_errors, b.td_errors, "step {step}");
        assert_eq!(format!("{:?}", a.metrics), format!("{:?}", b.metrics));
        assert_eq!(common::bits(seq.q()), common::bits(par.q()), "step {step}");
    }
    assert_ne!(common::bits(seq.q()), before, "the updates stepped");
}

fn rollout(rng: &mut EmberRng, n: usize) -> RolloutBatch {
    RolloutBatch {
        len: n,
        obs: (0..n * OBS).map(|_| rng.next_f64() as f32).collect(),
        actions: (0..n).map(|_| rng.below(2) as f32).collect(),
        advantages: (0..n).map(|_| rng.next_f64() as f32 - 0.5).collect(),
        returns: (0..n).map(|_| rng.next_f64() as f32).collect(),
        log_probs: (0..n).map(|_| -(rng.next_f64() as f32)).collect(),
        values: (0..n).map(|_| rng.next_f64() as f32).collect(),
    }
}

fn on_policy_failures(name: &str, learner: &mut PolicyGradient, site: &'static str) {
    let mut rng = EmberRng::seed_from(4);
    let state = |l: &PolicyGradient| common::bits(l.net());
    learner.update(&rollout(&mut rng, 8), 0).unwrap();
    let mut cases: Vec<(&str, RolloutBatch)> = Vec::new();
    let mut b = rollout(&mut rng, 8);
    b.returns.pop();
    cases.push(("rollout.returns", b));
    let mut b = rollout(&mut rng, 8);
    b.advantages[4] = f32::NAN;
    cases.push(("rollout.advantages[row 4]", b));
    let mut b = rollout(&mut rng, 8);
    b.actions[2] = 2.0;
    cases.push(("rollout.actions[2]", b));
    let mut b = rollout(&mut rng, 8);
    b.advantages[0] = f32::MAX; // finite: the policy loss overflows
    b.advantages[1] = f32::MAX;
    cases.push(("loss is", b));
    cases.push(("rollout.len", RolloutBatch::default()));
    let mut b = rollout(&mut rng, 8);
    b.log_probs[3] = f32::INFINITY;
    cases.push(("rollout.log_probs[row 3]", b));
    let mut b = rollout(&mut rng, 8);
    b.values.truncate(5);
    cases.push(("rollout.values", b));
    if name == "PPO" {
        let mut b = rollout(&mut rng, 8);
        b.log_probs.clear();
        cases.push(("rollout.log_probs", b));
    }
    for (what, batch) in &cases {
        let before = state(learner);
        let e = learner.update(batch, 1).unwrap_err().to_string();
        assert!(e.contains(what), "{name}: expected `{what}` in: {e}");
        assert_eq!(
            state(learner),
            before,
            "{name}: `{what}` changed the learner"
        );
    }
    let before = state(learner);
    faults::arm(site);
    let e = Error::catch(
        || "update".into(),
        || learner.update(&rollout(&mut rng, 8), 1),
    )
    .unwrap_err();
    assert!(matches!(e, Error::Panicked { .. }), "{name}: {e}");
    assert_eq!(state(learner), before);
    learner.update(&rollout(&mut rng, 8), 2).unwrap();
    assert_ne!(state(learner), before, "{name}: usable after every failure");
}

#[test]
fn a2c_and_reinforce_survive_every_failure() {
    let _serial = common::serial();
    let act = Space::Discrete(Discrete::new(2).unwrap());
    let devices = common::same(&flex());
    let mut a2c = A2cConfig::default()
        .build(&obs_space(), &act, &devices)
        .unwrap();
    on_policy_failures("A2C", &mut a2c, "policy_gradient.step");
    let mut reinforce = ReinforceConfig::default()
        .build(&obs_space(), &act, &devices)
        .unwrap();
    on_policy_failures("REINFORCE", &mut reinforce, "policy_gradient.step");
    // PPO takes many steps per update: the fault fires after the first minibatch's step,
    // and the learner must still be as before the update.
    let mut ppo = PpoConfig {
        batch_size: 4,
        ..PpoConfig::default()
    }
    .build(&obs_space(), &act, &devices)
    .unwrap();
    on_policy_failures("PPO", &mut ppo, "ppo.after_minibatch_step");
}

/// A user's learner wrapping DQN: it panics in its `update` when told to, and offers no
/// checkpoints.
struct Flaky {
    inner: Dqn,
    panic_at: Option<u64>,
}

impl Agent for Flaky {
    fn obs_dim(&self) -> usize {
        self.inner.obs_dim()
    }
    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<()> {
        self.inner.act(obs, explore, out)
    }
}

impl OffPolicyLearner for Flaky {
    fn update(&mut self, batch: &Batch, step: u64) -> Result<Update> {
        if self.panic_at == Some(step) {
            panic!("the user's learner broke at {step}");
        }
        self.inner.update(batch, step)
    }
    fn on_env_steps(&mut self, env_steps: u64, total_steps: u64) {
        self.inner.on_env_steps(env_steps, total_steps)
    }
    fn progress(&mut self) -> &mut Progress {
        self.inner.progress()
    }
}

fn cartpole_dqn() -> (SyncVecEnv, Dqn) {
    let env = SyncVecEnv::from_id("CartPole-v1", 2).unwrap();
    let dqn = DqnConfig {
        hidden: vec![32],
        target_update_interval: 50,
        ..DqnConfig::default()
    }
    .build(
        env.single_observation_space(),
        env.single_action_space(),
        &common::same(&flex()),
    )
    .unwrap();
    (env, dqn)
}

fn short() -> OffPolicyConfig {
    OffPolicyConfig {
        total_steps: 300,
        learning_starts: 100,
        batch_size: 16,
        eval_episodes: 1,
        ..OffPolicyConfig::default()
    }
}

#[test]
fn the_trainer_catches_a_panic_and_training_goes_on() {
    let _serial = common::serial();
    let (mut env, inner) = cartpole_dqn();
    let mut flaky = Flaky {
        inner,
        panic_at: Some(40),
    };
    let config = short();
    let mut replay = config.build_replay(&env).unwrap();
    let eval = emberlab_env::factory("CartPole-v1").unwrap();
    let e =
        emberlab_algo::train_off_policy(&mut flaky, &mut env, &mut replay, eval.as_ref(), &config)
            .unwrap_err();
    assert!(
        e.to_string().contains("the user's learner broke at 40"),
        "{e}"
    );
    assert_eq!(
        flaky.inner.progress().updates,
        40,
        "failed updates are not counted"
    );
    flaky.panic_at = None;
    let report =
        emberlab_algo::train_off_policy(&mut flaky, &mut env, &mut replay, eval.as_ref(), &config)
            .unwrap();
    assert_eq!(report.progress.updates, 40 + report.updates);
    // Checkpoints asked of a learner without them: refused before the first step.
    let with_ckpt = OffPolicyConfig {
        checkpoint: CheckpointConfig {
            dir: Some(std::env::temp_dir().join("ember-never-written")),
            every: 100,
        },
        ..short()
    };
    let steps = flaky.inner.progress().env_steps;
    let e = emberlab_algo::train_off_policy(
        &mut flaky,
        &mut env,
        &mut replay,
        eval.as_ref(),
        &with_ckpt,
    )
    .unwrap_err();
    assert!(e.to_string().contains("checkpoint"), "{e}");
    assert_eq!(flaky.inner.progress().env_steps, steps);
}

#[test]
fn a_second_training_call_continues_counters_and_schedules() {
    let _serial = common::serial();
    let (mut env, mut dqn) = cartpole_dqn();
    let config = short();
    let first = common::train_off(&mut dqn, &mut env, "CartPole-v1", &config).unwrap();
    let eps = dqn.epsilon();
    let dir = std::env::temp_dir().join(format!("ember-second-call-{}", std::process::id()));
    let with_ckpt = OffPolicyConfig {
        checkpoint: CheckpointConfig {
            dir: Some(dir.clone()),
            every: 0,
        },
        ..config.clone()
    };
    let second = common::train_off(&mut dqn, &mut env, "CartPole-v1", &with_ckpt).unwrap();
    let info = std::fs::read_to_string(dir.join("checkpoint.toml")).unwrap();
    assert!(
        info.contains("env_steps = 600"),
        "the learner's count: {info}"
    );
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(first.progress.env_steps, 300);
    assert_eq!(second.progress.env_steps, 600);
    assert_eq!(second.progress.updates, first.updates + second.updates);
    // No random warm-up the second time: every step of it can update.
    assert!(
        second.updates > first.updates,
        "{} vs {}",
        second.updates,
        first.updates
    );
    assert!(
        dqn.epsilon() <= eps,
        "ε continues down: {eps} → {}",
        dqn.epsilon()
    );
}

#[test]
fn bad_set_ups_fail_before_the_first_step() {
    let _serial = common::serial();
    let (mut env, mut dqn) = cartpole_dqn();
    let config = short();
    let mut replay = config.build_replay(&env).unwrap();
    // A typo'd id fails at once.
    let e = emberlab_env::factory("CartPol-v1")
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("CartPol-v1") && e.contains("CartPole-v1"), "{e}");
    // An evaluation env with other spaces.
    let pendulum = emberlab_env::factory("Pendulum-v1").unwrap();
    let e = emberlab_algo::train_off_policy(
        &mut dqn,
        &mut env,
        &mut replay,
        pendulum.as_ref(),
        &config,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("evaluation environment"), "{e}");
    // A buffer of other widths.
    let mut wrong = emberlab_algo::ReplayConfig::default()
        .build(5, 1, 0)
        .unwrap();
    let cartpole = emberlab_env::factory("CartPole-v1").unwrap();
    let e =
        emberlab_algo::train_off_policy(&mut dqn, &mut env, &mut wrong, cartpole.as_ref(), &config)
            .unwrap_err()
            .to_string();
    assert!(e.contains("replay observation width"), "{e}");
    // n-step returns with a discount other than the learner's.
    let mut nstep = config.clone();
    nstep.replay.n_step = 3;
    nstep.replay.gamma = Some(0.5);
    let mut replay3 = nstep.build_replay(&env).unwrap();
    let e = emberlab_algo::train_off_policy(
        &mut dqn,
        &mut env,
        &mut replay3,
        cartpole.as_ref(),
        &nstep,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("replay.gamma") && e.contains("0.99"), "{e}");
    // One-step config against a buffer with the n-step column.
    let e = emberlab_algo::train_off_policy(
        &mut dqn,
        &mut env,
        &mut replay3,
        cartpole.as_ref(),
        &config,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("extra columns"), "{e}");
    assert_eq!(dqn.progress().env_steps, 0, "nothing ran");
    // A TOML typo in the replay section names the field.
    let e = emberlab_algo::from_toml::<OffPolicyConfig>("[replay]\nkind = \"prioritised\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("prioritised"), "{e}");
    let e = emberlab_algo::from_toml::<OffPolicyConfig>("[replay]\ncapacity = 0\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("replay.capacity"), "{e}");
}

/// Network math runs with denormals flushed where Ember runs it — the caller's thread during
/// an update, SAC's worker thread — and the caller's mode is restored afterwards; with the
/// switch off, IEEE behaviour is kept everywhere.
#[test]
fn updates_flush_denormals_on_every_thread_unless_switched_off() {
    use emberlab_core::denormals::{denormals_flushed, set_flush_denormals};
    let _serial = common::serial();
    let mut rng = EmberRng::seed_from(8);
    let good = |rng: &mut EmberRng| replay_batch(rng, 16, 2, |x| x as f32);
    let mut dqn = DqnConfig {
        hidden: vec![16],
        ..DqnConfig::default()
    }
    .build(
        &obs_space(),
        &Space::Discrete(Discrete::new(3).unwrap()),
        &common::same(&flex()),
    )
    .unwrap();
    let dqn_batch =
        |rng: &mut EmberRng| replay_batch(rng, 16, 1, |x| ((x + 1.0) * 1.49) as u32 as f32);
    for on in [true, false] {
        set_flush_denormals(on);
        let mut s = sac(UpdateSchedule::Parallel);
        faults::watch();
        s.update(&good(&mut rng), 0).unwrap();
        dqn.update(&dqn_batch(&mut rng), 0).unwrap();
        let seen = faults::seen();
        let sites: Vec<&str> = seen.iter().map(|(site, _)| *site).collect();
        for site in ["sac.critic_step", "sac.actor_step", "dqn.step"] {
            assert!(sites.contains(&site), "{site} not passed: {seen:?}");
        }
        assert!(
            seen.iter().all(|&(_, flushed)| flushed == on),
            "switch {on}: {seen:?}"
        );
        assert!(!denormals_flushed(), "the caller's IEEE mode is restored");
    }
    set_flush_denormals(true);
}
