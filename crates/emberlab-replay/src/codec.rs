//! A small little-endian binary codec for saving buffers; every read is bounds-checked and
//! a short or malformed input is an [`Error::Corrupt`] naming the file.

use emberlab_core::{Error, Result};
use std::path::{Path, PathBuf};

/// Appends values to a byte vector.
#[derive(Debug, Default)]
pub struct Encoder {
    buf: Vec<u8>,
}

impl Encoder {
    /// An empty encoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes written so far.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// Writes a `u8`.
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    /// Writes a `u64`.
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// Writes an `f64`.
    pub fn f64(&mut self, v: f64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// Writes a length-prefixed UTF-8 string.
    pub fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// Writes a length-prefixed byte slice.
    pub fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    /// Writes a length-prefixed `f32` slice.
    pub fn f32s(&mut self, v: &[f32]) {
        self.u64(v.len() as u64);
        self.buf.reserve(v.len() * 4);
        for x in v {
            self.buf.extend_from_slice(&x.to_le_bytes());
        }
    }

    /// Writes a length-prefixed `f64` slice.
    pub fn f64s(&mut self, v: &[f64]) {
        self.u64(v.len() as u64);
        self.buf.reserve(v.len() * 8);
        for x in v {
            self.buf.extend_from_slice(&x.to_le_bytes());
        }
    }
}

/// Reads values back, failing with [`Error::Corrupt`] on short or malformed input.
#[derive(Debug)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
    path: PathBuf,
    kind: &'static str,
}

impl<'a> Decoder<'a> {
    /// A decoder over `buf`, which came from `path` and should be a `kind` file.
    pub fn new(buf: &'a [u8], path: &Path, kind: &'static str) -> Self {
        Decoder {
            buf,
            pos: 0,
            path: path.to_path_buf(),
            kind,
        }
    }

    /// An [`Error::Corrupt`] for this file.
    pub fn corrupt(&self, reason: impl Into<String>) -> Error {
        Error::Corrupt {
            path: self.path.clone(),
            kind: self.kind.to_string(),
            reason: reason.into(),
        }
    }

    /// Whether every byte has been read.
    pub fn is_done(&self) -> bool {
        self.pos == self.buf.len()
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if self.buf.len() - self.pos < n {
            return Err(self.corrupt(format!(
                "unexpected end of data reading {what} at byte {} (need {n}, have {})",
                self.pos,
                self.buf.len() - self.pos
            )));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Reads a `u8`.
    pub fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }

    /// Reads a `u64`.
    pub fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().unwrap()))
    }

    /// Reads a `u64` that must fit a `usize` no larger than `max`.
    pub fn len(&mut self, what: &str, max: usize) -> Result<usize> {
        let v = self.u64(what)?;
        if v > max as u64 {
            return Err(self.corrupt(format!("{what} = {v} exceeds {max}")));
        }
        Ok(v as usize)
    }

    /// Reads an `f64`.
    pub fn f64(&mut self, what: &str) -> Result<f64> {
        Ok(f64::from_le_bytes(self.take(8, what)?.try_into().unwrap()))
    }

    /// Reads a length-prefixed string.
    pub fn str(&mut self, what: &str) -> Result<String> {
        let n = self.len(what, self.buf.len())?;
        let b = self.take(n, what)?;
        String::from_utf8(b.to_vec()).map_err(|_| self.corrupt(format!("{what} is not UTF-8")))
    }

    /// Reads a length-prefixed byte slice that must have exactly `expect` bytes.
    pub fn bytes_into(&mut self, what: &str, out: &mut [u8]) -> Result<()> {
        let n = self.len(what, self.buf.len())?;
        if n != out.len() {
            return Err(self.corrupt(format!("{what} has {n} values, expected {}", out.len())));
        }
        out.copy_from_slice(self.take(n, what)?);
        Ok(())
    }

    /// Reads a length-prefixed `f32` slice that must have exactly `out.len()` values.
    pub fn f32s_into(&mut self, what: &str, out: &mut [f32]) -> Result<()> {
        let n = self.len(what, self.buf.len())?;
        if n != out.len() {
            return Err(self.corrupt(format!("{what} has {n} values, expected {}", out.len())));
        }
        let b = self.take(n * 4, what)?;
        for (x, c) in out.iter_mut().zip(b.chunks_exact(4)) {
            *x = f32::from_le_bytes(c.try_into().unwrap());
        }
        Ok(())
    }

    /// Reads a length-prefixed `f64` slice of at most `max` values.
    pub fn f64s(&mut self, what: &str, max: usize) -> Result<Vec<f64>> {
        let n = self.len(what, max)?;
        let b = self.take(n * 8, what)?;
        Ok(b.chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect())
    }
}
