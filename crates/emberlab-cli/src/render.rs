//! Animated GIFs of classic-control episodes, drawn from their observations (our envs have
//! no render API): one frame per observation, through plotters' GIF backend.
//!
//! | env id | observation | picture |
//! |---|---|---|
//! | `CartPole-v1` | x, ẋ, θ, θ̇ | track, cart at x, pole tilted by θ (θ > 0 leans right) |
//! | `Pendulum-v1` | cos θ, sin θ, θ̇ | rod from the pivot, θ = 0 up, θ > 0 counter-clockwise |
//! | `MountainCar-v0` | position, velocity | hill y = 0.45 sin 3x + 0.55 on [-1.2, 0.6], car, flag at 0.5 |
//! | `MountainCarContinuous-v0` | position, velocity | the same, flag at 0.45 |
//! | `Acrobot-v1` | cos θ1, sin θ1, cos θ2, sin θ2, θ̇1, θ̇2 | two unit links from the pivot, θ from straight down, goal line at height 1 |

use std::path::Path;

use anyhow::{Result, anyhow, bail};
use plotters::prelude::*;

use crate::font::{FAMILY, ensure_fonts};

/// The env ids [`render_gif`] can draw.
pub const RENDER_ENVS: [&str; 5] = [
    "CartPole-v1",
    "Pendulum-v1",
    "MountainCar-v0",
    "MountainCarContinuous-v0",
    "Acrobot-v1",
];

/// Width of the GIF in pixels.
pub const GIF_WIDTH: u32 = 480;
/// Height of the GIF in pixels.
pub const GIF_HEIGHT: u32 = 360;

/// Writes an animated GIF (looping) of `frames`, one observation of `env_id` per frame, at
/// `fps` frames per second (GIF delays are whole hundredths of a second, so the rate is
/// rounded to that).
///
/// # Errors
/// When `env_id` is not one of [`RENDER_ENVS`] (they are listed), `frames` is empty, a frame
/// has the wrong width (the id, frame index, expected and actual widths are named) or a
/// non-finite value, `fps` is not in `1..=100`, or the file cannot be written.
pub fn render_gif(env_id: &str, frames: &[Vec<f32>], path: &Path, fps: u32) -> Result<()> {
    let scene = Scene::for_env(env_id)?;
    check_gif("render_gif", env_id, frames.len(), fps)?;
    let width = scene.obs_width();
    for (i, frame) in frames.iter().enumerate() {
        if frame.len() != width {
            bail!(
                "render_gif({env_id}): frame {i} has width {}, expected {width} for {env_id}",
                frame.len()
            );
        }
        if let Some(j) = frame.iter().position(|v| !v.is_finite()) {
            bail!(
                "render_gif({env_id}): frame {i} holds non-finite value {} at index {j}",
                frame[j]
            );
        }
    }
    let root = gif_area(path, (GIF_WIDTH, GIF_HEIGHT), fps)?;
    let err = |e: DrawingAreaErrorKind<_>| anyhow!("cannot draw {}: {e}", path.display());
    for (i, frame) in frames.iter().enumerate() {
        root.fill(&WHITE).map_err(err)?;
        let obs: Vec<f64> = frame.iter().map(|&v| f64::from(v)).collect();
        scene.draw(&root, &obs).map_err(err)?;
        let caption = format!("{env_id}   t = {i}");
        root.draw(&Text::new(
            caption,
            (8, 6),
            (FAMILY, 16).into_font().color(&BLACK),
        ))
        .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(())
}

type Root<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;

/// What both GIF writers refuse before drawing: no frames, or `fps` outside `1..=100`
/// (`function(what)` names the call in the error).
fn check_gif(function: &str, what: &str, frames: usize, fps: u32) -> Result<()> {
    if frames == 0 {
        bail!("{function}({what}): no frames to draw");
    }
    if !(1..=100).contains(&fps) {
        bail!("{function}({what}): fps is {fps}; allowed range is 1..=100");
    }
    Ok(())
}

/// A looping GIF of `size` pixels at `path`, one frame per `present()` at `fps` (GIF
/// delays are whole hundredths of a second), with the caption font ready.
fn gif_area(path: &Path, size: (u32, u32), fps: u32) -> Result<Root<'_>> {
    ensure_fonts()?;
    let delay_ms = (1000 + fps / 2) / fps;
    let backend = BitMapBackend::gif(path, size, delay_ms)
        .map_err(|e| anyhow!("cannot create {}: {e}", path.display()))?;
    Ok(backend.into_drawing_area())
}
type DrawResult = std::result::Result<
    (),
    DrawingAreaErrorKind<<BitMapBackend<'static> as DrawingBackend>::ErrorType>,
>;

/// Maps world coordinates (y up) to pixels, with one scale for both axes.
struct View {
    x0: f64,
    y1: f64,
    scale: f64,
}

impl View {
    /// A view showing `x0..x1` across the full width, with `y_bottom` at the bottom edge.
    fn new(x0: f64, x1: f64, y_bottom: f64) -> Self {
        let scale = f64::from(GIF_WIDTH) / (x1 - x0);
        Self {
            x0,
            y1: y_bottom + f64::from(GIF_HEIGHT) / scale,
            scale,
        }
    }

    fn px(&self, (x, y): (f64, f64)) -> (i32, i32) {
        (
            ((x - self.x0) * self.scale).round() as i32,
            ((self.y1 - y) * self.scale).round() as i32,
        )
    }

    fn len(&self, l: f64) -> i32 {
        (l * self.scale).round().max(1.0) as i32
    }

    /// A bar (rectangle) of `width` from `a` to `b`, as a pixel polygon.
    fn bar(&self, a: (f64, f64), b: (f64, f64), width: f64) -> Vec<(i32, i32)> {
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let norm = (dx * dx + dy * dy).sqrt().max(1e-12);
        let (nx, ny) = (-dy / norm * width / 2.0, dx / norm * width / 2.0);
        [
            (a.0 + nx, a.1 + ny),
            (b.0 + nx, b.1 + ny),
            (b.0 - nx, b.1 - ny),
            (a.0 - nx, a.1 - ny),
        ]
        .into_iter()
        .map(|p| self.px(p))
        .collect()
    }
}

const POLE: RGBColor = RGBColor(202, 152, 101);
const AXLE: RGBColor = RGBColor(129, 132, 203);
const LINK: RGBColor = RGBColor(0, 204, 204);
const ROD: RGBColor = RGBColor(204, 77, 77);
const HILL: RGBColor = RGBColor(60, 60, 60);
const FLAG: RGBColor = RGBColor(204, 204, 0);

/// The drawable tasks.
#[derive(Debug, Clone, Copy)]
enum Scene {
    CartPole,
    Pendulum,
    MountainCar { goal: f64 },
    Acrobot,
}

impl Scene {
    fn for_env(env_id: &str) -> Result<Self> {
        Ok(match env_id {
            "CartPole-v1" => Self::CartPole,
            "Pendulum-v1" => Self::Pendulum,
            "MountainCar-v0" => Self::MountainCar { goal: 0.5 },
            "MountainCarContinuous-v0" => Self::MountainCar { goal: 0.45 },
            "Acrobot-v1" => Self::Acrobot,
            other => bail!(
                "render_gif: cannot draw env `{other}`; supported: {}",
                RENDER_ENVS.join(", ")
            ),
        })
    }

    fn obs_width(self) -> usize {
        match self {
            Self::CartPole => 4,
            Self::Pendulum => 3,
            Self::MountainCar { .. } => 2,
            Self::Acrobot => 6,
        }
    }

    fn draw(self, root: &Root<'_>, obs: &[f64]) -> DrawResult {
        match self {
            Self::CartPole => draw_cartpole(root, obs[0], obs[2]),
            Self::Pendulum => draw_pendulum(root, obs[0], obs[1]),
            Self::MountainCar { goal } => draw_mountain_car(root, obs[0], goal),
            Self::Acrobot => draw_acrobot(root, obs),
        }
    }
}

/// Cart of 0.5 × 0.3 on a track at height 0, pole of length 1 (Gymnasium: 2 × half-length
/// 0.5) hinged on top of the cart; the view spans the ±2.4 termination bounds.
fn draw_cartpole(root: &Root<'_>, x: f64, theta: f64) -> DrawResult {
    let v = View::new(-2.4, 2.4, -1.0);
    root.draw(&PathElement::new(
        vec![v.px((-2.4, 0.0)), v.px((2.4, 0.0))],
        BLACK,
    ))?;
    let (cw, ch) = (0.5, 0.3);
    root.draw(&Rectangle::new(
        [v.px((x - cw / 2.0, ch)), v.px((x + cw / 2.0, 0.0))],
        BLACK.filled(),
    ))?;
    let hinge = (x, ch * 0.75);
    let tip = (x + theta.sin(), hinge.1 + theta.cos());
    root.draw(&Polygon::new(v.bar(hinge, tip, 0.1), POLE.filled()))?;
    root.draw(&Circle::new(v.px(hinge), v.len(0.05), AXLE.filled()))
}

/// Rod of length 1 from the pivot; θ = 0 points up and θ grows counter-clockwise, so the tip
/// is at (−sin θ, cos θ).
fn draw_pendulum(root: &Root<'_>, cos: f64, sin: f64) -> DrawResult {
    let v = View::new(-1.6, 1.6, -1.2);
    let tip = (-sin, cos);
    root.draw(&Polygon::new(v.bar((0.0, 0.0), tip, 0.2), ROD.filled()))?;
    root.draw(&Circle::new(v.px(tip), v.len(0.1), ROD.filled()))?;
    root.draw(&Circle::new(v.px((0.0, 0.0)), v.len(0.05), BLACK.filled()))
}

/// Height of the mountain-car hill at `x`.
fn hill(x: f64) -> f64 {
    (3.0 * x).sin() * 0.45 + 0.55
}

/// Hill over [-1.2, 0.6], flag at `goal`, car sitting on the slope at `pos`.
fn draw_mountain_car(root: &Root<'_>, pos: f64, goal: f64) -> DrawResult {
    let (min_x, max_x) = (-1.2, 0.6);
    let v = View::new(min_x, max_x, -0.05);
    let curve: Vec<(i32, i32)> = (0..=200)
        .map(|i| {
            let x = min_x + (max_x - min_x) * f64::from(i) / 200.0;
            v.px((x, hill(x)))
        })
        .collect();
    root.draw(&PathElement::new(curve, HILL.stroke_width(2)))?;
    // Flag: a pole and a triangle.
    let base = (goal, hill(goal));
    let top = (goal, base.1 + 0.15);
    root.draw(&PathElement::new(
        vec![v.px(base), v.px(top)],
        BLACK.stroke_width(2),
    ))?;
    root.draw(&Polygon::new(
        vec![
            v.px(top),
            v.px((goal, top.1 - 0.04)),
            v.px((goal + 0.08, top.1 - 0.02)),
        ],
        FLAG.filled(),
    ))?;
    // Car: a body along the slope, lifted by its wheels.
    let angle = (1.35 * (3.0 * pos).cos()).atan();
    let (along, up) = ((angle.cos(), angle.sin()), (-angle.sin(), angle.cos()));
    let at = |s: f64, h: f64| {
        (
            pos + along.0 * s + up.0 * h,
            hill(pos) + along.1 * s + up.1 * h,
        )
    };
    let (half, clearance, height) = (0.06, 0.02, 0.05);
    let body = vec![
        v.px(at(-half, clearance)),
        v.px(at(half, clearance)),
        v.px(at(half, clearance + height)),
        v.px(at(-half, clearance + height)),
    ];
    root.draw(&Polygon::new(body, BLACK.filled()))?;
    for s in [-half * 0.6, half * 0.6] {
        root.draw(&Circle::new(
            v.px(at(s, clearance)),
            v.len(0.015),
            RGBColor(128, 128, 128).filled(),
        ))?;
    }
    Ok(())
}

/// Two unit links hanging from the pivot (θ from straight down, as Gymnasium draws them)
/// and the goal line at height 1 that the tip must cross.
fn draw_acrobot(root: &Root<'_>, obs: &[f64]) -> DrawResult {
    let (c1, s1, c2, s2) = (obs[0], obs[1], obs[2], obs[3]);
    // cos and sin of θ1 + θ2.
    let (c12, s12) = (c1 * c2 - s1 * s2, s1 * c2 + c1 * s2);
    let p1 = (s1, -c1);
    let p2 = (p1.0 + s12, p1.1 - c12);
    let v = View::new(-3.0, 3.0, -2.25);
    root.draw(&PathElement::new(
        vec![v.px((-2.2, 1.0)), v.px((2.2, 1.0))],
        BLACK,
    ))?;
    for (a, b) in [((0.0, 0.0), p1), (p1, p2)] {
        root.draw(&Polygon::new(v.bar(a, b, 0.2), LINK.filled()))?;
        root.draw(&Circle::new(v.px(a), v.len(0.1), FLAG.filled()))?;
    }
    Ok(())
}

/// Writes `frames` (each `width × height` RGB bytes, row-major, top row first) as a GIF at
/// `path` at `fps` frames per second, each captioned `{caption}   t = {i}`.
///
/// # Errors
/// No frames, a frame of another size, `fps` outside `1..=100`, or the file cannot be
/// written.
pub fn render_rgb_gif(
    frames: &[Vec<u8>],
    size: (u32, u32),
    path: &Path,
    fps: u32,
    caption: &str,
) -> Result<()> {
    check_gif("render_rgb_gif", caption, frames.len(), fps)?;
    let want = size.0 as usize * size.1 as usize * 3;
    if let Some(i) = frames.iter().position(|f| f.len() != want) {
        bail!(
            "render_rgb_gif({caption}): frame {i} has {} bytes, expected {want} ({} × {} RGB)",
            frames[i].len(),
            size.0,
            size.1
        );
    }
    let mut gif = RgbGif::create(path, size, fps, caption)?;
    for frame in frames {
        gif.push(frame.clone())?;
    }
    gif.finish()
}

/// The caption's font size for frames `width` pixels wide: 16 from 320 pixels, smaller
/// below (9 for Atari's 160), so that a caption of ~28 characters fits.
fn caption_size(width: u32) -> f64 {
    f64::from(width / 20).clamp(9.0, 16.0)
}

/// A GIF of RGB frames written as they come, so that a long episode needs the memory of
/// one frame: each `width × height` RGB frame (row-major, top row first) is captioned
/// `{caption}   t = {i}`.
pub struct RgbGif<'a> {
    root: Root<'a>,
    size: (u32, u32),
    path: &'a Path,
    caption: String,
    frames: usize,
}

impl<'a> RgbGif<'a> {
    /// Starts the GIF at `path`: `size` is `(width, height)`, `fps` frames per second.
    ///
    /// # Errors
    /// `fps` outside `1..=100`, or the file cannot be created.
    pub fn create(path: &'a Path, size: (u32, u32), fps: u32, caption: &str) -> Result<Self> {
        check_gif("RgbGif", caption, 1, fps)?;
        Ok(RgbGif {
            root: gif_area(path, size, fps)?,
            size,
            path,
            caption: caption.to_owned(),
            frames: 0,
        })
    }

    /// Appends `frame` (`width × height × 3` bytes).
    ///
    /// # Errors
    /// A frame of another size, or the file cannot be written.
    pub fn push(&mut self, frame: Vec<u8>) -> Result<()> {
        let (width, height) = self.size;
        let (i, caption, path) = (self.frames, &self.caption, self.path);
        let want = width as usize * height as usize * 3;
        if frame.len() != want {
            bail!(
                "{caption}: frame {i} has {} bytes, expected {want} ({width} × {height} RGB)",
                frame.len()
            );
        }
        let err = |e: DrawingAreaErrorKind<_>| anyhow!("cannot draw {}: {e}", path.display());
        let image = BitMapElement::<(i32, i32)>::with_owned_buffer((0, 0), (width, height), frame)
            .ok_or_else(|| anyhow!("{caption}: frame {i} is not {width} × {height}"))?;
        self.root.draw(&image).map_err(err)?;
        self.root
            .draw(&Text::new(
                format!("{caption}   t = {i}"),
                (8, 6),
                (FAMILY, caption_size(width)).into_font().color(&WHITE),
            ))
            .map_err(err)?;
        self.root.present().map_err(err)?;
        self.frames += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Ends the GIF.
    ///
    /// # Errors
    /// No frame was written.
    pub fn finish(self) -> Result<()> {
        if self.frames == 0 {
            bail!(
                "{}: no frames to draw into {}",
                self.caption,
                self.path.display()
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(env_id: &str) -> Vec<Vec<f32>> {
        let angles = [0.0f32, 0.6, 1.4];
        angles
            .iter()
            .enumerate()
            .map(|(i, &a)| match env_id {
                "CartPole-v1" => vec![i as f32 * 0.5 - 0.5, 0.0, a * 0.15, 0.0],
                "Pendulum-v1" => vec![a.cos() * 1.0, (a * 2.0).sin(), 0.3],
                "MountainCar-v0" | "MountainCarContinuous-v0" => vec![-0.9 + 0.6 * i as f32, 0.01],
                "Acrobot-v1" => vec![a.cos(), a.sin(), (2.0 * a).cos(), (2.0 * a).sin(), 0.0, 0.0],
                _ => unreachable!(),
            })
            .collect()
    }

    /// Decodes every frame of a GIF to RGBA.
    fn decode_frames(path: &Path) -> Vec<Vec<u8>> {
        let mut opts = gif::DecodeOptions::new();
        opts.set_color_output(gif::ColorOutput::RGBA);
        let mut decoder = opts.read_info(std::fs::File::open(path).unwrap()).unwrap();
        assert_eq!(
            (u32::from(decoder.width()), u32::from(decoder.height())),
            (GIF_WIDTH, GIF_HEIGHT)
        );
        let mut out = Vec::new();
        while let Some(frame) = decoder.read_next_frame().unwrap() {
            out.push(frame.buffer.to_vec());
        }
        out
    }

    #[test]
    fn every_env_renders_distinct_frames() {
        let dir = tempfile::tempdir().unwrap();
        for env_id in RENDER_ENVS {
            let path = dir.path().join(format!("{env_id}.gif"));
            render_gif(env_id, &frames(env_id), &path, 30).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(&bytes[..6], b"GIF89a", "{env_id}");
            let decoded = decode_frames(&path);
            assert_eq!(decoded.len(), 3, "{env_id}");
            assert_ne!(decoded[0], decoded[1], "{env_id}");
            assert_ne!(decoded[1], decoded[2], "{env_id}");
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.gif");
        let e = render_gif("Humanoid-v5", &frames("Acrobot-v1"), &p, 30)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Humanoid-v5") && e.contains("CartPole-v1, Pendulum-v1"),
            "{e}"
        );
        let e = render_gif("Acrobot-v1", &frames("CartPole-v1"), &p, 30)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Acrobot-v1") && e.contains("width 4, expected 6"),
            "{e}"
        );
        assert!(render_gif("Pendulum-v1", &[], &p, 30).is_err());
        assert!(render_gif("Pendulum-v1", &frames("Pendulum-v1"), &p, 0).is_err());
        let e = render_gif("Pendulum-v1", &[vec![1.0, f32::NAN, 0.0]], &p, 30)
            .unwrap_err()
            .to_string();
        assert!(e.contains("non-finite"), "{e}");
        assert!(
            render_gif(
                "Pendulum-v1",
                &frames("Pendulum-v1"),
                &dir.path().join("no/x.gif"),
                30
            )
            .is_err()
        );
    }
}
