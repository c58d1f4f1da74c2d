//! The agents' hook files: which file each agent reads its hooks from, in which shape, and which of
//! its events run which `kb hook` verb (docs/hooks.md). `install` reads and edits those files;
//! `spool` and `state` are the local files the hook verbs keep under `.co-cli/state/`.

pub mod install;
pub mod spool;
pub mod state;

use crate::kinds::HookVerb;
use crate::settings::Agent;

/// Creates `<root>/.co-cli/state/hooks/` (the state folder gitignored, as every local state of
/// kb's) and returns it; refused when it would lead out of the root through a symlink.
pub fn state_dir(layout: &crate::paths::Layout) -> std::io::Result<std::path::PathBuf> {
    let state = layout.co_cli().join("state");
    crate::paths::check_inside(&layout.root, &state)?;
    crate::paths::ensure_ignored_dir(&state)?;
    let dir = spool::dir(layout);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// How an agent's hook file is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `{"hooks":{"<Event>":[{"matcher"?,"hooks":[{"type":"command","command","timeout"}]}]}}`,
    /// the timeout in seconds (Claude Code, Codex) or milliseconds (Gemini CLI).
    Nested { timeout_ms: bool },
    /// `{"version":1,"hooks":{"<event>":[{"type":"command","bash","timeoutSec"}]}}` (Copilot CLI).
    CopilotFlat,
    /// `{"version":1,"hooks":{"<event>":[{"command"}]}}` (Cursor).
    CursorFlat,
    /// One executable per event in a folder, named after the event (Cline).
    Scripts,
}

/// One agent's hooks: its file (a folder for [`Shape::Scripts`]), the shape, and each event kb
/// hooks with the verb it runs and the time limit kb asks for, in seconds.
#[derive(Debug)]
pub struct Spec {
    pub agent: Agent,
    pub path: &'static str,
    pub shape: Shape,
    pub events: &'static [(&'static str, HookVerb, u32)],
}

use HookVerb::{PreCompact, Prompt, SessionEnd, SessionStart};

/// Claude Code's events, which Codex shares.
const CLAUDE_EVENTS: &[(&str, HookVerb, u32)] = &[
    ("SessionStart", SessionStart, 10),
    ("UserPromptSubmit", Prompt, 5),
    ("PreCompact", PreCompact, 5),
    ("SessionEnd", SessionEnd, 3),
];

/// The agents kb hooks, in documentation order. The limits are generous for what kb does in
/// tens of milliseconds, but `session-end` stays within Codex's 3 s maximum (it warns on more).
pub const SPECS: [Spec; 6] = [
    Spec {
        agent: Agent::Claude,
        path: ".claude/settings.json",
        shape: Shape::Nested { timeout_ms: false },
        events: CLAUDE_EVENTS,
    },
    Spec {
        agent: Agent::Codex,
        path: ".codex/hooks.json",
        shape: Shape::Nested { timeout_ms: false },
        events: CLAUDE_EVENTS,
    },
    Spec {
        agent: Agent::Copilot,
        path: ".github/hooks/kb.json",
        shape: Shape::CopilotFlat,
        events: &[
            ("sessionStart", SessionStart, 10),
            ("userPromptSubmitted", Prompt, 5),
            ("preCompact", PreCompact, 5),
            ("sessionEnd", SessionEnd, 3),
        ],
    },
    Spec {
        agent: Agent::Cursor,
        path: ".cursor/hooks.json",
        shape: Shape::CursorFlat,
        // Cursor's `beforeSubmitPrompt` cannot add context: there is no `prompt` hook for it.
        events: &[("sessionStart", SessionStart, 10), ("preCompact", PreCompact, 5), ("sessionEnd", SessionEnd, 3)],
    },
    Spec {
        agent: Agent::Gemini,
        path: ".gemini/settings.json",
        shape: Shape::Nested { timeout_ms: true },
        events: &[
            ("SessionStart", SessionStart, 10),
            ("BeforeAgent", Prompt, 5),
            ("PreCompress", PreCompact, 5),
            ("SessionEnd", SessionEnd, 3),
        ],
    },
    Spec {
        agent: Agent::Cline,
        path: ".clinerules/hooks",
        shape: Shape::Scripts,
        events: &[
            ("TaskStart", SessionStart, 10),
            ("UserPromptSubmit", Prompt, 5),
            ("PreCompact", PreCompact, 5),
            ("TaskComplete", SessionEnd, 3),
        ],
    },
];

/// Returns the hooks of `agent`, or `None` for an agent without hooks (Windsurf, Kiro).
pub fn spec(agent: Agent) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.agent == agent)
}

/// Returns the command kb writes for `verb` of `agent`: `KB hook VERB --agent AGENT`, `kb` being
/// `kb` or the absolute path `kb hooks install --kb` was given (quoted for `sh` when it needs it).
pub fn command(kb: &str, verb: HookVerb, agent: Agent) -> String {
    format!("{} hook {} --agent {}", shell_word(kb), verb.as_str(), agent.as_str())
}

/// Returns what a hook command runs, when it is kb's: `[PATH/]kb hook VERB --agent AGENT`, the
/// path to kb optional and possibly quoted, trailing spaces ignored. Anything else is not kb's.
pub fn parse_command(command: &str) -> Option<(HookVerb, Agent)> {
    let words = split_words(command.trim())?;
    let [kb, hook, verb, flag, agent] = words.as_slice() else { return None };
    let program = kb.rsplit('/').next().unwrap_or(kb);
    if program != "kb" || hook != "hook" || flag != "--agent" {
        return None;
    }
    Some((HookVerb::parse(verb)?, Agent::parse(agent).filter(|a| a.as_str() == agent)?))
}

/// Returns the program a kb hook command runs (`kb`, or the path to kb as written, unquoted);
/// `None` when the command is not kb's ([`parse_command`]).
pub fn program(command: &str) -> Option<String> {
    parse_command(command)?;
    split_words(command.trim())?.into_iter().next()
}

/// Quotes `word` for `sh` when it holds anything but safe characters.
fn shell_word(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+:,@%=".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Splits a command into words the way `sh` would for the simple forms kb writes: spaces between
/// words, `'…'` and `"…"` quoting, `'\''` inside single quotes. `None` for an unclosed quote.
fn split_words(s: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => word.push(chars.next()?),
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.push(chars.next()?);
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kb_commands_are_recognised_with_or_without_a_path() {
        for kb in ["kb", "/usr/local/bin/kb", "/home/a b/bin/kb"] {
            let cmd = command(kb, HookVerb::SessionEnd, Agent::Codex);
            assert_eq!(parse_command(&cmd), Some((HookVerb::SessionEnd, Agent::Codex)), "{cmd}");
        }
        assert_eq!(
            command("/home/a b/kb", HookVerb::Prompt, Agent::Claude),
            "'/home/a b/kb' hook prompt --agent claude"
        );
        assert_eq!(parse_command("kb hook prompt --agent claude  "), Some((HookVerb::Prompt, Agent::Claude)));
        assert_eq!(program("'/home/a b/kb' hook prompt --agent claude").as_deref(), Some("/home/a b/kb"));
        assert_eq!(program("kb hook prompt --agent claude").as_deref(), Some("kb"));
        assert_eq!(program("kb hook nope --agent claude"), None);
        for other in [
            "kb hook prompt",
            "kbx hook prompt --agent claude",
            "kb hook nope --agent claude",
            "kb hook prompt --agent Claude",
            "echo kb hook prompt --agent claude",
            "kb hook prompt --agent claude && rm -rf /",
            "'kb",
        ] {
            assert_eq!(parse_command(other), None, "{other}");
        }
    }

    #[test]
    fn every_hooked_agent_has_a_session_start_and_end() {
        for s in &SPECS {
            assert!(s.events.iter().any(|e| e.1 == SessionStart) && s.events.iter().any(|e| e.1 == SessionEnd));
            assert!(s.events.iter().all(|e| e.2 <= 10 && (e.1 != SessionEnd || e.2 <= 3)));
        }
        assert!(spec(Agent::Windsurf).is_none() && spec(Agent::Kiro).is_none());
    }
}
