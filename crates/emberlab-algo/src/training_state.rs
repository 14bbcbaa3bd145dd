//! A learner's complete training state — networks with their parameter ids, optimizer
//! moments, generators, counters, the acting copy — so that training resumed from it goes
//! on bit for bit as if it had never stopped (on the same backend and CPU).
//!
//! Unlike a weight [`crate::Checkpoint`] (safetensors files a user can load anywhere),
//! these files are burnpack files that keep burn's parameter ids, because optimizer states
//! are keyed by them: a rebuilt learner takes the saved ids with the weights, and the saved
//! optimizer states then find their parameters.

use burn::module::Module;
use burn::optim::{ModuleOptimizer, OptimizerRecord};
use burn::store::{BurnpackStore, ModuleSnapshot};
use emberlab_core::state::{StateReader, StateWriter, load_words, save_words};
use emberlab_core::{Error, Result};
use emberlab_env::VecEnv;
use std::path::Path;

/// A learner whose whole training state can be written and read back.
pub trait TrainingState {
    /// Writes the training state into `dir` (an existing, empty folder).
    ///
    /// # Errors
    /// An I/O error writing a file.
    fn save_state(&mut self, dir: &Path) -> Result<()>;

    /// Reads what [`TrainingState::save_state`] wrote into a learner built with the same
    /// config and spaces. On an error the learner is left as it was.
    ///
    /// # Errors
    /// A missing, truncated or mismatched file.
    fn load_state(&mut self, dir: &Path) -> Result<()>;
}

fn corrupt(path: &Path, kind: &str, reason: impl ToString) -> Error {
    Error::Corrupt {
        path: path.to_path_buf(),
        kind: kind.into(),
        reason: reason.to_string(),
    }
}

fn must_exist(path: &Path) -> Result<()> {
    if path.is_file() {
        Ok(())
    } else {
        Err(Error::Io {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such state file"),
        })
    }
}

/// Writes `module` (values and parameter ids) as `<dir>/<name>.bpk`.
///
/// # Errors
/// An I/O error.
pub fn save_net<M: Module>(module: &M, dir: &Path, name: &str) -> Result<()> {
    let path = dir.join(format!("{name}.bpk"));
    module
        .save_into(&mut BurnpackStore::from_file(&path))
        .map_err(|e| Error::io_other(&path, e))
}

/// `module` with the values and parameter ids of `<dir>/<name>.bpk`.
///
/// # Errors
/// A missing or unreadable file, or one that does not fit the module.
pub fn load_net<M: Module>(mut module: M, dir: &Path, name: &str) -> Result<M> {
    let path = dir.join(format!("{name}.bpk"));
    must_exist(&path)?;
    let kind = format!("`{name}` network state");
    let result = module
        .load_from(&mut BurnpackStore::from_file(&path))
        .map_err(|e| corrupt(&path, &kind, e))?;
    if !result.errors.is_empty() || !result.missing.is_empty() {
        return Err(corrupt(
            &path,
            &kind,
            format!("errors {:?}, missing {:?}", result.errors, result.missing),
        ));
    }
    Ok(module)
}

/// Writes an optimizer's state as `<dir>/<name>.bpk`.
///
/// # Errors
/// An I/O error.
pub fn save_optim(optim: &ModuleOptimizer, dir: &Path, name: &str) -> Result<()> {
    let path = dir.join(format!("{name}.bpk"));
    optim.save(&path).map_err(|e| Error::io_other(&path, e))
}

/// `optim` (unchanged) with the state of `<dir>/<name>.bpk` loaded into a copy.
///
/// # Errors
/// A missing or unreadable file.
pub fn load_optim(optim: &ModuleOptimizer, dir: &Path, name: &str) -> Result<ModuleOptimizer> {
    let path = dir.join(format!("{name}.bpk"));
    must_exist(&path)?;
    let kind = format!("`{name}` optimizer state");
    let record = OptimizerRecord::load(&path).map_err(|e| corrupt(&path, &kind, e))?;
    let copy = optim.clone();
    Error::catch(
        || format!("loading {}", path.display()),
        move || Ok(copy.load_record(record)),
    )
}

/// Writes the small scalars of a learner (generators, counters) as `<dir>/learner.state`.
///
/// # Errors
/// An I/O error.
pub fn save_scalars(dir: &Path, kind: &str, out: StateWriter) -> Result<()> {
    save_words(&dir.join("learner.state"), kind, out.words())
}

/// Reads `<dir>/learner.state` written by [`save_scalars`] with the same `kind`, handing a
/// reader to `read`, which must consume it all.
///
/// # Errors
/// A missing, damaged or foreign file, or one `read` rejects.
pub fn load_scalars<T>(
    dir: &Path,
    kind: &str,
    read: impl FnOnce(&mut StateReader<'_>) -> Result<T>,
) -> Result<T> {
    let path = dir.join("learner.state");
    let words = load_words(&path, kind)?;
    let mut src = StateReader::new(&words, format!("{kind} learner"));
    let value = read(&mut src)?;
    src.finish()?;
    Ok(value)
}

/// The learner's missing [`TrainingState`].
fn no_training_state() -> Error {
    Error::Unavailable {
        what: "the training state of this learner".into(),
        hint: "exact resume needs a learner whose `training_state()` returns one".into(),
    }
}

/// Writes `learner/` (the learner's training state) and `env.state` into `dir`.
pub(crate) fn save_learner_and_env(
    learner: Option<&mut dyn TrainingState>,
    env: &dyn VecEnv,
    dir: &Path,
) -> Result<()> {
    let learner = learner.ok_or_else(no_training_state)?;
    let mut words = StateWriter::new();
    env.save_state(&mut words)?;
    save_learner(Some(learner), dir)?;
    save_words(&dir.join("env.state"), "vector env", words.words())
}

/// Writes `learner/` (the learner's training state) into `dir`.
pub(crate) fn save_learner(learner: Option<&mut dyn TrainingState>, dir: &Path) -> Result<()> {
    let learner = learner.ok_or_else(no_training_state)?;
    let learner_dir = dir.join("learner");
    std::fs::create_dir_all(&learner_dir).map_err(Error::io_at(&learner_dir))?;
    learner.save_state(&learner_dir)
}

/// Restores the learner from `dir/learner` (all or nothing, as the learner restores).
pub(crate) fn load_learner(learner: Option<&mut dyn TrainingState>, dir: &Path) -> Result<()> {
    learner
        .ok_or_else(no_training_state)?
        .load_state(&dir.join("learner"))
}

/// Restores the environments from `env_words`, then the learner from `dir/learner`; if
/// either fails, the environments are put back as they were (the learner restores all or
/// nothing itself). Call after every other part of the state was read and checked.
pub(crate) fn load_learner_and_env(
    learner: Option<&mut dyn TrainingState>,
    env: &mut dyn VecEnv,
    env_words: &[u64],
    dir: &Path,
) -> Result<()> {
    let learner = learner.ok_or_else(no_training_state)?;
    let mut backup = StateWriter::new();
    env.save_state(&mut backup)?;
    let mut src = StateReader::new(env_words, "vector env");
    let loaded = env
        .load_state(&mut src)
        .and_then(|()| src.finish())
        .and_then(|()| learner.load_state(&dir.join("learner")));
    if loaded.is_err() {
        // Put the environments back as they were (their own snapshot cannot fail to load).
        let _ = env.load_state(&mut StateReader::new(backup.words(), "vector env"));
    }
    loaded
}

/// The saved run's `field` must equal this run's.
pub(crate) fn check_saved(field: &str, ours: u64, saved: u64) -> Result<()> {
    if ours == saved {
        Ok(())
    } else {
        Err(Error::invalid(
            field,
            ours,
            format!("the saved run's {saved} (resume with the run's own config)"),
        ))
    }
}
