//! One MuJoCo simulation as Gymnasium's `MujocoEnv` drives it: the model loaded from a task
//! XML file, its data, `frame_skip` physics steps per env step followed by
//! `mj_rnePostConstraint`, `set_state` followed by `mj_forward`, and snapshots of the full
//! integration state.

use emberlab_core::state::{StateReader, StateWriter};
use emberlab_core::{Error, Result};
use mujoco_rs::mujoco_c::{mj_forward, mj_resetData, mj_rnePostConstraint, mj_step, mjtState};
use mujoco_rs::prelude::{MjData, MjModel, log_config, set_log_config};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The environment variable naming the folder of Gymnasium's MuJoCo task XML files
/// (`gymnasium/envs/mujoco/assets`; `scripts/setup-mujoco.sh` prints it).
pub const ASSETS_VAR: &str = "EMBER_GYMNASIUM_ASSETS";

/// Where a task's XML file is: `EMBER_GYMNASIUM_ASSETS/<file>`.
///
/// # Errors
/// [`Error::Unavailable`] when the variable is not set, naming it and the setup script.
pub fn default_xml_path(file: &str) -> Result<PathBuf> {
    xml_path_in(std::env::var_os(ASSETS_VAR), file)
}

fn xml_path_in(assets: Option<std::ffi::OsString>, file: &str) -> Result<PathBuf> {
    match assets {
        Some(dir) if !dir.is_empty() => Ok(Path::new(&dir).join(file)),
        _ => Err(Error::Unavailable {
            what: format!("MuJoCo task file {file}"),
            hint: format!(
                "set {ASSETS_VAR} to Gymnasium 1.4's gymnasium/envs/mujoco/assets folder \
                 (scripts/setup-mujoco.sh prints it), or give the task its XML path"
            ),
        }),
    }
}

/// Models by path, loaded once per process and shared read-only by every environment
/// (MuJoCo never writes to a model while stepping).
static MODELS: Mutex<Option<HashMap<PathBuf, Arc<MjModel>>>> = Mutex::new(None);

fn load_model(path: &Path) -> Result<Arc<MjModel>> {
    let mut cache = MODELS.lock().unwrap_or_else(|e| e.into_inner());
    if cache.is_none() {
        // MuJoCo appends its warnings (e.g. Gymnasium's humanoid.xml uses the deprecated
        // `settotalmass`) to MUJOCO_LOG.TXT in the working directory: keep them on the console
        // only, instead of leaving a file in every run folder.
        // SAFETY: this runs once, before this process's first model load through Ember, while
        // the lock is held; no Ember simulation exists yet to read the configuration.
        unsafe { set_log_config(log_config().with_logto_file(false)) };
    }
    let cache = cache.get_or_insert_with(HashMap::new);
    if let Some(m) = cache.get(path) {
        return Ok(m.clone());
    }
    if !path.is_file() {
        return Err(Error::Io {
            path: path.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("no MuJoCo model file here (check {ASSETS_VAR} or the task's XML path)"),
            ),
        });
    }
    let model = MjModel::from_xml(path).map_err(|e| Error::Corrupt {
        path: path.to_path_buf(),
        kind: "MuJoCo model".into(),
        reason: e.to_string(),
    })?;
    let model = Arc::new(model);
    cache.insert(path.to_path_buf(), model.clone());
    Ok(model)
}

/// A simulation with Gymnasium's stepping conventions.
pub(crate) struct Sim {
    model: Arc<MjModel>,
    data: MjData<Arc<MjModel>>,
    frame_skip: usize,
    init_qpos: Vec<f64>,
    init_qvel: Vec<f64>,
    /// The length of `mj_getState`'s integration state (positions, velocities,
    /// activations, time, controls, warm start, ...): everything the next step depends on.
    state_len: usize,
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim")
            .field("nq", &self.nq())
            .field("nv", &self.nv())
            .field("nu", &self.nu())
            .field("frame_skip", &self.frame_skip)
            .finish()
    }
}

const INTEGRATION: u32 = mjtState::mjSTATE_INTEGRATION as u32;

impl Sim {
    /// Loads the model at `path` and makes its data, as `MujocoEnv.__init__` does.
    pub(crate) fn load(path: &Path, frame_skip: usize) -> Result<Self> {
        let model = load_model(path)?;
        let data = MjData::try_new(model.clone()).map_err(|e| Error::Unavailable {
            what: format!("MuJoCo data for {}", path.display()),
            hint: e.to_string(),
        })?;
        let init_qpos = data.qpos().to_vec();
        let init_qvel = data.qvel().to_vec();
        let state_len = model.state_size(INTEGRATION);
        Ok(Sim {
            model,
            data,
            frame_skip,
            init_qpos,
            init_qvel,
            state_len,
        })
    }

    pub(crate) fn model(&self) -> &MjModel {
        &self.model
    }

    pub(crate) fn data(&self) -> &MjData<Arc<MjModel>> {
        &self.data
    }

    #[cfg(feature = "mujoco-render")]
    pub(crate) fn data_mut(&mut self) -> &mut MjData<Arc<MjModel>> {
        &mut self.data
    }

    pub(crate) fn nq(&self) -> usize {
        self.model.ffi().nq as usize
    }

    pub(crate) fn nv(&self) -> usize {
        self.model.ffi().nv as usize
    }

    pub(crate) fn nu(&self) -> usize {
        self.model.ffi().nu as usize
    }

    /// The env step's duration: `timestep * frame_skip`.
    pub(crate) fn dt(&self) -> f64 {
        self.model.ffi().opt.timestep * self.frame_skip as f64
    }

    pub(crate) fn init_qpos(&self) -> &[f64] {
        &self.init_qpos
    }

    pub(crate) fn init_qvel(&self) -> &[f64] {
        &self.init_qvel
    }

    pub(crate) fn qpos(&self) -> &[f64] {
        self.data.qpos()
    }

    pub(crate) fn qvel(&self) -> &[f64] {
        self.data.qvel()
    }

    /// The actuators' control ranges as `f32` bounds (Gymnasium's action space).
    pub(crate) fn ctrl_bounds(&self) -> (Vec<f32>, Vec<f32>) {
        self.model
            .actuator_ctrlrange()
            .iter()
            .map(|r| (r[0] as f32, r[1] as f32))
            .unzip()
    }

    /// `mj_resetData`: the model's initial state, time 0, no warm start.
    pub(crate) fn reset_data(&mut self) {
        // SAFETY: model and data belong together (the data was made from this model) and
        // stay alive for the call.
        unsafe { mj_resetData(self.model.ffi(), self.data.ffi_mut()) };
    }

    /// Gymnasium's `set_state(qpos, qvel)`: writes both, then `mj_forward`.
    pub(crate) fn set_state(&mut self, qpos: &[f64], qvel: &[f64]) {
        self.data.qpos_mut().copy_from_slice(qpos);
        self.data.qvel_mut().copy_from_slice(qvel);
        // SAFETY: as in `reset_data`.
        unsafe { mj_forward(self.model.ffi(), self.data.ffi_mut()) };
    }

    /// Gymnasium's `do_simulation(action, frame_skip)`: sets the controls (widened to
    /// `f64`), steps `frame_skip` times, then `mj_rnePostConstraint` (for `cfrc_ext`).
    pub(crate) fn do_simulation(&mut self, action: &[f32]) {
        for (c, &a) in self.data.ctrl_mut().iter_mut().zip(action) {
            *c = f64::from(a);
        }
        // SAFETY: as in `reset_data`.
        unsafe {
            for _ in 0..self.frame_skip {
                mj_step(self.model.ffi(), self.data.ffi_mut());
            }
            mj_rnePostConstraint(self.model.ffi(), self.data.ffi_mut());
        }
    }

    /// Appends the integration state.
    pub(crate) fn save(&self, out: &mut StateWriter) {
        out.f64s(&self.data.state(INTEGRATION));
    }

    /// Restores what [`Sim::save`] wrote. The derived quantities (body positions, contact
    /// forces) are left as they are: the next step recomputes them from this state before
    /// it reads any, and what tasks read before stepping they keep themselves.
    pub(crate) fn restore(&mut self, src: &mut StateReader<'_>) -> Result<()> {
        let values = src.f64s(Some(self.state_len))?;
        for (i, v) in values.iter().enumerate() {
            Error::check_finite(|| format!("MuJoCo state[{i}] in a snapshot"), *v)?;
        }
        self.data.set_state(&values, INTEGRATION).map_err(|e| {
            Error::invalid(
                "MuJoCo state in a snapshot",
                e.to_string(),
                "a state of this model",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_assets_folder_names_the_variable_and_the_script() {
        for unset in [None, Some("".into())] {
            let e = xml_path_in(unset, "hopper.xml").unwrap_err().to_string();
            assert!(
                e.contains(ASSETS_VAR) && e.contains("setup-mujoco.sh"),
                "{e}"
            );
            assert!(e.contains("hopper.xml"), "{e}");
        }
        let p = xml_path_in(Some("/x/assets".into()), "ant.xml").unwrap();
        assert_eq!(p, Path::new("/x/assets/ant.xml"));
    }

    #[test]
    fn missing_and_broken_model_files_are_errors() {
        let dir = std::env::temp_dir().join(format!("ember-sim-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("nope.xml");
        let e = Sim::load(&missing, 1).unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e}");
        assert!(e.to_string().contains("nope.xml"), "{e}");
        let broken = dir.join("broken.xml");
        std::fs::write(&broken, "<mujoco><worldbody><body></mujoco>").unwrap();
        let e = Sim::load(&broken, 1).unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
