//! The learner's side of the transition stream: what a batch must be to be stored
//! ([`BatchRules`]), and [`TransitionIngest`], which checks, logs and queues it.

use crate::wal::{Appended, Record, Released, TransitionLog};
use emberlab_core::{Error, Result};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What the learner takes from a peer: checked against every batch before anything of it
/// is stored, and against every logged record before the learner trains on it (so that a
/// record written by hand, by an older version or under other rules is quarantined, not
/// trained on). An implementation knows the row layout and the learner's spaces.
pub trait BatchRules: Send + Sync {
    /// Checks whole rows `values` (their width is already checked).
    ///
    /// # Errors
    /// An error naming the first row (and field) that breaks a rule.
    fn check(&self, values: &[f32]) -> Result<()>;
}

/// Rows of the right width with finite values: what the stream checks when no rules are
/// given.
struct Finite {
    width: usize,
}

impl BatchRules for Finite {
    fn check(&self, values: &[f32]) -> Result<()> {
        Error::check_finite_rows("transition value", values, self.width)
    }
}

/// The learner's side of the transition stream: batches that pass the [`BatchRules`] are
/// appended to its [`TransitionLog`] (durable before the acknowledgement), then handed to
/// the learner through a bounded queue ([`TransitionIngest::new`]'s receiver). When the
/// learner falls behind, the queue fills and the actors' streams wait: memory stays flat.
#[derive(Clone)]
pub struct TransitionIngest {
    log: Arc<std::sync::Mutex<TransitionLog>>,
    tx: std::sync::mpsc::SyncSender<Record>,
    pub(super) width: u32,
    rules: Arc<dyn BatchRules>,
    finished: Arc<AtomicBool>,
    room: Arc<AtomicBool>,
}

/// How long an acknowledgement waits for room in a log at its disk budget before the
/// actor is told to come back (`UNAVAILABLE`: it reconnects and resends).
const ROOM_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

impl TransitionIngest {
    /// Ingest into `log` rows of `width` finite values; the learner reads stored batches
    /// from the returned receiver (at most `queue` waiting).
    pub fn new(
        log: TransitionLog,
        width: u32,
        queue: usize,
    ) -> (Self, std::sync::mpsc::Receiver<Record>) {
        let (tx, rx) = std::sync::mpsc::sync_channel(queue.max(1));
        (
            TransitionIngest {
                log: Arc::new(std::sync::Mutex::new(log)),
                tx,
                width,
                rules: Arc::new(Finite {
                    width: width.max(1) as usize,
                }),
                finished: Arc::default(),
                room: Arc::default(),
            },
            rx,
        )
    }

    /// Checks every batch against `rules` (instead of finiteness alone) before storing it.
    pub fn with_rules(mut self, rules: Arc<dyn BatchRules>) -> Self {
        self.rules = rules;
        self
    }

    /// Marks training finished: every acknowledgement from now on tells the actor so
    /// (batches are still stored).
    pub fn finish(&self) {
        self.finished.store(true, Ordering::Relaxed);
    }

    pub(super) fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Relaxed)
    }

    /// Checks `values` (whole rows of [`TransitionIngest`]'s width) against the rules.
    ///
    /// # Errors
    /// The first row and field that break one.
    pub(super) fn check(&self, values: &[f32]) -> Result<()> {
        self.rules.check(values)
    }

    /// Makes `batch` durable, then queues it for the learner unless it was a resend.
    ///
    /// A log at its disk budget pushes back: the call waits (the actor's acknowledgement
    /// with it) until the learner's next checkpoint releases segments.
    pub(super) fn ingest(&self, batch: Record) -> Result<Appended> {
        let start = std::time::Instant::now();
        let appended = loop {
            {
                let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
                if !log.is_full() || log.is_duplicate(&batch) {
                    break log.append(std::slice::from_ref(&batch))?[0];
                }
            }
            self.room.store(true, Ordering::Relaxed);
            if start.elapsed() > ROOM_WAIT {
                return Err(Error::Unavailable {
                    what: "room in the learner's transition log".into(),
                    hint: "it is at its disk budget and no checkpoint released a segment".into(),
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        if appended == Appended::Stored && !self.is_finished() && self.tx.send(batch).is_err() {
            return Err(Error::Unavailable {
                what: "the learner's transition queue".into(),
                hint: "the learner stopped reading it".into(),
            });
        }
        Ok(appended)
    }

    /// Whether an acknowledgement waits for room in the log (at its disk budget) since the
    /// last [`TransitionIngest::release`].
    pub fn wants_room(&self) -> bool {
        self.room.load(Ordering::Relaxed)
    }

    /// Lets the log delete the segments a checkpoint at `covered` records took in
    /// ([`TransitionLog::release`]).
    ///
    /// # Errors
    /// A segment that could not be deleted.
    pub fn release(&self, covered: u64, keep_rows: u64) -> Result<Released> {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let released = log.release(covered, keep_rows);
        self.room.store(log.is_full(), Ordering::Relaxed);
        released
    }

    /// Records and rows in the log (durable, acknowledged or about to be).
    pub fn stored(&self) -> (u64, u64) {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        (log.records(), log.rows())
    }
}
