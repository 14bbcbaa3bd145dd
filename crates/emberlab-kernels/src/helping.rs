//! A thread that waits for another can do part of that thread's work meanwhile.
//!
//! The two halves of a parallel update meet at a gate before either steps, and whichever
//! arrives first waits: on a shared 2-vCPU machine the halves' lengths swing by several
//! hundred microseconds from update to update (the cores' speeds change with what their
//! neighbours run), more than any fixed split of the work can follow. While it waits, a
//! thread calls [`help_until`]; a thread about to run divisible work (a large matrix
//! product, column block by column block) asks [`wanted`] whether anyone waits and, if so,
//! runs it through [`share`], which lets the waiting thread take blocks too. Each block is
//! computed by the same code whichever thread takes it, so results do not depend on who
//! helped; a helper only takes blocks from a thread whose denormal mode is its own
//! ([`crate::denormals`]), so the floating-point mode is the owner's as well.

use crate::denormals::denormals_flushed;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Threads in [`help_until`] now.
static WAITING: AtomicUsize = AtomicUsize::new(0);

/// [`Hold`]s alive now.
static HOLDS: AtomicUsize = AtomicUsize::new(0);

/// The work on offer, if any (one at a time: a second owner runs its blocks alone).
static OFFER: Mutex<Option<Arc<Task>>> = Mutex::new(None);

/// Whether [`OFFER`] holds a task, read without the lock while spinning.
static OFFERED: AtomicBool = AtomicBool::new(false);

/// One piece of divisible work: `blocks` calls of `run`, taken in order by the owner and
/// by helpers.
struct Task {
    /// The owner's closure, its lifetime erased: called only for a block index below
    /// `blocks` taken from `next`, and [`share`] does not return before every such call
    /// has finished (`done`), so the closure outlives every call.
    run: *const (dyn Fn(usize) + Sync + 'static),
    blocks: usize,
    /// The next block to take.
    next: AtomicUsize,
    /// Blocks finished.
    done: AtomicUsize,
    /// Whether a helper's block panicked.
    failed: AtomicBool,
    /// The owner's denormal mode.
    flushed: bool,
}

// SAFETY: `run` points to a `Sync` closure, called only under the protocol described on
// the field; the counters are atomics.
unsafe impl Send for Task {}
// SAFETY: as above.
unsafe impl Sync for Task {}

impl Task {
    /// Takes and runs blocks until none is left; says whether it ran any. A helper's
    /// panicking block is caught and recorded; the owner's unwinds (still counted as
    /// finished, so that [`share`] can wait for the helpers' blocks).
    fn work(&self, helper: bool) -> bool {
        /// Counts a block as finished when dropped, also while unwinding.
        struct Finished<'a>(&'a AtomicUsize);
        impl Drop for Finished<'_> {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::Release);
            }
        }
        let mut ran = false;
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.blocks {
                return ran;
            }
            let _finished = Finished(&self.done);
            // SAFETY: `i < blocks`, so the owner waits for this call (see `run`).
            let run = unsafe { &*self.run };
            if helper {
                if catch_unwind(AssertUnwindSafe(|| run(i))).is_err() {
                    self.failed.store(true, Ordering::Relaxed);
                }
            } else {
                run(i);
            }
            ran = true;
        }
    }
}

/// Whether a thread waits in [`help_until`] now: divisible work is worth [`share`]-ing.
pub fn wanted() -> bool {
    WAITING.load(Ordering::Relaxed) > 0
}

/// Runs `run(0)`, …, `run(blocks − 1)`, each exactly once, on this thread and on any
/// thread waiting in [`help_until`] meanwhile; returns when all have finished. The blocks
/// must be independent of each other and of the thread that runs them.
///
/// # Panics
/// If a block panics (on this thread, or on a helper: then here once all blocks are done).
pub fn share(blocks: usize, run: &(dyn Fn(usize) + Sync)) {
    // SAFETY: only the lifetime is erased; `Task::run` says why every call ends before
    // this function returns.
    let erased: *const (dyn Fn(usize) + Sync + 'static) = unsafe {
        std::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), *const (dyn Fn(usize) + Sync)>(
            run,
        )
    };
    let task = Arc::new(Task {
        run: erased,
        blocks,
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        failed: AtomicBool::new(false),
        flushed: denormals_flushed(),
    });
    let offered = {
        let mut offer = OFFER.lock().unwrap_or_else(|e| e.into_inner());
        let free = offer.is_none();
        if free {
            *offer = Some(task.clone());
            OFFERED.store(true, Ordering::Release);
        }
        free
    };
    // Withdraws the offer even if a block panics here.
    struct Withdraw<'a>(bool, &'a Arc<Task>);
    impl Drop for Withdraw<'_> {
        fn drop(&mut self) {
            if self.0 {
                let mut offer = OFFER.lock().unwrap_or_else(|e| e.into_inner());
                if offer.as_ref().is_some_and(|t| Arc::ptr_eq(t, self.1)) {
                    *offer = None;
                    OFFERED.store(false, Ordering::Release);
                }
            }
            // No block is taken from now on, and those taken must finish before `run`
            // may go away.
            let taken = self.1.next.fetch_max(self.1.blocks, Ordering::Relaxed);
            while self.1.done.load(Ordering::Acquire) < taken.min(self.1.blocks) {
                std::hint::spin_loop();
            }
        }
    }
    let withdraw = Withdraw(offered, &task);
    task.work(false);
    drop(withdraw);
    assert!(
        !task.failed.load(Ordering::Relaxed),
        "a block of shared work panicked on a helping thread"
    );
}

/// Elements per block of a pass over a long buffer offered by [`share_each`]'s callers
/// ([`chunks`]): 64 KiB of `f32`, large enough that taking a block costs nothing next to
/// it, small enough that a 100k-element parameter gives both threads several. A pass of
/// one block is not offered.
pub const ELEMENTWISE_BLOCK: usize = 16 * 1024;

/// `slice` in consecutive [`ELEMENTWISE_BLOCK`]-long pieces (the last shorter), for
/// zipping several buffers of one pass into [`share_each`]'s items.
pub fn chunks<T>(slice: &[T]) -> std::slice::Chunks<'_, T> {
    slice.chunks(ELEMENTWISE_BLOCK)
}

/// As [`chunks`], mutably.
pub fn chunks_mut<T>(slice: &mut [T]) -> std::slice::ChunksMut<'_, T> {
    slice.chunks_mut(ELEMENTWISE_BLOCK)
}

/// Calls `run` once on each item, on this thread and on any thread waiting in
/// [`help_until`] meanwhile, including one that arrives while the items run ([`share`]);
/// returns when all are done. For an elementwise pass over buffers, each item a block of
/// each buffer ([`chunks`], [`chunks_mut`]), so that every element's value is computed by
/// the same code whoever takes its block. Two items or more are offered whether or not a
/// thread waits now (offering costs a few microseconds, a block tens); a single item runs
/// here without an offer.
///
/// # Panics
/// If `run` panics on an item (on a helper: here, once every item is done).
pub fn share_each<T: Send>(items: impl ExactSizeIterator<Item = T>, run: impl Fn(T) + Sync) {
    if items.len() < 2 {
        items.for_each(run);
        return;
    }
    let slots: Vec<Mutex<Option<T>>> = items.map(|t| Mutex::new(Some(t))).collect();
    share(slots.len(), &|i| {
        let item = slots[i].lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(item) = item {
            run(item);
        }
    });
}

/// The least time a thread with nothing left to do in a parallel run spends looking for
/// work to take before it blocks, even where the run's waits block at once (the update
/// tuner's choice on some machines): the other thread's long elementwise passes (an
/// optimizer step over a large network) start right after it has released the gate, and
/// a helper found within this window halves them.
pub const HELP_FLOOR: Duration = Duration::from_micros(30);

/// While alive, threads waiting in [`help_until`] keep looking for blocks past their
/// budget ([`hold`]).
#[must_use = "the hold ends when dropped"]
pub struct Hold(());

/// Keeps waiting threads looking for blocks until the returned [`Hold`] is dropped: for a
/// stretch of divisible passes with short gaps between them (a network's gradients summed
/// and then an optimizer step, parameter by parameter, right after a parallel run), so that
/// a helper that took the first pass is still there for the largest. The helpers spin
/// meanwhile, so the stretch should be mostly such passes.
pub fn hold() -> Hold {
    HOLDS.fetch_add(1, Ordering::Relaxed);
    Hold(())
}

impl Drop for Hold {
    fn drop(&mut self) {
        HOLDS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Spins until `ready()` says yes or `budget` of spinning has passed (not counting time
/// while a [`Hold`] is alive), running blocks of work [`share`]d meanwhile by threads whose
/// denormal mode is this thread's; says whether it became ready. A block taken is finished
/// before `ready` is asked again.
pub fn help_until(budget: Duration, mut ready: impl FnMut() -> bool) -> bool {
    struct Waiting;
    impl Drop for Waiting {
        fn drop(&mut self) {
            WAITING.fetch_sub(1, Ordering::Relaxed);
        }
    }
    WAITING.fetch_add(1, Ordering::Relaxed);
    let _waiting = Waiting;
    let flushed = denormals_flushed();
    let mut start = Instant::now();
    loop {
        for _ in 0..64 {
            if ready() {
                return true;
            }
            if OFFERED.load(Ordering::Acquire) {
                let task = OFFER.lock().unwrap_or_else(|e| e.into_inner()).clone();
                if let Some(task) = task.filter(|t| t.flushed == flushed)
                    && task.work(true)
                {
                    // Time spent helping is not spinning.
                    start = Instant::now();
                }
            }
            std::hint::spin_loop();
        }
        if HOLDS.load(Ordering::Relaxed) > 0 {
            start = Instant::now();
        } else if start.elapsed() >= budget {
            return ready();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    /// Serialises the tests: they share the one offer.
    static ONE: Mutex<()> = Mutex::new(());

    #[test]
    fn every_block_runs_once_and_a_waiting_thread_takes_some() {
        let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
        let counts: Vec<AtomicU32> = (0..64).map(|_| AtomicU32::new(0)).collect();
        let helped = AtomicU32::new(0);
        let stop = AtomicBool::new(false);
        let owner = std::thread::current().id();
        std::thread::scope(|s| {
            let helper = s.spawn(|| {
                help_until(Duration::from_secs(30), || stop.load(Ordering::Acquire));
            });
            while !wanted() {
                std::hint::spin_loop();
            }
            share(64, &|i| {
                counts[i].fetch_add(1, Ordering::Relaxed);
                if std::thread::current().id() != owner {
                    helped.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(2));
            });
            stop.store(true, Ordering::Release);
            helper.join().unwrap();
        });
        assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 1));
        let h = helped.load(Ordering::Relaxed);
        assert!((1..64).contains(&h), "the helper ran {h} of 64 blocks");
        assert!(!wanted());
        assert!(!OFFERED.load(Ordering::Relaxed));
    }

    /// An elementwise pass dealt out in blocks: every element is written once, by the
    /// same arithmetic, and a waiting thread takes some of the blocks.
    #[test]
    fn each_block_of_an_elementwise_pass_is_written_once_and_shared() {
        let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
        let n = ELEMENTWISE_BLOCK * 5 + 17;
        let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
        let mut y = vec![f32::NAN; n];
        let stop = AtomicBool::new(false);
        let owner = std::thread::current().id();
        let helped = AtomicU32::new(0);
        std::thread::scope(|s| {
            let helper = s.spawn(|| {
                help_until(Duration::from_secs(30), || stop.load(Ordering::Acquire));
            });
            while !wanted() {
                std::hint::spin_loop();
            }
            // A pass of one block is not offered: it runs here.
            let mut one = vec![0.0f32; ELEMENTWISE_BLOCK];
            share_each(chunks_mut(&mut one), |block: &mut [f32]| {
                assert_eq!(std::thread::current().id(), owner, "one block ran here");
                block.fill(1.0);
            });
            assert!(one.iter().all(|v| *v == 1.0));
            let items = chunks(&x).zip(chunks_mut(&mut y));
            assert_eq!(items.len(), 6);
            share_each(items, |(x, y): (&[f32], &mut [f32])| {
                for (y, x) in y.iter_mut().zip(x) {
                    *y = x * 2.0 + 1.0;
                }
                if std::thread::current().id() != owner {
                    helped.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(3));
            });
            stop.store(true, Ordering::Release);
            helper.join().unwrap();
        });
        assert!(y.iter().zip(&x).all(|(y, x)| *y == x * 2.0 + 1.0));
        let h = helped.load(Ordering::Relaxed);
        assert!((1..6).contains(&h), "the helper took {h} of 6 blocks");
    }

    /// A helper with a 1 ms budget is still there for work offered 30 ms after it began
    /// waiting while a hold is alive, and leaves within its budget once the hold ends.
    #[test]
    fn a_hold_keeps_a_waiting_thread_past_its_budget() {
        let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
        let owner = std::thread::current().id();
        let helped = AtomicU32::new(0);
        std::thread::scope(|s| {
            let hold = hold();
            let helper = s.spawn(|| help_until(Duration::from_millis(1), || false));
            while !wanted() {
                std::hint::spin_loop();
            }
            std::thread::sleep(Duration::from_millis(30));
            share(32, &|_| {
                if std::thread::current().id() != owner {
                    helped.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(1));
            });
            assert!(wanted(), "the helper still waits while the hold lives");
            drop(hold);
            let t = std::time::Instant::now();
            assert!(!helper.join().unwrap(), "never ready: the budget ran out");
            assert!(t.elapsed() < Duration::from_secs(5));
        });
        let h = helped.load(Ordering::Relaxed);
        assert!((1..32).contains(&h), "the helper took {h} of 32 blocks");
        assert!(!wanted());
    }

    /// The helper thread of a parallel run, waiting for its next job, takes blocks of a
    /// pass its owner offers after the run under a hold (a gradient sum, an optimizer
    /// step), in the owner's floating-point mode.
    #[test]
    fn a_runs_helper_takes_blocks_offered_after_the_run() {
        let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
        let _flush = crate::denormals::flush_denormals_here();
        let mut parts = crate::parts::Parts::parallel(2).named("after-run");
        let owner = std::thread::current().id();
        let helped = AtomicU32::new(0);
        let hold = hold();
        let ran = parts.run(
            "warm",
            [0, 1].map(|i| crate::parts::part(move || Ok(move || i))),
        );
        assert_eq!(ran.unwrap(), [0, 1]);
        share(32, &|_| {
            if std::thread::current().id() != owner {
                helped.fetch_add(1, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(1));
        });
        drop(hold);
        let h = helped.load(Ordering::Relaxed);
        assert!(
            (1..32).contains(&h),
            "the run's helper took {h} of 32 blocks"
        );
    }

    #[test]
    fn without_a_helper_the_owner_runs_all_and_a_helper_panic_reaches_the_owner() {
        let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
        let sum = AtomicUsize::new(0);
        share(10, &|i| {
            sum.fetch_add(i, Ordering::Relaxed);
        });
        assert_eq!(sum.load(Ordering::Relaxed), 45);
        // A block that panics on the helper: the owner finishes the others, then panics.
        let stop = AtomicBool::new(false);
        let owner = std::thread::current().id();
        let ran = AtomicUsize::new(0);
        std::thread::scope(|s| {
            let helper = s.spawn(|| {
                help_until(Duration::from_secs(30), || stop.load(Ordering::Acquire));
            });
            while !wanted() {
                std::hint::spin_loop();
            }
            let result = catch_unwind(AssertUnwindSafe(|| {
                share(16, &|_| {
                    std::thread::sleep(Duration::from_millis(2));
                    ran.fetch_add(1, Ordering::Relaxed);
                    if std::thread::current().id() != owner {
                        panic!("block failed on the helper");
                    }
                })
            }));
            stop.store(true, Ordering::Release);
            helper.join().unwrap();
            assert!(result.is_err(), "the helper's panic reached the owner");
        });
        assert_eq!(ran.load(Ordering::Relaxed), 16, "every block was started");
        assert!(!OFFERED.load(Ordering::Relaxed));
    }
}
