//! A run's evaluation log, `evaluations.csv`: one row per evaluation (mean and sample
//! standard deviation of the returns of its episodes, their mean length and how many were cut
//! short), with the same append and resume rules as [`MetricsLog`](crate::metrics::MetricsLog).
//! Logs written before the last two columns existed are given them (empty) on resume.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::line_file::{
    LineFile, column, csv_f64, parse_opt_f64, parse_u64, read_complete_lines, read_header,
    rewrite_lines,
};

/// File name of the evaluation log inside a run folder.
pub const EVALUATIONS_CSV: &str = "evaluations.csv";

/// The columns of `evaluations.csv`, in order.
pub const EVALUATION_COLUMNS: [&str; 6] = [
    "env_steps",
    "mean_return",
    "std_return",
    "episodes",
    "mean_length",
    "truncated",
];

/// The columns of logs written before lengths were kept; [`EvalLog::resume`] extends them.
const EARLIER_COLUMNS: usize = 4;

/// One evaluation: the returns of `episodes` evaluation episodes run at `env_steps`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EvalRow {
    /// Environment steps of training when the evaluation ran.
    pub env_steps: u64,
    /// Mean return over the evaluation episodes.
    pub mean_return: f64,
    /// Sample standard deviation of those returns (see [`crate::stats::mean_std`]).
    pub std_return: f64,
    /// Number of evaluation episodes.
    pub episodes: u64,
    /// Mean episode length in steps (NaN, an empty field, when unknown).
    pub mean_length: f64,
    /// Episodes cut short (a time limit or frame budget) rather than ended; `None`, an
    /// empty field, when unknown.
    pub truncated: Option<u64>,
}

/// Writer of `evaluations.csv` in a run folder; each row is one unbuffered write of a
/// complete line.
#[derive(Debug)]
pub struct EvalLog {
    path: PathBuf,
    csv: LineFile,
}

impl EvalLog {
    /// Creates `dir` (and its parents) if needed, and in it `evaluations.csv` with its
    /// header [`EVALUATION_COLUMNS`].
    ///
    /// # Errors
    /// When the file already exists (resume with [`EvalLog::resume`] instead) or on an I/O
    /// error.
    pub fn create(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| {
            anyhow::Error::new(e).context(format!("cannot create run folder {}", dir.display()))
        })?;
        let path = dir.join(EVALUATIONS_CSV);
        let csv = LineFile::create_new(&path, &EVALUATION_COLUMNS.join(","))?;
        Ok(Self { path, csv })
    }

    /// Reopens the evaluation log of an interrupted run, after dropping every row whose
    /// `env_steps` is above `upto_env_steps` and a torn last line (rewritten through a
    /// temporary file and a rename), so a resumed run writes the same file as an
    /// uninterrupted one. A log with the earlier four columns gets the new ones, empty.
    ///
    /// # Errors
    /// When the file is missing or unreadable, its header is neither [`EVALUATION_COLUMNS`]
    /// nor their first four, or a complete line does not parse (file and line number are
    /// named).
    pub fn resume(dir: &Path, upto_env_steps: u64) -> Result<Self> {
        let path = dir.join(EVALUATIONS_CSV);
        let header = read_header(&path)?;
        let earlier = header == EVALUATION_COLUMNS[..EARLIER_COLUMNS];
        if header != EVALUATION_COLUMNS && !earlier {
            bail!(
                "{} has header `{}`; expected `{}`",
                path.display(),
                header.join(","),
                EVALUATION_COLUMNS.join(",")
            );
        }
        let added = ",".repeat(EVALUATION_COLUMNS.len() - header.len());
        rewrite_lines(&path, |line_no, line| {
            if line_no == 1 {
                return Ok(Some(EVALUATION_COLUMNS.join(",")));
            }
            let fields = line.split(',').count();
            if fields != header.len() {
                bail!(
                    "{} line {line_no}: {fields} fields, header has {}",
                    path.display(),
                    header.len()
                );
            }
            let steps = line.split(',').next().unwrap_or_default();
            let keep = parse_u64(steps, &path, line_no, "env_steps")? <= upto_env_steps;
            Ok(keep.then(|| format!("{line}{added}")))
        })?;
        let csv = LineFile::open_append(&path)?;
        Ok(Self { path, csv })
    }

    /// Appends `row` and flushes it to the operating system (NaN fields are left empty).
    ///
    /// # Errors
    /// On an I/O error.
    pub fn append(&mut self, row: &EvalRow) -> Result<()> {
        self.csv.append(&format!(
            "{},{},{},{},{},{}",
            row.env_steps,
            csv_f64(row.mean_return),
            csv_f64(row.std_return),
            row.episodes,
            csv_f64(row.mean_length),
            row.truncated.map(|t| t.to_string()).unwrap_or_default()
        ))
    }

    /// Path of the `evaluations.csv` file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Reads `(env_steps, mean_return)` from every complete row of an `evaluations.csv`, for
/// plotting; rows with an empty `mean_return` are skipped.
///
/// # Errors
/// When the file cannot be read, lacks either column, or a field does not parse (file, line
/// and column are named).
pub fn read_evaluations_csv(path: &Path) -> Result<Vec<(u64, f64)>> {
    let header = read_header(path)?;
    let steps_col = column(&header, "env_steps", path)?;
    let mean_col = column(&header, "mean_return", path)?;
    let mut out = Vec::new();
    for (i, line) in read_complete_lines(path)?.iter().enumerate().skip(1) {
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
        if let Some(mean) = parse_opt_f64(fields[mean_col], path, i + 1, "mean_return")? {
            out.push((steps, mean));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(env_steps: u64) -> EvalRow {
        EvalRow {
            env_steps,
            mean_return: env_steps as f64 * 0.5,
            std_return: 1.25,
            episodes: 10,
            mean_length: 200.5,
            truncated: Some(3),
        }
    }

    #[test]
    fn writes_reads_and_resumes() {
        let full = tempfile::tempdir().unwrap();
        let mut log = EvalLog::create(full.path()).unwrap();
        for s in [1000, 2000, 3000] {
            log.append(&eval(s)).unwrap();
        }
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert_eq!(
            text,
            "env_steps,mean_return,std_return,episodes,mean_length,truncated\n\
             1000,500.0,1.25,10,200.5,3\n2000,1000.0,1.25,10,200.5,3\n\
             3000,1500.0,1.25,10,200.5,3\n"
        );
        assert_eq!(
            read_evaluations_csv(log.path()).unwrap(),
            vec![(1000, 500.0), (2000, 1000.0), (3000, 1500.0)]
        );
        drop(log);

        let cut = tempfile::tempdir().unwrap();
        let mut log = EvalLog::create(cut.path()).unwrap();
        for s in [1000, 2000] {
            log.append(&eval(s)).unwrap();
        }
        drop(log);
        let mut torn = std::fs::read_to_string(cut.path().join(EVALUATIONS_CSV)).unwrap();
        torn.push_str("3000,15");
        std::fs::write(cut.path().join(EVALUATIONS_CSV), torn).unwrap();
        let mut log = EvalLog::resume(cut.path(), 1999).unwrap();
        for s in [2000, 3000] {
            log.append(&eval(s)).unwrap();
        }
        assert_eq!(
            std::fs::read_to_string(log.path()).unwrap(),
            std::fs::read_to_string(full.path().join(EVALUATIONS_CSV)).unwrap()
        );
        assert!(EvalLog::create(cut.path()).is_err());
    }

    #[test]
    fn a_log_of_four_columns_gets_the_new_ones_on_resume() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(EVALUATIONS_CSV);
        std::fs::write(
            &path,
            "env_steps,mean_return,std_return,episodes\n500,-20.0,0.0,5\n1000,-0.2,1.4,5\n15",
        )
        .unwrap();
        let mut log = EvalLog::resume(dir.path(), 999).unwrap();
        log.append(&eval(1000)).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "env_steps,mean_return,std_return,episodes,mean_length,truncated\n\
             500,-20.0,0.0,5,,\n1000,500.0,1.25,10,200.5,3\n"
        );
        assert_eq!(
            read_evaluations_csv(&path).unwrap(),
            vec![(500, -20.0), (1000, 500.0)]
        );
        // A row of another width is refused, by line.
        std::fs::write(
            &path,
            "env_steps,mean_return,std_return,episodes\n500,-20.0,0.0\n",
        )
        .unwrap();
        let e = EvalLog::resume(dir.path(), 999).unwrap_err();
        assert!(format!("{e:#}").contains("line 2: 3 fields"), "{e:#}");
        // Any other header is still refused, by name.
        std::fs::write(&path, "env_steps,mean\n1,2\n").unwrap();
        let e = EvalLog::resume(dir.path(), 10).unwrap_err();
        assert!(
            format!("{e:#}").contains("header `env_steps,mean`"),
            "{e:#}"
        );
    }

    #[test]
    fn nan_is_empty_and_skipped_by_reader() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = EvalLog::create(dir.path()).unwrap();
        log.append(&EvalRow {
            env_steps: 5,
            mean_return: f64::NAN,
            std_return: f64::NAN,
            episodes: 0,
            mean_length: f64::NAN,
            truncated: None,
        })
        .unwrap();
        log.append(&eval(6)).unwrap();
        assert!(
            std::fs::read_to_string(log.path())
                .unwrap()
                .contains("\n5,,,0,,\n")
        );
        assert_eq!(read_evaluations_csv(log.path()).unwrap(), vec![(6, 3.0)]);
        let e = EvalLog::resume(&dir.path().join("missing"), 0).unwrap_err();
        assert!(format!("{e:#}").contains("evaluations.csv"), "{e:#}");
    }
}
