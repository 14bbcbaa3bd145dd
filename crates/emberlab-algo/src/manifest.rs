//! Every folder [`crate::checkpoint::write_dir_atomically`] writes ends with a
//! [`MANIFEST`]: each of its files with its length and CRC-32, and the manifest's own
//! CRC-32 on its last line. [`verify_dir`] checks a folder against it before anything is
//! loaded, so a byte damaged on disk (or a file truncated, overwritten or deleted after the
//! write) is refused with the file's name instead of training on from wrong weights, or
//! failing later with a loss that is infinite for no visible reason. Network files
//! (burn's `.bpk` and safetensors) carry no checksum of their own; the small state files
//! do, and are listed too.
//!
//! ```text
//! ember checkpoint manifest 1
//! 9c3b1f0e 6748420 learner/actor_critic.bpk
//! 0a1b2c3d 683 trainer.state
//! end 5e6f7a8b
//! ```

use emberlab_core::{Error, Result};
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// The manifest's file name, at the folder's root.
pub const MANIFEST: &str = "MANIFEST";

/// The manifest's first line (its format's version).
const HEADER: &str = "ember checkpoint manifest 1";

/// Bytes read at a time while checksumming.
const CHUNK: usize = 1 << 20;

/// Writes `dir`'s [`MANIFEST`], listing every file under it (sorted by path, the manifest
/// itself excepted).
///
/// # Errors
/// An I/O error reading a file or writing the manifest.
pub fn write_manifest(dir: &Path) -> Result<()> {
    let mut text = format!("{HEADER}\n");
    for (name, path) in files_under(dir)? {
        let (len, crc) = checksum(&path)?;
        writeln!(text, "{crc:08x} {len} {name}").expect("writing to a String");
    }
    let crc = crc32fast::hash(text.as_bytes());
    writeln!(text, "end {crc:08x}").expect("writing to a String");
    let path = dir.join(MANIFEST);
    std::fs::write(&path, text).map_err(Error::io_at(&path))
}

/// Checks every file `dir`'s [`MANIFEST`] lists: present, of its length, of its CRC-32. A
/// folder without a manifest (written before manifests existed) passes; files the
/// manifest does not list are not checked.
///
/// # Errors
/// [`Error::Corrupt`] naming the first file that is missing, of another length or
/// damaged, or the manifest itself when it is damaged; [`Error::Io`] if a file cannot be
/// read.
pub fn verify_dir(dir: &Path) -> Result<()> {
    let path = dir.join(MANIFEST);
    let text = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io_at(&path)(e)),
    };
    for entry in entries(&path, &text)? {
        let file = dir.join(&entry.name);
        let damaged = |reason: String| Error::Corrupt {
            path: file.clone(),
            kind: "checkpoint file".into(),
            reason,
        };
        let len = match std::fs::metadata(&file) {
            Ok(meta) => meta.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(damaged(format!(
                    "missing, though the folder's {MANIFEST} lists it"
                )));
            }
            Err(e) => return Err(Error::io_at(&file)(e)),
        };
        if len != entry.len {
            return Err(damaged(format!(
                "{len} bytes where {MANIFEST} lists {} (truncated or overwritten)",
                entry.len
            )));
        }
        let (_, crc) = checksum(&file)?;
        if crc != entry.crc {
            return Err(damaged(format!(
                "checksum mismatch: CRC-32 {crc:08x} where {MANIFEST} lists {:08x} (the file \
                 is damaged)",
                entry.crc
            )));
        }
    }
    Ok(())
}

/// One file the manifest lists.
struct Entry {
    crc: u32,
    len: u64,
    name: PathBuf,
}

/// The entries of the manifest at `path` whose bytes are `text`, after its own checksum.
fn entries(path: &Path, text: &[u8]) -> Result<Vec<Entry>> {
    let corrupt = |reason: String| Error::Corrupt {
        path: path.to_path_buf(),
        kind: "checkpoint manifest".into(),
        reason,
    };
    let text = std::str::from_utf8(text).map_err(|_| corrupt("not UTF-8 text".into()))?;
    let body_end = text
        .trim_end_matches('\n')
        .rfind('\n')
        .map(|i| i + 1)
        .ok_or_else(|| corrupt("no end line (truncated)".into()))?;
    let (body, end) = text.split_at(body_end);
    let stored = end
        .trim_end()
        .strip_prefix("end ")
        .and_then(|crc| u32::from_str_radix(crc, 16).ok())
        .ok_or_else(|| corrupt("no end line (truncated)".into()))?;
    if crc32fast::hash(body.as_bytes()) != stored {
        return Err(corrupt(
            "checksum mismatch (the manifest is damaged)".into(),
        ));
    }
    let mut lines = body.lines();
    if lines.next() != Some(HEADER) {
        return Err(corrupt(format!("its first line is not `{HEADER}`")));
    }
    lines
        .map(|line| {
            let bad = || corrupt(format!("unreadable line {line:?}"));
            let mut fields = line.splitn(3, ' ');
            let crc = fields.next().and_then(|f| u32::from_str_radix(f, 16).ok());
            let len = fields.next().and_then(|f| f.parse().ok());
            let name = fields.next().map(PathBuf::from);
            match (crc, len, name) {
                (Some(crc), Some(len), Some(name)) if inside(&name) => Ok(Entry { crc, len, name }),
                _ => Err(bad()),
            }
        })
        .collect()
}

/// Whether `name` stays inside the folder (relative, no `..`).
fn inside(name: &Path) -> bool {
    name.components().all(|c| matches!(c, Component::Normal(_)))
}

/// Every file under `dir` but the manifest, as (`/`-separated name relative to `dir`,
/// path), sorted by name.
fn files_under(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut files = Vec::new();
    let mut folders = vec![(String::new(), dir.to_path_buf())];
    while let Some((prefix, folder)) = folders.pop() {
        for entry in std::fs::read_dir(&folder).map_err(Error::io_at(&folder))? {
            let entry = entry.map_err(Error::io_at(&folder))?;
            let file_name = entry.file_name();
            let Some(file_name) = file_name.to_str() else {
                return Err(Error::Corrupt {
                    path: entry.path(),
                    kind: "checkpoint file".into(),
                    reason: "its name is not UTF-8".into(),
                });
            };
            let name = format!("{prefix}{file_name}");
            let kind = entry.file_type().map_err(Error::io_at(&entry.path()))?;
            if kind.is_dir() {
                folders.push((format!("{name}/"), entry.path()));
            } else if name != MANIFEST {
                files.push((name, entry.path()));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// The length and CRC-32 of the file at `path`, read in chunks.
fn checksum(path: &Path) -> Result<(u64, u32)> {
    let mut file = std::fs::File::open(path).map_err(Error::io_at(path))?;
    let (mut hasher, mut len) = (crc32fast::Hasher::new(), 0u64);
    let mut buffer = vec![0u8; CHUNK];
    loop {
        let n = file.read(&mut buffer).map_err(Error::io_at(path))?;
        if n == 0 {
            return Ok((len, hasher.finalize()));
        }
        hasher.update(&buffer[..n]);
        len += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder with two files, one nested, and its manifest.
    fn folder(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("ember-manifest-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("learner")).unwrap();
        std::fs::write(dir.join("trainer.state"), b"trainer bytes").unwrap();
        std::fs::write(dir.join("learner/net.bpk"), vec![7u8; 3 * CHUNK / 2]).unwrap();
        write_manifest(&dir).unwrap();
        dir
    }

    fn refused(dir: &Path, what: &str, words: &[&str]) {
        let err = verify_dir(dir).expect_err(what).to_string();
        for word in words {
            assert!(err.contains(word), "{what}: {err:?} lacks {word:?}");
        }
    }

    #[test]
    fn an_intact_folder_passes_and_lists_every_file() {
        let dir = folder("intact");
        verify_dir(&dir).unwrap();
        let text = std::fs::read_to_string(dir.join(MANIFEST)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], HEADER);
        assert!(lines[lines.len() - 1].starts_with("end "));
        let names: Vec<&str> = lines[1..lines.len() - 1]
            .iter()
            .filter_map(|l| l.splitn(3, ' ').nth(2))
            .collect();
        assert_eq!(names, ["learner/net.bpk", "trainer.state"]);
        // A file added after the write is not the manifest's business.
        std::fs::write(dir.join("extra"), b"x").unwrap();
        verify_dir(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_folder_without_a_manifest_passes() {
        let dir = folder("legacy");
        std::fs::remove_file(dir.join(MANIFEST)).unwrap();
        verify_dir(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_truncated_or_missing_file_is_named() {
        let dir = folder("damaged");
        let net = dir.join("learner/net.bpk");
        let mut bytes = std::fs::read(&net).unwrap();
        bytes[CHUNK + 5] ^= 0x10; // in the second chunk read
        std::fs::write(&net, &bytes).unwrap();
        refused(
            &dir,
            "a flipped bit",
            &["net.bpk", "checksum mismatch", "damaged"],
        );
        bytes[CHUNK + 5] ^= 0x10;
        std::fs::write(&net, &bytes[..bytes.len() - 1]).unwrap();
        refused(&dir, "a truncated file", &["net.bpk", "truncated"]);
        std::fs::remove_file(&net).unwrap();
        refused(&dir, "a deleted file", &["net.bpk", "missing"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_manifest_is_named() {
        let dir = folder("manifest");
        let path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen("trainer.state", "trainer.stats", 1)).unwrap();
        refused(
            &dir,
            "an edited manifest",
            &[MANIFEST, "manifest is damaged"],
        );
        std::fs::write(&path, &text[..text.len() - 12]).unwrap();
        refused(&dir, "a truncated manifest", &[MANIFEST]);
        // A name leaving the folder is refused even with a matching checksum.
        let body = format!("{HEADER}\n00000000 0 ../elsewhere\n");
        let crc = crc32fast::hash(body.as_bytes());
        std::fs::write(&path, format!("{body}end {crc:08x}\n")).unwrap();
        refused(&dir, "a name outside the folder", &["unreadable line"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
