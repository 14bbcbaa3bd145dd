//! Fault injection, for tests of what a failure leaves behind: [`arm`] a named site and the
//! next time a learner passes it, it panics there (once). [`watch`] records instead, for
//! each site passed, whether the thread flushed denormals there (`emberlab_core::denormals`). The sites sit at the worst
//! places, after gradients and before or inside optimizer steps:
//! `sac.critic_step` (on SAC's worker thread under the parallel schedule),
//! `sac.actor_step`, `td3.step` (TD3's critic step), `td3.actor_step`, `dqn.step`,
//! `policy_gradient.step`.
//!
//! Unarmed, a site costs one relaxed atomic load.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static ANY: AtomicBool = AtomicBool::new(false);
static ARMED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
static WATCHING: AtomicBool = AtomicBool::new(false);
static SEEN: Mutex<Vec<(&'static str, bool)>> = Mutex::new(Vec::new());

/// Starts recording, at every site passed, whether the thread flushes denormals there.
pub fn watch() {
    SEEN.lock().unwrap_or_else(|e| e.into_inner()).clear();
    WATCHING.store(true, Ordering::SeqCst);
    ANY.store(true, Ordering::SeqCst);
}

/// Stops recording and returns `(site, denormals flushed)` for each pass since [`watch`].
pub fn seen() -> Vec<(&'static str, bool)> {
    WATCHING.store(false, Ordering::SeqCst);
    std::mem::take(&mut *SEEN.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Makes the next pass through `site` panic (process-wide; tests that use it should not
/// run learners concurrently).
pub fn arm(site: &'static str) {
    ARMED.lock().unwrap_or_else(|e| e.into_inner()).push(site);
    ANY.store(true, Ordering::SeqCst);
}

/// Panics if `site` is armed (disarming it).
pub(crate) fn site(site: &'static str) {
    if !ANY.load(Ordering::Relaxed) {
        return;
    }
    if WATCHING.load(Ordering::SeqCst) {
        let flushed = emberlab_core::denormals::denormals_flushed();
        SEEN.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((site, flushed));
    }
    let mut armed = ARMED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = armed.iter().position(|s| *s == site) {
        armed.swap_remove(i);
        ANY.store(
            !armed.is_empty() || WATCHING.load(Ordering::SeqCst),
            Ordering::SeqCst,
        );
        drop(armed);
        panic!("injected fault at {site}");
    }
}
