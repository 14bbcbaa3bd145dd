//! Progress of a training run: a bar on a terminal (env steps/s, updates/s, last
//! evaluation, ETA), a plain line every few seconds otherwise (a log file, CI), JSON lines
//! with `--json`, nothing with `--quiet`.

use crate::metrics::Row;
use emberlab_algo::TrainReport;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How the run reports progress.
#[derive(Clone, Copy, Debug, Default)]
pub struct Output {
    /// No progress at all.
    pub quiet: bool,
    /// JSON lines on stdout instead of a bar.
    pub json: bool,
}

/// Seconds between plain progress lines.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// Where progress goes.
pub struct Progress {
    bar: Option<ProgressBar>,
    out: Output,
    total: u64,
    last_line: Instant,
    start: Instant,
    start_steps: Option<(u64, u64)>,
    last_eval: Option<f64>,
}

impl Progress {
    /// Progress of a run of `total` env steps.
    pub fn new(total: u64, out: Output) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let bar = (terminal && !out.quiet && !out.json).then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{bar:30} {pos}/{len} env steps  {msg}  ETA {eta}")
                    .expect("a valid template"),
            );
            bar
        });
        Progress {
            bar,
            out,
            total,
            last_line: Instant::now(),
            start: Instant::now(),
            start_steps: None,
            last_eval: None,
        }
    }

    fn rates(&mut self, r: &TrainReport) -> (f64, f64) {
        let (s0, u0) = *self.start_steps.get_or_insert((r.env_steps, r.updates));
        let secs = self.start.elapsed().as_secs_f64().max(1e-9);
        (
            (r.env_steps - s0) as f64 / secs,
            (r.updates - u0) as f64 / secs,
        )
    }

    fn eval_text(&self) -> String {
        self.last_eval
            .map_or("eval –".into(), |e| format!("eval {e:.1}"))
    }

    /// After every training step.
    pub fn tick(&mut self, r: &TrainReport) {
        let (sps, ups) = self.rates(r);
        if let Some(bar) = &self.bar {
            bar.set_position(r.env_steps);
            bar.set_message(format!(
                "{sps:.0} steps/s  {ups:.0} updates/s  {}",
                self.eval_text()
            ));
        } else if !self.out.quiet && !self.out.json && self.last_line.elapsed() >= PLAIN_EVERY {
            self.last_line = Instant::now();
            let eta = if sps > 0.0 {
                format!(
                    "{:.0}s",
                    (self.total.saturating_sub(r.env_steps)) as f64 / sps
                )
            } else {
                "?".into()
            };
            eprintln!(
                "{}/{} env steps  {sps:.0} steps/s  {ups:.0} updates/s  train return {:.1}  {}  ETA {eta}",
                r.env_steps,
                self.total,
                r.recent_train_return,
                self.eval_text()
            );
        }
    }

    /// An evaluation finished.
    pub fn eval(&mut self, env_steps: u64, mean_return: f64) {
        self.last_eval = Some(mean_return);
        if self.out.json {
            println!(
                "{}",
                serde_json::json!({"event": "eval", "env_steps": env_steps, "mean_return": mean_return})
            );
        } else if let Some(bar) = &self.bar {
            bar.println(format!("eval at {env_steps} env steps: {mean_return:.1}"));
        } else if !self.out.quiet {
            eprintln!("eval at {env_steps} env steps: {mean_return:.1}");
        }
    }

    /// A metrics row was written.
    pub fn row(&mut self, row: &Row, _algo: &str) {
        if self.out.json {
            println!(
                "{}",
                serde_json::json!({
                    "event": "progress",
                    "env_steps": row.env_steps,
                    "updates": row.updates,
                    "episodes": row.episodes,
                    "env_steps_per_sec": row.env_steps_per_sec,
                    "train_return": row.train_return,
                    "eval_return": row.eval_return,
                })
            );
        }
    }

    /// Training ended.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
