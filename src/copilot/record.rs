//! One line of `.github/copilot-memories.jsonl`, parsed tolerantly into borrowed fields.
//!
//! The record schema is not public, so the reader accepts what Copilot, VS Code
//! and people plausibly write: `citations` as a list or a comma-separated string, `source` as an
//! object or a string, integer ids, unknown keys (skipped here; the line's bytes keep them). Only
//! a line kb cannot address or show is fatal: not JSON, not an object, no string `subject` or
//! `fact`, an `id` that is not a string or an integer, or a known key given twice. A known key of
//! the wrong type is a warning and reads as absent. This module owns no IO and no ids.
//!
//! How: one streaming pass reads each known key's value as a `Json`, only as deep as kb needs it
//! (`Depth`), and skips everything else unparsed (serde_json checks only the syntax of what it
//! skips); then `fields` judges each key leniently on its own.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
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
    /// Who created the record (provenance); `None` when absent: a person's.
    pub created_by: Option<Cow<'a, str>>,
    /// Who last rewrote the record; `None` when absent.
    pub updated_by: Option<Cow<'a, str>>,
    /// Known keys with a value of the wrong type, described for `kb check`.
    pub warnings: Vec<String>,
}

/// Parses one line (without its line break). Returns the fields, or why the line is not a record.
pub fn parse(line: &str) -> Result<Fields<'_>, String> {
    parse_as(line, true)
}

/// Parses one line like `parse`, but skips `citations`, `reason`, `source` and `tags` (left
/// empty, never warned about): what listing, ordering, dedup and addressing records need.
pub fn parse_light(line: &str) -> Result<Fields<'_>, String> {
    parse_as(line, false)
}

/// The known keys: how deep kb reads each one's value, and whether `parse_light` skips it.
const KNOWN: [(&str, Depth, bool); 13] = [
    ("id", Depth::Scalar, false),
    ("subject", Depth::Scalar, false),
    ("fact", Depth::Scalar, false),
    ("citations", Depth::List, true),
    ("reason", Depth::Scalar, true),
    ("category", Depth::Scalar, false),
    ("source", Depth::Source, true),
    ("created", Depth::Scalar, false),
    ("updated", Depth::Scalar, false),
    ("votes", Depth::Votes, false),
    ("tags", Depth::List, true),
    ("created_by", Depth::Scalar, false),
    ("updated_by", Depth::Scalar, false),
];

fn parse_as(line: &str, full: bool) -> Result<Fields<'_>, String> {
    let t = line.trim_start_matches([' ', '\t']);
    let json_start =
        t.starts_with(|c| "{[\"-0123456789".contains(c)) || ["true", "false", "null"].iter().any(|w| t.starts_with(w));
    if !json_start {
        return Err("not JSON: a record is one JSON object on one line, starting with '{'".to_string());
    }
    let mut top = Top::default();
    let mut de = serde_json::Deserializer::from_str(line);
    let other = de.deserialize_any(Reader { full, top: &mut top }).and_then(|other| de.end().map(|()| other));
    match other {
        Ok(None) => fields(top),
        Ok(Some(kind)) => Err(format!("not a JSON object (found {kind})")),
        Err(e) => Err(json_error(&e)),
    }
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

/// Judges the known keys' values: a repeated key, then `id`, `subject` and `fact` are fatal;
/// a wrong type elsewhere is a warning.
fn fields<'a>(top: Top<'a>) -> Result<Fields<'a>, String> {
    if let Some(key) = top.duplicate {
        return Err(format!("the key \"{key}\" appears twice"));
    }
    let [id, subject, fact, citations, reason, category, source, created, updated, votes, tags, created_by, updated_by] =
        top.values;
    let id = match id {
        None | Some(Json::Null) => None,
        Some(Json::Str(s)) => Some(s),
        Some(Json::U64(n)) => Some(Cow::Owned(n.to_string())),
        Some(Json::I64(n)) => Some(Cow::Owned(n.to_string())),
        Some(other) => return Err(format!("\"id\" must be a string, got {}", other.kind())),
    };
    let required = |key: &str, v: Option<Json<'a>>| match v {
        Some(Json::Str(s)) => Ok(s),
        None => Err(format!("not a memory record: no \"{key}\"")),
        Some(other) => Err(format!("\"{key}\" must be a string, got {}", other.kind())),
    };
    let subject = required("subject", subject)?;
    let fact = required("fact", fact)?;
    let mut warnings = Vec::new();
    let mut optional = |key: &str, v: Option<Json<'a>>| match v {
        None | Some(Json::Null) => None,
        Some(Json::Str(s)) => Some(s),
        Some(other) => {
            warnings.push(format!("\"{key}\" must be a string, got {}; ignored", other.kind()));
            None
        }
    };
    let reason = optional("reason", reason);
    let category = optional("category", category);
    let created = optional("created", created);
    let updated = optional("updated", updated);
    let created_by = optional("created_by", created_by);
    let updated_by = optional("updated_by", updated_by);
    let (citations, citations_form) = match citations {
        None | Some(Json::Null) => (Vec::new(), CitationsForm::Absent),
        Some(Json::Str(s)) => (split_citations(s), CitationsForm::String),
        Some(other) => match strings(other) {
            Ok(items) => (items, CitationsForm::List),
            Err(kind) => {
                warnings.push(format!(
                    "\"citations\" must be a list of strings or a comma-separated string, got {kind}; ignored"
                ));
                (Vec::new(), CitationsForm::Absent)
            }
        },
    };
    let source = match source {
        None | Some(Json::Null) => None,
        Some(Json::Str(s)) => Some(s),
        // The members read are the `agent`s up to the first string one.
        Some(Json::Object(agents)) => {
            agents.into_iter().find_map(|(_, v)| if let Json::Str(s) = v { Some(s) } else { None })
        }
        Some(other) => {
            warnings.push(format!("\"source\" must be an object or a string, got {}; ignored", other.kind()));
            None
        }
    };
    let (votes, votes_ok) = match votes.map(count_votes) {
        None | Some(Ok(None)) => (Votes::default(), true),
        Some(Ok(Some(v))) => (v, true),
        Some(Err(why)) => {
            warnings.push(format!("\"votes\" {why}; counted as 0 up, 0 down"));
            (Votes::default(), false)
        }
    };
    // kb's own key: a list of strings, else nothing (not a Copilot key: no claim on its shape).
    let tags = tags.and_then(|t| strings(t).ok()).unwrap_or_default();
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
        tags,
        created_by,
        updated_by,
        warnings,
    })
}

/// Returns the items of a list of strings, or what the value is instead.
fn strings(v: Json<'_>) -> Result<Vec<Cow<'_, str>>, &'static str> {
    let Json::List(items) = v else { return Err(v.kind()) };
    let all = items.len();
    let out: Vec<Cow<'_, str>> =
        items.into_iter().filter_map(|i| if let Json::Str(s) = i { Some(s) } else { None }).collect();
    if out.len() == all { Ok(out) } else { Err("a list with a non-string item") }
}

/// Returns the counts of a `votes` object (`None` for null), or why it is malformed.
fn count_votes(v: Json<'_>) -> Result<Option<Votes>, String> {
    let members = match v {
        Json::Null => return Ok(None),
        Json::Object(members) => members,
        other => return Err(format!("must be an object, got {}", other.kind())),
    };
    let mut votes = Votes::default();
    let mut bad = None;
    // The members read are `up` and `down`.
    for (key, value) in members {
        let count = match value {
            Json::U64(n) => Some(n),
            Json::I64(n) => u64::try_from(n).ok(),
            _ => None,
        };
        match (count, key == "up") {
            (Some(n), true) => votes.up = n,
            (Some(n), false) => votes.down = n,
            (None, _) => {
                bad.get_or_insert_with(|| format!("\"{key}\" must be a non-negative integer"));
            }
        }
    }
    bad.map_or(Ok(Some(votes)), Err)
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

/// The first value of each of `KNOWN` read (`parse_light` reads fewer), and the first known key
/// given twice.
#[derive(Default)]
struct Top<'a> {
    values: [Option<Json<'a>>; KNOWN.len()],
    duplicate: Option<&'static str>,
}

/// Reads a line's top-level value: an object into `top`; anything else as what it is.
struct Reader<'t, 'a> {
    full: bool,
    top: &'t mut Top<'a>,
}

impl<'de> Visitor<'de> for Reader<'_, 'de> {
    type Value = Option<&'static str>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut seen = [false; KNOWN.len()];
        while let Some(Key(key)) = map.next_key()? {
            match key {
                Some(i) if std::mem::replace(&mut seen[i], true) => {
                    self.top.duplicate.get_or_insert(KNOWN[i].0);
                    map.next_value::<IgnoredAny>()?;
                }
                Some(i) if self.full || !KNOWN[i].2 => {
                    self.top.values[i] = Some(map.next_value_seed(Read(KNOWN[i].1))?)
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Some("a boolean"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Some("a number"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Some("a number"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Some("a number"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Some("a string"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Some("null"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Some("a list"))
    }
}

/// A top-level key: its index in `KNOWN`, or `None` for any other key.
struct Key(Option<usize>);

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(Key(KNOWN.iter().position(|k| k.0 == v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// How deep kb reads a known key's value. serde_json checks what it parses (escapes, number
/// range, an object's keys) and only the syntax of what it skips, so this also decides which
/// lines are invalid JSON.
#[derive(Debug, Clone, Copy)]
enum Depth {
    /// A string or a number; a list's items and an object's values are skipped.
    Scalar,
    /// A list's items read as `Scalar`s.
    List,
    /// An object's `agent` values, up to the first string one, read as `Scalar`s.
    Source,
    /// An object's `up` and `down` values read as `Scalar`s.
    Votes,
}

/// A value as serde_json's `deserialize_any` gives it, read as deep as its `Depth`.
enum Json<'a> {
    Null,
    Bool,
    /// An integer: serde_json gives a non-negative one as `u64`, a negative one as `i64`.
    U64(u64),
    I64(i64),
    Float,
    /// Borrowed from the line when it has no escapes.
    Str(Cow<'a, str>),
    /// The items, read only at `Depth::List`.
    List(Vec<Json<'a>>),
    /// The members read at `Depth::Source` or `Depth::Votes`, in order.
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

impl Json<'_> {
    /// Describes the JSON type, for messages.
    fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool => "a boolean",
            Json::U64(_) | Json::I64(_) | Json::Float => "a number",
            Json::Str(_) => "a string",
            Json::List(_) => "a list",
            Json::Object(_) => "an object",
        }
    }
}

/// Reads one value as deep as its `Depth`.
struct Read(Depth);

impl<'de> DeserializeSeed<'de> for Read {
    type Value = Json<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Read {
    type Value = Json<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json<'de>, E> {
        Ok(Json::U64(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json<'de>, E> {
        Ok(Json::I64(v))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Json<'de>, E> {
        Ok(Json::Float)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Owned(v.to_string())))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::new();
        match self.0 {
            Depth::List => {
                while let Some(item) = seq.next_element_seed(Read(Depth::Scalar))? {
                    items.push(item);
                }
            }
            _ => while seq.next_element::<IgnoredAny>()?.is_some() {},
        }
        Ok(Json::List(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut members = Vec::new();
        let mut agent = false;
        while let Some(key) = map.next_key_seed(Read(Depth::Scalar))? {
            // serde_json gives every key as a string.
            let key = if let Json::Str(k) = key { k } else { Cow::Borrowed("") };
            let wanted = match self.0 {
                Depth::Source => key == "agent" && !agent,
                Depth::Votes => key == "up" || key == "down",
                Depth::Scalar | Depth::List => false,
            };
            if !wanted {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let value = map.next_value_seed(Read(Depth::Scalar))?;
            agent = matches!(value, Json::Str(_));
            members.push((key, value));
        }
        Ok(Json::Object(members))
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
    fn checks_only_what_it_reads() {
        // serde_json checks escapes, number range and object keys only in values kb reads;
        // whatever it skips is checked for syntax alone.
        let f = parse(r#"{"subject":"s","fact":"f","x":"\ud800","y":[1e400],"category":[1e400],"source":{"x":1e400,"agent":1,"agent":"a","agent":1e400},"votes":{"by":"\ud800","up":1,"up":2,"down":-1}}"#).unwrap();
        assert_eq!((f.source.as_deref(), f.votes_ok), (Some("a"), false));
        assert_eq!(f.warnings[1], "\"votes\" \"down\" must be a non-negative integer; counted as 0 up, 0 down");
        let line = r#"{"subject":"s","fact":"f","reason":"\ud800"}"#;
        assert!(parse_light(line).is_ok() && parse(line).unwrap_err().starts_with("invalid JSON at column 43"));
        for line in [
            r#"{"subject":"s","fact":"f","votes":{"up":1e400}}"#,
            r#"{"subject":"s","fact":"f","category":{"\ud800":1}}"#,
        ] {
            assert!(parse_light(line).unwrap_err().starts_with("invalid JSON at column 4"), "{line}");
        }
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
