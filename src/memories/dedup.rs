//! Dedup on write: which recent memories a new text is compared with, and the best match by
//! RapidFuzz's similarity (the rule of co-cli, the Python tool whose file layout kb keeps), scored before the
//! lock for a large text.

use crate::format::similarity::Prepared;
use crate::format::time::Micros;
use crate::memories::file::MemoryType;
use crate::memories::index::{Index, MemoryRef, Pos};
use crate::settings::Settings;
use chrono::{DateTime, Utc};

/// Texts longer than this are scored against the dedup candidates before the lock is taken.
pub const PRESCORE_BYTES: usize = 32 * 1024;

/// Dedup compares a new text with at most this many recent memories (co-cli hard-codes 10).
pub const DEDUP_CANDIDATES: usize = 10;

/// Which memories a save may consolidate into: those of the same effective type
/// and the same agent (or both naming none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DedupScope<'s> {
    pub memory_type: MemoryType,
    pub agent: Option<&'s str>,
}

impl DedupScope<'_> {
    /// Returns whether the memory at `pos` is in this scope.
    fn holds(&self, index: &Index, pos: Pos) -> bool {
        index.type_at(pos) == self.memory_type && index.agent_at(pos) == self.agent
    }
}

/// The dedup candidates of a scan, by file name and content, with their scores: computed before
/// the lock for a large text and reused under it when the candidates did not change.
pub struct Scored {
    candidates: Vec<(String, String)>,
    scores: Vec<Option<f64>>,
}

/// Returns the recent memories of `scope` dedup compares a text with (the newest first): the
/// window and the count limit apply to the memories of that type and agent only.
pub fn recent_candidates<'a>(
    index: &'a Index,
    scope: DedupScope<'_>,
    settings: &Settings,
    now: DateTime<Utc>,
) -> Vec<MemoryRef<'a>> {
    let window = settings.memory_dedup_window_days.value.min(365_000) as i64;
    let cutoff: Micros = (now - chrono::Duration::days(window)).timestamp_micros();
    let mut recent: Vec<Pos> =
        index.positions().filter(|&p| index.age_key_at(p).0 >= cutoff && scope.holds(index, p)).collect();
    recent.sort_by_key(|&p| std::cmp::Reverse(index.age_key_at(p)));
    recent.truncate(DEDUP_CANDIDATES);
    recent.into_iter().map(|p| index.at(p)).collect()
}

/// Scores `content` against the candidates of `index`; `None` for a candidate the length bound
/// rules out (it cannot reach the threshold).
pub fn score_candidates(
    index: &Index,
    content: &str,
    scope: DedupScope<'_>,
    settings: &Settings,
    now: DateTime<Utc>,
) -> Scored {
    let new = Prepared::new(content);
    let threshold = settings.memory_dedup_threshold.value;
    let recent = recent_candidates(index, scope, settings, now);
    let scores = recent
        .iter()
        .map(|m| {
            let old = Prepared::new(m.content);
            (new.bound(&old) >= threshold).then(|| new.similarity(&old))
        })
        .collect();
    let candidates = recent.iter().map(|m| (m.file_name.to_string(), m.content.to_string())).collect();
    Scored { candidates, scores }
}

/// Returns the most similar recent memory when it reaches the threshold, with its score.
/// Candidates: created within the window (or in the future), newest first, at most 10; a tie
/// goes to the newer memory. Candidates whose length
/// bound cannot reach the threshold or beat the best so far are not scored; `scored`, when its
/// candidates are exactly this index's, gives the scores without computing them again.
pub fn find_duplicate_scored<'a>(
    index: &'a Index,
    content: &str,
    scope: DedupScope<'_>,
    settings: &Settings,
    now: DateTime<Utc>,
    scored: Option<Scored>,
) -> Option<(MemoryRef<'a>, f64)> {
    let threshold = settings.memory_dedup_threshold.value;
    let recent = recent_candidates(index, scope, settings, now);
    let reuse = scored.filter(|s| {
        s.candidates.len() == recent.len()
            && s.candidates.iter().zip(&recent).all(|((name, text), m)| name == m.file_name && text == m.content)
    });
    let new = Prepared::new(content);
    let mut best: Option<(MemoryRef<'a>, f64)> = None;
    for (i, m) in recent.into_iter().enumerate() {
        let score = match &reuse {
            Some(s) => s.scores[i],
            None => {
                let old = Prepared::new(m.content);
                let bound = new.bound(&old);
                let useless = bound < threshold || best.as_ref().is_some_and(|(_, b)| bound <= *b);
                (!useless).then(|| new.similarity(&old))
            }
        };
        let Some(score) = score else { continue };
        if best.as_ref().is_none_or(|(_, b)| score > *b) {
            best = Some((m, score));
        }
    }
    best.filter(|(_, s)| *s >= threshold)
}

/// Returns the person's memory most like `content` when it reaches the threshold, with its score:
/// a memory no agent wrote (its `created_by` absent or not `agent:…`) that `agent` sees (shared,
/// or that agent's), of any type and any age. An agent's save that restates it is reported as a
/// near miss (or, the same words, as already stored) rather than silently stored twice. Candidates
/// whose length bound cannot reach the threshold or beat the best so far are not scored.
pub fn find_person_match<'a>(
    index: &'a Index,
    content: &str,
    agent: Option<&str>,
    settings: &Settings,
) -> Option<(MemoryRef<'a>, f64)> {
    let threshold = settings.memory_dedup_threshold.value;
    let new = Prepared::new(content);
    let mut best: Option<(Pos, f64)> = None;
    for p in index.positions() {
        let seen = index.agent_at(p).is_none_or(|a| Some(a) == agent);
        if !seen || crate::provenance::by_agent(index.created_by_at(p)) {
            continue;
        }
        let text = index.content_at(p);
        // The length bound first, from an ASCII text's token lengths (lower-casing keeps them),
        // so most memories are never prepared.
        if let Some(chars) = ascii_sorted_chars(text)
            && Prepared::bound_of(new.chars(), chars) < threshold
        {
            continue;
        }
        let old = Prepared::new(text);
        let bound = new.bound(&old);
        if bound < threshold || best.is_some_and(|(_, b)| bound <= b) {
            continue;
        }
        let score = new.similarity(&old);
        if score >= threshold && best.is_none_or(|(_, b)| score > b) {
            best = Some((p, score));
        }
    }
    best.map(|(p, score)| (index.at(p), score))
}

/// Returns the length in characters of an ASCII text as the scorer compares it (its tokens joined
/// by single spaces), without preparing it; `None` for a text that is not ASCII.
fn ascii_sorted_chars(text: &str) -> Option<usize> {
    if !text.is_ascii() {
        return None;
    }
    let (mut chars, mut tokens) = (0, 0);
    for t in text.split(crate::format::frontmatter::py_isspace).filter(|t| !t.is_empty()) {
        chars += t.len();
        tokens += 1;
    }
    Some(chars + tokens.max(1) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ascii_length_is_the_prepared_length() {
        for text in ["", "  a  ", "The API  listens\ton port 8080 ", "x\x1fy", "one"] {
            assert_eq!(ascii_sorted_chars(text), Some(Prepared::new(text).chars()), "{text:?}");
        }
        assert_eq!(ascii_sorted_chars("οδος"), None);
    }
}
