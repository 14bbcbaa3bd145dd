//! The registry of this process: the learners configs can name, the built-in ones first.

use crate::error::{Result, RunError};
use crate::kinds::LearnerKind;
use std::sync::{Arc, LazyLock, RwLock};

/// Keys of `config.toml` a learner's name cannot take.
const RESERVED: [&str; 8] = [
    "algo",
    "env",
    "device",
    "num_envs",
    "save_every",
    "log_every",
    "off_policy",
    "on_policy",
];

static REGISTRY: LazyLock<RwLock<Vec<Arc<dyn LearnerKind>>>> =
    LazyLock::new(|| RwLock::new(crate::builtin::kinds()));

/// Adds a learner to the registry of this process: from now on configs, presets, `ember
/// train NAME`, `--resume`, `eval` and `export` know it.
///
/// # Errors
/// A name already registered, a name a config key takes, or one that is not a bare TOML
/// key (letters, digits, `-`, `_`).
pub fn register(kind: Arc<dyn LearnerKind>) -> Result<()> {
    let name = kind.name();
    let bare = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !bare || RESERVED.contains(&name) {
        return Err(RunError::Config(format!(
            "cannot register a learner named `{name}`: a name is letters, digits, `-` and `_`, \
             and not one of {}",
            RESERVED.join(", ")
        )));
    }
    let mut all = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    if all.iter().any(|k| k.name() == name) {
        return Err(RunError::Config(format!(
            "a learner named `{name}` is already registered"
        )));
    }
    all.push(kind);
    Ok(())
}

/// The registered learner `name`.
///
/// # Errors
/// An unknown name (the error lists the known ones).
pub fn find(name: &str) -> Result<Arc<dyn LearnerKind>> {
    let all = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    all.iter()
        .find(|k| k.name() == name)
        .cloned()
        .ok_or_else(|| {
            let known: Vec<&str> = all.iter().map(|k| k.name()).collect();
            RunError::Config(format!(
                "unknown algorithm `{name}`: known are {} (see `ember zoo ALGO`)",
                known.join(", ")
            ))
        })
}

/// The names of the registered learners, built-in ones first.
pub fn names() -> Vec<String> {
    let all = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    all.iter().map(|k| k.name().to_string()).collect()
}

/// The algorithm's own metric columns in `metrics.csv` (none for an unknown name).
pub fn metric_names(algo: &str) -> &'static [&'static str] {
    find(algo).map_or(&[], |k| k.metric_names())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RunConfig;
    use crate::kinds::{Kind, LearnerConfig, Preset, PresetSource, TrainerKind};
    use crate::learners::RunLearner;
    use emberlab_algo::DqnConfig;
    use emberlab_algo::{Devices, Validate};
    use emberlab_core::Space;
    use serde::Serialize;

    /// A user's learner: DQN under another name, with a section of its own.
    #[derive(Clone, Default, Serialize, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Mine {
        width: usize,
    }

    impl Validate for Mine {
        fn validate(&self) -> emberlab_core::Result<()> {
            emberlab_algo::check_positive("width", self.width)
        }
    }

    impl LearnerConfig for Mine {
        const TRAINER: TrainerKind = TrainerKind::OffPolicy;
        const METRICS: &'static [&'static str] = &["loss", "epsilon"];

        fn build_learner(
            &self,
            obs: &Space,
            act: &Space,
            devices: &Devices,
        ) -> emberlab_core::Result<Box<dyn RunLearner>> {
            let dqn = DqnConfig {
                hidden: vec![self.width],
                ..DqnConfig::default()
            };
            Ok(Box::new(crate::OffPolicy(dqn.build(obs, act, devices)?)))
        }

        fn preset(_env: &str) -> Preset<Self> {
            Preset {
                learner: Mine { width: 8 },
                trainer: TrainerKind::OffPolicy.defaults(),
                num_envs: 2,
                source: PresetSource::Defaults,
            }
        }
    }

    #[test]
    fn a_registered_learner_is_a_config_section_like_the_builtin_ones() {
        register(Kind::<Mine>::named("mine-test")).unwrap();
        assert!(names().contains(&"mine-test".to_string()));
        assert_eq!(metric_names("mine-test"), ["loss", "epsilon"]);
        let (config, _) = RunConfig::preset("mine-test", "CartPole-v1").unwrap();
        assert_eq!(config.num_envs, 2);
        let text = config.to_toml();
        assert!(text.contains("[mine-test]\nwidth = 8"), "{text}");
        assert_eq!(RunConfig::parse(&text).unwrap(), config);
        let e = config.with_set("mine-test.width", "0").unwrap_err();
        assert!(e.to_string().contains("width"), "{e}");
        let e = config.with_set("mine-test.wdth", "3").unwrap_err();
        assert!(e.to_string().contains("wdth"), "{e}");
        let env = emberlab_env::make("CartPole-v1").unwrap();
        let devices = crate::devices("flex").unwrap();
        let mut learner = config
            .build_learner(env.observation_space(), env.action_space(), &devices)
            .unwrap();
        assert_eq!(learner.agent().obs_dim(), 4);
        assert!(matches!(learner.trainee(), crate::Trainee::OffPolicy(_)));
        assert!(learner.policy_weights().is_some());
        // Names are unique and cannot take a config key.
        let again = register(Kind::<Mine>::named("mine-test")).unwrap_err();
        assert!(again.to_string().contains("already registered"), "{again}");
        for bad in ["sac", "env", "off_policy", "a b", ""] {
            assert!(register(Kind::<Mine>::named(bad)).is_err(), "{bad}");
        }
    }
}
