//! One file of the log: its header, its records, and reading them as a stream.
//!
//! A segment is the magic `EMBERWAL`, a format version, then records `[len u32][crc32 u32]
//! [payload]` where the payload is `actor u64, run u64, seq u64, width u32, values f32…`
//! (little endian) and the CRC covers the payload. Version 1 (12 bytes of header) is the
//! first segment of a log; version 2 also holds the absolute index of its first record and
//! row, and the resend table (each actor's run and highest sequence number) as it stood
//! when the segment was started, with a CRC: so that once older segments are dropped, a
//! restarted learner still recognises every resend.

use emberlab_core::{Error, Result};
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

pub(super) const MAGIC: &[u8; 8] = b"EMBERWAL";
const V1: u32 = 1;
const V2: u32 = 2;
/// The largest payload a record may have (a corrupt length must not allocate gigabytes).
pub(super) const MAX_PAYLOAD: usize = 256 << 20;
/// The most actors a version-2 header may list (a corrupt count must not allocate).
const MAX_TABLE: usize = 1 << 20;

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

    pub(super) fn encode(&self, out: &mut Vec<u8>) {
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

/// The record at `at` of `bytes` if one that passes its checksum starts there: its length
/// in bytes and the record.
pub(super) fn record_at(bytes: &[u8], at: usize) -> Option<(usize, Record)> {
    let head = bytes.get(at..at + 8)?;
    let n = u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(head[4..].try_into().expect("4 bytes"));
    let payload = bytes.get(at + 8..at + 8 + n).filter(|_| n <= MAX_PAYLOAD)?;
    if crc32fast::hash(payload) != crc {
        return None;
    }
    Record::decode(payload).map(|r| (8 + n, r))
}

/// What a segment's header says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Header {
    /// The absolute index of the segment's first record (0 for the log's first segment).
    pub(super) first: u64,
    /// The absolute index of its first row.
    pub(super) first_row: u64,
    /// `(actor, run, highest seq)` when the segment was started.
    pub(super) table: Vec<(u64, u64, u64)>,
}

impl Header {
    /// The header's bytes: version 1 for a log's first segment, version 2 otherwise.
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        if *self == Header::default() {
            out.extend_from_slice(&V1.to_le_bytes());
            return out;
        }
        out.extend_from_slice(&V2.to_le_bytes());
        let start = out.len();
        out.extend_from_slice(&self.first.to_le_bytes());
        out.extend_from_slice(&self.first_row.to_le_bytes());
        out.extend_from_slice(&(self.table.len() as u32).to_le_bytes());
        for &(actor, run, seq) in &self.table {
            for v in [actor, run, seq] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        let crc = crc32fast::hash(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Reads a header: it and its length in bytes, or why it is not one.
    pub(super) fn read(r: &mut impl Read) -> std::result::Result<(Header, u64), String> {
        let mut head = [0u8; 12];
        r.read_exact(&mut head)
            .map_err(|_| "no transition-log header (another file?)".to_string())?;
        if &head[..8] != MAGIC {
            return Err("no transition-log header (another file?)".into());
        }
        match u32::from_le_bytes(head[8..12].try_into().expect("4 bytes")) {
            V1 => Ok((Header::default(), 12)),
            V2 => {
                let bad = |_| "a torn segment header".to_string();
                let mut fixed = [0u8; 20];
                r.read_exact(&mut fixed).map_err(bad)?;
                let n = u32::from_le_bytes(fixed[16..20].try_into().expect("4 bytes")) as usize;
                if n > MAX_TABLE {
                    return Err(format!("a segment header listing {n} actors"));
                }
                let mut table = vec![0u8; n * 24 + 4];
                r.read_exact(&mut table).map_err(bad)?;
                let mut hasher = crc32fast::Hasher::new();
                hasher.update(&fixed);
                hasher.update(&table[..n * 24]);
                let crc = u32::from_le_bytes(table[n * 24..].try_into().expect("4 bytes"));
                if hasher.finalize() != crc {
                    return Err("a segment header that fails its checksum".into());
                }
                let u64_at =
                    |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8"));
                let header = Header {
                    first: u64_at(&fixed, 0),
                    first_row: u64_at(&fixed, 8),
                    table: (0..n)
                        .map(|k| {
                            let e = &table[k * 24..];
                            (u64_at(e, 0), u64_at(e, 8), u64_at(e, 16))
                        })
                        .collect(),
                };
                Ok((header, 12 + 20 + n as u64 * 24 + 4))
            }
            v => Err(format!(
                "format version {v}, this build reads {V1} and {V2}"
            )),
        }
    }
}

/// A segment as read at open: where its verified records end.
#[derive(Clone, Debug)]
pub(super) struct Segment {
    pub(super) path: PathBuf,
    pub(super) header: Header,
    /// Bytes of its header.
    pub(super) header_len: u64,
    /// Bytes of header and verified records (the file's length once open).
    pub(super) len: u64,
    pub(super) records: u64,
    pub(super) rows: u64,
}

/// How a segment's records ended.
pub(super) enum End {
    /// At the end of the file.
    Clean,
    /// In a record cut short or failing its checksum at the end of the file: the write a
    /// crash interrupted, never acknowledged.
    Torn,
    /// In a record failing its checksum with more bytes after it.
    Damaged(String),
}

fn corrupt(path: &Path, reason: String) -> Error {
    Error::Corrupt {
        path: path.to_path_buf(),
        kind: "transition log".into(),
        reason,
    }
}

/// Reads the segment at `path` through, calling `each` on every verified record, and says
/// how its records ended.
///
/// # Errors
/// An I/O error; an unreadable header.
pub(super) fn scan(path: &Path, mut each: impl FnMut(&Record)) -> Result<(Segment, End)> {
    let file = File::open(path).map_err(Error::io_at(path))?;
    let file_len = file.metadata().map_err(Error::io_at(path))?.len();
    let mut r = BufReader::with_capacity(1 << 20, file);
    let (header, header_len) = Header::read(&mut r).map_err(|e| corrupt(path, e))?;
    let mut seg = Segment {
        path: path.to_path_buf(),
        header,
        header_len,
        len: header_len,
        records: 0,
        rows: 0,
    };
    let mut payload = Vec::new();
    loop {
        if seg.len == file_len {
            return Ok((seg, End::Clean));
        }
        let mut head = [0u8; 8];
        if r.read_exact(&mut head).is_err() {
            return Ok((seg, End::Torn));
        }
        let n = u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(head[4..].try_into().expect("4 bytes"));
        let end = seg.len + 8 + n as u64;
        if n > MAX_PAYLOAD || end > file_len {
            // A length past the end: a torn write, or damage if it is absurd mid-file.
            return Ok((seg, End::Torn));
        }
        payload.resize(n, 0);
        r.read_exact(&mut payload).map_err(Error::io_at(path))?;
        let record = (crc32fast::hash(&payload) == crc)
            .then(|| Record::decode(&payload))
            .flatten();
        match record {
            Some(rec) => {
                each(&rec);
                seg.records += 1;
                seg.rows += rec.rows() as u64;
                seg.len = end;
            }
            None if end == file_len => return Ok((seg, End::Torn)),
            None => {
                let reason = format!(
                    "record {} at byte {} fails its checksum and more follow",
                    seg.records, seg.len
                );
                return Ok((seg, End::Damaged(reason)));
            }
        }
    }
}

/// The records of a log's segments as read at open, one at a time from disk.
pub struct LogReader {
    segments: std::vec::IntoIter<Segment>,
    current: Option<(BufReader<File>, u64, PathBuf)>,
    payload: Vec<u8>,
}

impl LogReader {
    pub(super) fn new(segments: Vec<Segment>) -> Self {
        LogReader {
            segments: segments.into_iter(),
            current: None,
            payload: Vec::new(),
        }
    }

    fn open(seg: &Segment) -> Result<(BufReader<File>, u64, PathBuf)> {
        let mut file = File::open(&seg.path).map_err(Error::io_at(&seg.path))?;
        file.seek(SeekFrom::Start(seg.header_len))
            .map_err(Error::io_at(&seg.path))?;
        Ok((
            BufReader::with_capacity(1 << 20, file),
            seg.len - seg.header_len,
            seg.path.clone(),
        ))
    }
}

impl Iterator for LogReader {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Result<Record>> {
        loop {
            if self.current.as_ref().is_none_or(|c| c.1 == 0) {
                let seg = self.segments.next()?;
                match Self::open(&seg) {
                    Ok(c) => self.current = Some(c),
                    Err(e) => return Some(Err(e)),
                }
                continue;
            }
            let (r, left, path) = self.current.as_mut().expect("set above");
            let mut head = [0u8; 8];
            let read = r.read_exact(&mut head).and_then(|()| {
                let n = u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) as usize;
                self.payload.resize(n.min(MAX_PAYLOAD), 0);
                r.read_exact(&mut self.payload)
            });
            if let Err(e) = read {
                let path = path.clone();
                self.current = None;
                return Some(Err(Error::io_at(&path)(e)));
            }
            *left = left.saturating_sub(8 + self.payload.len() as u64);
            // Verified at open; a record that no longer reads is the file changed since.
            return Some(
                Record::decode(&self.payload).ok_or_else(|| {
                    corrupt(path, "a record changed since the log was opened".into())
                }),
            );
        }
    }
}
