//! # emberlab-run
//!
//! Ember's runs as data: the config of a run (`config.toml`: algorithm, environment, device,
//! trainer and algorithm settings, with rl-baselines3-zoo's presets and `--set`-style
//! overrides), the learner it names, and a run folder as `ember train` leaves it — its
//! checkpoint, its best weights and the policy they hold. The `ember` command and the Python
//! wheel (`emberlab.load_policy`) share it; a program of your own can load a run's policy
//! with [`RunPolicy::load`] without either.
//!
//! ```
//! use emberlab_run::{RunConfig, config::PresetSource};
//!
//! // rl-baselines3-zoo's preset for SAC on Pendulum-v1, one field overridden as `--set` does.
//! let (preset, source) = RunConfig::preset("sac", "Pendulum-v1")?;
//! assert!(matches!(source, PresetSource::Zoo));
//! let config = preset.with_set("off_policy.total_steps", "5000")?;
//! assert_eq!(config.total_steps(), 5000);
//! // The TOML a run folder keeps parses back to the same config.
//! assert_eq!(RunConfig::parse(&config.to_toml())?, config);
//! // A typo is refused, naming the key.
//! let typo = config.with_set("sac.learning_rat", "1e-3").unwrap_err();
//! assert!(typo.to_string().contains("learning_rat"));
//! # Ok::<(), emberlab_run::RunError>(())
//! ```

#![warn(missing_docs)]

mod builtin;
pub mod config;
pub mod error;
pub mod folder;
pub mod kinds;
pub mod learners;
pub mod policy;
pub mod registry;

pub use config::{Flags, RunConfig};
pub use error::{Result, RunError};
pub use folder::{
    BEST, CHECKPOINT, CONFIG, FRAMES, FrameSpaces, load_config, load_weights, obs_normalizer,
};
pub use kinds::{Kind, LearnerConfig, LearnerKind, PresetSource, TrainerKind};
pub use learners::{OffPolicy, OnPolicy, RunLearner, Served, Trainee, devices};
pub use policy::RunPolicy;
pub use registry::{metric_names, register};
