//! Acting and learning on different backends: the acting copy follows the learner.

mod common;

use emberlab_algo::{ActionBuf, Agent, DqnConfig, OffPolicyConfig};
use emberlab_backend::DeviceSpec;
use emberlab_env::{SyncVecEnv, VecEnv};

#[test]
fn learn_on_ndarray_act_on_flex() {
    let learn = DeviceSpec::NdArray.device().unwrap();
    let act = DeviceSpec::Flex.device().unwrap();
    let mut env = SyncVecEnv::from_id("CartPole-v1", 2).unwrap();
    let config = DqnConfig {
        hidden: vec![32],
        learning_rate: 1e-3,
        ..DqnConfig::default()
    };
    let mut dqn = config
        .build(
            env.single_observation_space(),
            env.single_action_space(),
            &emberlab_algo::Devices::new(learn.clone(), act.clone()),
        )
        .unwrap();
    let trainer = OffPolicyConfig {
        total_steps: 600,
        learning_starts: 100,
        batch_size: 32,
        eval_episodes: 1,
        ..OffPolicyConfig::default()
    };
    let report = common::train_off(&mut dqn, &mut env, "CartPole-v1", &trainer).unwrap();
    assert!(report.updates > 100);
    // Greedy actions from the acting copy (flex) equal those of the learner's network
    // (ndarray) on the same observations.
    let obs: Vec<f32> = (0..64 * 4)
        .map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0)
        .collect();
    let mut acted = ActionBuf::Discrete(Vec::new());
    dqn.act(&obs, false, &mut acted).unwrap();
    let q = dqn.q().forward(emberlab_algo::tensors::matrix(
        &obs,
        64,
        4,
        &learn.clone().autodiff(),
    ));
    let greedy = emberlab_algo::tensors::host_indices(q.argmax(1).reshape([64]));
    assert_eq!(acted, ActionBuf::Discrete(greedy));
}
