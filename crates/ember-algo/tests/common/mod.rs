//! Shared set-up of the learning tests: a flex device, a fixed seed, and the check that
//! some evaluation within the budget reached the score.

use ember_algo::TrainReport;
use std::sync::{Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

/// Runs the tests of one binary one at a time: weight initialisation seeds the backend's
/// global generator, and each run wants both cores.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The best evaluation of a run, printed with the whole curve.
pub fn best_eval(name: &str, report: &TrainReport) -> f64 {
    let curve: Vec<String> = report
        .evals
        .iter()
        .map(|e| format!("{}:{:.1}", e.env_steps, e.mean_return))
        .collect();
    println!(
        "{name}: {} env steps, {} updates, {:.1} s, evals [{}]",
        report.env_steps,
        report.updates,
        report.wall_secs,
        curve.join(", ")
    );
    report
        .evals
        .iter()
        .map(|e| e.mean_return)
        .fold(f64::NEG_INFINITY, f64::max)
}
