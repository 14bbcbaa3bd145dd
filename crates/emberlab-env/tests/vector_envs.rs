//! Vector environments: next-step autoreset against a hand-written reference, and the same
//! trajectories from `SyncVecEnv` and `ThreadedVecEnv` with 1, 2 and 4 workers.

use emberlab_core::{Action, EmberRng, Env, Space};
use emberlab_env::{SyncVecEnv, ThreadedVecEnv, VecActions, VecEnv, make};

const TOTAL: usize = 8;
const STEPS: usize = 450;

/// One step's worth of everything a vector env reports.
#[derive(Debug, PartialEq)]
struct Frame {
    obs: Vec<f32>,
    rewards: Vec<f64>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
}

/// Random actions for `TOTAL` envs of `space`, the same for every run with `seed`.
fn actions(space: &Space, seed: u64) -> Vec<(Vec<usize>, Vec<f32>)> {
    let mut rng = EmberRng::seed_from(seed);
    (0..STEPS)
        .map(|_| match space {
            Space::Discrete(d) => (
                (0..TOTAL)
                    .map(|_| rng.below(d.n() as u64) as usize)
                    .collect(),
                vec![],
            ),
            Space::Box(b) => (
                vec![],
                (0..TOTAL * b.dim())
                    .map(|_| (rng.next_f64() * 5.0 - 2.5) as f32)
                    .collect(),
            ),
        })
        .collect()
}

fn run(envs: &mut dyn VecEnv, acts: &[(Vec<usize>, Vec<f32>)]) -> Vec<Frame> {
    let first = envs.reset(Some(100)).unwrap().to_vec();
    let mut frames = vec![Frame {
        obs: first,
        rewards: vec![],
        terminated: vec![],
        truncated: vec![],
    }];
    for (d, c) in acts {
        let a = if c.is_empty() {
            VecActions::Discrete(d)
        } else {
            VecActions::Continuous(c)
        };
        let s = envs.step(a).unwrap();
        frames.push(Frame {
            obs: s.obs.to_vec(),
            rewards: s.rewards.to_vec(),
            terminated: s.terminated.to_vec(),
            truncated: s.truncated.to_vec(),
        });
    }
    frames
}

/// Next-step autoreset written out by hand over single environments.
fn reference(id: &str, acts: &[(Vec<usize>, Vec<f32>)]) -> Vec<Frame> {
    let mut envs: Vec<Box<dyn Env>> = (0..TOTAL).map(|_| make(id).unwrap()).collect();
    let dim = envs[0].observation_space().flat_dim();
    let act_dim = envs[0].action_space().flat_dim();
    let mut obs = vec![0.0; TOTAL * dim];
    for (i, e) in envs.iter_mut().enumerate() {
        e.reset_into(Some(100 + i as u64), &mut obs[i * dim..(i + 1) * dim])
            .unwrap();
    }
    let mut frames = vec![Frame {
        obs: obs.clone(),
        rewards: vec![],
        terminated: vec![],
        truncated: vec![],
    }];
    let mut ended = [false; TOTAL];
    for (d, c) in acts {
        let mut f = Frame {
            obs: vec![],
            rewards: vec![],
            terminated: vec![],
            truncated: vec![],
        };
        for (i, e) in envs.iter_mut().enumerate() {
            if ended[i] {
                f.obs.extend(e.reset(None).unwrap());
                f.rewards.push(0.0);
                f.terminated.push(false);
                f.truncated.push(false);
                ended[i] = false;
            } else {
                let a = if c.is_empty() {
                    Action::Discrete(d[i])
                } else {
                    Action::Continuous(&c[i * act_dim..(i + 1) * act_dim])
                };
                let s = e.step(a).unwrap();
                ended[i] = s.terminated || s.truncated;
                f.obs.extend(s.obs);
                f.rewards.push(s.reward);
                f.terminated.push(s.terminated);
                f.truncated.push(s.truncated);
            }
        }
        frames.push(f);
    }
    frames
}

fn same_trajectories(id: &str) {
    let space = make(id).unwrap().action_space().clone();
    let acts = actions(&space, 9);
    let want = reference(id, &acts);
    let ends: usize = want
        .iter()
        .map(|f| {
            f.terminated
                .iter()
                .chain(&f.truncated)
                .filter(|&&b| b)
                .count()
        })
        .sum();
    assert!(
        ends >= TOTAL,
        "{id}: the run must cross episode ends ({ends})"
    );
    let mut sync = SyncVecEnv::from_id(id, TOTAL).unwrap();
    assert!(
        run(&mut sync, &acts) == want,
        "{id}: SyncVecEnv differs from the reference"
    );
    for workers in [1, 2, 4] {
        let mut threaded = ThreadedVecEnv::from_id(id, workers, TOTAL / workers).unwrap();
        assert_eq!(threaded.workers(), workers);
        let got = run(&mut threaded, &acts);
        assert!(
            got == want,
            "{id}: ThreadedVecEnv with {workers} workers differs"
        );
    }
}

#[test]
fn cartpole_same_trajectories_sync_and_threaded() {
    same_trajectories("CartPole-v1");
}

#[test]
fn pendulum_same_trajectories_sync_and_threaded() {
    same_trajectories("Pendulum-v1");
}

#[test]
fn threaded_checks_actions_before_stepping() {
    let mut envs = ThreadedVecEnv::from_id("Pendulum-v1", 2, 2).unwrap();
    let before = envs.reset(Some(0)).unwrap().to_vec();
    let e = envs
        .step(VecActions::Continuous(&[0.0, 0.0, 0.0, f32::NAN]))
        .unwrap_err();
    assert!(e.to_string().contains("sub-environment 3"), "{e}");
    assert!(envs.step(VecActions::Discrete(&[0; 4])).is_err());
    // Nothing moved: the next valid step starts from the reset state.
    let mut sync = SyncVecEnv::from_id("Pendulum-v1", 4).unwrap();
    assert_eq!(sync.reset(Some(0)).unwrap(), &before[..]);
    let a = [0.1f32, 0.2, 0.3, 0.4];
    let want = sync.step(VecActions::Continuous(&a)).unwrap().obs.to_vec();
    assert_eq!(
        envs.step(VecActions::Continuous(&a)).unwrap().obs,
        &want[..]
    );
}
