//! `ember plot`: learning curves of runs in one picture. Runs that differ only in their
//! seed are drawn as one band (mean evaluation return with a 95% bootstrap interval), and
//! summarised (mean ± std, IQM with a bootstrap interval of the final evaluations).

use crate::evaluations::{EVALUATIONS_CSV, read_evaluations_csv};
use crate::metrics::{METRICS_CSV, read_metrics_csv};
use crate::plot::{Band, Curve, plot_bands, plot_curves};
use crate::stats::{bootstrap_ci, interpolate, iqm, mean_std};
use anyhow::{Result, bail};
use emberlab_run::{RunConfig, load_config};
use std::path::{Path, PathBuf};

/// One group of runs: the same config but for the seed.
struct Group {
    label: String,
    runs: Vec<(PathBuf, RunConfig)>,
}

/// The config with its seeds zeroed: runs with equal keys differ only in the seed.
fn key(config: &RunConfig) -> String {
    let mut c = config.clone();
    if let Some(t) = &mut c.off_policy {
        t.seed = 0;
    }
    if let Some(t) = &mut c.on_policy {
        t.seed = 0;
    }
    c.settings.remove("seed");
    c.to_toml()
}

/// Draws `runs` into `out`; returns the summary lines it printed.
pub fn plot(runs: &[PathBuf], out: &Path) -> Result<Vec<String>> {
    if runs.is_empty() {
        bail!("no runs to plot: give one or more run folders");
    }
    let mut groups: Vec<(String, Group)> = Vec::new();
    for run in runs {
        let config = load_config(run)?;
        let k = key(&config);
        match groups.iter_mut().find(|(gk, _)| *gk == k) {
            Some((_, g)) => g.runs.push((run.clone(), config)),
            None => groups.push((
                k,
                Group {
                    label: format!("{} {}", config.algo, config.env),
                    runs: vec![(run.clone(), config)],
                },
            )),
        }
    }
    let mut summary = Vec::new();
    if groups.iter().all(|(_, g)| g.runs.len() == 1) {
        let mut curves = Vec::new();
        for (_, g) in &groups {
            let (dir, config) = &g.runs[0];
            curves.push(Curve {
                label: format!("{} s{} ({})", g.label, config.seed(), dir.display()),
                points: read_metrics_csv(&dir.join(METRICS_CSV))?
                    .into_iter()
                    .filter_map(|(s, r)| r.map(|r| (s as f64, r)))
                    .collect(),
                evals: evals_of(dir)?,
            });
        }
        plot_curves(out, "Return vs env steps", &curves)?;
        return Ok(summary);
    }
    let mut bands = Vec::new();
    for (_, g) in &groups {
        let curves: Vec<Vec<(f64, f64)>> = g
            .runs
            .iter()
            .map(|(dir, _)| evals_of(dir))
            .collect::<Result<_>>()?;
        let grid: Vec<f64> = curves
            .iter()
            .max_by_key(|c| c.len())
            .map(|c| c.iter().map(|p| p.0).collect())
            .unwrap_or_default();
        let on_grid: Vec<Vec<f64>> = curves.iter().map(|c| interpolate(c, &grid)).collect();
        let (mut mean, mut lo, mut hi) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..grid.len() {
            let at: Vec<f64> = on_grid
                .iter()
                .map(|c| c[i])
                .filter(|v| v.is_finite())
                .collect();
            let m = mean_std(&at).0;
            let (l, h) = bootstrap_ci(&at, |v| mean_std(v).0, 1000, 0.95, i as u64)
                .unwrap_or((f64::NAN, f64::NAN));
            mean.push(m);
            lo.push(l);
            hi.push(h);
        }
        let finals: Vec<f64> = curves
            .iter()
            .filter_map(|c| c.last().map(|p| p.1))
            .collect();
        if !finals.is_empty() {
            let (m, s) = mean_std(&finals);
            let q = iqm(&finals);
            let (ql, qh) =
                bootstrap_ci(&finals, iqm, 2000, 0.95, 7).unwrap_or((f64::NAN, f64::NAN));
            summary.push(format!(
                "{}: {} seeds, final evaluation {m:.1} ± {s:.1}, IQM {q:.1} [95% CI {ql:.1}, {qh:.1}]",
                g.label,
                finals.len()
            ));
        }
        bands.push(Band {
            label: format!("{} ({} seeds)", g.label, g.runs.len()),
            x: grid,
            mean,
            lo,
            hi,
        });
    }
    plot_bands(out, "Evaluation return vs env steps (mean, 95% CI)", &bands)?;
    Ok(summary)
}

fn evals_of(dir: &Path) -> Result<Vec<(f64, f64)>> {
    Ok(read_evaluations_csv(&dir.join(EVALUATIONS_CSV))?
        .into_iter()
        .map(|(s, r)| (s as f64, r))
        .collect())
}
