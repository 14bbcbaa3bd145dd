//! [`make`]: environments by Gymnasium id, with their registered time limits.

use crate::{
    Acrobot, CartPole, ClassicEnv, MountainCar, MountainCarContinuous, Pendulum, TimeLimit,
};
use ember_core::{Env, Error, Result};

/// One registered id and how to build it.
struct Entry {
    id: &'static str,
    make: fn() -> Box<dyn Env>,
}

/// `E` wrapped in [`TimeLimit`] with its registered `max_episode_steps`.
fn limited<E: ClassicEnv>() -> Box<dyn Env> {
    Box::new(
        TimeLimit::new(E::default(), E::MAX_EPISODE_STEPS).expect("registered limits are positive"),
    )
}

fn entry<E: ClassicEnv>() -> Entry {
    Entry {
        id: E::ID,
        make: limited::<E>,
    }
}

fn registry() -> [Entry; 5] {
    [
        entry::<CartPole>(),
        entry::<Pendulum>(),
        entry::<MountainCar>(),
        entry::<MountainCarContinuous>(),
        entry::<Acrobot>(),
    ]
}

/// The ids [`make`] knows, in registration order.
pub fn ids() -> Vec<&'static str> {
    registry().iter().map(|e| e.id).collect()
}

/// Builds the environment registered as `id` (e.g. `"Pendulum-v1"`), wrapped in a
/// [`TimeLimit`] with Gymnasium's `max_episode_steps` (CartPole-v1 500, Pendulum-v1 200,
/// MountainCar-v0 200, MountainCarContinuous-v0 999, Acrobot-v1 500). An unknown id is an
/// error listing the known ones.
///
/// ```
/// use ember_core::{Action, Env};
///
/// let mut env = ember_env::make("Pendulum-v1")?;
/// env.reset(Some(1))?;
/// let mut steps = 1;
/// while !env.step(Action::Continuous(&[0.0]))?.truncated {
///     steps += 1;
/// }
/// assert_eq!(steps, 200);
/// assert!(ember_env::make("Pendulum-v0").is_err());
/// # Ok::<(), ember_core::Error>(())
/// ```
pub fn make(id: &str) -> Result<Box<dyn Env>> {
    registry()
        .iter()
        .find(|e| e.id == id)
        .map(|e| (e.make)())
        .ok_or_else(|| Error::invalid("environment id", id, format!("one of {}", ids().join(", "))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ember_core::Space;

    #[test]
    fn every_id_builds_with_its_time_limit() {
        let expect = [
            ("CartPole-v1", 4, 500),
            ("Pendulum-v1", 3, 200),
            ("MountainCar-v0", 2, 200),
            ("MountainCarContinuous-v0", 2, 999),
            ("Acrobot-v1", 6, 500),
        ];
        assert_eq!(ids(), expect.map(|e| e.0));
        for (id, obs_dim, limit) in expect {
            let mut env = make(id).unwrap();
            assert_eq!(env.observation_space().flat_dim(), obs_dim, "{id}");
            env.reset(Some(0)).unwrap();
            let mut n = 0;
            loop {
                let a = match env.action_space() {
                    Space::Discrete(_) => ember_core::Action::Discrete(1),
                    Space::Box(_) => ember_core::Action::Continuous(&[0.0]),
                };
                let s = env.step(a).unwrap();
                n += 1;
                if s.terminated || s.truncated {
                    assert!(s.terminated || n == limit, "{id}: truncated at {n}");
                    break;
                }
            }
            assert!(n <= limit);
        }
    }

    #[test]
    fn unknown_id_lists_known_ones() {
        let e = make("CartPole-v0").err().unwrap().to_string();
        assert!(e.contains("CartPole-v0") && e.contains("Acrobot-v1"), "{e}");
    }
}
