//! [`TensorCartPole`]: many `CartPole-v1`s stepped as `[B]` tensors on any burn device.

use super::episode_clock::EpisodeClock;
use super::tensor_step::TensorStep;
use super::uniform_column::uniform_column;
use crate::classic::cartpole::{
    FORCE_MAG, GRAVITY, LENGTH, MASSPOLE, POLEMASS_LENGTH, TAU, THETA_THRESHOLD_RADIANS,
    TOTAL_MASS, X_THRESHOLD,
};
use burn::tensor::{Device, Int, Tensor, TensorData};
use emberlab_core::{EmberRng, Error, Result};

/// `B` copies of `CartPole-v1` (with its 500-step time limit) as tensors on a burn
/// [`Device`], with Gymnasium's next-step autoreset: the step after an episode ends
/// resets that copy (reward 0, both flags false, its action ignored).
///
/// Same constants and order of operations as [`crate::CartPole`], but in `f32` (Gymnasium
/// keeps CartPole's state in `f64`): one step from the same state agrees with the scalar
/// environment to about 1e-6, and trajectories drift apart slowly after that. Reset states
/// are drawn on the host from an [`EmberRng`] (uniform in `[-0.05, 0.05)`) and uploaded,
/// so a seed gives the same run on every backend. Each step checks that every action is 0
/// or 1, which reads one boolean back from the device.
///
/// The four state variables are kept as separate `[B]` tensors, so every operation of a
/// step runs on contiguous memory; the observations `[B, 4]` are one concatenation of them
/// seen transposed (a strided view: matrix products read it as it is, and reading it to
/// the host gives the usual row-major order).
///
/// ```
/// use burn::tensor::{Int, Tensor, TensorData};
/// use emberlab_env::TensorCartPole;
///
/// let device = emberlab_backend::DeviceSpec::Flex.device()?;
/// let mut envs = TensorCartPole::new(8, 0, &device)?;
/// let obs = envs.reset();
/// assert_eq!(obs.dims(), [8, 4]);
/// let actions = Tensor::<1, Int>::from_data(TensorData::new(vec![1i64; 8], [8]), &device);
/// let step = envs.step(actions)?;
/// assert_eq!(step.rewards.to_data_as::<f32>().try_to_vec::<f32>().unwrap(), vec![1.0; 8]);
/// # Ok::<(), emberlab_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct TensorCartPole {
    device: Device,
    num_envs: usize,
    /// `x, x_dot, theta, theta_dot`, each `[B]`.
    state: [Tensor<1>; 4],
    clock: EpisodeClock,
    rng: EmberRng,
}

impl TensorCartPole {
    /// `num_envs` (≥ 1) cart-poles on `device`, their reset states drawn from `seed`.
    pub fn new(num_envs: usize, seed: u64, device: &Device) -> Result<Self> {
        if num_envs == 0 {
            return Err(Error::invalid("num_envs", 0, ">= 1"));
        }
        let mut envs = TensorCartPole {
            device: device.clone(),
            num_envs,
            state: std::array::from_fn(|_| Tensor::zeros([num_envs], device)),
            clock: EpisodeClock::new(num_envs, 500, device),
            rng: EmberRng::seed_from(seed),
        };
        envs.reset();
        Ok(envs)
    }

    /// Changes the time limit (≥ 1; Gymnasium registers 500).
    pub fn with_max_episode_steps(mut self, steps: u32) -> Result<Self> {
        if steps == 0 {
            return Err(Error::invalid("max_episode_steps", 0, ">= 1"));
        }
        self.clock.set_max_episode_steps(steps);
        Ok(self)
    }

    /// Number of cart-poles `B`.
    pub fn num_envs(&self) -> usize {
        self.num_envs
    }

    /// The time limit (500 unless changed by [`TensorCartPole::with_max_episode_steps`]).
    pub fn max_episode_steps(&self) -> u32 {
        self.clock.max_episode_steps()
    }

    /// The device the states live on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Fresh reset states, each variable `[B]` uniform in `[-0.05, 0.05)`, drawn on the
    /// host (variable by variable).
    fn fresh_states(&mut self) -> [Tensor<1>; 4] {
        let (rng, b, device) = (&mut self.rng, self.num_envs, &self.device);
        std::array::from_fn(|_| uniform_column(rng, b, -0.05, 0.05, device))
    }

    /// Observations `[B, 4]` of the current states.
    fn observe(&self) -> Tensor<2> {
        Tensor::cat(self.state.to_vec(), 0)
            .reshape([4, self.num_envs])
            .swap_dims(0, 1)
    }

    /// Resets every copy and returns the observations `[B, 4]`.
    pub fn reset(&mut self) -> Tensor<2> {
        self.state = self.fresh_states();
        self.clock.restart();
        self.observe()
    }

    /// The states `[B, 4]` (`x, x_dot, theta, theta_dot`) read back to the host, row-major.
    pub fn state_host(&self) -> Vec<f32> {
        self.observe()
            .to_data_as::<f32>()
            .try_to_vec::<f32>()
            .expect("converted to f32")
    }

    /// Overwrites the states from `B × 4` host values (`x, x_dot, theta, theta_dot` per
    /// copy, all finite), as if every copy had just been reset into them. Returns the
    /// observations `[B, 4]`.
    pub fn set_state(&mut self, values: &[f32]) -> Result<Tensor<2>> {
        let b = self.num_envs;
        Error::check_len("TensorCartPole state", b * 4, values.len())?;
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(Error::invalid(
                format!("TensorCartPole state[{i}]"),
                values[i],
                "a finite value",
            ));
        }
        self.reset();
        self.state = std::array::from_fn(|k| {
            let column: Vec<f32> = values.iter().skip(k).step_by(4).copied().collect();
            Tensor::from_data(TensorData::new(column, [b]), &self.device)
        });
        Ok(self.observe())
    }

    /// Steps every copy with `actions` `[B]` (0 pushes left, 1 right); copies whose episode
    /// ended at the previous step are reset instead. Errors on a wrong shape or an action
    /// other than 0 or 1.
    pub fn step(&mut self, actions: Tensor<1, Int>) -> Result<TensorStep> {
        let b = self.num_envs;
        Error::check_len("TensorCartPole actions", b, actions.dims()[0])?;
        let bad = actions.clone().clamp(0, 1).not_equal(actions.clone());
        if bad.any().into_scalar::<bool>() {
            let host = actions
                .to_data_as::<i64>()
                .try_to_vec::<i64>()
                .unwrap_or_default();
            let (i, a) = host
                .iter()
                .enumerate()
                .find(|(_, a)| !(0..=1).contains(*a))
                .map_or((0, -1), |(i, &a)| (i, a));
            return Err(Error::InvalidAction {
                action: format!("{a} (copy {i})"),
                space: "Discrete(2)".into(),
            });
        }
        let [x, x_dot, theta, theta_dot] = self.state.clone();
        let force = actions
            .float()
            .mul_scalar(2.0 * FORCE_MAG)
            .sub_scalar(FORCE_MAG);
        let costheta = theta.clone().cos();
        let sintheta = theta.clone().sin();
        let temp = (force
            + theta_dot.clone().square().mul_scalar(POLEMASS_LENGTH) * sintheta.clone())
        .div_scalar(TOTAL_MASS);
        let denom = costheta
            .clone()
            .square()
            .mul_scalar(-MASSPOLE / TOTAL_MASS)
            .add_scalar(4.0 / 3.0)
            .mul_scalar(LENGTH);
        let thetaacc = (sintheta.mul_scalar(GRAVITY) - costheta.clone() * temp.clone()) / denom;
        let xacc = temp - (thetaacc.clone() * costheta).mul_scalar(POLEMASS_LENGTH / TOTAL_MASS);
        let nx = x + x_dot.clone().mul_scalar(TAU);
        let nx_dot = x_dot + xacc.mul_scalar(TAU);
        let ntheta = theta + theta_dot.clone().mul_scalar(TAU);
        let ntheta_dot = theta_dot + thetaacc.mul_scalar(TAU);
        // Gymnasium's `x < -x_threshold or x > x_threshold or ...`, with exact `abs`.
        let terminated = nx
            .clone()
            .abs()
            .greater_elem(X_THRESHOLD)
            .bool_or(ntheta.clone().abs().greater_elem(THETA_THRESHOLD_RADIANS));

        // Next-step autoreset: copies that ended last step start afresh.
        let resetting = self.clock.resetting();
        let [f0, f1, f2, f3] = self.fresh_states();
        self.state = [
            nx.mask_where(resetting.clone(), f0),
            nx_dot.mask_where(resetting.clone(), f1),
            ntheta.mask_where(resetting.clone(), f2),
            ntheta_dot.mask_where(resetting.clone(), f3),
        ];
        let (terminated, truncated) = self.clock.advance(resetting.clone(), Some(terminated));
        Ok(TensorStep {
            obs: self.observe(),
            rewards: resetting.bool_not().float(),
            terminated,
            truncated,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CartPole, ClassicEnv};
    use burn::tensor::Bool;
    use emberlab_core::{Action, Env};

    fn device() -> Device {
        emberlab_backend::DeviceSpec::Flex
            .device()
            .expect("flex is compiled for tests")
    }

    fn ints(v: &[i64]) -> Tensor<1, Int> {
        Tensor::from_data(TensorData::new(v.to_vec(), [v.len()]), &device())
    }

    fn host<const D: usize>(t: Tensor<D>) -> Vec<f32> {
        t.to_data_as::<f32>().try_to_vec::<f32>().unwrap()
    }

    fn flags(t: Tensor<1, Bool>) -> Vec<bool> {
        host(t.float()).iter().map(|&x| x != 0.0).collect()
    }

    #[test]
    fn one_step_matches_the_scalar_cartpole() {
        let b = 64;
        let mut rng = EmberRng::seed_from(5);
        let mut scalar: Vec<CartPole> = (0..b).map(|_| CartPole::new()).collect();
        let mut states = Vec::new();
        for (i, env) in scalar.iter_mut().enumerate() {
            // Spread the states well beyond the reset range.
            let s: Vec<f64> = (0..4)
                .map(|k| (rng.next_f64() - 0.5) * [4.0, 4.0, 0.4, 4.0][k])
                .collect();
            env.set_state(&s).unwrap();
            states.extend(s.iter().map(|&v| v as f32));
            assert!(i < b);
        }
        let mut envs = TensorCartPole::new(b, 0, &device()).unwrap();
        envs.set_state(&states).unwrap();
        let actions: Vec<i64> = (0..b).map(|_| rng.below(2) as i64).collect();
        let step = envs.step(ints(&actions)).unwrap();
        let obs = host(step.obs);
        let term = flags(step.terminated);
        for (i, env) in scalar.iter_mut().enumerate() {
            let s = env.step(Action::Discrete(actions[i] as usize)).unwrap();
            for k in 0..4 {
                let (got, want) = (obs[i * 4 + k], s.obs[k]);
                assert!((got - want).abs() < 1e-5, "copy {i}[{k}]: {got} vs {want}");
            }
            assert_eq!(term[i], s.terminated, "copy {i}");
        }
        assert!(term.iter().any(|&t| t) && term.iter().any(|&t| !t));
    }

    #[test]
    fn next_step_autoreset_and_time_limit() {
        let mut envs = TensorCartPole::new(2, 1, &device())
            .unwrap()
            .with_max_episode_steps(3)
            .unwrap();
        // Copy 0 falls at once; copy 1 is balanced.
        envs.set_state(&[0.0, 0.0, 0.2, 1.0, 0.0, 0.0, 0.0, 0.0])
            .unwrap();
        let s = envs.step(ints(&[1, 1])).unwrap();
        assert_eq!(flags(s.terminated), [true, false]);
        assert_eq!(host(s.rewards), [1.0, 1.0]);
        let s = envs.step(ints(&[1, 0])).unwrap();
        assert_eq!(host(s.rewards), [0.0, 1.0]);
        assert_eq!(flags(s.terminated), [false, false]);
        assert!(host(s.obs)[..4].iter().all(|x| x.abs() < 0.05));
        let s = envs.step(ints(&[0, 1])).unwrap();
        assert_eq!(flags(s.truncated), [false, true], "copy 1 reaches 3 steps");
        let s = envs.step(ints(&[0, 1])).unwrap();
        assert_eq!(host(s.rewards), [1.0, 0.0]);
        assert_eq!(flags(s.truncated), [false, false]);
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(TensorCartPole::new(0, 0, &device()).is_err());
        let mut envs = TensorCartPole::new(3, 0, &device()).unwrap();
        assert!(envs.clone().with_max_episode_steps(0).is_err());
        assert!(envs.step(ints(&[0, 1])).is_err());
        let e = envs.step(ints(&[0, 2, 1])).unwrap_err().to_string();
        assert!(e.contains("2 (copy 1)") && e.contains("Discrete(2)"), "{e}");
        assert!(envs.set_state(&[0.0; 11]).is_err());
        assert!(envs.set_state(&[f32::NAN; 12]).is_err());
        let before = envs.state_host();
        assert_eq!(before.len(), 12);
        assert!(before.iter().all(|x| x.abs() < 0.05));
    }
}
