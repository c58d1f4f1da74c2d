//! The tools' arguments: what each tool takes, the JSON Schema agents see, and the reading of what
//! a client sends.
//!
//! The arguments are read here by hand rather than by serde's derive, so that a wrong one is
//! answered with a plain sentence that names it and says what it allows ("max_results must be a
//! whole number from 1 to 100, not \"lots\""), never a deserializer's wording, and so that the
//! lenient forms agents send are accepted: a number as a string, a list as one comma-separated
//! string, `null` for an argument left out. An argument a tool does not take is an error naming it
//! and the ones the tool takes: a misspelled `limit` is never silently ignored.
//!
//! The structs derive only `JsonSchema`: their `schemars` attributes shape the schema (names,
//! defaults, ranges), and each struct's [`ToolArgs`] impl reads the same names.

use crate::kinds::{DecisionKind, Direction};
use crate::kinds::{Narrow, Origins};
use crate::ops::recall::{Sources, Store};
use rmcp::schemars;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// Rewrites a tool's input schema into the plain subset every client reads (the MCP Inspector
/// without a warning, Gemini's function-calling dialect, which rejects the rest): no `$schema`,
/// no `format` (`uint32`...), one `type` string (a nullable `["string", "null"]` is its
/// `string`; an id of `["integer", "string"]` is `string`), an `anyOf` resolved to one form (the
/// list when a value may be one item or a list) and no `default: null`. The readers accept every
/// form the full schema allowed, so nothing an agent sends is refused because of this.
pub fn plain_schema(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            map.remove("$schema");
            map.remove("format");
            if map.get("default").is_some_and(Value::is_null) {
                map.remove("default");
            }
            if let Some(Value::Array(values)) = map.get_mut("enum") {
                values.retain(|v| !v.is_null());
            }
            if let Some(Value::Array(types)) = map.get("type") {
                let kept: Vec<&str> = types.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect();
                let one = if kept.contains(&"string") { "string" } else { kept.first().copied().unwrap_or("string") };
                map.insert("type".into(), Value::from(one));
            }
            if let Some(Value::Array(forms)) = map.remove("anyOf") {
                let forms: Vec<Value> =
                    forms.into_iter().filter(|f| f.get("type") != Some(&Value::from("null"))).collect();
                let chosen = forms.iter().find(|f| f.get("type") == Some(&Value::from("array"))).or(forms.first());
                if let Some(Value::Object(form)) = chosen.cloned() {
                    for (k, v) in form {
                        map.entry(k).or_insert(v);
                    }
                }
            }
            // `properties` maps field names (which may be `type` or `format`) to schemas.
            for (key, value) in map.iter_mut() {
                match (key.as_str(), value) {
                    ("properties", Value::Object(fields)) => fields.values_mut().for_each(plain_schema),
                    (_, value) => plain_schema(value),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(plain_schema),
        _ => {}
    }
}

/// A tool's arguments as read from the client's JSON: the arguments, or the sentence saying which
/// one is wrong. Reading never fails at the protocol level: the sentence reaches the agent as the
/// tool's error (`isError: true`), word for word.
pub struct Checked<T>(pub Result<T, String>);

impl<'de, T: ToolArgs> Deserialize<'de> for Checked<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Checked(T::from_value(Value::deserialize(d)?)))
    }
}

/// The schema is the arguments' own.
impl<T: schemars::JsonSchema> schemars::JsonSchema for Checked<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

/// How one tool's arguments are read.
pub trait ToolArgs: Sized {
    /// The tool's name, for messages.
    const TOOL: &'static str;
    /// The arguments the tool takes, in the order messages list them.
    const NAMES: &'static [&'static str];

    /// Reads the arguments out of `given`, each by its name.
    fn read(given: &mut Given) -> Result<Self, String>;

    /// Reads the arguments a client sent: a JSON object (or nothing at all).
    fn from_value(value: Value) -> Result<Self, String> {
        let map = match value {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(format!("the arguments of {} must be a JSON object, not {}", Self::TOOL, shown(&other)));
            }
        };
        // Unknown names first: a misspelled argument is the likeliest cause of a missing one.
        if let Some(unknown) = map.keys().find(|k| !Self::NAMES.contains(&k.as_str())) {
            return Err(format!(
                "{} has no argument {}; its arguments are {}",
                Self::TOOL,
                quoted(unknown),
                joined(Self::NAMES, "and")
            ));
        }
        Self::read(&mut Given(map))
    }
}

/// The arguments a client sent, taken out one by one.
pub struct Given(Map<String, Value>);

/// What a text argument must be.
const TEXT: &str = "a string";
/// What a list argument must be.
const LIST: &str = "a list of strings or one comma-separated string";
/// What a flag must be.
const FLAG: &str = "true or false";
/// What a `store` argument must be.
const STORES: &str = "md or copilot, or a list of them";

impl Given {
    /// Returns argument `name`, read by `read`; left out (or `null`) is `None`, a value `read`
    /// refuses is an error saying the argument must be `what`.
    fn get<T>(&mut self, name: &str, what: &str, read: impl FnOnce(&Value) -> Option<T>) -> Result<Option<T>, String> {
        match self.0.remove(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => read(&v).map(Some).ok_or_else(|| format!("{name} must be {what}, not {}", shown(&v))),
        }
    }

    /// Returns argument `name`, which the tool needs.
    fn need<T>(&mut self, name: &str, what: &str, read: impl FnOnce(&Value) -> Option<T>) -> Result<T, String> {
        self.get(name, what, read)?.ok_or_else(|| format!("{name} is required: {what}"))
    }

    fn text(&mut self, name: &str) -> Result<Option<String>, String> {
        self.get(name, TEXT, |v| v.as_str().map(String::from))
    }

    fn need_text(&mut self, name: &str) -> Result<String, String> {
        self.need(name, TEXT, |v| v.as_str().map(String::from))
    }

    /// A list of strings, or one comma-separated string (how Copilot's CLI sends citations) whose
    /// blank items are dropped; left out, an empty list.
    fn list(&mut self, name: &str) -> Result<Vec<String>, String> {
        let read = |v: &Value| match v {
            Value::Array(items) => items.iter().map(|i| i.as_str().map(String::from)).collect(),
            Value::String(s) => Some(s.split(',').map(str::trim).filter(|t| !t.is_empty()).map(String::from).collect()),
            _ => None,
        };
        Ok(self.get(name, LIST, read)?.unwrap_or_default())
    }

    /// `true` or `false` (also as strings); left out, false.
    fn flag(&mut self, name: &str) -> Result<bool, String> {
        let read = |v: &Value| match v {
            Value::Bool(b) => Some(*b),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        Ok(self.get(name, FLAG, read)?.unwrap_or(false))
    }

    /// A whole number from `min` to `max`, as a JSON number or a string.
    fn number(&mut self, name: &str, min: u64, max: u64) -> Result<Option<u64>, String> {
        let read = |v: &Value| {
            let n = match v {
                Value::Number(n) => n.as_u64().or_else(|| n.as_f64().and_then(whole)),
                Value::String(s) => {
                    s.trim().parse::<u64>().ok().or_else(|| s.trim().parse::<f64>().ok().and_then(whole))
                }
                _ => None,
            }?;
            (min..=max).contains(&n).then_some(n)
        };
        self.get(name, &format!("a whole number from {min} to {max}"), read)
    }

    /// One of `choices`, spelled exactly; the first spelling of each is the one messages give.
    fn choice<T: Copy>(&mut self, name: &str, choices: &[(&[&str], T)]) -> Result<Option<T>, String> {
        let read = |v: &Value| {
            let s = v.as_str()?;
            choices.iter().find(|(names, _)| names.contains(&s)).map(|&(_, value)| value)
        };
        let firsts: Vec<&str> = choices.iter().map(|(names, _)| names[0]).collect();
        self.get(name, &joined(&firsts, "or"), read)
    }

    fn need_choice<T: Copy>(&mut self, name: &str, choices: &[(&[&str], T)]) -> Result<T, String> {
        let firsts: Vec<&str> = choices.iter().map(|(names, _)| names[0]).collect();
        self.choice(name, choices)?.ok_or_else(|| format!("{name} is required: {}", joined(&firsts, "or")))
    }

    fn need_id(&mut self, name: &str, what: &str) -> Result<String, String> {
        self.need(name, what, id)
    }

    /// The stores to read: `md` (or `markdown`), `copilot`, or a list of them; `None` (both) when
    /// left out or an empty list.
    fn stores(&mut self, name: &str) -> Result<Sources, String> {
        let one = |v: &Value| v.as_str().and_then(|name| Store::parse(name, Store::MEMORY));
        let read = |v: &Value| match v {
            Value::Array(items) => items.iter().map(one).collect::<Option<Vec<_>>>(),
            v => one(v).map(|s| vec![s]),
        };
        Ok(Sources::of(&self.get(name, STORES, read)?.unwrap_or_default()).and(Sources::memory(None)))
    }

    /// Reads recall's `store`: a kind of knowledge, `shared` or a shared source's name, or a list
    /// of them (none: every kind, this repository and every shared source).
    fn sources(&mut self, name: &str) -> Result<(Sources, Origins), String> {
        let one = |v: &Value| v.as_str().and_then(|name| Narrow::parse(name).ok());
        let read = |v: &Value| match v {
            Value::Array(items) => items.iter().map(one).collect::<Option<Vec<Narrow>>>(),
            v => one(v).map(|s| vec![s]),
        };
        Ok(Narrow::split(&self.get(name, SOURCES, read)?.unwrap_or_default()))
    }
}

/// What recall's `store` allows, in an error.
const SOURCES: &str = "md, copilot, decision, session, shared or a shared source's name, or a list of them";

/// Reads an id: a string, or a non-negative integer (a memory's number).
fn id(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => n.as_u64().map(|n| n.to_string()),
        _ => None,
    }
}

/// Returns `f` as an integer when it is a whole number that fits.
fn whole(f: f64) -> Option<u64> {
    (f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64).then_some(f as u64)
}

/// Returns a value as a message shows it: a string quoted, anything else as JSON, cut past 60
/// characters.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => quoted(s),
        other => cut(&other.to_string()),
    }
}

/// Returns `s` quoted as a message shows it, cut past 60 characters.
fn quoted(s: &str) -> String {
    format!("{:?}", cut(s))
}

fn cut(s: &str) -> String {
    match s.char_indices().nth(60) {
        Some((at, _)) => format!("{}...", &s[..at]),
        None => s.to_string(),
    }
}

/// Returns `items` as a sentence lists them: `a, b and c` (or `or`).
fn joined(items: &[&str], last: &str) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., tail] => format!("{} {last} {tail}", init.join(", ")),
    }
}

/// The schema of an id: an integer (a memory) or a string (a memory, a record, a decision), inline.
fn id_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["integer", "string"] })
}

/// The schema of a `store` argument: `md` or `copilot`, or a list of them, inline.
fn stores_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "anyOf": [
        { "type": "string", "enum": ["md", "copilot"] },
        { "type": "array", "items": { "type": "string", "enum": ["md", "copilot"] } },
        { "type": "null" }
    ] })
}

/// The schema of a memory type (`save_memory`, `list_memories`): one of the four, inline.
fn memory_type_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["string", "null"], "enum": ["core_context", "learning", "pattern", "update", null] })
}

/// The schema of `save_memory`'s `importance`: one of the three levels, inline.
fn importance_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["string", "null"], "enum": ["high", "medium", "low", null] })
}

/// The schema of `context_board`'s `src`: agent or user, inline.
fn src_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["string", "null"], "enum": ["agent", "user", null] })
}

/// `save_memory` arguments.
#[derive(Debug, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SaveMemoryArgs {
    /// The fact to remember: one self-contained statement, e.g. "User prefers pytest over unittest"
    pub content: String,
    /// Tags: a signal type first when one applies (preference, correction, decision, context,
    /// pattern), then the domain, e.g. ["preference", "python"]. May be empty.
    #[schemars(default)]
    pub tags: Vec<String>,
    /// The memory's type: core_context (a fact every session must start with: always loaded,
    /// never decayed), learning (the default), pattern (a recurring way of working) or update
    /// (news about the project's state). Leave it out for an ordinary fact.
    #[schemars(default, rename = "type", schema_with = "memory_type_schema")]
    pub memory_type: Option<String>,
    /// How much the memory matters: high (loaded into the context at session start when its
    /// type is learning or pattern), medium (the default) or low. A merge with a near-duplicate
    /// keeps the higher one.
    #[schemars(default, schema_with = "importance_schema")]
    pub importance: Option<String>,
    /// Your agent name, when the fact only matters to you (e.g. "reviewer"); leave it out for
    /// knowledge every agent shares. No "/", "\\" or control characters.
    #[schemars(default)]
    pub agent: Option<String>,
}

impl ToolArgs for SaveMemoryArgs {
    const TOOL: &'static str = "save_memory";
    const NAMES: &'static [&'static str] = &["content", "tags", "type", "importance", "agent"];

    /// `type` and `importance` are checked by the save, whose messages name them as the CLI's do.
    fn read(given: &mut Given) -> Result<Self, String> {
        Ok(SaveMemoryArgs {
            content: given.need_text("content")?,
            tags: given.list("tags")?,
            memory_type: given.text("type")?,
            importance: given.text("importance")?,
            agent: given.text("agent")?,
        })
    }
}

/// How many results `recall_memory` returns when the client does not say (as `kb recall`).
pub const DEFAULT_MAX_RESULTS: u32 = 5;
/// The most results `recall_memory` returns.
pub const MAX_RESULTS: u32 = 100;

fn default_max_results() -> u32 {
    DEFAULT_MAX_RESULTS
}

/// `recall_memory` arguments.
#[derive(Debug, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RecallMemoryArgs {
    /// The question in plain words, e.g. "how do we run the tests" or "release branch": matched
    /// against the memories' text and tags, the records' subject, fact and citations, the
    /// decisions and the sessions, in any word form; results are ranked, the best match first
    pub query: String,
    /// Return at most this many results, the best first (1 to 100, default 5)
    #[schemars(default = "default_max_results", range(min = 1, max = 100))]
    pub max_results: u32,
    /// Search only this kind of knowledge: md (the markdown memories), copilot (the Copilot
    /// records), decision (the active and proposed decisions) or session (the open and ended
    /// sessions); only the shared sources (shared) or one of them by name; or a list of them;
    /// everything when left out
    #[schemars(default, schema_with = "sources_schema")]
    pub store: Sources,
    /// The repositories `store` names: this one and the shared sources, or shared sources only.
    #[schemars(skip)]
    pub origins: Origins,
}

/// The schema of recall's `store`: a kind of knowledge, `shared` or a shared source's name, or a
/// list of them, inline.
fn sources_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "anyOf": [
        { "type": "string", "enum": ["md", "copilot", "decision", "session", "shared"] },
        { "type": "string", "pattern": "^[a-z0-9-]{1,32}$" },
        { "type": "array", "items": { "type": "string", "pattern": "^[a-z0-9-]{1,32}$" } },
        { "type": "null" }
    ] })
}

impl ToolArgs for RecallMemoryArgs {
    const TOOL: &'static str = "recall_memory";
    const NAMES: &'static [&'static str] = &["query", "max_results", "store"];

    fn read(given: &mut Given) -> Result<Self, String> {
        let query = given.need_text("query")?;
        let max_results = given.number("max_results", 1, MAX_RESULTS.into())?;
        let (store, origins) = given.sources("store")?;
        Ok(RecallMemoryArgs {
            query,
            max_results: max_results.map_or(DEFAULT_MAX_RESULTS, |n| n as u32),
            store,
            origins,
        })
    }
}

/// How many items `list_memories` returns when the client does not say.
pub const DEFAULT_LIMIT: u32 = 50;
/// The most items `list_memories` returns.
pub const MAX_LIMIT: u32 = 1000;

fn default_limit() -> u32 {
    DEFAULT_LIMIT
}

/// `list_memories` arguments: `kb list`'s filters, and a limit.
#[derive(Debug, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ListMemoriesArgs {
    /// List only this store: md (the markdown memories) or copilot (the Copilot records), or a list
    /// of them; both when left out
    #[schemars(default, schema_with = "stores_schema")]
    pub store: Sources,
    /// Only markdown memories of this type (a memory without one is a learning): core_context,
    /// learning, pattern or update
    #[schemars(default, rename = "type", schema_with = "memory_type_schema")]
    pub memory_type: Option<String>,
    /// Only markdown memories that name this agent (not the shared ones)
    #[schemars(default)]
    pub agent: Option<String>,
    /// Return at most this many items, the memories by id first, then the records (1 to 1000,
    /// default 50); the result always gives the total
    #[schemars(default = "default_limit", range(min = 1, max = 1000))]
    pub limit: u32,
}

impl ToolArgs for ListMemoriesArgs {
    const TOOL: &'static str = "list_memories";
    const NAMES: &'static [&'static str] = &["store", "type", "agent", "limit"];

    fn read(given: &mut Given) -> Result<Self, String> {
        Ok(ListMemoriesArgs {
            store: given.stores("store")?,
            memory_type: given.text("type")?,
            agent: given.text("agent")?,
            limit: given.number("limit", 1, MAX_LIMIT.into())?.map_or(DEFAULT_LIMIT, |n| n as u32),
        })
    }
}

/// `get_memory` arguments.
#[derive(Debug, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct GetMemoryArgs {
    /// The id, as list_memories and recall_memory show it: an integer for a memory (7 or "7"), a
    /// string such as "mem-1a2b3c4d" for a Copilot record, "decision:N" for a decision
    #[schemars(schema_with = "id_schema")]
    pub id: String,
}

impl ToolArgs for GetMemoryArgs {
    const TOOL: &'static str = "get_memory";
    const NAMES: &'static [&'static str] = &["id"];

    fn read(given: &mut Given) -> Result<Self, String> {
        let what = "a memory's number (e.g. 7), a record's id (e.g. \"mem-1a2b3c4d\") or \"decision:N\"";
        Ok(GetMemoryArgs { id: given.need_id("id", what)? })
    }
}

/// `audit` arguments.
#[derive(Debug, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AuditArgs {
    /// Check only these: an integer for a memory, "mem-..." for a Copilot record, "decision:N" for a
    /// decision; everything when left out
    #[schemars(default, schema_with = "ids_schema")]
    pub ids: Vec<String>,
}

/// The schema of `audit`'s `ids`: a list of ids (numbers or strings), inline.
fn ids_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "anyOf": [
        { "type": "array", "items": { "type": ["string", "integer"] } },
        { "type": "null" }
    ] })
}

impl ToolArgs for AuditArgs {
    const TOOL: &'static str = "audit";
    const NAMES: &'static [&'static str] = &["ids"];

    fn read(given: &mut Given) -> Result<Self, String> {
        let what = "a list of ids: memory numbers (e.g. 7), record ids (e.g. \"mem-1a2b3c4d\") or \"decision:N\"";
        let read = |v: &Value| match v {
            Value::Array(items) => items.iter().map(id).collect::<Option<Vec<String>>>(),
            v => id(v).map(|one| vec![one]),
        };
        Ok(AuditArgs { ids: given.get("ids", what, read)?.unwrap_or_default() })
    }
}

/// `forget_memory` arguments.
#[derive(Debug, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ForgetMemoryArgs {
    /// The id, as list_memories and recall_memory show it: an integer for a memory (7 or "7"),
    /// a string such as "mem-1a2b3c4d" for a Copilot record
    #[schemars(schema_with = "id_schema")]
    pub id: String,
}

impl ToolArgs for ForgetMemoryArgs {
    const TOOL: &'static str = "forget_memory";
    const NAMES: &'static [&'static str] = &["id"];

    fn read(given: &mut Given) -> Result<Self, String> {
        let what = "a memory's number (e.g. 7) or a record's id (e.g. \"mem-1a2b3c4d\")";
        Ok(ForgetMemoryArgs { id: given.need_id("id", what)? })
    }
}

/// `update_memory` arguments.
#[derive(Debug, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct UpdateMemoryArgs {
    /// The memory's id, as list_memories and recall_memory show it: an integer (7 or "7")
    #[schemars(schema_with = "id_schema")]
    pub id: String,
    /// The memory's new text, whole (it replaces the old text)
    pub content: String,
}

impl ToolArgs for UpdateMemoryArgs {
    const TOOL: &'static str = "update_memory";
    const NAMES: &'static [&'static str] = &["id", "content"];

    fn read(given: &mut Given) -> Result<Self, String> {
        let id = given.need_id("id", "a memory's number (e.g. 7)")?;
        Ok(UpdateMemoryArgs { id, content: given.need_text("content")? })
    }
}

/// `store_memory` arguments (Copilot's `store_memory` tool).
#[derive(Debug, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct StoreMemoryArgs {
    /// The topic the fact belongs to, a short label such as "testing", "build" or "naming"
    pub subject: String,
    /// The fact itself, one statement that can be checked against the code
    pub fact: String,
    /// Where the fact can be verified: file paths, with line numbers when they help
    /// (e.g. ["src/store.rs:120", "Makefile:14"]). A comma-separated string is accepted too.
    /// May be empty, but a fact a later reader can check is worth more.
    #[schemars(default)]
    pub citations: Vec<String>,
    /// Why the fact matters for future work in this repository
    pub reason: String,
    /// Optional: a category label, as Copilot sends it (e.g. "general")
    pub category: Option<String>,
}

impl ToolArgs for StoreMemoryArgs {
    const TOOL: &'static str = "store_memory";
    const NAMES: &'static [&'static str] = &["subject", "fact", "citations", "reason", "category"];

    fn read(given: &mut Given) -> Result<Self, String> {
        Ok(StoreMemoryArgs {
            subject: given.need_text("subject")?,
            fact: given.need_text("fact")?,
            citations: given.list("citations")?,
            reason: given.need_text("reason")?,
            category: given.text("category")?,
        })
    }
}

/// `propose_decision` arguments.
#[derive(Debug, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ProposeDecisionArgs {
    /// The decision, one self-contained statement whose first line is its title, e.g. "We use
    /// PostgreSQL for every service; no MySQL"
    pub text: String,
    /// What the decision is about: architectural (structure, components, technologies), scope
    /// (what the project does and does not do), process (how the team works), technical
    /// (standards and conventions in the code)
    #[schemars(rename = "type")]
    pub kind: DecisionKind,
}

impl ToolArgs for ProposeDecisionArgs {
    const TOOL: &'static str = "propose_decision";
    const NAMES: &'static [&'static str] = &["text", "type"];

    fn read(given: &mut Given) -> Result<Self, String> {
        let kinds: &[(&[&str], DecisionKind)] = &[
            (&["architectural"], DecisionKind::Architectural),
            (&["scope"], DecisionKind::Scope),
            (&["process"], DecisionKind::Process),
            (&["technical"], DecisionKind::Technical),
        ];
        Ok(ProposeDecisionArgs { text: given.need_text("text")?, kind: given.need_choice("type", kinds)? })
    }
}

/// `get_context`'s arguments: `kb context`'s flags.
#[derive(Debug, Default, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct GetContextArgs {
    /// Your agent name (e.g. "reviewer"): your own core-context memories and learnings come in,
    /// besides the shared ones
    #[schemars(default)]
    pub agent: Option<String>,
    /// The files you are about to work on, relative to the repository root (a list, or one
    /// comma-separated string): the scoped instructions whose applyTo matches them come in
    #[schemars(default, rename = "for")]
    pub for_paths: Vec<String>,
    /// Only the Boundaries and Decisions section (for a child worker)
    #[schemars(default)]
    pub decisions_only: bool,
    /// A token budget (at least 100): whole items are left out, lowest priority first
    #[schemars(default, range(min = 100))]
    pub max_tokens: Option<u32>,
}

impl ToolArgs for GetContextArgs {
    const TOOL: &'static str = "get_context";
    const NAMES: &'static [&'static str] = &["agent", "for", "decisions_only", "max_tokens"];

    fn read(given: &mut Given) -> Result<Self, String> {
        let min = u64::from(crate::settings::MIN_MAX_TOKENS);
        Ok(GetContextArgs {
            agent: given.text("agent")?,
            for_paths: given.list("for")?,
            decisions_only: given.flag("decisions_only")?,
            max_tokens: given.number("max_tokens", min, u32::MAX.into())?.map(|n| n as u32),
        })
    }
}

/// `update_session` arguments.
#[derive(Debug, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct UpdateSessionArgs {
    /// The session's running summary: where the work stands (done, in progress, next). Replaces
    /// the summary, unless append is true
    pub summary: String,
    /// Add the text as a new paragraph after the running summary instead of replacing it
    /// (default false)
    #[schemars(default)]
    pub append: bool,
}

impl ToolArgs for UpdateSessionArgs {
    const TOOL: &'static str = "update_session";
    const NAMES: &'static [&'static str] = &["summary", "append"];

    fn read(given: &mut Given) -> Result<Self, String> {
        Ok(UpdateSessionArgs { summary: given.need_text("summary")?, append: given.flag("append")? })
    }
}

/// `vote_memory` arguments (Copilot's `vote_memory` tool, plus the record's id).
#[derive(Debug, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct VoteMemoryArgs {
    /// The record's id, e.g. "mem-1a2b3c4d" (list_memories shows it). Give this or fact
    #[schemars(default)]
    pub id: Option<String>,
    /// The record's fact, exactly as stored (Copilot's way to name a memory). Give this or id
    #[schemars(default)]
    pub fact: Option<String>,
    /// up: the fact is right and useful; down: it is wrong or outdated ("upvote" and "downvote"
    /// are accepted too)
    pub direction: Direction,
    /// Why, e.g. "Moved to tests/snapshots/ in this branch"; kept in the record's last_vote
    pub reason: String,
}

impl ToolArgs for VoteMemoryArgs {
    const TOOL: &'static str = "vote_memory";
    const NAMES: &'static [&'static str] = &["id", "fact", "direction", "reason"];

    fn read(given: &mut Given) -> Result<Self, String> {
        let directions: &[(&[&str], Direction)] =
            &[(&["up", "upvote"], Direction::Up), (&["down", "downvote"], Direction::Down)];
        Ok(VoteMemoryArgs {
            id: given.get("id", "a record's id, e.g. \"mem-1a2b3c4d\"", id)?,
            fact: given.text("fact")?,
            direction: given.need_choice("direction", directions)?,
            reason: given.need_text("reason")?,
        })
    }
}

/// `context_board` arguments: the names GitHub Copilot CLI's own `context_board` tool uses.
#[derive(Debug, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ContextBoardArgs {
    /// What to do: get_board (list the items), get (one item's content: name), add (create or
    /// overwrite an agent item: name, description, context), prune (delete an agent item: name)
    pub command: BoardCommand,
    /// Who wrote the item, for get: agent or user; needed only when an agent item and a user item
    /// share the name
    #[schemars(default, schema_with = "src_schema")]
    pub src: Option<crate::kinds::Src>,
    /// The item's name, short kebab-case, e.g. "release-checklist" (get, add, prune)
    #[schemars(default)]
    pub name: Option<String>,
    /// One line saying what the item holds (add)
    #[schemars(default)]
    pub description: Option<String>,
    /// The item's content (add)
    #[schemars(default)]
    pub context: Option<String>,
}

impl ToolArgs for ContextBoardArgs {
    const TOOL: &'static str = "context_board";
    const NAMES: &'static [&'static str] = &["command", "src", "name", "description", "context"];

    fn read(given: &mut Given) -> Result<Self, String> {
        use crate::kinds::Src;
        let commands: &[(&[&str], BoardCommand)] = &[
            (&["get_board"], BoardCommand::GetBoard),
            (&["get"], BoardCommand::Get),
            (&["add"], BoardCommand::Add),
            (&["prune"], BoardCommand::Prune),
        ];
        Ok(ContextBoardArgs {
            command: given.need_choice("command", commands)?,
            src: given.choice("src", &[(&["agent"], Src::Agent), (&["user"], Src::User)])?,
            name: given.text("name")?,
            description: given.text("description")?,
            context: given.text("context")?,
        })
    }
}

/// The `context_board` commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, schemars::JsonSchema)]
#[schemars(rename_all = "snake_case", inline)]
pub enum BoardCommand {
    GetBoard,
    Get,
    Add,
    Prune,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read<T: ToolArgs>(v: Value) -> Result<T, String> {
        T::from_value(v)
    }

    #[test]
    fn numbers_come_as_numbers_or_strings_and_out_of_range_is_a_sentence() {
        for given in [json!(3), json!("3"), json!(" 3 "), json!(3.0)] {
            let a: RecallMemoryArgs = read(json!({"query": "q", "max_results": given})).unwrap();
            assert_eq!(a.max_results, 3, "{given}");
        }
        let a: RecallMemoryArgs = read(json!({"query": "q", "max_results": null})).unwrap();
        assert_eq!((a.max_results, a.store), (DEFAULT_MAX_RESULTS, Sources::default()));
        for (given, shown) in [
            (json!(0), "0"),
            (json!(101), "101"),
            (json!(-1), "-1"),
            (json!(2.5), "2.5"),
            (json!("lots"), "\"lots\""),
            (json!([3]), "[3]"),
            (json!(true), "true"),
        ] {
            let message = read::<RecallMemoryArgs>(json!({"query": "q", "max_results": given})).unwrap_err();
            assert_eq!(message, format!("max_results must be a whole number from 1 to 100, not {shown}"));
        }
        let a: ListMemoriesArgs = read(json!({"limit": "7"})).unwrap();
        assert_eq!(a.limit, 7);
        assert_eq!(read::<ListMemoriesArgs>(json!({})).unwrap().limit, DEFAULT_LIMIT);
        let a: GetContextArgs = read(json!({"max_tokens": "150", "decisions_only": "true"})).unwrap();
        assert_eq!((a.max_tokens, a.decisions_only), (Some(150), true));
        assert_eq!(
            read::<GetContextArgs>(json!({"max_tokens": 99})).unwrap_err(),
            "max_tokens must be a whole number from 100 to 4294967295, not 99"
        );
    }

    #[test]
    fn unknown_and_missing_arguments_are_named() {
        assert_eq!(
            read::<ListMemoriesArgs>(json!({"limt": 3})).unwrap_err(),
            "list_memories has no argument \"limt\"; its arguments are store, type, agent and limit"
        );
        assert_eq!(
            read::<GetMemoryArgs>(json!({"memory_id": 3})).unwrap_err(),
            "get_memory has no argument \"memory_id\"; its arguments are id"
        );
        assert_eq!(read::<SaveMemoryArgs>(json!({"tags": ["x"]})).unwrap_err(), "content is required: a string");
        assert_eq!(
            read::<ProposeDecisionArgs>(json!({"text": "x"})).unwrap_err(),
            "type is required: architectural, scope, process or technical"
        );
        assert_eq!(
            read::<ProposeDecisionArgs>(json!({"text": "x", "type": "strategic"})).unwrap_err(),
            "type must be architectural, scope, process or technical, not \"strategic\""
        );
        assert_eq!(
            read::<VoteMemoryArgs>(json!({"id": "m", "direction": "Up", "reason": "r"})).unwrap_err(),
            "direction must be up or down, not \"Up\""
        );
        assert_eq!(
            read::<ForgetMemoryArgs>(json!({"id": -1})).unwrap_err(),
            "id must be a memory's number (e.g. 7) or a record's id (e.g. \"mem-1a2b3c4d\"), not -1"
        );
        assert_eq!(
            read::<SaveMemoryArgs>(json!({"content": "c", "tags": [1]})).unwrap_err(),
            "tags must be a list of strings or one comma-separated string, not [1]"
        );
        assert_eq!(
            read::<RecallMemoryArgs>(json!({"query": "q", "store": "decisions!"})).unwrap_err(),
            "store must be md, copilot, decision, session, shared or a shared source's name, or a list of them, not \"decisions!\""
        );
        assert_eq!(
            read::<ListMemoriesArgs>(json!([1])).unwrap_err(),
            "the arguments of list_memories must be a JSON object, not [1]"
        );
        let long = "x".repeat(100);
        let message = read::<SaveMemoryArgs>(json!({"content": 1, long.clone(): 1})).unwrap_err();
        assert!(message.contains(&format!("\"{}...\"", &long[..60])), "{message}");
    }

    #[test]
    fn arguments_accept_the_forms_agents_send() {
        let a: SaveMemoryArgs = read(json!({"content": "c", "tags": "a, b,,"})).unwrap();
        assert_eq!(a.tags, ["a", "b"]);
        let a: SaveMemoryArgs = read(json!({"content": "c", "tags": null, "type": null})).unwrap();
        assert!(a.tags.is_empty() && a.memory_type.is_none());
        let a: StoreMemoryArgs = read(json!({"subject": "s", "fact": "f", "reason": "r"})).unwrap();
        assert!(a.citations.is_empty() && a.category.is_none());
        // Copilot's agents send a category.
        let a: StoreMemoryArgs =
            read(json!({"subject": "s", "fact": "f", "reason": "r", "citations": "a.rs:1", "category": "general"}))
                .unwrap();
        assert_eq!((a.citations, a.category.as_deref()), (vec!["a.rs:1".to_string()], Some("general")));
        for (id, want) in [(json!(7), "7"), (json!("7"), "7"), (json!("mem-1a"), "mem-1a")] {
            assert_eq!(read::<ForgetMemoryArgs>(json!({"id": id})).unwrap().id, want);
        }
        assert_eq!(read::<GetMemoryArgs>(json!({"id": "decision:2"})).unwrap().id, "decision:2");
        for (store, want) in [
            (json!("md"), vec![Store::Md]),
            (json!("markdown"), vec![Store::Md]),
            (json!(["copilot"]), vec![Store::Copilot]),
            (json!(["md", "decision"]), vec![Store::Md, Store::Decision]),
            (json!("session"), vec![Store::Session]),
        ] {
            let a: RecallMemoryArgs = read(json!({"query": "q", "store": store})).unwrap();
            assert_eq!(a.store, Sources::of(&want));
        }
        let a: RecallMemoryArgs = read(json!({"query": "q", "store": []})).unwrap();
        assert_eq!(a.store, Sources::default(), "an empty list: every kind");
        assert!(a.origins.project());
        let a: RecallMemoryArgs = read(json!({"query": "q", "store": ["org", "md"]})).unwrap();
        assert_eq!((a.store, a.origins.only_shared), (Sources::of(&[Store::Md]), Some(vec!["org".to_string()])));
        let a: RecallMemoryArgs = read(json!({"query": "q", "store": "shared"})).unwrap();
        assert_eq!((a.store, a.origins.only_shared), (Sources::default(), Some(Vec::new())));
        let a: VoteMemoryArgs = read(json!({"fact": "f", "direction": "downvote", "reason": "r"})).unwrap();
        assert_eq!((a.id, a.fact.as_deref(), a.direction), (None, Some("f"), Direction::Down));
        let a: UpdateSessionArgs = read(json!({"summary": "s", "append": null})).unwrap();
        assert!(!a.append);
        let a: ContextBoardArgs = read(json!({"command": "get", "name": "n", "src": null})).unwrap();
        assert_eq!((a.command, a.src), (BoardCommand::Get, None));
    }

    #[test]
    fn schemas_are_inline_and_closed() {
        for schema in [
            schemars::schema_for!(Checked<ProposeDecisionArgs>),
            schemars::schema_for!(Checked<VoteMemoryArgs>),
            schemars::schema_for!(Checked<ContextBoardArgs>),
            schemars::schema_for!(Checked<ListMemoriesArgs>),
        ] {
            let text = serde_json::to_string(&schema).unwrap();
            assert!(!text.contains("$ref") && !text.contains("$defs"), "{text}");
            assert!(text.contains("\"additionalProperties\":false"), "{text}");
        }
        let schema = serde_json::to_value(schemars::schema_for!(RecallMemoryArgs)).unwrap();
        assert_eq!(schema["properties"]["max_results"]["maximum"], 100);
        assert_eq!(schema["properties"]["max_results"]["default"], 5);
        assert_eq!(schema["required"], json!(["query"]));
        let schema = serde_json::to_string(&schemars::schema_for!(ForgetMemoryArgs)).unwrap();
        assert!(schema.contains("integer") && schema.contains("string"), "{schema}");
    }

    /// Checks one tool's reader against its input schema: the names it accepts (`NAMES`) are the
    /// schema's `properties`, it reads each of them, and the names without which it answers "NAME
    /// is required" are the schema's `required`. `sample` gives every argument a valid value.
    /// Returns what differs.
    fn reader_matches_schema<T: ToolArgs>(schema: &Map<String, Value>, sample: &Value) -> Vec<String> {
        use std::collections::BTreeSet;
        let tool = T::TOOL;
        let names = |v: Option<&Value>| -> BTreeSet<String> {
            match v {
                Some(Value::Object(map)) => map.keys().cloned().collect(),
                Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(String::from).collect(),
                _ => BTreeSet::new(),
            }
        };
        let accepted: BTreeSet<String> = T::NAMES.iter().map(|n| n.to_string()).collect();
        let properties = names(schema.get("properties"));
        let mut problems = Vec::new();
        if accepted != properties {
            problems.push(format!("{tool}: the reader takes {accepted:?}, the schema's properties are {properties:?}"));
        }
        let Some(sample) = sample.as_object().filter(|s| s.keys().cloned().collect::<BTreeSet<_>>() == accepted) else {
            problems.push(format!("{tool}: the test's sample must give a value to each of {accepted:?}: {sample}"));
            return problems;
        };
        let mut given = Given(sample.clone());
        match T::read(&mut given) {
            Ok(_) if given.0.is_empty() => {}
            Ok(_) => problems.push(format!("{tool}: the reader accepts but never reads {:?}", given.0.keys())),
            Err(e) => problems.push(format!("{tool}: the reader refuses the sample {sample:?}: {e}")),
        }
        let required_by_reader: BTreeSet<String> = T::NAMES
            .iter()
            .filter(|name| {
                let mut without = sample.clone();
                without.remove(**name);
                T::from_value(Value::Object(without)).is_err_and(|e| e.starts_with(&format!("{name} is required")))
            })
            .map(|n| n.to_string())
            .collect();
        let required = names(schema.get("required"));
        if required_by_reader != required {
            problems.push(format!("{tool}: the reader requires {required_by_reader:?}, the schema {required:?}"));
        }
        problems
    }

    #[test]
    fn each_tools_reader_takes_its_schemas_properties_and_requires_its_required_ones() {
        type Check = fn(&Map<String, Value>, &Value) -> Vec<String>;
        let samples: [(&str, Check, Value); 13] = [
            (
                SaveMemoryArgs::TOOL,
                reader_matches_schema::<SaveMemoryArgs>,
                json!({"content": "c", "tags": ["t"], "type": "learning", "importance": "high", "agent": "a"}),
            ),
            (
                RecallMemoryArgs::TOOL,
                reader_matches_schema::<RecallMemoryArgs>,
                json!({"query": "q", "max_results": 3, "store": "md"}),
            ),
            (
                ListMemoriesArgs::TOOL,
                reader_matches_schema::<ListMemoriesArgs>,
                json!({"store": "md", "type": "learning", "agent": "a", "limit": 3}),
            ),
            (GetMemoryArgs::TOOL, reader_matches_schema::<GetMemoryArgs>, json!({"id": 7})),
            (AuditArgs::TOOL, reader_matches_schema::<AuditArgs>, json!({"ids": [7, "mem-1a2b3c4d"]})),
            (ForgetMemoryArgs::TOOL, reader_matches_schema::<ForgetMemoryArgs>, json!({"id": 7})),
            (UpdateMemoryArgs::TOOL, reader_matches_schema::<UpdateMemoryArgs>, json!({"id": 7, "content": "c"})),
            (
                StoreMemoryArgs::TOOL,
                reader_matches_schema::<StoreMemoryArgs>,
                json!({"subject": "s", "fact": "f", "citations": ["a.rs:1"], "reason": "r", "category": "general"}),
            ),
            (
                ProposeDecisionArgs::TOOL,
                reader_matches_schema::<ProposeDecisionArgs>,
                json!({"text": "t", "type": "scope"}),
            ),
            (
                GetContextArgs::TOOL,
                reader_matches_schema::<GetContextArgs>,
                json!({"agent": "a", "for": ["src/a.rs"], "decisions_only": true, "max_tokens": 500}),
            ),
            (
                UpdateSessionArgs::TOOL,
                reader_matches_schema::<UpdateSessionArgs>,
                json!({"summary": "s", "append": true}),
            ),
            (
                VoteMemoryArgs::TOOL,
                reader_matches_schema::<VoteMemoryArgs>,
                json!({"id": "mem-1a2b3c4d", "fact": "f", "direction": "up", "reason": "r"}),
            ),
            (
                ContextBoardArgs::TOOL,
                reader_matches_schema::<ContextBoardArgs>,
                json!({"command": "add", "src": "agent", "name": "n", "description": "d", "context": "c"}),
            ),
        ];
        // The schemas the server lists, as clients get them; every tool it lists has a sample.
        let tools = crate::mcp::KbServer::tool_router().list_all();
        let listed: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        let mut sampled: Vec<&str> = samples.iter().map(|(tool, ..)| *tool).collect();
        sampled.sort_unstable();
        let mut sorted = listed.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, sampled, "each tool the server lists, and no other, needs a sample here");
        let problems: Vec<String> = tools
            .iter()
            .flat_map(|t| {
                let (_, check, sample) = samples.iter().find(|(tool, ..)| *tool == t.name).expect("a sample");
                check(&t.input_schema, sample)
            })
            .collect();
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
