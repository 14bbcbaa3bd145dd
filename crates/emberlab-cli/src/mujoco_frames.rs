//! The frames of a MuJoCo episode for `ember eval --gif` (feature `mujoco`): the episode's
//! actions replayed from its seed on a [`MujocoEnv`] drawn by MuJoCo's own offscreen
//! renderer ([`MujocoRenderer`], EGL).

use anyhow::{Context, Result, bail};
use emberlab_core::{Action, Env};
use emberlab_env::{MujocoEnv, MujocoRenderer};

/// Frame size of MuJoCo GIFs.
pub const SIZE: (usize, usize) = (320, 240);

/// Whether `env_id` is a native MuJoCo task.
pub fn is_mujoco(env_id: &str) -> bool {
    emberlab_env::MUJOCO_IDS.contains(&env_id)
}

/// RGB frames of the episode of `env_id` reset with `seed` and stepped with `actions`, one
/// per observation; each replayed observation is checked against `observations` (the
/// episode as evaluated), so the GIF shows that episode. Also the frames per second of real
/// time (`1 / dt`, at most 100).
///
/// # Errors
/// No offscreen renderer (the error says what to install), or a replay that departs from
/// the evaluated episode.
pub fn frames(
    env_id: &str,
    seed: u64,
    actions: &[Vec<f32>],
    observations: &[Vec<f32>],
) -> Result<(Vec<Vec<u8>>, u32)> {
    let mut env = MujocoEnv::new(env_id)?;
    let mut renderer = MujocoRenderer::new(&env, SIZE.0, SIZE.1)
        .with_context(|| format!("--gif cannot render {env_id}"))?;
    let fps = (1.0 / env.dt()).round().clamp(1.0, 100.0) as u32;
    let mut obs = env.reset(Some(seed))?;
    let mut out = Vec::with_capacity(actions.len() + 1);
    for (t, want) in observations.iter().enumerate() {
        if &obs != want {
            bail!("the replayed {env_id} episode departs from the evaluated one at step {t}");
        }
        out.push(renderer.render(&mut env)?.to_vec());
        if let Some(a) = actions.get(t) {
            obs = env.step(Action::Continuous(a))?.obs;
        }
    }
    Ok((out, fps))
}
