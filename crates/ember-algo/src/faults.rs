//! Fault injection, for tests of what a failure leaves behind: [`arm`] a named site and the
//! next time a learner passes it, it panics there (once). The sites sit at the worst
//! places, after gradients and before or inside optimizer steps:
//! `sac.critic_step` (on SAC's worker thread under the parallel schedule),
//! `sac.actor_step`, `dqn.step`, `policy_gradient.step`.
//!
//! Unarmed, a site costs one relaxed atomic load.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static ANY: AtomicBool = AtomicBool::new(false);
static ARMED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

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
    let mut armed = ARMED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = armed.iter().position(|s| *s == site) {
        armed.swap_remove(i);
        ANY.store(!armed.is_empty(), Ordering::SeqCst);
        drop(armed);
        panic!("injected fault at {site}");
    }
}
