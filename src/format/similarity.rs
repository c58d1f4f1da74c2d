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

#[cfg(test)]
mod tests {
    use super::*;

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
