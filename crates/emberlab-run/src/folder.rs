//! A run folder as `ember train` leaves it: `config.toml` (the resolved config), the latest
//! full checkpoint in `checkpoint/` and the weights of the best evaluation in `best/`; and
//! how a learner gets its weights back from one.

use crate::config::{RunConfig, load_file};
use crate::error::{Context, Result, RunError};
use crate::learners::RunLearner;
use emberlab_algo::checkpoint::existing_dir;
use emberlab_algo::load_checkpoint;
use emberlab_env::ObsNormalizer;
use std::path::{Path, PathBuf};

/// The folder of the run's latest full checkpoint (written atomically).
pub const CHECKPOINT: &str = "checkpoint";
/// The folder of the weights of the best evaluation so far.
pub const BEST: &str = "best";
/// The resolved config of a run.
pub const CONFIG: &str = "config.toml";
/// What a run on images observes and does ([`FrameSpaces`]), so that its policy loads
/// without starting a game.
pub const FRAMES: &str = "frames.toml";

/// The observations and actions of a run on images: stacks of `stack = [c, h, w]` `u8`
/// frames (`c` = frames stacked × channels) and `actions` discrete actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrameSpaces {
    /// `[c, h, w]` of one observation.
    pub stack: [usize; 3],
    /// Number of discrete actions.
    pub actions: usize,
}

impl FrameSpaces {
    /// Writes `frames.toml` into the run folder `dir` (through a temporary file and a
    /// rename).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn save(&self, dir: &Path) -> Result<()> {
        let text = toml::to_string(self)
            .map_err(|e| RunError::Config(format!("cannot write {FRAMES}: {e}")))?;
        let (path, tmp) = (dir.join(FRAMES), dir.join(format!("{FRAMES}.tmp")));
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .context_with(|| format!("cannot write {}", path.display()))
    }

    /// Reads `frames.toml` of the run folder `dir`; `None` when the run has none (a run of
    /// vectors, or one started before the file was written).
    ///
    /// # Errors
    /// A file that cannot be read or does not parse, or an empty shape or action set.
    pub fn load(dir: &Path) -> Result<Option<Self>> {
        let path = dir.join(FRAMES);
        if !path.is_file() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path)
            .context_with(|| format!("cannot read {}", path.display()))?;
        let spaces: FrameSpaces = toml::from_str(&text)
            .map_err(|e| RunError::Config(format!("{}: {e}", path.display())))?;
        if spaces.stack.contains(&0) || spaces.actions == 0 {
            return Err(RunError::Config(format!(
                "{}: stack {:?} and {} actions; every size must be >= 1",
                path.display(),
                spaces.stack,
                spaces.actions
            )));
        }
        Ok(Some(spaces))
    }
}

/// The config of the run in `dir` (for `--resume`, `ember eval`, a run's policy).
///
/// # Errors
/// A folder that is not a run, or a config that does not parse.
pub fn load_config(dir: &Path) -> Result<RunConfig> {
    if !dir.join(CONFIG).is_file() {
        return Err(RunError::Folder(format!(
            "{} is not a run folder (no {CONFIG}); runs are made by `ember train`",
            dir.display()
        )));
    }
    load_file(&dir.join(CONFIG))
}

/// Loads the run's last checkpoint into `learner` (its whole training state where the run
/// kept one, else its weights), or with `best` the weights of its best evaluation; returns
/// the folder they came from.
///
/// # Errors
/// No checkpoint (or no best weights) yet, or weights that do not load into `learner`.
pub fn load_weights(learner: &mut dyn RunLearner, run: &Path, best: bool) -> Result<PathBuf> {
    if best {
        let dir = run.join(BEST);
        if existing_dir(&dir).is_none() {
            return Err(RunError::Folder(format!(
                "{} has no best weights yet (written at the first evaluation that improves)",
                run.display()
            )));
        }
        load_checkpoint(learner.checkpoint(), &dir)
            .context_with(|| format!("cannot load {}", dir.display()))?;
        return Ok(dir);
    }
    let dir = existing_dir(&run.join(CHECKPOINT))
        .ok_or_else(|| RunError::Folder(format!("{} has no checkpoint yet", run.display())))?;
    if !dir.join("learner").is_dir() {
        // A run whose environment has no snapshots keeps weights only.
        load_checkpoint(learner.checkpoint(), &dir)
            .context_with(|| format!("cannot load {}", dir.display()))?;
        return Ok(dir);
    }
    emberlab_algo::manifest::verify_dir(&dir)
        .and_then(|()| learner.training_state().load_state(&dir.join("learner")))
        .context_with(|| format!("cannot load the checkpoint in {}", dir.display()))?;
    Ok(dir)
}

/// The observation statistics saved beside a run's weights in `from`, when the run learned
/// on normalised observations (its policy acts through them); `None` otherwise.
///
/// # Errors
/// Statistics that are missing or damaged, or of another width than `obs_dim`.
pub fn obs_normalizer(
    config: &RunConfig,
    from: &Path,
    obs_dim: usize,
) -> Result<Option<ObsNormalizer>> {
    let normalize = config.on_policy.as_ref().and_then(|c| c.normalize.as_ref());
    let Some(nc) = normalize.filter(|n| n.observations) else {
        return Ok(None);
    };
    let n = ObsNormalizer::new(obs_dim, nc.clip_obs, nc.epsilon);
    let path = from.join(emberlab_env::OBS_NORMALIZER_FILE);
    n.load_file(&path)
        .context_with(|| format!("cannot load the observation statistics {}", path.display()))?;
    Ok(Some(n))
}
