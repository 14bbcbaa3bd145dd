//! A learner and its actors as processes (feature `grpc`): what `ember serve`,
//! `ember actor` and `ember launch` run.
//!
//! - [`run_learner`]: one process serves central inference (`Learner.Act`) and the
//!   transition stream (`Learner.Transitions`) and trains an off-policy learner (DQN, SAC,
//!   TD3) from what the actors send: every acknowledged batch is first in the write-ahead
//!   log, then in replay; `gradient_steps` updates every `train_freq` transitions run on
//!   the inference thread between two forward passes, so every answer comes from one
//!   policy version. It checkpoints the learner and its position in the log atomically;
//!   started again on the same folder it loads the checkpoint, rebuilds replay from the
//!   log and trains on the batches the checkpoint does not cover.
//! - [`run_actor`]: one process steps a vector of environments, acts through the learner
//!   ([`ActingMode::Central`]) or through its own copy of the policy that polls the
//!   learner's versioned publication ([`ActingMode::Local`], policy lag reported), and sends its transitions in batches ([`TransitionRows`] layout), each acknowledged
//!   once durable. When the learner restarts it reconnects with backoff and jitter,
//!   resends the unacknowledged batch, drops its unsent partial episodes and resets.

mod actor;
mod latency;
mod learner;
mod rows;

pub use actor::{
    ActingMode, ActorOptions, ActorReport, LocalPolicy, LocalPolicyFactory, run_actor,
};
pub use learner::{
    DEFAULT_LOG_BUDGET, LOG_FILE, LearnerOptions, LearnerReport, QUARANTINE_FILE, STATE_DIR,
    run_learner, status_text,
};
pub use rows::{DEFAULT_MAX_ABS, RowRules, TransitionRows};
