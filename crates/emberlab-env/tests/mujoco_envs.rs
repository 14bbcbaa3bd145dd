//! The MuJoCo tasks as Ember environments: snapshots continue bit for bit, threaded vector
//! envs match sequential ones, and bad input is an error that leaves the environment as it
//! was. Needs `EMBER_GYMNASIUM_ASSETS` (scripts/setup-mujoco.sh).

#![cfg(feature = "mujoco")]

use emberlab_core::state::{StateReader, StateWriter};
use emberlab_core::{Action, Env, Space};
use emberlab_env::{MujocoEnv, SyncVecEnv, ThreadedVecEnv, VecActions, VecEnv};

/// Deterministic actions in [-1.2, 1.2] (some outside the control range).
fn action(t: usize, i: usize, dim: usize) -> Vec<f32> {
    (0..dim)
        .map(|j| ((t * 31 + i * 17 + j * 7) % 25) as f32 / 10.0 - 1.2)
        .collect()
}

fn act_dim(env: &dyn Env) -> usize {
    match env.action_space() {
        Space::Box(b) => b.dim(),
        s => panic!("{s}"),
    }
}

/// Runs `steps` steps from the env's current state, resetting after episode ends; returns
/// every observation and reward.
fn run(env: &mut dyn Env, from: usize, steps: usize) -> Vec<(Vec<f32>, f64, bool, bool)> {
    let dim = act_dim(env);
    (from..from + steps)
        .map(|t| {
            let s = env.step(Action::Continuous(&action(t, 0, dim))).unwrap();
            let out = (s.obs.clone(), s.reward, s.terminated, s.truncated);
            if s.terminated || s.truncated {
                env.reset(None).unwrap();
            }
            out
        })
        .collect()
}

#[test]
fn snapshots_continue_bit_for_bit() {
    // Ant and Humanoid keep positions between steps; Reacher truncates every 50 steps.
    for id in [
        "HalfCheetah-v5",
        "Ant-v5",
        "Humanoid-v5",
        "Hopper-v5",
        "Reacher-v5",
    ] {
        let mut env = emberlab_env::make(id).unwrap();
        env.reset(Some(3)).unwrap();
        run(env.as_mut(), 0, 37);
        let mut snap = StateWriter::new();
        env.save_state(&mut snap).unwrap();
        let words = snap.into_words();
        let want = run(env.as_mut(), 37, 120);
        let mut fresh = emberlab_env::make(id).unwrap();
        fresh
            .load_state(&mut StateReader::new(&words, "snapshot"))
            .unwrap();
        let got = run(fresh.as_mut(), 37, 120);
        assert_eq!(got, want, "{id}: a loaded snapshot diverged");
    }
}

#[test]
fn a_bad_snapshot_leaves_the_environment_unchanged() {
    let mut ant = MujocoEnv::new("Ant-v5").unwrap();
    ant.reset(Some(1)).unwrap();
    run(&mut ant, 0, 5);
    let mut snap = StateWriter::new();
    ant.save_state(&mut snap).unwrap();
    let words = snap.into_words();
    let want = {
        let mut copy = MujocoEnv::new("Ant-v5").unwrap();
        copy.load_state(&mut StateReader::new(&words, "ant"))
            .unwrap();
        run(&mut copy, 5, 10)
    };
    // Another task's snapshot, a truncated one: errors, and the Ant goes on as before.
    let mut cheetah = MujocoEnv::new("HalfCheetah-v5").unwrap();
    cheetah.reset(Some(0)).unwrap();
    let mut other = StateWriter::new();
    cheetah.save_state(&mut other).unwrap();
    let e = ant
        .load_state(&mut StateReader::new(other.words(), "cheetah"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("HalfCheetah-v5") && e.contains("Ant-v5"), "{e}");
    assert!(
        ant.load_state(&mut StateReader::new(&words[..words.len() - 3], "short"))
            .is_err()
    );
    assert_eq!(run(&mut ant, 5, 10), want);
}

#[test]
fn threaded_vector_envs_match_sequential_ones() {
    let (workers, per) = (2, 3);
    let n = workers * per;
    let mut threaded = ThreadedVecEnv::from_id("Hopper-v5", workers, per).unwrap();
    let mut sync = SyncVecEnv::from_id("Hopper-v5", n).unwrap();
    assert_eq!(
        threaded.reset(Some(9)).unwrap(),
        sync.reset(Some(9)).unwrap()
    );
    let mut ends = 0;
    for t in 0..300 {
        let actions: Vec<f32> = (0..n).flat_map(|i| action(t, i, 3)).collect();
        let a = threaded.step(VecActions::Continuous(&actions)).unwrap();
        let (obs, rewards, term) = (a.obs.to_vec(), a.rewards.to_vec(), a.terminated.to_vec());
        let b = sync.step(VecActions::Continuous(&actions)).unwrap();
        assert_eq!(
            (obs, rewards),
            (b.obs.to_vec(), b.rewards.to_vec()),
            "step {t}"
        );
        assert_eq!(term, b.terminated.to_vec());
        ends += term.iter().filter(|&&x| x).count();
    }
    // The autoresets were exercised.
    assert!(ends > 0);
}

#[test]
fn bad_input_is_an_error_naming_it() {
    let e = MujocoEnv::new("HalfCheetah-v4").unwrap_err().to_string();
    assert!(
        e.contains("HalfCheetah-v4") && e.contains("Humanoid-v5"),
        "{e}"
    );
    let e = MujocoEnv::with_xml("Hopper-v5", "/no/such/hopper.xml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("/no/such/hopper.xml"), "{e}");

    let mut env = MujocoEnv::new("Hopper-v5").unwrap();
    assert!(
        env.step(Action::Continuous(&[0.0; 3])).is_err(),
        "step before reset"
    );
    env.reset(Some(0)).unwrap();
    let before = (env.qpos().to_vec(), env.qvel().to_vec());
    for bad in [&[0.0, 0.0][..], &[0.0, f32::NAN, 0.0], &[0.0; 4]] {
        let e = env.step(Action::Continuous(bad)).unwrap_err().to_string();
        assert!(e.contains("action"), "{e}");
    }
    assert!(env.step(Action::Discrete(0)).is_err());
    let e = env.set_state(&[0.0; 5], &[0.0; 6]).unwrap_err().to_string();
    assert!(e.contains("qpos"), "{e}");
    let mut qpos = before.0.clone();
    qpos[2] = f64::INFINITY;
    let e = env.set_state(&qpos, &before.1).unwrap_err().to_string();
    assert!(e.contains("qpos[2]"), "{e}");
    assert_eq!((env.qpos().to_vec(), env.qvel().to_vec()), before);
    let mut short = vec![0.0; 5];
    assert!(env.reset_into(None, &mut short).is_err());
}

#[test]
fn spaces_and_reward_terms_are_gymnasium_s() {
    let expect = [
        ("HalfCheetah-v5", 17, 6),
        ("Hopper-v5", 11, 3),
        ("Walker2d-v5", 17, 6),
        ("Ant-v5", 105, 8),
        ("Humanoid-v5", 348, 17),
        ("Swimmer-v5", 8, 2),
        ("InvertedPendulum-v5", 4, 1),
        ("InvertedDoublePendulum-v5", 9, 1),
        ("Reacher-v5", 10, 2),
    ];
    for (id, obs, act) in expect {
        let mut env = MujocoEnv::new(id).unwrap();
        assert_eq!(env.observation_space().flat_dim(), obs, "{id}");
        assert_eq!(act_dim(&env), act, "{id}");
        assert!(emberlab_env::ids().iter().any(|i| i == id));
        env.reset(Some(0)).unwrap();
        let s = env.step(Action::Continuous(&vec![0.3; act])).unwrap();
        let terms = env.reward_terms();
        assert!(!terms.is_empty() && terms.iter().all(|(_, v)| v.is_finite()));
        assert!(terms.iter().any(|(_, v)| *v != 0.0), "{id}: {terms:?}");
        assert!(s.reward.is_finite());
    }
}

/// MuJoCo's own renderer, offscreen through EGL: fails loudly (saying what to install) on a
/// machine without an EGL device.
#[cfg(feature = "mujoco-render")]
#[test]
fn frames_follow_the_state_and_bad_sizes_are_refused() {
    use emberlab_env::MujocoRenderer;
    let mut env = MujocoEnv::new("Hopper-v5").unwrap();
    env.reset(Some(3)).unwrap();
    let big = MujocoRenderer::new(&env, 100_000, 10)
        .unwrap_err()
        .to_string();
    assert!(big.contains("offscreen buffer"), "{big}");
    let mut r = MujocoRenderer::new(&env, 64, 48).unwrap();
    assert_eq!(r.size(), (64, 48));
    let a = r.render(&mut env).unwrap().to_vec();
    assert_eq!(a.len(), 64 * 48 * 3);
    assert_eq!(
        r.render(&mut env).unwrap(),
        &a[..],
        "the same state, the same frame"
    );
    let flat = a.chunks(3).all(|p| p == &a[..3]);
    assert!(!flat, "a frame of one colour");
    for _ in 0..20 {
        env.step(Action::Continuous(&[1.0, -1.0, 1.0])).unwrap();
    }
    assert_ne!(r.render(&mut env).unwrap(), &a[..], "the hopper moved");
}
