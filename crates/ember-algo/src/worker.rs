//! A helper thread kept for a learner's lifetime, so that a parallel update pays no thread
//! start-up (≈ 0.35 ms per spawned thread here, with a cold allocator heap) on every step.
//!
//! Waits between the two threads of an update are short (tens to hundreds of µs), and a
//! thread that blocks on them pays the wake-up of a sleeping core: 50–75 µs measured on a
//! 2-vCPU virtual machine, 5% of a SAC update. So every wait here first spins for up to
//! [`spin_budget`] (500 µs; a bounded cost: the two threads of a parallel update own the
//! two cores they were given anyway) and then blocks. `EMBER_SPIN_US=0` (read once) blocks
//! at once, for machines whose cores are shared with other work.

use ember_core::{Error, Result};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The default of [`spin_budget`].
const SPIN_US: u64 = 500;

/// How long a wait spins before it blocks: `EMBER_SPIN_US` microseconds (read once; 0
/// blocks at once), 500 by default. A value that is not a whole number is reported once
/// on standard error and the default is used.
pub(crate) fn spin_budget() -> Duration {
    static BUDGET: OnceLock<Duration> = OnceLock::new();
    *BUDGET.get_or_init(|| {
        let us = match std::env::var("EMBER_SPIN_US") {
            Err(_) => SPIN_US,
            Ok(v) => v.trim().parse().unwrap_or_else(|_| {
                eprintln!(
                    "ember: EMBER_SPIN_US={v:?} is not a number of microseconds; using {SPIN_US}"
                );
                SPIN_US
            }),
        };
        Duration::from_micros(us)
    })
}

/// Spins until `ready()` says yes or [`spin_budget`] has passed; says whether it became
/// ready.
pub(crate) fn spin_until(ready: impl FnMut() -> bool) -> bool {
    spin_for(spin_budget(), ready)
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
pub(crate) fn receive<T>(rx: &Receiver<T>) -> Option<T> {
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

/// One long-lived thread running submitted jobs in order.
#[derive(Debug)]
pub(crate) struct Worker {
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

/// The result of a job submitted with [`Worker::submit`].
pub(crate) struct Pending<R>(Receiver<std::thread::Result<R>>);

impl Worker {
    /// Starts the thread, named `name`; an error if the system cannot start a thread.
    pub(crate) fn spawn(name: &str) -> Result<Worker> {
        let (jobs, queue) = channel::<Job>();
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                while let Some(job) = receive(&queue) {
                    job();
                }
            })
            .map_err(|e| Error::Unavailable {
                what: format!("a `{name}` worker thread"),
                hint: format!("the system refused to start a thread: {e}"),
            })?;
        Ok(Worker {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Runs `f` on the worker thread; [`Pending::wait`] returns its result (a panic in
    /// `f` becomes an [`Error::Panicked`]).
    pub(crate) fn submit<R, F>(&self, f: F) -> Pending<R>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        let (send, recv) = channel();
        let job: Job = Box::new(move || {
            // Network math: denormals flushed for the job (ember_core::denormals).
            let _flush = ember_core::denormals::flush_denormals_here();
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
    pub(crate) fn wait(self, what: &str) -> Result<R> {
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
    fn a_panicking_job_is_an_error_and_the_worker_goes_on() {
        let w = Worker::spawn("test-worker").unwrap();
        let e = w.submit(|| panic!("boom")).wait("the job").unwrap_err();
        assert!(e.to_string().contains("the job panicked: boom"), "{e}");
        assert_eq!(w.submit(|| 1).wait("d").unwrap(), 1);
    }
}
