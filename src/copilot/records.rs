//! The read model of the record file: its valid records, borrowed from the file's bytes, and
//! what listing, recall, dedup and addressing ask of them.

use super::jsonl::{self, JsonlFile};
use super::record::{self, Fields, Votes};
use crate::error::{Diagnostic, KbError};
use crate::format::frontmatter;
use crate::format::similarity::{lower_strip, similarity};
use crate::format::time::{self, Micros};
use crate::secrets;
use std::borrow::Cow;
use std::collections::HashSet;

type Result<T> = std::result::Result<T, KbError>;

/// The `source.agent` kb writes.
pub const AGENT: &str = "kb";

/// A valid record of the file, borrowed from `Records`: what listing, ordering, dedup and
/// addressing need. The other keys (`citations`, `reason`, `source`...) are parsed on demand by
/// `Records::fields`.
#[derive(Debug, Clone, Copy)]
pub struct Record<'r> {
    /// 0-based line index in the file.
    pub index: usize,
    /// The id: as written, or derived from subject and fact when the record has none.
    pub id: &'r str,
    /// False when `id` was derived.
    pub id_in_file: bool,
    pub subject: &'r str,
    pub fact: &'r str,
    pub category: Option<&'r str>,
    pub created: Option<&'r str>,
    pub updated: Option<&'r str>,
    pub created_at: Option<Micros>,
    pub updated_at: Option<Micros>,
    pub votes: Votes,
    /// False when `votes` is present but malformed.
    pub votes_ok: bool,
    /// Who created the record (provenance); `None`: absent, a person's.
    pub created_by: Option<&'r str>,
    /// Who last rewrote it.
    pub updated_by: Option<&'r str>,
}

impl Record<'_> {
    /// Returns the 1-based line number.
    pub fn line(&self) -> usize {
        self.index + 1
    }

    /// Returns the key records are ordered by in time: created (undated first), then line.
    pub fn age_key(&self) -> (Micros, usize) {
        (self.created_at.unwrap_or(Micros::MIN), self.index)
    }

    /// Returns when the record last changed: `updated`, else `created`.
    pub fn changed_at(&self) -> Option<Micros> {
        self.updated_at.or(self.created_at)
    }

    /// Returns true when it has more down than up votes: it stays out of the compiled context.
    pub fn downvoted(&self) -> bool {
        self.votes.down > self.votes.up
    }
}

/// A string of a record: a range of the file's bytes, or (for strings with escapes, and derived
/// ids) of the `Records` arena. Eight bytes instead of a 24-byte `Cow`, so 100,000 records take
/// about 10 MB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Text {
    start: u32,
    /// Length; the top bit marks the arena.
    len: u32,
}

impl Text {
    const NONE: Text = Text { start: u32::MAX, len: u32::MAX };
    const ARENA: u32 = 1 << 31;
}

/// A record as stored.
#[derive(Debug, Clone, Copy)]
struct Slot {
    index: u32,
    id_in_file: bool,
    votes_ok: bool,
    id: Text,
    subject: Text,
    fact: Text,
    category: Text,
    created: Text,
    updated: Text,
    created_at: Option<Micros>,
    updated_at: Option<Micros>,
    votes: Votes,
    created_by: Text,
    updated_by: Text,
}

/// The records of one file, parsed.
#[derive(Debug)]
pub struct Records<'a> {
    pub file: &'a JsonlFile,
    /// The whole file as text, when it is valid UTF-8 (then strings need no check on access).
    whole: Option<&'a str>,
    slots: Vec<Slot>,
    /// Strings that are not in the file as they read: unescaped strings and derived ids.
    arena: String,
    /// Problems in line order: every skipped line; with `parse_checked`, also bad values.
    /// (Error: the line is not a record, kept verbatim and left out of every read; warning: a bad
    /// value read as absent.) The diagnostics carry no path: the file is `file.path`.
    pub problems: Vec<Diagnostic>,
}

/// A set of ids, with rustc's Fx hash: much cheaper than SipHash for short keys; ids come from
/// files the user controls, so flooding is not a threat worth SipHash's cost here.
pub type IdSet<'a> = rustc_hash::FxHashSet<&'a str>;

impl<'a> Records<'a> {
    /// Parses every line of `file` for reading and writing; bad values of keys it skips are
    /// not looked at.
    pub fn parse(file: &'a JsonlFile) -> Records<'a> {
        Records::parse_with(file, false)
    }

    /// Parses every line of `file` and also reports every bad value (`kb check`).
    pub fn parse_checked(file: &'a JsonlFile) -> Records<'a> {
        Records::parse_with(file, true)
    }

    fn parse_with(file: &'a JsonlFile, full: bool) -> Records<'a> {
        let whole = std::str::from_utf8(file.data()).ok();
        let slots = Vec::with_capacity(file.len());
        let mut all = Records { file, whole, slots, arena: String::new(), problems: Vec::new() };
        let base = file.data().as_ptr() as usize;
        let end = base + file.data().len();
        for index in 0..file.len() {
            let text = match file.text_in(index, whole) {
                None => continue,
                Some(Ok(t)) => t,
                Some(Err(message)) => {
                    all.problems.push(Diagnostic::error(Some(index + 1), message));
                    continue;
                }
            };
            let parsed = if full { record::parse(text) } else { record::parse_light(text) };
            let f = match parsed {
                Ok(f) => f,
                Err(message) => {
                    all.problems.push(Diagnostic::error(Some(index + 1), message));
                    continue;
                }
            };
            for w in f.warnings {
                all.problems.push(Diagnostic::warning(Some(index + 1), w));
            }
            let mut stamp = |key: &str, v: &Option<Cow<'_, str>>| {
                let v = v.as_deref()?;
                match time::parse(v) {
                    Ok(at) => Some(time::micros(at)),
                    Err(e) => {
                        if full {
                            let message = format!("\"{key}\": {e}");
                            all.problems.push(Diagnostic::warning(Some(index + 1), message));
                        }
                        None
                    }
                }
            };
            let created_at = stamp("created", &f.created);
            let updated_at = stamp("updated", &f.updated);
            // A borrowed string points into the file's bytes; anything else goes to the arena.
            let mut keep = |s: Option<&str>| -> Text {
                let Some(s) = s else { return Text::NONE };
                let at = s.as_ptr() as usize;
                // `JsonlFile::read` refuses files over 2 GiB, so an offset into one fits in 31 bits.
                if at >= base && at + s.len() <= end && end - base <= jsonl::MAX_BYTES {
                    return Text { start: (at - base) as u32, len: s.len() as u32 };
                }
                let start = all.arena.len() as u32;
                all.arena.push_str(s);
                Text { start, len: s.len() as u32 | Text::ARENA }
            };
            let slot = Slot {
                index: index as u32,
                id_in_file: f.id.is_some(),
                votes_ok: f.votes_ok,
                id: keep(f.id.as_deref()),
                subject: keep(Some(&f.subject)),
                fact: keep(Some(&f.fact)),
                category: keep(f.category.as_deref()),
                created: keep(f.created.as_deref()),
                updated: keep(f.updated.as_deref()),
                created_at,
                updated_at,
                votes: f.votes,
                created_by: keep(f.created_by.as_deref()),
                updated_by: keep(f.updated_by.as_deref()),
            };
            all.slots.push(slot);
        }
        all.derive_missing_ids();
        all
    }

    /// Returns the text of a stored string.
    fn text(&self, t: Text) -> Option<&str> {
        if t == Text::NONE {
            return None;
        }
        let (start, len) = (t.start as usize, (t.len & !Text::ARENA) as usize);
        if t.len & Text::ARENA != 0 {
            return self.arena.get(start..start + len);
        }
        match self.whole {
            Some(text) => text.get(start..start + len),
            None => self.file.data().get(start..start + len).and_then(|b| std::str::from_utf8(b).ok()),
        }
    }

    /// Returns the record at `position` in file order (not a line number).
    pub fn get(&self, position: usize) -> Option<Record<'_>> {
        self.slots.get(position).map(|s| self.record(s))
    }

    fn record(&self, s: &Slot) -> Record<'_> {
        Record {
            index: s.index as usize,
            id: self.text(s.id).unwrap_or(""),
            id_in_file: s.id_in_file,
            subject: self.text(s.subject).unwrap_or(""),
            fact: self.text(s.fact).unwrap_or(""),
            category: self.text(s.category),
            created: self.text(s.created),
            updated: self.text(s.updated),
            created_at: s.created_at,
            updated_at: s.updated_at,
            votes: s.votes,
            votes_ok: s.votes_ok,
            created_by: self.text(s.created_by),
            updated_by: self.text(s.updated_by),
        }
    }

    /// Returns the valid records, in file order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Record<'_>> + ExactSizeIterator {
        self.slots.iter().map(|s| self.record(s))
    }

    /// Returns the number of valid records.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Returns true when the file has no valid record.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Returns every field of a record (parsed again from its line).
    pub fn fields(&self, r: &Record<'_>) -> Fields<'a> {
        match self.file.text(r.index) {
            Some(Ok(text)) => record::parse(text).unwrap_or_default(),
            _ => Fields::default(),
        }
    }

    /// Gives each record without an id the id kb would have written for it, skipping ids in use.
    fn derive_missing_ids(&mut self) {
        if self.slots.iter().all(|s| s.id_in_file) {
            return;
        }
        let mut derived: Vec<(usize, String)> = Vec::new();
        {
            let taken: IdSet<'_> = self.iter().filter(|r| r.id_in_file).map(|r| r.id).collect();
            let mut fresh: HashSet<String> = HashSet::new();
            for (i, r) in self.iter().enumerate().filter(|(_, r)| !r.id_in_file) {
                let id = draw_id(r.subject, r.fact, |c| taken.contains(c) || fresh.contains(c));
                fresh.insert(id.clone());
                derived.push((i, id));
            }
        }
        for (i, id) in derived {
            let start = self.arena.len() as u32;
            self.arena.push_str(&id);
            self.slots[i].id = Text { start, len: id.len() as u32 | Text::ARENA };
        }
    }

    /// Returns the records with this id (more than one only when the file repeats an id).
    pub fn find(&self, id: &str) -> Vec<Record<'_>> {
        self.iter().filter(|r| r.id == id).collect()
    }

    /// Returns the only record with this id; an error when there is none or several.
    pub fn one(&self, id: &str) -> Result<Record<'_>> {
        match self.find(id).as_slice() {
            [] => Err(KbError::not_found("memory", id)),
            [one] => Ok(*one),
            many => Err(KbError::DuplicateId {
                thing: "memory",
                id: id.to_string(),
                files: vec![self.file.path.display().to_string()],
                lines: many.iter().map(|r| r.line()).collect(),
            }),
        }
    }

    /// Returns the only record whose fact is exactly `fact`, surrounding whitespace aside (on
    /// either side: another tool may have written a fact unstripped); an error when none or
    /// several are.
    pub fn by_fact(&self, fact: &str) -> Result<Record<'_>> {
        let fact = frontmatter::py_strip(fact);
        if fact.is_empty() {
            return Err(KbError::rejected("fact", "the fact is empty: give the record's fact exactly, or its id"));
        }
        // The fact is echoed back redacted and cut short: an error must not repeat a secret.
        let redacted = secrets::redact(fact);
        let shown = crate::output::chars_prefix(&redacted, 120);
        let shown = if shown.len() < redacted.len() { format!("{shown}…") } else { shown.to_string() };
        let found: Vec<Record<'_>> = self.iter().filter(|r| frontmatter::py_strip(r.fact) == fact).collect();
        match found.as_slice() {
            [] => Err(KbError::rejected(
                "fact",
                format!(
                    "no Copilot record has the fact \"{shown}\": the fact must match a record's fact exactly; \
                     give the record's id instead"
                ),
            )),
            [one] => Ok(*one),
            many => {
                let ids: Vec<&str> = many.iter().map(|r| r.id).collect();
                Err(KbError::rejected(
                    "fact",
                    format!(
                        "{} Copilot records have the fact \"{shown}\" ({}): give the id of the one you mean",
                        many.len(),
                        ids.join(", ")
                    ),
                ))
            }
        }
    }

    /// Returns each id written on more than one line, with those line numbers, by first line.
    pub fn duplicate_ids(&self) -> Vec<(&str, Vec<usize>)> {
        let mut all: Vec<(&str, usize)> = self.iter().filter(|r| r.id_in_file).map(|r| (r.id, r.line())).collect();
        all.sort_unstable();
        let mut dups: Vec<(&str, Vec<usize>)> = Vec::new();
        for group in all.chunk_by(|a, b| a.0 == b.0).filter(|g| g.len() > 1) {
            dups.push((group[0].0, group.iter().map(|(_, l)| *l).collect()));
        }
        dups.sort_by_key(|(_, lines)| lines[0]);
        dups
    }

    /// Returns every id in use.
    pub fn ids(&self) -> IdSet<'_> {
        self.iter().map(|r| r.id).collect()
    }

    /// Returns the most similar record of the same subject when it reaches `threshold`, with its
    /// score. Every record of the subject is a candidate (Copilot facts do not age out); a tie goes
    /// to the newer record.
    pub fn find_duplicate(&self, subject: &str, fact: &str, threshold: f64) -> Option<(Record<'_>, f64)> {
        let subject = lower_strip(subject);
        let mut candidates: Vec<Record<'_>> = self.iter().filter(|r| same_subject(r.subject, &subject)).collect();
        candidates.sort_by_key(|r| std::cmp::Reverse(r.age_key()));
        let mut best: Option<(Record<'_>, f64)> = None;
        for r in candidates {
            let score = similarity(fact, r.fact);
            if best.is_none_or(|(_, b)| score > b) {
                best = Some((r, score));
            }
        }
        best.filter(|(_, s)| *s >= threshold)
    }

    /// Returns whether every word of `query` occurs in the record's subject, fact, reason or a
    /// citation.
    pub fn matches(&self, r: &Record<'_>, query: &[Query]) -> bool {
        query.iter().all(|word| self.matches_word(r, word))
    }

    /// Returns whether `query` occurs in the record's subject, fact, reason or a citation.
    fn matches_word(&self, r: &Record<'_>, query: &Query) -> bool {
        if query.found_in(r.fact) || query.found_in(r.subject) {
            return true;
        }
        // Reason and citations are not kept in memory: look at the raw line first, and parse it
        // only when the query may be in it (an escape could hide it from the raw text).
        let raw = self.file.raw(r.index);
        let maybe = raw.contains(&b'\\') || std::str::from_utf8(raw).is_ok_and(|t| query.found_in(t));
        if !maybe {
            return false;
        }
        let f = self.fields(r);
        f.reason.as_deref().is_some_and(|x| query.found_in(x)) || f.citations.iter().any(|c| query.found_in(c))
    }
}

/// A recall query: one case-insensitive substring, as the markdown store's recall matches it
/// (Python's `query.lower() in text.lower()`).
#[derive(Debug, Clone)]
pub struct Query {
    lower: String,
    /// For an ASCII query in ASCII text, where lower-casing both is plain ASCII case folding: a
    /// literal search, much faster than comparing at every offset.
    ascii: Option<regex::bytes::Regex>,
}

impl Query {
    /// Returns one query per word of `query` (a blank query is one empty word, matching all).
    pub fn words(query: &str) -> Vec<Query> {
        crate::format::text::query_words(query).iter().map(|w| Query::new(w)).collect()
    }

    pub fn new(query: &str) -> Query {
        let ascii = query.is_ascii().then(|| {
            regex::bytes::RegexBuilder::new(&regex::escape(query)).unicode(false).case_insensitive(true).build().ok()
        });
        Query { lower: query.to_lowercase(), ascii: ascii.flatten() }
    }

    /// Returns whether the query occurs in `text`, ignoring case.
    pub fn found_in(&self, text: &str) -> bool {
        match &self.ascii {
            Some(re) if text.is_ascii() => re.is_match(text.as_bytes()),
            _ => crate::format::text::contains_lower(text, &self.lower),
        }
    }
}

/// Returns whether `subject` normalises (lower-cased, stripped) to `normalized`, without
/// allocating for ASCII text.
pub fn same_subject(subject: &str, normalized: &str) -> bool {
    let t = subject.trim_matches(frontmatter::py_isspace);
    if t.is_ascii() && normalized.is_ascii() {
        return t.eq_ignore_ascii_case(normalized);
    }
    lower_strip(subject) == normalized
}

/// Returns the id kb gives a record: `mem-` and 8 hex digits of an FNV-1a hash of subject and
/// fact, re-drawn (with a counter in the hash) while `taken` says it is in use.
///
/// Why this form: short enough to type, stable (the same record always gets the same id, so an
/// id survives another tool dropping it), and FNV is fixed by its definition, not by a Rust
/// version. 32 bits collide rarely; a collision only costs a re-draw.
pub fn draw_id(subject: &str, fact: &str, taken: impl Fn(&str) -> bool) -> String {
    for attempt in 0u64.. {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut feed = |bytes: &[u8]| {
            for &b in bytes {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        feed(subject.as_bytes());
        feed(&[0x1f]);
        feed(fact.as_bytes());
        if attempt > 0 {
            feed(&[0x1f]);
            feed(attempt.to_string().as_bytes());
        }
        let id = format!("mem-{:08x}", (h ^ (h >> 32)) as u32);
        if !taken(&id) {
            return id;
        }
    }
    unreachable!("u64 attempts exhausted")
}
