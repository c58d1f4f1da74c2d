//! The vocabulary every floor shares: the kinds of knowledge and the sets of them a command
//! covers. The command line (`clap::ValueEnum`) and the MCP schemas take these types as they are,
//! so a value is named in one place.

/// A kind of knowledge recall searches (`--store`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Source {
    /// Markdown memories in .co-cli/knowledge/memories/
    #[value(alias = "markdown")]
    Md,
    /// Copilot-style records in .github/copilot-memories.jsonl
    Copilot,
    /// Active and proposed decisions in .co-cli/knowledge/decisions/
    Decision,
    /// The open session and the ended ones
    Session,
}

impl Source {
    /// Returns the name of the source: the `--store` value and the `store` of a result.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Md => "md",
            Source::Copilot => "copilot",
            Source::Decision => "decision",
            Source::Session => "session",
        }
    }

    /// Returns the source a name (`md`, `markdown`, `copilot`, `decision`, `session`) names.
    pub fn parse(name: &str) -> Option<Source> {
        match name.trim().to_ascii_lowercase().as_str() {
            "md" | "markdown" => Some(Source::Md),
            "copilot" => Some(Source::Copilot),
            "decision" | "decisions" => Some(Source::Decision),
            "session" | "sessions" => Some(Source::Session),
            _ => None,
        }
    }
}

/// The sources a recall covers: every one unless narrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sources([bool; 4]);

impl Default for Sources {
    fn default() -> Self {
        Sources([true; 4])
    }
}

impl Sources {
    /// Returns the sources named (every one when none is).
    pub fn of(named: &[Source]) -> Sources {
        if named.is_empty() {
            return Sources::default();
        }
        let mut on = [false; 4];
        for s in named {
            on[*s as usize] = true;
        }
        Sources(on)
    }

    pub fn has(self, s: Source) -> bool {
        self.0[s as usize]
    }

    /// Returns the sources in both `self` and `other`.
    pub fn and(self, other: Sources) -> Sources {
        Sources(std::array::from_fn(|i| self.0[i] && other.0[i]))
    }

    /// Returns whether every source is covered.
    pub fn all(self) -> bool {
        self.0.iter().all(|&b| b)
    }
}
