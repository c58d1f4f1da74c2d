//! A document's terms, packed: one `u32` slot per term, the term id in the low 28 bits and its
//! weighted frequency in half units (1..=15, that is 0.5 to 7.5) in the high 4. Weights are sums
//! of the field weights (1, 2, 0.5), so nearly every term fits; one that does not (code 0) finds
//! its weight, as `f32` bits, after the document's term slots, in the order of those terms. Half
//! the size of a plain `(u32, f32)` pair, exact (a score never changes), and read at a fixed
//! stride: ranking scans every slot, and a stride that depended on each slot would chain the
//! loads.

/// A slot names term ids below 2^28. A term past that (a vocabulary of 268 million words) is not
/// indexed: the arena of its words alone would pass what an index can hold.
const TERM_BITS: u32 = 28;
const TERM_MASK: u32 = (1 << TERM_BITS) - 1;

/// Appends a document's `pairs` (term id, weight; a term once) to `slots`: its term slots, then
/// the weights that did not fit. Returns how many term slots it appended.
pub fn push(slots: &mut Vec<u32>, pairs: &[(u32, f32)]) -> usize {
    let start = slots.len();
    let mut wide = Vec::new();
    for &(term, weight) in pairs.iter().filter(|(t, _)| *t <= TERM_MASK) {
        let half = weight * 2.0;
        if (1.0..=15.0).contains(&half) && half.fract() == 0.0 {
            slots.push(((half as u32) << TERM_BITS) | term);
        } else {
            slots.push(term);
            wide.push(weight.to_bits());
        }
    }
    let terms = slots.len() - start;
    slots.extend(wide);
    terms
}

/// One document's slots: its term slots, then the weights that did not fit in them.
#[derive(Debug, Clone, Copy)]
pub struct Slots<'a> {
    pub terms: &'a [u32],
    pub wide: &'a [u32],
}

impl<'a> Slots<'a> {
    /// Splits a document's slots after its `terms` term slots.
    pub fn new(slots: &'a [u32], terms: usize) -> Slots<'a> {
        let (terms, wide) = slots.split_at(terms.min(slots.len()));
        Slots { terms, wide }
    }

    /// Returns the term a slot names.
    #[inline]
    pub fn term(slot: u32) -> u32 {
        slot & TERM_MASK
    }

    /// Returns a slot's weight in half units; 0 when it lies in [`Slots::wide`].
    #[inline]
    pub fn half_units(slot: u32) -> u32 {
        slot >> TERM_BITS
    }

    /// Returns whether a slot's weight lies in [`Slots::wide`].
    #[inline]
    pub fn is_wide(slot: u32) -> bool {
        Slots::half_units(slot) == 0
    }

    /// Returns the weight of `slot`, the document's `wide`-th slot whose weight did not fit (those
    /// before it counted). A weight missing from a damaged file reads as 0.
    #[inline]
    pub fn weight(&self, slot: u32, wide: usize) -> f32 {
        match Slots::half_units(slot) {
            0 => self.wide.get(wide).map_or(0.0, |&w| f32::from_bits(w)),
            code => code as f32 * 0.5,
        }
    }

    /// Returns the pairs: (term id, weight).
    pub fn pairs(self) -> impl Iterator<Item = (u32, f32)> + 'a {
        let mut wide = 0;
        self.terms.iter().map(move |&s| {
            let w = self.weight(s, wide);
            wide += usize::from(Slots::is_wide(s));
            (Slots::term(s), w)
        })
    }

    /// Returns whether the slots name terms below `terms` only, and hold exactly one finite,
    /// non-negative weight for each term slot whose weight did not fit: what a file must hold
    /// before its slots are used.
    pub fn valid(&self, terms: usize) -> bool {
        self.terms.iter().all(|&s| (Slots::term(s) as usize) < terms)
            && self.terms.iter().filter(|&&s| Slots::is_wide(s)).count() == self.wide.len()
            && self.wide.iter().all(|&w| {
                let w = f32::from_bits(w);
                w.is_finite() && w >= 0.0
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_round_trip_exactly_in_one_slot_each_plus_the_wide_weights() {
        let pairs = [(0, 1.0), (7, 0.5), (TERM_MASK, 7.5), (3, 8.0), (4, 0.25), (5, 2.0), (6, 1e6), (9, 0.0)];
        let mut slots = vec![42];
        let terms = push(&mut slots, &pairs);
        assert_eq!(terms, pairs.len());
        // Four weights did not fit: 8.0, 0.25, 1e6 and 0.0.
        assert_eq!(slots.len(), 1 + pairs.len() + 4);
        let doc = Slots::new(&slots[1..], terms);
        assert_eq!(doc.pairs().collect::<Vec<_>>(), pairs);
        assert!(doc.valid(TERM_MASK as usize + 1));
        assert!(!doc.valid(10), "a term past the vocabulary");
        assert!(!Slots::new(&slots[1..slots.len() - 1], terms).valid(TERM_MASK as usize + 1), "a weight missing");
        let mut nan = Vec::new();
        let terms = push(&mut nan, &[(1, f32::NAN)]);
        assert!(!Slots::new(&nan, terms).valid(2), "a weight that is not a number");
        let mut none = Vec::new();
        assert_eq!(push(&mut none, &[(TERM_MASK + 1, 1.0)]), 0, "a term id past the limit is left out, not wrapped");
        assert!(none.is_empty());
    }
}
