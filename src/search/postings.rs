//! The inverted index of a corpus: for each term, the documents that hold it (ascending) and its
//! weighted frequency in each, so that ranking reads only the documents a query's terms are in
//! instead of every document's terms.
//!
//! Encoding: each term's list is a run of varints, per document the gap from the previous
//! document (the first: its index) and its weight, as `2 × half units` when the weight is a whole
//! number of halves (always, for kb's field weights), else `2 × f32 bits + 1`; an offset per term
//! (and one past the last) says where each run starts. Weights are exact, so scores equal the
//! ones a scan of every document gives.

use std::fs::File;
use std::io;

/// Builds the lists document by document, the documents in ascending order.
#[derive(Debug, Default)]
pub struct Builder {
    runs: Vec<Vec<u8>>,
    /// The last document added to each term's list, plus one (0: none yet).
    last: Vec<u32>,
}

impl Builder {
    /// A builder for `terms` terms.
    pub fn new(terms: usize) -> Builder {
        Builder { runs: vec![Vec::new(); terms], last: vec![0; terms] }
    }

    /// Adds `doc` holding `term` with `weight`; documents come in ascending order.
    pub fn add(&mut self, term: u32, doc: u32, weight: f32) {
        let t = term as usize;
        if t >= self.runs.len() {
            self.runs.resize(t + 1, Vec::new());
            self.last.resize(t + 1, 0);
        }
        let gap = doc + 1 - self.last[t].min(doc + 1);
        self.last[t] = doc + 1;
        let run = &mut self.runs[t];
        varint(run, u64::from(gap));
        let half = weight * 2.0;
        let code = if half.fract() == 0.0 && (0.0..1e9).contains(&half) {
            (half as u64) << 1
        } else {
            (u64::from(weight.to_bits()) << 1) | 1
        };
        varint(run, code);
    }

    /// Returns the lists: the offsets (one per term, and one past the last) and the runs.
    pub fn finish(self) -> Postings {
        let mut offsets = Vec::with_capacity(self.runs.len() + 1);
        let mut bytes = Vec::with_capacity(self.runs.iter().map(Vec::len).sum());
        for run in &self.runs {
            offsets.push(bytes.len() as u32);
            bytes.extend_from_slice(run);
        }
        offsets.push(bytes.len() as u32);
        Postings { offsets, bytes }
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn read_varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(v);
        }
    }
    None
}

/// Calls `f` with each document of a run and its weight; `None` when the run is damaged (a
/// document past `docs`, a bad varint).
pub fn decode(run: &[u8], docs: usize, mut f: impl FnMut(usize, f32)) -> Option<()> {
    let (mut at, mut next) = (0usize, 0u64);
    while at < run.len() {
        let gap = read_varint(run, &mut at)?;
        let code = read_varint(run, &mut at)?;
        let doc = (next + gap).checked_sub(1)?;
        next = doc + 1;
        if doc >= docs as u64 {
            return None;
        }
        let weight = match code & 1 {
            0 => (code >> 1) as f32 * 0.5,
            _ => f32::from_bits(u32::try_from(code >> 1).ok()?),
        };
        f(doc as usize, weight);
    }
    Some(())
}

/// The lists in memory.
#[derive(Debug, Default, Clone)]
pub struct Postings {
    pub offsets: Vec<u32>,
    pub bytes: Vec<u8>,
}

impl Postings {
    /// Returns the run of `term` (empty for a term past the lists).
    pub fn run(&self, term: usize) -> &[u8] {
        match (self.offsets.get(term), self.offsets.get(term + 1)) {
            (Some(&a), Some(&b)) => self.bytes.get(a as usize..b as usize).unwrap_or_default(),
            _ => &[],
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.offsets.capacity() * 4 + self.bytes.capacity()
    }
}

/// The lists still in the index file: read a term at a time as a query needs them.
#[derive(Debug)]
pub struct PostingsFile {
    pub file: File,
    /// Where the offsets start; the runs follow them.
    pub offsets_at: u64,
    pub terms: usize,
    pub bytes_len: u64,
}

impl PostingsFile {
    /// Reads the run of `term` into `out`.
    pub fn run(&self, term: usize, out: &mut Vec<u8>) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        out.clear();
        if term >= self.terms {
            return Ok(());
        }
        let mut pair = [0u8; 8];
        self.file.read_exact_at(&mut pair, self.offsets_at + term as u64 * 4)?;
        let a = u64::from(u32::from_le_bytes(pair[..4].try_into().unwrap_or_default()));
        let b = u64::from(u32::from_le_bytes(pair[4..].try_into().unwrap_or_default()));
        if a > b || b > self.bytes_len {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "a term's documents lie outside the index"));
        }
        out.resize((b - a) as usize, 0);
        let runs_at = self.offsets_at + (self.terms as u64 + 1) * 4;
        self.file.read_exact_at(out, runs_at + a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_round_trip_with_exact_weights_and_refuse_damage() {
        let mut b = Builder::new(2);
        b.add(0, 0, 1.0);
        b.add(1, 0, 2.5);
        b.add(0, 7, 0.5);
        b.add(0, 300, 1e10);
        b.add(1, 9, 0.1);
        let p = b.finish();
        let read = |t: usize| {
            let mut out = Vec::new();
            decode(p.run(t), 1000, |d, w| out.push((d, w))).unwrap();
            out
        };
        assert_eq!(read(0), [(0, 1.0), (7, 0.5), (300, 1e10)]);
        assert_eq!(read(1), [(0, 2.5), (9, 0.1)]);
        assert!(read(5).is_empty());
        assert!(decode(p.run(0), 300, |_, _| {}).is_none(), "a document past the corpus");
        assert!(decode(&[0x80], 10, |_, _| {}).is_none(), "a cut varint");
    }
}
