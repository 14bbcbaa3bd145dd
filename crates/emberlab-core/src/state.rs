//! Exact snapshots of running components (environments, trainers, learners' small state) as
//! a flat list of 64-bit words, so a run can stop and go on bit for bit.
//!
//! A [`StateWriter`] appends values (floats by their bits, so nothing is rounded); a
//! [`StateReader`] takes them back in the same order and names what it was reading when a
//! snapshot is short or malformed. [`save_words`] / [`load_words`] put a snapshot in a file
//! with a kind tag, its length and a CRC-32, written to a temporary file, synced and renamed
//! into place, so a reader never sees half a file.
//!
//! ```
//! use emberlab_core::state::{StateReader, StateWriter};
//!
//! let mut w = StateWriter::new();
//! w.f64(0.1).bool(true).f32s(&[1.5, -2.0]);
//! let words = w.into_words();
//! let mut r = StateReader::new(&words, "example");
//! assert_eq!(r.f64()?, 0.1);
//! assert!(r.bool()?);
//! assert_eq!(r.f32s(Some(2))?, vec![1.5, -2.0]);
//! r.finish()?;
//! # Ok::<(), emberlab_core::Error>(())
//! ```

use crate::error::{Error, Result};
use crate::rng::EmberRng;
use std::io::Write;
use std::path::Path;

/// Appends values to a snapshot.
#[derive(Clone, Debug, Default)]
pub struct StateWriter {
    words: Vec<u64>,
}

impl StateWriter {
    /// An empty snapshot.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a `u64`.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.words.push(v);
        self
    }

    /// Appends a `usize`.
    pub fn usize(&mut self, v: usize) -> &mut Self {
        self.u64(v as u64)
    }

    /// Appends an `f64` (its bits).
    pub fn f64(&mut self, v: f64) -> &mut Self {
        self.u64(v.to_bits())
    }

    /// Appends a `bool`.
    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.u64(u64::from(v))
    }

    /// Appends a generator's state.
    pub fn rng(&mut self, rng: &EmberRng) -> &mut Self {
        self.words.extend(rng.state());
        self
    }

    /// Appends a length and the bits of every value, two per word.
    pub fn f32s(&mut self, v: &[f32]) -> &mut Self {
        self.usize(v.len());
        for pair in v.chunks(2) {
            let lo = u64::from(pair[0].to_bits());
            let hi = pair.get(1).map_or(0, |x| u64::from(x.to_bits()));
            self.words.push(lo | (hi << 32));
        }
        self
    }

    /// Appends a length and the bits of every value.
    pub fn f64s(&mut self, v: &[f64]) -> &mut Self {
        self.usize(v.len());
        self.words.extend(v.iter().map(|x| x.to_bits()));
        self
    }

    /// Appends a length and every flag.
    pub fn bools(&mut self, v: &[bool]) -> &mut Self {
        self.usize(v.len());
        self.words.extend(v.iter().map(|&b| u64::from(b)));
        self
    }

    /// Appends a string (its length, then its UTF-8 bytes, eight per word).
    pub fn str(&mut self, v: &str) -> &mut Self {
        self.usize(v.len());
        for chunk in v.as_bytes().chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.words.push(u64::from_le_bytes(b));
        }
        self
    }

    /// Appends a length and the words of `other` (a nested snapshot).
    pub fn nested(&mut self, other: &[u64]) -> &mut Self {
        self.usize(other.len());
        self.words.extend_from_slice(other);
        self
    }

    /// The words written so far.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// The snapshot.
    pub fn into_words(self) -> Vec<u64> {
        self.words
    }
}

/// Takes values back from a snapshot, in the order they were written.
#[derive(Clone, Debug)]
pub struct StateReader<'a> {
    words: &'a [u64],
    pos: usize,
    what: String,
}

impl<'a> StateReader<'a> {
    /// Reads `words`, a snapshot of `what` (named in errors).
    pub fn new(words: &'a [u64], what: impl Into<String>) -> Self {
        StateReader {
            words,
            pos: 0,
            what: what.into(),
        }
    }

    fn malformed(&self, reason: impl std::fmt::Display) -> Error {
        Error::invalid(
            format!("snapshot of {}", self.what),
            format!("word {} of {}", self.pos, self.words.len()),
            reason.to_string(),
        )
    }

    /// The next `u64`.
    ///
    /// # Errors
    /// The snapshot ended.
    pub fn u64(&mut self) -> Result<u64> {
        let v = *self
            .words
            .get(self.pos)
            .ok_or_else(|| self.malformed("more words (the snapshot ended early)"))?;
        self.pos += 1;
        Ok(v)
    }

    /// The next `usize`.
    ///
    /// # Errors
    /// The snapshot ended or the value does not fit.
    pub fn usize(&mut self) -> Result<usize> {
        let v = self.u64()?;
        usize::try_from(v).map_err(|_| self.malformed(format!("a size, got {v}")))
    }

    /// The next `f64`.
    ///
    /// # Errors
    /// The snapshot ended.
    pub fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_bits(self.u64()?))
    }

    /// The next `bool`.
    ///
    /// # Errors
    /// The snapshot ended or the word is neither 0 nor 1.
    pub fn bool(&mut self) -> Result<bool> {
        match self.u64()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(self.malformed(format!("a flag (0 or 1), got {v}"))),
        }
    }

    /// The next generator state.
    ///
    /// # Errors
    /// The snapshot ended.
    pub fn rng(&mut self) -> Result<EmberRng> {
        Ok(EmberRng::from_state([
            self.u64()?,
            self.u64()?,
            self.u64()?,
            self.u64()?,
        ]))
    }

    fn len(&mut self, expected: Option<usize>) -> Result<usize> {
        let n = self.usize()?;
        if let Some(e) = expected
            && e != n
        {
            return Err(self.malformed(format!("{e} values, got {n}")));
        }
        if n > self.words.len() * 2 {
            return Err(self.malformed(format!("a length, got {n}")));
        }
        Ok(n)
    }

    /// The next `f32` list; with `expected`, its length must be that.
    ///
    /// # Errors
    /// The snapshot ended or the length differs.
    pub fn f32s(&mut self, expected: Option<usize>) -> Result<Vec<f32>> {
        let n = self.len(expected)?;
        let mut out = Vec::with_capacity(n);
        for i in 0..n.div_ceil(2) {
            let w = self.u64()?;
            out.push(f32::from_bits(w as u32));
            if 2 * i + 1 < n {
                out.push(f32::from_bits((w >> 32) as u32));
            }
        }
        Ok(out)
    }

    /// The next `f64` list; with `expected`, its length must be that.
    ///
    /// # Errors
    /// The snapshot ended or the length differs.
    pub fn f64s(&mut self, expected: Option<usize>) -> Result<Vec<f64>> {
        let n = self.len(expected)?;
        (0..n).map(|_| self.f64()).collect()
    }

    /// The next flag list; with `expected`, its length must be that.
    ///
    /// # Errors
    /// The snapshot ended, the length differs or a word is not a flag.
    pub fn bools(&mut self, expected: Option<usize>) -> Result<Vec<bool>> {
        let n = self.len(expected)?;
        (0..n).map(|_| self.bool()).collect()
    }

    /// The next string.
    ///
    /// # Errors
    /// The snapshot ended or the bytes are not UTF-8.
    pub fn string(&mut self) -> Result<String> {
        let n = self.len(None)?;
        let mut bytes = Vec::with_capacity(n);
        for _ in 0..n.div_ceil(8) {
            bytes.extend(self.u64()?.to_le_bytes());
        }
        bytes.truncate(n);
        String::from_utf8(bytes).map_err(|_| self.malformed("UTF-8 text"))
    }

    /// The next nested snapshot (see [`StateWriter::nested`]).
    ///
    /// # Errors
    /// The snapshot ended.
    pub fn nested(&mut self) -> Result<&'a [u64]> {
        let n = self.usize()?;
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.words.len())
            .ok_or_else(|| self.malformed(format!("{n} nested words")))?;
        let out = &self.words[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    /// Whether every word has been read: lets a reader accept snapshots written before
    /// fields were appended at their end.
    pub fn at_end(&self) -> bool {
        self.pos >= self.words.len()
    }

    /// Checks that every word was read.
    ///
    /// # Errors
    /// Words are left over (the snapshot is of something else).
    pub fn finish(&self) -> Result<()> {
        if self.pos == self.words.len() {
            Ok(())
        } else {
            Err(self.malformed(format!(
                "its end, but {} words are left",
                self.words.len() - self.pos
            )))
        }
    }
}

const MAGIC: &[u8; 8] = b"EMBERSTA";

/// Writes `words` to `path` tagged with `kind`: magic, kind, length, CRC-32, words. The file
/// is written beside `path`, synced, then renamed onto it.
///
/// # Errors
/// An I/O error (the previous file at `path`, if any, is then left as it was).
pub fn save_words(path: &Path, kind: &str, words: &[u64]) -> Result<()> {
    let mut bytes = Vec::with_capacity(32 + kind.len() + words.len() * 8);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&(kind.len() as u64).to_le_bytes());
    bytes.extend_from_slice(kind.as_bytes());
    bytes.extend_from_slice(&(words.len() as u64).to_le_bytes());
    for w in words {
        bytes.extend_from_slice(&w.to_le_bytes());
    }
    let crc = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    let mut file = std::fs::File::create(&tmp).map_err(Error::io_at(&tmp))?;
    file.write_all(&bytes).map_err(Error::io_at(&tmp))?;
    file.sync_all().map_err(Error::io_at(&tmp))?;
    std::fs::rename(&tmp, path).map_err(Error::io_at(path))
}

/// Reads a snapshot [`save_words`] wrote with the same `kind`.
///
/// # Errors
/// [`Error::Io`] if the file cannot be read; [`Error::Corrupt`] if it is truncated, of
/// another kind, or fails its checksum.
pub fn load_words(path: &Path, kind: &str) -> Result<Vec<u64>> {
    let bytes = std::fs::read(path).map_err(Error::io_at(path))?;
    let corrupt = |reason: String| Error::Corrupt {
        path: path.to_path_buf(),
        kind: format!("{kind} snapshot"),
        reason,
    };
    if bytes.len() < 28 || &bytes[..8] != MAGIC {
        return Err(corrupt(
            "no snapshot header (truncated or another file)".into(),
        ));
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes(crc.try_into().expect("4 bytes"));
    if crc32fast::hash(body) != stored {
        return Err(corrupt("checksum mismatch (the file is damaged)".into()));
    }
    let word = |at: usize| -> Option<u64> {
        body.get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
    };
    let klen = word(8).ok_or_else(|| corrupt("short header".into()))? as usize;
    let got = body.get(16..16 + klen).unwrap_or_default();
    if got != kind.as_bytes() {
        return Err(corrupt(format!(
            "it holds a `{}` snapshot",
            String::from_utf8_lossy(got)
        )));
    }
    let n = word(16 + klen).ok_or_else(|| corrupt("short header".into()))? as usize;
    let start = 24 + klen;
    if body.len() != start + n * 8 {
        return Err(corrupt(format!(
            "{} bytes of words for {n} words",
            body.len().saturating_sub(start)
        )));
    }
    Ok(body[start..]
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_exactly() {
        let mut rng = EmberRng::seed_from(3);
        rng.next_u64();
        let mut w = StateWriter::new();
        w.u64(u64::MAX)
            .f64(-0.0)
            .f64(f64::MIN_POSITIVE / 4.0)
            .bool(false)
            .rng(&rng)
            .f32s(&[1.0, f32::NAN, -3.5])
            .f64s(&[2.5])
            .bools(&[true, false])
            .str("critic_loss·9")
            .nested(&[7, 8]);
        let words = w.into_words();
        let mut r = StateReader::new(&words, "test");
        assert_eq!(r.u64().unwrap(), u64::MAX);
        assert_eq!(r.f64().unwrap().to_bits(), (-0.0f64).to_bits());
        assert_eq!(r.f64().unwrap(), f64::MIN_POSITIVE / 4.0);
        assert!(!r.bool().unwrap());
        assert_eq!(r.rng().unwrap().state(), rng.state());
        let f = r.f32s(Some(3)).unwrap();
        assert_eq!((f[0], f[2]), (1.0, -3.5));
        assert!(f[1].is_nan());
        assert_eq!(r.f64s(None).unwrap(), vec![2.5]);
        assert_eq!(r.bools(Some(2)).unwrap(), vec![true, false]);
        assert_eq!(r.string().unwrap(), "critic_loss·9");
        assert_eq!(r.nested().unwrap(), &[7, 8]);
        r.finish().unwrap();
    }

    #[test]
    fn short_or_foreign_snapshots_are_errors() {
        let mut w = StateWriter::new();
        w.f32s(&[1.0, 2.0]).u64(2);
        let words = w.into_words();
        let e = StateReader::new(&words, "thing")
            .f32s(Some(3))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("snapshot of thing") && e.contains("3 values"),
            "{e}"
        );
        let mut r = StateReader::new(&words, "thing");
        r.f32s(None).unwrap();
        assert!(r.bool().is_err(), "2 is not a flag");
        let mut r = StateReader::new(&words[..1], "thing");
        assert!(r.f32s(None).is_err(), "ends early");
        let r = StateReader::new(&words, "thing");
        assert!(r.finish().unwrap_err().to_string().contains("left"));
    }

    #[test]
    fn files_are_checked() {
        let dir = std::env::temp_dir().join(format!("ember-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.bin");
        save_words(&path, "env", &[1, 2, 3]).unwrap();
        assert_eq!(load_words(&path, "env").unwrap(), vec![1, 2, 3]);
        let e = load_words(&path, "trainer").unwrap_err().to_string();
        assert!(e.contains("`env` snapshot"), "{e}");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[30] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(
            load_words(&path, "env")
                .unwrap_err()
                .to_string()
                .contains("checksum")
        );
        std::fs::write(&path, &bytes[..20]).unwrap();
        assert!(load_words(&path, "env").is_err());
        assert!(matches!(
            load_words(&dir.join("none"), "env"),
            Err(Error::Io { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
