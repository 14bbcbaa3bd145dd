//! Files written and read as a stream: a buffered writer computing the CRC-32 on the way
//! and a reader filling preallocated memory with `read_exact`, so that saving or loading
//! gigabytes of frames never holds a second copy of them (the in-memory
//! [`crate::codec`] would).
//!
//! Layout: `magic (8) | version (u64) | body | body length (u64) | CRC-32 of the body
//! (u64)`; all numbers little-endian. The reader knows the body's length from the file's
//! size before reading it ([`StreamReader::left`]), so a reader can refuse sizes the file
//! cannot hold before allocating for them.

use emberlab_core::{Error, Result};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// magic and version.
const HEAD: u64 = 16;
/// body length and checksum.
const TRAILER: u64 = 16;
/// Elements converted per chunk when writing or reading number slices.
const CHUNK: usize = 1 << 14;

/// Writes a file through a temporary beside it, renamed over the target once complete.
pub(crate) struct StreamWriter {
    out: BufWriter<File>,
    crc: crc32fast::Hasher,
    len: u64,
    tmp: PathBuf,
    path: PathBuf,
    scratch: Vec<u8>,
}

impl StreamWriter {
    /// Starts `path` (through `path` with the extension `tmp`) with `magic` and `version`.
    pub(crate) fn create(path: &Path, magic: &[u8; 8], version: u64) -> Result<Self> {
        let tmp = path.with_extension("tmp");
        let file = File::create(&tmp).map_err(Error::io_at(&tmp))?;
        let mut w = StreamWriter {
            out: BufWriter::with_capacity(1 << 20, file),
            crc: crc32fast::Hasher::new(),
            len: 0,
            tmp,
            path: path.to_path_buf(),
            scratch: Vec::new(),
        };
        w.raw(magic)?;
        w.raw(&version.to_le_bytes())?;
        Ok(w)
    }

    fn raw(&mut self, b: &[u8]) -> Result<()> {
        self.out.write_all(b).map_err(Error::io_at(&self.tmp))
    }

    /// Writes bytes of the body.
    pub(crate) fn bytes(&mut self, b: &[u8]) -> Result<()> {
        self.crc.update(b);
        self.len += b.len() as u64;
        self.raw(b)
    }

    /// Writes a `u64`.
    pub(crate) fn u64(&mut self, v: u64) -> Result<()> {
        self.bytes(&v.to_le_bytes())
    }

    /// Writes an `f64`.
    pub(crate) fn f64(&mut self, v: f64) -> Result<()> {
        self.bytes(&v.to_le_bytes())
    }

    /// Writes a length-prefixed block of bytes.
    pub(crate) fn block(&mut self, b: &[u8]) -> Result<()> {
        self.u64(b.len() as u64)?;
        self.bytes(b)
    }

    /// Writes `f32`s.
    pub(crate) fn f32s(&mut self, v: &[f32]) -> Result<()> {
        self.numbers(v, |x, out| out.extend_from_slice(&x.to_le_bytes()))
    }

    /// Writes `u32`s.
    pub(crate) fn u32s(&mut self, v: &[u32]) -> Result<()> {
        self.numbers(v, |x, out| out.extend_from_slice(&x.to_le_bytes()))
    }

    fn numbers<T: Copy>(&mut self, v: &[T], put: impl Fn(T, &mut Vec<u8>)) -> Result<()> {
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut r = Ok(());
        for chunk in v.chunks(CHUNK) {
            scratch.clear();
            for &x in chunk {
                put(x, &mut scratch);
            }
            r = self.bytes(&scratch);
            if r.is_err() {
                break;
            }
        }
        self.scratch = scratch;
        r
    }

    /// Writes the trailer, flushes to disk and renames the file into place.
    pub(crate) fn finish(mut self) -> Result<()> {
        let (len, crc) = (self.len, self.crc.clone().finalize() as u64);
        self.raw(&len.to_le_bytes())?;
        self.raw(&crc.to_le_bytes())?;
        self.out.flush().map_err(Error::io_at(&self.tmp))?;
        self.out
            .get_ref()
            .sync_all()
            .map_err(Error::io_at(&self.tmp))?;
        std::fs::rename(&self.tmp, &self.path).map_err(Error::io_at(&self.path))
    }
}

/// Reads a file written by [`StreamWriter`], checking the checksum at the end.
pub(crate) struct StreamReader {
    inp: BufReader<File>,
    crc: crc32fast::Hasher,
    /// Body bytes not read yet.
    left: u64,
    /// Body bytes in the file.
    body: u64,
    path: PathBuf,
    kind: &'static str,
    scratch: Vec<u8>,
}

impl StreamReader {
    /// Opens `path`, a `kind` file that must start with `magic` and a version in
    /// `versions`; returns the reader and the version.
    pub(crate) fn open(
        path: &Path,
        kind: &'static str,
        magic: &[u8; 8],
        versions: std::ops::RangeInclusive<u64>,
    ) -> Result<(Self, u64)> {
        let file = File::open(path).map_err(Error::io_at(path))?;
        let size = file.metadata().map_err(Error::io_at(path))?.len();
        let mut r = StreamReader {
            inp: BufReader::with_capacity(1 << 20, file),
            crc: crc32fast::Hasher::new(),
            left: 0,
            body: 0,
            path: path.to_path_buf(),
            kind,
            scratch: Vec::new(),
        };
        let mut head = [0u8; HEAD as usize];
        let got = r.inp.read_exact(&mut head[..(size.min(HEAD) as usize)]);
        if got.is_err() || size < 8 || &head[..8] != magic {
            return Err(r.corrupt(format!("missing the Ember {kind} signature")));
        }
        if size < HEAD + TRAILER {
            return Err(r.corrupt(format!(
                "truncated: {size} bytes, less than a header and a trailer"
            )));
        }
        let version = u64::from_le_bytes(head[8..].try_into().expect("8 bytes"));
        if !versions.contains(&version) {
            return Err(r.corrupt(format!(
                "format version {version}, this build reads {} to {}",
                versions.start(),
                versions.end()
            )));
        }
        r.body = size - HEAD - TRAILER;
        r.left = r.body;
        Ok((r, version))
    }

    /// Body bytes not read yet.
    pub(crate) fn left(&self) -> u64 {
        self.left
    }

    /// The file read.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The kind of file expected.
    pub(crate) fn kind(&self) -> &'static str {
        self.kind
    }

    /// An [`Error::Corrupt`] for this file.
    pub(crate) fn corrupt(&self, reason: impl Into<String>) -> Error {
        Error::Corrupt {
            path: self.path.clone(),
            kind: self.kind.to_string(),
            reason: reason.into(),
        }
    }

    /// Fills `out` with the next body bytes.
    pub(crate) fn bytes_into(&mut self, what: &str, out: &mut [u8]) -> Result<()> {
        if (out.len() as u64) > self.left {
            return Err(self.corrupt(format!(
                "truncated: {what} needs {} bytes, {} are left",
                out.len(),
                self.left
            )));
        }
        self.inp.read_exact(out).map_err(Error::io_at(&self.path))?;
        self.crc.update(out);
        self.left -= out.len() as u64;
        Ok(())
    }

    /// Reads a `u64`.
    pub(crate) fn u64(&mut self, what: &str) -> Result<u64> {
        let mut b = [0u8; 8];
        self.bytes_into(what, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Reads an `f64`.
    pub(crate) fn f64(&mut self, what: &str) -> Result<f64> {
        Ok(f64::from_bits(self.u64(what)?))
    }

    /// Reads a `u64` that must be at most `max`.
    pub(crate) fn len(&mut self, what: &str, max: u64) -> Result<usize> {
        let v = self.u64(what)?;
        if v > max {
            return Err(self.corrupt(format!("{what} = {v} exceeds {max}")));
        }
        Ok(v as usize)
    }

    /// Reads a block written by [`StreamWriter::block`], of at most `max` bytes.
    pub(crate) fn block(&mut self, what: &str, max: u64) -> Result<Vec<u8>> {
        let n = self.len(what, max.min(self.left.saturating_sub(8)))?;
        let mut v = vec![0u8; n];
        self.bytes_into(what, &mut v)?;
        Ok(v)
    }

    /// Fills `out` with `f32`s.
    pub(crate) fn f32s_into(&mut self, what: &str, out: &mut [f32]) -> Result<()> {
        self.numbers_into(what, out, |b| f32::from_le_bytes(b.try_into().expect("4")))
    }

    /// Fills `out` with `u32`s.
    pub(crate) fn u32s_into(&mut self, what: &str, out: &mut [u32]) -> Result<()> {
        self.numbers_into(what, out, |b| u32::from_le_bytes(b.try_into().expect("4")))
    }

    fn numbers_into<T>(
        &mut self,
        what: &str,
        out: &mut [T],
        get: impl Fn(&[u8]) -> T,
    ) -> Result<()> {
        let size = std::mem::size_of::<T>();
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut r = Ok(());
        for chunk in out.chunks_mut(CHUNK) {
            scratch.resize(std::mem::size_of_val(chunk), 0);
            r = self.bytes_into(what, &mut scratch);
            if r.is_err() {
                break;
            }
            for (x, b) in chunk.iter_mut().zip(scratch.chunks_exact(size)) {
                *x = get(b);
            }
        }
        self.scratch = scratch;
        r
    }

    /// Checks that the body was read to its end and matches the trailer's length and
    /// checksum.
    pub(crate) fn finish(mut self) -> Result<()> {
        if self.left != 0 {
            return Err(self.corrupt(format!("{} trailing bytes after the data", self.left)));
        }
        let mut t = [0u8; TRAILER as usize];
        self.inp
            .read_exact(&mut t)
            .map_err(Error::io_at(&self.path))?;
        let len = u64::from_le_bytes(t[..8].try_into().expect("8"));
        let crc = u64::from_le_bytes(t[8..].try_into().expect("8"));
        if len != self.body {
            return Err(self.corrupt(format!(
                "the trailer promises {len} bytes of data, the file holds {}",
                self.body
            )));
        }
        if self.crc.clone().finalize() as u64 != crc {
            return Err(self.corrupt("checksum mismatch: the data is corrupted"));
        }
        Ok(())
    }
}
