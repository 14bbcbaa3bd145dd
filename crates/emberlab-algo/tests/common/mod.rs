//! Shared set-up of the learning tests: a flex device, a fixed seed, and the check that
//! some evaluation within the budget reached the score.

use emberlab_algo::TrainReport;
use std::sync::{Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

/// Runs the tests of one binary one at a time: weight initialisation seeds the backend's
/// global generator, and each run wants both cores.
#[allow(dead_code)]
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The best evaluation of a run, printed with the whole curve.
#[allow(dead_code)]
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

/// The off-policy trainer with the buffer `config.replay` describes and evaluation on the
/// registered `id`.
#[allow(dead_code)]
pub fn train_off<L: emberlab_algo::OffPolicyLearner>(
    learner: &mut L,
    env: &mut dyn emberlab_env::VecEnv,
    id: &str,
    config: &emberlab_algo::OffPolicyConfig,
) -> emberlab_core::Result<TrainReport> {
    let mut replay = config.build_replay(env)?;
    let eval = emberlab_env::factory(id)?;
    emberlab_algo::train_off_policy(learner, env, &mut replay, eval.as_ref(), config)
}

/// The on-policy trainer with evaluation on the registered `id`.
#[allow(dead_code)]
pub fn train_on<L: emberlab_algo::OnPolicyLearner>(
    learner: &mut L,
    env: &mut dyn emberlab_env::VecEnv,
    id: &str,
    config: &emberlab_algo::OnPolicyConfig,
) -> emberlab_core::Result<TrainReport> {
    let eval = emberlab_env::factory(id)?;
    emberlab_algo::train_on_policy(learner, env, eval.as_ref(), config)
}

/// Learning and acting on `device`.
#[allow(dead_code)]
pub fn same(device: &burn::tensor::Device) -> emberlab_algo::Devices {
    emberlab_algo::Devices::same(device)
}

struct Flatten(Vec<u32>);

impl burn::module::ModuleVisitor for Flatten {
    fn visit_float<const D: usize>(
        &mut self,
        param: &burn::module::Param<burn::tensor::Tensor<D>>,
    ) {
        let v: Vec<f32> = param.val().into_data().try_into_vec_as::<f32>().unwrap();
        self.0.extend(v.iter().map(|x| x.to_bits()));
    }
}

/// Every float parameter of `m` as bits, in visiting order: equal exactly when the weights
/// are bit-identical.
#[allow(dead_code)]
pub fn bits<M: burn::module::Module>(m: &M) -> Vec<u32> {
    let mut f = Flatten(Vec::new());
    m.visit(&mut f);
    f.0
}
