//! Text similarity for dedup-on-write: Python RapidFuzz's `fuzz.token_sort_ratio`.
//!
//! co-cli (the Python tool whose file layout kb keeps) scores
//! `token_sort_ratio(new.lower().strip(), old.lower().strip())` with RapidFuzz 3.x,
//! whose default is no processor. The rapidfuzz crate has `ratio` (on a 0–1 scale) but no token
//! functions, so the tokenising is rebuilt here to match Python exactly.

use crate::format::frontmatter::py_isspace;
use rapidfuzz::fuzz;

/// Returns the tokens of `s` sorted and joined by single spaces, as RapidFuzz's `sorted_split`.
fn sorted_tokens(s: &str) -> String {
    // RapidFuzz-cpp quirk: a Python str whose code points are all < 256 is stored as latin-1, and
    // then U+0085 and U+00A0 do not split tokens.
    let latin1 = s.chars().all(|c| (c as u32) < 256);
    let mut tokens: Vec<&str> =
        s.split(|c| py_isspace(c) && !(latin1 && (c == '\u{85}' || c == '\u{a0}'))).filter(|t| !t.is_empty()).collect();
    // UTF-8 byte order is code-point order, which is RapidFuzz's order.
    tokens.sort_unstable();
    tokens.join(" ")
}

/// Returns RapidFuzz `fuzz.token_sort_ratio(a, b)` (no processor), on a 0–100 scale.
pub fn token_sort_ratio(a: &str, b: &str) -> f64 {
    let (a, b) = (sorted_tokens(a), sorted_tokens(b));
    fuzz::ratio(a.chars(), b.chars()) * 100.0
}

/// A text prepared once for scoring against many others (co-cli's `.lower().strip()`, then
/// RapidFuzz's token sort), with its length in characters for the bound.
pub struct Prepared {
    sorted: String,
    chars: usize,
}

impl Prepared {
    pub fn new(text: &str) -> Prepared {
        let sorted = sorted_tokens(&lower_strip(text));
        let chars = sorted.chars().count();
        Prepared { sorted, chars }
    }

    /// Returns the largest similarity `self` and `other` can have: the Indel distance is at least
    /// the difference of the lengths, so the ratio is at most `1 - |a - b| / (a + b)`. Cheap: it
    /// lets dedup skip a candidate without the quadratic comparison (RapidFuzz's `score_cutoff`).
    pub fn bound(&self, other: &Prepared) -> f64 {
        Prepared::bound_of(self.chars, other.chars)
    }

    /// Returns [`Prepared::bound`] of two texts of `a` and `b` characters (as compared).
    pub fn bound_of(a: usize, b: usize) -> f64 {
        let total = a + b;
        if total == 0 {
            return 100.0;
        }
        // A hair above the exact bound, so rounding can never skip a candidate that reaches it.
        100.0 * (1.0 - a.abs_diff(b) as f64 / total as f64) + 1e-9
    }

    /// Returns the similarity of the two texts, as [`similarity`] does.
    pub fn similarity(&self, other: &Prepared) -> f64 {
        fuzz::ratio(self.sorted.chars(), other.sorted.chars()) * 100.0
    }

    /// Returns the text as it is compared: lower-cased, stripped, its tokens sorted.
    pub fn sorted(&self) -> &str {
        &self.sorted
    }

    /// Returns the length of [`Prepared::sorted`] in characters.
    pub fn chars(&self) -> usize {
        self.chars
    }
}

/// Returns co-cli's preprocessing of a text before scoring: Python `.lower().strip()`.
pub fn lower_strip(s: &str) -> String {
    s.to_lowercase().trim_matches(py_isspace).to_string()
}

/// Returns the similarity co-cli uses for dedup: token_sort_ratio of the normalized texts.
pub fn similarity(new: &str, existing: &str) -> f64 {
    token_sort_ratio(&lower_strip(new), &lower_strip(existing))
}

/// Returns the similarity RapidFuzz gives two texts of `total` characters in all (as compared)
/// whose longest common subsequence has `lcs` characters: the Indel ratio
/// `1 - (total - 2·lcs) / total`, on a 0–100 scale, in the very floating-point operations of
/// rapidfuzz 0.5's `fuzz::ratio` (so `Prepared::similarity` is this of the pair's LCS).
pub fn ratio_of(lcs: usize, total: usize) -> f64 {
    let distance = total.saturating_sub(2 * lcs);
    let normalized = if total == 0 { 0.0 } else { distance as f64 / total as f64 };
    (1.0 - normalized) * 100.0
}

/// Screens pairs of texts against one similarity threshold without scoring most of them: an
/// exact test that a pair cannot reach it (`kb audit`'s conflicts, threshold 60).
///
/// A pair reaches threshold `t` when `ratio_of(LCS(a, b), a + b) ≥ t`, `a` and `b` being the
/// lengths of the two texts as compared (`Prepared::sorted`). `ratio_of` only grows with the LCS
/// (each floating-point operation in it is correctly rounded, hence monotone, and `total - 2·lcs`
/// is exact), so for each total `m` there is a least LCS that reaches `t`, [`Screen`] keeps it
/// (`need[m]`), and a pair whose LCS has an upper bound `U < need[a + b]` cannot reach `t`. The
/// bounds, each never below the LCS:
///
/// 1. lengths: `LCS ≤ min(a, b)`;
/// 2. classes: for a partition of the characters into classes `C_1 … C_r`, with `x|C` the
///    subsequence of the characters of `x` in `C`,
///    `LCS(a, b) ≤ LCS(a|C_1, b|C_1) + … + LCS(a|C_r, b|C_r)`. Proof: a common subsequence `z`
///    of `a` and `b`, restricted to the characters in `C_k`, is a common subsequence of `a|C_k`
///    and `b|C_k` (the same positions, fewer of them), so `|z|C_k| ≤ LCS(a|C_k, b|C_k)`, and the
///    `|z|C_k|` add up to `|z|`. The classes are chosen per group of texts, each about as
///    frequent, so that a class of a text holds at most 64 (or 128) characters: then its LCS is one
///    machine word of Hyyrö's bit-parallel LCS (one step per character of `b`), and the bound
///    costs `O(b)` where the score costs `O(a·b/64)`. With one class it is the LCS itself. Two
///    partitions are tried in turn: `r` classes of at most 64 characters, cheap and loose, then
///    about `r/2` of at most 128, dearer and tighter;
/// 3. folding: the characters are first mapped to byte symbols by frequency, the rarest (past
///    255 distinct ones) sharing the last symbol. A common subsequence maps to a common
///    subsequence, so the LCS of the mapped texts is never below that of the texts.
///
/// A character count bound (`Σ min(count_a(c), count_b(c))`, the classes bound with one class per
/// character) is not used: at threshold 60 it rules out 1 in 20 of the benchmark's pairs that the
/// lengths leave, the classes bounds all but 1 in 200 (docs/performance.md).
pub struct Screen {
    /// The length of each text, as compared.
    lens: Vec<usize>,
    /// `need[m]`: the least LCS two texts of `m` characters in all need to reach the threshold.
    need: Vec<usize>,
    /// The classes of at most 64 characters (of nine texts in ten), then those of 128: as many
    /// classes, then twice, four times as many… until every text fits (or 255 classes).
    narrow: Partition,
    wide: Vec<Partition>,
}

/// A partition of the symbols into classes (symbol 0, the padding, matches nothing), and each
/// text's rows under it.
struct Partition {
    classes: usize,
    /// Each text's classes as rows of symbols, padded with 0 to the longest, laid out column by
    /// column (the `i`th symbol of every row, then the next): `width × classes` bytes from
    /// `start`.
    rows: Vec<u8>,
    at: Vec<(usize, usize)>,
}

/// What a word of bits needs for Hyyrö's step: `u64` or `u128`.
trait Word: Copy + std::ops::BitAnd<Output = Self> + std::ops::BitOr<Output = Self> + std::ops::Not<Output = Self> {
    const ZERO: Self;
    const BITS: usize;
    fn plus(self, other: Self) -> Self;
    fn bit(at: usize) -> Self;
    fn ones(self) -> usize;
    /// The `n` lowest bits set.
    fn low(n: usize) -> Self;
}

macro_rules! word {
    ($t:ty) => {
        impl Word for $t {
            const ZERO: $t = 0;
            const BITS: usize = <$t>::BITS as usize;
            fn plus(self, other: $t) -> $t {
                self.wrapping_add(other)
            }
            fn bit(at: usize) -> $t {
                1 << at
            }
            fn ones(self) -> usize {
                self.count_ones() as usize
            }
            fn low(n: usize) -> $t {
                if n >= <Self as Word>::BITS { !0 } else { (1 << n) - 1 }
            }
        }
    };
}
word!(u64);
word!(u128);

impl Screen {
    /// Reads `texts` for screening their pairs against `threshold`.
    pub fn new(texts: &[Prepared], threshold: f64) -> Screen {
        let symbols: Vec<Vec<u8>> = symbols(texts);
        let mut frequency = [0u64; 256];
        for s in symbols.iter().flatten() {
            frequency[*s as usize] += 1;
        }
        let lens: Vec<usize> = texts.iter().map(Prepared::chars).collect();
        // Classes sized so that nine texts in ten fit a word in each class (a text that does not
        // is screened by the other partition, or scored).
        let mut sorted = lens.clone();
        sorted.sort_unstable();
        let long = sorted.get(sorted.len() * 9 / 10).copied().unwrap_or(0);
        let classes = |bits: usize| (long * 10).div_ceil(bits * 9).clamp(1, 255);
        let narrow = Partition::new(&symbols, &frequency, classes(64));
        let mut wide = vec![Partition::new(&symbols, &frequency, classes(128))];
        while let Some(last) = wide.last()
            && last.classes < 255
            && last.at.iter().any(|&(_, width)| width > 128)
        {
            let more = (last.classes * 2).min(255);
            wide.push(Partition::new(&symbols, &frequency, more));
        }
        let top = sorted.last().copied().unwrap_or(0) * 2;
        Screen { lens, need: needs(top, threshold), narrow, wide }
    }

    /// Returns the screen of pairs with text `a`: its bit masks, built once for all others.
    pub fn probe(&self, a: usize) -> Probe<'_> {
        let wide = self.wide.iter().enumerate().find_map(|(k, p)| Some((k, Masks::new(p, a)?)));
        Probe { screen: self, a, narrow: Masks::new(&self.narrow, a), wide }
    }
}

/// Returns each text as symbols: its characters mapped to bytes 1–255 by how often they occur
/// in all the texts (the most frequent first), the rarest sharing 255.
fn symbols(texts: &[Prepared]) -> Vec<Vec<u8>> {
    let mut counts: std::collections::HashMap<char, u64> = Default::default();
    for t in texts {
        for c in t.sorted().chars() {
            *counts.entry(c).or_default() += 1;
        }
    }
    let mut order: Vec<(char, u64)> = counts.into_iter().collect();
    order.sort_unstable_by_key(|&(c, n)| (std::cmp::Reverse(n), c));
    let id: std::collections::HashMap<char, u8> =
        order.iter().enumerate().map(|(k, &(c, _))| (c, (k + 1).min(255) as u8)).collect();
    texts.iter().map(|t| t.sorted().chars().map(|c| id.get(&c).copied().unwrap_or(255)).collect()).collect()
}

/// Returns `need[m]` for `m` up to `top`: the least LCS with `ratio_of(LCS, m) ≥ threshold`
/// (`usize::MAX` when even `m / 2` does not reach it). Found by trying `ratio_of` itself around
/// the exact value, so its rounding is the scorer's.
fn needs(top: usize, threshold: f64) -> Vec<usize> {
    (0..=top)
        .map(|m| {
            let reaches = |l: usize| ratio_of(l, m) >= threshold;
            let mut l = ((threshold.clamp(0.0, 100.0) * m as f64 / 200.0) as usize).min(m / 2);
            while l > 0 && reaches(l - 1) {
                l -= 1;
            }
            while l <= m / 2 && !reaches(l) {
                l += 1;
            }
            if l > m / 2 { usize::MAX } else { l }
        })
        .collect()
}

impl Partition {
    /// Splits the symbols into `classes` classes of about equal frequency (each symbol, most
    /// frequent first, to the class with the fewest so far) and lays out each text's rows.
    fn new(symbols: &[Vec<u8>], frequency: &[u64; 256], classes: usize) -> Partition {
        let mut order: Vec<usize> = (1..256).filter(|&s| frequency[s] > 0).collect();
        order.sort_by_key(|&s| (std::cmp::Reverse(frequency[s]), s));
        let mut load = vec![0u64; classes];
        let mut class_of = [0u8; 256];
        for s in order {
            let k = (0..classes).min_by_key(|&k| (load[k], k)).unwrap_or(0);
            load[k] += frequency[s];
            class_of[s] = k as u8;
        }
        let mut rows = Vec::new();
        let mut at = Vec::with_capacity(symbols.len());
        let mut split: Vec<Vec<u8>> = vec![Vec::new(); classes];
        for text in symbols {
            split.iter_mut().for_each(Vec::clear);
            for &s in text {
                split[class_of[s as usize] as usize].push(s);
            }
            let width = split.iter().map(Vec::len).max().unwrap_or(0);
            at.push((rows.len(), width));
            for i in 0..width {
                rows.extend(split.iter().map(|row| row.get(i).copied().unwrap_or(0)));
            }
        }
        Partition { classes, rows, at }
    }

    fn rows(&self, text: usize) -> &[u8] {
        let (start, width) = self.at[text];
        &self.rows[start..start + self.classes * width]
    }
}

/// One text's bit masks under a partition: for each symbol, the positions where it occurs in
/// the text's row of its class; `None` when a row is longer than a word.
struct Masks<T> {
    of: Box<[T; 256]>,
    lens: Vec<usize>,
}

impl<T: Word> Masks<T> {
    fn new(p: &Partition, text: usize) -> Option<Masks<T>> {
        let rows = p.rows(text);
        let mut of = Box::new([T::ZERO; 256]);
        let mut lens = vec![0; p.classes];
        for (at, column) in rows.chunks(p.classes).enumerate() {
            for (k, &s) in column.iter().enumerate().filter(|&(_, &s)| s != 0) {
                if at >= T::BITS {
                    return None;
                }
                of[s as usize] = of[s as usize] | T::bit(at);
                lens[k] = at + 1;
            }
        }
        Some(Masks { of, lens })
    }

    /// Returns the classes bound of this text against `rows` (another text's, same partition).
    fn bound(&self, rows: &[u8]) -> usize {
        let classes = self.lens.len();
        match classes {
            1 => self.lanes::<1>(rows),
            2 => self.lanes::<2>(rows),
            3 => self.lanes::<3>(rows),
            4 => self.lanes::<4>(rows),
            _ => (0..classes).map(|k| self.lcs(k, rows.iter().skip(k).step_by(classes))).sum(),
        }
    }

    /// Hyyrö's LCS of class `k` against one row: bit `i` of `s` is clear where the LCS grows at
    /// the row's `i`th character; padding (symbol 0, mask 0) leaves `s` as it is.
    fn lcs<'r>(&self, k: usize, row: impl Iterator<Item = &'r u8>) -> usize {
        let mut s = !T::ZERO;
        for &c in row {
            let m = self.of[c as usize];
            s = s.plus(s & m) | (s & !m);
        }
        (!s & T::low(self.lens[k])).ones()
    }

    /// [`Masks::lcs`] of `R` classes side by side: independent steps the processor overlaps.
    fn lanes<const R: usize>(&self, rows: &[u8]) -> usize {
        let mut s = [!T::ZERO; R];
        let (columns, _) = rows.as_chunks::<R>();
        for column in columns {
            for (s, &c) in s.iter_mut().zip(column) {
                let m = self.of[c as usize];
                *s = s.plus(*s & m) | (*s & !m);
            }
        }
        s.iter().zip(&self.lens).map(|(&s, &len)| (!s & T::low(len)).ones()).sum()
    }
}

/// The screen of the pairs of one text with the others ([`Screen::probe`]).
pub struct Probe<'s> {
    screen: &'s Screen,
    a: usize,
    narrow: Option<Masks<u64>>,
    /// The first wide partition the text fits, and its masks there.
    wide: Option<(usize, Masks<u128>)>,
}

impl Probe<'_> {
    /// Returns false only when the pair of this text and text `b` cannot reach the threshold.
    pub fn may_reach(&self, b: usize) -> bool {
        let s = self.screen;
        let (la, lb) = (s.lens[self.a], s.lens[b]);
        let need = s.need.get(la + lb).copied().unwrap_or(0);
        if la.min(lb) < need {
            return false;
        }
        if let Some(m) = &self.narrow {
            if m.bound(s.narrow.rows(b)) < need {
                return false;
            }
            if m.lens.len() == 1 {
                return true;
            }
        }
        if let Some((level, m)) = &self.wide {
            return m.bound(s.wide[*level].rows(b)) >= need;
        }
        true
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The LCS of two strings by the textbook table.
    fn lcs(a: &str, b: &str) -> usize {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        let mut row = vec![0usize; b.len() + 1];
        for &x in &a {
            let mut diagonal = 0;
            for (j, &y) in b.iter().enumerate() {
                let up = row[j + 1];
                row[j + 1] = if x == y { diagonal + 1 } else { up.max(row[j]) };
                diagonal = up;
            }
        }
        row[b.len()]
    }

    /// A xorshift generator for the generated cases (also `neardup`'s).
    pub(crate) struct Rng(pub(crate) u64);
    impl Rng {
        pub(crate) fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n.max(1) as u64) as usize
        }
    }

    /// Texts of every shape the screen must handle: prose from a small vocabulary, random
    /// letters, few characters (long classes), Unicode past 255 distinct characters (folded
    /// symbols), empty and blank ones, long ones, and near copies that differ by a number or a
    /// path or a few words.
    fn generated(rng: &mut Rng, n: usize) -> Vec<String> {
        let words = ["api", "port", "service", "listens", "on", "the", "web", "db", "src/api.rs", "v2", "é", "日本"];
        let mut texts: Vec<String> = vec![String::new(), "   ".into(), "x".repeat(300), "x y ".repeat(90)];
        while texts.len() < n {
            let text = match rng.below(6) {
                0 => (0..1 + rng.below(40)).map(|_| words[rng.below(words.len())]).collect::<Vec<_>>().join(" "),
                1 => (0..rng.below(260))
                    .map(|_| if rng.below(6) == 0 { ' ' } else { (b'a' + rng.below(26) as u8) as char })
                    .collect(),
                2 => (0..rng.below(200)).map(|_| ['a', 'b', ' '][rng.below(3)]).collect(),
                3 => {
                    (0..rng.below(120)).map(|_| char::from_u32(0x4e00 + rng.below(600) as u32).unwrap_or('x')).collect()
                }
                _ => {
                    let base = texts[rng.below(texts.len())].clone();
                    let mut t: Vec<String> = base.split(' ').map(str::to_string).collect();
                    for _ in 0..1 + rng.below(3) {
                        let at = rng.below(t.len());
                        match rng.below(3) {
                            0 => t[at] = format!("{}", rng.below(10_000)),
                            1 => t[at] = format!("src/mod_{}.rs", rng.below(50)),
                            _ => t.insert(at, words[rng.below(words.len())].to_string()),
                        }
                    }
                    t.join(" ")
                }
            };
            texts.push(text);
        }
        texts
    }

    #[test]
    fn ratio_of_the_lcs_is_the_score() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let texts = generated(&mut rng, 120);
        for a in &texts {
            for b in texts.iter().step_by(7) {
                let (pa, pb) = (Prepared::new(a), Prepared::new(b));
                let got = ratio_of(lcs(pa.sorted(), pb.sorted()), pa.chars() + pb.chars());
                assert_eq!(got.to_bits(), pa.similarity(&pb).to_bits(), "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn the_least_lcs_that_reaches_a_threshold() {
        for threshold in [0.0, 33.3, 60.0, 85.0, 99.5, 100.0, 101.0] {
            let need = needs(3000, threshold);
            for (m, &l) in need.iter().enumerate() {
                // The scorer only grows with the LCS, and `need` is where it first reaches.
                assert!((1..=m / 2).all(|x| ratio_of(x - 1, m) <= ratio_of(x, m)));
                if l == usize::MAX {
                    assert!(ratio_of(m / 2, m) < threshold, "{m} {threshold}");
                } else {
                    assert!(ratio_of(l, m) >= threshold && (l == 0 || ratio_of(l - 1, m) < threshold), "{m}");
                }
            }
        }
    }

    #[test]
    fn the_class_bounds_are_never_below_the_lcs() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let texts = generated(&mut rng, 90);
        let prepared: Vec<Prepared> = texts.iter().map(|t| Prepared::new(t)).collect();
        let screen = Screen::new(&prepared, 60.0);
        let mut checked = 0;
        for a in 0..prepared.len() {
            let narrow: Option<Masks<u64>> = Masks::new(&screen.narrow, a);
            let wide: Vec<Option<Masks<u128>>> = screen.wide.iter().map(|p| Masks::new(p, a)).collect();
            for b in 0..prepared.len() {
                let truth = lcs(prepared[a].sorted(), prepared[b].sorted());
                if let Some(m) = &narrow {
                    let bound = m.bound(screen.narrow.rows(b));
                    assert!(bound >= truth, "{:?} {:?}: {bound} < {truth}", texts[a], texts[b]);
                    checked += 1;
                }
                for (p, m) in screen.wide.iter().zip(&wide) {
                    if let Some(m) = m {
                        assert!(m.bound(p.rows(b)) >= truth, "{:?} {:?}", texts[a], texts[b]);
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
        assert!(screen.wide.len() > 1, "the long texts need more classes");
    }

    #[test]
    fn one_class_is_the_lcs_itself() {
        let texts = ["the api service listens on port 8080", "the web service listens on port 8081", "abc", "cba", ""];
        let prepared: Vec<Prepared> = texts.iter().map(|t| Prepared::new(t)).collect();
        let screen = Screen::new(&prepared, 60.0);
        assert_eq!(screen.narrow.classes, 1);
        for a in 0..texts.len() {
            let m: Masks<u64> = Masks::new(&screen.narrow, a).expect("short texts fit a word");
            for b in 0..texts.len() {
                assert_eq!(m.bound(screen.narrow.rows(b)), lcs(prepared[a].sorted(), prepared[b].sorted()));
            }
        }
    }

    /// Property: over many generated pairs, the screen never drops a pair that reaches the
    /// threshold, whichever text probes, and it does drop most of those that do not.
    #[test]
    fn the_screen_never_drops_a_pair_the_score_keeps() {
        let mut rng = Rng(0x51ed_270b_27a4_4c31);
        let texts = generated(&mut rng, 260);
        let prepared: Vec<Prepared> = texts.iter().map(|t| Prepared::new(t)).collect();
        for threshold in [0.0, 40.0, 60.0, 85.0, 100.0] {
            let screen = Screen::new(&prepared, threshold);
            let probes: Vec<Probe<'_>> = (0..prepared.len()).map(|a| screen.probe(a)).collect();
            let (mut below, mut dropped) = (0, 0);
            for a in 0..prepared.len() {
                for b in 0..prepared.len() {
                    let reaches = prepared[a].similarity(&prepared[b]) >= threshold;
                    let may = probes[a].may_reach(b);
                    assert!(may || !reaches, "t {threshold}: {:?} {:?}", texts[a], texts[b]);
                    below += usize::from(!reaches);
                    dropped += usize::from(!may);
                }
            }
            if threshold == 60.0 {
                assert!(dropped * 4 > below * 3, "dropped {dropped} of {below}");
            }
        }
    }

    #[test]
    fn the_bound_is_never_below_the_score() {
        let texts =
            ["", "a", "memory 4", "memory 5", "hello world", "world hello again and again", "x".repeat(300).leak()];
        for a in texts {
            for b in texts {
                let (pa, pb) = (Prepared::new(a), Prepared::new(b));
                assert!(pa.bound(&pb) >= pa.similarity(&pb), "{a:?} {b:?}");
                assert!((pa.similarity(&pb) - similarity(a, b)).abs() < 1e-12);
            }
        }
        assert!(Prepared::new("short").bound(&Prepared::new(&"long text ".repeat(100))) < 10.0);
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// Reference values from Python RapidFuzz 3.14.6.
    #[test]
    fn matches_python_reference_pairs() {
        let cases: &[(&str, &str, f64)] = &[
            ("Hello, World!", "world hello", 75.0),
            ("i prefer typescript for web development", "i prefer typescript for web dev", 88.571_428_571_428_57),
            (
                "user prefers python for data science projects",
                "user prefers python for data science work",
                83.720_930_232_558_14,
            ),
            ("memory 10", "memory 11", 88.888_888_888_888_89),
            ("memory 4", "memory 5", 87.5),
            ("i prefer typescript", "typescript i prefer", 100.0),
            ("i prefer typescript", "i use postgresql database", 31.818_181_818_181_82),
            ("emoji 🎉 party 🎉", "party emoji 🎉", 92.857_142_857_142_86),
            ("ΟΔΟΣ σοφίας", "σοφίας οδος", 63.636_363_636_363_64),
            ("a\u{a0}b c", "c b a", 80.0),
            ("", "", 100.0),
            ("abc", "", 0.0),
        ];
        for &(a, b, want) in cases {
            let got = token_sort_ratio(a, b);
            assert!(close(got, want), "{a:?} / {b:?}: got {got}, want {want}");
        }
        assert!(close(similarity("Hello, World!", "world hello"), 91.666_666_666_666_67));
        assert!(close(similarity("ΟΔΟΣ σοφίας", "σοφίας οδος"), 100.0));
    }

    #[test]
    fn tricky_separators() {
        // Tabs and newlines split tokens; NBSP splits only when the text is not latin-1.
        assert!(close(token_sort_ratio("b\ta\nc", "a b c"), 100.0));
        assert!(close(token_sort_ratio("日本\u{a0}語", "語 日本"), 100.0));
        assert!(token_sort_ratio("x\u{a0}y", "y x") < 100.0);
        assert!(close(token_sort_ratio("  ", ""), 100.0));
        assert!(close(token_sort_ratio("a\u{3000}b", "b a"), 100.0));
        assert!(close(token_sort_ratio("a\u{1f}b", "b a"), 100.0));
    }

    #[test]
    fn symmetric_and_bounded() {
        let texts = ["", "a", "user prefers pytest", "pytest prefers user!", "日本語 テキスト", "🎉🎉 x"];
        for a in texts {
            for b in texts {
                let (x, y) = (token_sort_ratio(a, b), token_sort_ratio(b, a));
                assert!(close(x, y) && (0.0..=100.0).contains(&x), "{a:?} {b:?}");
            }
        }
    }
}
