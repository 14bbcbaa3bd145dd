//! A TensorBoard event-file writer with no protobuf compiler: scalars as hand-encoded
//! `Event` messages in TFRecord framing.
//!
//! Each record is `u64 LE length`, `masked CRC-32C of those 8 bytes`, the message bytes and
//! the masked CRC-32C of the message (see [`crate::crc32c`]). The messages follow
//! `tensorflow/core/util/event.proto`:
//!
//! ```text
//! Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//! Summary { repeated Value value = 1; }
//! Value   { string tag = 1; float simple_value = 2; }
//! ```
//!
//! The first record carries `file_version = "brain.Event:2"`; every later one a summary.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};

use crate::crc32c::masked_crc32c;

/// The `file_version` of the first record, as TensorFlow writes it.
pub const FILE_VERSION: &str = "brain.Event:2";

/// Counter making event-file names unique within one process (the `<n>` of the name).
static FILE_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writer of one TensorBoard event file,
/// `events.out.tfevents.<unix secs>.<hostname>.<pid>.<n>`, in a log folder.
///
/// Records are buffered: call [`flush`](EventWriter::flush) at each reporting interval (it
/// is also flushed, ignoring errors, when dropped).
#[derive(Debug)]
pub struct EventWriter {
    path: PathBuf,
    out: BufWriter<File>,
}

impl EventWriter {
    /// Creates `dir` (and its parents) if needed and a new event file in it, and writes the
    /// file-version record.
    ///
    /// # Errors
    /// On an I/O error creating the folder or the file.
    pub fn create(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create TensorBoard folder {}", dir.display()))?;
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let host = hostname();
        let pid = std::process::id();
        loop {
            let n = FILE_COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!("events.out.tfevents.{secs}.{host}.{pid}.{n}"));
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => {
                    let mut writer = Self {
                        path,
                        out: BufWriter::new(file),
                    };
                    let event = encode_event(wall_time(), 0, Some(FILE_VERSION), &[]);
                    writer.write_record(&event)?;
                    writer.flush()?;
                    return Ok(writer);
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot create {}", path.display()));
                }
            }
        }
    }

    /// Writes one scalar: `value` (stored as `f32`, TensorBoard's `simple_value`) of series
    /// `tag` at `step`.
    ///
    /// # Errors
    /// See [`scalars`](EventWriter::scalars).
    pub fn scalar(&mut self, tag: &str, step: u64, value: f64) -> Result<()> {
        self.scalars(step, &[(tag, value)])
    }

    /// Writes several scalars of one `step` in a single event (e.g. all metrics of a
    /// reporting interval). Values are stored as `f32`; NaN and infinities are kept.
    ///
    /// # Errors
    /// When a tag is empty, `step` exceeds `i64::MAX` (TensorBoard's step is an `int64`), or
    /// on an I/O error.
    pub fn scalars(&mut self, step: u64, values: &[(&str, f64)]) -> Result<()> {
        let step = i64::try_from(step)
            .map_err(|_| anyhow::anyhow!("TensorBoard step {step} exceeds i64::MAX"))?;
        if let Some(i) = values.iter().position(|(tag, _)| tag.is_empty()) {
            bail!("TensorBoard scalar {i} of step {step} has an empty tag");
        }
        let event = encode_event(wall_time(), step, None, values);
        self.write_record(&event)
    }

    /// Flushes buffered records to the file.
    ///
    /// # Errors
    /// On an I/O error.
    pub fn flush(&mut self) -> Result<()> {
        self.out
            .flush()
            .with_context(|| format!("cannot write {}", self.path.display()))
    }

    /// Path of the event file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one TFRecord holding `data`.
    fn write_record(&mut self, data: &[u8]) -> Result<()> {
        let len = (data.len() as u64).to_le_bytes();
        let mut record = Vec::with_capacity(data.len() + 16);
        record.extend_from_slice(&len);
        record.extend_from_slice(&masked_crc32c(&len).to_le_bytes());
        record.extend_from_slice(data);
        record.extend_from_slice(&masked_crc32c(data).to_le_bytes());
        self.out
            .write_all(&record)
            .with_context(|| format!("cannot write {}", self.path.display()))
    }
}

impl Drop for EventWriter {
    fn drop(&mut self) {
        let _ = self.out.flush();
    }
}

/// Seconds since the Unix epoch, as TensorBoard's `wall_time`.
fn wall_time() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The machine's host name, reduced to characters safe in a file name.
fn hostname() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .unwrap_or_default();
    let clean: String = raw
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        "localhost".to_owned()
    } else {
        clean
    }
}

/// Protobuf wire types used here.
const WIRE_VARINT: u8 = 0;
const WIRE_FIXED64: u8 = 1;
const WIRE_LEN: u8 = 2;
const WIRE_FIXED32: u8 = 5;

fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn put_key(buf: &mut Vec<u8>, field: u32, wire: u8) {
    put_varint(buf, (u64::from(field) << 3) | u64::from(wire));
}

fn put_bytes(buf: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_key(buf, field, WIRE_LEN);
    put_varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

/// Encodes an `Event` with either a `file_version` or a summary of `values`.
fn encode_event(
    wall_time: f64,
    step: i64,
    file_version: Option<&str>,
    values: &[(&str, f64)],
) -> Vec<u8> {
    let mut event = Vec::new();
    put_key(&mut event, 1, WIRE_FIXED64);
    event.extend_from_slice(&wall_time.to_le_bytes());
    if step != 0 {
        put_key(&mut event, 2, WIRE_VARINT);
        // int64 is encoded as the two's-complement u64.
        put_varint(&mut event, step as u64);
    }
    if let Some(version) = file_version {
        put_bytes(&mut event, 3, version.as_bytes());
    }
    if !values.is_empty() {
        let mut summary = Vec::new();
        for (tag, value) in values {
            let mut v = Vec::new();
            put_bytes(&mut v, 1, tag.as_bytes());
            put_key(&mut v, 2, WIRE_FIXED32);
            v.extend_from_slice(&(*value as f32).to_le_bytes());
            put_bytes(&mut summary, 1, &v);
        }
        put_bytes(&mut event, 5, &summary);
    }
    event
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crc32c::crc32c;

    /// Splits a TFRecord stream into its payloads, checking both CRCs of every record.
    fn records(bytes: &[u8]) -> Vec<Vec<u8>> {
        let unmask = |m: u32| m.wrapping_sub(0xA282_EAD8).rotate_left(15);
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            let len_bytes = &bytes[i..i + 8];
            let len = u64::from_le_bytes(len_bytes.try_into().unwrap()) as usize;
            assert_eq!(
                unmask(u32_at(i + 8)),
                crc32c(len_bytes),
                "length CRC at {i}"
            );
            let data = &bytes[i + 12..i + 12 + len];
            assert_eq!(
                unmask(u32_at(i + 12 + len)),
                crc32c(data),
                "data CRC at {i}"
            );
            out.push(data.to_vec());
            i += 16 + len;
        }
        assert_eq!(i, bytes.len());
        out
    }

    fn varint(b: &[u8], i: &mut usize) -> u64 {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let byte = b[*i];
            *i += 1;
            v |= u64::from(byte & 0x7F) << shift;
            if byte < 0x80 {
                return v;
            }
            shift += 7;
        }
    }

    /// Minimal protobuf decoder: (field, wire, payload) with varints widened to 8 bytes.
    fn fields(b: &[u8]) -> Vec<(u64, u64, Vec<u8>)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            let key = varint(b, &mut i);
            let (field, wire) = (key >> 3, key & 7);
            let payload = match wire {
                0 => varint(b, &mut i).to_le_bytes().to_vec(),
                1 => {
                    i += 8;
                    b[i - 8..i].to_vec()
                }
                2 => {
                    let n = varint(b, &mut i) as usize;
                    i += n;
                    b[i - n..i].to_vec()
                }
                5 => {
                    i += 4;
                    b[i - 4..i].to_vec()
                }
                w => panic!("unexpected wire type {w}"),
            };
            out.push((field, wire, payload));
        }
        out
    }

    #[test]
    fn varints_match_protobuf() {
        let mut b = Vec::new();
        put_varint(&mut b, 300);
        assert_eq!(b, [0xAC, 0x02]);
        let mut b = Vec::new();
        put_varint(&mut b, -1i64 as u64);
        assert_eq!(b.len(), 10);
    }

    #[test]
    fn file_decodes_with_valid_crcs() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = EventWriter::create(dir.path()).unwrap();
        w.scalar("train/return", 1000, -12.5).unwrap();
        w.scalars(2000, &[("a", 1.0), ("b", f64::NAN)]).unwrap();
        assert!(w.scalar("", 1, 0.0).is_err());
        assert!(w.scalar("x", u64::MAX, 0.0).is_err());
        w.flush().unwrap();
        let name = w.path().file_name().unwrap().to_str().unwrap().to_owned();
        assert!(name.starts_with("events.out.tfevents."), "{name}");
        let parts: Vec<&str> = name.rsplitn(3, '.').collect();
        assert_eq!(parts[1], std::process::id().to_string(), "{name}");
        assert!(parts[0].parse::<u64>().is_ok(), "{name}");
        let recs = records(&std::fs::read(w.path()).unwrap());
        assert_eq!(recs.len(), 3);

        let first = fields(&recs[0]);
        assert_eq!(first[0].0, 1);
        let wall = f64::from_le_bytes(first[0].2.clone().try_into().unwrap());
        assert!(wall > 1.5e9, "{wall}");
        assert_eq!(
            (first[1].0, first[1].2.as_slice()),
            (3, FILE_VERSION.as_bytes())
        );

        let second = fields(&recs[1]);
        assert_eq!((second[1].0, second[1].1), (2, 0));
        assert_eq!(
            u64::from_le_bytes(second[1].2.clone().try_into().unwrap()),
            1000
        );
        assert_eq!(second[2].0, 5);
        let values = fields(&second[2].2);
        assert_eq!(values.len(), 1);
        let value = fields(&values[0].2);
        assert_eq!(value[0], (1, 2, b"train/return".to_vec()));
        assert_eq!((value[1].0, value[1].1), (2, 5));
        assert_eq!(
            f32::from_le_bytes(value[1].2.clone().try_into().unwrap()),
            -12.5
        );

        let third = fields(&recs[2]);
        let values = fields(&third[2].2);
        assert_eq!(values.len(), 2);
        let b = fields(&values[1].2);
        assert_eq!(b[0].2, b"b");
        assert!(f32::from_le_bytes(b[1].2.clone().try_into().unwrap()).is_nan());
    }

    #[test]
    fn two_writers_get_two_files() {
        let dir = tempfile::tempdir().unwrap();
        let a = EventWriter::create(dir.path()).unwrap();
        let b = EventWriter::create(dir.path()).unwrap();
        assert_ne!(a.path(), b.path());
        assert!(!hostname().is_empty());
    }
}
