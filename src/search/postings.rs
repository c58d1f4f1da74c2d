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

use super::packed::Slots;

/// Builds the lists of `terms` terms: `each` calls its argument with every document (ascending)
/// and its slots. A term past `terms` is left out.
pub fn build<E>(
    terms: usize,
    each: impl FnMut(&mut dyn FnMut(u32, Slots<'_>)) -> Result<(), E>,
) -> Result<Postings, E> {
    let mut lists = Postings::default();
    build_in_parts(terms, usize::MAX, each, |piece| {
        match piece {
            Piece::Offsets(offsets) => lists.offsets = offsets,
            Piece::Bytes(bytes) if lists.bytes.is_empty() => lists.bytes = bytes,
            Piece::Bytes(bytes) => lists.bytes.extend_from_slice(&bytes),
        }
        Ok(())
    })?;
    Ok(lists)
}

/// What [`build_in_parts`] hands on: the offsets first, then the runs' bytes in pieces that follow
/// each other.
pub enum Piece {
    /// Where each term's run starts, and one past the last.
    Offsets(Vec<u32>),
    Bytes(Vec<u8>),
}

/// Builds the lists as [`build`] does and hands them to `emit` a range of terms at a time, each
/// range's runs at most about `part_bytes` long (a term's run is never cut), so that a writer
/// holds a part of the lists, never all of them. `each` is called once to size every term's run,
/// then once per range to fill its runs in place: each range is built in one buffer of its exact
/// size (no run per term grown apart, then copied). A document costs one call per pass; its slots
/// are read here, a weight decoded only for a term in the range.
pub fn build_in_parts<E>(
    terms: usize,
    part_bytes: usize,
    mut each: impl FnMut(&mut dyn FnMut(u32, Slots<'_>)) -> Result<(), E>,
    mut emit: impl FnMut(Piece) -> Result<(), E>,
) -> Result<(), E> {
    let mut last = vec![0u32; terms];
    let mut sizes = vec![0u32; terms + 1];
    each(&mut |doc, slots| {
        in_range(slots, 0..terms as u32, |term, code| {
            let gap = gap(&mut last[term as usize], doc);
            sizes[term as usize] += (varint_len(gap) + varint_len(code)) as u32;
        })
    })?;
    drop(last);
    // Offsets from the sizes, in place: `sizes[t]` becomes where term `t`'s run starts.
    let mut at = 0u32;
    for size in sizes.iter_mut() {
        let len = *size;
        *size = at;
        at += len;
    }
    let offsets = sizes;
    emit(Piece::Offsets(offsets.clone()))?;
    let mut from = 0;
    while from < terms {
        // The range: terms from `from` while their runs fit in a part (at least one term).
        let base = offsets[from];
        let mut to = from + 1;
        while to < terms && (offsets[to + 1] - base) as usize <= part_bytes {
            to += 1;
        }
        let lo = from as u32;
        let mut cursor: Vec<u32> = offsets[from..to].iter().map(|&o| o - base).collect();
        let mut last = vec![0u32; to - from];
        let mut bytes = vec![0u8; (offsets[to] - base) as usize];
        each(&mut |doc, slots| {
            in_range(slots, lo..to as u32, |term, code| {
                let t = (term - lo) as usize;
                let gap = gap(&mut last[t], doc);
                let (c, end) = (&mut cursor[t], (offsets[term as usize + 1] - base) as usize);
                // Always room, for `each` calls with the same documents each time; never a
                // write past the run.
                if *c as usize + varint_len(gap) + varint_len(code) <= end {
                    for v in [gap, code] {
                        *c += put_varint(&mut bytes[*c as usize..], v) as u32;
                    }
                }
            })
        })?;
        emit(Piece::Bytes(bytes))?;
        from = to;
    }
    Ok(())
}

/// Calls `f` with each term of `slots` within `range` and its weight's code.
#[inline]
fn in_range(slots: Slots<'_>, range: std::ops::Range<u32>, mut f: impl FnMut(u32, u64)) {
    let mut wide = 0;
    for &slot in slots.terms {
        let term = Slots::term(slot);
        if range.contains(&term) {
            let code = match Slots::half_units(slot) {
                0 => weight_code(slots.weight(slot, wide)),
                half => u64::from(half) << 1,
            };
            f(term, code);
        }
        wide += usize::from(Slots::is_wide(slot));
    }
}

/// The gap of `doc` in a run whose last document, plus one, is `*last`.
fn gap(last: &mut u32, doc: u32) -> u64 {
    let gap = doc + 1 - (*last).min(doc + 1);
    *last = doc + 1;
    u64::from(gap)
}

/// A weight's code: `2 × half units` for a whole number of halves, else `2 × f32 bits + 1`.
fn weight_code(weight: f32) -> u64 {
    let half = weight * 2.0;
    if half.fract() == 0.0 && (0.0..1e9).contains(&half) {
        (half as u64) << 1
    } else {
        (u64::from(weight.to_bits()) << 1) | 1
    }
}

fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Writes `v` as a varint at the start of `out` (long enough: sized by [`varint_len`]) and
/// returns its length.
fn put_varint(out: &mut [u8], mut v: u64) -> usize {
    let mut n = 0;
    while v >= 0x80 {
        out[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    out[n] = v as u8;
    n + 1
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
        // Documents and their (term, weight) pairs; 1e10 and 0.1 do not fit in a slot.
        let docs: [(u32, &[(u32, f32)]); 4] =
            [(0, &[(0, 1.0), (1, 2.5)]), (7, &[(0, 0.5)]), (9, &[(1, 0.1), (2, 3.0)]), (300, &[(0, 1e10)])];
        let p = build(2, |add| {
            for &(d, pairs) in &docs {
                let mut slots = Vec::new();
                let terms = super::super::packed::push(&mut slots, pairs);
                add(d, Slots::new(&slots, terms));
            }
            Ok::<(), ()>(())
        })
        .unwrap();
        for v in [0, 1, 127, 128, 16383, 16384, u64::from(u32::MAX), u64::MAX] {
            let mut buf = [0u8; 10];
            let n = put_varint(&mut buf, v);
            assert_eq!(n, varint_len(v), "{v}");
            assert_eq!(read_varint(&buf, &mut 0), Some(v));
        }
        let read = |t: usize| {
            let mut out = Vec::new();
            decode(p.run(t), 1000, |d, w| out.push((d, w))).unwrap();
            out
        };
        assert_eq!(read(0), [(0, 1.0), (7, 0.5), (300, 1e10)]);
        assert_eq!(read(1), [(0, 2.5), (9, 0.1)]);
        assert!(read(5).is_empty());
        assert!(read(2).is_empty(), "a term past the count is left out");
        assert!(decode(p.run(0), 300, |_, _| {}).is_none(), "a document past the corpus");
        assert!(decode(&[0x80], 10, |_, _| {}).is_none(), "a cut varint");
    }

    #[test]
    fn lists_built_in_parts_are_the_lists_built_whole() {
        // 40 terms over 500 documents, term t in every document divisible by t + 1.
        let each = |add: &mut dyn FnMut(u32, Slots<'_>)| {
            for d in 0..500u32 {
                let pairs: Vec<(u32, f32)> =
                    (0..40u32).filter(|t| d % (t + 1) == 0).map(|t| (t, 0.5 + (d % 3) as f32)).collect();
                let mut slots = Vec::new();
                let terms = super::super::packed::push(&mut slots, &pairs);
                add(d, Slots::new(&slots, terms));
            }
            Ok::<(), ()>(())
        };
        let whole = build(40, each).unwrap();
        let longest = (0..40).map(|t| whole.run(t).len()).max().unwrap();
        for part in [1, 7, 100, 1000, usize::MAX] {
            let (mut offsets, mut bytes, mut pieces) = (Vec::new(), Vec::new(), 0);
            build_in_parts(40, part, each, |piece| {
                match piece {
                    Piece::Offsets(o) => offsets = o,
                    Piece::Bytes(b) => {
                        assert!(b.len() <= part.max(longest), "a part past its size");
                        bytes.extend(b);
                    }
                }
                pieces += 1;
                Ok(())
            })
            .unwrap();
            assert_eq!((&offsets, &bytes), (&whole.offsets, &whole.bytes), "parts of {part} bytes");
            assert!(part > whole.bytes.len() || pieces > 2, "parts of {part} bytes: {pieces} pieces");
        }
    }
}
