//! Gymnasium's common wrappers: [`TimeLimit`], [`RecordEpisodeStatistics`],
//! [`NormalizeObservation`] and [`ClipAction`]. Each is generic over the wrapped `E: Env`
//! (including `Box<dyn Env>`) and gives access to it through `inner`/`inner_mut`.

mod clip_action;
mod normalize_observation;
mod record_episode_statistics;
mod running_mean_std;
mod time_limit;

pub use clip_action::ClipAction;
pub use normalize_observation::NormalizeObservation;
pub use record_episode_statistics::{EpisodeStatistics, RecordEpisodeStatistics};
pub use running_mean_std::RunningMeanStd;
pub use time_limit::TimeLimit;
