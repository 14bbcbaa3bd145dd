//! The CrossQ example (`examples/custom_crossq.rs`: batch-normalised critics without target
//! networks, assembled from the library's public parts) run by the `ember` command,
//! registered as `crossq`: it learns Pendulum-v1 (first evaluation ≥ −200) within half of
//! SAC's zoo budget with SAC's zoo trainer settings; killed at random
//! instants and resumed, it equals a run that never stopped; it evaluates and exports.

mod command;
#[path = "../examples/custom_crossq.rs"]
mod crossq;

use command::Learning;
use emberlab::run::kinds::Kind;

/// The child process the tests start: the command with CrossQ registered.
#[test]
fn command_child() {
    command::child(|| Kind::<crossq::CrossQConfig>::named("crossq"));
}

#[test]
fn crossq_reaches_minus_200_within_half_of_sacs_budget() {
    let cwd = command::scratch("crossq-learns");
    let crossq = Learning::run(&cwd, "crossq");
    println!("CrossQ {}", crossq.curve());
    let at = crossq.first_at_goal().expect("CrossQ never reached -200");
    // SAC's zoo budget for Pendulum-v1 is 20,000 env steps.
    assert!(at <= 10_000, "CrossQ reached -200 at {at} env steps");
    // One critic update per env step after the random warm-up (SAC's zoo trainer).
    let updates = crossq.updates;
    assert!(
        updates > 0 && updates <= crossq.env_steps,
        "{updates} updates"
    );
    std::fs::remove_dir_all(&cwd).unwrap();
}

#[test]
fn crossq_killed_and_resumed_by_the_command_equals_uninterrupted() {
    let extra = ["--set", "crossq.width=32"];
    command::killed_and_resumed_equals_uninterrupted("crossq", "[crossq]", &extra);
}
