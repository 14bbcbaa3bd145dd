//! [`TensorPendulum`]: many `Pendulum-v1`s stepped as `[B]` tensors on any burn device.

use super::episode_clock::EpisodeClock;
use super::tensor_step::TensorStep;
use super::uniform_column::uniform_column;
use crate::classic::pendulum::{DEFAULT_GRAVITY, DT, L, M, MAX_SPEED, MAX_TORQUE};
use burn::tensor::{Device, Tensor, TensorData};
use emberlab_core::{EmberRng, Error, Result};
use std::f64::consts::PI;

/// `B` copies of `Pendulum-v1` (with its 200-step time limit) as tensors on a burn
/// [`Device`], with Gymnasium's next-step autoreset: the step after an episode ends
/// resets that copy (reward 0, both flags false, its action ignored).
///
/// Same constants and order of operations as [`crate::Pendulum`]: the torque is clipped
/// into `[-2, 2]`, the reward is `-(angle_normalize(θ)² + 0.1 θ̇² + 0.001 u²)`,
/// `θ̇ ← clip(θ̇ + (3g/2l · sin θ + 3/(ml²) · u) dt, -8, 8)`, then `θ ← θ + θ̇ dt`;
/// observations are `[cos θ, sin θ, θ̇]`. The state is kept in `f32` (Gymnasium keeps it
/// in `f64`), so one step agrees with the scalar environment to about 1e-6 and
/// trajectories drift apart slowly after that. The pendulum never terminates; the time
/// limit truncates. Reset states (`θ ~ U(-π, π)`, `θ̇ ~ U(-1, 1)`) are drawn on the host
/// from an [`EmberRng`] and uploaded, as [`crate::TensorCartPole`] does, so a seed gives
/// the same run on every backend. Each step checks that no action is NaN, which reads one
/// boolean back from the device.
///
/// `θ`, `θ̇`, `cos θ` and `sin θ` (the observation's columns; `sin θ` is also what the
/// next step needs) are kept as separate `[B]` tensors, so every operation runs on contiguous
/// memory; the observations `[B, 3]` are one concatenation seen transposed (a strided
/// view: matrix products read it as it is, and reading it to the host gives the usual
/// row-major order).
///
/// ```
/// use burn::tensor::{Tensor, TensorData};
/// use emberlab_env::TensorPendulum;
///
/// let device = emberlab_backend::DeviceSpec::Flex.device()?;
/// let mut envs = TensorPendulum::new(8, 0, &device)?;
/// let obs = envs.reset();
/// assert_eq!(obs.dims(), [8, 3]);
/// // One torque per copy, `[B, 1]`; values beyond ±2 are clipped.
/// let actions = Tensor::<2>::from_data(TensorData::new(vec![0.5f32; 8], [8, 1]), &device);
/// let step = envs.step(actions)?;
/// let rewards = step.rewards.to_data_as::<f32>().try_to_vec::<f32>().unwrap();
/// assert!(rewards.iter().all(|&r| r <= 0.0));
/// # Ok::<(), emberlab_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct TensorPendulum {
    device: Device,
    num_envs: usize,
    gravity: f64,
    /// Angles `θ` `[B]`.
    theta: Tensor<1>,
    /// Angular speeds `θ̇` `[B]`.
    theta_dot: Tensor<1>,
    /// The observation's first two columns, `cos θ` and `sin θ` `[B]`.
    cos_sin: [Tensor<1>; 2],
    clock: EpisodeClock,
    rng: EmberRng,
}

impl TensorPendulum {
    /// `num_envs` (≥ 1) pendulums on `device` with Gymnasium's gravity `g = 10`, their
    /// reset states drawn from `seed`.
    pub fn new(num_envs: usize, seed: u64, device: &Device) -> Result<Self> {
        if num_envs == 0 {
            return Err(Error::invalid("num_envs", 0, ">= 1"));
        }
        let mut envs = TensorPendulum {
            device: device.clone(),
            num_envs,
            gravity: DEFAULT_GRAVITY,
            theta: Tensor::zeros([num_envs], device),
            theta_dot: Tensor::zeros([num_envs], device),
            cos_sin: [
                Tensor::ones([num_envs], device),
                Tensor::zeros([num_envs], device),
            ],
            clock: EpisodeClock::new(num_envs, 200, device),
            rng: EmberRng::seed_from(seed),
        };
        envs.reset();
        Ok(envs)
    }

    /// Changes the time limit (≥ 1; Gymnasium registers 200).
    pub fn with_max_episode_steps(mut self, steps: u32) -> Result<Self> {
        if steps == 0 {
            return Err(Error::invalid("max_episode_steps", 0, ">= 1"));
        }
        self.clock.set_max_episode_steps(steps);
        Ok(self)
    }

    /// Gymnasium's `g` argument (finite; default 10).
    pub fn with_gravity(mut self, g: f64) -> Result<Self> {
        self.gravity = Error::check_finite(|| "TensorPendulum gravity".into(), g)?;
        Ok(self)
    }

    /// Number of pendulums `B`.
    pub fn num_envs(&self) -> usize {
        self.num_envs
    }

    /// The time limit (200 unless changed by [`TensorPendulum::with_max_episode_steps`]).
    pub fn max_episode_steps(&self) -> u32 {
        self.clock.max_episode_steps()
    }

    /// The device the states live on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Fresh reset states `(θ, θ̇)`, each `[B]`, drawn on the host (all `θ`, then all
    /// `θ̇`).
    fn fresh_states(&mut self) -> (Tensor<1>, Tensor<1>) {
        let (b, pi) = (self.num_envs, PI as f32);
        let theta = uniform_column(&mut self.rng, b, -pi, pi, &self.device);
        let theta_dot = uniform_column(&mut self.rng, b, -1.0, 1.0, &self.device);
        (theta, theta_dot)
    }

    /// Sets `θ` and `θ̇` and updates `cos θ`, `sin θ`; returns the observations `[B, 3]`.
    fn enter(&mut self, theta: Tensor<1>, theta_dot: Tensor<1>) -> Tensor<2> {
        self.cos_sin = [theta.clone().cos(), theta.clone().sin()];
        self.theta = theta;
        self.theta_dot = theta_dot;
        let [cos, sin] = self.cos_sin.clone();
        Tensor::cat(vec![cos, sin, self.theta_dot.clone()], 0)
            .reshape([3, self.num_envs])
            .swap_dims(0, 1)
    }

    /// Resets every copy and returns the observations `[B, 3]`.
    pub fn reset(&mut self) -> Tensor<2> {
        let (theta, theta_dot) = self.fresh_states();
        self.clock.restart();
        self.enter(theta, theta_dot)
    }

    /// The states `[B, 2]` (`θ, θ̇`) read back to the host, row-major.
    pub fn state_host(&self) -> Vec<f32> {
        let read = |t: &Tensor<1>| {
            t.to_data_as::<f32>()
                .try_to_vec::<f32>()
                .expect("converted to f32")
        };
        let (theta, theta_dot) = (read(&self.theta), read(&self.theta_dot));
        theta
            .into_iter()
            .zip(theta_dot)
            .flat_map(|(th, thd)| [th, thd])
            .collect()
    }

    /// Overwrites the states from `B × 2` host values (`θ, θ̇` per copy, all finite), as if
    /// every copy had just been reset into them. Returns the observations `[B, 3]`.
    pub fn set_state(&mut self, values: &[f32]) -> Result<Tensor<2>> {
        let b = self.num_envs;
        Error::check_len("TensorPendulum state", b * 2, values.len())?;
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(Error::invalid(
                format!("TensorPendulum state[{i}]"),
                values[i],
                "a finite value",
            ));
        }
        self.reset();
        let column = |k: usize| {
            let v: Vec<f32> = values.iter().skip(k).step_by(2).copied().collect();
            Tensor::from_data(TensorData::new(v, [b]), &self.device)
        };
        let (theta, theta_dot) = (column(0), column(1));
        Ok(self.enter(theta, theta_dot))
    }

    /// Steps every copy with the torques `actions` `[B, 1]` (clipped into `[-2, 2]`);
    /// copies whose episode ended at the previous step are reset instead. Errors on a wrong
    /// shape or a NaN torque.
    pub fn step(&mut self, actions: Tensor<2>) -> Result<TensorStep> {
        let b = self.num_envs;
        let dims = actions.dims();
        if dims != [b, 1] {
            return Err(Error::Shape {
                what: "TensorPendulum actions".into(),
                expected: format!("[{b}, 1]"),
                got: format!("{dims:?}"),
            });
        }
        if actions.clone().is_nan().any().into_scalar::<bool>() {
            let host = actions
                .to_data_as::<f32>()
                .try_to_vec::<f32>()
                .unwrap_or_default();
            let i = host.iter().position(|a| a.is_nan()).unwrap_or(0);
            return Err(Error::InvalidAction {
                action: format!("[NaN] (copy {i})"),
                space: format!("Box(low=[-{MAX_TORQUE:?}], high=[{MAX_TORQUE:?}])"),
            });
        }
        let u = actions.reshape([b]).clamp(-MAX_TORQUE, MAX_TORQUE);
        let th = self.theta.clone();
        let thdot = self.theta_dot.clone();
        let [_, sin_th] = self.cos_sin.clone();

        // angle_normalize(θ) = ((θ + π) mod 2π) − π = θ − 2π ⌊θ / 2π + 1/2⌋, the floored
        // modulo written out (backends differ on the sign of a float remainder).
        let wraps = th
            .clone()
            .mul_scalar(0.5 / PI)
            .add_scalar(0.5)
            .floor()
            .mul_scalar(2.0 * PI);
        let normalized = th.clone() - wraps;
        // −cost = −0.1 θ̇² − angle² − 0.001 u², the same rounding as −(angle² + …).
        let neg_costs = thdot.clone().square().mul_scalar(-0.1) - normalized.square()
            + u.clone().square().mul_scalar(-0.001);

        let accel =
            sin_th.mul_scalar(3.0 * self.gravity / (2.0 * L)) + u.mul_scalar(3.0 / (M * L * L));
        let new_thdot = (thdot + accel.mul_scalar(DT)).clamp(-MAX_SPEED, MAX_SPEED);
        let new_th = th + new_thdot.clone().mul_scalar(DT);

        // Next-step autoreset: copies that ended last step start afresh.
        let resetting = self.clock.resetting();
        let (fresh_th, fresh_thdot) = self.fresh_states();
        let obs = self.enter(
            new_th.mask_where(resetting.clone(), fresh_th),
            new_thdot.mask_where(resetting.clone(), fresh_thdot),
        );
        let (terminated, truncated) = self.clock.advance(resetting.clone(), None);
        Ok(TensorStep {
            obs,
            rewards: neg_costs.mask_fill(resetting, 0.0),
            terminated,
            truncated,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClassicEnv, Pendulum};
    use burn::tensor::Bool;
    use emberlab_core::{Action, Env};

    fn device() -> Device {
        emberlab_backend::DeviceSpec::Flex
            .device()
            .expect("flex is compiled for tests")
    }

    fn floats(v: &[f32]) -> Tensor<2> {
        Tensor::from_data(TensorData::new(v.to_vec(), [v.len(), 1]), &device())
    }

    fn host<const D: usize>(t: Tensor<D>) -> Vec<f32> {
        t.to_data_as::<f32>().try_to_vec::<f32>().unwrap()
    }

    fn flags(t: Tensor<1, Bool>) -> Vec<bool> {
        host(t.float()).iter().map(|&x| x != 0.0).collect()
    }

    /// `b` scalar pendulums and a tensor batch started in the same spread-out states
    /// (angles well beyond `±π`, speeds up to the limit).
    fn twins(b: usize, seed: u64) -> (Vec<Pendulum>, TensorPendulum, EmberRng) {
        let mut rng = EmberRng::seed_from(seed);
        let mut scalar: Vec<Pendulum> = (0..b).map(|_| Pendulum::new()).collect();
        let mut states = Vec::new();
        for env in &mut scalar {
            let th = ((rng.next_f64() - 0.5) * 20.0) as f32;
            let thdot = ((rng.next_f64() - 0.5) * 16.0) as f32;
            env.set_state(&[f64::from(th), f64::from(thdot)]).unwrap();
            states.extend([th, thdot]);
        }
        let mut envs = TensorPendulum::new(b, 0, &device()).unwrap();
        envs.set_state(&states).unwrap();
        (scalar, envs, rng)
    }

    /// Random torques, some beyond the clipping range.
    fn torques(rng: &mut EmberRng, b: usize) -> Vec<f32> {
        (0..b)
            .map(|_| ((rng.next_f64() - 0.5) * 6.0) as f32)
            .collect()
    }

    #[test]
    fn one_step_matches_the_scalar_pendulum() {
        let b = 256;
        let (mut scalar, mut envs, mut rng) = twins(b, 5);
        let actions = torques(&mut rng, b);
        let step = envs.step(floats(&actions)).unwrap();
        let obs = host(step.obs);
        let rewards = host(step.rewards);
        assert!(!flags(step.terminated).iter().any(|&t| t));
        assert!(!flags(step.truncated).iter().any(|&t| t));
        for (i, env) in scalar.iter_mut().enumerate() {
            let s = env.step(Action::Continuous(&actions[i..=i])).unwrap();
            for k in 0..3 {
                let (got, want) = (obs[i * 3 + k], s.obs[k]);
                assert!((got - want).abs() < 1e-5, "copy {i}[{k}]: {got} vs {want}");
            }
            let (got, want) = (f64::from(rewards[i]), s.reward);
            assert!(
                (got - want).abs() < 1e-5 * want.abs().max(1.0),
                "copy {i} reward: {got} vs {want}"
            );
        }
        // Speeds were clipped somewhere, and torques beyond ±2 were given.
        assert!(obs.chunks(3).any(|o| o[2].abs() == 8.0));
        assert!(actions.iter().any(|a| a.abs() > 2.0));
    }

    /// Both run the same actions for a whole episode. Every step agrees within f32
    /// tolerance when the scalar copies are put into the tensor copies' states first
    /// (`lockstep`); left to run freely (`free`), f32 and f64 states drift apart (the
    /// upright pendulum is unstable), so the free twins are compared for the first 50
    /// steps. The time limit truncates every copy at step 200 and the next step resets it.
    #[test]
    fn trajectories_match_the_scalar_pendulum_for_an_episode() {
        let b = 64;
        let (mut free, mut envs, mut rng) = twins(b, 11);
        let mut lockstep: Vec<Pendulum> = (0..b).map(|_| Pendulum::new()).collect();
        let close = |got: f32, want: f64, tol: f64| {
            (f64::from(got) - want).abs() <= tol * want.abs().max(1.0)
        };
        for t in 1..=200 {
            let state = envs.state_host();
            let actions = torques(&mut rng, b);
            let step = envs.step(floats(&actions)).unwrap();
            let obs = host(step.obs);
            let rewards = host(step.rewards);
            assert_eq!(flags(step.truncated), vec![t == 200; b], "step {t}");
            assert!(!flags(step.terminated).iter().any(|&x| x));
            for i in 0..b {
                let action = Action::Continuous(&actions[i..=i]);
                let env = &mut lockstep[i];
                env.set_state(&[f64::from(state[2 * i]), f64::from(state[2 * i + 1])])
                    .unwrap();
                let s = env.step(action).unwrap();
                for k in 0..3 {
                    let (got, want) = (obs[i * 3 + k], f64::from(s.obs[k]));
                    assert!(
                        close(got, want, 1e-5),
                        "step {t} copy {i}[{k}]: {got} vs {want}"
                    );
                }
                let (got, want) = (rewards[i], s.reward);
                assert!(close(got, want, 1e-5), "step {t} copy {i}: {got} vs {want}");
                let s = free[i].step(action).unwrap();
                if t <= 50 {
                    for k in 0..3 {
                        let (got, want) = (obs[i * 3 + k], f64::from(s.obs[k]));
                        assert!(
                            close(got, want, 1e-3),
                            "free step {t} {i}[{k}]: {got} vs {want}"
                        );
                    }
                    let (got, want) = (rewards[i], s.reward);
                    assert!(close(got, want, 1e-3), "free step {t} {i}: {got} vs {want}");
                }
            }
        }
        // Step 201: every copy resets (reward 0, flags false, fresh state in range).
        let step = envs.step(floats(&vec![1.0; b])).unwrap();
        assert_eq!(host(step.rewards), vec![0.0; b]);
        assert!(!flags(step.truncated).iter().any(|&x| x));
        let state = envs.state_host();
        assert!(
            state
                .chunks(2)
                .all(|s| s[0].abs() <= PI as f32 && s[1].abs() <= 1.0)
        );
        assert!(
            host(step.obs)
                .chunks(3)
                .zip(state.chunks(2))
                .all(|(o, s)| o[2] == s[1])
        );
    }

    #[test]
    fn next_step_autoreset_and_time_limit() {
        let mut envs = TensorPendulum::new(2, 1, &device())
            .unwrap()
            .with_max_episode_steps(3)
            .unwrap();
        envs.set_state(&[3.0, 0.0, 0.0, 0.0]).unwrap();
        let s = envs.step(floats(&[0.0, 0.0])).unwrap();
        assert_eq!(flags(s.truncated), [false, false]);
        envs.step(floats(&[0.0, 0.0])).unwrap();
        let s = envs.step(floats(&[0.0, 0.0])).unwrap();
        assert_eq!(flags(s.truncated), [true, true]);
        let before = envs.state_host();
        let s = envs.step(floats(&[2.0, 2.0])).unwrap();
        assert_eq!(host(s.rewards), [0.0, 0.0]);
        assert_eq!(flags(s.truncated), [false, false]);
        assert_ne!(envs.state_host(), before);
        // A fresh episode counts again from 1.
        let s = envs.step(floats(&[0.0, 0.0])).unwrap();
        assert!(host(s.rewards).iter().all(|&r| r < 0.0));
        envs.step(floats(&[0.0, 0.0])).unwrap();
        let s = envs.step(floats(&[0.0, 0.0])).unwrap();
        assert_eq!(flags(s.truncated), [true, true]);
    }

    #[test]
    fn same_seed_same_run() {
        let run = |seed: u64| {
            let mut envs = TensorPendulum::new(4, seed, &device())
                .unwrap()
                .with_max_episode_steps(2)
                .unwrap();
            let mut out = host(envs.reset());
            for _ in 0..5 {
                out.extend(host(envs.step(floats(&[0.3, -1.0, 2.5, 0.0])).unwrap().obs));
            }
            out
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }

    #[test]
    fn gravity_changes_the_dynamics() {
        let mut scalar = Pendulum::new().with_gravity(3.5).unwrap();
        scalar.set_state(&[1.0, 0.5]).unwrap();
        let mut envs = TensorPendulum::new(1, 0, &device())
            .unwrap()
            .with_gravity(3.5)
            .unwrap();
        envs.set_state(&[1.0, 0.5]).unwrap();
        let s = scalar.step(Action::Continuous(&[0.7])).unwrap();
        let obs = host(envs.step(floats(&[0.7])).unwrap().obs);
        for k in 0..3 {
            assert!((obs[k] - s.obs[k]).abs() < 1e-6, "{obs:?} vs {:?}", s.obs);
        }
        assert!(
            TensorPendulum::new(1, 0, &device())
                .unwrap()
                .with_gravity(f64::INFINITY)
                .is_err()
        );
    }

    #[test]
    fn bad_input_is_an_error() {
        let dev = device();
        assert!(TensorPendulum::new(0, 0, &dev).is_err());
        let mut envs = TensorPendulum::new(3, 0, &dev).unwrap();
        assert!(envs.clone().with_max_episode_steps(0).is_err());
        assert!(envs.step(floats(&[0.0, 1.0])).is_err());
        let wide = Tensor::<2>::zeros([3, 2], &dev);
        let e = envs.step(wide).unwrap_err().to_string();
        assert!(e.contains("[3, 1]") && e.contains("[3, 2]"), "{e}");
        let e = envs
            .step(floats(&[0.0, f32::NAN, 1.0]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("[NaN] (copy 1)") && e.contains("Box"), "{e}");
        assert!(envs.set_state(&[0.0; 5]).is_err());
        assert!(
            envs.set_state(&[0.0, f32::INFINITY, 0.0, 0.0, 0.0, 0.0])
                .is_err()
        );
        let state = envs.state_host();
        assert_eq!(state.len(), 6);
        assert!(
            state
                .chunks(2)
                .all(|s| s[0].abs() <= PI as f32 && s[1].abs() <= 1.0)
        );
    }
}
