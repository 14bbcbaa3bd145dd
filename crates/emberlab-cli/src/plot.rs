//! PNG plots of learning curves with plotters: return against env steps, one colour per
//! curve, with a legend and axis labels.
//!
//! [`plot_curves`] draws runs (training returns as lines, evaluations as circles);
//! [`plot_bands`] draws aggregates over seeds (a mean line and a translucent `lo..hi` area,
//! e.g. from [`crate::stats`]). Points with a NaN or infinite coordinate are skipped; only a
//! plot with no finite point at all is an error.

use std::fmt::Display;
use std::path::Path;

use anyhow::{Result, anyhow, bail};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::font::{FAMILY, ensure_fonts};

/// Width of the PNG in pixels.
pub const PLOT_WIDTH: u32 = 1024;
/// Height of the PNG in pixels.
pub const PLOT_HEIGHT: u32 = 640;

/// The line colours, in order (matplotlib's `tab10`); the 11th series reuses the first.
const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// One run's learning curve.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Curve {
    /// Legend text (an empty label leaves the curve out of the legend).
    pub label: String,
    /// Training return against env steps, `(env_steps, return)`, drawn as a line.
    pub points: Vec<(f64, f64)>,
    /// Evaluation returns against env steps, drawn as circles in the curve's colour.
    pub evals: Vec<(f64, f64)>,
}

/// An aggregate over seeds on a common env-step grid: a mean line and a `lo..hi` area (a
/// confidence interval, or mean ± std). All four vectors have one value per grid point.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Band {
    /// Legend text (an empty label leaves the band out of the legend).
    pub label: String,
    /// Env steps of the grid.
    pub x: Vec<f64>,
    /// Mean (or IQM, median…) return at each grid point.
    pub mean: Vec<f64>,
    /// Lower edge of the area at each grid point.
    pub lo: Vec<f64>,
    /// Upper edge of the area at each grid point.
    pub hi: Vec<f64>,
}

/// Draws `curves` (return against env steps) into a PNG at `path`, titled `title`.
///
/// # Errors
/// When no curve has a single finite point or evaluation, or the PNG cannot be drawn or
/// written.
pub fn plot_curves(path: &Path, title: &str, curves: &[Curve]) -> Result<()> {
    let lines: Vec<Vec<(f64, f64)>> = curves.iter().map(|c| finite(&c.points)).collect();
    let marks: Vec<Vec<(f64, f64)>> = curves.iter().map(|c| finite(&c.evals)).collect();
    let (xr, yr) = ranges(lines.iter().chain(&marks).flatten().copied()).ok_or_else(|| {
        anyhow!(
            "plot_curves({}): nothing to plot: {} curve(s) with no finite point",
            path.display(),
            curves.len()
        )
    })?;
    ensure_fonts()?;
    let err = drawing_error(path);
    let root = BitMapBackend::new(path, (PLOT_WIDTH, PLOT_HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let mut chart = build_chart(&root, title, xr, yr).map_err(&err)?;
    for (i, curve) in curves.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let line = color.stroke_width(2);
        let mark = color.filled();
        chart
            .draw_series(marks[i].iter().map(|&p| Circle::new(p, 4, mark)))
            .map_err(&err)?;
        if lines[i].len() == 1 {
            // A one-point line draws nothing visible: mark the point.
            chart
                .draw_series(lines[i].iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(&err)?;
        }
        let drawn = chart
            .draw_series(LineSeries::new(lines[i].clone(), line))
            .map_err(&err)?;
        if !curve.label.is_empty() {
            drawn.label(curve.label.as_str()).legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (20, 0)], line)
                    + Circle::new((10, 0), 4, mark)
            });
        }
    }
    finish(
        &root,
        &mut chart,
        curves.iter().any(|c| !c.label.is_empty()),
    )
    .map_err(&err)
}

/// Draws `bands` (mean line and translucent `lo..hi` area against env steps) into a PNG at
/// `path`, titled `title`. A grid point enters the line where `x` and `mean` are finite and
/// the area where `x`, `lo` and `hi` are; the area breaks at other points.
///
/// # Errors
/// When a band's four vectors differ in length (the band and lengths are named), no band
/// has a finite point, or the PNG cannot be drawn or written.
pub fn plot_bands(path: &Path, title: &str, bands: &[Band]) -> Result<()> {
    for (i, b) in bands.iter().enumerate() {
        let n = b.x.len();
        if b.mean.len() != n || b.lo.len() != n || b.hi.len() != n {
            bail!(
                "plot_bands: band {i} ({:?}) has x, mean, lo, hi of lengths {}, {}, {}, {}; \
                 they must be equal",
                b.label,
                n,
                b.mean.len(),
                b.lo.len(),
                b.hi.len()
            );
        }
    }
    let means: Vec<Vec<(f64, f64)>> = bands
        .iter()
        .map(|b| {
            finite(
                &b.x.iter()
                    .copied()
                    .zip(b.mean.iter().copied())
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    let areas: Vec<Vec<Vec<(f64, f64, f64)>>> = bands.iter().map(area_runs).collect();
    let area_points = areas
        .iter()
        .flatten()
        .flatten()
        .flat_map(|&(x, lo, hi)| [(x, lo), (x, hi)]);
    let (xr, yr) = ranges(means.iter().flatten().copied().chain(area_points)).ok_or_else(|| {
        anyhow!(
            "plot_bands({}): nothing to plot: {} band(s) with no finite point",
            path.display(),
            bands.len()
        )
    })?;
    ensure_fonts()?;
    let err = drawing_error(path);
    let root = BitMapBackend::new(path, (PLOT_WIDTH, PLOT_HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let mut chart = build_chart(&root, title, xr, yr).map_err(&err)?;
    for (i, band) in bands.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let fill = color.mix(0.2).filled();
        for run in &areas[i] {
            let outline: Vec<(f64, f64)> = run
                .iter()
                .map(|&(x, _, hi)| (x, hi))
                .chain(run.iter().rev().map(|&(x, lo, _)| (x, lo)))
                .collect();
            chart
                .draw_series(std::iter::once(Polygon::new(outline, fill)))
                .map_err(&err)?;
        }
        let line = color.stroke_width(2);
        let drawn = chart
            .draw_series(LineSeries::new(means[i].clone(), line))
            .map_err(&err)?;
        if !band.label.is_empty() {
            drawn.label(band.label.as_str()).legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + Rectangle::new([(0, -6), (20, 6)], fill)
                    + PathElement::new(vec![(0, 0), (20, 0)], line)
            });
        }
    }
    finish(&root, &mut chart, bands.iter().any(|b| !b.label.is_empty())).map_err(&err)
}

type Chart<'a, 'b> =
    ChartContext<'a, BitMapBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;
type Root<'b> = DrawingArea<BitMapBackend<'b>, plotters::coord::Shift>;
type DrawResult<T> = std::result::Result<
    T,
    DrawingAreaErrorKind<<BitMapBackend<'static> as DrawingBackend>::ErrorType>,
>;

/// Caption, axes with labels, and the mesh.
fn build_chart<'a, 'b>(
    root: &'a Root<'b>,
    title: &str,
    xr: std::ops::Range<f64>,
    yr: std::ops::Range<f64>,
) -> DrawResult<Chart<'a, 'b>> {
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FAMILY, 28))
        .margin(18)
        .x_label_area_size(56)
        .y_label_area_size(80)
        .build_cartesian_2d(xr, yr)?;
    chart
        .configure_mesh()
        .x_desc("env steps")
        .y_desc("return")
        .x_label_formatter(&|x| format_steps(*x))
        .y_label_formatter(&|y| trim_number(*y))
        .label_style((FAMILY, 16))
        .axis_desc_style((FAMILY, 18))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()?;
    Ok(chart)
}

/// Legend (when some series is labelled) and the PNG written out.
fn finish<'a, 'b: 'a>(root: &Root<'b>, chart: &mut Chart<'a, 'b>, legend: bool) -> DrawResult<()> {
    if legend {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font((FAMILY, 16))
            .draw()?;
    }
    root.present()
}

/// Turns a plotters error into one naming the file.
fn drawing_error<E: Display>(path: &Path) -> impl Fn(E) -> anyhow::Error + '_ {
    move |e| anyhow!("cannot draw {}: {e}", path.display())
}

/// The points whose coordinates are both finite.
fn finite(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect()
}

/// Runs of consecutive grid points where `x`, `lo` and `hi` are all finite.
fn area_runs(band: &Band) -> Vec<Vec<(f64, f64, f64)>> {
    let mut runs = Vec::new();
    let mut run = Vec::new();
    for i in 0..band.x.len() {
        let p = (band.x[i], band.lo[i], band.hi[i]);
        if p.0.is_finite() && p.1.is_finite() && p.2.is_finite() {
            run.push(p);
        } else if !run.is_empty() {
            runs.push(std::mem::take(&mut run));
        }
    }
    if !run.is_empty() {
        runs.push(run);
    }
    runs
}

/// Axis ranges covering `points` with a margin, or `None` for no point. A zero span is
/// widened so a single point sits in the middle.
fn ranges(
    points: impl Iterator<Item = (f64, f64)>,
) -> Option<(std::ops::Range<f64>, std::ops::Range<f64>)> {
    let mut any = false;
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (x, y) in points {
        any = true;
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if !any {
        return None;
    }
    let pad = |lo: f64, hi: f64, frac: f64| {
        let span = hi - lo;
        if span > 0.0 {
            (lo - span * frac)..(hi + span * frac)
        } else {
            let half = (lo.abs() * 0.1).max(1.0);
            (lo - half)..(hi + half)
        }
    };
    Some((pad(x0, x1, 0.0), pad(y0, y1, 0.05)))
}

/// A tick value with at most two decimals and no trailing zeros: `2.5`, `-40`, `0.01`.
fn trim_number(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_owned()
    } else {
        s.to_owned()
    }
}

/// Env-step tick labels: `0`, `500`, `2.5k`, `1M`.
fn format_steps(x: f64) -> String {
    let trim = trim_number;
    let a = x.abs();
    if a >= 1e6 {
        format!("{}M", trim(x / 1e6))
    } else if a >= 1e3 {
        format!("{}k", trim(x / 1e3))
    } else {
        trim(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(path: &Path) -> image::RgbImage {
        let bytes = std::fs::read(path).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        image::load_from_memory_with_format(&bytes, image::ImageFormat::Png)
            .unwrap()
            .to_rgb8()
    }

    fn differing_pixels(a: &image::RgbImage, b: &image::RgbImage) -> usize {
        a.pixels().zip(b.pixels()).filter(|(p, q)| p != q).count()
    }

    fn curve(label: &str, slope: f64) -> Curve {
        Curve {
            label: label.to_owned(),
            points: (0..50)
                .map(|i| (i as f64 * 1000.0, slope * i as f64))
                .collect(),
            evals: (0..5)
                .map(|i| (i as f64 * 10_000.0, slope * 10.0 * i as f64 + 5.0))
                .collect(),
        }
    }

    #[test]
    fn curves_png_decodes_and_depends_on_input() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.png");
        let b = dir.path().join("b.png");
        plot_curves(&a, "CartPole-v1", &[curve("sac", 2.0), curve("dqn", 1.0)]).unwrap();
        plot_curves(&b, "CartPole-v1", &[curve("sac", -2.0), curve("dqn", 1.0)]).unwrap();
        let (ia, ib) = (decode(&a), decode(&b));
        assert_eq!(ia.dimensions(), (PLOT_WIDTH, PLOT_HEIGHT));
        let non_white = ia.pixels().filter(|p| p.0 != [255, 255, 255]).count();
        assert!(non_white > 5000, "{non_white}");
        assert!(differing_pixels(&ia, &ib) > 500);
    }

    #[test]
    fn text_renders_without_system_fonts() {
        // Same data, different title: only the caption's glyphs differ.
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.png");
        let b = dir.path().join("b.png");
        plot_curves(&a, "Pendulum", &[curve("", 1.0)]).unwrap();
        plot_curves(&b, "Acrobot", &[curve("", 1.0)]).unwrap();
        assert!(differing_pixels(&decode(&a), &decode(&b)) > 50);
    }

    #[test]
    fn degenerate_curves_plot_or_fail_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.png");
        let one = Curve {
            label: "one".into(),
            points: vec![(5.0, 3.0), (f64::NAN, 1.0), (6.0, f64::INFINITY)],
            evals: vec![],
        };
        plot_curves(&p, "one point", &[one, Curve::default()]).unwrap();
        let evals_only = Curve {
            label: "evals".into(),
            points: vec![],
            evals: vec![(0.0, 1.0), (100.0, 2.0)],
        };
        plot_curves(&p, "evals only", &[evals_only]).unwrap();
        let e = plot_curves(&p, "t", &[]).unwrap_err().to_string();
        assert!(e.contains("nothing to plot"), "{e}");
        let nan = Curve {
            label: "nan".into(),
            points: vec![(f64::NAN, f64::NAN)],
            evals: vec![],
        };
        assert!(plot_curves(&p, "t", &[nan]).is_err());
        let e = plot_curves(&dir.path().join("no/such/dir.png"), "t", &[curve("a", 1.0)]);
        assert!(e.is_err());
    }

    fn band(label: &str, offset: f64) -> Band {
        let x: Vec<f64> = (0..40).map(|i| i as f64 * 500.0).collect();
        let mean: Vec<f64> = (0..40).map(|i| offset + (i as f64).sqrt() * 10.0).collect();
        Band {
            label: label.to_owned(),
            lo: mean.iter().map(|m| m - 8.0).collect(),
            hi: mean.iter().map(|m| m + 8.0).collect(),
            x,
            mean,
        }
    }

    #[test]
    fn bands_png_decodes_and_depends_on_input() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.png");
        let b = dir.path().join("b.png");
        let mut gappy = band("gappy", 30.0);
        gappy.lo[10] = f64::NAN;
        gappy.mean[20] = f64::NAN;
        plot_bands(&a, "IQM over 5 seeds", &[band("sac", 0.0), gappy.clone()]).unwrap();
        plot_bands(&b, "IQM over 5 seeds", &[band("sac", -40.0), gappy]).unwrap();
        let (ia, ib) = (decode(&a), decode(&b));
        assert_eq!(ia.dimensions(), (PLOT_WIDTH, PLOT_HEIGHT));
        assert!(differing_pixels(&ia, &ib) > 500);
    }

    #[test]
    fn bands_check_lengths_and_emptiness() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.png");
        let mut bad = band("short", 0.0);
        bad.hi.pop();
        let e = plot_bands(&p, "t", &[bad]).unwrap_err().to_string();
        assert!(
            e.contains("\"short\"") && e.contains("40, 40, 40, 39"),
            "{e}"
        );
        assert!(plot_bands(&p, "t", &[Band::default()]).is_err());
        let single = Band {
            label: "single".into(),
            x: vec![1.0],
            mean: vec![2.0],
            lo: vec![f64::NAN],
            hi: vec![f64::NAN],
        };
        plot_bands(&p, "t", &[single]).unwrap();
    }

    #[test]
    fn step_labels() {
        assert_eq!(format_steps(0.0), "0");
        assert_eq!(format_steps(500.0), "500");
        assert_eq!(format_steps(2500.0), "2.5k");
        assert_eq!(format_steps(1_000_000.0), "1M");
        assert_eq!(format_steps(-1500.0), "-1.5k");
        assert_eq!(trim_number(160.0), "160");
        assert_eq!(trim_number(-0.001), "0");
        assert_eq!(trim_number(0.25), "0.25");
    }
}
