//! [`TransitionLog`]: a write-ahead log of transition batches — what makes an
//! acknowledgement durable — bounded on disk.
//!
//! A learner appends each batch an actor sends and syncs the file before acknowledging it;
//! after a crash (`kill -9`, power loss) [`TransitionLog::open`] reads every complete record
//! back and cuts off a torn last one. Records carry the actor, its run id and a sequence
//! number, so a batch resent after a lost acknowledgement is recognised and not stored
//! twice; an actor that restarts comes with a new run id and its numbering starts over.
//!
//! The log is a series of segment files (`segment`): the first at the log's path, each
//! later one beside it named by the absolute index of its first record
//! (`transitions.wal.0000000000001234`). A new segment starts once the active one passes
//! [`TransitionLog::set_segment_bytes`]; [`TransitionLog::release`] deletes the oldest
//! segments a checkpoint covers. [`TransitionLog::open_stream`] reads the records back one
//! at a time ([`LogReader`]) instead of into memory.

mod salvage;
mod segment;

pub use salvage::Salvaged;
pub use segment::{LogReader, Record};

use emberlab_core::{Error, Result};
use salvage::{beside, salvage, sync_dir};
use segment::{End, Header, Segment, scan};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Segment size past which a new one starts, by default.
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 << 20;

/// What [`TransitionLog::append`] did with a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Appended {
    /// Stored (and durable once the call returns).
    Stored,
    /// Already stored before (a resend): not stored again, durable all the same.
    Duplicate,
}

/// What [`TransitionLog::release`] deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Released {
    /// Segments deleted.
    pub segments: u64,
    /// Their records.
    pub records: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Of their rows, those still within the rows to keep (deleted for the disk budget).
    pub rows_in_window: u64,
}

/// An append-only, checksummed log of [`Record`]s with group commit: one `fsync` per
/// [`TransitionLog::append`] call, however many records it holds.
pub struct TransitionLog {
    path: PathBuf,
    /// Oldest first; the last is the one appended to.
    segments: Vec<Segment>,
    file: File,
    /// Per actor: its current run and the highest sequence number stored.
    last: HashMap<u64, (u64, u64)>,
    buf: Vec<u8>,
    sync: bool,
    segment_bytes: u64,
    budget: u64,
}

/// Whether `name` is a later segment of the log named `base`: `base.` and 16 digits.
fn segment_index(name: &str, base: &str) -> Option<u64> {
    let digits = name.strip_prefix(base)?.strip_prefix('.')?;
    (digits.len() == 16 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

impl TransitionLog {
    /// The segment files of the log at `path`, oldest first.
    fn segment_paths(path: &Path) -> Result<Vec<PathBuf>> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let base = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| Error::invalid("transition log path", path.display(), "a file name"))?;
        let mut later = Vec::new();
        match std::fs::read_dir(&dir) {
            Ok(entries) => {
                for e in entries {
                    let e = e.map_err(Error::io_at(&dir))?;
                    if let Some(i) = e.file_name().to_str().and_then(|n| segment_index(n, base)) {
                        later.push((i, e.path()));
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io_at(&dir)(e)),
        }
        later.sort();
        let mut paths: Vec<PathBuf> = path
            .exists()
            .then(|| path.to_path_buf())
            .into_iter()
            .collect();
        paths.extend(later.into_iter().map(|(_, p)| p));
        Ok(paths)
    }

    /// Opens (or creates) the log at `path` and returns it with every complete record in
    /// it, in order. A torn last record — the write a crash interrupted, never acknowledged —
    /// is cut off. Reads every record into memory: [`TransitionLog::open_stream`] does not.
    ///
    /// # Errors
    /// An I/O error; a file that is not an Ember transition log, or one damaged before its
    /// end (a record failing its checksum with more after it): then the file is left as it
    /// is.
    pub fn open(path: &Path) -> Result<(Self, Vec<Record>)> {
        let (log, reader) = Self::open_stream(path)?;
        let records = reader.collect::<Result<Vec<_>>>()?;
        Ok((log, records))
    }

    /// [`TransitionLog::open`] that returns the records as a [`LogReader`], which reads
    /// them from disk one at a time (a restart needs memory for one record, not the log).
    ///
    /// # Errors
    /// As [`TransitionLog::open`].
    pub fn open_stream(path: &Path) -> Result<(Self, LogReader)> {
        let mut paths = Self::segment_paths(path)?;
        if paths.is_empty() {
            let mut file = File::create(path).map_err(Error::io_at(path))?;
            file.write_all(&Header::default().encode())
                .map_err(Error::io_at(path))?;
            file.sync_all().map_err(Error::io_at(path))?;
            sync_dir(path)?;
            paths.push(path.to_path_buf());
        }
        let mut last: HashMap<u64, (u64, u64)> = HashMap::new();
        let mut segments = Vec::with_capacity(paths.len());
        let count = paths.len();
        for (k, p) in paths.iter().enumerate() {
            let mut seen = Vec::new();
            let (seg, end) = scan(p, |r| seen.push((r.actor, r.run, r.seq)))?;
            if k == 0 {
                for &(actor, run, seq) in &seg.header.table {
                    last.insert(actor, (run, seq));
                }
            }
            for (actor, run, seq) in seen {
                note_seq(&mut last, actor, run, seq);
            }
            match end {
                End::Clean => {}
                End::Torn if k + 1 == count => {
                    // The unacknowledged tail of a crash: cut it so appends follow good
                    // records.
                    let file = OpenOptions::new()
                        .write(true)
                        .open(p)
                        .map_err(Error::io_at(p))?;
                    file.set_len(seg.len).map_err(Error::io_at(p))?;
                    file.sync_all().map_err(Error::io_at(p))?;
                }
                End::Torn => {
                    return Err(Error::Corrupt {
                        path: p.clone(),
                        kind: "transition log".into(),
                        reason: format!(
                            "segment ends in a cut record after record {} and later segments follow",
                            seg.records
                        ),
                    });
                }
                // A bad record with more after it is damage, not a torn write: refuse
                // rather than drop acknowledged records.
                End::Damaged(reason) => {
                    return Err(Error::Corrupt {
                        path: p.clone(),
                        kind: "transition log".into(),
                        reason,
                    });
                }
            }
            segments.push(seg);
        }
        let active = segments.last().expect("at least one segment").path.clone();
        let mut file = OpenOptions::new()
            .write(true)
            .open(&active)
            .map_err(Error::io_at(&active))?;
        file.seek(SeekFrom::End(0)).map_err(Error::io_at(&active))?;
        let reader = LogReader::new(segments.clone());
        let log = TransitionLog {
            path: path.to_path_buf(),
            segments,
            file,
            last,
            buf: Vec::new(),
            sync: true,
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            budget: u64::MAX,
        };
        Ok((log, reader))
    }

    /// [`TransitionLog::open`] that never refuses a damaged log: a segment without a
    /// readable header (another format version, another file) is renamed aside; damage
    /// in the middle of a segment is cut out — the damaged bytes are appended to
    /// `<segment>.damaged`, the segment is rewritten (atomically) with every record that
    /// passes its checksum. What was set aside is returned, for the caller to report; no
    /// byte is deleted.
    ///
    /// # Errors
    /// An I/O error.
    pub fn open_salvaging(path: &Path) -> Result<(Self, Vec<Record>, Salvaged)> {
        let (log, reader, salvaged) = Self::open_stream_salvaging(path)?;
        let records = reader.collect::<Result<Vec<_>>>()?;
        Ok((log, records, salvaged))
    }

    /// [`TransitionLog::open_salvaging`] with the records as a [`LogReader`].
    ///
    /// # Errors
    /// An I/O error.
    pub fn open_stream_salvaging(path: &Path) -> Result<(Self, LogReader, Salvaged)> {
        let mut salvaged = Salvaged::default();
        // Each round sets one segment right; a log has finitely many.
        loop {
            match Self::open_stream(path) {
                Ok((log, reader)) => return Ok((log, reader, salvaged)),
                Err(Error::Corrupt {
                    path: bad, reason, ..
                }) if salvaged.asides.len() <= 1 + Self::segment_paths(path)?.len() => {
                    salvage(&bad, &reason, &mut salvaged)?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Turns the `fsync` before acknowledgement off (`false`: faster, and an
    /// acknowledgement no longer survives a power loss — only a process crash).
    pub fn set_sync(&mut self, on: bool) {
        self.sync = on;
    }

    /// Starts a new segment once the active one would pass `bytes` (the default is
    /// [`DEFAULT_SEGMENT_BYTES`]; a segment holds at least one append).
    pub fn set_segment_bytes(&mut self, bytes: u64) {
        self.segment_bytes = bytes.max(1);
    }

    /// Sets the disk budget that [`TransitionLog::is_full`] compares the log's size with
    /// (`u64::MAX`, the default: none).
    pub fn set_budget(&mut self, bytes: u64) {
        self.budget = bytes;
    }

    /// Whether the log has reached its disk budget: an ingest should wait for a
    /// [`TransitionLog::release`] before appending.
    pub fn is_full(&self) -> bool {
        self.bytes() >= self.budget
    }

    /// Bytes of the log on disk, every segment together.
    pub fn bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.len).sum()
    }

    /// The absolute index of the oldest record still in the log (0 until a release).
    pub fn first_index(&self) -> u64 {
        self.segments[0].header.first
    }

    /// The segment files, oldest first.
    pub fn segments(&self) -> Vec<PathBuf> {
        self.segments.iter().map(|s| s.path.clone()).collect()
    }

    /// Deletes the oldest segments (never the one appended to) whose records all have
    /// absolute indices below `covered` (a checkpoint took them in) and either whose rows
    /// are all older than the newest `keep_rows` (the replay window a restart rebuilds),
    /// or while the log is over its disk budget.
    ///
    /// # Errors
    /// An I/O error deleting a file (the log then keeps that segment).
    pub fn release(&mut self, covered: u64, keep_rows: u64) -> Result<Released> {
        let mut out = Released::default();
        let total_rows = self.rows();
        while self.segments.len() > 1 {
            let s = &self.segments[0];
            let end = s.header.first + s.records;
            let end_row = s.header.first_row + s.rows;
            let outside = total_rows - end_row >= keep_rows;
            if end > covered || !(outside || self.is_full()) {
                break;
            }
            std::fs::remove_file(&s.path).map_err(Error::io_at(&s.path))?;
            sync_dir(&s.path)?;
            out.segments += 1;
            out.records += s.records;
            out.bytes += s.len;
            out.rows_in_window += if outside {
                0
            } else {
                s.rows.min(keep_rows - (total_rows - end_row))
            };
            self.segments.remove(0);
        }
        Ok(out)
    }

    /// Starts a new segment after the active one, its header holding the resend table.
    fn roll(&mut self) -> Result<()> {
        let header = Header {
            first: self.records(),
            first_row: self.rows(),
            table: {
                let mut t: Vec<(u64, u64, u64)> =
                    self.last.iter().map(|(&a, &(r, s))| (a, r, s)).collect();
                t.sort_unstable();
                t
            },
        };
        let path = beside(&self.path, &format!(".{:016}", header.first));
        let bytes = header.encode();
        let mut file = File::create(&path).map_err(Error::io_at(&path))?;
        file.write_all(&bytes).map_err(Error::io_at(&path))?;
        file.sync_all().map_err(Error::io_at(&path))?;
        sync_dir(&path)?;
        self.file = file;
        self.segments.push(Segment {
            path,
            header,
            header_len: bytes.len() as u64,
            len: bytes.len() as u64,
            records: 0,
            rows: 0,
        });
        Ok(())
    }

    fn note(&mut self, r: &Record) {
        let seg = self.segments.last_mut().expect("at least one segment");
        seg.records += 1;
        seg.rows += r.rows() as u64;
        note_seq(&mut self.last, r.actor, r.run, r.seq);
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
            let active = self.segments.last().expect("at least one segment");
            if active.records > 0 && active.len + self.buf.len() as u64 > self.segment_bytes {
                self.roll()?;
            }
            let active = self.segments.last_mut().expect("at least one segment");
            let path = active.path.clone();
            self.file
                .write_all(&self.buf)
                .map_err(Error::io_at(&path))?;
            if self.sync {
                self.file.sync_data().map_err(Error::io_at(&path))?;
            }
            active.len += self.buf.len() as u64;
            for r in stored {
                self.note(r);
            }
        }
        Ok(out)
    }

    /// Records stored since the log began (recovered and released ones included): the
    /// absolute index the next record gets.
    pub fn records(&self) -> u64 {
        let s = self.segments.last().expect("at least one segment");
        s.header.first + s.records
    }

    /// Transition rows stored since the log began (recovered and released ones included).
    pub fn rows(&self) -> u64 {
        let s = self.segments.last().expect("at least one segment");
        s.header.first_row + s.rows
    }

    /// The log's path (its first segment's file).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Notes that `actor` stored batch `seq` of run `run`.
fn note_seq(last: &mut HashMap<u64, (u64, u64)>, actor: u64, run: u64, seq: u64) {
    let e = last.entry(actor).or_insert((run, seq));
    if e.0 != run || seq > e.1 {
        *e = (run, seq);
    }
}
