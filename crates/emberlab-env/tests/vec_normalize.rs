//! `VecNormalize` against a naive recomputation from an unwrapped twin: statistics,
//! normalised observations, scaled rewards, snapshots, frozen statistics, evaluation envs.

use emberlab_core::state::{StateReader, StateWriter};
use emberlab_env::{EnvFactory, NormalizeConfig, SyncVecEnv, VecActions, VecEnv, VecNormalize};

const N: usize = 4;
const DIM: usize = 3;
const GAMMA: f64 = 0.9;

fn config() -> NormalizeConfig {
    NormalizeConfig {
        gamma: GAMMA,
        ..NormalizeConfig::default()
    }
}

fn actions(t: usize) -> Vec<f32> {
    (0..N)
        .map(|i| (((t * 7 + i * 3) % 9) as f32 - 4.0) / 2.0)
        .collect()
}

/// Mean and population variance of `rows` after Chan's update from (mean 0, var 1, count
/// 1e-4): the prior's weight enters exactly as a pseudo-sample.
fn naive(rows: &[Vec<f64>], dim: usize) -> (Vec<f64>, Vec<f64>) {
    let c0 = 1e-4;
    let n = rows.len() as f64;
    let mut mean = vec![0.0; dim];
    let mut var = vec![0.0; dim];
    for d in 0..dim {
        let sum: f64 = rows.iter().map(|r| r[d]).sum();
        mean[d] = sum / (n + c0);
        // Total sum of squares around the pooled mean, prior included (mean 0, var 1).
        let ss: f64 = rows.iter().map(|r| (r[d] - mean[d]).powi(2)).sum::<f64>()
            + c0 * (1.0 + mean[d] * mean[d]);
        var[d] = ss / (n + c0);
    }
    (mean, var)
}

#[test]
fn statistics_observations_and_rewards_match_a_naive_recomputation() {
    let mut plain = SyncVecEnv::from_id("Pendulum-v1", N).unwrap();
    let mut norm =
        VecNormalize::new(SyncVecEnv::from_id("Pendulum-v1", N).unwrap(), config()).unwrap();
    let mut seen: Vec<Vec<f64>> = Vec::new();
    let rows = |obs: &[f32]| -> Vec<Vec<f64>> {
        obs.chunks(DIM)
            .map(|r| r.iter().map(|&x| x as f64).collect())
            .collect()
    };
    let raw = plain.reset(Some(3)).unwrap().to_vec();
    let got = norm.reset(Some(3)).unwrap().to_vec();
    seen.extend(rows(&raw));
    let mut returns = [0.0f64; N];
    let mut seen_returns: Vec<Vec<f64>> = Vec::new();
    let check_obs = |raw: &[f32], got: &[f32], seen: &[Vec<f64>]| {
        let (mean, var) = naive(seen, DIM);
        for (k, (&x, &y)) in raw.iter().zip(got).enumerate() {
            let d = k % DIM;
            let want = ((x as f64 - mean[d]) / (var[d] + 1e-8).sqrt()).clamp(-10.0, 10.0);
            assert!(
                (y as f64 - want).abs() < 1e-4 * want.abs().max(1.0),
                "obs {k}: {y} vs {want}"
            );
        }
    };
    check_obs(&raw, &got, &seen);
    for t in 0..300 {
        let a = actions(t);
        let p = plain.step(VecActions::Continuous(&a)).unwrap();
        let (p_obs, p_rew) = (p.obs.to_vec(), p.rewards.to_vec());
        let p_done: Vec<bool> = (0..N).map(|i| p.terminated[i] || p.truncated[i]).collect();
        let s = norm.step(VecActions::Continuous(&a)).unwrap();
        assert_eq!(s.raw_rewards.unwrap(), &p_rew[..], "raw rewards at {t}");
        assert_eq!(s.env_rewards(), &p_rew[..]);
        seen.extend(rows(&p_obs));
        check_obs(&p_obs, s.obs, &seen);
        for (ret, r) in returns.iter_mut().zip(&p_rew) {
            *ret = *ret * GAMMA + r;
        }
        seen_returns.push(returns.to_vec());
        let flat: Vec<Vec<f64>> = seen_returns.iter().flatten().map(|&r| vec![r]).collect();
        let (_, ret_var) = naive(&flat, 1);
        for (i, (&got, &raw)) in s.rewards.iter().zip(&p_rew).enumerate() {
            let want = (raw / (ret_var[0] + 1e-8).sqrt()).clamp(-10.0, 10.0);
            assert!(
                (got - want).abs() < 1e-6 * want.abs().max(1.0),
                "reward {i} at {t}: {got} vs {want}"
            );
        }
        for (ret, &done) in returns.iter_mut().zip(&p_done) {
            if done {
                *ret = 0.0;
            }
        }
    }
    // Pendulum's 200-step episodes ended and restarted in between.
    assert!(seen.len() > 200 * N);
}

#[test]
fn a_snapshot_continues_exactly_and_frozen_statistics_stay_put() {
    let make = || VecNormalize::new(SyncVecEnv::from_id("Pendulum-v1", N).unwrap(), config());
    let mut a = make().unwrap();
    a.reset(Some(5)).unwrap();
    for t in 0..40 {
        a.step(VecActions::Continuous(&actions(t))).unwrap();
    }
    let mut out = StateWriter::new();
    a.save_state(&mut out).unwrap();
    let mut b = make().unwrap();
    b.reset(Some(99)).unwrap();
    b.load_state(&mut StateReader::new(out.words(), "test"))
        .unwrap();
    assert_eq!(
        a.obs_normalizer().statistics(),
        b.obs_normalizer().statistics()
    );
    for t in 40..80 {
        let x = a.step(VecActions::Continuous(&actions(t))).unwrap();
        let (obs, rew) = (x.obs.to_vec(), x.rewards.to_vec());
        let y = b.step(VecActions::Continuous(&actions(t))).unwrap();
        assert_eq!(obs, y.obs, "obs at {t}");
        assert_eq!(rew, y.rewards, "rewards at {t}");
    }

    // A snapshot of a plain vector env is refused, not misread.
    let mut plain = StateWriter::new();
    SyncVecEnv::from_id("Pendulum-v1", N)
        .unwrap()
        .save_state(&mut plain)
        .unwrap();
    let mut c = make().unwrap();
    assert!(
        c.load_state(&mut StateReader::new(plain.words(), "test"))
            .is_err()
    );

    a.set_training(false);
    let (obs_before, ret_before) = (
        a.obs_normalizer().statistics(),
        a.return_statistics().clone(),
    );
    for t in 0..20 {
        a.step(VecActions::Continuous(&actions(t))).unwrap();
    }
    assert_eq!(a.obs_normalizer().statistics(), obs_before);
    assert_eq!(a.return_statistics(), &ret_before);
}

#[test]
fn evaluation_envs_see_the_live_statistics_without_updating_them() {
    let mut train =
        VecNormalize::new(SyncVecEnv::from_id("Pendulum-v1", N).unwrap(), config()).unwrap();
    let normalizer = train.obs_normalizer();
    let inner = emberlab_env::factory("Pendulum-v1").unwrap();
    let eval = normalizer.factory(move || inner.make());
    train.reset(Some(0)).unwrap();
    for t in 0..30 {
        train.step(VecActions::Continuous(&actions(t))).unwrap();
    }
    let stats = normalizer.statistics();
    let mut env = eval.make().unwrap();
    let mut raw = emberlab_env::make("Pendulum-v1").unwrap();
    let got = env.reset(Some(7)).unwrap();
    let mut want = raw.reset(Some(7)).unwrap();
    normalizer.normalize(&mut want);
    assert_eq!(got, want);
    let step = env.step(emberlab_core::Action::Continuous(&[1.0])).unwrap();
    let mut want = raw
        .step(emberlab_core::Action::Continuous(&[1.0]))
        .unwrap()
        .obs;
    normalizer.normalize(&mut want);
    assert_eq!(step.obs, want);
    assert_eq!(
        normalizer.statistics(),
        stats,
        "evaluation updated the statistics"
    );

    // The statistics round-trip through a file; a damaged file is an error, not a panic.
    let dir = std::env::temp_dir().join(format!("ember-vecnorm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(emberlab_env::OBS_NORMALIZER_FILE);
    normalizer.save_file(&path).unwrap();
    let other = emberlab_env::ObsNormalizer::new(DIM, 10.0, 1e-8);
    other.load_file(&path).unwrap();
    assert_eq!(other.statistics(), stats);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[40] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let fresh = emberlab_env::ObsNormalizer::new(DIM, 10.0, 1e-8);
    let err = fresh.load_file(&path).unwrap_err().to_string();
    assert!(err.contains("checksum"), "{err}");
    assert_eq!(
        fresh.statistics().count(),
        1e-4,
        "a failed load changed the statistics"
    );
    assert!(
        emberlab_env::ObsNormalizer::new(2, 10.0, 1e-8)
            .load_file(&dir.join("missing"))
            .is_err()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_settings_and_spaces_are_refused() {
    for bad in [
        NormalizeConfig {
            clip_obs: 0.0,
            ..config()
        },
        NormalizeConfig {
            gamma: 1.5,
            ..config()
        },
        NormalizeConfig {
            epsilon: f64::NAN,
            ..config()
        },
    ] {
        let err = VecNormalize::new(SyncVecEnv::from_id("Pendulum-v1", 2).unwrap(), bad)
            .err()
            .expect("refused")
            .to_string();
        assert!(err.contains("normalize."), "{err}");
    }
    // With `observations: false` only rewards change.
    let only_rewards = NormalizeConfig {
        observations: false,
        ..config()
    };
    let mut env =
        VecNormalize::new(SyncVecEnv::from_id("CartPole-v1", 2).unwrap(), only_rewards).unwrap();
    let raw = SyncVecEnv::from_id("CartPole-v1", 2)
        .unwrap()
        .reset(Some(1))
        .unwrap()
        .to_vec();
    assert_eq!(
        env.reset(Some(1)).unwrap(),
        &raw[..],
        "observations left alone"
    );
}
