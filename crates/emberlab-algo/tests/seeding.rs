//! Learners built at once in several threads get the weights of their own seeds: the
//! backend's generator is one per process, and `learner_devices` holds it from seeding to
//! the end of each constructor (every network is read, so drawn, by then).

use burn::optim::ModuleOptimizer;
use emberlab_algo::{
    ActingCopy, DqnConfig, Persist, PpoConfig, SacConfig, Td3Config, Value, Visitor,
};
use emberlab_core::{Result, Space};
use emberlab_env::{SyncVecEnv, VecEnv};

/// Every network's parameter bits, in the learner's own listing order.
#[derive(Default)]
struct Weights(Vec<u32>);

impl Visitor for Weights {
    fn net<M: burn::module::Module + 'static>(&mut self, _: &str, net: &mut M) -> Result<()> {
        self.0
            .extend(emberlab_nn::flat_params(net).iter().map(|v| v.to_bits()));
        Ok(())
    }

    fn optim(&mut self, _: &str, _: &mut ModuleOptimizer) -> Result<()> {
        Ok(())
    }

    fn value<T: Value>(&mut self, _: &mut T) -> Result<()> {
        Ok(())
    }

    fn acting<M: burn::module::Module + 'static, F: emberlab_algo::Frozen<M>>(
        &mut self,
        acting: &mut ActingCopy<M, F>,
        online: &mut M,
    ) -> Result<()> {
        self.0.extend(
            emberlab_nn::flat_params(acting.module())
                .iter()
                .map(|v| v.to_bits()),
        );
        self.net("online", online)
    }
}

fn spaces(id: &str) -> (Space, Space) {
    let env = SyncVecEnv::from_id(id, 1).unwrap();
    (
        env.single_observation_space().clone(),
        env.single_action_space().clone(),
    )
}

/// The weights of learner `kind` built with `seed`.
fn weights(kind: usize, seed: u64) -> Vec<u32> {
    let devices =
        emberlab_algo::Devices::same(&emberlab_backend::DeviceSpec::Flex.device().unwrap());
    let mut w = Weights::default();
    match kind {
        0 => {
            let (obs, act) = spaces("Pendulum-v1");
            let (mut c, _) = SacConfig::zoo("Pendulum-v1").unwrap();
            (c.hidden, c.seed) = (vec![16, 16], seed);
            c.build(&obs, &act, &devices).unwrap().persist(&mut w)
        }
        1 => {
            let (obs, act) = spaces("Pendulum-v1");
            let (mut c, _) = Td3Config::zoo("Pendulum-v1").unwrap();
            (c.hidden, c.seed) = (vec![16, 16], seed);
            c.build(&obs, &act, &devices).unwrap().persist(&mut w)
        }
        2 => {
            let (obs, act) = spaces("CartPole-v1");
            let (mut c, _) = DqnConfig::zoo("CartPole-v1").unwrap();
            (c.hidden, c.seed) = (vec![16, 16], seed);
            c.build(&obs, &act, &devices).unwrap().persist(&mut w)
        }
        _ => {
            let (obs, act) = spaces("CartPole-v1");
            let (mut c, _, _) = PpoConfig::zoo("CartPole-v1").unwrap();
            (c.hidden, c.seed) = (vec![16, 16], seed);
            c.build(&obs, &act, &devices).unwrap().persist(&mut w)
        }
    }
    .unwrap();
    assert!(!w.0.is_empty());
    w.0
}

#[test]
fn learners_built_at_once_in_threads_keep_their_seeds() {
    let want: Vec<Vec<u32>> = (0..4).map(|k| weights(k, 10 + k as u64)).collect();
    assert_ne!(weights(0, 11), want[0], "another seed, other weights");
    let threads: Vec<_> = (0..4)
        .map(|k| {
            std::thread::spawn(move || {
                (0..20)
                    .map(|_| weights(k, 10 + k as u64))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for (k, t) in threads.into_iter().enumerate() {
        for (round, got) in t.join().unwrap().into_iter().enumerate() {
            assert!(got == want[k], "learner {k}, round {round}: other weights");
        }
    }
}
