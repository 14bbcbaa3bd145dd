//! What goes wrong with a run's config or folder, as one error type whose message names the
//! problem (and, through [`std::error::Error::source`], what caused it).

use std::error::Error as StdError;

/// The result of this crate's functions.
pub type Result<T> = std::result::Result<T, RunError>;

/// A run config, folder or learner that cannot be used, in words a user can act on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// A config that does not parse or check: TOML syntax (with where), an unknown algorithm
    /// or key, a value out of range, a section that does not fit the algorithm.
    #[error("{0}")]
    Config(String),
    /// A run folder without what was asked of it (its config, a checkpoint, best weights).
    #[error("{0}")]
    Folder(String),
    /// A device that is malformed or not compiled into this build.
    #[error("{0}")]
    Device(String),
    /// An error of the component crates (an environment id, a learner's checks, weights).
    #[error(transparent)]
    Component(#[from] emberlab_core::Error),
    /// A step that failed (reading a file, building a learner, loading weights), and why.
    #[error("{what}")]
    Failed {
        /// What was being done, e.g. `cannot load runs/sac/best`.
        what: String,
        /// Why it failed.
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
}

impl RunError {
    /// The error and each of its causes, joined by `: ` (as `ember` prints errors).
    pub fn chain(&self) -> String {
        let mut text = self.to_string();
        let mut cause = self.source();
        while let Some(c) = cause {
            text.push_str(": ");
            text.push_str(&c.to_string());
            cause = c.source();
        }
        text
    }
}

/// `with_context` for this crate: an error becomes the cause of what was being done.
pub(crate) trait Context<T> {
    /// The error, as the cause of `what()`.
    fn context_with(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: StdError + Send + Sync + 'static> Context<T> for std::result::Result<T, E> {
    fn context_with(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| RunError::Failed {
            what: what(),
            source: Box::new(e),
        })
    }
}
