//! Weight checkpoints: a learner's networks as safetensors files in one folder, with a
//! `checkpoint.toml` saying when they were taken.
//!
//! A checkpoint is written whole into `<dir>.partial` and only then takes `<dir>`'s place,
//! so `<dir>` always holds the last complete checkpoint; and the trainers write one only
//! after updates whose losses were all finite, so a diverged run (a NaN loss is an
//! [`Error::Diverged`]) leaves the last good checkpoint as it was. Checkpoints hold weights
//! (and SAC's temperature), not optimizer moments or the replay buffer: loading one
//! restores the policy and its critics, and training from it starts fresh Adam moments.

use burn::module::Module;
use burn::store::{ModuleSnapshot, SafetensorsStore};
use emberlab_core::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A learner whose networks can be written to and read from a checkpoint folder. A learner
/// offers it to the trainers through `OffPolicyLearner::checkpoint` /
/// `OnPolicyLearner::checkpoint`; one that does not simply has no checkpoints.
pub trait Checkpoint {
    /// Writes every network into `dir` (an existing, empty folder), one file each.
    ///
    /// # Errors
    /// An I/O error writing a file.
    fn save_networks(&mut self, dir: &Path) -> Result<()>;

    /// Reads the networks that [`Checkpoint::save_networks`] wrote into `dir`. On an error
    /// the learner is left as it was.
    ///
    /// # Errors
    /// A missing, unreadable or mismatched file.
    fn load_networks(&mut self, dir: &Path) -> Result<()>;
}

/// The error of a trainer asked for checkpoints of a learner that has none.
pub(crate) fn unsupported(dir: &Path) -> Error {
    Error::Unavailable {
        what: format!("checkpoints in {}", dir.display()),
        hint: "this learner returns no `Checkpoint` from its `checkpoint()` method".into(),
    }
}

/// When a checkpoint was taken (its `checkpoint.toml`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointInfo {
    /// The learner's env steps (over all its training calls) when it was written.
    pub env_steps: u64,
    /// The learner's updates (over all its training calls) when it was written.
    pub updates: u64,
}

const INFO: &str = "checkpoint.toml";

fn sibling(dir: &Path, suffix: &str) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    dir.with_file_name(name)
}

/// Writes `module` as `<dir>/<name>.safetensors`.
pub fn save_module<M: Module>(module: &M, dir: &Path, name: &str) -> Result<()> {
    let path = dir.join(format!("{name}.safetensors"));
    module
        .save_into(&mut SafetensorsStore::from_file(&path))
        .map_err(|e| Error::io_other(&path, e))
}

/// Returns `module` with the weights of `<dir>/<name>.safetensors`; an error if the file
/// is missing, unreadable, or does not fit the module's shapes.
pub fn load_module<M: Module>(mut module: M, dir: &Path, name: &str) -> Result<M> {
    let path = dir.join(format!("{name}.safetensors"));
    if !path.is_file() {
        return Err(Error::Io {
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such checkpoint file"),
            path,
        });
    }
    let corrupt = |reason: String| Error::Corrupt {
        path: path.clone(),
        kind: format!("`{name}` network checkpoint"),
        reason,
    };
    let result = module
        .load_from(&mut SafetensorsStore::from_file(&path))
        .map_err(|e| corrupt(e.to_string()))?;
    if !result.errors.is_empty() || !result.missing.is_empty() {
        return Err(corrupt(format!(
            "errors {:?}, missing {:?}",
            result.errors, result.missing
        )));
    }
    Ok(module)
}

/// Fsyncs every file under `dir` and the folders themselves.
fn sync_tree(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(Error::io_at(dir))? {
        let path = entry.map_err(Error::io_at(dir))?.path();
        if path.is_dir() {
            sync_tree(&path)?;
        } else {
            std::fs::File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(Error::io_at(&path))?;
        }
    }
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> Result<()> {
    // Folders can be opened and synced on Unix; elsewhere this is best effort.
    match std::fs::File::open(dir) {
        Ok(f) => {
            let _ = f.sync_all();
            Ok(())
        }
        Err(e) => Err(Error::io_at(dir)(e)),
    }
}

/// Writes a folder atomically: `write` fills `<dir>.partial`, a
/// [`MANIFEST`](crate::manifest::MANIFEST) lists every file with its checksum
/// ([`crate::manifest::verify_dir`] checks a folder against it), every file is fsynced, and only
/// then does it take `dir`'s place (the old one moved to `<dir>.previous` for the instant
/// between the two renames, then removed). A crash at any point leaves either the old or
/// the new folder complete: [`existing_dir`] finds it.
///
/// # Errors
/// An error of `write` or of the file system; `dir` is then left as it was.
pub fn write_dir_atomically(dir: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let partial = sibling(dir, ".partial");
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(Error::io_at(&partial))?;
    }
    std::fs::create_dir_all(&partial).map_err(Error::io_at(&partial))?;
    let written = write(&partial)
        .and_then(|()| crate::manifest::write_manifest(&partial))
        .and_then(|()| sync_tree(&partial));
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(e);
    }
    let previous = sibling(dir, ".previous");
    if dir.exists() {
        if previous.exists() {
            std::fs::remove_dir_all(&previous).map_err(Error::io_at(&previous))?;
        }
        std::fs::rename(dir, &previous).map_err(Error::io_at(dir))?;
    }
    std::fs::rename(&partial, dir).map_err(Error::io_at(dir))?;
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        sync_dir(parent)?;
    }
    if previous.exists() {
        std::fs::remove_dir_all(&previous).map_err(Error::io_at(&previous))?;
    }
    Ok(())
}

/// The complete folder [`write_dir_atomically`] left for `dir`: `dir` itself, or
/// `<dir>.previous` if a crash came between its two renames; `None` if neither exists.
pub fn existing_dir(dir: &Path) -> Option<PathBuf> {
    if dir.is_dir() {
        return Some(dir.to_path_buf());
    }
    let previous = sibling(dir, ".previous");
    previous.is_dir().then_some(previous)
}

/// Writes a checkpoint of `learner` to `dir`, with the observation statistics its policy
/// acts through when it has them (`normalizer`, as
/// [`emberlab_env::OBS_NORMALIZER_FILE`]), replacing the one there only once the new one
/// is complete ([`write_dir_atomically`]).
///
/// # Errors
/// An I/O error; the previous checkpoint is then left as it was.
pub fn save_checkpoint(
    learner: &mut dyn Checkpoint,
    dir: &Path,
    info: &CheckpointInfo,
    normalizer: Option<&emberlab_env::ObsNormalizer>,
) -> Result<()> {
    write_dir_atomically(dir, |partial| {
        learner.save_networks(partial)?;
        if let Some(n) = normalizer {
            n.save_file(&partial.join(emberlab_env::OBS_NORMALIZER_FILE))?;
        }
        let text = toml::to_string(info).expect("checkpoint info serialises");
        let info_path = partial.join(INFO);
        std::fs::write(&info_path, text).map_err(Error::io_at(&info_path))
    })
}

/// Loads the checkpoint in `dir` into `learner` and says when it was taken, after checking
/// the folder's files against its manifest ([`crate::manifest::verify_dir`]).
///
/// # Errors
/// A missing, damaged or mismatched file; `learner` is then left as it was.
pub fn load_checkpoint(learner: &mut dyn Checkpoint, dir: &Path) -> Result<CheckpointInfo> {
    let dir = &existing_dir(dir).unwrap_or_else(|| dir.to_path_buf());
    crate::manifest::verify_dir(dir)?;
    let info_path = dir.join(INFO);
    let text = std::fs::read_to_string(&info_path).map_err(Error::io_at(&info_path))?;
    let info: CheckpointInfo = toml::from_str(&text).map_err(|e| Error::Corrupt {
        path: info_path.clone(),
        kind: "checkpoint info".into(),
        reason: e.to_string(),
    })?;
    learner.load_networks(dir)?;
    Ok(info)
}

/// Where and how often the trainers write checkpoints (`[checkpoint]` in a config file).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CheckpointConfig {
    /// The checkpoint folder (`None`: no checkpoints).
    pub dir: Option<PathBuf>,
    /// Write one every this many env steps (the learner's, counted over all its training
    /// calls); 0: only at the start and at the end.
    pub every: u64,
}

impl crate::config::Validate for CheckpointConfig {
    fn validate(&self) -> Result<()> {
        if self.every > 0 && self.dir.is_none() {
            return Err(Error::invalid(
                "checkpoint.dir",
                "none",
                format!(
                    "a folder (checkpoint.every = {} asks for checkpoints)",
                    self.every
                ),
            ));
        }
        Ok(())
    }
}

/// The trainers' checkpoint schedule: one before training (so a usable checkpoint exists
/// from the start), one every `every` env steps, one at the end.
#[derive(Debug)]
pub(crate) struct Checkpointer {
    config: CheckpointConfig,
    next: u64,
    /// Env steps of the checkpoint written last (the final one is not written twice).
    written: Option<u64>,
    /// Observation statistics written beside the weights ([`emberlab_env::OBS_NORMALIZER_FILE`]).
    normalizer: Option<emberlab_env::ObsNormalizer>,
}

impl Checkpointer {
    /// A schedule for `config`; an error if checkpoints are asked of a learner without
    /// them (`learner` is its `checkpoint()`).
    pub(crate) fn new(
        config: &CheckpointConfig,
        learner: Option<&mut dyn Checkpoint>,
    ) -> Result<Self> {
        if let (Some(dir), None) = (&config.dir, learner) {
            return Err(unsupported(dir));
        }
        Ok(Checkpointer {
            config: config.clone(),
            next: 0,
            written: None,
            normalizer: None,
        })
    }

    /// Also writes these observation statistics into every checkpoint.
    pub(crate) fn with_normalizer(
        mut self,
        normalizer: Option<emberlab_env::ObsNormalizer>,
    ) -> Self {
        self.normalizer = normalizer;
        self
    }

    /// Writes a checkpoint if one is due at `env_steps`. Call only after updates that
    /// succeeded.
    pub(crate) fn maybe(
        &mut self,
        learner: Option<&mut dyn Checkpoint>,
        env_steps: u64,
        updates: u64,
    ) -> Result<()> {
        let Some(dir) = &self.config.dir else {
            return Ok(());
        };
        let learner = learner.ok_or_else(|| unsupported(dir))?;
        if env_steps < self.next || self.written == Some(env_steps) {
            return Ok(());
        }
        let info = CheckpointInfo { env_steps, updates };
        save_checkpoint(learner, dir, &info, self.normalizer.as_ref())?;
        self.written = Some(env_steps);
        self.next = match self.config.every {
            0 => u64::MAX,
            every => (env_steps / every + 1) * every,
        };
        Ok(())
    }

    /// Appends the schedule's position.
    pub(crate) fn save_state(&self, out: &mut emberlab_core::state::StateWriter) {
        out.u64(self.next).u64(self.written.unwrap_or(u64::MAX));
    }

    /// Puts the schedule where a snapshot says (`written` as [`Checkpointer::save_state`]
    /// wrote it: `u64::MAX` for none).
    pub(crate) fn restore(&mut self, next: u64, written: u64) {
        self.next = next;
        self.written = Some(written).filter(|&w| w != u64::MAX);
    }

    /// Writes the final checkpoint (unless the last one was taken at `env_steps`).
    pub(crate) fn finish(
        &mut self,
        learner: Option<&mut dyn Checkpoint>,
        env_steps: u64,
        updates: u64,
    ) -> Result<()> {
        self.next = 0;
        self.maybe(learner, env_steps, updates)
    }
}
