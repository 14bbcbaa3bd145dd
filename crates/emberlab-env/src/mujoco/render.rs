//! Frames of a MuJoCo task drawn by MuJoCo's own renderer, offscreen and headless through EGL
//! (cargo feature `mujoco-render`; on Debian the packages `libegl1`, `libegl-mesa0` and
//! `libgl1-mesa-dri` give a software EGL device, no GPU or display needed).

use super::MujocoEnv;
use emberlab_core::{Error, Result};
use mujoco_rs::prelude::MjvCamera;
use mujoco_rs::renderer::MjRenderer;

/// What to install when no EGL context opens.
const EGL_HINT: &str = "offscreen rendering needs EGL: on Debian `apt-get install libegl1 \
                        libegl-mesa0 libgl1-mesa-dri` (software rendering, no GPU or display)";

/// Draws a [`MujocoEnv`]'s current state as RGB images, with a camera that follows the
/// model's first body (the torso of the walkers) from the side.
pub struct MujocoRenderer {
    renderer: MjRenderer,
    width: usize,
    height: usize,
}

impl std::fmt::Debug for MujocoRenderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MujocoRenderer")
            .field("width", &self.width)
            .field("height", &self.height)
            .finish_non_exhaustive()
    }
}

fn unavailable(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Unavailable {
        what: what.into(),
        hint: format!("{e}; {EGL_HINT}"),
    }
}

impl MujocoRenderer {
    /// A renderer of `width` × `height` pixels for `env`'s model.
    ///
    /// # Errors
    /// A size of zero or larger than the model's offscreen buffer (`<visual><global
    /// offwidth offheight>`), or no EGL device that opens a context (the error says what
    /// to install).
    pub fn new(env: &MujocoEnv, width: usize, height: usize) -> Result<Self> {
        let model = env.sim().model();
        let global = &model.vis().global;
        let (max_w, max_h) = (
            global.offwidth.max(0) as usize,
            global.offheight.max(0) as usize,
        );
        if width == 0 || height == 0 || width > max_w || height > max_h {
            return Err(Error::invalid(
                "frame size",
                format!("{width} × {height}"),
                format!(
                    "between 1 × 1 and {}'s offscreen buffer, {max_w} × {max_h}",
                    env.id()
                ),
            ));
        }
        let mut camera = MjvCamera::new_tracking(1);
        // Gymnasium's tasks set 3–4 m; the model's extent scales it down for small ones.
        camera.distance = (1.2 * model.stat().extent).clamp(1.5, 4.0);
        camera.azimuth = 90.0;
        camera.elevation = -20.0;
        let renderer = MjRenderer::builder()
            .width(width as u32)
            .height(height as u32)
            .camera(camera)
            .build(model)
            .map_err(|e| unavailable("an offscreen MuJoCo renderer", e))?;
        Ok(MujocoRenderer {
            renderer,
            width,
            height,
        })
    }

    /// The frame size, `(width, height)`.
    pub fn size(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    /// Draws `env`'s current state: `height` rows of `width` RGB pixels, top row first.
    ///
    /// # Errors
    /// The GL context was lost.
    pub fn render(&mut self, env: &mut MujocoEnv) -> Result<&[u8]> {
        self.renderer
            .sync_data(env.sim_mut().data_mut())
            .map_err(|e| unavailable("a MuJoCo frame", e))?;
        self.renderer
            .render()
            .map_err(|e| unavailable("a MuJoCo frame", e))?;
        self.renderer
            .rgb_flat()
            .ok_or_else(|| unavailable("a MuJoCo frame", "RGB rendering is off"))
    }
}
