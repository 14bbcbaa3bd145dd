//! Environments by id: the built-in classic-control ids with their registered time limits,
//! and any environment a user [`register`]s; [`EnvFactory`] makes fresh environments (the
//! trainers' evaluation environments are factories).

use crate::{
    Acrobot, CartPole, ClassicEnv, MountainCar, MountainCarContinuous, Pendulum, TimeLimit,
};
use emberlab_core::{Env, Error, Result};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// Makes a fresh environment on each call (seed it through [`Env::reset`]). Any
/// `Fn() -> Result<Box<dyn Env>> + Send + Sync` closure is one.
pub trait EnvFactory: Send + Sync {
    /// A new environment, in its initial (not yet reset) state.
    ///
    /// # Errors
    /// Whatever building the environment can fail with.
    fn make(&self) -> Result<Box<dyn Env>>;
}

impl<F: Fn() -> Result<Box<dyn Env>> + Send + Sync> EnvFactory for F {
    fn make(&self) -> Result<Box<dyn Env>> {
        self()
    }
}

/// A built-in id: `E` wrapped in [`TimeLimit`] with its registered `max_episode_steps`.
struct Builtin<E>(std::marker::PhantomData<fn() -> E>);

impl<E: ClassicEnv + 'static> EnvFactory for Builtin<E> {
    fn make(&self) -> Result<Box<dyn Env>> {
        Ok(Box::new(TimeLimit::new(
            E::default(),
            E::MAX_EPISODE_STEPS,
        )?))
    }
}

fn builtin<E: ClassicEnv + 'static>() -> (&'static str, Arc<dyn EnvFactory>) {
    (E::ID, Arc::new(Builtin::<E>(std::marker::PhantomData)))
}

/// A built-in MuJoCo id: the task in [`TimeLimit`] with its registered episode length.
#[cfg(feature = "mujoco")]
struct MujocoBuiltin(&'static str);

#[cfg(feature = "mujoco")]
impl EnvFactory for MujocoBuiltin {
    fn make(&self) -> Result<Box<dyn Env>> {
        let env = crate::MujocoEnv::new(self.0)?;
        let limit = env.max_episode_steps();
        Ok(Box::new(TimeLimit::new(env, limit)?))
    }
}

fn builtins() -> Vec<(&'static str, Arc<dyn EnvFactory>)> {
    #[allow(unused_mut)]
    let mut all = vec![
        builtin::<CartPole>(),
        builtin::<Pendulum>(),
        builtin::<MountainCar>(),
        builtin::<MountainCarContinuous>(),
        builtin::<Acrobot>(),
    ];
    #[cfg(feature = "mujoco")]
    all.extend(
        MUJOCO_IDS
            .iter()
            .map(|&id| (id, Arc::new(MujocoBuiltin(id)) as Arc<dyn EnvFactory>)),
    );
    all
}

/// Gymnasium's MuJoCo v5 ids, built in with the `mujoco` feature (and named in the error
/// of a build without it).
pub const MUJOCO_IDS: [&str; 9] = [
    "HalfCheetah-v5",
    "Hopper-v5",
    "Walker2d-v5",
    "Ant-v5",
    "Humanoid-v5",
    "Swimmer-v5",
    "InvertedPendulum-v5",
    "InvertedDoublePendulum-v5",
    "Reacher-v5",
];

/// The prefix of the Gymnasium bridge's ids (`gym:LunarLander-v3`).
pub(crate) const GYM_PREFIX: &str = "gym:";

/// A factory of `GymEnv`s for `gym_id` (with the `gym` feature).
#[cfg(feature = "gym")]
fn gym_factory(gym_id: &str) -> Result<Arc<dyn EnvFactory>> {
    if gym_id.trim().is_empty() {
        return Err(Error::invalid(
            "environment id",
            "gym:",
            "gym:ID with a Gymnasium id",
        ));
    }
    let id = gym_id.to_string();
    Ok(Arc::new(move || -> Result<Box<dyn Env>> {
        Ok(Box::new(crate::GymEnv::new(&id)?))
    }))
}

#[cfg(not(feature = "gym"))]
fn gym_factory(gym_id: &str) -> Result<Arc<dyn EnvFactory>> {
    Err(Error::Unavailable {
        what: format!("the Gymnasium environment gym:{gym_id}"),
        hint: "build with the `gym` feature (Python with gymnasium at run time)".into(),
    })
}

/// The user's registrations, by id.
static REGISTERED: RwLock<BTreeMap<String, Arc<dyn EnvFactory>>> = RwLock::new(BTreeMap::new());

/// Registers `factory` under `id`, so that [`make`], [`factory`], `SyncVecEnv::from_id` and
/// `ThreadedVecEnv::from_id` find it (process-wide). The factory should apply the
/// environment's own time limit, as the built-in ids do.
///
/// ```
/// use emberlab_env::{CartPole, TimeLimit};
///
/// emberlab_env::register("ShortCartPole-v0", || {
///     Ok(Box::new(TimeLimit::new(CartPole::default(), 50)?) as Box<dyn emberlab_core::Env>)
/// })?;
/// let mut env = emberlab_env::make("ShortCartPole-v0")?;
/// env.reset(Some(0))?;
/// assert!(emberlab_env::register("CartPole-v1", || emberlab_env::make("Acrobot-v1")).is_err());
/// # Ok::<(), emberlab_core::Error>(())
/// ```
///
/// # Errors
/// An empty id, an id already taken (built in or registered before), or a `gym:` id.
pub fn register(id: &str, factory: impl EnvFactory + 'static) -> Result<()> {
    if id.trim().is_empty() {
        return Err(Error::invalid(
            "environment id",
            format!("{id:?}"),
            "a non-empty id",
        ));
    }
    if id.starts_with(GYM_PREFIX) {
        return Err(Error::invalid(
            "environment id",
            id,
            "an id without the `gym:` prefix (the Gymnasium bridge's)",
        ));
    }
    let mut map = REGISTERED.write().unwrap_or_else(|e| e.into_inner());
    if builtins().iter().any(|(b, _)| *b == id) || map.contains_key(id) {
        return Err(Error::invalid(
            "environment id",
            id,
            "an id not registered yet (ids are registered once per process)",
        ));
    }
    map.insert(id.to_string(), Arc::new(factory));
    Ok(())
}

/// The ids [`make`] knows: the built-in ones in registration order, then the user's, sorted.
pub fn ids() -> Vec<String> {
    let map = REGISTERED.read().unwrap_or_else(|e| e.into_inner());
    builtins()
        .iter()
        .map(|(id, _)| id.to_string())
        .chain(map.keys().cloned())
        .collect()
}

/// The factory registered as `id`; ask for it before a long run so that a typo fails at
/// once.
///
/// `gym:ID` ids (feature `gym`) make a [`crate::GymEnv`] each (a Python worker process);
/// their environment is checked when the factory first makes one.
///
/// # Errors
/// An unknown id, with the list of known ones; a MuJoCo id in a build without the `mujoco`
/// feature, or a `gym:` id without the `gym` feature ([`Error::Unavailable`], saying how to
/// get it).
pub fn factory(id: &str) -> Result<Arc<dyn EnvFactory>> {
    if let Some(gym_id) = id.strip_prefix(GYM_PREFIX) {
        return gym_factory(gym_id);
    }
    if let Some((_, f)) = builtins().into_iter().find(|(b, _)| *b == id) {
        return Ok(f);
    }
    let map = REGISTERED.read().unwrap_or_else(|e| e.into_inner());
    if let Some(f) = map.get(id) {
        return Ok(f.clone());
    }
    drop(map);
    if crate::is_atari_id(id) {
        return Err(Error::Unavailable {
            what: format!("{id} as an environment of vector observations"),
            hint: "Atari games observe images: `AtariEnv` (feature `gym`) in a `FrameVecEnv`; \
                   `ember train`, `eval` and `export` take the id as it is"
                .into(),
        });
    }
    if cfg!(not(feature = "mujoco")) && MUJOCO_IDS.contains(&id) {
        return Err(Error::Unavailable {
            what: format!("the MuJoCo task {id}"),
            hint: "build with the `mujoco` feature (run scripts/setup-mujoco.sh first)".into(),
        });
    }
    Err(Error::invalid(
        "environment id",
        id,
        format!("one of {}", ids().join(", ")),
    ))
}

/// Builds the environment registered as `id` (e.g. `"Pendulum-v1"`). Built-in ids are
/// wrapped in a [`TimeLimit`] with Gymnasium's `max_episode_steps` (CartPole-v1 500,
/// Pendulum-v1 200, MountainCar-v0 200, MountainCarContinuous-v0 999, Acrobot-v1 500; with
/// the `mujoco` feature the v5 MuJoCo tasks, 1,000, Reacher-v5 50);
/// user ids come from their [`register`]ed factory.
///
/// ```
/// use emberlab_core::{Action, Env};
///
/// let mut env = emberlab_env::make("Pendulum-v1")?;
/// env.reset(Some(1))?;
/// let mut steps = 1;
/// while !env.step(Action::Continuous(&[0.0]))?.truncated {
///     steps += 1;
/// }
/// assert_eq!(steps, 200);
/// assert!(emberlab_env::make("Pendulum-v0").is_err());
/// # Ok::<(), emberlab_core::Error>(())
/// ```
///
/// # Errors
/// An unknown id (the error lists the known ones), or the factory's own error.
pub fn make(id: &str) -> Result<Box<dyn Env>> {
    factory(id)?.make()
}

#[cfg(test)]
mod tests {
    use super::*;
    use emberlab_core::Space;

    #[test]
    fn every_id_builds_with_its_time_limit() {
        let expect = [
            ("CartPole-v1", 4, 500),
            ("Pendulum-v1", 3, 200),
            ("MountainCar-v0", 2, 200),
            ("MountainCarContinuous-v0", 2, 999),
            ("Acrobot-v1", 6, 500),
        ];
        assert_eq!(ids()[..5], expect.map(|e| e.0.to_string()));
        for (id, obs_dim, limit) in expect {
            let mut env = make(id).unwrap();
            assert_eq!(env.observation_space().flat_dim(), obs_dim, "{id}");
            env.reset(Some(0)).unwrap();
            let mut n = 0;
            loop {
                let a = match env.action_space() {
                    Space::Discrete(_) => emberlab_core::Action::Discrete(1),
                    Space::Box(_) => emberlab_core::Action::Continuous(&[0.0]),
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
    fn a_registered_env_is_found_by_id() {
        let short =
            || -> Result<Box<dyn Env>> { Ok(Box::new(TimeLimit::new(Pendulum::default(), 7)?)) };
        register("test/ShortPendulum", short).unwrap();
        assert!(ids().contains(&"test/ShortPendulum".to_string()));
        let mut env = make("test/ShortPendulum").unwrap();
        env.reset(Some(3)).unwrap();
        let mut n = 1;
        while !env
            .step(emberlab_core::Action::Continuous(&[0.0]))
            .unwrap()
            .truncated
        {
            n += 1;
        }
        assert_eq!(n, 7);
        let e = register("test/ShortPendulum", short)
            .unwrap_err()
            .to_string();
        assert!(e.contains("test/ShortPendulum"), "{e}");
        assert!(register("Pendulum-v1", short).is_err());
        assert!(register(" ", short).is_err());
        let e = make("test/ShortPendulumm").err().unwrap().to_string();
        assert!(
            e.contains("test/ShortPendulum,") || e.ends_with("test/ShortPendulum"),
            "{e}"
        );
    }

    #[cfg(not(feature = "mujoco"))]
    #[test]
    fn a_mujoco_id_without_the_feature_says_how_to_get_it() {
        let e = make("Hopper-v5").err().unwrap();
        assert!(matches!(e, Error::Unavailable { .. }), "{e}");
        let e = e.to_string();
        assert!(
            e.contains("Hopper-v5") && e.contains("`mujoco` feature"),
            "{e}"
        );
        assert!(e.contains("setup-mujoco.sh"), "{e}");
    }

    #[test]
    fn gym_ids_cannot_be_registered() {
        let short =
            || -> Result<Box<dyn Env>> { Ok(Box::new(TimeLimit::new(Pendulum::default(), 7)?)) };
        let e = register("gym:Mine-v0", short).unwrap_err().to_string();
        assert!(e.contains("gym:"), "{e}");
    }

    #[cfg(not(feature = "gym"))]
    #[test]
    fn a_gym_id_without_the_feature_says_how_to_get_it() {
        let e = make("gym:CartPole-v1").err().unwrap();
        assert!(matches!(e, Error::Unavailable { .. }), "{e}");
        assert!(e.to_string().contains("`gym` feature"), "{e}");
    }

    #[test]
    fn unknown_id_lists_known_ones() {
        let e = make("CartPole-v0").err().unwrap().to_string();
        assert!(e.contains("CartPole-v0") && e.contains("Acrobot-v1"), "{e}");
        // An Atari id says where Atari games are.
        let e = make("PongNoFrameskip-v4").err().unwrap().to_string();
        assert!(
            e.contains("PongNoFrameskip-v4") && e.contains("FrameVecEnv"),
            "{e}"
        );
    }
}
