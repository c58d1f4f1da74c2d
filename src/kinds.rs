//! The vocabulary every floor shares: the kinds of knowledge and the sets of them a command
//! covers. The command line (`clap::ValueEnum`) and the MCP schemas take these types as they are,
//! so a value is named in one place. Also the one reading of an item id as people and agents
//! type it ([`ItemId`]).

/// What a hook asks kb to do (`kb hook VERB --agent AGENT`): each agent's events map onto these
/// (docs/hooks.md). `pre-compact`, `session-end` and `stop` only record; the other two answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HookVerb {
    SessionStart,
    Prompt,
    PreCompact,
    SessionEnd,
    Stop,
}

impl HookVerb {
    /// Every verb, in documentation order.
    pub const ALL: [HookVerb; 5] =
        [HookVerb::SessionStart, HookVerb::Prompt, HookVerb::PreCompact, HookVerb::SessionEnd, HookVerb::Stop];

    /// Returns the verb as the command line spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            HookVerb::SessionStart => "session-start",
            HookVerb::Prompt => "prompt",
            HookVerb::PreCompact => "pre-compact",
            HookVerb::SessionEnd => "session-end",
            HookVerb::Stop => "stop",
        }
    }

    /// Returns the verb spelled `name`, exactly.
    pub fn parse(name: &str) -> Option<HookVerb> {
        HookVerb::ALL.into_iter().find(|v| v.as_str() == name)
    }

    /// Whether the verb only appends to the spool (and must return within the agents' 1–3 s).
    pub fn records_only(self) -> bool {
        matches!(self, HookVerb::PreCompact | HookVerb::SessionEnd | HookVerb::Stop)
    }
}

/// A kind of knowledge: the `--store` values of every command, the `store` of a result and of an
/// audited item. Each command takes the subset it covers ([`Store::RECALL`], [`Store::AUDIT`],
/// [`Store::EXPORT`], [`Store::MEMORY`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Store {
    /// Markdown memories in .co-cli/knowledge/memories/
    #[value(alias = "markdown")]
    Md,
    /// Copilot-style records in .github/copilot-memories.jsonl
    Copilot,
    /// Active and proposed decisions in .co-cli/knowledge/decisions/
    Decision,
    /// Sessions: the open one (recall also searches the ended ones)
    Session,
    /// The project context file (.co-cli/knowledge/context.md)
    Context,
    /// Scoped instruction files (.github/instructions/)
    Instructions,
}

impl Store {
    /// What `kb recall --store` and MCP `recall_memory` search.
    pub const RECALL: &'static [Store] = &[Store::Md, Store::Copilot, Store::Decision, Store::Session];
    /// What `kb audit --store` narrows to.
    pub const AUDIT: &'static [Store] =
        &[Store::Md, Store::Copilot, Store::Decision, Store::Session, Store::Context, Store::Instructions];
    /// The two memory stores: what `kb save`, `list`, `show` and `forget` take, and what the
    /// access log records.
    pub const MEMORY: &'static [Store] = &[Store::Md, Store::Copilot];
    /// What a shared source gives recall and audit: its memories, records and decisions.
    pub const SHARED: &'static [Store] = &[Store::Md, Store::Copilot, Store::Decision];
    /// Where `kb export --to` copies the markdown memories.
    pub const EXPORT: &'static [Store] = &[Store::Copilot];

    /// Returns the store's name: the `--store` value and the `store` of a result.
    pub fn as_str(self) -> &'static str {
        match self {
            Store::Md => "md",
            Store::Copilot => "copilot",
            Store::Decision => "decision",
            Store::Session => "session",
            Store::Context => "context",
            Store::Instructions => "instructions",
        }
    }

    /// Returns the store of `among` a name (`md`, `markdown`, `copilot`, `decision`, `session`,
    /// plurals too) names, as agents write them.
    pub fn parse(name: &str, among: &[Store]) -> Option<Store> {
        let store = match name.trim().to_ascii_lowercase().as_str() {
            "md" | "markdown" => Store::Md,
            "copilot" => Store::Copilot,
            "decision" | "decisions" => Store::Decision,
            "session" | "sessions" => Store::Session,
            "context" => Store::Context,
            "instructions" | "instruction" => Store::Instructions,
            _ => return None,
        };
        among.contains(&store).then_some(store)
    }

    /// Returns the command-line parser of a `--store` that takes only the stores of `among`
    /// (their names, aliases and help as [`Store`] has them).
    pub fn among(among: &'static [Store]) -> impl clap::builder::TypedValueParser<Value = Store> {
        use clap::ValueEnum;
        use clap::builder::TypedValueParser;
        let values = among.iter().filter_map(Store::to_possible_value);
        // The parser yields a value's own name (not an alias), so it is always one of `among`.
        clap::builder::PossibleValuesParser::new(values)
            .map(move |name| among.iter().copied().find(|s| s.as_str() == name).unwrap_or(among[0]))
    }
}

/// The sources a recall covers: every one unless narrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sources([bool; 6]);

impl Default for Sources {
    fn default() -> Self {
        Sources([true; 6])
    }
}

impl Sources {
    /// Returns the sources named (every one when none is).
    pub fn of(named: &[Store]) -> Sources {
        if named.is_empty() {
            return Sources::default();
        }
        let mut on = [false; 6];
        for s in named {
            on[*s as usize] = true;
        }
        Sources(on)
    }

    /// Returns the one store `s`.
    pub fn only(s: Store) -> Sources {
        Sources::of(&[s])
    }

    /// Returns the memory stores `store` names, both when it names none (a `--store` of `kb list`,
    /// `show` and `forget`).
    pub fn memory(store: Option<Store>) -> Sources {
        Sources::of(store.as_slice()).and(Sources::of(Store::MEMORY))
    }

    pub fn has(self, s: Store) -> bool {
        self.0[s as usize]
    }

    /// Returns the sources in both `self` and `other`.
    pub fn and(self, other: Sources) -> Sources {
        Sources(std::array::from_fn(|i| self.0[i] && other.0[i]))
    }
}

/// A `--store` value of recall: a kind of knowledge, `shared` (every shared source), or one
/// shared source by its name (docs/shared.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Narrow {
    Kind(Store),
    Shared,
    Source(String),
}

impl Narrow {
    /// Reads one `--store` value of recall: a store word of [`Store::RECALL`], `shared`, or a name
    /// a shared source can have (whether one has it is known only once the settings are read).
    pub fn parse(value: &str) -> Result<Narrow, String> {
        if let Some(store) = Store::parse(value, Store::RECALL) {
            return Ok(Narrow::Kind(store));
        }
        if value == "shared" {
            return Ok(Narrow::Shared);
        }
        crate::settings::SharedSpec::check_name(value).map(|()| Narrow::Source(value.to_string())).map_err(|_| {
            format!("{value:?} is not md, copilot, decision, session, shared or the name of a shared source")
        })
    }

    /// Splits `--store` values into the kinds of knowledge and the repositories they name.
    pub fn split(values: &[Narrow]) -> (Sources, Origins) {
        let kinds: Vec<Store> = values
            .iter()
            .filter_map(|n| match n {
                Narrow::Kind(s) => Some(*s),
                _ => None,
            })
            .collect();
        let names: Vec<String> = values
            .iter()
            .filter_map(|n| match n {
                Narrow::Source(name) => Some(name.clone()),
                _ => None,
            })
            .collect();
        let only_shared = match values.contains(&Narrow::Shared) {
            true => Some(Vec::new()),
            false => (!names.is_empty()).then_some(names),
        };
        let origins = Origins { only_shared };
        (Sources::of(&kinds), origins)
    }
}

/// The repositories a recall reads: this one and every shared source (the default), or only
/// shared sources (`--store shared`: all of them; `--store NAME`: the ones named).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origins {
    /// `None`: this repository and every source; `Some(names)`: only the sources named (every one
    /// when empty).
    pub only_shared: Option<Vec<String>>,
}

impl Origins {
    /// Whether this repository's own knowledge is read.
    pub fn project(&self) -> bool {
        self.only_shared.is_none()
    }

    /// Whether the shared source `name` is read.
    pub fn source(&self, name: &str) -> bool {
        self.only_shared.as_ref().is_none_or(|names| names.is_empty() || names.iter().any(|n| n == name))
    }

    /// The source names asked for that `known` lacks.
    pub fn unknown<'a>(&'a self, known: &[&str]) -> Vec<&'a str> {
        self.only_shared.iter().flatten().map(String::as_str).filter(|n| !known.contains(n)).collect()
    }
}

/// What a memory is, its layer in the compiled context: the frontmatter `type`.
/// A memory without one is a [`MemoryType::Learning`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, clap::ValueEnum)]
pub enum MemoryType {
    /// Always loaded for the agents that see it; saved protected, never decayed
    #[value(name = "core_context")]
    CoreContext,
    /// Something learned (the default when a memory has no type)
    #[default]
    Learning,
    /// A recurring way of working
    Pattern,
    /// News about the project's state
    Update,
}

impl MemoryType {
    pub const ALL: [MemoryType; 4] =
        [MemoryType::CoreContext, MemoryType::Learning, MemoryType::Pattern, MemoryType::Update];

    /// Returns the value as written in a file and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryType::CoreContext => "core_context",
            MemoryType::Learning => "learning",
            MemoryType::Pattern => "pattern",
            MemoryType::Update => "update",
        }
    }

    /// Parses a written value (exact, case-sensitive); the error names the value and the valid ones.
    pub fn parse(text: &str) -> Result<MemoryType, String> {
        MemoryType::ALL.into_iter().find(|t| t.as_str() == text).ok_or_else(|| {
            format!("unknown type '{}': expected core_context, learning, pattern or update", text.escape_debug())
        })
    }
}

/// How much a memory matters: the frontmatter `importance`. A memory without one is
/// [`Importance::Medium`]. Ordered: `Low < Medium < High`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Importance {
    Low,
    #[default]
    Medium,
    High,
}

impl Importance {
    pub const ALL: [Importance; 3] = [Importance::High, Importance::Medium, Importance::Low];

    /// Returns the value as written in a file and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Importance::Low => "low",
            Importance::Medium => "medium",
            Importance::High => "high",
        }
    }

    /// Parses a written value (exact, case-sensitive); the error names the value and the valid ones.
    pub fn parse(text: &str) -> Result<Importance, String> {
        Importance::ALL
            .into_iter()
            .find(|i| i.as_str() == text)
            .ok_or_else(|| format!("unknown importance '{}': expected high, medium or low", text.escape_debug()))
    }
}

/// The command line lists the importances highest first (`--importance high|medium|low`).
impl clap::ValueEnum for Importance {
    fn value_variants<'a>() -> &'a [Self] {
        &Importance::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let value = clap::builder::PossibleValue::new(self.as_str());
        Some(match self {
            Importance::High => value.help("Loaded into the context's Learnings (with type learning or pattern)"),
            Importance::Medium => value.help("The default when a memory has none"),
            Importance::Low => value,
        })
    }
}

/// What a decision is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema), schemars(rename_all = "lowercase", inline))]
pub enum DecisionKind {
    Architectural,
    Scope,
    Process,
    Technical,
}

impl DecisionKind {
    pub const ALL: [DecisionKind; 4] =
        [DecisionKind::Architectural, DecisionKind::Scope, DecisionKind::Process, DecisionKind::Technical];

    pub fn as_str(self) -> &'static str {
        match self {
            DecisionKind::Architectural => "architectural",
            DecisionKind::Scope => "scope",
            DecisionKind::Process => "process",
            DecisionKind::Technical => "technical",
        }
    }

    pub fn parse(text: &str) -> Option<DecisionKind> {
        DecisionKind::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

/// Which way a vote goes; Copilot's spellings (`upvote`, `downvote`) are accepted too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema), schemars(rename_all = "lowercase", inline))]
pub enum Direction {
    #[value(alias = "upvote")]
    Up,
    #[value(alias = "downvote")]
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

/// Who wrote a board item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Src {
    Agent,
    User,
}

impl Src {
    pub fn as_str(self) -> &'static str {
        match self {
            Src::Agent => "agent",
            Src::User => "user",
        }
    }
}

/// The longest client name kept (a name is what a client says it is, not checked).
const MAX_CLIENT_NAME: usize = 100;

/// Who makes the changes of a command: a person on the command line, or an agent over MCP.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Actor {
    #[default]
    Person,
    /// An MCP client, by the name it sent at `initialize` (`None`: it sent none).
    Agent(Option<String>),
}

impl Actor {
    /// Returns an MCP client's actor from the name it sent: control characters dropped, cut to a
    /// reasonable length.
    pub fn agent(client_name: Option<&str>) -> Actor {
        let name: String =
            client_name.unwrap_or("").chars().filter(|c| !c.is_control()).take(MAX_CLIENT_NAME).collect();
        let name = name.trim();
        Actor::Agent((!name.is_empty()).then(|| name.to_string()))
    }

    /// Returns whether an agent makes the changes (a save over MCP).
    pub fn is_agent(&self) -> bool {
        matches!(self, Actor::Agent(_))
    }
}

/// How recall ranks: kb's ranking, or plain BM25 (lower-cased words, no stems, no splits, no
/// fallback, every field weighted 1), the baseline the quality benchmark compares with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ranking {
    #[default]
    Full,
    Plain,
}

impl Ranking {
    /// Reads `KB_RECALL_RANKING` (`bm25` is the plain baseline; anything else is kb's ranking).
    pub fn from_env(value: Option<&str>) -> Ranking {
        match value {
            Some("bm25") => Ranking::Plain,
            _ => Ranking::Full,
        }
    }
}

/// An item id as a person or an agent types it: an integer is a markdown memory (` 7 `, `+7`,
/// `007`), `decision:N` a decision, and anything else a Copilot record's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemId<'a> {
    Memory(u64),
    Decision(u64),
    Record(&'a str),
}

impl<'a> ItemId<'a> {
    /// Reads `raw`; a `decision:` id whose number does not parse is an error naming it.
    pub fn parse(raw: &'a str) -> Result<ItemId<'a>, crate::error::KbError> {
        let t = raw.trim();
        if let Some(n) = t.strip_prefix("decision:") {
            return number(n, "decision").map(ItemId::Decision);
        }
        Ok(number(t, "memory").map_or(ItemId::Record(t), ItemId::Memory))
    }
}

/// Reads the number of a `thing` (`memory`, `decision`) as people type it (` 7 `, `+7`, `007`);
/// the error names the value and what it should be.
pub fn number(raw: &str, thing: &str) -> Result<u64, crate::error::KbError> {
    let t = raw.trim();
    t.strip_prefix('+').unwrap_or(t).parse::<u64>().map_err(|_| {
        crate::error::KbError::rejected("id", format!("invalid {thing} id '{raw}': expected a non-negative integer"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_ids_as_typed() {
        assert_eq!(ItemId::parse(" 7 ").unwrap(), ItemId::Memory(7));
        assert_eq!(ItemId::parse("+007").unwrap(), ItemId::Memory(7));
        assert_eq!(ItemId::parse("decision:3").unwrap(), ItemId::Decision(3));
        assert_eq!(ItemId::parse(" decision: +3 ").unwrap(), ItemId::Decision(3));
        assert_eq!(ItemId::parse("mem-1a2b3c4d").unwrap(), ItemId::Record("mem-1a2b3c4d"));
        assert_eq!(ItemId::parse("-1").unwrap(), ItemId::Record("-1"));
        let e = ItemId::parse("decision:abc").unwrap_err().to_string();
        assert_eq!(e, "invalid decision id 'abc': expected a non-negative integer");
        assert_eq!(
            number("x", "memory").unwrap_err().to_string(),
            "invalid memory id 'x': expected a non-negative integer"
        );
    }

    #[test]
    fn importance_lists_highest_first_on_the_command_line() {
        use clap::ValueEnum;
        let names: Vec<String> = Importance::value_variants()
            .iter()
            .map(|i| i.to_possible_value().unwrap().get_name().to_string())
            .collect();
        assert_eq!(names, ["high", "medium", "low"]);
        assert_eq!(Importance::from_str("medium", false), Ok(Importance::Medium));
        assert!(Importance::High > Importance::Low);
    }
}
