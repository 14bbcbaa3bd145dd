//! A helper thread kept for a learner's (or a frozen network's) lifetime, so that a parallel
//! update or forward pays no thread start-up (≈ 0.35 ms per spawned thread here, with a cold
//! allocator heap) on every call: [`Worker`] runs owned jobs in order, [`Helper`] a
//! fork–join whose job borrows from the caller, handed over through one shared slot
//! (no allocation, ~0.2 µs each way).
//!
//! Waits between the two threads of an update are short (tens to hundreds of µs), and a
//! thread that blocks on them pays the wake-up of a sleeping core: 50–75 µs measured on a
//! 2-vCPU virtual machine, 5% of a SAC update. So every wait here first spins for up to
//! [`spin_budget`] and then blocks.
//!
//! The budget adapts to the machine. On cores of its own a partner thread arrives in a few
//! µs (a small SAC run: 7 µs on average, 0.4% of the spins ran out of a 500 µs budget);
//! when another process shares the cores, the partner is often not running, and a spin
//! burns the core the partner needs (the same run beside a second training process: 45%
//! ran out, 230 µs on average, and the run took 12× as long). So a spin that runs out
//! halves the budget and one that ends in time gives back 1/64 of the configured budget
//! ([`spun`]): spinning fades while the cores are shared and returns when they are free.
//! `EMBER_SPIN_US` (read once; 500 by default) sets the most it spins; 0 blocks at once.

use crate::{Error, Result};
use std::cell::UnsafeCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The default of [`spin_budget`].
const SPIN_US: u64 = 500;

/// The most a wait spins before it blocks, in µs: `EMBER_SPIN_US` (read once; 0 blocks
/// at once), 500 by default. A value that is not a whole number is reported once on
/// standard error and the default is used.
fn configured_us() -> u64 {
    static BUDGET: OnceLock<u64> = OnceLock::new();
    *BUDGET.get_or_init(|| match std::env::var("EMBER_SPIN_US") {
        Err(_) => SPIN_US,
        Ok(v) => v.trim().parse().unwrap_or_else(|_| {
            eprintln!(
                "ember: EMBER_SPIN_US={v:?} is not a number of microseconds; using {SPIN_US}"
            );
            SPIN_US
        }),
    })
}

/// Whether `EMBER_SPIN_US` sets the budget (then no tuner changes it: [`cap_spin`]).
pub fn spin_is_configured() -> bool {
    std::env::var_os("EMBER_SPIN_US").is_some()
}

/// The adapted budget in µs ([`spun`]); `u64::MAX` until the first spin ends.
static ADAPTED_US: AtomicU64 = AtomicU64::new(u64::MAX);

thread_local! {
    /// This thread's cap on the budget in µs, set by a tuner ([`cap_spin`]); `u64::MAX`:
    /// none.
    static CAP_US: std::cell::Cell<u64> = const { std::cell::Cell::new(u64::MAX) };
}

/// The budget before the cap: configured, adapted by [`spun`].
fn uncapped_us() -> u64 {
    match ADAPTED_US.load(Ordering::Relaxed) {
        u64::MAX => configured_us(),
        us => us,
    }
}

/// How long a wait spins now before it blocks: at most the configured budget
/// (`EMBER_SPIN_US`), less while spins run out ([`spun`]), and at most the cap a tuner set
/// ([`cap_spin`]).
pub fn spin_budget() -> Duration {
    Duration::from_micros(uncapped_us().min(CAP_US.with(std::cell::Cell::get)))
}

/// Caps the spin budget of the calling thread's waits at `us` µs (`None` lifts the cap).
/// An update tuner ([`crate::parts::Parts::auto`]) caps its own threads (the caller and its
/// helpers) at 0, blocking at once, where that measured faster: on two hyperthreads of one
/// core, a spinning thread slows the thread it waits for. Other threads, another learner's
/// in the same process among them, keep theirs. While a cap holds, the thread's spins do
/// not adapt the budget ([`spun`]).
pub fn cap_spin(us: Option<u64>) {
    CAP_US.with(|c| c.set(us.unwrap_or(u64::MAX)));
}

/// Records how a spin of [`spin_budget`] ended: `in_time` if what it waited for came
/// before the budget ran out. One that ran out halves the budget; one in time gives back
/// 1/64 of the configured budget, up to all of it. (Threads racing here may lose one
/// another's step: the budget is a hint, not a count.) Ignored while a cap holds
/// ([`cap_spin`]): the budget is then the cap's, not the machine's.
pub fn spun(in_time: bool) {
    if CAP_US.with(std::cell::Cell::get) != u64::MAX {
        return;
    }
    let now = uncapped_us();
    ADAPTED_US.store(adapted(now, configured_us(), in_time), Ordering::Relaxed);
}

/// The budget after a spin of `now` µs that ended `in_time` or not, `max` configured.
fn adapted(now: u64, max: u64, in_time: bool) -> u64 {
    if in_time {
        (now + max.div_ceil(64)).min(max)
    } else {
        now / 2
    }
}

/// How long a thread of a run waits for the others (or a helper for its next job) while
/// taking their blocks: the spin budget, and at least [`crate::helping::HELP_FLOOR`] even
/// where waits block.
pub(crate) fn help_budget() -> Duration {
    spin_budget().max(crate::helping::HELP_FLOOR)
}

/// Spins until `ready()` says yes or [`spin_budget`] has passed; says whether it became
/// ready, and records the outcome ([`spun`]).
pub fn spin_until(ready: impl FnMut() -> bool) -> bool {
    let in_time = spin_for(spin_budget(), ready);
    spun(in_time);
    in_time
}

/// [`spin_until`] with an explicit budget.
fn spin_for(budget: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        for _ in 0..64 {
            if ready() {
                return true;
            }
            std::hint::spin_loop();
        }
        if start.elapsed() >= budget {
            return ready();
        }
    }
}

/// The next message of `rx`: spins for up to [`spin_budget`], then blocks. `None` when the
/// sending side is gone.
pub fn receive<T>(rx: &Receiver<T>) -> Option<T> {
    let mut got = None;
    let mut gone = false;
    spin_until(|| match rx.try_recv() {
        Ok(v) => {
            got = Some(v);
            true
        }
        Err(TryRecvError::Disconnected) => {
            gone = true;
            true
        }
        Err(TryRecvError::Empty) => false,
    });
    match (got, gone) {
        (Some(v), _) => Some(v),
        (None, true) => None,
        (None, false) => rx.recv().ok(),
    }
}

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Starts a thread named `name` running `body`; the error names it as a `kind` thread.
fn start(name: &str, kind: &str, body: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(body)
        .map_err(|e| Error::Unavailable {
            what: format!("a `{name}` {kind} thread"),
            hint: format!("the system refused to start a thread: {e}"),
        })
}

/// One long-lived thread running submitted jobs in order.
#[derive(Debug)]
pub struct Worker {
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

/// The result of a job submitted with [`Worker::submit`].
pub struct Pending<R>(Receiver<std::thread::Result<R>>);

impl Worker {
    /// Starts the thread, named `name`; an error if the system cannot start a thread.
    pub fn spawn(name: &str) -> Result<Worker> {
        let (jobs, queue) = channel::<Job>();
        let thread = start(name, "worker", move || {
            while let Some(job) = receive(&queue) {
                job();
            }
        })?;
        Ok(Worker {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Runs `f` on the worker thread; [`Pending::wait`] returns its result (a panic in
    /// `f` becomes an [`Error::Panicked`]).
    pub fn submit<R, F>(&self, f: F) -> Pending<R>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        let (send, recv) = channel();
        let job: Job = Box::new(move || {
            // Network math: denormals flushed for the job (emberlab_core::denormals).
            let _flush = crate::denormals::flush_denormals_here();
            let _ = send.send(catch_unwind(AssertUnwindSafe(f)));
        });
        // A send can fail only if the thread is gone; the job (and its result channel)
        // is then dropped and `wait` reports it.
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(job);
        }
        Pending(recv)
    }
}

impl<R> Pending<R> {
    /// Waits for the job's result; a panic of the job is an [`Error::Panicked`] naming
    /// `what`.
    pub fn wait(self, what: &str) -> Result<R> {
        match receive(&self.0).ok_or(()) {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(panic)) => Err(Error::panicked(what, panic.as_ref())),
            Err(()) => Err(Error::panicked(what, &"the worker thread is gone")),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A borrowed job on the helper: a type-erased pointer to the caller's closure.
type SlotJob = *mut (dyn FnMut() + Send + 'static);

/// What the owner and the helper thread of a [`Helper`] share.
struct Slot {
    /// The job of the last post; written by the owner only while the helper is idle.
    job: UnsafeCell<Option<SlotJob>>,
    /// Sequence numbers of the last job posted and the last finished.
    posted: AtomicU64,
    finished: AtomicU64,
    /// Held by the one caller whose job is in the slot.
    busy: AtomicBool,
    /// The last job's panic payload, if it panicked.
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
    /// The thread waiting for the last job, woken when it finishes.
    owner: Mutex<Option<std::thread::Thread>>,
    stop: AtomicBool,
}

// SAFETY: `job` is written by the owner before `posted` is released and read by the helper
// after acquiring it, and not touched again until `finished` says the job has run; the
// `busy` flag keeps two callers out of the slot at once.
unsafe impl Sync for Slot {}
// SAFETY: as above; the job pointer is only dereferenced on the helper thread while the
// caller waits.
unsafe impl Send for Slot {}

/// One long-lived thread that runs a borrowed job beside its caller ([`Helper::join`]):
/// the hand-off is a store and a sequence number in a shared slot, and the helper spins
/// for [`spin_budget`] after each job before it parks, so back-to-back calls cost no
/// allocation and no wake-up (measured ~0.6 µs per join through channels, which this
/// replaces for microsecond jobs such as a frozen network's share of a batch).
#[derive(Debug)]
pub struct Helper {
    slot: Arc<Slot>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("posted", &self.posted)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

impl Helper {
    /// Starts the thread, named `name`.
    ///
    /// # Errors
    /// The system refused to start a thread.
    pub fn spawn(name: &str) -> Result<Helper> {
        let slot = Arc::new(Slot {
            job: UnsafeCell::new(None),
            posted: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            busy: AtomicBool::new(false),
            panic: Mutex::new(None),
            owner: Mutex::new(None),
            stop: AtomicBool::new(false),
        });
        let shared = Arc::clone(&slot);
        let thread = start(name, "helper", move || serve(&shared))?;
        Ok(Helper {
            slot,
            thread: Some(thread),
        })
    }

    /// Runs `there` on the helper thread and `here` on the calling thread at the same time
    /// and returns both results once both have finished: a fork–join in which `there` may
    /// borrow from the caller (the call neither returns nor unwinds before `there` has
    /// finished). When another caller is using the helper, `there` runs on this thread
    /// after `here`. A panic in `here` propagates once `there` has finished.
    ///
    /// # Errors
    /// [`Error::Panicked`] naming `what` when `there` panicked.
    pub fn join<R, T>(
        &self,
        what: &str,
        there: impl FnOnce() -> R + Send,
        here: impl FnOnce() -> T,
    ) -> Result<(R, T)>
    where
        R: Send,
    {
        let slot = &*self.slot;
        if slot.busy.swap(true, Ordering::Acquire) {
            let mine = here();
            let theirs = catch_unwind(AssertUnwindSafe(there));
            return theirs
                .map(|r| (r, mine))
                .map_err(|p| Error::panicked(what, p.as_ref()));
        }
        let mut there = Some(there);
        let mut result = None;
        let mut job = || {
            if let Some(f) = there.take() {
                result = Some(f());
            }
        };
        let job: &mut (dyn FnMut() + Send + '_) = &mut job;
        // SAFETY: only the lifetime changes. The helper calls the job only between the
        // post below and its `finished` store, and `Wait` (below, or in its `Drop` while
        // unwinding) does not let this frame go before that store.
        let job: SlotJob = unsafe { std::mem::transmute(job as *mut (dyn FnMut() + Send + '_)) };
        // SAFETY: `busy` is ours and the helper is idle (its last job finished before
        // `busy` was released), so nobody reads the slot now.
        unsafe { *slot.job.get() = Some(job) };
        if let Ok(mut owner) = slot.owner.lock() {
            *owner = Some(std::thread::current());
        }
        let seq = slot.posted.fetch_add(1, Ordering::Release) + 1;
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
        /// Waits for job `seq` (and then frees the slot), also when unwinding.
        struct Wait<'a>(&'a Slot, u64);
        impl Drop for Wait<'_> {
            fn drop(&mut self) {
                let (slot, seq) = (self.0, self.1);
                let done = || slot.finished.load(Ordering::Acquire) >= seq;
                if !spin_until(done) {
                    // The helper unparks this thread when the job finishes; the timeout
                    // only bounds a wake-up lost to another use of this thread's token.
                    while !done() {
                        std::thread::park_timeout(Duration::from_millis(1));
                    }
                }
                slot.busy.store(false, Ordering::Release);
            }
        }
        let wait = Wait(slot, seq);
        let mine = here();
        drop(wait);
        let panic = slot.panic.lock().map(|mut p| p.take()).unwrap_or(None);
        match (panic, result) {
            (None, Some(r)) => Ok((r, mine)),
            (Some(p), _) => Err(Error::panicked(what, p.as_ref())),
            (None, None) => Err(Error::panicked(what, &"the job did not run")),
        }
    }
}

/// The helper thread: runs each posted job, then waits for the next (spinning, then
/// parked until [`Helper::join`] unparks it). While it spins it takes blocks of long passes
/// its owner offers right after a run ([`crate::helping`]: the sum of the rows' gradients,
/// an optimizer's step outside the run), in the jobs' floating-point mode.
fn serve(slot: &Slot) {
    let mut seen = 0;
    loop {
        let posted =
            || slot.posted.load(Ordering::Acquire) != seen || slot.stop.load(Ordering::Acquire);
        let in_time = {
            let _flush = crate::denormals::flush_denormals_here();
            crate::helping::help_until(help_budget(), posted)
        };
        spun(in_time);
        if !in_time {
            while !posted() {
                std::thread::park();
            }
        }
        if slot.stop.load(Ordering::Acquire) {
            return;
        }
        seen = slot.posted.load(Ordering::Acquire);
        // SAFETY: the owner wrote the job before releasing `posted` and keeps it alive
        // until `finished` reaches `seen`.
        if let Some(job) = unsafe { *slot.job.get() } {
            let _flush = crate::denormals::flush_denormals_here();
            // SAFETY: as above; the pointer is the caller's live closure.
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| unsafe { (*job)() }))
                && let Ok(mut slot_panic) = slot.panic.lock()
            {
                *slot_panic = Some(p);
            }
        }
        slot.finished.store(seen, Ordering::Release);
        if let Ok(owner) = slot.owner.lock()
            && let Some(t) = owner.as_ref()
        {
            t.unpark();
        }
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        self.slot.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_jobs_in_order_on_one_thread() {
        let w = Worker::spawn("test-worker").unwrap();
        let a = w.submit(|| std::thread::current().id());
        let b = w.submit(|| std::thread::current().id());
        let (a, b) = (a.wait("a").unwrap(), b.wait("b").unwrap());
        assert_eq!(a, b);
        assert_ne!(a, std::thread::current().id());
        assert_eq!(w.submit(|| 6 * 7).wait("c").unwrap(), 42);
    }

    #[test]
    fn spins_that_run_out_fade_the_budget_and_spins_in_time_restore_it() {
        let mut us = 500;
        let mut steps = 0;
        while us > 0 {
            us = adapted(us, 500, false);
            steps += 1;
        }
        assert_eq!(steps, 9, "500 µs halves to nothing in 9 spins that run out");
        for _ in 0..62 {
            us = adapted(us, 500, true);
        }
        assert_eq!(
            us, 496,
            "8 µs (1/64 of 500, rounded up) back per spin in time"
        );
        assert_eq!(
            adapted(us, 500, true),
            500,
            "63 spins in time restore all of it"
        );
        assert_eq!(
            adapted(500, 500, true),
            500,
            "never above the configured budget"
        );
        assert_eq!(adapted(0, 0, true), 0, "EMBER_SPIN_US=0 never spins");
    }

    #[test]
    fn a_spin_ends_when_ready_or_after_its_budget() {
        assert!(spin_for(Duration::ZERO, || true));
        let start = Instant::now();
        assert!(!spin_for(Duration::from_millis(2), || false));
        assert!(start.elapsed() >= Duration::from_millis(2));
        let mut n = 0;
        assert!(spin_for(Duration::from_secs(10), || {
            n += 1;
            n == 100
        }));
    }

    #[test]
    fn a_helper_runs_a_borrowing_job_beside_the_caller() {
        let h = Helper::spawn("test-helper").unwrap();
        for _ in 0..1000 {
            let mut halves = vec![0u64; 64];
            let (left, right) = halves.split_at_mut(32);
            let (there, here) = h
                .join(
                    "the right half",
                    || {
                        right
                            .iter_mut()
                            .enumerate()
                            .for_each(|(i, v)| *v = 32 + i as u64);
                        std::thread::current().id()
                    },
                    || {
                        left.iter_mut().enumerate().for_each(|(i, v)| *v = i as u64);
                        std::thread::current().id()
                    },
                )
                .unwrap();
            assert_ne!(there, here);
            assert!(halves.iter().enumerate().all(|(i, &v)| v == i as u64));
        }
        // After a pause long enough for the helper to park, it still wakes.
        std::thread::sleep(spin_budget() + Duration::from_millis(5));
        assert_eq!(h.join("late", || 6 * 7, || ()).unwrap().0, 42);
        // A panicking job is an error, and the helper goes on.
        let e = h.join("the job", || panic!("boom"), || 1).unwrap_err();
        assert!(e.to_string().contains("the job panicked: boom"), "{e}");
        assert_eq!(h.join("next", || 1, || 2).unwrap(), (1, 2));
    }

    #[test]
    fn a_panic_on_the_calling_side_waits_for_the_job_first() {
        let h = Helper::spawn("test-helper").unwrap();
        let done = AtomicBool::new(false);
        let caught = catch_unwind(AssertUnwindSafe(|| {
            h.join(
                "slow",
                || {
                    std::thread::sleep(Duration::from_millis(50));
                    done.store(true, Ordering::SeqCst);
                },
                || panic!("here"),
            )
        }));
        assert!(caught.is_err());
        assert!(
            done.load(Ordering::SeqCst),
            "unwound before the job had finished"
        );
        assert_eq!(h.join("after", || 3, || 4).unwrap(), (3, 4));
    }

    #[test]
    fn callers_sharing_a_helper_each_get_their_own_results() {
        let h = Arc::new(Helper::spawn("test-helper").unwrap());
        let threads: Vec<_> = (0..3u64)
            .map(|t| {
                let h = Arc::clone(&h);
                std::thread::spawn(move || {
                    for i in 0..2000u64 {
                        let (a, b) = h.join("shared", || t * 10_000 + i, || i).unwrap();
                        assert_eq!((a, b), (t * 10_000 + i, i));
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
    }

    #[test]
    fn a_panicking_job_is_an_error_and_the_worker_goes_on() {
        let w = Worker::spawn("test-worker").unwrap();
        let e = w.submit(|| panic!("boom")).wait("the job").unwrap_err();
        assert!(e.to_string().contains("the job panicked: boom"), "{e}");
        assert_eq!(w.submit(|| 1).wait("d").unwrap(), 1);
    }
}
