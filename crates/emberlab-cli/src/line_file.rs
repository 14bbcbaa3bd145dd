//! Append-only line files shared by the metrics and evaluation logs: number formatting, one
//! write per complete line, and the resume rewrite (keep some lines, drop a torn last line,
//! replace the file atomically through a temporary file and a rename).

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// An open file that only ever gets whole lines appended, each with one `write_all` (no
/// user-space buffer), so a killed process leaves complete lines (at worst a torn last line,
/// which [`keep_lines`] drops).
#[derive(Debug)]
pub(crate) struct LineFile {
    path: PathBuf,
    file: File,
}

impl LineFile {
    /// Creates `path`, failing if it exists, and writes `first_line` (without its newline).
    pub(crate) fn create_new(path: &Path, first_line: &str) -> Result<Self> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| {
                if e.kind() == ErrorKind::AlreadyExists {
                    anyhow::anyhow!(
                        "{} already exists: resume the run instead, or choose a new run folder",
                        path.display()
                    )
                } else {
                    anyhow::Error::new(e).context(format!("cannot create {}", path.display()))
                }
            })?;
        let mut out = Self {
            path: path.to_path_buf(),
            file,
        };
        out.append(first_line)?;
        Ok(out)
    }

    /// Opens an existing `path` for appending.
    pub(crate) fn open_append(path: &Path) -> Result<Self> {
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .with_context(|| format!("cannot open {} for appending", path.display()))?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Appends `line` and a newline in one write.
    pub(crate) fn append(&mut self, line: &str) -> Result<()> {
        let mut buf = String::with_capacity(line.len() + 1);
        buf.push_str(line);
        buf.push('\n');
        self.file
            .write_all(buf.as_bytes())
            .with_context(|| format!("cannot write to {}", self.path.display()))
    }
}

/// Reads `path` as complete lines: a last line with no trailing newline (torn by a killed
/// writer) is left out.
pub(crate) fn read_complete_lines(path: &Path) -> Result<Vec<String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let complete = match text.rfind('\n') {
        Some(end) => &text[..end],
        None => return Ok(Vec::new()),
    };
    Ok(complete.split('\n').map(str::to_owned).collect())
}

/// Rewrites `path` line by line: `map(line_number, line)` gives each complete line's
/// replacement, or `None` to drop it (line numbers from 1, the header included). The new
/// content goes to a temporary file beside it, is synced, and replaces `path` by rename.
///
/// # Errors
/// When the file cannot be read or replaced, or `map` fails.
pub(crate) fn rewrite_lines(
    path: &Path,
    mut map: impl FnMut(usize, &str) -> Result<Option<String>>,
) -> Result<()> {
    let lines = read_complete_lines(path)?;
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        if let Some(new) = map(i + 1, line)? {
            out.push_str(&new);
            out.push('\n');
        }
    }
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = PathBuf::from(tmp_name);
    {
        let mut f =
            File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
        f.write_all(out.as_bytes())
            .and_then(|()| f.sync_all())
            .with_context(|| format!("cannot write {}", tmp.display()))?;
    }
    std::fs::rename(&tmp, path)
        .with_context(|| format!("cannot replace {} by {}", path.display(), tmp.display()))
}

/// [`rewrite_lines`] keeping the header (the first line, when `header` is true) and the
/// lines for which `keep(line_number, line)` returns true.
///
/// # Errors
/// As [`rewrite_lines`].
pub(crate) fn keep_lines(
    path: &Path,
    header: bool,
    mut keep: impl FnMut(usize, &str) -> Result<bool>,
) -> Result<()> {
    rewrite_lines(path, |no, line| {
        Ok(((header && no == 1) || keep(no, line)?).then(|| line.to_owned()))
    })
}

/// A finite float in its shortest round-trip form (`0.1`, `1.0`, `1e-7`); `None` for NaN
/// and infinities (written as an empty CSV field or a JSON `null`).
pub(crate) fn fmt_f64(v: f64) -> Option<String> {
    serde_json::Number::from_f64(v).map(|n| n.to_string())
}

/// A CSV field for a float: its [`fmt_f64`] form, or empty.
pub(crate) fn csv_f64(v: f64) -> String {
    fmt_f64(v).unwrap_or_default()
}

/// A JSON value for a float: its [`fmt_f64`] form, or `null`.
pub(crate) fn json_f64(v: f64) -> String {
    fmt_f64(v).unwrap_or_else(|| "null".to_owned())
}

/// Parses a CSV float field: empty means missing (`None`).
pub(crate) fn parse_opt_f64(
    field: &str,
    path: &Path,
    line: usize,
    column: &str,
) -> Result<Option<f64>> {
    if field.is_empty() {
        return Ok(None);
    }
    match field.parse::<f64>() {
        Ok(v) => Ok(Some(v)),
        Err(_) => bail!(
            "{} line {line}: column `{column}` holds `{field}`, not a number",
            path.display()
        ),
    }
}

/// Parses a CSV unsigned integer field.
pub(crate) fn parse_u64(field: &str, path: &Path, line: usize, column: &str) -> Result<u64> {
    field.parse::<u64>().map_err(|_| {
        anyhow::anyhow!(
            "{} line {line}: column `{column}` holds `{field}`, not an unsigned integer",
            path.display()
        )
    })
}

/// Reads the header line of a CSV file written by this crate (the first complete line).
pub(crate) fn read_header(path: &Path) -> Result<Vec<String>> {
    let lines = read_complete_lines(path)?;
    match lines.first() {
        Some(h) => Ok(h.split(',').map(str::to_owned).collect()),
        None => bail!("{} has no header line", path.display()),
    }
}

/// Index of `name` in `header`.
pub(crate) fn column(header: &[String], name: &str, path: &Path) -> Result<usize> {
    header.iter().position(|h| h == name).ok_or_else(|| {
        anyhow::anyhow!(
            "{} has no column `{name}` (header: {})",
            path.display(),
            header.join(",")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_round_trip_shortest() {
        assert_eq!(csv_f64(0.1), "0.1");
        assert_eq!(csv_f64(1.0), "1.0");
        assert_eq!(csv_f64(-2.5e-7).parse::<f64>().unwrap(), -2.5e-7);
        assert_eq!(csv_f64(f64::NAN), "");
        assert_eq!(json_f64(f64::INFINITY), "null");
        assert_eq!(json_f64(123.25), "123.25");
    }

    #[test]
    fn rewrite_drops_torn_line_and_filtered_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.csv");
        std::fs::write(&p, "h\n1\n2\n3\n4").unwrap();
        keep_lines(&p, true, |_, l| Ok(l != "2")).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "h\n1\n3\n");
        assert!(!dir.path().join("x.csv.tmp").exists());
    }
}
