//! Setting aside what makes a segment unreadable, so that the learner goes on instead of
//! refusing to start: no byte is deleted.

use super::segment::{Header, MAGIC, record_at};
use emberlab_core::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// What [`super::TransitionLog::open_salvaging`] set aside.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Salvaged {
    /// Why the log could not be read as it was (empty: it could).
    pub reason: String,
    /// Where the set-aside bytes are, one file per segment salvaged (empty: nothing was
    /// set aside).
    pub asides: Vec<PathBuf>,
    /// Bytes set aside.
    pub bytes: u64,
}

/// `path` with `suffix` appended to its file name (any bytes the name holds kept).
pub(super) fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Syncs the folder of `path`, so that a rename or removal in it is durable.
pub(super) fn sync_dir(path: &Path) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(Error::io_at(dir))?;
    }
    Ok(())
}

/// Sets aside what makes the segment at `path` unreadable, adding to `into`: a segment
/// without a readable header is renamed `<path>.unreadable-<time>`; a segment damaged
/// inside has the damaged stretches appended to `<path>.damaged` and is rewritten
/// (atomically) with every record that passes its checksum.
///
/// # Errors
/// An I/O error.
pub(super) fn salvage(path: &Path, reason: &str, into: &mut Salvaged) -> Result<()> {
    let bytes = std::fs::read(path).map_err(Error::io_at(path))?;
    if !into.reason.is_empty() {
        into.reason.push_str("; ");
    }
    into.reason
        .push_str(&format!("{}: {reason}", path.display()));
    let header_len = match Header::read(&mut bytes.as_slice()) {
        Ok((_, len)) => len as usize,
        Err(_) => {
            let stamp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let aside = beside(path, &format!(".unreadable-{stamp}"));
            std::fs::rename(path, &aside).map_err(Error::io_at(path))?;
            sync_dir(path)?;
            into.asides.push(aside);
            into.bytes += bytes.len() as u64;
            return Ok(());
        }
    };
    debug_assert_eq!(&bytes[..8], MAGIC);
    let (mut good, mut damaged) = (bytes[..header_len].to_vec(), Vec::new());
    let mut at = header_len;
    while at < bytes.len() {
        match record_at(&bytes, at) {
            Some((n, _)) => {
                good.extend_from_slice(&bytes[at..at + n]);
                at += n;
            }
            None => {
                // Resume at the next offset where a whole record passes its checksum.
                let next = (at + 1..bytes.len())
                    .find(|&p| record_at(&bytes, p).is_some())
                    .unwrap_or(bytes.len());
                damaged.extend_from_slice(&bytes[at..next]);
                at = next;
            }
        }
    }
    let aside = beside(path, ".damaged");
    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&aside)
        .map_err(Error::io_at(&aside))?;
    out.write_all(&damaged).map_err(Error::io_at(&aside))?;
    out.sync_all().map_err(Error::io_at(&aside))?;
    let tmp = beside(path, ".salvaging");
    let mut file = File::create(&tmp).map_err(Error::io_at(&tmp))?;
    file.write_all(&good).map_err(Error::io_at(&tmp))?;
    file.sync_all().map_err(Error::io_at(&tmp))?;
    std::fs::rename(&tmp, path).map_err(Error::io_at(path))?;
    sync_dir(path)?;
    into.asides.push(aside);
    into.bytes += damaged.len() as u64;
    Ok(())
}
