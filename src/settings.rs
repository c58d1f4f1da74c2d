//! Settings: defaults < global `settings.json` < project `settings.json` < environment (docs/formats.md, Settings).
//!
//! Each value keeps where it came from, for `kb config` and for error messages. Keys kb does not
//! know are ignored: `settings.json` is shared with co-cli (the Python tool whose file layout kb keeps), which
//! keeps many other settings there.

use crate::error::{Diagnostic, KbError, io_at};
use crate::kinds::DecisionKind;
use crate::paths::Layout;
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Default,
    File(PathBuf),
    Env(&'static str),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(p) => write!(f, "{}", p.display()),
            Source::Env(name) => write!(f, "env:{name}"),
        }
    }
}

/// A value with its source.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting<T> {
    pub value: T,
    pub source: Source,
}

/// How decay disposes of old memories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecayStrategy {
    Summarize,
    Cut,
}

impl DecayStrategy {
    pub fn as_str(self) -> &'static str {
        match self {
            DecayStrategy::Summarize => "summarize",
            DecayStrategy::Cut => "cut",
        }
    }
}

/// The effective settings of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Decay runs when a save makes the count exceed this. Integer ≥ 10.
    pub memory_max_count: Setting<u64>,
    /// Only memories created this many days back are dedup candidates. Integer ≥ 1.
    pub memory_dedup_window_days: Setting<u64>,
    /// Similarity (0–100) at or above which a save consolidates.
    pub memory_dedup_threshold: Setting<f64>,
    /// `summarize` or `cut`.
    pub memory_decay_strategy: Setting<DecayStrategy>,
    /// Fraction (0.0–1.0) of all memories that one decay removes.
    pub memory_decay_percentage: Setting<f64>,
    /// Files `kb compile` writes the always-loaded context into, relative to the root, each
    /// with the options of its own block (docs/behaviour.md, Compile targets).
    pub context_targets: Setting<Vec<TargetSpec>>,
    /// The token budget of the compiled block: ≥ 100, or none.
    pub context_max_tokens: Setting<Option<u32>>,
    /// How many high-importance learnings the block shows. 0–100.
    pub learnings_limit: Setting<u64>,
    /// How many hot memories the block shows. 0–100.
    pub hot_limit: Setting<u64>,
    /// The window of active days that heat counts. 1–365.
    pub heat_window_days: Setting<u64>,
    /// The types of the active decisions the block shows (any subset of the four; in the order
    /// given, without repeats).
    pub context_decision_types: Setting<Vec<DecisionKind>>,
    /// The agents whose own files `kb compile` writes besides the targets (docs/behaviour.md,
    /// Agents), in the order given, without repeats.
    pub agents: Setting<Vec<Agent>>,
    /// What an agent's writes over MCP do (docs/mcp.md, Who may write): `allow`, `propose` or
    /// `deny`.
    pub agent_writes: Setting<AgentWrites>,
    /// The shell command that turns a finished session into proposals (`kb inbox digest`); none
    /// when null.
    pub summarizer: Setting<Option<String>>,
    /// Other kb repositories whose knowledge this one reads (docs/shared.md): project settings
    /// only, names unique.
    pub shared: Setting<Vec<SharedSpec>>,
    /// A shared source's local copy older than this many hours gets a warning. 1–8760.
    pub shared_ttl_hours: Setting<u64>,
}

/// One shared source of the setting `shared`: `{"name", "url", "ref"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedSpec {
    /// `[a-z0-9-]{1,32}`, not a store word: the prefix of its items' ids (`org:12`).
    pub name: String,
    /// Where git finds it ([`SharedUrl`]).
    pub url: String,
    /// The branch or tag to follow; `None`: the remote's default branch.
    pub reference: Option<String>,
}

/// What a shared source's `url` is: a remote git reaches (copied under the user's cache), or a
/// plain path, used in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedUrl {
    Remote,
    Local,
}

/// The words a shared source may not be named: the store words of `--store`.
pub const SHARED_RESERVED: [&str; 6] = ["md", "copilot", "decision", "session", "shared", "all"];

impl SharedSpec {
    /// Checks a name: `[a-z0-9-]{1,32}`, not a store word.
    pub fn check_name(name: &str) -> Result<(), String> {
        let ok = (1..=32).contains(&name.len())
            && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !ok {
            return Err(format!("name {name:?} must be 1 to 32 of a-z, 0-9 and -"));
        }
        if SHARED_RESERVED.contains(&name) {
            return Err(format!("name {name:?} is a store word ({})", SHARED_RESERVED.join(", ")));
        }
        Ok(())
    }

    /// Says what a URL is, or why kb refuses it: only `https://`, `ssh://`, `git://`, `file://`,
    /// an scp-like `[user@]host:path` and a plain path; never another transport (`ext::`, `fd::`,
    /// `http://`, a remote helper), an option (`-…`) or a control character.
    pub fn check_url(url: &str) -> Result<SharedUrl, String> {
        if url.trim().is_empty() {
            return Err("url is empty".into());
        }
        if url.starts_with('-') || url.chars().any(char::is_control) {
            return Err(format!("url {url:?} is not a URL or a path"));
        }
        let refused = || {
            Err(format!(
                "url {url:?} uses a transport kb does not allow: only https://, ssh://, git://, file://, host:path or a plain path"
            ))
        };
        if url.contains("::") {
            return refused();
        }
        if let Some((scheme, _)) = url.split_once("://") {
            return if ["https", "ssh", "git", "file"].contains(&scheme) { Ok(SharedUrl::Remote) } else { refused() };
        }
        // As git reads it: a colon before the first slash makes an scp-like `host:path`.
        match (url.find(':'), url.find('/')) {
            (Some(colon), slash) if slash.is_none_or(|s| colon < s) => {
                let host = &url[..colon];
                if host.is_empty() || host.contains(['\\', ' ']) {
                    return refused();
                }
                Ok(SharedUrl::Remote)
            }
            _ => Ok(SharedUrl::Local),
        }
    }

    /// Reads one entry of the setting; `why` says what is wrong.
    fn from_json(v: &Value) -> Result<SharedSpec, String> {
        let obj = v.as_object().ok_or("not an object")?;
        for key in obj.keys() {
            if !["name", "url", "ref"].contains(&key.as_str()) {
                return Err(format!("unknown key {key:?}"));
            }
        }
        let text = |key: &str| obj.get(key).map(|v| v.as_str().ok_or(format!("{key} is not a string"))).transpose();
        let name = text("name")?.ok_or("no name")?.to_string();
        SharedSpec::check_name(&name)?;
        let url = text("url")?.ok_or("no url")?.to_string();
        SharedSpec::check_url(&url)?;
        let reference = match obj.get("ref") {
            None | Some(Value::Null) => None,
            Some(_) => {
                let r = text("ref")?.unwrap_or_default();
                SharedSpec::check_ref(r)?;
                Some(r.to_string())
            }
        };
        Ok(SharedSpec { name, url, reference })
    }

    /// Checks a `ref`: a branch or tag name git could take (no option, space or control, no `..`).
    pub fn check_ref(r: &str) -> Result<(), String> {
        let bad = r.is_empty()
            || r.starts_with('-')
            || r.contains("..")
            || r.chars().any(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(c));
        if bad { Err(format!("ref {r:?} is not a branch or tag name")) } else { Ok(()) }
    }

    /// The entry as it is written in `settings.json`.
    pub fn to_json(&self) -> Value {
        let mut obj = serde_json::Map::new();
        obj.insert("name".into(), Value::from(self.name.as_str()));
        obj.insert("url".into(), Value::from(self.url.as_str()));
        if let Some(r) = &self.reference {
            obj.insert("ref".into(), Value::from(r.as_str()));
        }
        Value::Object(obj)
    }
}

/// What an agent's writes over MCP do (the setting `agent_writes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AgentWrites {
    /// Agents write as they always did (the default).
    #[default]
    Allow,
    /// An agent's save becomes a proposal in the inbox, which a person accepts.
    Propose,
    /// An agent's saves and changes are refused (the board stays writable).
    Deny,
}

impl AgentWrites {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentWrites::Allow => "allow",
            AgentWrites::Propose => "propose",
            AgentWrites::Deny => "deny",
        }
    }

    /// Returns the value named `name` (surrounding spaces ignored).
    pub fn parse(name: &str) -> Option<AgentWrites> {
        [AgentWrites::Allow, AgentWrites::Propose, AgentWrites::Deny].into_iter().find(|w| w.as_str() == name.trim())
    }
}

/// A coding agent whose native files kb projects the knowledge into (docs/formats.md, Agents' files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Agent {
    Claude,
    Codex,
    Copilot,
    Cursor,
    Gemini,
    Windsurf,
    Kiro,
    Cline,
}

impl Agent {
    /// Every agent, in documentation order.
    pub const ALL: [Agent; 8] = [
        Agent::Claude,
        Agent::Codex,
        Agent::Copilot,
        Agent::Cursor,
        Agent::Gemini,
        Agent::Windsurf,
        Agent::Kiro,
        Agent::Cline,
    ];

    /// Returns the agent's name as the setting spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Copilot => "copilot",
            Agent::Cursor => "cursor",
            Agent::Gemini => "gemini",
            Agent::Windsurf => "windsurf",
            Agent::Kiro => "kiro",
            Agent::Cline => "cline",
        }
    }

    /// Returns the agent named `name` (case-insensitive, surrounding spaces ignored).
    pub fn parse(name: &str) -> Option<Agent> {
        let name = name.trim();
        Agent::ALL.into_iter().find(|a| a.as_str().eq_ignore_ascii_case(name))
    }

    /// Returns the valid names, comma-separated, for messages.
    pub fn names() -> String {
        Agent::ALL.map(Agent::as_str).join(", ")
    }
}

/// Agents from a JSON list of names, or a string holding a JSON list or comma-separated names
/// (the environment variable, `kb config set`, `kb init --agents`). Repeats are dropped. An
/// unknown name is an error naming it.
pub fn parse_agents(v: &Value) -> Result<Vec<Agent>, String> {
    let names: Vec<String> = match v {
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string).ok_or_else(|| format!("{i} is not an agent name")))
            .collect::<Result<_, _>>()?,
        Value::String(s) if s.trim_start().starts_with('[') => match serde_json::from_str::<Value>(s) {
            Ok(list @ Value::Array(_)) => return parse_agents(&list),
            _ => return Err(format!("{s:?} is not a JSON list")),
        },
        Value::String(s) => s.split(',').map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect(),
        other => return Err(format!("{other} is not a list")),
    };
    let mut agents = Vec::new();
    for name in &names {
        let agent = Agent::parse(name).ok_or_else(|| format!("unknown agent {name:?}"))?;
        if !agents.contains(&agent) {
            agents.push(agent);
        }
    }
    Ok(agents)
}

/// What a compiled block is for: the agent, the files being worked on, which layers, the budget.
/// The one shape of a block request: a compile target stores one ([`TargetSpec::block`]),
/// `kb context` and MCP `get_context` build one from their arguments, and `ops::context::check`
/// checks it once for all of them before the compiler reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlockRequest {
    /// The agent the block is for (its core context and learnings); `None`: memories that name no
    /// agent (or are `cross-team`).
    pub agent: Option<String>,
    /// The files being worked on: they select scoped instructions. As given until checked; then
    /// root-relative and `/`-separated.
    pub for_paths: Vec<String>,
    /// Only the decisions (for short-lived helper agents).
    pub decisions_only: bool,
    pub board: bool,
    /// Whether Hot Memories go in (`kb context` yes unless `--no-hot`; a target only with
    /// `"hot": true`: heat is local, so a committed file leaves them out by default).
    pub hot: bool,
    /// Whether the global context (`~/.config/co-cli/knowledge/context.md`) goes in (`kb
    /// context`, MCP `get_context` yes; a target only with `"global": true`: it is one person's,
    /// and a committed file carries the team's knowledge only).
    pub global: bool,
    /// Whether the open session goes in (as `global`: one person's, so a target only with
    /// `"session": true`).
    pub session: bool,
    /// The token budget; `None`: the setting `context_max_tokens`, else the byte limit.
    pub max_tokens: Option<u32>,
    /// Put the block inside `<system-reminder>` tags.
    pub wrap: bool,
    /// Count tokens even without a budget (for JSON).
    pub count_tokens: bool,
}

/// One `context_targets` entry (docs/behaviour.md, Compile targets): a path, or an object with the
/// options of that target's own block. A plain path is `TargetSpec { path, ..Default::default() }`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TargetSpec {
    /// As written: relative to the root, or absolute.
    pub path: String,
    /// The target's block (never wrapped; tokens counted only for a budget).
    pub block: BlockRequest,
}

impl TargetSpec {
    /// Returns the entry as it is written in `settings.json`: a string when it is only a path.
    pub fn to_json(&self) -> Value {
        if *self == (TargetSpec { path: self.path.clone(), ..TargetSpec::default() }) {
            return Value::from(self.path.as_str());
        }
        let mut o = serde_json::Map::new();
        o.insert("path".into(), Value::from(self.path.as_str()));
        if let Some(a) = &self.block.agent {
            o.insert("agent".into(), Value::from(a.as_str()));
        }
        if !self.block.for_paths.is_empty() {
            o.insert("for".into(), Value::from(self.block.for_paths.clone()));
        }
        for (key, on) in [
            ("decisions_only", self.block.decisions_only),
            ("board", self.block.board),
            ("hot", self.block.hot),
            ("global", self.block.global),
            ("session", self.block.session),
        ] {
            if on {
                o.insert(key.into(), Value::Bool(true));
            }
        }
        if let Some(n) = self.block.max_tokens {
            o.insert("max_tokens".into(), Value::from(n));
        }
        Value::Object(o)
    }

    /// Reads one entry: a non-empty path string, or an object with a `path` and the options of
    /// a target's own block (an unknown key is an error, so a typo does not silently compile the wrong block).
    pub fn from_json(v: &Value) -> Result<TargetSpec, String> {
        match v {
            Value::String(s) if !s.is_empty() => Ok(TargetSpec { path: s.clone(), ..TargetSpec::default() }),
            Value::Object(o) => {
                let mut t = TargetSpec::default();
                for (key, v) in o {
                    let bool_of = |v: &Value| v.as_bool().ok_or_else(|| format!("\"{key}\" must be true or false"));
                    match key.as_str() {
                        "path" => {
                            t.path = v
                                .as_str()
                                .filter(|s| !s.is_empty())
                                .ok_or("\"path\" must be a non-empty string")?
                                .into()
                        }
                        "agent" => {
                            let name = v.as_str().ok_or("\"agent\" must be a string")?;
                            crate::format::text::check_agent(name)?;
                            t.block.agent = Some(name.to_string());
                        }
                        "for" => {
                            t.block.for_paths = match v {
                                Value::String(s) => vec![s.clone()],
                                Value::Array(a) => a
                                    .iter()
                                    .map(|p| p.as_str().filter(|s| !s.is_empty()).map(String::from))
                                    .collect::<Option<_>>()
                                    .ok_or("\"for\" must be a list of paths")?,
                                _ => return Err("\"for\" must be a list of paths".into()),
                            }
                        }
                        "decisions_only" => t.block.decisions_only = bool_of(v)?,
                        "board" => t.block.board = bool_of(v)?,
                        "hot" => t.block.hot = bool_of(v)?,
                        "global" => t.block.global = bool_of(v)?,
                        "session" => t.block.session = bool_of(v)?,
                        "max_tokens" => {
                            t.block.max_tokens = match v {
                                Value::Null => None,
                                v => Some(max_tokens_of(v).ok_or_else(|| {
                                    format!("\"max_tokens\" must be an integer from {MIN_MAX_TOKENS} to 4294967295")
                                })?),
                            }
                        }
                        other => {
                            return Err(format!(
                                "unknown key \"{other}\" (the keys are path, agent, for, decisions_only, board, hot, global, session, max_tokens)"
                            ));
                        }
                    }
                }
                if t.path.is_empty() {
                    return Err("an object entry needs a \"path\"".into());
                }
                Ok(t)
            }
            _ => Err("an entry must be a non-empty path or an object with a \"path\"".into()),
        }
    }
}

/// The smallest token budget a block may be given (`--max-tokens`, `max_tokens` of a target or of
/// `get_context`, `context_max_tokens`): below it not even the decisions fit.
pub const MIN_MAX_TOKENS: u32 = 100;

/// Returns a token budget from a JSON value: an integer from [`MIN_MAX_TOKENS`] to `u32::MAX`.
fn max_tokens_of(v: &Value) -> Option<u32> {
    as_int(v).filter(|&n| n >= i64::from(MIN_MAX_TOKENS)).and_then(|n| u32::try_from(n).ok())
}

/// A setting that could not be used, naming where it came from and what is valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SettingsError {
    /// The setting at fault, when one is (not for a file that cannot be read at all).
    pub key: Option<&'static str>,
    /// The settings file at fault, when the problem is in a file.
    pub path: Option<PathBuf>,
    /// The environment variable at fault, when the problem is in the environment.
    pub var: Option<&'static str>,
    pub line: Option<usize>,
    /// The whole message, naming the file or variable.
    pub message: String,
    /// The message without the file name, for reports that show the file separately.
    pub detail: String,
}

/// Sets the top-level `key` of the settings file `path` to `value` (JSON text), creating the
/// file when missing and keeping every other byte (other keys, their order, formatting). The
/// caller holds the repository lock.
/// Returns whether the file changed.
pub fn write_key(path: &Path, key: &str, value: &str) -> Result<bool, KbError> {
    let text = read_for_edit(path)?.unwrap_or_default();
    let new = crate::format::jsonedit::set_key(&text, key, value).map_err(|e| KbError::bad_file(path, None, &e))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_at(dir))?;
    }
    if new == text && path.exists() {
        return Ok(false);
    }
    crate::fsio::write_atomic(path, new.as_bytes()).map_err(io_at(path))?;
    Ok(true)
}

/// Reads a settings file kb is about to edit: `None` when missing; a FIFO or other non-file is
/// refused, never opened.
fn read_for_edit(path: &Path) -> Result<Option<String>, KbError> {
    let within = path.parent().unwrap_or(Path::new("/"));
    match crate::fsio::read_input(path, within).map_err(io_at(path))? {
        None => Ok(None),
        Some(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| KbError::bad_file(path, None, "not UTF-8")),
    }
}

/// Removes the top-level `key` from the settings file `path`, keeping every other byte; returns
/// whether it was there. A missing file has no key. The caller holds the repository lock.
pub fn remove_key(path: &Path, key: &str) -> Result<bool, KbError> {
    let Some(text) = read_for_edit(path)? else { return Ok(false) };
    let (new, found) =
        crate::format::jsonedit::remove_key(&text, key).map_err(|e| KbError::bad_file(path, None, &e))?;
    if found {
        crate::fsio::write_atomic(path, new.as_bytes()).map_err(io_at(path))?;
    }
    Ok(found)
}

/// Returns `raw` as the JSON value of setting `key`, validated as in docs/formats.md (Settings): JSON when it
/// parses as JSON (`50`, `["AGENTS.md"]`), else the text itself as a string (`cut`). An unknown
/// key or an invalid value is an error naming the valid keys or the valid range.
pub fn parse_value(key: &str, raw: &str, path: &Path) -> Result<Value, SettingsError> {
    if !KEYS.iter().any(|(k, _)| *k == key) {
        let keys: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
        let detail = format!("unknown setting {key:?}: the settings are {}", keys.join(", "));
        return Err(SettingsError { key: None, path: None, var: None, line: None, message: detail.clone(), detail });
    }
    let value = serde_json::from_str::<Value>(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
    Settings::default().set(key, &value, Source::File(path.to_path_buf()))?;
    Ok(value)
}

impl SettingsError {
    /// Returns the problem as a diagnostic: in its file, or in `env:NAME` for an environment
    /// variable.
    pub fn diagnostic(&self) -> Diagnostic {
        let path = match (&self.path, self.var) {
            (Some(p), _) => p.clone(),
            (None, Some(var)) => PathBuf::from(format!("env:{var}")),
            (None, None) => PathBuf::from("(settings)"),
        };
        Diagnostic::error(self.line, self.detail.clone()).in_file(&path)
    }
}

/// The keys kb reads, with their environment variables.
pub const KEYS: [(&str, Option<&str>); 16] = [
    ("memory_max_count", Some("CO_CLI_MEMORY_MAX_COUNT")),
    ("memory_dedup_window_days", Some("CO_CLI_MEMORY_DEDUP_WINDOW_DAYS")),
    ("memory_dedup_threshold", Some("CO_CLI_MEMORY_DEDUP_THRESHOLD")),
    ("memory_decay_strategy", Some("CO_CLI_MEMORY_DECAY_STRATEGY")),
    ("memory_decay_percentage", Some("CO_CLI_MEMORY_DECAY_PERCENTAGE")),
    ("context_targets", None),
    ("context_max_tokens", Some("KB_CONTEXT_MAX_TOKENS")),
    ("learnings_limit", Some("KB_LEARNINGS_LIMIT")),
    ("hot_limit", Some("KB_HOT_LIMIT")),
    ("heat_window_days", Some("KB_HEAT_WINDOW_DAYS")),
    ("context_decision_types", Some("KB_CONTEXT_DECISION_TYPES")),
    ("agents", Some("KB_AGENTS")),
    ("agent_writes", Some("KB_AGENT_WRITES")),
    ("summarizer", Some("KB_SUMMARIZER")),
    ("shared", None),
    ("shared_ttl_hours", Some("KB_SHARED_TTL_HOURS")),
];

/// The decision types compiled by default: Agentweaver's choice.
pub const DEFAULT_CONTEXT_DECISION_TYPES: [DecisionKind; 2] = [DecisionKind::Architectural, DecisionKind::Scope];

/// The default compile target.
pub const DEFAULT_CONTEXT_TARGET: &str = ".co-cli/knowledge/compiled.md";

impl Default for Settings {
    fn default() -> Self {
        fn d<T>(value: T) -> Setting<T> {
            Setting { value, source: Source::Default }
        }
        Settings {
            memory_max_count: d(200),
            memory_dedup_window_days: d(7),
            memory_dedup_threshold: d(85.0),
            memory_decay_strategy: d(DecayStrategy::Summarize),
            memory_decay_percentage: d(0.2),
            context_targets: d(vec![TargetSpec { path: DEFAULT_CONTEXT_TARGET.to_string(), ..TargetSpec::default() }]),
            context_max_tokens: d(None),
            learnings_limit: d(5),
            hot_limit: d(10),
            heat_window_days: d(10),
            context_decision_types: d(DEFAULT_CONTEXT_DECISION_TYPES.to_vec()),
            agents: d(Vec::new()),
            agent_writes: d(AgentWrites::Allow),
            summarizer: d(None),
            shared: d(Vec::new()),
            shared_ttl_hours: d(24),
        }
    }
}

impl Settings {
    /// Loads the settings for `layout`, with `env` as the environment. The first invalid value
    /// is an error.
    pub fn load(layout: &Layout, env: &dyn Fn(&str) -> Option<String>) -> Result<Settings, SettingsError> {
        let (settings, mut errors) = Settings::load_all(layout, env);
        if errors.is_empty() { Ok(settings) } else { Err(errors.swap_remove(0)) }
    }

    /// Loads the settings, skipping invalid values (they keep the value of the layer below) and
    /// returning every problem, for `kb check`.
    pub fn load_all(layout: &Layout, env: &dyn Fn(&str) -> Option<String>) -> (Settings, Vec<SettingsError>) {
        let mut s = Settings::default();
        let mut errors = Vec::new();
        let files = [layout.global_settings(), Some(layout.project_settings())];
        let global = layout.global_settings();
        for path in files.into_iter().flatten() {
            match read_file(&path, layout.boundary(&path)) {
                Ok(Some(obj)) => {
                    if global.as_ref() == Some(&path) && obj.contains_key("shared") {
                        let detail =
                            "shared is a project setting (the project's settings.json, committed): not read here"
                                .to_string();
                        errors.push(SettingsError {
                            key: Some("shared"),
                            message: format!("{}: {detail}", path.display()),
                            path: Some(path.clone()),
                            var: None,
                            line: None,
                            detail,
                        });
                    }
                    for (key, _) in KEYS {
                        if key == "shared" && global.as_ref() == Some(&path) {
                            continue;
                        }
                        if let Some(v) = obj.get(key) {
                            errors.extend(s.set(key, v, Source::File(path.clone())).err());
                        }
                    }
                }
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        for (key, var) in KEYS {
            let Some(var) = var else { continue };
            if let Some(raw) = env(var).filter(|v| !v.is_empty()) {
                errors.extend(s.set(key, &Value::String(raw), Source::Env(var)).err());
            }
        }
        (s, errors)
    }

    fn set(&mut self, key: &str, v: &Value, source: Source) -> Result<(), SettingsError> {
        let fail = |valid: &str| {
            let detail = match &source {
                Source::Env(var) => format!("invalid {var}={}: must be {valid}", show(v)),
                _ => format!("invalid {key} {}: must be {valid}", show(v)),
            };
            SettingsError {
                key: KEYS.iter().map(|(k, _)| *k).find(|k| *k == key),
                path: match &source {
                    Source::File(p) => Some(p.clone()),
                    _ => None,
                },
                var: match &source {
                    Source::Env(var) => Some(*var),
                    _ => None,
                },
                line: None,
                message: match &source {
                    Source::File(p) => format!("{}: {detail}", p.display()),
                    _ => detail.clone(),
                },
                detail,
            }
        };
        match key {
            "memory_max_count" => {
                let n = as_int(v).filter(|&n| n >= 10).ok_or_else(|| fail("an integer ≥ 10"))?;
                self.memory_max_count = Setting { value: n as u64, source };
            }
            "memory_dedup_window_days" => {
                let n = as_int(v).filter(|&n| n >= 1).ok_or_else(|| fail("an integer ≥ 1"))?;
                self.memory_dedup_window_days = Setting { value: n as u64, source };
            }
            "memory_dedup_threshold" => {
                let x =
                    as_num(v).filter(|x| (0.0..=100.0).contains(x)).ok_or_else(|| fail("a number from 0 to 100"))?;
                self.memory_dedup_threshold = Setting { value: x, source };
            }
            "memory_decay_strategy" => {
                let st = match v.as_str() {
                    Some("summarize") => DecayStrategy::Summarize,
                    Some("cut") => DecayStrategy::Cut,
                    _ => return Err(fail("\"summarize\" or \"cut\"")),
                };
                self.memory_decay_strategy = Setting { value: st, source };
            }
            "memory_decay_percentage" => {
                let x =
                    as_num(v).filter(|x| (0.0..=1.0).contains(x)).ok_or_else(|| fail("a number from 0.0 to 1.0"))?;
                self.memory_decay_percentage = Setting { value: x, source };
            }
            "context_targets" => {
                let entries = v.as_array().ok_or_else(|| fail("a list of paths or {\"path\": ...} objects"))?;
                let list = entries
                    .iter()
                    .enumerate()
                    .map(|(i, e)| {
                        TargetSpec::from_json(e).map_err(|why| {
                            fail(&format!("a list of paths or {{\"path\": ...}} objects (entry {}: {why})", i + 1))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                self.context_targets = Setting { value: list, source };
            }
            "context_max_tokens" => {
                let n = match v {
                    Value::Null => None,
                    Value::String(s) if s.trim() == "null" => None,
                    v => Some(
                        max_tokens_of(v)
                            .ok_or_else(|| fail(&format!("an integer from {MIN_MAX_TOKENS} to 4294967295, or null")))?,
                    ),
                };
                self.context_max_tokens = Setting { value: n, source };
            }
            "learnings_limit" | "hot_limit" => {
                let n = as_int(v).filter(|n| (0..=100).contains(n)).ok_or_else(|| fail("an integer from 0 to 100"))?;
                let setting = Setting { value: n as u64, source };
                if key == "hot_limit" { self.hot_limit = setting } else { self.learnings_limit = setting }
            }
            "heat_window_days" => {
                let n = as_int(v).filter(|n| (1..=365).contains(n)).ok_or_else(|| fail("an integer from 1 to 365"))?;
                self.heat_window_days = Setting { value: n as u64, source };
            }
            "context_decision_types" => {
                let kinds = decision_kinds(v).ok_or_else(|| {
                    fail("a list of decision types (architectural, scope, process, technical), as JSON or comma-separated")
                })?;
                self.context_decision_types = Setting { value: kinds, source };
            }
            "agents" => {
                let agents = parse_agents(v).map_err(|why| {
                    fail(&format!("a list of agents ({}), as JSON or comma-separated; {why}", Agent::names()))
                })?;
                self.agents = Setting { value: agents, source };
            }
            "agent_writes" => {
                let w = v
                    .as_str()
                    .and_then(AgentWrites::parse)
                    .ok_or_else(|| fail("\"allow\", \"propose\" or \"deny\""))?;
                self.agent_writes = Setting { value: w, source };
            }
            "summarizer" => {
                let cmd = match v {
                    Value::Null => None,
                    Value::String(s) if s.trim() == "null" => None,
                    Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
                    _ => return Err(fail("a shell command (a non-blank string), or null")),
                };
                self.summarizer = Setting { value: cmd, source };
            }
            "shared" => {
                let entries = v.as_array().ok_or_else(|| fail("a list of {\"name\", \"url\", \"ref\"} objects"))?;
                let mut list: Vec<SharedSpec> = Vec::new();
                for (i, e) in entries.iter().enumerate() {
                    let spec = SharedSpec::from_json(e).map_err(|why| {
                        fail(&format!("a list of {{\"name\", \"url\", \"ref\"}} objects (entry {}: {why})", i + 1))
                    })?;
                    if list.iter().any(|s| s.name == spec.name) {
                        let why = format!("entry {}: the name {:?} is taken by an earlier entry", i + 1, spec.name);
                        return Err(fail(&format!("a list of shared sources with unique names ({why})")));
                    }
                    list.push(spec);
                }
                self.shared = Setting { value: list, source };
            }
            "shared_ttl_hours" => {
                let n =
                    as_int(v).filter(|n| (1..=8760).contains(n)).ok_or_else(|| fail("an integer from 1 to 8760"))?;
                self.shared_ttl_hours = Setting { value: n as u64, source };
            }
            _ => {}
        }
        Ok(())
    }

    /// Returns every setting as `(key, value as JSON, source)`, in documentation order.
    pub fn entries(&self) -> Vec<(&'static str, Value, &Source)> {
        vec![
            ("memory_max_count", Value::from(self.memory_max_count.value), &self.memory_max_count.source),
            (
                "memory_dedup_window_days",
                Value::from(self.memory_dedup_window_days.value),
                &self.memory_dedup_window_days.source,
            ),
            (
                "memory_dedup_threshold",
                Value::from(self.memory_dedup_threshold.value),
                &self.memory_dedup_threshold.source,
            ),
            (
                "memory_decay_strategy",
                Value::from(self.memory_decay_strategy.value.as_str()),
                &self.memory_decay_strategy.source,
            ),
            (
                "memory_decay_percentage",
                Value::from(self.memory_decay_percentage.value),
                &self.memory_decay_percentage.source,
            ),
            (
                "context_targets",
                Value::Array(self.context_targets.value.iter().map(TargetSpec::to_json).collect()),
                &self.context_targets.source,
            ),
            (
                "context_max_tokens",
                self.context_max_tokens.value.map_or(Value::Null, Value::from),
                &self.context_max_tokens.source,
            ),
            ("learnings_limit", Value::from(self.learnings_limit.value), &self.learnings_limit.source),
            ("hot_limit", Value::from(self.hot_limit.value), &self.hot_limit.source),
            ("heat_window_days", Value::from(self.heat_window_days.value), &self.heat_window_days.source),
            (
                "context_decision_types",
                Value::from(self.context_decision_types.value.iter().map(|k| k.as_str()).collect::<Vec<_>>()),
                &self.context_decision_types.source,
            ),
            (
                "agents",
                Value::from(self.agents.value.iter().map(|a| a.as_str()).collect::<Vec<_>>()),
                &self.agents.source,
            ),
            ("agent_writes", Value::from(self.agent_writes.value.as_str()), &self.agent_writes.source),
            ("summarizer", self.summarizer.value.clone().map_or(Value::Null, Value::from), &self.summarizer.source),
            ("shared", Value::Array(self.shared.value.iter().map(SharedSpec::to_json).collect()), &self.shared.source),
            ("shared_ttl_hours", Value::from(self.shared_ttl_hours.value), &self.shared_ttl_hours.source),
        ]
    }
}

/// Reads a settings file: `None` when it does not exist.
fn read_file(path: &Path, within: &Path) -> Result<Option<serde_json::Map<String, Value>>, SettingsError> {
    let text = match crate::fsio::read_input(path, within) {
        Ok(Some(bytes)) => String::from_utf8(bytes).map_err(|e| {
            file_error(path, None, format!("cannot read: not UTF-8 (at byte {})", e.utf8_error().valid_up_to()))
        })?,
        Ok(None) => return Ok(None),
        Err(e) => {
            return Err(file_error(path, None, format!("cannot read: {e}")));
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        Ok(_) => Err(file_error(path, Some(1), "settings must be a JSON object".into())),
        Err(e) => Err(file_error(path, Some(e.line()), format!("invalid JSON: {e}"))),
    }
}

fn file_error(path: &Path, line: Option<usize>, detail: String) -> SettingsError {
    let at = line.map_or(String::new(), |l| format!(":{l}"));
    SettingsError {
        key: None,
        path: Some(path.into()),
        var: None,
        line,
        message: format!("{}{at}: {detail}", path.display()),
        detail,
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{s}'"),
        other => other.to_string(),
    }
}

/// Decision types from a JSON list of names, or a string holding a JSON list or comma-separated
/// names (the environment variable; `kb config set`). Repeats are dropped; an empty list is none
/// compiled. Returns `None` for anything else, or an unknown name.
fn decision_kinds(v: &Value) -> Option<Vec<DecisionKind>> {
    let names: Vec<String> = match v {
        Value::Array(items) => items.iter().map(|i| i.as_str().map(str::to_string)).collect::<Option<_>>()?,
        Value::String(s) if s.trim_start().starts_with('[') => match serde_json::from_str::<Value>(s) {
            Ok(list @ Value::Array(_)) => return decision_kinds(&list),
            _ => return None,
        },
        Value::String(s) => s.split(',').map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect(),
        _ => return None,
    };
    let mut kinds = Vec::new();
    for name in &names {
        let kind = DecisionKind::parse(name.trim())?;
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    Some(kinds)
}

/// An integer from a JSON number (integral) or a numeric string, as pydantic's lax mode accepts.
fn as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => {
            n.as_i64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9e15).map(|f| f as i64))
        }
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn as_num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    }
}

/// The process environment kb reads besides the settings' own variables, resolved once when a
/// repository is opened and passed down with it.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// `KB_DEBUG_STATS`: print what each memory scan did on stderr.
    pub debug_stats: bool,
    /// `KB_SUMMARIZER_TIMEOUT_MS`: the `kb consolidate --summarizer` time limit (for tests).
    pub summarizer_timeout: Option<std::time::Duration>,
    /// `KB_AUTHOR`: the author of the command line's changes (else git's `user.email`).
    pub kb_author: Option<String>,
    /// `USER`: the author when neither `KB_AUTHOR` nor git names one.
    pub user: Option<String>,
    /// Who makes the changes: a person, or an agent over MCP (set by the server).
    pub actor: crate::kinds::Actor,
    /// `KB_RECALL_RANKING=bm25`: rank recall with plain BM25 (the quality benchmark's baseline).
    pub recall_ranking: crate::kinds::Ranking,
    /// `KB_MCP_REVALIDATE_MS`: how often `kb mcp` revalidates what it holds (default 30 s).
    pub mcp_revalidate: Option<std::time::Duration>,
    /// `KB_MCP_WATCH=off`: `kb mcp` ignores file events and relies on revalidation alone (how the
    /// tests stand in for lost events).
    pub mcp_no_events: bool,
    /// Where the user's caches go: `XDG_CACHE_HOME`, else `~/.cache` (the shared sources' local
    /// copies live under `kb/shared/` there); `None` without either variable.
    pub cache_home: Option<PathBuf>,
    /// `KB_SHARED_TIMEOUT_MS`: how long one git process of `kb shared` may run (default 120 s;
    /// for the tests).
    pub shared_timeout: Option<std::time::Duration>,
}

impl Environment {
    /// Reads the variables from the process environment.
    pub fn from_process() -> Environment {
        Environment {
            debug_stats: env("KB_DEBUG_STATS").is_some(),
            summarizer_timeout: env("KB_SUMMARIZER_TIMEOUT_MS")
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(std::time::Duration::from_millis),
            kb_author: env("KB_AUTHOR"),
            user: env("USER"),
            actor: crate::kinds::Actor::Person,
            recall_ranking: crate::kinds::Ranking::from_env(env("KB_RECALL_RANKING").as_deref()),
            mcp_revalidate: env("KB_MCP_REVALIDATE_MS")
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(std::time::Duration::from_millis),
            mcp_no_events: env("KB_MCP_WATCH").is_some_and(|v| v.trim() == "off"),
            cache_home: env("XDG_CACHE_HOME")
                .filter(|v| Path::new(v).is_absolute())
                .map(PathBuf::from)
                .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".cache"))),
            shared_timeout: env("KB_SHARED_TIMEOUT_MS")
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(std::time::Duration::from_millis),
        }
    }
}

pub use crate::paths::env;

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(dir: &Path) -> Layout {
        Layout { root: dir.join("repo"), config: Some(dir.join("cfg")) }
    }

    #[test]
    fn shared_sources_are_project_settings_with_unique_names_and_safe_urls() {
        let dir = tempfile::tempdir().unwrap();
        let l = layout(dir.path());
        std::fs::create_dir_all(l.co_cli()).unwrap();
        std::fs::create_dir_all(l.config.as_ref().unwrap()).unwrap();
        let none = |_: &str| None;
        std::fs::write(
            l.project_settings(),
            r#"{"shared": [{"name": "org", "url": "https://x/k.git", "ref": "main"}, {"name": "team", "url": "../team"}], "shared_ttl_hours": 48}"#,
        )
        .unwrap();
        let s = Settings::load(&l, &none).unwrap();
        assert_eq!(s.shared.value.len(), 2);
        assert_eq!(s.shared.value[0].reference.as_deref(), Some("main"));
        assert_eq!(s.shared_ttl_hours.value, 48);
        for bad in [
            r#"{"shared": [{"name": "org", "url": "ext::sh -c x"}]}"#,
            r#"{"shared": [{"name": "org", "url": "a"}, {"name": "org", "url": "b"}]}"#,
            r#"{"shared": [{"name": "md", "url": "a"}]}"#,
            r#"{"shared": [{"name": "org", "url": "a", "branch": "x"}]}"#,
            r#"{"shared_ttl_hours": 0}"#,
        ] {
            std::fs::write(l.project_settings(), bad).unwrap();
            let e = Settings::load(&l, &none).unwrap_err();
            assert!(e.message.contains("settings.json"), "{bad}: {}", e.message);
        }
        std::fs::write(l.project_settings(), "{}").unwrap();
        std::fs::write(l.global_settings().unwrap(), r#"{"shared": [{"name": "org", "url": "a"}]}"#).unwrap();
        let (s, errors) = Settings::load_all(&l, &none);
        assert!(s.shared.value.is_empty());
        assert!(errors[0].message.contains("shared is a project setting"), "{errors:?}");
    }

    #[test]
    fn precedence_and_sources() {
        let dir = tempfile::tempdir().unwrap();
        let l = layout(dir.path());
        std::fs::create_dir_all(l.co_cli()).unwrap();
        std::fs::create_dir_all(l.config.as_ref().unwrap()).unwrap();
        std::fs::write(
            l.global_settings().unwrap(),
            r#"{"memory_max_count": 50, "memory_decay_strategy": "cut", "llm": "x"}"#,
        )
        .unwrap();
        std::fs::write(l.project_settings(), r#"{"memory_max_count": 60}"#).unwrap();
        let env = |k: &str| match k {
            "CO_CLI_MEMORY_DEDUP_THRESHOLD" => Some("90".to_string()),
            "CO_CLI_MEMORY_MAX_COUNT" => Some(String::new()),
            _ => None,
        };
        let s = Settings::load(&l, &env).unwrap();
        assert_eq!(s.memory_max_count.value, 60);
        assert_eq!(s.memory_max_count.source, Source::File(l.project_settings()));
        assert_eq!(s.memory_decay_strategy.value, DecayStrategy::Cut);
        assert_eq!(s.memory_dedup_threshold.value, 90.0);
        assert_eq!(s.memory_dedup_threshold.source, Source::Env("CO_CLI_MEMORY_DEDUP_THRESHOLD"));
        assert_eq!(s.memory_dedup_window_days.source, Source::Default);
    }

    #[test]
    fn agent_writes_and_summarizer() {
        let dir = tempfile::tempdir().unwrap();
        let l = layout(dir.path());
        let s = Settings::load(&l, &|_| None).unwrap();
        assert_eq!((s.agent_writes.value, s.summarizer.value.as_deref()), (AgentWrites::Allow, None));
        let env = |k: &str| match k {
            "KB_AGENT_WRITES" => Some("propose".to_string()),
            "KB_SUMMARIZER" => Some("llm -s 'digest'".to_string()),
            _ => None,
        };
        let s = Settings::load(&l, &env).unwrap();
        assert_eq!(s.agent_writes.value, AgentWrites::Propose);
        assert_eq!(s.agent_writes.source, Source::Env("KB_AGENT_WRITES"));
        assert_eq!(s.summarizer.value.as_deref(), Some("llm -s 'digest'"));
        let e = Settings::load(&l, &|k: &str| (k == "KB_AGENT_WRITES").then(|| "ask".to_string())).unwrap_err();
        assert_eq!(e.message, "invalid KB_AGENT_WRITES='ask': must be \"allow\", \"propose\" or \"deny\"");
        std::fs::create_dir_all(l.co_cli()).unwrap();
        std::fs::write(l.project_settings(), r#"{"summarizer": 3, "agent_writes": "deny"}"#).unwrap();
        let e = Settings::load(&l, &|_| None).unwrap_err();
        assert!(e.message.contains("settings.json") && e.message.contains("invalid summarizer 3"), "{e}");
        std::fs::write(l.project_settings(), r#"{"summarizer": null, "agent_writes": "deny"}"#).unwrap();
        let s = Settings::load(&l, &|_| None).unwrap();
        assert_eq!((s.agent_writes.value, s.summarizer.value.as_deref()), (AgentWrites::Deny, None));
        assert!(s.entries().iter().any(|(k, v, _)| *k == "agent_writes" && v == "deny"));
    }

    #[test]
    fn invalid_values_name_their_origin() {
        let dir = tempfile::tempdir().unwrap();
        let l = layout(dir.path());
        let env = |k: &str| (k == "CO_CLI_MEMORY_MAX_COUNT").then(|| "5".to_string());
        let e = Settings::load(&l, &env).unwrap_err();
        assert!(e.message.contains("CO_CLI_MEMORY_MAX_COUNT") && e.message.contains("≥ 10"), "{e}");
        std::fs::create_dir_all(l.co_cli()).unwrap();
        std::fs::write(l.project_settings(), r#"{"memory_decay_percentage": 1.5}"#).unwrap();
        let e = Settings::load(&l, &|_| None).unwrap_err();
        assert!(e.message.contains("settings.json") && e.message.contains("memory_decay_percentage"), "{e}");
        std::fs::write(l.project_settings(), "{ nope").unwrap();
        let e = Settings::load(&l, &|_| None).unwrap_err();
        assert_eq!(e.line, Some(1));
        assert!(e.message.contains("invalid JSON"), "{e}");
    }
}
