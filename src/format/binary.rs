//! The little-endian binary encoding of kb's derived caches (`.co-cli/cache/`): a reader that
//! fails instead of panicking on a short or corrupt file, and a writer that checksums what passes
//! through it (xxh3, appended by the caller), so that a cache is used only when intact.

use std::io::{self, Write};
use xxhash_rust::xxh3::Xxh3;

/// A little-endian reader over a byte slice that fails instead of panicking.
pub struct Reader<'a> {
    pub b: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.b.len() < n {
            return None;
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Some(head)
    }
    pub fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    pub fn u32(&mut self) -> Option<u32> {
        self.take(4).and_then(|b| b.try_into().ok()).map(u32::from_le_bytes)
    }
    pub fn u64(&mut self) -> Option<u64> {
        self.take(8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes)
    }
    pub fn i64(&mut self) -> Option<i64> {
        self.u64().map(|v| v as i64)
    }
    /// A length (u32) and that many bytes of UTF-8.
    pub fn str(&mut self) -> Option<&'a str> {
        let len = self.u32()? as usize;
        std::str::from_utf8(self.take(len)?).ok()
    }
}

/// A writer that checksums what passes through it. Small writes (a cache writes its numbers one
/// at a time, or a run of them with [`Checksummed::put_u32s`]) gather in a buffer, hashed and
/// passed on in large pieces.
pub struct Checksummed<W: Write> {
    inner: W,
    hasher: Xxh3,
    buf: Vec<u8>,
}

/// What [`Checksummed`] gathers before it hashes and writes.
const CHECKSUMMED_BUFFER: usize = 1 << 16;

impl<W: Write> Checksummed<W> {
    pub fn new(inner: W) -> Self {
        Checksummed { inner, hasher: Xxh3::new(), buf: Vec::with_capacity(CHECKSUMMED_BUFFER) }
    }

    /// Writes a length (u32) and the bytes of `s`; `s` must be shorter than 4 GiB.
    pub fn put_str(&mut self, s: &str) -> io::Result<()> {
        let len = u32::try_from(s.len()).map_err(|_| io::Error::other("string too long for a cache"))?;
        self.write_all(&len.to_le_bytes())?;
        self.write_all(s.as_bytes())
    }

    /// Writes each of `values` as four little-endian bytes, straight into the buffer: a
    /// `write_all` per number costs more than its bytes (2 million slots in the recall index of
    /// 100,000 memories).
    pub fn put_u32s(&mut self, values: impl IntoIterator<Item = u32>) -> io::Result<()> {
        for v in values {
            if self.buf.len() + 4 > CHECKSUMMED_BUFFER {
                self.drain()?;
            }
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
        Ok(())
    }

    /// Hashes and writes what the buffer holds.
    fn drain(&mut self) -> io::Result<()> {
        self.hasher.update(&self.buf);
        let written = self.inner.write_all(&self.buf);
        self.buf.clear();
        written
    }

    /// Writes the checksum of everything written so far, and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.drain()?;
        let sum = self.hasher.digest().to_le_bytes();
        self.inner.write_all(&sum)?;
        Ok(self.inner)
    }

    /// Writes out everything written so far and returns its 128-bit hash (no checksum written).
    pub fn digest128(mut self) -> io::Result<u128> {
        self.drain()?;
        Ok(self.hasher.digest128())
    }
}

impl<W: Write> Write for Checksummed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.buf.len() + buf.len() > CHECKSUMMED_BUFFER {
            self.drain()?;
        }
        if buf.len() >= CHECKSUMMED_BUFFER {
            self.hasher.update(buf);
            self.inner.write_all(buf)?;
        } else {
            self.buf.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.drain()?;
        self.inner.flush()
    }
}

/// Splits `bytes` into the content and its trailing checksum; `None` when the checksum does not
/// match (or the buffer is too short to hold one).
pub fn verified(bytes: &[u8]) -> Option<&[u8]> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(8)?)?;
    (xxhash_rust::xxh3::xxh3_64(body).to_le_bytes() == sum).then_some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_of_any_size_are_hashed_and_passed_on_in_order() {
        let big = vec![7u8; CHECKSUMMED_BUFFER + 3];
        let mut w = Checksummed::new(Vec::new());
        let mut all = Vec::new();
        for part in [&b"ab"[..], &big, b"c", &big[..CHECKSUMMED_BUFFER - 1], b"de"] {
            w.write_all(part).unwrap();
            all.extend_from_slice(part);
        }
        // A run of numbers past the buffer's size, after a write that left it nearly full.
        let numbers: Vec<u32> = (0..(CHECKSUMMED_BUFFER as u32 / 2)).map(|n| n.wrapping_mul(2_654_435_761)).collect();
        w.put_u32s(numbers.iter().copied()).unwrap();
        all.extend(numbers.iter().flat_map(|n| n.to_le_bytes()));
        let bytes = w.finish().unwrap();
        assert_eq!(verified(&bytes), Some(&all[..]));
    }

    #[test]
    fn round_trip_and_corruption() {
        let mut w = Checksummed::new(Vec::new());
        w.write_all(&7u32.to_le_bytes()).unwrap();
        w.put_str("héllo").unwrap();
        let bytes = w.finish().unwrap();
        let body = verified(&bytes).unwrap();
        let mut r = Reader { b: body };
        assert_eq!((r.u32(), r.str(), r.u8()), (Some(7), Some("héllo"), None));
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 1;
            assert!(verified(&bad).is_none(), "a flipped bit at {i} goes unnoticed");
        }
        assert!(verified(&bytes[..5]).is_none());
    }
}
