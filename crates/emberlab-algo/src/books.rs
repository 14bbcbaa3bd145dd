//! [`LoopBooks`]: the bookkeeping every training loop keeps alike (episodes, report,
//! evaluation and checkpoint schedules), saved at the same place of each loop's
//! `trainer.state` and restored in one way.

use crate::Progress;
use crate::checkpoint::Checkpointer;
use crate::report::{EpisodeTracker, EvalSchedule, TrainReport};
use emberlab_core::Result;
use emberlab_core::state::{StateReader, StateWriter};

/// A training loop's episodes, report and schedules.
pub(crate) struct LoopBooks<'a> {
    /// Returns of running and recent episodes.
    pub(crate) episodes: EpisodeTracker,
    /// The report the loop returns.
    pub(crate) report: TrainReport,
    /// When to evaluate, and the evaluations so far.
    pub(crate) evals: EvalSchedule<'a>,
    /// When to write weight checkpoints.
    pub(crate) checkpoints: Checkpointer,
}

impl<'a> LoopBooks<'a> {
    /// No episodes and an empty report for `num_envs` environments, with the loop's
    /// schedules.
    pub(crate) fn new(num_envs: usize, evals: EvalSchedule<'a>, checkpoints: Checkpointer) -> Self {
        LoopBooks {
            episodes: EpisodeTracker::new(num_envs),
            report: TrainReport::default(),
            evals,
            checkpoints,
        }
    }

    /// Appends the books to a loop's state, in the order every `trainer.state` keeps
    /// them: episodes, report, evaluation schedule, checkpoint schedule.
    pub(crate) fn save_state(&self, out: &mut StateWriter) {
        self.episodes.save_state(out);
        self.report.save_state(out);
        self.evals.save_state(out);
        self.checkpoints.save_state(out);
    }

    /// Reads what [`LoopBooks::save_state`] wrote, checked against these books' shapes,
    /// changing nothing yet.
    ///
    /// # Errors
    /// Truncated or damaged words, or episodes of another number of environments.
    pub(crate) fn read_state(&self, src: &mut StateReader<'_>) -> Result<SavedBooks> {
        let mut episodes = self.episodes.clone();
        episodes.load_state(src)?;
        let mut report = self.report.clone();
        report.load_state(src)?;
        Ok(SavedBooks {
            episodes,
            report,
            evals: (src.u64()?, src.f64()?),
            checkpoints: (src.u64()?, src.u64()?),
        })
    }
}

/// Books read back by [`LoopBooks::read_state`], to be put in place once everything else
/// of the run has been read and checked.
#[derive(Clone, Debug)]
pub(crate) struct SavedBooks {
    episodes: EpisodeTracker,
    report: TrainReport,
    /// The evaluation schedule's next point and wall seconds.
    evals: (u64, f64),
    /// The checkpoint schedule's next point and last write.
    checkpoints: (u64, u64),
}

/// What became of the episodes that were running when the run was saved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Running {
    /// They continue: the environments' own state was restored.
    Continue,
    /// The environments start new episodes; the running ones' returns are left out.
    Restart,
}

impl SavedBooks {
    /// Puts the books in place for a learner at `progress`.
    pub(crate) fn restore(
        mut self,
        books: &mut LoopBooks<'_>,
        progress: Progress,
        running: Running,
    ) {
        if running == Running::Restart {
            self.episodes.drop_running();
        }
        books.episodes = self.episodes;
        books.report = self.report;
        books.report.progress = progress;
        books.evals.restore(self.evals.0, self.evals.1);
        books
            .checkpoints
            .restore(self.checkpoints.0, self.checkpoints.1);
        books.report.wall_secs = books.evals.wall_secs();
    }
}
