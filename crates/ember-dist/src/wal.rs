//! [`TransitionLog`]: a write-ahead log of transition batches — what makes an
//! acknowledgement durable.
//!
//! A learner appends each batch an actor sends and syncs the file before acknowledging it;
//! after a crash (`kill -9`, power loss) [`TransitionLog::open`] reads every complete record
//! back and cuts off a torn last one. Records carry the actor, its run id and a sequence
//! number, so a batch resent after a lost acknowledgement is recognised and not stored
//! twice; an actor that restarts comes with a new run id and its numbering starts over.
//!
//! File: the magic `EMBERWAL`, a format version, then records `[len u32][crc32 u32]
//! [payload]` where the payload is `actor u64, run u64, seq u64, width u32, values f32…`
//! (little endian) and the CRC covers the payload.

use ember_core::{Error, Result};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"EMBERWAL";
const VERSION: u32 = 1;
const HEADER: u64 = 12;
/// The largest payload a record may have (a corrupt length must not allocate gigabytes).
const MAX_PAYLOAD: usize = 256 << 20;

/// One batch of transition rows from one actor.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The actor that sent it.
    pub actor: u64,
    /// The actor's run id (new each time the actor process starts).
    pub run: u64,
    /// The actor's sequence number of this batch within its run (increasing).
    pub seq: u64,
    /// Values per row.
    pub width: u32,
    /// Rows of `width` values.
    pub values: Vec<f32>,
}

impl Record {
    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.values.len() / (self.width.max(1) as usize)
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; 8]);
        out.extend_from_slice(&self.actor.to_le_bytes());
        out.extend_from_slice(&self.run.to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.width.to_le_bytes());
        for v in &self.values {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let payload = &out[start + 8..];
        let (len, crc) = (payload.len() as u32, crc32fast::hash(payload));
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
        out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    }

    fn decode(payload: &[u8]) -> Option<Record> {
        if payload.len() < 28 || !(payload.len() - 28).is_multiple_of(4) {
            return None;
        }
        let u64_at = |i: usize| u64::from_le_bytes(payload[i..i + 8].try_into().expect("8 bytes"));
        let width = u32::from_le_bytes(payload[24..28].try_into().expect("4 bytes"));
        let values: Vec<f32> = payload[28..]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        if width == 0 || !values.len().is_multiple_of(width as usize) {
            return None;
        }
        Some(Record {
            actor: u64_at(0),
            run: u64_at(8),
            seq: u64_at(16),
            width,
            values,
        })
    }
}

/// What [`TransitionLog::open_salvaging`] set aside.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Salvaged {
    /// Why the log could not be read as it was (empty: it could).
    pub reason: String,
    /// Where the set-aside bytes are (`None`: nothing was set aside).
    pub aside: Option<PathBuf>,
    /// Bytes set aside.
    pub bytes: u64,
}

/// The record at `at` of `bytes` if one that passes its checksum starts there: its length
/// in bytes and the record.
fn record_at(bytes: &[u8], at: usize) -> Option<(usize, Record)> {
    let head = bytes.get(at..at + 8)?;
    let n = u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(head[4..].try_into().expect("4 bytes"));
    let payload = bytes.get(at + 8..at + 8 + n).filter(|_| n <= MAX_PAYLOAD)?;
    if crc32fast::hash(payload) != crc {
        return None;
    }
    Record::decode(payload).map(|r| (8 + n, r))
}

/// Sets aside what makes the log at `path` unreadable (see
/// [`TransitionLog::open_salvaging`]).
fn salvage(path: &Path, reason: &str) -> Result<Salvaged> {
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| Error::Io { path: p, source }
    };
    let bytes = std::fs::read(path).map_err(io(path))?;
    let readable_header = bytes.len() >= HEADER as usize
        && &bytes[..8] == MAGIC
        && u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) == VERSION;
    let mut name = path.as_os_str().to_owned();
    if !readable_header {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        name.push(format!(".unreadable-{stamp}"));
        let aside = PathBuf::from(name);
        std::fs::rename(path, &aside).map_err(io(path))?;
        return Ok(Salvaged {
            reason: reason.into(),
            aside: Some(aside),
            bytes: bytes.len() as u64,
        });
    }
    let (mut good, mut damaged) = (bytes[..HEADER as usize].to_vec(), Vec::new());
    let mut at = HEADER as usize;
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
    name.push(".damaged");
    let aside = PathBuf::from(name);
    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&aside)
        .map_err(io(&aside))?;
    out.write_all(&damaged).map_err(io(&aside))?;
    out.sync_all().map_err(io(&aside))?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".salvaging");
    let tmp = PathBuf::from(tmp);
    let mut file = File::create(&tmp).map_err(io(&tmp))?;
    file.write_all(&good).map_err(io(&tmp))?;
    file.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        // The rename is durable once the folder is synced.
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io(dir))?;
    }
    Ok(Salvaged {
        reason: reason.into(),
        aside: Some(aside),
        bytes: damaged.len() as u64,
    })
}

/// What [`TransitionLog::append`] did with a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Appended {
    /// Stored (and durable once the call returns).
    Stored,
    /// Already stored before (a resend): not stored again, durable all the same.
    Duplicate,
}

/// An append-only, checksummed log of [`Record`]s with group commit: one `fsync` per
/// [`TransitionLog::append`] call, however many records it holds.
pub struct TransitionLog {
    path: PathBuf,
    file: File,
    /// Per actor: its current run and the highest sequence number stored.
    last: HashMap<u64, (u64, u64)>,
    records: u64,
    rows: u64,
    buf: Vec<u8>,
    sync: bool,
}

impl TransitionLog {
    /// Opens (or creates) the log at `path` and returns it with every complete record in
    /// it, in order. A torn last record — the write a crash interrupted, never acknowledged —
    /// is cut off.
    ///
    /// # Errors
    /// An I/O error; a file that is not an Ember transition log, or one damaged before its
    /// end (a record failing its checksum with more after it): then the file is left as it
    /// is.
    pub fn open(path: &Path) -> Result<(Self, Vec<Record>)> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let mut records = Vec::new();
        if len == 0 {
            file.write_all(MAGIC).map_err(io)?;
            file.write_all(&VERSION.to_le_bytes()).map_err(io)?;
            file.sync_all().map_err(io)?;
        } else {
            let mut bytes = Vec::with_capacity(len as usize);
            file.read_to_end(&mut bytes).map_err(io)?;
            if bytes.len() < HEADER as usize || &bytes[..8] != MAGIC {
                return Err(Error::Corrupt {
                    path: path.to_path_buf(),
                    kind: "transition log".into(),
                    reason: "no transition-log header (another file?)".into(),
                });
            }
            let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
            if version != VERSION {
                return Err(Error::Corrupt {
                    path: path.to_path_buf(),
                    kind: "transition log".into(),
                    reason: format!("format version {version}, this build reads {VERSION}"),
                });
            }
            let mut at = HEADER as usize;
            while at < bytes.len() {
                let record = bytes.get(at..at + 8).and_then(|head| {
                    let n = u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) as usize;
                    let crc = u32::from_le_bytes(head[4..].try_into().expect("4 bytes"));
                    let payload = bytes.get(at + 8..at + 8 + n).filter(|_| n <= MAX_PAYLOAD)?;
                    let ok = crc32fast::hash(payload) == crc;
                    Some((n, ok.then(|| Record::decode(payload)).flatten()))
                });
                match record {
                    Some((n, Some(r))) => {
                        records.push(r);
                        at += 8 + n;
                    }
                    // A bad record that ends the file is the write a crash cut short.
                    Some((n, None)) if at + 8 + n == bytes.len() => break,
                    None => break,
                    // A bad record with more after it is damage, not a torn write: refuse
                    // rather than drop acknowledged records.
                    Some((_, None)) => {
                        return Err(Error::Corrupt {
                            path: path.to_path_buf(),
                            kind: "transition log".into(),
                            reason: format!(
                                "record {} at byte {at} fails its checksum and more follow",
                                records.len()
                            ),
                        });
                    }
                }
            }
            if at < bytes.len() {
                // The unacknowledged tail of a crash: cut it so appends follow good records.
                file.set_len(at as u64).map_err(io)?;
                file.sync_all().map_err(io)?;
            }
        }
        file.seek(SeekFrom::End(0)).map_err(io)?;
        let mut log = TransitionLog {
            path: path.to_path_buf(),
            file,
            last: HashMap::new(),
            records: 0,
            rows: 0,
            buf: Vec::new(),
            sync: true,
        };
        for r in &records {
            log.note(r);
        }
        Ok((log, records))
    }

    /// [`TransitionLog::open`] that never refuses a damaged log: a log without a readable
    /// header (another format version, another file) is renamed aside and a new one
    /// started; damage in the middle is cut out — the damaged bytes are appended to
    /// `<path>.damaged`, the log is rewritten (atomically) with every record that passes its
    /// checksum, and reading resumes at the next such record. What was set aside is
    /// returned, for the caller to report; no byte is deleted.
    ///
    /// # Errors
    /// An I/O error.
    pub fn open_salvaging(path: &Path) -> Result<(Self, Vec<Record>, Salvaged)> {
        match Self::open(path) {
            Ok((log, records)) => Ok((log, records, Salvaged::default())),
            Err(Error::Corrupt { reason, .. }) => {
                let salvaged = salvage(path, &reason)?;
                let (log, records) = Self::open(path)?;
                Ok((log, records, salvaged))
            }
            Err(e) => Err(e),
        }
    }

    /// Turns the `fsync` before acknowledgement off (`false`: faster, and an
    /// acknowledgement no longer survives a power loss — only a process crash).
    pub fn set_sync(&mut self, on: bool) {
        self.sync = on;
    }

    fn note(&mut self, r: &Record) {
        self.records += 1;
        self.rows += r.rows() as u64;
        let e = self.last.entry(r.actor).or_insert((r.run, r.seq));
        if e.0 != r.run || r.seq > e.1 {
            *e = (r.run, r.seq);
        }
    }

    /// Whether `r` is already stored: same actor and run, sequence number not above the
    /// highest stored.
    pub fn is_duplicate(&self, r: &Record) -> bool {
        matches!(self.last.get(&r.actor), Some(&(run, seq)) if run == r.run && r.seq <= seq)
    }

    /// Appends the records that are not duplicates, then syncs the file once: when this
    /// returns `Ok`, every record passed is durable and may be acknowledged.
    ///
    /// # Errors
    /// A record of width 0 or with a partial row (nothing is written then); an I/O error
    /// (then no record of this call may be acknowledged).
    pub fn append(&mut self, records: &[Record]) -> Result<Vec<Appended>> {
        for r in records {
            if r.width == 0 || !r.values.len().is_multiple_of(r.width as usize) {
                return Err(Error::Shape {
                    what: format!("transition batch {} of actor {}", r.seq, r.actor),
                    expected: format!("whole rows of width {} (> 0)", r.width),
                    got: format!("{} values", r.values.len()),
                });
            }
        }
        self.buf.clear();
        let mut out = Vec::with_capacity(records.len());
        let mut stored = Vec::new();
        for r in records {
            let earlier = |s: &&Record| s.actor == r.actor && s.run == r.run && s.seq >= r.seq;
            if self.is_duplicate(r) || stored.iter().any(earlier) {
                out.push(Appended::Duplicate);
            } else {
                r.encode(&mut self.buf);
                stored.push(r);
                out.push(Appended::Stored);
            }
        }
        if !self.buf.is_empty() {
            let io = |source| Error::Io {
                path: self.path.clone(),
                source,
            };
            self.file.write_all(&self.buf).map_err(io)?;
            if self.sync {
                self.file.sync_data().map_err(io)?;
            }
            for r in stored {
                self.note(r);
            }
        }
        Ok(out)
    }

    /// Records stored (recovered ones included).
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Transition rows stored (recovered ones included).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
