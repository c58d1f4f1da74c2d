//! One line of `.github/copilot-memories.jsonl`, parsed tolerantly into borrowed fields.
//!
//! The record schema is not public (formats.md §1.1), so the reader accepts what Copilot, VS Code
//! and people plausibly write: `citations` as a list or a comma-separated string, `source` as an
//! object or a string, integer ids, unknown keys (skipped here; the line's bytes keep them). Only
//! a line kb cannot address or show is fatal: not JSON, not an object, no string `subject` or
//! `fact`, an `id` that is not a string or an integer, or a known key given twice. A known key of
//! the wrong type is a warning and reads as absent. This module owns no IO and no ids.

use serde::Deserializer;
use serde::de::{self, Deserialize, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// A record's vote counts (`votes: {"up":N,"down":N}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Votes {
    pub up: u64,
    pub down: u64,
}

/// How `citations` was written, so a rewrite can say what it normalised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CitationsForm {
    #[default]
    Absent,
    List,
    /// A comma-separated string, as Copilot CLI's tool arguments carry it.
    String,
}

/// The fields kb reads from one valid record line, borrowing from the line when it can.
#[derive(Debug, Clone, Default)]
pub struct Fields<'a> {
    /// The `id` as written (an integer id reads as its decimal text); `None` when absent or null.
    pub id: Option<Cow<'a, str>>,
    pub subject: Cow<'a, str>,
    pub fact: Cow<'a, str>,
    pub citations: Vec<Cow<'a, str>>,
    pub citations_form: CitationsForm,
    pub reason: Option<Cow<'a, str>>,
    pub category: Option<Cow<'a, str>>,
    /// `source.agent` for an object, the string itself for a string.
    pub source: Option<Cow<'a, str>>,
    pub created: Option<Cow<'a, str>>,
    pub updated: Option<Cow<'a, str>>,
    pub votes: Votes,
    /// False when `votes` is present but malformed: a vote must not overwrite it.
    pub votes_ok: bool,
    /// kb's own extra key (written by `kb export`): the markdown memory's tags.
    pub tags: Vec<Cow<'a, str>>,
    /// Known keys with a value of the wrong type, described for `kb check`.
    pub warnings: Vec<String>,
}

/// Parses one line (without its line break). Returns the fields, or why the line is not a record.
pub fn parse(line: &str) -> Result<Fields<'_>, String> {
    parse_as::<true>(line)
}

/// Parses one line like `parse`, but skips `citations`, `reason`, `source` and `tags` (left
/// empty, never warned about): what listing, ordering, dedup and addressing records need.
pub fn parse_light(line: &str) -> Result<Fields<'_>, String> {
    parse_as::<false>(line)
}

fn parse_as<const FULL: bool>(line: &str) -> Result<Fields<'_>, String> {
    let t = line.trim_start_matches([' ', '\t']);
    let json_start =
        t.starts_with(|c| "{[\"-0123456789".contains(c)) || ["true", "false", "null"].iter().any(|w| t.starts_with(w));
    if !json_start {
        return Err("not JSON: a record is one JSON object on one line, starting with '{'".to_string());
    }
    let mut de = serde_json::Deserializer::from_str(line);
    let top = match TopLevel::<FULL>::deserialize(&mut de).and_then(|t| de.end().map(|()| t)) {
        Ok(t) => t,
        Err(e) => return Err(json_error(&e)),
    };
    let raw = match top {
        TopLevel::Object(raw) => *raw,
        TopLevel::Other(kind) => return Err(format!("not a JSON object (found {kind})")),
    };
    raw.into_fields()
}

/// Returns a serde_json syntax error as `invalid JSON at column N: reason`.
fn json_error(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let reason = match text.rfind(" at line ") {
        Some(i) => &text[..i],
        None => &text,
    };
    format!("invalid JSON at column {}: {reason}", e.column())
}

enum TopLevel<'a, const FULL: bool> {
    Object(Box<Raw<'a>>),
    Other(&'static str),
}

/// A value of a known key as first seen, before the record is validated.
#[derive(Debug, Default)]
enum Scalar<'a> {
    #[default]
    Absent,
    Null,
    Str(Cow<'a, str>),
    /// An integer, as its decimal text.
    Int(String),
    Bad(&'static str),
}

#[derive(Debug, Default)]
enum Cites<'a> {
    #[default]
    Absent,
    Null,
    List(Vec<Cow<'a, str>>),
    Str(Cow<'a, str>),
    Bad(&'static str),
}

#[derive(Debug, Default)]
enum Src<'a> {
    #[default]
    Absent,
    Null,
    Agent(Option<Cow<'a, str>>),
    Str(Cow<'a, str>),
    Bad(&'static str),
}

#[derive(Debug, Default)]
enum VotesVal {
    #[default]
    Absent,
    Null,
    Ok(Votes),
    Bad(String),
}

/// Everything a record's known keys held, in any state.
#[derive(Debug, Default)]
struct Raw<'a> {
    id: Scalar<'a>,
    subject: Scalar<'a>,
    fact: Scalar<'a>,
    citations: Cites<'a>,
    reason: Scalar<'a>,
    category: Scalar<'a>,
    source: Src<'a>,
    created: Scalar<'a>,
    updated: Scalar<'a>,
    votes: VotesVal,
    tags: Option<Vec<Cow<'a, str>>>,
    duplicate: Option<&'static str>,
}

/// The known keys.
const KNOWN: [&str; 11] =
    ["id", "subject", "fact", "citations", "reason", "category", "source", "created", "updated", "votes", "tags"];

impl<'a> Raw<'a> {
    fn into_fields(self) -> Result<Fields<'a>, String> {
        if let Some(key) = self.duplicate {
            return Err(format!("the key \"{key}\" appears twice"));
        }
        let id = match self.id {
            Scalar::Absent | Scalar::Null => None,
            Scalar::Str(s) => Some(s),
            Scalar::Int(s) => Some(Cow::Owned(s)),
            Scalar::Bad(kind) => return Err(format!("\"id\" must be a string, got {kind}")),
        };
        let required = |key: &str, v: Scalar<'a>| match v {
            Scalar::Str(s) => Ok(s),
            Scalar::Absent => Err(format!("not a memory record: no \"{key}\"")),
            Scalar::Null => Err(format!("\"{key}\" must be a string, got null")),
            Scalar::Int(_) => Err(format!("\"{key}\" must be a string, got a number")),
            Scalar::Bad(kind) => Err(format!("\"{key}\" must be a string, got {kind}")),
        };
        let subject = required("subject", self.subject)?;
        let fact = required("fact", self.fact)?;
        let mut warnings = Vec::new();
        let mut optional = |key: &str, v: Scalar<'a>| match v {
            Scalar::Absent | Scalar::Null => None,
            Scalar::Str(s) => Some(s),
            Scalar::Int(_) => {
                warnings.push(format!("\"{key}\" must be a string, got a number; ignored"));
                None
            }
            Scalar::Bad(kind) => {
                warnings.push(format!("\"{key}\" must be a string, got {kind}; ignored"));
                None
            }
        };
        let reason = optional("reason", self.reason);
        let category = optional("category", self.category);
        let created = optional("created", self.created);
        let updated = optional("updated", self.updated);
        let (citations, citations_form) = match self.citations {
            Cites::Absent | Cites::Null => (Vec::new(), CitationsForm::Absent),
            Cites::List(items) => (items, CitationsForm::List),
            Cites::Str(s) => (split_citations(s), CitationsForm::String),
            Cites::Bad(kind) => {
                warnings.push(format!(
                    "\"citations\" must be a list of strings or a comma-separated string, got {kind}; ignored"
                ));
                (Vec::new(), CitationsForm::Absent)
            }
        };
        let source = match self.source {
            Src::Absent | Src::Null => None,
            Src::Agent(a) => a,
            Src::Str(s) => Some(s),
            Src::Bad(kind) => {
                warnings.push(format!("\"source\" must be an object or a string, got {kind}; ignored"));
                None
            }
        };
        let (votes, votes_ok) = match self.votes {
            VotesVal::Absent | VotesVal::Null => (Votes::default(), true),
            VotesVal::Ok(v) => (v, true),
            VotesVal::Bad(why) => {
                warnings.push(format!("\"votes\" {why}; counted as 0 up, 0 down"));
                (Votes::default(), false)
            }
        };
        Ok(Fields {
            id,
            subject,
            fact,
            citations,
            citations_form,
            reason,
            category,
            source,
            created,
            updated,
            votes,
            votes_ok,
            tags: self.tags.unwrap_or_default(),
            warnings,
        })
    }
}

/// Splits a comma-separated citation string as VS Code's `normalizeCitations` does: split on
/// `,`, trim each part, drop empty parts.
pub fn split_citations(s: Cow<'_, str>) -> Vec<Cow<'_, str>> {
    match s {
        Cow::Borrowed(b) => b.split(',').map(str::trim).filter(|p| !p.is_empty()).map(Cow::Borrowed).collect(),
        Cow::Owned(o) => {
            o.split(',').map(str::trim).filter(|p| !p.is_empty()).map(|p| Cow::Owned(p.to_string())).collect()
        }
    }
}

/// Visitor methods that turn a boolean, a float, a list or an object into `$bad(what)`, where
/// `what` describes the JSON type the visitor saw, for messages.
macro_rules! reject_others {
    ($bad:expr) => {
        reject_bool_float!($bad);
        reject_seq!($bad);
        reject_map!($bad);
    };
}

/// Visitor methods that take a string as `$wrap(Cow<str>)`, borrowing when the input allows.
macro_rules! accept_strings {
    ($wrap:expr) => {
        fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok($wrap(Cow::Borrowed(v)))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok($wrap(Cow::Owned(v.to_string())))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok($wrap(Cow::Owned(v)))
        }
    };
}

/// Visitor methods that turn an integer into `$bad("a number")`.
macro_rules! reject_numbers {
    ($bad:expr) => {
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($bad("a number"))
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($bad("a number"))
        }
    };
}

/// Visitor methods that turn a boolean or a float into `$bad(what)`.
macro_rules! reject_bool_float {
    ($bad:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($bad("a boolean"))
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($bad("a number"))
        }
    };
}

/// A visitor method that skips a list and returns `$bad("a list")`.
macro_rules! reject_seq {
    ($bad:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($bad("a list"))
        }
    };
}

/// A visitor method that skips an object and returns `$bad("an object")`.
macro_rules! reject_map {
    ($bad:expr) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($bad("an object"))
        }
    };
}

impl<'de, const FULL: bool> Deserialize<'de> for TopLevel<'de, FULL> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<const F: bool>;
        impl<'de, const F: bool> Visitor<'de> for V<F> {
            type Value = TopLevel<'de, F>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut raw = Raw::default();
                let mut seen = [false; KNOWN.len()];
                while let Some(key) = map.next_key::<Key>()? {
                    let Key::Known(i) = key else {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    };
                    if std::mem::replace(&mut seen[i], true) {
                        raw.duplicate.get_or_insert(KNOWN[i]);
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    }
                    if !F && matches!(KNOWN[i], "citations" | "reason" | "source" | "tags") {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    }
                    match KNOWN[i] {
                        "id" => raw.id = map.next_value()?,
                        "subject" => raw.subject = map.next_value()?,
                        "fact" => raw.fact = map.next_value()?,
                        "citations" => raw.citations = map.next_value()?,
                        "reason" => raw.reason = map.next_value()?,
                        "category" => raw.category = map.next_value()?,
                        "source" => raw.source = map.next_value()?,
                        "created" => raw.created = map.next_value()?,
                        "updated" => raw.updated = map.next_value()?,
                        "votes" => raw.votes = map.next_value()?,
                        _ => raw.tags = map.next_value::<Tags>()?.0,
                    }
                }
                Ok(TopLevel::Object(Box::new(raw)))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(TopLevel::Other("a boolean"))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(TopLevel::Other("a number"))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(TopLevel::Other("a number"))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(TopLevel::Other("a number"))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(TopLevel::Other("a string"))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(TopLevel::Other("null"))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(TopLevel::Other("a list"))
            }
        }
        d.deserialize_any(V::<FULL>)
    }
}

/// A key: one of `KNOWN` (by index) or any other.
enum Key {
    Known(usize),
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(KNOWN.iter().position(|k| *k == v).map_or(Key::Other, Key::Known))
            }
        }
        d.deserialize_str(V)
    }
}

/// A string that borrows from the input when it has no escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            accept_strings!(Text);
        }
        d.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalar<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            accept_strings!(Scalar::Str);
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Scalar::Int(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Scalar::Int(v.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Scalar::Null)
            }
            reject_others!(Scalar::Bad);
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Cites<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Cites<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of strings or a string")
            }
            accept_strings!(Cites::Str);
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Cites::Null)
            }
            reject_numbers!(Cites::Bad);
            reject_bool_float!(Cites::Bad);
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                let mut bad = false;
                while let Some(item) = seq.next_element::<Scalar<'de>>()? {
                    match item {
                        Scalar::Str(s) => items.push(s),
                        _ => bad = true,
                    }
                }
                Ok(if bad { Cites::Bad("a list with a non-string item") } else { Cites::List(items) })
            }
            reject_map!(Cites::Bad);
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Src<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Src<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object or a string")
            }
            accept_strings!(Src::Str);
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Src::Null)
            }
            reject_numbers!(Src::Bad);
            reject_bool_float!(Src::Bad);
            reject_seq!(Src::Bad);
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut agent = None;
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    if key.0 == "agent" && agent.is_none() {
                        if let Scalar::Str(s) = map.next_value::<Scalar<'de>>()? {
                            agent = Some(s);
                        }
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(Src::Agent(agent))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for VotesVal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = VotesVal;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(VotesVal::Null)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(VotesVal::Bad("must be an object, got a string".into()))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(VotesVal::Bad("must be an object, got a number".into()))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(VotesVal::Bad("must be an object, got a number".into()))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(VotesVal::Bad("must be an object, got a number".into()))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(VotesVal::Bad("must be an object, got a boolean".into()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(VotesVal::Bad("must be an object, got a list".into()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut votes = Votes::default();
                let mut bad = None;
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    let slot = match key.0.as_ref() {
                        "up" => &mut votes.up,
                        "down" => &mut votes.down,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    match map.next_value::<Count>()? {
                        Count(Some(n)) => *slot = n,
                        Count(None) => {
                            bad.get_or_insert_with(|| format!("\"{}\" must be a non-negative integer", key.0));
                        }
                    }
                }
                Ok(match bad {
                    Some(why) => VotesVal::Bad(why),
                    None => VotesVal::Ok(votes),
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// A non-negative integer, or `None` for any other value.
struct Count(Option<u64>);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a count")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Count(Some(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Count(u64::try_from(v).ok()))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Count(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Count(None))
            }
            reject_others!(|_| Count(None));
        }
        d.deserialize_any(V)
    }
}

/// kb's `tags` key: a list of strings, or nothing (any other value is ignored: it is not a
/// Copilot key, so kb has no claim on its shape).
struct Tags<'a>(Option<Vec<Cow<'a, str>>>);

impl<'de> Deserialize<'de> for Tags<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Cites::deserialize(d)? {
            Cites::List(items) => Ok(Tags(Some(items))),
            _ => Ok(Tags(None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_documented_shape() {
        let f = parse(r#"{"id":"mem-7c1e2a","subject":"build","fact":"Run `cargo nextest`","citations":["Makefile:14",".ci/run:3"],"reason":"CI uses it","category":"general","source":{"agent":"kb-cli"},"created":"2026-11-22T10:00:00+00:00","votes":{"up":2,"down":1},"extra":{"x":[1,2]}}"#).unwrap();
        assert_eq!(f.id.as_deref(), Some("mem-7c1e2a"));
        assert_eq!((f.subject.as_ref(), f.fact.as_ref()), ("build", "Run `cargo nextest`"));
        assert_eq!(f.citations, ["Makefile:14", ".ci/run:3"]);
        assert_eq!(f.citations_form, CitationsForm::List);
        assert_eq!(f.source.as_deref(), Some("kb-cli"));
        assert_eq!(f.votes, Votes { up: 2, down: 1 });
        assert!(f.votes_ok && f.warnings.is_empty());
        assert!(matches!(f.subject, Cow::Borrowed(_)), "unescaped strings borrow");
        let light =
            parse_light(r#"{"subject":"s","fact":"f","citations":5,"reason":"r","tags":["a"],"votes":{"up":1}}"#)
                .unwrap();
        assert!(
            light.citations.is_empty() && light.reason.is_none() && light.tags.is_empty() && light.warnings.is_empty()
        );
        assert_eq!(light.votes.up, 1);
        assert!(parse_light(r#"{"subject":"s","fact":"f","reason":1,"reason":2}"#).is_err(), "duplicates still count");
    }

    #[test]
    fn tolerates_variants() {
        let f = parse(r#"{"subject":"naming","fact":"kebab \u00e9","citations":"a.rs:41, docs/x.md:9,, ","source":"copilot-cli","id":12}"#).unwrap();
        assert_eq!(f.citations, ["a.rs:41", "docs/x.md:9"]);
        assert_eq!(f.citations_form, CitationsForm::String);
        assert_eq!(f.source.as_deref(), Some("copilot-cli"));
        assert_eq!(f.id.as_deref(), Some("12"));
        assert_eq!(f.fact, "kebab é");
        let f = parse(r#"{"subject":"s","fact":"f","citations":null,"reason":null,"id":null}"#).unwrap();
        assert!(f.citations.is_empty() && f.reason.is_none() && f.id.is_none());
    }

    #[test]
    fn wrong_types_of_optional_keys_warn() {
        let f =
            parse(r#"{"subject":"s","fact":"f","citations":5,"source":[1],"reason":true,"votes":{"up":-1}}"#).unwrap();
        assert_eq!(f.warnings.len(), 4, "{:?}", f.warnings);
        assert!(!f.votes_ok);
        assert!(f.warnings.iter().any(|w| w.starts_with("\"citations\" must be a list")), "{:?}", f.warnings);
        let f = parse(r#"{"subject":"s","fact":"f","citations":["a",1]}"#).unwrap();
        assert!(f.warnings[0].contains("non-string item"));
    }

    #[test]
    fn fatal_problems() {
        let cases = [
            ("", "not JSON: a record is one JSON object"),
            ("garbage", "not JSON: a record is one JSON object"),
            ("nullx", "invalid JSON at column 5: trailing characters"),
            ("[1,2]", "not a JSON object (found a list)"),
            ("\"x\"", "not a JSON object (found a string)"),
            ("null", "not a JSON object (found null)"),
            (r#"{"subject":"s"}"#, "not a memory record: no \"fact\""),
            (r#"{"subject":1,"fact":"f"}"#, "\"subject\" must be a string, got a number"),
            (r#"{"subject":"s","fact":{"a":1}}"#, "\"fact\" must be a string, got an object"),
            (r#"{"subject":"s","fact":"f","id":true}"#, "\"id\" must be a string, got a boolean"),
            (r#"{"subject":"s","fact":"f","fact":"g"}"#, "the key \"fact\" appears twice"),
            (r#"{"subject":"s","fact":"f"} x"#, "invalid JSON at column 28: trailing characters"),
            (r#"{"subject":"s","fact":"\ud800"}"#, "invalid JSON"),
        ];
        for (line, want) in cases {
            let got = parse(line).unwrap_err();
            assert!(got.starts_with(want), "{line:?}: {got}");
        }
    }
}
