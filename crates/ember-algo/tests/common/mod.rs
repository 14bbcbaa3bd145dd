//! Shared set-up of the learning tests: a flex device, a fixed seed, and the check that
//! some evaluation within the budget reached the score.

use ember_algo::TrainReport;

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
