//! The REDQ example (`examples/custom_redq.rs`: an algorithm outside the library, assembled
//! from its public parts) run by the `ember` command, registered as `redq`: its first
//! evaluation ≥ −200 on Pendulum-v1 comes in fewer env steps than the library's SAC with
//! the same seed and trainer settings; killed at random instants and resumed, it equals a
//! run that never stopped; it evaluates and exports.

mod command;
#[path = "../examples/custom_redq.rs"]
mod redq;

use command::Learning;
use emberlab::run::kinds::Kind;

/// The child process the tests start: the command with REDQ registered.
#[test]
fn command_child() {
    command::child(|| Kind::<redq::RedqConfig>::named("redq"));
}

#[test]
fn redq_reaches_minus_200_in_fewer_env_steps_than_sac() {
    let cwd = command::scratch("redq-learns");
    let (redq, sac) = (Learning::run(&cwd, "redq"), Learning::run(&cwd, "sac"));
    println!("REDQ {}\nSAC  {}", redq.curve(), sac.curve());
    let r = redq.first_at_goal().expect("REDQ never reached -200");
    let s = sac.first_at_goal().expect("SAC never reached -200");
    assert!(r < s, "REDQ reached -200 at {r} env steps, SAC at {s}");
    // Many critic updates per env step (UPDATES_PER_STEP after the random warm-up).
    let per_step = redq.updates as f64 / redq.env_steps as f64;
    assert!(per_step > redq::G as f64 / 2.0, "{per_step}");
    std::fs::remove_dir_all(&cwd).unwrap();
}

#[test]
fn redq_killed_and_resumed_by_the_command_equals_uninterrupted() {
    command::killed_and_resumed_equals_uninterrupted("redq", "[redq]", &["--set", "redq.width=32"]);
}
