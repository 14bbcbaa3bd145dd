//! # emberlab-cli
//!
//! Ember's front door: the `ember` command ([`app`]: train, resume exactly, evaluate,
//! plot, zoo presets, bench) and what a training run leaves in its run folder and what
//! `ember plot` draws from it (the other modules: plain data in, files out).
//!
//! | module | job |
//! |---|---|
//! | [`app`] | the `ember` command itself; a program of your own can register environments (`emberlab_env::register`) and learners (`emberlab_run::register`) and call [`app::main_with_args`] |
//! | [`checks`] | a learner of your own killed at random instants and resumed equals its uninterrupted run (the checks the built-in ones pass) |
//! | [`metrics`] | `metrics.csv` + `metrics.jsonl`: fixed columns plus the algorithm's own metrics, flushed per row, cut back exactly on resume |
//! | [`evaluations`] | `evaluations.csv`: mean and std of each evaluation's returns, mean episode length, episodes cut short; same resume rule |
//! | [`tensorboard`] | TensorBoard event files (scalars), hand-encoded protobuf in TFRecord framing |
//! | [`crc32c`] | CRC-32C and TFRecord's masked CRC |
//! | [`plot`] | PNG learning curves (per run) and mean ± interval bands (over seeds) |
//! | [`stats`] | mean/std, interquartile mean, percentile bootstrap, interpolation onto a step grid |
//! | [`render`] | animated GIFs of classic-control episodes, drawn from observations |
//!
//! A run's logs, resumed after a crash at the checkpoint of step 2000:
//!
//! ```
//! use emberlab_cli::metrics::{MetricsLog, Row};
//! # fn main() -> anyhow::Result<()> {
//! let run = tempfile::tempdir()?;
//! let mut log = MetricsLog::create(run.path(), &["critic_loss"])?;
//! for step in [1000, 2000, 3000] {
//!     log.append(&Row { env_steps: step, train_return: Some(-1.0), extra: vec![0.5], ..Row::default() })?;
//! }
//! drop(log);
//! let log = MetricsLog::resume(run.path(), 2000)?; // the row of step 3000 is gone
//! assert_eq!(log.extra_names(), ["critic_loss"]);
//! let rows = emberlab_cli::metrics::read_metrics_csv(&run.path().join("metrics.csv"))?;
//! assert_eq!(rows, vec![(1000, Some(-1.0)), (2000, Some(-1.0))]);
//! # Ok(())
//! # }
//! ```
//!
//! Aggregating final returns over seeds (IQM with a 95% bootstrap interval):
//!
//! ```
//! use emberlab_cli::stats::{bootstrap_ci, interpolate, iqm};
//! let finals = [480.0, 500.0, 500.0, 310.0, 495.0, 500.0, 120.0, 500.0];
//! let score = iqm(&finals);
//! let (lo, hi) = bootstrap_ci(&finals, iqm, 1000, 0.95, 42).unwrap();
//! assert!(lo <= score && score <= hi);
//! // Curves logged at different steps, put on one grid before averaging.
//! let on_grid = interpolate(&[(0.0, 10.0), (1500.0, 40.0)], &[0.0, 500.0, 1000.0]);
//! assert_eq!(on_grid, vec![10.0, 20.0, 30.0]);
//! ```

#![warn(missing_docs)]

/// The allocator of `ember` and of every program that links this crate with its default
/// `mimalloc` feature (see the feature's note in `Cargo.toml`).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod app;
pub mod checks;
pub mod crc32c;
pub mod evaluations;
mod font;
mod line_file;
pub mod metrics;
#[cfg(feature = "mujoco")]
pub mod mujoco_frames;
pub mod plot;
pub mod render;
pub mod stats;
pub mod tensorboard;

pub use evaluations::{EvalLog, EvalRow, read_evaluations_csv};
pub use metrics::{MetricsLog, Row, read_metrics_csv};
pub use plot::{Band, Curve, plot_bands, plot_curves};
pub use render::render_gif;
pub use tensorboard::EventWriter;
