//! A second pair of hands for a loop: a thread running a long element-wise pass
//! ([`Helping::split`]) offers its second half to a thread that is only waiting for it
//! ([`Helping::help`], called from that thread's wait loop), and runs the half itself
//! when nobody took it by the time its own half is done.
//!
//! SAC's critic thread steps the critic with Adam after the gate while the learner thread
//! waits for it: with this, the learner thread runs half of the largest layer's Adam.
//! Each element's arithmetic is the same whichever thread runs it, so a split pass gives
//! the same bits as a whole one.

use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};

/// Nothing offered.
const IDLE: u8 = 0;
/// The offering thread is writing the task.
const WRITING: u8 = 1;
/// A task waits for a helper.
const OFFERED: u8 = 2;
/// A helper runs the task.
const TAKEN: u8 = 3;
/// The helper finished the task.
const DONE: u8 = 4;
/// The task panicked on the helper.
const FAILED: u8 = 5;

/// The work of a split pass, with its lifetime erased: valid while the offering
/// [`Helping::split`] call runs, which does not return before the task is done or taken
/// back.
struct Task {
    work: *const (dyn Fn(Range<usize>) + Sync + 'static),
    range: Range<usize>,
}

// SAFETY: `work` points to a `Sync` closure, which `split` keeps alive until the task is
// done or taken back (see `Offer::drop`).
unsafe impl Send for Task {}

/// One offer at a time between an offering thread and helping threads (see the module
/// docs).
#[derive(Default)]
pub(crate) struct Helping {
    state: AtomicU8,
    task: Mutex<Option<Task>>,
}

impl std::fmt::Debug for Helping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Helping")
            .field("state", &self.state.load(Ordering::Relaxed))
            .finish()
    }
}

/// Passes shorter than this run whole: an offer costs a few hundred nanoseconds.
pub(crate) const MIN_SPLIT: usize = 16_384;

impl Helping {
    /// Runs `work` over `0..n`: the first half here, the second half on a thread calling
    /// [`help`](Self::help) meanwhile, or here as well when none took it. Every index is
    /// passed to `work` exactly once, in two disjoint ranges (the split falls on a
    /// multiple of 64); short passes and a `Helping` already in use run whole.
    ///
    /// # Panics
    /// Resumes a panic of `work`, on this thread or the helper's.
    pub(crate) fn split(&self, n: usize, work: &(dyn Fn(Range<usize>) + Sync)) {
        if n < MIN_SPLIT
            || self
                .state
                .compare_exchange(IDLE, WRITING, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return work(0..n);
        }
        let mid = (n / 2) & !63;
        // SAFETY: only the lifetime is erased; `Offer` keeps `work` borrowed until the
        // task is done or taken back, on every path out of this function.
        let erased: &'static (dyn Fn(Range<usize>) + Sync) = unsafe {
            std::mem::transmute::<
                &(dyn Fn(Range<usize>) + Sync),
                &'static (dyn Fn(Range<usize>) + Sync),
            >(work)
        };
        *self.lock() = Some(Task {
            work: erased,
            range: mid..n,
        });
        self.state.store(OFFERED, Ordering::Release);
        let offer = Offer(self);
        work(0..mid);
        if let Some(rest) = offer.take_back() {
            work(rest);
        }
    }

    /// Runs the second half of a pass offered by [`split`](Self::split), if one is
    /// offered and nobody took it yet; says whether it did.
    pub(crate) fn help(&self) -> bool {
        if self.state.load(Ordering::Relaxed) != OFFERED
            || self
                .state
                .compare_exchange(OFFERED, TAKEN, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return false;
        }
        let task = self.lock().take();
        let outcome = task.map_or(DONE, |task| {
            // SAFETY: the offering `split` waits for this task's end (`Offer`).
            let work = unsafe { &*task.work };
            match catch_unwind(AssertUnwindSafe(|| work(task.range))) {
                Ok(()) => DONE,
                Err(_) => FAILED,
            }
        });
        self.state.store(outcome, Ordering::Release);
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Task>> {
        self.task.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// An offered task, settled when dropped: taken back if no helper took it, else waited
/// for. This runs on unwinding too, so the erased closure outlives every use.
struct Offer<'a>(&'a Helping);

impl Offer<'_> {
    /// The offered range when no helper took it (to run here); `None` once a helper has
    /// run it.
    ///
    /// # Panics
    /// When the helper's run panicked.
    fn take_back(self) -> Option<Range<usize>> {
        let h = self.0;
        let range = if h
            .state
            .compare_exchange(OFFERED, WRITING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            h.lock().take().map(|t| t.range)
        } else {
            None
        };
        let failed = self.settle();
        std::mem::forget(self);
        if failed {
            resume_unwind(Box::new(
                "the helping thread's half of a split pass panicked",
            ));
        }
        range
    }

    /// Waits for a taken task to end and frees the slot; says whether it panicked.
    fn settle(&self) -> bool {
        let h = self.0;
        let mut state = h.state.load(Ordering::Acquire);
        loop {
            match state {
                OFFERED => {
                    // Not taken yet (unwinding): take it back unrun.
                    if h.state
                        .compare_exchange(OFFERED, WRITING, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                    {
                        h.lock().take();
                        state = WRITING;
                    } else {
                        state = h.state.load(Ordering::Acquire);
                    }
                }
                // A helper is running it: a bounded loop, so spin.
                TAKEN => {
                    std::hint::spin_loop();
                    state = h.state.load(Ordering::Acquire);
                }
                _ => break,
            }
        }
        h.state.store(IDLE, Ordering::Release);
        state == FAILED
    }
}

impl Drop for Offer<'_> {
    fn drop(&mut self) {
        self.settle();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize};

    #[test]
    fn every_index_runs_once_without_a_helper() {
        let h = Helping::default();
        for n in [0, 1, 100, MIN_SPLIT - 1, MIN_SPLIT, 100_003] {
            let marks: Vec<AtomicU8> = (0..n).map(|_| AtomicU8::new(0)).collect();
            h.split(n, &|r: Range<usize>| {
                for i in r {
                    marks[i].fetch_add(1, Ordering::Relaxed);
                }
            });
            assert!(
                marks.iter().all(|m| m.load(Ordering::Relaxed) == 1),
                "n = {n}"
            );
            assert_eq!(h.state.load(Ordering::Relaxed), IDLE);
        }
    }

    #[test]
    fn a_waiting_thread_runs_the_second_half() {
        let h = Arc::new(Helping::default());
        let stop = Arc::new(AtomicBool::new(false));
        let helped = Arc::new(AtomicUsize::new(0));
        let helper = {
            let (h, stop, helped) = (h.clone(), stop.clone(), helped.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    if h.help() {
                        helped.fetch_add(1, Ordering::Relaxed);
                    }
                    std::hint::spin_loop();
                }
            })
        };
        let n = 1 << 18;
        let here = std::thread::current().id();
        for _ in 0..20 {
            let marks: Vec<AtomicU8> = (0..n).map(|_| AtomicU8::new(0)).collect();
            let elsewhere = AtomicUsize::new(0);
            h.split(n, &|r: Range<usize>| {
                if std::thread::current().id() != here {
                    elsewhere.fetch_add(r.len(), Ordering::Relaxed);
                }
                for i in r {
                    marks[i].fetch_add(1, Ordering::Relaxed);
                }
            });
            assert!(marks.iter().all(|m| m.load(Ordering::Relaxed) == 1));
            let e = elsewhere.load(Ordering::Relaxed);
            assert!(e == 0 || e == n - n / 2, "{e}");
        }
        stop.store(true, Ordering::Release);
        helper.join().unwrap();
        assert!(
            helped.load(Ordering::Relaxed) > 0,
            "the helper never took a half"
        );
    }

    #[test]
    fn a_panic_on_the_helper_reaches_the_offering_thread() {
        let h = Arc::new(Helping::default());
        let helper = {
            let h = h.clone();
            std::thread::spawn(move || while !h.help() {})
        };
        let here = std::thread::current().id();
        let n = 1 << 16;
        let caught = catch_unwind(AssertUnwindSafe(|| {
            h.split(n, &|r: Range<usize>| {
                if std::thread::current().id() != here {
                    panic!("boom");
                }
                // Wait for the helper to take its half, so that it is the one to panic.
                while r.start == 0 && h.state.load(Ordering::Acquire) == OFFERED {
                    std::hint::spin_loop();
                }
            })
        }));
        helper.join().unwrap();
        assert!(caught.is_err(), "the helper's panic was lost");
        assert_eq!(h.state.load(Ordering::Relaxed), IDLE);
        // Usable again.
        let count = AtomicUsize::new(0);
        h.split(n, &|r: Range<usize>| {
            count.fetch_add(r.len(), Ordering::Relaxed);
        });
        assert_eq!(count.load(Ordering::Relaxed), n);
    }
}
