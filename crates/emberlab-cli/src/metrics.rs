//! A run's metrics log: `metrics.csv` and `metrics.jsonl` side by side in the run folder,
//! one row per report, flushed as each row is appended, and cut back exactly on resume.
//!
//! Columns: the fixed [`METRICS_COLUMNS`] and then the algorithm's own metric names (e.g.
//! `critic_loss,actor_loss,alpha`) in the order given to [`MetricsLog::create`]. A missing
//! or non-finite value is an empty CSV field and a JSON `null`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::line_file::{
    LineFile, column, csv_f64, json_f64, keep_lines, parse_opt_f64, parse_u64, read_complete_lines,
    read_header,
};

/// File name of the CSV metrics log inside a run folder.
pub const METRICS_CSV: &str = "metrics.csv";
/// File name of the JSON-lines metrics log inside a run folder.
pub const METRICS_JSONL: &str = "metrics.jsonl";

/// The fixed leading columns of `metrics.csv` (and keys of each `metrics.jsonl` object), in
/// order; the extra metric names follow them.
pub const METRICS_COLUMNS: [&str; 8] = [
    "env_steps",
    "updates",
    "episodes",
    "wall_secs",
    "env_steps_per_sec",
    "updates_per_sec",
    "train_return",
    "eval_return",
];

/// One row of the metrics log.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Row {
    /// Environment steps taken so far (all envs together).
    pub env_steps: u64,
    /// Learner updates done so far.
    pub updates: u64,
    /// Training episodes finished so far.
    pub episodes: u64,
    /// Seconds since the run started (across resumes, if the caller carries it over).
    pub wall_secs: f64,
    /// Environment steps per second over the last reporting interval.
    pub env_steps_per_sec: f64,
    /// Updates per second over the last reporting interval.
    pub updates_per_sec: f64,
    /// Mean return of the training episodes finished in the interval, if any finished.
    pub train_return: Option<f64>,
    /// Mean return of the latest evaluation, if one ran in the interval.
    pub eval_return: Option<f64>,
    /// The extra metrics, in the order of the names given to [`MetricsLog::create`] (NaN for
    /// a metric with no value this interval).
    pub extra: Vec<f64>,
}

/// Writer of `metrics.csv` and `metrics.jsonl` in a run folder.
///
/// Each [`append`](MetricsLog::append) writes one complete line to each file with a single
/// unbuffered write, so a killed process leaves whole rows (a torn last line, should the
/// kill land inside a write, is repaired by [`resume`](MetricsLog::resume)).
#[derive(Debug)]
pub struct MetricsLog {
    dir: PathBuf,
    extra: Vec<String>,
    csv: LineFile,
    jsonl: LineFile,
}

impl MetricsLog {
    /// Creates `dir` (and its parents) if needed, and in it `metrics.csv` with its header and
    /// an empty `metrics.jsonl`. `extra` are the names of the algorithm's own metrics,
    /// written after the fixed [`METRICS_COLUMNS`] in this order.
    ///
    /// # Errors
    /// When either file already exists (resume the run with [`MetricsLog::resume`] instead),
    /// when an extra name is empty, holds a comma, quote, backslash, control character or
    /// whitespace, repeats another name or a fixed column, or on an I/O error.
    pub fn create(dir: &Path, extra: &[&str]) -> Result<Self> {
        check_extra_names(extra)?;
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create run folder {}", dir.display()))?;
        let header: Vec<&str> = METRICS_COLUMNS.iter().chain(extra).copied().collect();
        let jsonl_path = dir.join(METRICS_JSONL);
        if jsonl_path.exists() {
            bail!(
                "{} already exists: resume the run instead, or choose a new run folder",
                jsonl_path.display()
            );
        }
        let csv = LineFile::create_new(&dir.join(METRICS_CSV), &header.join(","))?;
        std::fs::write(&jsonl_path, "")
            .with_context(|| format!("cannot create {}", jsonl_path.display()))?;
        let jsonl = LineFile::open_append(&jsonl_path)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            extra: extra.iter().map(|s| (*s).to_owned()).collect(),
            csv,
            jsonl,
        })
    }

    /// Reopens the logs of an interrupted run for appending, after cutting them back to the
    /// checkpoint the run resumes from: every row whose `env_steps` is above
    /// `upto_env_steps` is dropped (from both files), as is a torn last line (one with no
    /// trailing newline). A run resumed from a checkpoint at step S then leaves files
    /// byte-identical to a run never interrupted. Files are rewritten through a temporary
    /// file and a rename, so a crash during resume loses nothing.
    ///
    /// Write the checkpoint of step S after the row of step S has been appended, so the
    /// rows kept are exactly those the checkpointed run had logged.
    ///
    /// The extra metric names are read back from the CSV header
    /// ([`extra_names`](MetricsLog::extra_names)).
    ///
    /// # Errors
    /// When a file is missing or unreadable, the CSV header does not start with
    /// [`METRICS_COLUMNS`], or a complete line cannot be parsed (its file and line number are
    /// named).
    pub fn resume(dir: &Path, upto_env_steps: u64) -> Result<Self> {
        let csv_path = dir.join(METRICS_CSV);
        let jsonl_path = dir.join(METRICS_JSONL);
        let header = read_header(&csv_path)?;
        if header.len() < METRICS_COLUMNS.len()
            || header.iter().zip(METRICS_COLUMNS).any(|(h, c)| h != c)
        {
            bail!(
                "{} has header `{}`; expected it to start with `{}`",
                csv_path.display(),
                header.join(","),
                METRICS_COLUMNS.join(",")
            );
        }
        let extra: Vec<String> = header[METRICS_COLUMNS.len()..].to_vec();
        let width = header.len();
        keep_lines(&csv_path, true, |line_no, line| {
            let fields: Vec<&str> = line.split(',').collect();
            if fields.len() != width {
                bail!(
                    "{} line {line_no}: {} fields, header has {width}",
                    csv_path.display(),
                    fields.len()
                );
            }
            Ok(parse_u64(fields[0], &csv_path, line_no, "env_steps")? <= upto_env_steps)
        })?;
        if !jsonl_path.exists() {
            bail!(
                "{} is missing (it is written beside {})",
                jsonl_path.display(),
                csv_path.display()
            );
        }
        keep_lines(&jsonl_path, false, |line_no, line| {
            let value: serde_json::Value = serde_json::from_str(line)
                .with_context(|| format!("{} line {line_no} is not JSON", jsonl_path.display()))?;
            match value.get("env_steps").and_then(serde_json::Value::as_u64) {
                Some(steps) => Ok(steps <= upto_env_steps),
                None => bail!(
                    "{} line {line_no} has no unsigned integer `env_steps`",
                    jsonl_path.display()
                ),
            }
        })?;
        Ok(Self {
            dir: dir.to_path_buf(),
            extra,
            csv: LineFile::open_append(&csv_path)?,
            jsonl: LineFile::open_append(&jsonl_path)?,
        })
    }

    /// Appends `row` to both files and flushes it to the operating system.
    ///
    /// # Errors
    /// When `row.extra` does not hold one value per extra metric name (both lengths and the
    /// names are given), or on an I/O error.
    pub fn append(&mut self, row: &Row) -> Result<()> {
        if row.extra.len() != self.extra.len() {
            bail!(
                "metrics row has {} extra values but the log has {} extra metrics ({})",
                row.extra.len(),
                self.extra.len(),
                self.extra.join(",")
            );
        }
        let opt = |v: Option<f64>| v.unwrap_or(f64::NAN);
        let floats = [
            row.wall_secs,
            row.env_steps_per_sec,
            row.updates_per_sec,
            opt(row.train_return),
            opt(row.eval_return),
        ];
        let mut csv = format!("{},{},{}", row.env_steps, row.updates, row.episodes);
        let mut json = format!(
            "{{\"env_steps\":{},\"updates\":{},\"episodes\":{}",
            row.env_steps, row.updates, row.episodes
        );
        let names = METRICS_COLUMNS[3..]
            .iter()
            .copied()
            .chain(self.extra.iter().map(String::as_str));
        for (name, &v) in names.zip(floats.iter().chain(&row.extra)) {
            csv.push(',');
            csv.push_str(&csv_f64(v));
            json.push_str(&format!(",\"{name}\":{}", json_f64(v)));
        }
        json.push('}');
        self.csv.append(&csv)?;
        self.jsonl.append(&json)
    }

    /// The extra metric names, in column order.
    pub fn extra_names(&self) -> &[String] {
        &self.extra
    }

    /// The run folder holding the two files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Checks extra metric names: non-empty, plain (no CSV or JSON escaping needed), unique and
/// distinct from the fixed columns.
pub(crate) fn check_extra_names(extra: &[&str]) -> Result<()> {
    for (i, name) in extra.iter().enumerate() {
        if name.is_empty()
            || name
                .chars()
                .any(|c| c == ',' || c == '"' || c == '\\' || c.is_control() || c.is_whitespace())
        {
            bail!(
                "extra metric name {name:?} (index {i}) must be non-empty with no comma, quote, \
                 backslash, whitespace or control character"
            );
        }
        if METRICS_COLUMNS.contains(name) {
            bail!("extra metric name `{name}` (index {i}) repeats a fixed column");
        }
        if extra[..i].contains(name) {
            bail!("extra metric name `{name}` (index {i}) is given twice");
        }
    }
    Ok(())
}

/// Reads `(env_steps, train_return)` from every complete row of a `metrics.csv`, for
/// plotting (columns are found by header name; an empty `train_return` is `None`).
///
/// # Errors
/// When the file cannot be read, lacks either column, or a field does not parse (file, line
/// and column are named).
pub fn read_metrics_csv(path: &Path) -> Result<Vec<(u64, Option<f64>)>> {
    let header = read_header(path)?;
    let steps_col = column(&header, "env_steps", path)?;
    let ret_col = column(&header, "train_return", path)?;
    let lines = read_complete_lines(path)?;
    let mut out = Vec::with_capacity(lines.len().saturating_sub(1));
    for (i, line) in lines.iter().enumerate().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() != header.len() {
            bail!(
                "{} line {}: {} fields, header has {}",
                path.display(),
                i + 1,
                fields.len(),
                header.len()
            );
        }
        let steps = parse_u64(fields[steps_col], path, i + 1, "env_steps")?;
        let ret = parse_opt_f64(fields[ret_col], path, i + 1, "train_return")?;
        out.push((steps, ret));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(env_steps: u64, extra: Vec<f64>) -> Row {
        Row {
            env_steps,
            updates: env_steps / 2,
            episodes: env_steps / 100,
            wall_secs: env_steps as f64 / 1000.0,
            env_steps_per_sec: 1000.0,
            updates_per_sec: 500.0,
            train_return: if env_steps.is_multiple_of(200) {
                None
            } else {
                Some(-(env_steps as f64) / 3.0)
            },
            eval_return: if env_steps == 300 { Some(12.5) } else { None },
            extra,
        }
    }

    fn read(dir: &Path) -> (String, String) {
        (
            std::fs::read_to_string(dir.join(METRICS_CSV)).unwrap(),
            std::fs::read_to_string(dir.join(METRICS_JSONL)).unwrap(),
        )
    }

    #[test]
    fn writes_header_rows_and_json() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        let mut log = MetricsLog::create(&run, &["critic_loss", "alpha"]).unwrap();
        log.append(&row(100, vec![0.5, f64::NAN])).unwrap();
        let (csv, jsonl) = read(&run);
        assert_eq!(
            csv,
            "env_steps,updates,episodes,wall_secs,env_steps_per_sec,updates_per_sec,\
             train_return,eval_return,critic_loss,alpha\n\
             100,50,1,0.1,1000.0,500.0,-33.333333333333336,,0.5,\n"
        );
        assert_eq!(
            jsonl,
            "{\"env_steps\":100,\"updates\":50,\"episodes\":1,\"wall_secs\":0.1,\
             \"env_steps_per_sec\":1000.0,\"updates_per_sec\":500.0,\
             \"train_return\":-33.333333333333336,\"eval_return\":null,\
             \"critic_loss\":0.5,\"alpha\":null}\n"
        );
        let v: serde_json::Value = serde_json::from_str(jsonl.trim()).unwrap();
        assert!(v["alpha"].is_null());
        assert_eq!(
            read_metrics_csv(&run.join(METRICS_CSV)).unwrap(),
            vec![(100, Some(-100.0 / 3.0))]
        );
    }

    #[test]
    fn append_checks_extra_length() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = MetricsLog::create(dir.path(), &["critic_loss", "alpha"]).unwrap();
        let e = log.append(&row(1, vec![1.0])).unwrap_err().to_string();
        assert!(
            e.contains("1 extra values") && e.contains("2 extra metrics"),
            "{e}"
        );
        assert!(e.contains("critic_loss,alpha"), "{e}");
    }

    #[test]
    fn create_refuses_existing_and_bad_names() {
        let dir = tempfile::tempdir().unwrap();
        MetricsLog::create(dir.path(), &[]).unwrap();
        let e = MetricsLog::create(dir.path(), &[]).unwrap_err().to_string();
        assert!(e.contains("already exists"), "{e}");
        let d2 = tempfile::tempdir().unwrap();
        for bad in [&["a,b"][..], &[""], &["x", "x"], &["episodes"], &["a b"]] {
            assert!(MetricsLog::create(d2.path(), bad).is_err(), "{bad:?}");
        }
        assert!(!d2.path().join(METRICS_CSV).exists());
    }

    #[test]
    fn resume_matches_uninterrupted_run() {
        let steps: Vec<u64> = (1..=8).map(|i| i * 100).collect();
        let extra = |s: u64| vec![s as f64 * 0.01, 0.2];
        // Uninterrupted.
        let full = tempfile::tempdir().unwrap();
        let mut log = MetricsLog::create(full.path(), &["critic_loss", "alpha"]).unwrap();
        for &s in &steps {
            log.append(&row(s, extra(s))).unwrap();
        }
        drop(log);
        // Interrupted after step 600 (checkpoint at 400), with a torn line at the end.
        let cut = tempfile::tempdir().unwrap();
        let mut log = MetricsLog::create(cut.path(), &["critic_loss", "alpha"]).unwrap();
        for &s in &steps[..6] {
            log.append(&row(s, extra(s))).unwrap();
        }
        drop(log);
        for name in [METRICS_CSV, METRICS_JSONL] {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(cut.path().join(name))
                .unwrap();
            f.write_all(b"700,3").unwrap();
        }
        let mut log = MetricsLog::resume(cut.path(), 400).unwrap();
        assert_eq!(log.extra_names(), ["critic_loss", "alpha"]);
        for &s in &steps[4..] {
            log.append(&row(s, extra(s))).unwrap();
        }
        drop(log);
        assert_eq!(read(full.path()), read(cut.path()));
        // Resuming at the end keeps everything.
        MetricsLog::resume(cut.path(), 800).unwrap();
        assert_eq!(read(full.path()), read(cut.path()));
    }

    #[test]
    fn resume_rejects_foreign_header() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(METRICS_CSV), "step,return\n1,2\n").unwrap();
        std::fs::write(dir.path().join(METRICS_JSONL), "").unwrap();
        let e = MetricsLog::resume(dir.path(), 0).unwrap_err().to_string();
        assert!(
            e.contains("step,return") && e.contains("env_steps,updates"),
            "{e}"
        );
        let e = MetricsLog::resume(&dir.path().join("none"), 0).unwrap_err();
        assert!(format!("{e:#}").contains("cannot read"), "{e:#}");
    }
}
