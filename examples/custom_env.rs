//! SAC on an environment that Ember does not ship: `Reach1D`, defined here as a user would
//! define it (the `Env` trait, a time limit of its own), registered under an id, trained
//! with the shared trainer and evaluated on fresh copies from its factory.
//!
//! `cargo run --release --example custom_env [steps]` — and `cargo test --example
//! custom_env` checks that SAC learns it (the bar is in `sac_learns_reach1d`).
//!
//! Reach1D: a point at `x ∈ [-2, 2]` must reach a target `g ∈ [-1, 1]` drawn at reset and
//! stay there. Observation `[x, g]`, action `a ∈ [-1, 1]` moves it by `0.1 a`, reward
//! `−(x − g)²` per step, 50 steps per episode. Averaged over start states (20,000 simulated
//! episodes): standing still returns −83, random actions −86, the optimal policy (full speed
//! to the target, then stay) −9.3.

use emberlab::algo::{Devices, OffPolicyConfig, SacConfig, TrainReport, train_off_policy};
use emberlab::core::{Action, BoxSpace, EmberRng, Env, Error, Result, Space, StepInfo};
use emberlab::env::{SyncVecEnv, VecEnv};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The registered id of [`Reach1D`].
const ID: &str = "Reach1D-v0";
const LIMIT: usize = 50;

/// The user's environment.
struct Reach1D {
    observation_space: Space,
    action_space: Space,
    rng: EmberRng,
    x: f32,
    goal: f32,
    steps: usize,
}

impl Reach1D {
    fn new() -> Result<Reach1D> {
        Ok(Reach1D {
            observation_space: Space::Box(BoxSpace::new(vec![-2.0, -1.0], vec![2.0, 1.0])?),
            action_space: Space::Box(BoxSpace::uniform(1, -1.0, 1.0)?),
            rng: EmberRng::seed_from(0),
            x: 0.0,
            goal: 0.0,
            steps: 0,
        })
    }
}

impl Env for Reach1D {
    fn observation_space(&self) -> &Space {
        &self.observation_space
    }

    fn action_space(&self) -> &Space {
        &self.action_space
    }

    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<()> {
        if let Some(s) = seed {
            self.rng = EmberRng::seed_from(s);
        }
        Error::check_len("Reach1D observation buffer", 2, obs.len())?;
        self.x = (self.rng.next_f64() * 4.0 - 2.0) as f32;
        self.goal = (self.rng.next_f64() * 2.0 - 1.0) as f32;
        self.steps = 0;
        obs.copy_from_slice(&[self.x, self.goal]);
        Ok(())
    }

    fn step_into(&mut self, action: Action<'_>, obs: &mut [f32]) -> Result<StepInfo> {
        let a = match action {
            Action::Continuous(&[a]) if a.is_finite() => a.clamp(-1.0, 1.0),
            other => {
                return Err(Error::InvalidAction {
                    action: format!("{other:?}"),
                    space: self.action_space.to_string(),
                });
            }
        };
        self.x = (self.x + 0.1 * a).clamp(-2.0, 2.0);
        self.steps += 1;
        obs.copy_from_slice(&[self.x, self.goal]);
        let d = (self.x - self.goal) as f64;
        Ok(StepInfo {
            reward: -d * d,
            terminated: false,
            truncated: self.steps >= LIMIT,
        })
    }
}

/// Registers Reach1D (once per process) and trains SAC on it for `steps` env steps,
/// evaluating every 1,000.
fn train(steps: u64, seed: u64) -> Result<TrainReport> {
    static REGISTER: std::sync::Once = std::sync::Once::new();
    REGISTER.call_once(|| {
        emberlab::env::register(ID, || Ok(Box::new(Reach1D::new()?) as Box<dyn Env>))
            .expect("Reach1D-v0 is registered once");
    });
    let device = emberlab::backend::DeviceSpec::Flex.device()?;
    // The training env found by id, like any built-in one…
    let mut env = SyncVecEnv::from_id(ID, 1)?;
    let config = SacConfig {
        hidden: vec![64, 64],
        learning_rate: 1e-3,
        seed,
        ..SacConfig::default()
    };
    let mut sac = config.build(
        env.single_observation_space(),
        env.single_action_space(),
        &Devices::same(&device),
    )?;
    let trainer = OffPolicyConfig {
        total_steps: steps,
        learning_starts: 500,
        eval_every: 1_000,
        seed,
        ..OffPolicyConfig::default()
    };
    let mut replay = trainer.build_replay(&env)?;
    // …and evaluation on fresh environments from a closure (the registry's factory would
    // do as well).
    let eval = || Ok(Box::new(Reach1D::new()?) as Box<dyn Env>);
    train_off_policy(&mut sac, &mut env, &mut replay, &eval, &trainer)
}

fn main() -> Result<()> {
    let steps = std::env::args()
        .nth(1)
        .map(|s| {
            s.parse()
                .map_err(|_| Error::invalid("steps", s, "a number of env steps"))
        })
        .transpose()?
        .unwrap_or(5_000);
    let report = train(steps, 0)?;
    for e in &report.evals {
        println!(
            "{:>6} steps: mean eval return {:7.2}",
            e.env_steps, e.mean_return
        );
    }
    println!(
        "SAC {ID}: {} env steps, {} updates in {:.1} s",
        report.env_steps, report.updates, report.wall_secs
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bar: a mean evaluation return of −15 or better (10 deterministic episodes) within
    /// 5,000 env steps, against −83 for standing still and −9.3 for the optimal policy.
    #[test]
    fn sac_learns_reach1d() {
        let report = train(5_000, 1).unwrap();
        let curve: Vec<String> = report
            .evals
            .iter()
            .map(|e| format!("{}:{:.2}", e.env_steps, e.mean_return))
            .collect();
        println!("SAC Reach1D-v0: [{}]", curve.join(", "));
        let best = report
            .evals
            .iter()
            .map(|e| e.mean_return)
            .fold(f64::MIN, f64::max);
        assert!(best >= -15.0, "best evaluation {best} < -15");
    }

    #[test]
    fn reach1d_rejects_bad_actions_by_name() {
        let mut env = Reach1D::new().unwrap();
        env.reset(Some(0)).unwrap();
        let e = env
            .step(Action::Continuous(&[f32::NAN]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("NaN") && e.contains("Box"), "{e}");
        assert!(env.step(Action::Discrete(0)).is_err());
    }
}
