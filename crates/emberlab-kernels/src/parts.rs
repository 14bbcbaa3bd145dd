//! The independent parts of an update, run side by side on separate cores.
//!
//! Many updates consist of parts that read the same inputs and change different things:
//! SAC's critic step and actor step, TD3's critic step and delayed actor step, the members
//! of a large critic ensemble split in two. [`Parts::run`] runs such parts in two phases:
//!
//! 1. every part computes (its loss, the loss's check, its gradients) and returns what it
//!    would commit, a [`Commit`];
//! 2. only if every part succeeded, every part commits (its optimizer step) on its thread,
//!    and the commit's value is the part's result.
//!
//! [`Parts::run`] takes a [`Group`] of parts — one [`Part`], a `Vec`, an array or an
//! `Option` of parts, or a tuple of groups — and gives back the same shape of results,
//! typed: `(Part<A>, Option<Part<B>>)` gives `(A, Option<B>)`. A learner builds its parts,
//! runs them, and moves the results into itself; nothing is passed out through slots.
//!
//! With [`Parts::parallel`] the parts are dealt to threads in turn (part `i` to thread
//! `i % threads`; the calling thread is thread 0, the others are long-lived helpers of the
//! [`Parts`] value), each thread computes its parts, the threads meet at a gate, and each
//! commits its own parts. A thread that reaches the gate first takes blocks of the other
//! threads' large matrix products while it waits ([`crate::helping`]), so a small part
//! beside a large one still pays, and so does a run of fewer parts than threads: a thread
//! without parts goes straight to the gate and helps there (TD3's updates without an actor
//! step, one part: +8.6% end to end on Pendulum). After committing, a thread waits in the
//! same way for the others' commits, taking blocks of their long elementwise passes (an
//! optimizer step over a large network). [`Parts::sequential`] computes every part in order on
//! the calling thread, then commits every part in order. [`Parts::auto`] picks between
//! them (and between spinning and blocking waits) by timing the first runs on the machine
//! it runs on, and tries again when the load changes ([`tuner`]).
//!
//! ## Guarantees
//! - **The same bits either way**, provided the parts are independent: no part reads what
//!   another part writes before the gate. (Products shared with a helping thread give the
//!   same bits too: every output is the same dot product whoever computes it.)
//! - **All or nothing**: when a part returns an error or panics while computing, no part
//!   commits, and [`Parts::run`] returns the error of the lowest-numbered part that failed
//!   (a panic as [`Error::Panicked`]) — the same error whatever the schedule. A panic while
//!   committing is also an error; so that it leaves nothing half-changed, commit into
//!   values of your own (step clones of the networks and optimizers, which share their
//!   tensors until written) and move them into the learner after `run` returns `Ok`.
//! - **No thread start-up per call**: the helpers start on the first parallel run and live
//!   as long as the [`Parts`]; the hand-off is a store in a shared slot, and waits spin for
//!   [`crate::worker::spin_budget`] before they block.
//!
//! ```
//! use emberlab_kernels::parts::{Parts, part};
//!
//! # fn main() -> emberlab_core::Result<()> {
//! let (left, right) = (vec![1.0f32; 4], vec![2.0f32; 4]);
//! let step = |w: &Vec<f32>| {
//!     let w = w.clone();
//!     part(move || {
//!         let grad: Vec<f32> = w.iter().map(|w| 2.0 * w).collect(); // may fail: `?`
//!         Ok(move || w.iter().zip(&grad).map(|(w, g)| w - 0.1 * g).collect::<Vec<f32>>())
//!     })
//! };
//! let mut parts = Parts::parallel(2);
//! let (left, right) = parts.run("an update", (step(&left), step(&right)))?;
//! assert_eq!((left[0], right[0]), (0.8, 1.6));
//! # Ok(())
//! # }
//! ```

pub mod tuner;

use crate::worker::{Helper, cap_spin, help_budget, spin_is_configured, spun};
use crate::{Error, Result};
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Instant;
use tuner::Tuner;
pub use tuner::{Setting, Tuning};

/// The last trial of every tuned [`Parts`] of the process, by name.
static TUNINGS: Mutex<Vec<(String, Tuning)>> = Mutex::new(Vec::new());

/// What the tuned [`Parts`] of this process chose ([`Parts::auto`]), by their names
/// (`ember-sac`, ...), the latest trial of each; empty before a trial ends. For reports:
/// `ember train --json` and `ember bench` print it.
pub fn tunings() -> Vec<(String, Tuning)> {
    TUNINGS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

fn publish(name: &str, tuning: &Tuning) {
    let mut all = TUNINGS.lock().unwrap_or_else(|e| e.into_inner());
    match all.iter_mut().find(|(n, _)| n == name) {
        Some((_, t)) => *t = tuning.clone(),
        None => all.push((name.to_string(), tuning.clone())),
    }
}

/// What a part does once every part has computed successfully (its optimizer step); its
/// value is the part's result.
pub type Commit<'a, T = ()> = Box<dyn FnOnce() -> T + Send + 'a>;

/// One part of an update: computes, and returns its [`Commit`] or an error.
pub type Part<'a, T = ()> = Box<dyn FnOnce() -> Result<Commit<'a, T>> + Send + 'a>;

/// A [`Part`] from a closure that computes and returns its commit.
pub fn part<'a, T, C>(compute: impl FnOnce() -> Result<C> + Send + 'a) -> Part<'a, T>
where
    C: FnOnce() -> T + Send + 'a,
{
    Box::new(move || compute().map(|c| Box::new(c) as Commit<'a, T>))
}

/// A committed part's value, its type erased while the parts run.
pub struct Value(Box<dyn Any + Send>);

/// One part with its value's type erased: what a [`Group`] hands to [`Parts::run`].
pub struct Job<'a>(Part<'a, Value>);

/// Parts given to [`Parts::run`] together, and the shape of their results: a [`Part`]
/// gives its value, a `Vec`, array or `Option` of groups gives the same of their results,
/// a tuple of groups a tuple. Parts are numbered (for errors and for dealing them to
/// threads) in the order they appear.
pub trait Group<'a> {
    /// What [`Parts::run`] returns for these parts.
    type Output;
    /// What rebuilding the output needs to know (how many parts there were).
    type Shape;
    /// Appends this group's parts to `jobs`, in order.
    fn erase(self, jobs: &mut Vec<Job<'a>>) -> Self::Shape;
    /// The output from the values of this group's parts, taken in order from `values`
    /// (`None` if they do not fit, which [`Parts::run`] never lets happen).
    fn rebuild(shape: Self::Shape, values: &mut dyn Iterator<Item = Value>)
    -> Option<Self::Output>;
}

impl<'a, T: Send + 'static> Group<'a> for Part<'a, T> {
    type Output = T;
    type Shape = ();

    fn erase(self, jobs: &mut Vec<Job<'a>>) {
        jobs.push(Job(Box::new(move || {
            let commit = self()?;
            Ok(Box::new(move || Value(Box::new(commit()))) as Commit<'a, Value>)
        })));
    }

    fn rebuild((): (), values: &mut dyn Iterator<Item = Value>) -> Option<T> {
        values.next()?.0.downcast().ok().map(|v| *v)
    }
}

impl<'a, G: Group<'a>> Group<'a> for Vec<G> {
    type Output = Vec<G::Output>;
    type Shape = Vec<G::Shape>;

    fn erase(self, jobs: &mut Vec<Job<'a>>) -> Self::Shape {
        self.into_iter().map(|g| g.erase(jobs)).collect()
    }

    fn rebuild(
        shape: Self::Shape,
        values: &mut dyn Iterator<Item = Value>,
    ) -> Option<Self::Output> {
        shape.into_iter().map(|s| G::rebuild(s, values)).collect()
    }
}

impl<'a, G: Group<'a>, const N: usize> Group<'a> for [G; N] {
    type Output = [G::Output; N];
    type Shape = [G::Shape; N];

    fn erase(self, jobs: &mut Vec<Job<'a>>) -> Self::Shape {
        self.map(|g| g.erase(jobs))
    }

    fn rebuild(
        shape: Self::Shape,
        values: &mut dyn Iterator<Item = Value>,
    ) -> Option<Self::Output> {
        let all: Option<Vec<G::Output>> =
            shape.into_iter().map(|s| G::rebuild(s, values)).collect();
        all?.try_into().ok()
    }
}

impl<'a, G: Group<'a>> Group<'a> for Option<G> {
    type Output = Option<G::Output>;
    type Shape = Option<G::Shape>;

    fn erase(self, jobs: &mut Vec<Job<'a>>) -> Self::Shape {
        self.map(|g| g.erase(jobs))
    }

    fn rebuild(
        shape: Self::Shape,
        values: &mut dyn Iterator<Item = Value>,
    ) -> Option<Self::Output> {
        match shape {
            Some(s) => G::rebuild(s, values).map(Some),
            None => Some(None),
        }
    }
}

/// Tuples of groups, their parts numbered left to right.
macro_rules! tuple_group {
    ($($g:ident),+) => {
        impl<'a, $($g: Group<'a>),+> Group<'a> for ($($g,)+) {
            type Output = ($($g::Output,)+);
            type Shape = ($($g::Shape,)+);

            #[allow(non_snake_case)]
            fn erase(self, jobs: &mut Vec<Job<'a>>) -> Self::Shape {
                let ($($g,)+) = self;
                ($($g.erase(jobs),)+)
            }

            #[allow(non_snake_case)]
            fn rebuild(
                shape: Self::Shape,
                values: &mut dyn Iterator<Item = Value>,
            ) -> Option<Self::Output> {
                let ($($g,)+) = shape;
                Some(($($g::rebuild($g, values)?,)+))
            }
        }
    };
}
tuple_group!(A, B);
tuple_group!(A, B, C);
tuple_group!(A, B, C, D);

/// Runs the parts of updates, in parallel or in order (module docs).
#[derive(Debug)]
pub struct Parts {
    threads: usize,
    name: String,
    helpers: Vec<Helper>,
    tuner: Option<Tuner>,
}

impl Parts {
    /// Parts computed and committed in order on the calling thread.
    pub fn sequential() -> Parts {
        Parts::parallel(1)
    }

    /// Parts dealt to `threads` threads (at least 1): the caller and `threads − 1` helpers,
    /// started on the first run.
    pub fn parallel(threads: usize) -> Parts {
        Parts {
            threads: threads.max(1),
            name: "ember-part".into(),
            helpers: Vec::new(),
            tuner: None,
        }
    }

    /// Parts on `threads` threads or on the calling thread alone, whichever the first runs
    /// time faster here, with spinning or with blocking waits (unless `EMBER_SPIN_US` sets
    /// the spin); timed again when the load changes ([`tuner`]). The same results as either
    /// fixed schedule. With `threads` 1 it is [`Parts::sequential`].
    pub fn auto(threads: usize) -> Parts {
        let threads = threads.max(1);
        let mut candidates = vec![Setting {
            threads,
            spin: true,
        }];
        if threads > 1 {
            if !spin_is_configured() {
                candidates.push(Setting {
                    threads,
                    spin: false,
                });
            }
            candidates.push(Setting {
                threads: 1,
                spin: true,
            });
        }
        Parts {
            tuner: (candidates.len() > 1).then(|| Tuner::new(candidates)),
            ..Parts::parallel(threads)
        }
    }

    /// What the last trial of an [`Parts::auto`] found (`None` for a fixed schedule, or
    /// before the first trial ends).
    pub fn tuning(&self) -> Option<&Tuning> {
        self.tuner.as_ref().and_then(Tuner::tuning)
    }

    /// Names the helper threads `name-1`, `name-2`, ... (default `ember-part`).
    pub fn named(mut self, name: &str) -> Parts {
        self.name = name.to_string();
        self
    }

    /// How many threads the next run deals its parts to (for [`Parts::auto`], the setting
    /// its tuner has for that run: a learner that arranges its parts by thread asks this
    /// before it builds them).
    pub fn threads(&self) -> usize {
        self.tuner
            .as_ref()
            .map_or(self.threads, |t| t.setting().threads)
    }

    /// Computes every part, then commits every part if all succeeded (module docs), and
    /// returns the parts' results in the shape they were given. `what` names the update in
    /// errors.
    ///
    /// # Errors
    /// The error of the lowest-numbered part that failed to compute (then nothing was
    /// committed); [`Error::Panicked`] for a part that panicked while computing or
    /// committing; [`Error::Unavailable`] when a helper thread cannot be started.
    pub fn run<'a, G: Group<'a>>(&mut self, what: &str, parts: G) -> Result<G::Output> {
        let mut jobs = Vec::new();
        let shape = parts.erase(&mut jobs);
        // A tuned run's spin, on each thread it runs on (`on_thread`); a fixed schedule
        // leaves the threads' spin as it is.
        let cap = self
            .tuner
            .as_ref()
            .map(|t| (!t.setting().spin).then_some(0));
        let result = self.run_now(what, jobs, cap);
        if let Some(tuner) = &mut self.tuner
            && let Some(tuning) = tuner.after_run(Instant::now())
        {
            publish(&self.name, tuning);
        }
        let values = result?;
        G::rebuild(shape, &mut values.into_iter())
            .ok_or_else(|| Error::panicked(what, &"the parts' results do not fit the parts given"))
    }

    /// Runs the jobs; their values in part order, or the run's error.
    fn run_now(&mut self, what: &str, jobs: Vec<Job<'_>>, cap: Option<Spin>) -> Result<Vec<Value>> {
        // Threads without parts of their own still help: they take blocks of the others'
        // large products at the gate. (An empty run helps no one: it stays here.)
        let threads = if jobs.is_empty() { 1 } else { self.threads() };
        let done = if threads == 1 {
            let gate = Gate::new(1);
            let group = jobs.into_iter().enumerate().collect();
            on_thread(what, group, &gate, cap)
        } else {
            while self.helpers.len() < threads - 1 {
                let name = format!("{}-{}", self.name, self.helpers.len() + 1);
                self.helpers.push(Helper::spawn(&name)?);
            }
            let mut groups: Vec<Vec<(usize, Job<'_>)>> = (0..threads).map(|_| Vec::new()).collect();
            for (i, p) in jobs.into_iter().enumerate() {
                groups[i % threads].push((i, p));
            }
            let gate = Gate::new(threads);
            fork(what, &self.helpers[..threads - 1], groups, &gate, cap)?
        };
        // The lowest-numbered part's failure wins; commit panics rank last.
        let Done {
            mut values,
            mut failures,
        } = done;
        failures.sort_by_key(|(i, _)| *i);
        if let Some((_, e)) = failures.into_iter().next() {
            return Err(e);
        }
        values.sort_by_key(|(i, _)| *i);
        Ok(values.into_iter().map(|(_, v)| v).collect())
    }
}

/// A failure and the number of its part (commit panics rank after every part).
type Failure = (usize, Error);

/// What the threads of a run did: the committed parts' values and the failures, each with
/// its part's number.
#[derive(Default)]
struct Done {
    values: Vec<(usize, Value)>,
    failures: Vec<Failure>,
}

/// A tuned run's spin cap for its threads ([`cap_spin`]); `None` in the outer option: a
/// fixed schedule, which leaves each thread's cap alone.
type Spin = Option<u64>;

/// Runs `groups[0]` here and `groups[k]` on `helpers[k − 1]`, all at once; returns what
/// every thread did.
fn fork(
    what: &str,
    helpers: &[Helper],
    mut groups: Vec<Vec<(usize, Job<'_>)>>,
    gate: &Gate,
    cap: Option<Spin>,
) -> Result<Done> {
    let Some((helper, rest)) = helpers.split_last() else {
        let group = groups.pop().unwrap_or_default();
        return Ok(on_thread(what, group, gate, cap));
    };
    let mine = groups.pop().unwrap_or_default();
    let (theirs, others) = helper.join(
        what,
        || on_thread(what, mine, gate, cap),
        || fork(what, rest, groups, gate, cap),
    )?;
    let mut all = others?;
    all.values.extend(theirs.values);
    all.failures.extend(theirs.failures);
    Ok(all)
}

/// One thread's share: computes its parts in order (stopping at its first failure),
/// arrives at the gate, and commits its parts in order if every thread
/// succeeded. Returns its values and failures.
fn on_thread(what: &str, group: Vec<(usize, Job<'_>)>, gate: &Gate, cap: Option<Spin>) -> Done {
    if let Some(cap) = cap {
        // Kept after the run: a helper's wait for its next job spins (or not) as it did.
        cap_spin(cap);
    }
    let mut commits = Vec::with_capacity(group.len());
    let mut done = Done::default();
    for (i, Job(compute)) in group {
        match catch_unwind(AssertUnwindSafe(compute)) {
            Ok(Ok(commit)) => commits.push((i, commit)),
            Ok(Err(e)) => done.failures.push((i, e)),
            Err(p) => {
                let e = Error::panicked(format!("{what}, part {i}"), p.as_ref());
                done.failures.push((i, e));
            }
        }
        if !done.failures.is_empty() {
            break;
        }
    }
    if gate.arrive(done.failures.is_empty()) {
        for (i, commit) in commits {
            match catch_unwind(AssertUnwindSafe(commit)) {
                Ok(value) => done.values.push((i, value)),
                Err(p) => {
                    let what = format!("{what}, part {i}'s commit");
                    done.failures
                        .push((usize::MAX, Error::panicked(what, p.as_ref())));
                }
            }
        }
    }
    gate.leave();
    done
}

/// Where the threads of a run agree that every part computed before any commits.
struct Gate {
    threads: usize,
    arrived: AtomicUsize,
    /// Threads done committing.
    left: AtomicUsize,
    state: Mutex<GateState>,
    all_arrived: Condvar,
}

struct GateState {
    ok: bool,
}

impl Gate {
    fn new(threads: usize) -> Gate {
        Gate {
            threads,
            arrived: AtomicUsize::new(0),
            left: AtomicUsize::new(0),
            state: Mutex::new(GateState { ok: true }),
            all_arrived: Condvar::new(),
        }
    }

    /// Reports this thread's success, waits for every thread (taking blocks of their
    /// shared products meanwhile), and says whether all succeeded.
    fn arrive(&self, mine: bool) -> bool {
        {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            s.ok &= mine;
            let n = self.arrived.fetch_add(1, Ordering::AcqRel) + 1;
            if n == self.threads {
                self.all_arrived.notify_all();
                return s.ok;
            }
        }
        let all = || self.arrived.load(Ordering::Acquire) == self.threads;
        spun(crate::helping::help_until(help_budget(), all));
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while self.arrived.load(Ordering::Acquire) < self.threads {
            s = self.all_arrived.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.ok
    }

    /// Reports that this thread has committed its parts and, within [`help_budget`],
    /// waits for the others to commit theirs, taking blocks of their long elementwise
    /// passes meanwhile (an optimizer's step over a large network, a target's Polyak
    /// average: [`crate::helping::share_each`]). Past the budget it goes on; the run's
    /// join waits for the rest.
    fn leave(&self) {
        if self.left.fetch_add(1, Ordering::AcqRel) + 1 < self.threads {
            let all = || self.left.load(Ordering::Acquire) == self.threads;
            crate::helping::help_until(help_budget(), all);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::thread::ThreadId;

    /// Five parts, each moving its slot on: the commits' values come back as an array in
    /// the parts' order. Records the thread of each.
    fn squares(parts: &mut Parts, slots: &mut [f64; 5], on: &Mutex<Vec<(usize, ThreadId)>>) {
        let mut i = 0;
        let jobs = slots.map(|slot| {
            let k = i;
            i += 1;
            part(move || {
                on.lock().unwrap().push((k, std::thread::current().id()));
                let new = (slot * 1.1).sin() * 3.0;
                Ok(move || new)
            })
        });
        *slots = parts.run("squares", jobs).unwrap();
    }

    #[test]
    fn parallel_parts_give_the_sequential_bits_on_their_threads() {
        let on = Mutex::new(Vec::new());
        let (mut a, mut b) = ([0.5, 1.0, 1.5, 2.0, 2.5], [0.5, 1.0, 1.5, 2.0, 2.5]);
        let (mut seq, mut par) = (Parts::sequential(), Parts::parallel(3));
        for _ in 0..200 {
            squares(&mut seq, &mut a, &on);
            squares(&mut par, &mut b, &on);
        }
        assert_eq!(a.map(f64::to_bits), b.map(f64::to_bits));
        let me = std::thread::current().id();
        let on = on.into_inner().unwrap();
        // The last run's parts: 0 and 3 here, 1 and 4 on one helper, 2 on another.
        let mut last = on[on.len() - 5..].to_vec();
        last.sort_by_key(|(i, _)| *i);
        let last: Vec<ThreadId> = last.into_iter().map(|(_, t)| t).collect();
        assert_eq!((last[0], last[3]), (me, me));
        assert_eq!(last[1], last[4]);
        assert!(last[1] != me && last[2] != me && last[1] != last[2]);
    }

    /// Parts 0..n; those in `fail` return an error naming them, those in `panic` panic;
    /// says which committed.
    fn failing(
        parts: &mut Parts,
        n: usize,
        fail: &[usize],
        panic: &[usize],
    ) -> (Result<Vec<()>>, Vec<bool>) {
        let committed: Vec<AtomicBool> = (0..n).map(|_| AtomicBool::new(false)).collect();
        let jobs = (0..n)
            .map(|i| {
                let flag = &committed[i];
                part(move || {
                    if panic.contains(&i) {
                        panic!("part {i} broke");
                    }
                    if fail.contains(&i) {
                        return Err(Error::Diverged {
                            name: format!("loss {i}"),
                            value: f64::NAN,
                            step: 0,
                        });
                    }
                    Ok(move || flag.store(true, Ordering::SeqCst))
                })
            })
            .collect::<Vec<_>>();
        let r = parts.run("a test update", jobs);
        (
            r,
            committed.iter().map(|c| c.load(Ordering::SeqCst)).collect(),
        )
    }

    #[test]
    fn a_failing_part_commits_nothing_and_the_lowest_failure_is_reported() {
        for mut parts in [Parts::sequential(), Parts::parallel(2), Parts::parallel(3)] {
            let (r, committed) = failing(&mut parts, 6, &[4, 2], &[]);
            let e = r.unwrap_err().to_string();
            assert!(e.contains("loss 2"), "{} threads: {e}", parts.threads());
            assert!(committed.iter().all(|c| !c));
            let (r, committed) = failing(&mut parts, 6, &[5], &[3]);
            let e = r.unwrap_err().to_string();
            assert!(
                e.contains("part 3 broke"),
                "{} threads: {e}",
                parts.threads()
            );
            assert!(committed.iter().all(|c| !c));
            // It goes on: a clean run commits every part.
            let (r, committed) = failing(&mut parts, 6, &[], &[]);
            assert_eq!(r.unwrap().len(), 6);
            assert!(committed.iter().all(|c| *c));
        }
    }

    #[test]
    fn an_auto_schedule_gives_the_fixed_bits_and_reports_its_choice() {
        let on = Mutex::new(Vec::new());
        let (mut a, mut b) = ([0.5, 1.0, 1.5, 2.0, 2.5], [0.5, 1.0, 1.5, 2.0, 2.5]);
        let (mut seq, mut auto) = (Parts::sequential(), Parts::auto(2).named("test-auto"));
        let trial = tuner::WARMUP_RUNS + 3 * tuner::ROUNDS * tuner::BLOCK_RUNS;
        let mut threads = std::collections::BTreeSet::new();
        for _ in 0..trial + 5 {
            threads.insert(auto.threads());
            squares(&mut seq, &mut a, &on);
            squares(&mut auto, &mut b, &on);
        }
        assert_eq!(a.map(f64::to_bits), b.map(f64::to_bits));
        // Both schedules ran during the trial (unless EMBER_SPIN_US left two settings).
        assert_eq!(threads.into_iter().collect::<Vec<_>>(), vec![1, 2]);
        let tuning = auto.tuning().expect("the trial has ended").clone();
        assert!(tuning.tried.len() >= 2 && tuning.tried.iter().all(|(_, s)| *s > 0.0));
        assert!(tuning.tried.iter().any(|(s, _)| *s == tuning.chosen));
        assert!(tunings().contains(&("test-auto".to_string(), tuning)));
    }

    #[test]
    fn results_come_back_typed_in_the_shape_of_the_parts() {
        for mut parts in [Parts::sequential(), Parts::parallel(2), Parts::parallel(3)] {
            let threads = parts.threads();
            let word = |w: &'static str| part(move || Ok(move || w.to_string()));
            let number = |n: u32| part(move || Ok(move || n * 10));
            let (a, b, c, d) = parts
                .run(
                    "shapes",
                    (
                        number(1),
                        Some(word("two")),
                        None::<Part<'_, u32>>,
                        (vec![number(3), number(4)], [word("five")]),
                    ),
                )
                .unwrap();
            assert_eq!(a, 10, "{threads} threads");
            assert_eq!(b.as_deref(), Some("two"));
            assert_eq!(c, None);
            assert_eq!(d, (vec![30, 40], ["five".to_string()]));
            // A failure anywhere in the shape gives no results at all.
            let broken: Part<'_, u32> = part(|| -> Result<Commit<'_, u32>> {
                Err(Error::invalid("part", "3", "a part that works"))
            });
            let e = parts
                .run("shapes", (word("one"), vec![number(2), broken]))
                .unwrap_err();
            assert!(e.to_string().contains("a part that works"), "{e}");
        }
    }

    #[test]
    fn a_panicking_commit_is_an_error() {
        let mut parts = Parts::parallel(2);
        let jobs: Vec<Part<'_>> = vec![part(|| Ok(|| ())), part(|| Ok(|| panic!("step failed")))];
        let e = parts.run("an update", jobs).unwrap_err().to_string();
        assert!(
            e.contains("part 1's commit") && e.contains("step failed"),
            "{e}"
        );
        parts.run("next", vec![part(|| Ok(|| ()))]).unwrap();
    }
}
