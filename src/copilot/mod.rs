//! The Copilot-style record store: `.github/copilot-memories.jsonl` (SPEC §9, formats.md §1).
//!
//! One JSON object per line: `{"id","subject","fact","citations","reason","category"?,
//! "source":{"agent":"kb"},"created",...}`. The same lifecycle as the markdown store: the secret
//! filter on every field, dedup-on-write on `fact` within a subject with the markdown store's
//! scorer and threshold, consolidation that keeps the id, votes, forget. Every write holds the
//! repository lock and rewrites the whole file atomically, keeping untouched lines byte for byte
//! (`jsonl`); reading is tolerant (`record`). No printing and no clap here.
//!
//! Identity: a record is addressed by its `id`. A record without one (another tool may drop or
//! never write ids) gets the id kb would have given it, `mem-` + 8 hex digits of a hash of its
//! subject and fact, so it stays addressable by (subject, fact), and a kb record whose id another
//! tool stripped keeps the same id. kb writes that id into the record the first time it changes it.

pub mod jsonl;
pub mod merge;
pub mod record;

use crate::error::{Diagnostic, KbError};
use crate::format::frontmatter;
use crate::format::similarity::{lower_strip, similarity};
use crate::format::time::{self, Micros};
use crate::journal::Txn;
use crate::repo::Repo;
use crate::secrets;
use chrono::{DateTime, Utc};
use jsonl::Edit;
pub use jsonl::JsonlFile;
use record::{CitationsForm, Fields, Votes};

use serde::Serialize;
use std::borrow::Cow;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

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
            [] => Err(KbError::NotFound(id.to_string())),
            [one] => Ok(*one),
            many => {
                let lines: Vec<String> = many.iter().map(|r| r.line().to_string()).collect();
                Err(KbError::Invalid(format!(
                    "memory id {id} is used by {} records in {} (lines {}); run `kb check` and give each record its own id",
                    many.len(),
                    self.file.path.display(),
                    lines.join(", ")
                )))
            }
        }
    }

    /// Returns the only record whose fact is exactly `fact`, surrounding whitespace aside (on
    /// either side: another tool may have written a fact unstripped); an error when none or
    /// several are.
    pub fn by_fact(&self, fact: &str) -> Result<Record<'_>> {
        let fact = frontmatter::py_strip(fact);
        if fact.is_empty() {
            return Err(KbError::Invalid("the fact is empty: give the record's fact exactly, or its id".into()));
        }
        // The fact is echoed back redacted and cut short: an error must not repeat a secret.
        let redacted = secrets::redact(fact);
        let shown = crate::output::chars_prefix(&redacted, 120);
        let shown = if shown.len() < redacted.len() { format!("{shown}…") } else { shown.to_string() };
        let found: Vec<Record<'_>> = self.iter().filter(|r| frontmatter::py_strip(r.fact) == fact).collect();
        match found.as_slice() {
            [] => Err(KbError::Invalid(format!(
                "no Copilot record has the fact \"{shown}\": the fact must match a record's fact exactly; \
                 give the record's id instead"
            ))),
            [one] => Ok(*one),
            many => {
                let ids: Vec<&str> = many.iter().map(|r| r.id).collect();
                Err(KbError::Invalid(format!(
                    "{} Copilot records have the fact \"{shown}\" ({}): give the id of the one you mean",
                    many.len(),
                    ids.join(", ")
                )))
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
    /// citation (SPEC §3).
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

/// A request to store a record.
#[derive(Debug, Clone, Default)]
pub struct RecordRequest {
    pub subject: String,
    pub fact: String,
    pub citations: Vec<String>,
    pub reason: String,
    pub category: Option<String>,
    pub dry_run: bool,
    pub redact: bool,
    /// Appends a new record whatever the file holds (SPEC §5's `--no-dedup`).
    pub no_dedup: bool,
}

/// What a save did (or, with `dry_run`, would do).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordSaveOutcome {
    pub consolidated: bool,
    pub dry_run: bool,
    pub id: String,
    pub path: PathBuf,
    /// 1-based line of the record after the write.
    pub line: usize,
    pub similarity: Option<f64>,
    /// The fact a consolidation replaced.
    pub replaced: Option<String>,
    pub redacted: Vec<&'static str>,
}

/// Which way a vote goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Up,
    Down,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Up => "up",
            Direction::Down => "down",
        }
    }
}

/// The record a vote is for: its id, or its fact, matched exactly (Copilot's `vote_memory`
/// names a memory by its fact).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoteTarget<'a> {
    Id(&'a str),
    /// Only MCP's `vote_memory` names a record by its fact.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    Fact(&'a str),
}

/// What a vote did.
#[derive(Debug, Clone, PartialEq)]
pub struct VoteOutcome {
    pub id: String,
    pub path: PathBuf,
    pub line: usize,
    pub votes: Votes,
    /// Secret rules whose matches were redacted from the reason.
    pub redacted: Vec<&'static str>,
}

/// What a forget did.
#[derive(Debug, Clone, PartialEq)]
pub struct ForgetOutcome {
    pub id: String,
    pub path: PathBuf,
    /// The line the record was on.
    pub line: usize,
    pub subject: String,
}

/// A record kb is about to append, keys in kb's order.
#[derive(Debug, Serialize)]
pub struct Draft<'a> {
    pub id: &'a str,
    pub subject: &'a str,
    pub fact: &'a str,
    pub citations: &'a [String],
    pub reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<&'a str>,
    /// The markdown memory's tags, when the record comes from `kb export`.
    #[serde(skip)]
    pub tags: Option<&'a [String]>,
}

impl Draft<'_> {
    /// Returns the record's JSON line, created `now`, source `{"agent":"kb"}`.
    pub fn line(&self, now: DateTime<Utc>) -> String {
        #[derive(Serialize)]
        struct Line<'b> {
            #[serde(flatten)]
            draft: &'b Draft<'b>,
            source: Agent,
            created: String,
            #[serde(skip_serializing_if = "Option::is_none")]
            tags: Option<&'b [String]>,
        }
        let line =
            Line { draft: self, source: Agent { agent: AGENT }, created: time::py_isoformat(now), tags: self.tags };
        serde_json::to_string(&line).unwrap_or_default()
    }
}

#[derive(Serialize)]
struct Agent {
    agent: &'static str,
}

/// Returns a JSON string literal.
pub fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Returns a record's line with `changes` (key, JSON text) applied in place, and its id written
/// when it was derived. Untouched keys keep their text and order; a CR before the line feed goes.
pub fn edit_line(file: &JsonlFile, rec: &Record<'_>, changes: Vec<(&str, String)>) -> Result<String> {
    let mut changes = changes;
    if !rec.id_in_file {
        changes.insert(0, ("id", json_str(rec.id)));
    }
    let raw = file.raw(rec.index);
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let text = std::str::from_utf8(raw).map_err(|_| bad_line(file, rec.index, "not valid UTF-8"))?;
    jsonl::set_members(text, &changes).ok_or_else(|| bad_line(file, rec.index, "cannot edit this record"))
}

fn bad_line(file: &JsonlFile, index: usize, message: &str) -> KbError {
    KbError::BadFile(Diagnostic::error(Some(index + 1), message).in_file(&file.path))
}

/// Returns `existing` followed by each of `new` not already there, and whether that differs from
/// what the file holds.
pub fn merge_citations(existing: &[Cow<'_, str>], form: CitationsForm, new: &[String]) -> (Vec<String>, bool) {
    let mut out: Vec<String> = existing.iter().map(|c| c.to_string()).collect();
    for c in new {
        if !out.contains(c) {
            out.push(c.clone());
        }
    }
    let changed = out.len() != existing.len() || (form == CitationsForm::String && !out.is_empty());
    (out, changed)
}

/// The Copilot record store of one repository.
#[derive(Debug, Clone, Copy)]
pub struct RecordStore<'r> {
    repo: &'r Repo,
}

impl<'r> RecordStore<'r> {
    /// Returns the Copilot record store of `repo`.
    pub fn new(repo: &'r Repo) -> RecordStore<'r> {
        RecordStore { repo }
    }

    /// Returns the JSONL file's path.
    pub fn path(&self) -> PathBuf {
        self.repo.layout.copilot_memories()
    }

    /// Reads the file (a missing file is empty).
    pub fn read(&self) -> Result<JsonlFile> {
        let path = self.path();
        JsonlFile::read(&path, &self.repo.layout.root).map_err(|source| KbError::Io { path, source })
    }

    /// Rewrites the file with `edits` through `txn`, streamed from the old bytes (the journal,
    /// when the operation keeps one, records the prior bytes first). Returns the line numbers of
    /// appended lines. Nothing is written when there is no edit. This is the store's one write.
    pub fn write(&self, txn: &mut Txn, file: &JsonlFile, edits: &[Edit]) -> Result<Vec<usize>> {
        if edits.is_empty() {
            return Ok(Vec::new());
        }
        let path = &file.path;
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|source| KbError::Io { path: dir.to_path_buf(), source })?;
        self.repo.guard(dir)?;
        txn.write_streamed(path, |w| file.render_to(edits, w).map(drop))?;
        Ok(file.appended_lines(edits))
    }

    /// Decides what storing a screened record does ([`screen`]): dedup within its subject, then
    /// consolidate into the match or append (always append with `no_dedup`, under an id of its
    /// own). The caller holds the lock unless it is a dry run; [`RecordSavePlan::write`] writes it.
    pub fn plan_save(&self, req: RecordRequest, redacted: Vec<&'static str>) -> Result<RecordSavePlan> {
        let now = self.repo.now;
        let file = self.read()?;
        let all = Records::parse(&file);
        let threshold = self.repo.settings.memory_dedup_threshold.value;
        let duplicate = if req.no_dedup { None } else { all.find_duplicate(&req.subject, &req.fact, threshold) };
        if let Some((rec, score)) = duplicate {
            let fields = all.fields(&rec);
            let (citations, cites_changed) = merge_citations(&fields.citations, fields.citations_form, &req.citations);
            let mut changes = vec![("fact", json_str(&req.fact))];
            if cites_changed {
                changes.push(("citations", serde_json::to_string(&citations).unwrap_or_default()));
            }
            if fields.reason.as_deref() != Some(req.reason.as_str()) {
                changes.push(("reason", json_str(&req.reason)));
            }
            if let Some(c) = req.category.as_deref().filter(|c| rec.category != Some(*c)) {
                changes.push(("category", json_str(c)));
            }
            changes.push(("updated", json_str(&time::py_isoformat(now))));
            let line = edit_line(&file, &rec, changes)?;
            let outcome = RecordSaveOutcome {
                consolidated: true,
                dry_run: req.dry_run,
                id: rec.id.to_string(),
                path: file.path.clone(),
                line: rec.line(),
                similarity: Some(score),
                replaced: Some(rec.fact.to_string()),
                redacted,
            };
            let edit = Edit::Replace(rec.index, line);
            drop(all);
            return Ok(RecordSavePlan { outcome, file, edit });
        }
        let taken = all.ids();
        let id = draw_id(&req.subject, &req.fact, |c| taken.contains(c));
        drop(taken);
        drop(all);
        let line = Draft {
            id: &id,
            subject: &req.subject,
            fact: &req.fact,
            citations: &req.citations,
            reason: &req.reason,
            category: req.category.as_deref(),
            tags: None,
        }
        .line(now);
        let outcome = RecordSaveOutcome {
            consolidated: false,
            dry_run: req.dry_run,
            id,
            path: file.path.clone(),
            line: file.len() + 1,
            similarity: None,
            replaced: None,
            redacted,
        };
        Ok(RecordSavePlan { outcome, file, edit: Edit::Append(line) })
    }

    /// Counts a vote in the record's `votes` (other members of `votes` are kept) and notes it in
    /// `last_vote` (direction, reason, time), through `txn`. `reason` was checked by
    /// [`vote_reason`]; `redacted` names the secret rules it redacted.
    pub fn vote(
        &self,
        txn: &mut Txn,
        target: VoteTarget<'_>,
        direction: Direction,
        reason: &str,
        redacted: Vec<&'static str>,
    ) -> Result<VoteOutcome> {
        let now = self.repo.now;
        let file = self.read()?;
        let all = Records::parse(&file);
        let rec = match target {
            VoteTarget::Id(id) => all.one(id)?,
            VoteTarget::Fact(fact) => all.by_fact(fact)?,
        };
        if !rec.votes_ok {
            return Err(bad_line(&file, rec.index, "\"votes\" is malformed; fix it by hand before voting"));
        }
        let mut votes = rec.votes;
        match direction {
            Direction::Up => votes.up = votes.up.saturating_add(1),
            Direction::Down => votes.down = votes.down.saturating_add(1),
        }
        let raw = file.raw(rec.index);
        let text = std::str::from_utf8(raw.strip_suffix(b"\r").unwrap_or(raw)).unwrap_or("");
        let existing = jsonl::members(text)
            .and_then(|(_, _, ms)| ms.into_iter().find(|m| m.key == "votes"))
            .map(|m| &text[m.value_start..m.value_end])
            .filter(|v| v.starts_with('{'));
        let counts = [("up", votes.up.to_string()), ("down", votes.down.to_string())];
        let votes_json = match existing.and_then(|v| jsonl::set_members(v, &counts)) {
            Some(v) => v,
            None => serde_json::to_string(&votes).unwrap_or_default(),
        };
        #[derive(Serialize)]
        struct LastVote<'a> {
            direction: &'a str,
            reason: &'a str,
            at: String,
        }
        let last = LastVote { direction: direction.as_str(), reason, at: time::py_isoformat(now) };
        let last = serde_json::to_string(&last).unwrap_or_default();
        let line = edit_line(&file, &rec, vec![("votes", votes_json), ("last_vote", last)])?;
        self.write(txn, &file, &[Edit::Replace(rec.index, line)])?;
        Ok(VoteOutcome { id: rec.id.to_string(), path: file.path.clone(), line: rec.line(), votes, redacted })
    }

    /// Deletes the record with this id through `txn` (its line goes; every other line stays as
    /// it was).
    pub fn forget(&self, txn: &mut Txn, id: &str) -> Result<ForgetOutcome> {
        let file = self.read()?;
        let all = Records::parse(&file);
        let rec = all.one(id)?;
        self.write(txn, &file, &[Edit::Delete(rec.index)])?;
        Ok(ForgetOutcome {
            id: rec.id.to_string(),
            path: file.path.clone(),
            line: rec.line(),
            subject: rec.subject.to_string(),
        })
    }
}

/// Checks a vote's reason: stripped, not empty; a secret in it is refused, or with `redact`
/// replaced by `[REDACTED:<rule>]`. Returns the reason and the rules redacted.
pub fn vote_reason(reason: &str, redact: bool) -> Result<(String, Vec<&'static str>)> {
    let reason = frontmatter::py_strip(reason);
    if reason.is_empty() {
        return Err(KbError::Invalid("a vote needs a reason: the reason is empty".into()));
    }
    let mut screen = secrets::Screen::new(redact);
    let reason = screen.field("reason", reason.to_string())?;
    Ok((reason, screen.redacted()))
}

/// What storing a record will do ([`RecordStore::plan_save`]).
pub struct RecordSavePlan {
    outcome: RecordSaveOutcome,
    file: JsonlFile,
    edit: Edit,
}

impl RecordSavePlan {
    /// Returns what the save does (or, in a dry run, would do).
    pub fn outcome(&self) -> &RecordSaveOutcome {
        &self.outcome
    }

    /// Returns whether the save replaces a record's fact (a consolidation): its operation
    /// journals it, so `kb undo` brings the old fact back.
    pub fn replaces(&self) -> bool {
        self.outcome.consolidated
    }

    /// Writes the save through `txn`.
    pub fn write(self, store: &RecordStore<'_>, txn: &mut Txn) -> Result<RecordSaveOutcome> {
        let RecordSavePlan { mut outcome, file, edit } = self;
        let appended = store.write(txn, &file, std::slice::from_ref(&edit))?;
        if let Some(&line) = appended.first() {
            outcome.line = line;
        }
        Ok(outcome)
    }
}

/// Validates and screens a request: every field stripped, subject, fact and reason non-empty,
/// citations without blanks or repeats, the secret filter on every field.
pub fn screen(mut req: RecordRequest) -> Result<(RecordRequest, Vec<&'static str>)> {
    let strip = |s: &str| frontmatter::py_strip(s).to_string();
    req.subject = strip(&req.subject);
    req.fact = strip(&req.fact);
    req.reason = strip(&req.reason);
    req.category = req.category.as_deref().map(strip).filter(|c| !c.is_empty());
    for (name, value) in [("subject", &req.subject), ("fact", &req.fact), ("reason", &req.reason)] {
        if value.is_empty() {
            return Err(KbError::Invalid(format!("nothing to save: the {name} is empty")));
        }
    }
    let mut citations: Vec<String> = Vec::new();
    for c in &req.citations {
        let c = strip(c);
        if !c.is_empty() && !citations.contains(&c) {
            citations.push(c);
        }
    }
    req.citations = citations;
    let mut screen = secrets::Screen::new(req.redact);
    let mut check = |field: &str, text: &mut String| -> Result<()> {
        *text = screen.field(field, std::mem::take(text))?;
        Ok(())
    };
    check("subject", &mut req.subject)?;
    check("fact", &mut req.fact)?;
    for c in &mut req.citations {
        check("citation", c)?;
    }
    check("reason", &mut req.reason)?;
    if let Some(c) = &mut req.category {
        check("category", c)?;
    }
    let redacted = screen.redacted();
    Ok((req, redacted))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stores a record as `kb save --store copilot` does (screen, lock, plan, write).
    fn save(s: &RecordStore<'_>, req: RecordRequest) -> Result<RecordSaveOutcome> {
        let (req, redacted) = screen(req)?;
        if req.dry_run {
            return Ok(s.plan_save(req, redacted)?.outcome().clone());
        }
        let mut txn = Txn::unrecorded(s.repo.lock()?);
        s.plan_save(req, redacted)?.write(s, &mut txn)
    }

    /// Votes as `kb vote` does.
    fn vote(
        s: &RecordStore<'_>,
        target: VoteTarget<'_>,
        d: Direction,
        reason: &str,
        redact: bool,
    ) -> Result<VoteOutcome> {
        let (reason, redacted) = vote_reason(reason, redact)?;
        let mut txn = Txn::unrecorded(s.repo.lock()?);
        s.vote(&mut txn, target, d, &reason, redacted)
    }

    /// Forgets as `kb forget` does, without a journal.
    fn forget(s: &RecordStore<'_>, id: &str) -> Result<ForgetOutcome> {
        let mut txn = Txn::unrecorded(s.repo.lock()?);
        s.forget(&mut txn, id)
    }
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 22, 12, 0, 0).unwrap()
    }

    fn repo(dir: &Path) -> Repo {
        let layout = crate::paths::Layout { root: dir.to_path_buf(), config: None };
        Repo { layout, settings: crate::settings::Settings::default(), now: now(), env: Default::default() }
    }

    fn req(subject: &str, fact: &str, cites: &[&str]) -> RecordRequest {
        RecordRequest {
            subject: subject.into(),
            fact: fact.into(),
            citations: cites.iter().map(|c| c.to_string()).collect(),
            reason: "because".into(),
            ..Default::default()
        }
    }

    #[test]
    fn ids_are_stable_short_and_redrawn() {
        let a = draw_id("build", "Run nextest", |_| false);
        assert_eq!(a, draw_id("build", "Run nextest", |_| false));
        assert!(a.starts_with("mem-") && a.len() == 12 && a[4..].chars().all(|c| c.is_ascii_hexdigit()));
        let b = draw_id("build", "Run nextest", |c| c == a);
        assert_ne!(a, b);
        assert_ne!(draw_id("build", "x", |_| false), draw_id("buil", "dx", |_| false));
    }

    #[test]
    fn derived_ids_for_records_without_one() {
        let fact_id = draw_id("s", "f", |_| false);
        let text = format!(
            "{{\"subject\":\"s\",\"fact\":\"f\"}}\n{{\"id\":\"{fact_id}\",\"subject\":\"t\",\"fact\":\"g\"}}\n"
        );
        let file = JsonlFile::from_bytes("x".into(), text.into_bytes(), true);
        let all = Records::parse(&file);
        let first = all.iter().next().unwrap();
        assert!(!first.id_in_file);
        assert_ne!(first.id, fact_id, "a derived id never takes one in use");
        assert_eq!(all.find(&fact_id).len(), 1);
    }

    #[test]
    fn escaped_strings_and_derived_ids_live_in_the_arena() {
        let text = "{\"id\":\"a\\u0062\",\"subject\":\"s\\\"q\",\"fact\":\"caf\\u00e9\",\"created\":\"2026-01-01T00:00:00Z\"}\n{\"subject\":\"t\",\"fact\":\"plain\",\"category\":\"c\"}\n";
        let file = JsonlFile::from_bytes("x".into(), text.as_bytes().to_vec(), true);
        let all = Records::parse(&file);
        let rs: Vec<Record<'_>> = all.iter().collect();
        assert_eq!((rs[0].id, rs[0].subject, rs[0].fact), ("ab", "s\"q", "café"));
        assert_eq!((rs[0].created, rs[0].category, rs[0].updated), (Some("2026-01-01T00:00:00Z"), None, None));
        assert_eq!((rs[1].id, rs[1].category), (draw_id("t", "plain", |_| false).as_str(), Some("c")));
        assert_eq!(all.find("ab").len(), 1);
    }

    #[test]
    fn queries_match_like_lowercased_substrings() {
        let cases = [
            ("cache", "A Cache layer", true),
            ("CACHE", "a cache layer", true),
            ("a.c", "abc", false),
            ("", "anything", true),
            ("k", "\u{212a}elvin", true),
            ("über", "ÜBER alles", true),
            ("x+y", "X+Y", true),
            ("x y", "x  y", false),
        ];
        for (q, text, want) in cases {
            let query = Query::new(q);
            assert_eq!(query.found_in(text), want, "{q:?} in {text:?}");
            assert_eq!(query.found_in(text), crate::format::text::contains_lower(text, &q.to_lowercase()));
        }
    }

    #[test]
    fn save_appends_then_consolidates_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let s = RecordStore::new(&repo);
        let first = save(&s, req("build", "Run cargo nextest before pushing", &["Makefile:14"])).unwrap();
        assert!(!first.consolidated);
        assert_eq!(first.line, 1);
        save(&s, req("docs", "Docs live in docs/", &[])).unwrap();
        let again =
            save(&s, req("Build ", "run cargo nextest before pushing!", &["Makefile:14", ".ci/run:3"])).unwrap();
        assert!(again.consolidated && again.similarity.unwrap() >= 85.0);
        assert_eq!((again.id.as_str(), again.line), (first.id.as_str(), 1));
        let text = std::fs::read_to_string(s.path()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(v["fact"], "run cargo nextest before pushing!");
        assert_eq!(v["subject"], "build", "the subject keeps its spelling");
        assert_eq!(v["citations"], serde_json::json!(["Makefile:14", ".ci/run:3"]));
        assert_eq!(v["updated"], "2026-11-22T12:00:00+00:00");
        // Same fact under another subject is not a duplicate.
        let other = save(&s, req("ci", "Run cargo nextest before pushing", &[])).unwrap();
        assert!(!other.consolidated);
    }

    #[test]
    fn dry_run_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let s = RecordStore::new(&repo);
        let out = save(&s, RecordRequest { dry_run: true, ..req("a", "b", &[]) }).unwrap();
        assert!(out.dry_run && !s.path().exists());
        assert!(!dir.path().join(".co-cli").exists(), "a dry run takes no lock");
    }

    #[test]
    fn empty_fields_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let s = RecordStore::new(&repo);
        for r in [req(" ", "f", &[]), req("s", "\n", &[]), RecordRequest { reason: " ".into(), ..req("s", "f", &[]) }] {
            assert!(matches!(save(&s, r), Err(KbError::Invalid(_))));
        }
    }

    #[test]
    fn votes_keep_other_members() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let s = RecordStore::new(&repo);
        std::fs::create_dir_all(dir.path().join(".github")).unwrap();
        std::fs::write(
            s.path(),
            "{\"id\":\"m1\",\"subject\":\"s\",\"fact\":\"f\",\"votes\":{\"by\":[\"x\"],\"up\":1}}\r\n{\"subject\":\"t\",\"fact\":\"g\"}\n",
        )
        .unwrap();
        let out = vote(&s, VoteTarget::Id("m1"), Direction::Down, "stale", false).unwrap();
        assert_eq!(out.votes, Votes { up: 1, down: 1 });
        let text = std::fs::read_to_string(s.path()).unwrap();
        assert!(text.starts_with("{\"id\":\"m1\",\"subject\":\"s\",\"fact\":\"f\",\"votes\":{\"by\":[\"x\"],\"up\":1,\"down\":1},\"last_vote\":{"), "{text}");
        assert!(text.ends_with("\n{\"subject\":\"t\",\"fact\":\"g\"}\n"));
        let derived = draw_id("t", "g", |_| false);
        vote(&s, VoteTarget::Id(&derived), Direction::Up, "ok", false).unwrap();
        let text = std::fs::read_to_string(s.path()).unwrap();
        assert!(text.contains(&format!(
            "{{\"subject\":\"t\",\"fact\":\"g\",\"id\":\"{derived}\",\"votes\":{{\"up\":1,\"down\":0}}"
        )));
    }

    #[test]
    fn votes_by_exact_fact_and_with_a_redacted_reason() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let s = RecordStore::new(&repo);
        std::fs::create_dir_all(dir.path().join(".github")).unwrap();
        std::fs::write(
            s.path(),
            "{\"id\":\"a\",\"subject\":\"s\",\"fact\":\"Use tabs\"}\n{\"id\":\"b\",\"subject\":\"t\",\"fact\":\"Twice\"}\n{\"id\":\"c\",\"subject\":\"u\",\"fact\":\"Twice\"}\n",
        )
        .unwrap();
        let out = vote(&s, VoteTarget::Fact(" Use tabs\n"), Direction::Up, "right", false).unwrap();
        assert_eq!((out.id.as_str(), out.votes, out.redacted.len()), ("a", Votes { up: 1, down: 0 }, 0));
        for (fact, expect) in [
            ("use tabs", "no Copilot record has the fact \"use tabs\""),
            ("Use tab", "no Copilot record has the fact"),
            ("Twice", "2 Copilot records have the fact \"Twice\" (b, c)"),
            ("  ", "the fact is empty"),
        ] {
            let e = vote(&s, VoteTarget::Fact(fact), Direction::Down, "r", false).unwrap_err().to_string();
            assert!(e.starts_with(expect), "{fact:?}: {e}");
        }
        let secret = format!("leaked ghp_{} here", "A1b2C3d4E5f6".repeat(3));
        assert!(matches!(vote(&s, VoteTarget::Id("b"), Direction::Down, &secret, false), Err(KbError::Secret { .. })));
        let out = vote(&s, VoteTarget::Id("b"), Direction::Down, &secret, true).unwrap();
        assert_eq!(out.redacted, ["github-pat"]);
        let text = std::fs::read_to_string(s.path()).unwrap();
        assert!(text.contains("leaked [REDACTED:github-pat] here") && !text.contains("ghp_"), "{text}");
    }

    #[test]
    fn forget_removes_only_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let s = RecordStore::new(&repo);
        std::fs::create_dir_all(dir.path().join(".github")).unwrap();
        std::fs::write(s.path(), "not json\n{\"id\":\"a\",\"subject\":\"s\",\"fact\":\"f\"}\n\n{\"id\":\"b\",\"subject\":\"s\",\"fact\":\"g\"}").unwrap();
        let out = forget(&s, "a").unwrap();
        assert_eq!(out.line, 2);
        assert_eq!(
            std::fs::read_to_string(s.path()).unwrap(),
            "not json\n\n{\"id\":\"b\",\"subject\":\"s\",\"fact\":\"g\"}\n"
        );
        assert!(matches!(forget(&s, "a"), Err(KbError::NotFound(_))));
    }

    #[test]
    fn duplicate_ids_are_found_and_refused() {
        let text = "{\"id\":\"a\",\"subject\":\"s\",\"fact\":\"f\"}\n{\"id\":\"a\",\"subject\":\"s\",\"fact\":\"g\"}\n";
        let file = JsonlFile::from_bytes("x".into(), text.as_bytes().to_vec(), true);
        let all = Records::parse(&file);
        assert_eq!(all.duplicate_ids(), vec![("a", vec![1, 2])]);
        assert!(all.one("a").unwrap_err().to_string().contains("lines 1, 2"));
    }

    #[test]
    fn timestamps_are_checked() {
        let text = "{\"subject\":\"s\",\"fact\":\"f\",\"created\":\"2026-01-01\"}\n";
        let file = JsonlFile::from_bytes("x".into(), text.as_bytes().to_vec(), true);
        let all = Records::parse_checked(&file);
        assert_eq!(all.len(), 1);
        assert!(all.problems[0].message.contains("date without a time") && !all.problems[0].skipped());
        assert!(Records::parse(&file).problems.is_empty(), "only check looks at values it does not need");
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_parse_without_panic(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let file = JsonlFile::from_bytes("x".into(), data, true);
            let all = Records::parse(&file);
            for r in all.iter() {
                let _ = edit_line(&file, &r, vec![("votes", "{}".into())]);
                let _ = all.fields(&r);
            }
        }

        #[test]
        fn json_lines_parse_without_panic(line in "[{}\\[\\]\",:a-z0-9 .\\\\-]{0,60}") {
            let file = JsonlFile::from_bytes("x".into(), line.into_bytes(), true);
            let _ = Records::parse(&file);
        }
    }
}
