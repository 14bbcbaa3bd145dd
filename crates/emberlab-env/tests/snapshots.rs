//! Snapshots continue exactly: an environment (or vector env) restored from
//! `save_state` into a fresh one built the same way produces the same future.

use emberlab_core::state::{StateReader, StateWriter};
use emberlab_core::{Action, EmberRng, Env, Space};
use emberlab_env::{NormalizeObservation, SyncVecEnv, ThreadedVecEnv, VecActions, VecEnv};

fn action(space: &Space, rng: &mut EmberRng, buf: &mut Vec<f32>) -> Option<usize> {
    match space {
        Space::Discrete(d) => Some(rng.below(d.n() as u64) as usize),
        Space::Box(b) => {
            buf.clear();
            buf.extend(
                b.low()
                    .iter()
                    .zip(b.high())
                    .map(|(&lo, &hi)| lo + (hi - lo) * rng.next_f64() as f32),
            );
            None
        }
    }
}

/// Steps `env` with actions from `rng` for `steps` steps (resetting after episode ends) and
/// returns the observations and rewards seen.
fn roll(env: &mut dyn Env, rng: &mut EmberRng, steps: usize) -> Vec<f64> {
    let space = env.action_space().clone();
    let mut trace = Vec::new();
    let mut buf = Vec::new();
    for _ in 0..steps {
        let s = match action(&space, rng, &mut buf) {
            Some(a) => env.step(Action::Discrete(a)).unwrap(),
            None => env.step(Action::Continuous(&buf)).unwrap(),
        };
        trace.extend(s.obs.iter().map(|&x| f64::from(x)));
        trace.push(s.reward);
        if s.terminated || s.truncated {
            trace.extend(env.reset(None).unwrap().iter().map(|&x| f64::from(x)));
        }
    }
    trace
}

#[test]
fn every_registered_classic_env_continues_exactly_from_a_snapshot() {
    for id in [
        "CartPole-v1",
        "Pendulum-v1",
        "MountainCar-v0",
        "MountainCarContinuous-v0",
        "Acrobot-v1",
    ] {
        let mut env = NormalizeObservation::new(emberlab_env::make(id).unwrap()).unwrap();
        env.reset(Some(11)).unwrap();
        let mut rng = EmberRng::seed_from(5);
        // Far enough that time limits and autoresets have happened.
        roll(&mut env, &mut rng, 700);
        let mut out = StateWriter::new();
        env.save_state(&mut out).unwrap();
        let words = out.into_words();
        let expected = roll(&mut env, &mut rng.clone(), 400);

        let mut fresh = NormalizeObservation::new(emberlab_env::make(id).unwrap()).unwrap();
        let mut src = StateReader::new(&words, id);
        fresh.load_state(&mut src).unwrap();
        src.finish().unwrap();
        assert_eq!(roll(&mut fresh, &mut rng, 400), expected, "{id}");

        // A snapshot of another environment is refused.
        let mut other = emberlab_env::make(if id == "CartPole-v1" {
            "Pendulum-v1"
        } else {
            "CartPole-v1"
        })
        .unwrap();
        let mut src = StateReader::new(&words, id);
        let refused = other.load_state(&mut src).and_then(|()| src.finish());
        assert!(refused.is_err(), "{id}");
    }
}

fn vec_trace(env: &mut dyn VecEnv, rng: &mut EmberRng, steps: usize) -> Vec<f64> {
    let n = env.num_envs();
    let mut trace = Vec::new();
    for _ in 0..steps {
        let a: Vec<usize> = (0..n).map(|_| rng.below(2) as usize).collect();
        let s = env.step(VecActions::Discrete(&a)).unwrap();
        trace.extend(s.obs.iter().map(|&x| f64::from(x)));
        trace.extend(s.rewards);
        trace.extend(s.terminated.iter().map(|&t| f64::from(u8::from(t))));
    }
    trace
}

#[test]
fn vector_envs_continue_exactly_pending_autoresets_included() {
    let builds: [fn() -> Box<dyn VecEnv>; 2] = [
        || Box::new(SyncVecEnv::from_id("CartPole-v1", 3).unwrap()),
        || Box::new(ThreadedVecEnv::from_id("CartPole-v1", 2, 3).unwrap()),
    ];
    for build in builds {
        let mut env = build();
        env.reset(Some(3)).unwrap();
        let mut rng = EmberRng::seed_from(9);
        let mut snapshots = 0;
        // Snapshot at many instants, some right after an episode ended (autoreset pending).
        for round in 0..40 {
            vec_trace(env.as_mut(), &mut rng, 7);
            let mut out = StateWriter::new();
            env.save_state(&mut out).unwrap();
            let words = out.into_words();
            let expected = vec_trace(env.as_mut(), &mut rng.clone(), 30);
            let mut fresh = build();
            let mut src = StateReader::new(&words, "vector env");
            fresh.load_state(&mut src).unwrap();
            src.finish().unwrap();
            let got = vec_trace(fresh.as_mut(), &mut rng.clone(), 30);
            assert_eq!(got, expected, "round {round}");
            snapshots += 1;
        }
        assert_eq!(snapshots, 40);
    }
}

/// An environment that never learned to snapshot itself.
struct Plain(emberlab_env::CartPole);

impl Env for Plain {
    fn observation_space(&self) -> &Space {
        self.0.observation_space()
    }
    fn action_space(&self) -> &Space {
        self.0.action_space()
    }
    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> emberlab_core::Result<()> {
        self.0.reset_into(seed, obs)
    }
    fn step_into(
        &mut self,
        action: Action<'_>,
        obs: &mut [f32],
    ) -> emberlab_core::Result<emberlab_core::StepInfo> {
        self.0.step_into(action, obs)
    }
}

#[test]
fn an_env_without_snapshots_says_so() {
    let env = SyncVecEnv::new(vec![Plain(emberlab_env::CartPole::new())]).unwrap();
    let e = env
        .save_state(&mut StateWriter::new())
        .unwrap_err()
        .to_string();
    assert!(e.contains("save_state"), "{e}");
}
