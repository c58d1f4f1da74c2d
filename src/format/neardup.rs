//! Near-duplicate groups among many texts (for `kb consolidate`), by the dedup scorer
//! (`similarity`) and a threshold, without scoring most pairs.
//!
//! Grouping: the texts come oldest first; each text not yet in a group starts one with every
//! later text not yet in a group that scores at least the threshold against it. So every member
//! is a near-duplicate of its group's first (oldest) text, and chains (A like B, B like C, A unlike
//! C) never merge A and C.
//!
//! Not n²: the score is RapidFuzz's Indel ratio `2·LCS / (a + b)` of the sorted-token texts, and a
//! pair reaches threshold `t` only if `LCS ≥ t·(a + b) / 200`. Four upper bounds on the LCS,
//! each cheaper than the next and each exact (never below the true LCS, so no pair that reaches
//! the threshold is ever skipped), rule pairs out before the quadratic comparison:
//!
//! 1. lengths: `LCS ≤ min(a, b)`; texts are sorted by length, so each text is compared only with
//!    the band of lengths within reach (`similarity::Prepared::bound`);
//! 2. characters: `LCS ≤ Σ min(count_a(c), count_b(c))` over 64 character classes (merging
//!    classes only raises the bound): 64 bytes of counts per text;
//! 3. order, coarse: split `b` in halves `b1 b2`; an alignment matches `b1` within some prefix
//!    `a[..i]` and `b2` within `a[i..]`, so `LCS ≤ max_i H(a[..i], b1) + H(a[i..], b2)`, `H` being
//!    bound 2. Taking `i` only at every 8th position (with the block's outer ends) gives a bound
//!    that costs a few histogram intersections;
//! 4. order, exact: the same maximum over every `i`, in one pass over `a`.
//!
//! On 10,000 memories of the benchmark's shape (60–200 characters from a 57-word vocabulary, so
//! texts look much alike) 23.5 million of the 50 million pairs are in a length band, 1 in 12 of
//! those pass bound 2, 1 in 9 of those bound 3, 1 in 4 of those bound 4: 56,000 pairs, 1 in 900,
//! are scored (docs/performance.md).

use super::similarity::Prepared;

/// Character classes of the count bounds: a character's code point modulo 64.
const CLASSES: usize = 64;
type Hist = [u8; CLASSES];
/// The split positions bound 3 tries: every `BLOCK`th.
const BLOCK: usize = 8;
/// Seeds scanned in parallel before their groups are formed.
const CHUNK: usize = 256;

/// A group of near-duplicates: the first (oldest) text and the others, each with its score
/// against the first.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub first: usize,
    pub others: Vec<(usize, f64)>,
}

/// Returns the groups of two or more near-duplicates among `texts` (oldest first): similarity
/// at least `threshold` with the group's first text. Groups come in the order of their
/// first text, members in text order.
pub fn groups(texts: &[&str], threshold: f64) -> Vec<Group> {
    let p = Profiles::new(texts);
    let n = texts.len();
    let mut grouped = vec![false; n];
    let mut out = Vec::new();
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).clamp(1, 4);
    let mut start = 0;
    while start < n {
        let seeds: Vec<usize> = (start..(start + CHUNK).min(n)).filter(|&s| !grouped[s]).collect();
        start += CHUNK;
        let found = scan_all(&p, &seeds, &grouped, threshold, threads);
        for (seed, matches) in seeds.into_iter().zip(found) {
            if grouped[seed] {
                continue;
            }
            let others: Vec<(usize, f64)> = matches.into_iter().filter(|&(o, _)| !grouped[o]).collect();
            if others.is_empty() {
                continue;
            }
            grouped[seed] = true;
            for &(o, _) in &others {
                grouped[o] = true;
            }
            out.push(Group { first: seed, others });
        }
    }
    out
}

/// Returns each seed's matches (later texts not grouped yet), scanning seeds on `threads`
/// threads.
fn scan_all(p: &Profiles, seeds: &[usize], grouped: &[bool], threshold: f64, threads: usize) -> Vec<Vec<(usize, f64)>> {
    if threads <= 1 || seeds.len() < 2 {
        let mut scratch = Scratch::default();
        return seeds.iter().map(|&s| p.matches(s, grouped, threshold, &mut scratch)).collect();
    }
    let mut out: Vec<Vec<(usize, f64)>> = vec![Vec::new(); seeds.len()];
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let mut scratch = Scratch::default();
                    (t..seeds.len())
                        .step_by(threads)
                        .map(|k| (k, p.matches(seeds[k], grouped, threshold, &mut scratch)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for w in workers {
            // A worker cannot panic short of a bug; its seeds then simply find nothing.
            if let Ok(found) = w.join() {
                for (k, m) in found {
                    out[k] = m;
                }
            }
        }
    });
    out
}

/// Buffers one thread reuses from seed to seed.
#[derive(Default)]
struct Scratch {
    /// Bound 3: the seed's counts up to the end of each block, and from the start of each.
    prefix: Vec<Hist>,
    suffix: Vec<Hist>,
    /// Bound 4: `H(a[i..], b2)` for each `i`.
    tail: Vec<u16>,
}

/// What the bounds need of every text.
struct Profiles {
    prepared: Vec<Prepared>,
    /// Each text's character classes (text order), in one arena.
    classes: Vec<u8>,
    class_at: Vec<(usize, usize)>,
    /// Text indexes sorted by length, and each text's place in that order.
    by_len: Vec<usize>,
    place: Vec<usize>,
    /// In length order: the length, the whole text's counts, and its halves' counts.
    lens: Vec<usize>,
    full: Vec<Hist>,
    halves: Vec<[Hist; 2]>,
    /// In length order: a class occurs over 255 times, so the byte counts cannot bound it (the
    /// pair is scored).
    big: Vec<bool>,
}

/// Returns the class counts of `classes`, and whether one went over 255.
fn hist(classes: &[u8]) -> (Hist, bool) {
    let mut h = [0u8; CLASSES];
    let mut big = false;
    for &c in classes {
        let slot = &mut h[c as usize % CLASSES];
        big |= *slot == u8::MAX;
        *slot = slot.saturating_add(1);
    }
    (h, big)
}

/// Returns `H(a, b)`: the sum of the smaller count of each class.
#[inline]
fn common(a: &Hist, b: &Hist) -> usize {
    // At most 64 × 255: a u16 sum, which vectorises well.
    let mut sum = 0u16;
    for i in 0..CLASSES {
        sum += u16::from(a[i].min(b[i]));
    }
    usize::from(sum)
}

impl Profiles {
    fn new(texts: &[&str]) -> Profiles {
        let prepared: Vec<Prepared> = texts.iter().map(|t| Prepared::new(t)).collect();
        let mut classes = Vec::new();
        let mut class_at = Vec::with_capacity(texts.len());
        for p in &prepared {
            let start = classes.len();
            classes.extend(p.sorted().chars().map(|c| (c as u32 % CLASSES as u32) as u8));
            class_at.push((start, classes.len()));
        }
        let mut by_len: Vec<usize> = (0..texts.len()).collect();
        by_len.sort_by_key(|&i| prepared[i].chars());
        let mut place = vec![0; texts.len()];
        for (k, &i) in by_len.iter().enumerate() {
            place[i] = k;
        }
        let (mut lens, mut full, mut halves, mut big) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for &i in &by_len {
            let (s, e) = class_at[i];
            let c = &classes[s..e];
            let (whole, over) = hist(c);
            let (h1, _) = hist(&c[..c.len() / 2]);
            let (h2, _) = hist(&c[c.len() / 2..]);
            lens.push(prepared[i].chars());
            full.push(whole);
            halves.push([h1, h2]);
            big.push(over);
        }
        Profiles { prepared, classes, class_at, by_len, place, lens, full, halves, big }
    }

    fn classes_of(&self, i: usize) -> &[u8] {
        let (s, e) = self.class_at[i];
        &self.classes[s..e]
    }

    /// Returns the later texts not grouped yet that score at least `threshold` against `seed`.
    fn matches(&self, seed: usize, grouped: &[bool], threshold: f64, scratch: &mut Scratch) -> Vec<(usize, f64)> {
        let k = self.place[seed];
        let la = self.lens[k];
        let a = &self.prepared[seed];
        let in_reach = |lb: usize| length_bound(la, lb) >= threshold;
        let lo = self.lens[..k].partition_point(|&lb| !in_reach(lb));
        let hi = k + 1 + self.lens[k + 1..].partition_point(|&lb| lb <= la || in_reach(lb));
        let classes = self.classes_of(seed);
        let per_char = (threshold - 1e-6) / 200.0;
        let mut blocks_ready = false;
        let mut out = Vec::new();
        for j in lo..hi {
            let other = self.by_len[j];
            if other <= seed || grouped[other] {
                continue;
            }
            let lb = self.lens[j];
            let need = needed(la + lb, per_char);
            if !(self.big[k] || self.big[j]) {
                if common(&self.full[k], &self.full[j]) < need {
                    continue;
                }
                if !blocks_ready {
                    block_counts(classes, scratch);
                    blocks_ready = true;
                }
                let [b1, b2] = &self.halves[j];
                if block_bound(scratch, b1, b2) < need || split_bound(classes, b1, b2, &mut scratch.tail) < need {
                    continue;
                }
            }
            let score = a.similarity(&self.prepared[other]);
            if score >= threshold {
                out.push((other, score));
            }
        }
        out.sort_by_key(|&(o, _)| o);
        out
    }
}

/// Returns the highest similarity texts of these lengths can have (as `Prepared::bound`).
fn length_bound(la: usize, lb: usize) -> f64 {
    let total = la + lb;
    if total == 0 {
        return 100.0;
    }
    100.0 * (1.0 - la.abs_diff(lb) as f64 / total as f64) + 1e-9
}

/// Returns the smallest LCS with which texts of `total` characters together could reach the
/// threshold: `per_char` is `threshold / 200`, taken a hair low so that rounding in the scorer can
/// never make a skipped pair one that reaches it.
#[inline]
fn needed(total: usize, per_char: f64) -> usize {
    let exact = per_char * total as f64;
    if exact <= 0.0 {
        return 0;
    }
    // `ceil` without a libm call.
    let floor = exact as usize;
    if (floor as f64) < exact { floor + 1 } else { floor }
}

/// Fills the seed's counts up to the end of each block and from the start of each.
fn block_counts(a: &[u8], s: &mut Scratch) {
    let blocks = a.len().div_ceil(BLOCK).max(1);
    s.prefix.clear();
    s.suffix.clear();
    let mut upto = [0u8; CLASSES];
    for k in 0..blocks {
        for &c in &a[k * BLOCK..((k + 1) * BLOCK).min(a.len())] {
            let slot = &mut upto[c as usize % CLASSES];
            *slot = slot.saturating_add(1);
        }
        s.prefix.push(upto);
    }
    let (whole, _) = hist(a);
    for k in 0..blocks {
        let mut from = whole;
        if k > 0 {
            for (f, p) in from.iter_mut().zip(&s.prefix[k - 1]) {
                *f -= p;
            }
        }
        s.suffix.push(from);
    }
}

/// Bound 3: for a split of the seed inside block `k`, the prefix is within `a[..end of k]` and
/// the suffix within `a[start of k..]`.
fn block_bound(s: &Scratch, b1: &Hist, b2: &Hist) -> usize {
    s.prefix.iter().zip(&s.suffix).map(|(p, q)| common(p, b1) + common(q, b2)).max().unwrap_or(0)
}

/// Bound 4: `max_i H(a[..i], b1) + H(a[i..], b2)` over every `i`.
fn split_bound(a: &[u8], b1: &Hist, b2: &Hist, tail: &mut Vec<u16>) -> usize {
    let n = a.len();
    tail.clear();
    tail.resize(n + 1, 0);
    let mut left = *b2;
    let mut acc = 0u16;
    for i in (0..n).rev() {
        let slot = &mut left[a[i] as usize % CLASSES];
        let hit = (*slot > 0) as u8;
        *slot -= hit;
        acc += hit as u16;
        tail[i] = acc;
    }
    let mut best = tail[0] as usize;
    let mut left = *b1;
    let mut head = 0usize;
    for i in 0..n {
        let slot = &mut left[a[i] as usize % CLASSES];
        let hit = (*slot > 0) as u8;
        *slot -= hit;
        head += hit as usize;
        best = best.max(head + tail[i + 1] as usize);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::format::similarity::similarity;

    /// The groups every pair would give: the same rule, scoring every pair.
    fn brute(texts: &[&str], threshold: f64) -> Vec<Group> {
        let mut grouped = vec![false; texts.len()];
        let mut out = Vec::new();
        for s in 0..texts.len() {
            if grouped[s] {
                continue;
            }
            let others: Vec<(usize, f64)> = (s + 1..texts.len())
                .filter(|&o| !grouped[o])
                .map(|o| (o, similarity(texts[s], texts[o])))
                .filter(|&(_, x)| x >= threshold)
                .collect();
            if !others.is_empty() {
                grouped[s] = true;
                others.iter().for_each(|&(o, _)| grouped[o] = true);
                out.push(Group { first: s, others });
            }
        }
        out
    }

    use crate::format::similarity::tests::Rng;

    #[test]
    fn finds_what_scoring_every_pair_finds() {
        let words = ["api", "port", "service", "listens", "on", "the", "web", "8080", "8081", "db", "é", "日本"];
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut texts: Vec<String> = Vec::new();
        for _ in 0..300 {
            let n = 1 + rng.below(9);
            let mut t: Vec<&str> = (0..n).map(|_| words[rng.below(words.len())]).collect();
            if rng.below(3) == 0 && !texts.is_empty() {
                // A near copy of an earlier text.
                let base = texts[rng.below(texts.len())].clone();
                t = base.split(' ').collect();
                let at = rng.below(t.len() + 1);
                t.insert(at, words[rng.below(words.len())]);
                texts.push(t.join(" "));
                continue;
            }
            texts.push(t.join(" "));
        }
        texts.push(String::new());
        texts.push("   ".into());
        texts.push("x".repeat(600));
        texts.push("x".repeat(590));
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        for threshold in [0.0, 50.0, 85.0, 95.0, 100.0] {
            assert_eq!(groups(&refs, threshold), brute(&refs, threshold), "threshold {threshold}");
        }
    }

    #[test]
    fn the_bounds_are_never_below_the_lcs() {
        let pairs = [
            ("the api service listens on port 8080", "the web service listens on port 8081"),
            ("abc", "cba"),
            ("aaaa bbbb", "bbbb aaaa"),
            ("", "x"),
        ];
        for (a, b) in pairs {
            let (pa, pb) = (Prepared::new(a), Prepared::new(b));
            let score = pa.similarity(&pb);
            let lcs = (score / 100.0 * (pa.chars() + pb.chars()) as f64 / 2.0).round() as usize;
            let ca: Vec<u8> = pa.sorted().chars().map(|c| (c as u32 % 64) as u8).collect();
            let cb: Vec<u8> = pb.sorted().chars().map(|c| (c as u32 % 64) as u8).collect();
            let (b1, _) = hist(&cb[..cb.len() / 2]);
            let (b2, _) = hist(&cb[cb.len() / 2..]);
            let mut s = Scratch::default();
            block_counts(&ca, &mut s);
            let exact = split_bound(&ca, &b1, &b2, &mut s.tail);
            assert!(exact >= lcs && block_bound(&s, &b1, &b2) >= exact, "{a:?} {b:?}");
            assert!(common(&hist(&ca).0, &hist(&cb).0) >= exact);
        }
    }
}
