//! Each agent's own files (docs/formats.md, Agents' files): which file holds the
//! always-loaded block for an agent, which file each scoped instruction becomes, their exact
//! text, the limits the agents cut at, and how kb knows a file it generated.
//!
//! Pure: this module builds texts and names paths; `ops::compile` decides what to write and
//! writes it.

use crate::instructions::Instruction;
use crate::settings::Agent;
use std::path::Path;

/// The start of the line that makes a generated file kb's own.
pub const MARKER_START: &str = "<!-- kb: generated from ";

/// What the context files are generated from.
pub const CONTEXT_SOURCE: &str = ".co-cli/knowledge";

/// The folders agents read path-scoped rules from, with the extension of their files, for the
/// agents that have them.
pub const RULE_DIRS: [(Agent, &str, &str); 5] = [
    (Agent::Claude, ".claude/rules", ".md"),
    (Agent::Cursor, ".cursor/rules", ".mdc"),
    (Agent::Windsurf, ".windsurf/rules", ".md"),
    (Agent::Kiro, ".kiro/steering", ".md"),
    (Agent::Cline, ".clinerules", ".md"),
];

/// What follows the source in a marker line, before the hash.
const HASH_KEY: &str = "; sha256:";

/// How many hex digits of the SHA-256 a marker line carries.
pub const HASH_DIGITS: usize = 16;

/// Returns the marker line of a file generated from `source` (a root-relative path) whose
/// content, without this line, hashes to `hash` ([`content_hash`]).
pub fn marker(source: &str, hash: &str) -> String {
    format!("{MARKER_START}{source}; edit {source}, not this file{HASH_KEY}{hash} -->")
}

/// Returns the first [`HASH_DIGITS`] hex digits of the SHA-256 of `content`: what a marker line
/// carries for the file's bytes without that line and its line ending.
pub fn content_hash(content: &[u8]) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(content);
    digest.iter().take(HASH_DIGITS / 2).map(|b| format!("{b:02x}")).collect()
}

/// Returns a generated file: `front` (its frontmatter with its closing `---` line, or nothing),
/// the marker line naming `source` with the hash of the rest of the file, and `rest`.
pub fn sealed(front: &str, source: &str, rest: &str) -> String {
    let hash = content_hash(format!("{front}{rest}").as_bytes());
    format!("{front}{}\n{rest}", marker(source, &hash))
}

/// The marker line of a generated file, as found in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp<'a> {
    /// The source it names.
    pub source: &'a str,
    /// The content hash it carries; `None`: a marker line an older kb wrote, without one.
    pub hash: Option<&'a str>,
    /// Where the line is in the file, its line ending included.
    pub line: std::ops::Range<usize>,
}

impl Stamp<'_> {
    /// Returns whether `text` (the file this stamp was found in) still hashes to the stamp's
    /// hash: what kb wrote. A file whose line endings became CRLF (git's `core.autocrlf` on a
    /// checkout) counts as what kb wrote too.
    pub fn intact(&self, text: &str) -> bool {
        let Some(hash) = self.hash else { return false };
        let rest = without(text, &self.line);
        content_hash(rest.as_bytes()) == hash
            || (rest.contains("\r\n") && content_hash(rest.replace("\r\n", "\n").as_bytes()) == hash)
    }
}

fn without(text: &str, line: &std::ops::Range<usize>) -> String {
    format!("{}{}", &text[..line.start], &text[line.end..])
}

/// Returns `text` without its marker line (and with LF line endings), for comparing what two
/// files say whatever their marker lines carry; `text` itself when it has none.
pub fn unstamped(text: &str) -> String {
    let rest = match stamp(text) {
        Some(s) => without(text, &s.line),
        None => text.to_string(),
    };
    rest.replace("\r\n", "\n")
}

/// Returns the marker line of a generated file (right after its frontmatter, or first when it
/// has none); `None`: not a file kb generated.
pub fn stamp(text: &str) -> Option<Stamp<'_>> {
    let start = match text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) {
        Some(rest) => {
            let mut off = text.len() - rest.len();
            let mut end = None;
            for line in rest.split_inclusive('\n') {
                off += line.len();
                if line.trim_end_matches(['\n', '\r']) == "---" {
                    end = Some(off);
                    break;
                }
            }
            end?
        }
        None => 0,
    };
    let after = &text[start..];
    let full = after.split_inclusive('\n').next().unwrap_or("");
    let line = full.trim_end_matches(['\n', '\r']);
    let rest = line.strip_prefix(MARKER_START)?.strip_suffix("-->")?;
    let source = rest.split(';').next()?;
    let hash = rest
        .rfind(HASH_KEY)
        .map(|at| rest[at + HASH_KEY.len()..].trim_end())
        .filter(|h| h.len() == HASH_DIGITS && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    Some(Stamp { source, hash, line: start..start + full.len() })
}

/// The limit an agent cuts one of its files at (docs/formats.md, Agents' files).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub max: usize,
    /// Counted in characters; else UTF-8 bytes.
    pub chars: bool,
    /// Fitted to (Codex, Windsurf); else a warning only (Copilot code review: the chat agent
    /// reads more).
    pub fitted: bool,
}

impl Limit {
    /// Returns the size of `text` in this limit's unit.
    pub fn measure(&self, text: &str) -> usize {
        if self.chars { text.chars().count() } else { text.len() }
    }

    /// Returns the unit's name: `bytes` or `characters`.
    pub fn unit(&self) -> &'static str {
        if self.chars { "characters" } else { "bytes" }
    }
}

/// Returns the limit of the agent's always-loaded file, if it has one: Codex reads at most
/// 32 KiB of the AGENTS.md chain; Windsurf 12,000 characters of a rule file; Copilot code review
/// the first 4,000 characters of copilot-instructions.md.
pub fn block_limit(agent: Agent) -> Option<Limit> {
    match agent {
        Agent::Codex => Some(Limit { max: 32 * 1024, chars: false, fitted: true }),
        Agent::Windsurf => Some(Limit { max: 12_000, chars: true, fitted: true }),
        Agent::Copilot => Some(Limit { max: 4_000, chars: true, fitted: false }),
        _ => None,
    }
}

/// Returns the limit of the agent's scoped rule files (Windsurf's per-file limit; a warning
/// only: an instruction's body is never cut).
pub fn rule_limit(agent: Agent) -> Option<Limit> {
    match agent {
        Agent::Windsurf => Some(Limit { max: 12_000, chars: true, fitted: false }),
        _ => None,
    }
}

/// Where an agent reads the always-loaded block: a managed block in a file people also write
/// (`true`), or a file kb generates whole.
pub fn block_file(agent: Agent) -> (&'static str, bool) {
    match agent {
        Agent::Codex => ("AGENTS.md", true),
        Agent::Claude => ("CLAUDE.md", true),
        Agent::Copilot => (".github/copilot-instructions.md", true),
        Agent::Gemini => ("GEMINI.md", true),
        Agent::Cursor => (".cursor/rules/kb-context.mdc", false),
        Agent::Windsurf => (".windsurf/rules/kb-context.md", false),
        Agent::Kiro => (".kiro/steering/kb-context.md", false),
        Agent::Cline => (".clinerules/kb-context.md", false),
    }
}

/// Returns the folder and extension of the agent's scoped rule files, if it has any.
pub fn rule_dir(agent: Agent) -> Option<(&'static str, &'static str)> {
    RULE_DIRS.iter().find(|(a, _, _)| *a == agent).map(|&(_, d, e)| (d, e))
}

/// Returns the text of an agent's generated context file holding `block` (an agent whose block
/// is a managed block has none).
pub fn context_file(agent: Agent, block: &str) -> Option<String> {
    let front = match agent {
        Agent::Cursor => {
            "---\ndescription: Project knowledge compiled by kb (decisions, context, memories)\nalwaysApply: true\n---\n"
        }
        Agent::Windsurf => "---\ntrigger: always_on\n---\n",
        Agent::Kiro => "---\ninclusion: always\n---\n",
        Agent::Cline => "",
        _ => return None,
    };
    Some(sealed(front, CONTEXT_SOURCE, &format!("\n{block}\n")))
}

/// Returns the name a scoped instruction's files carry: its path below `.github/instructions/`
/// without `.instructions.md`, each `/` a `-` (`api/routes.instructions.md` → `api-routes`).
pub fn rule_name(instructions_dir: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(instructions_dir).unwrap_or(path);
    let parts: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    let joined = parts.join("-");
    joined.strip_suffix(crate::instructions::SUFFIX).unwrap_or(&joined).to_string()
}

/// Returns the `description` of a scoped file: the instruction's, else its body's first
/// non-empty line without a heading's `#`s (at most 160 characters, then `…`).
pub fn description(i: &Instruction) -> String {
    if let Some(d) = i.description.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
        return one_line(d);
    }
    let first = i.body.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let line = one_line(first.trim_start_matches('#').trim());
    // A description is one line an agent shows or picks by: a long first line is cut.
    match line.char_indices().nth(DESCRIPTION_CHARS) {
        Some((at, _)) => format!("{}…", line[..at].trim_end()),
        None => line,
    }
}

/// The longest description taken from an instruction's first line, in characters.
const DESCRIPTION_CHARS: usize = 160;

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Returns whether the agent writes an instruction's globs on one unquoted `globs:` line
/// (Cursor, Windsurf), where a glob must be [`one_line_glob`].
pub fn globs_on_one_line(agent: Agent) -> bool {
    matches!(agent, Agent::Cursor | Agent::Windsurf)
}

/// Returns whether `glob` can go raw into a one-line YAML value: no line break (`\n`, `\r`,
/// U+0085, U+2028, U+2029), no other control character and no byte-order mark, any of which
/// would end the line or the frontmatter early (injecting keys, and hiding kb's marker line).
pub fn one_line_glob(glob: &str) -> bool {
    !glob.chars().any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}'))
}

/// Returns the text of the agent's rule file for instruction `i` (generated from `source`, its
/// root-relative path), or `None` for an agent without path-scoped rules, and for Cursor and
/// Windsurf when a glob cannot go on their one `globs:` line ([`one_line_glob`]).
pub fn rule_file(agent: Agent, i: &Instruction, source: &str) -> Option<String> {
    if globs_on_one_line(agent) && !i.apply_to.iter().all(|g| one_line_glob(g)) {
        return None;
    }
    let quote = crate::format::frontmatter::quote;
    let list = |key: &str| {
        let mut s = format!("{key}:\n");
        for g in &i.apply_to {
            s.push_str(&format!("  - {}\n", quote(g)));
        }
        s
    };
    // Cursor and Windsurf read `globs` as one string split at commas, so an alternation with a
    // comma in it is spelled out (`*.{ts,tsx}` → `*.ts,*.tsx`): the same paths match.
    let comma = || i.apply_to.iter().flat_map(|g| expand_braces(g)).collect::<Vec<_>>().join(",");
    let desc = quote(&description(i));
    let front = match agent {
        Agent::Claude => list("paths"),
        Agent::Cursor => format!("description: {desc}\nglobs: {}\nalwaysApply: false\n", comma()),
        Agent::Windsurf => format!("trigger: glob\ndescription: {desc}\nglobs: {}\n", comma()),
        Agent::Kiro => format!("inclusion: fileMatch\n{}", list("fileMatchPattern")),
        Agent::Cline => list("paths"),
        _ => return None,
    };
    Some(sealed(&format!("---\n{front}---\n"), source, &format!("\n{}\n", i.body)))
}

/// The most alternatives one glob is spelled out into.
const MAX_EXPANSIONS: usize = 256;

/// Returns `glob` with its `{a,b}` alternations spelled out into separate globs (nested ones
/// too), or the glob as it is when it has none, would give more than [`MAX_EXPANSIONS`], or
/// its braces do not balance.
pub fn expand_braces(glob: &str) -> Vec<String> {
    fn expand(g: &str, out: &mut Vec<String>) -> bool {
        let bytes = g.as_bytes();
        let mut open = None;
        let (mut depth, mut escaped, mut class) = (0usize, false, false);
        for (i, &b) in bytes.iter().enumerate() {
            if escaped {
                escaped = false;
                continue;
            }
            match b {
                b'\\' => escaped = true,
                b'[' if !class => class = true,
                b']' if class => class = false,
                b'{' if !class => {
                    if depth == 0 {
                        open = Some(i);
                    }
                    depth += 1;
                }
                b'}' if !class && depth > 0 => {
                    depth -= 1;
                    if depth == 0 {
                        let start = open.unwrap_or(0);
                        let (pre, inner, post) = (&g[..start], &g[start + 1..i], &g[i + 1..]);
                        for alt in crate::instructions::split_globs_raw(inner) {
                            if !expand(&format!("{pre}{alt}{post}"), out) || out.len() > MAX_EXPANSIONS {
                                return false;
                            }
                        }
                        return true;
                    }
                }
                _ => {}
            }
        }
        if depth != 0 {
            return false;
        }
        out.push(g.to_string());
        true
    }
    let mut out = Vec::new();
    if !glob.contains('{') || !expand(glob, &mut out) || out.len() > MAX_EXPANSIONS {
        return vec![glob.to_string()];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn braces_spell_out() {
        assert_eq!(expand_braces("src/**/*.{ts,tsx}"), ["src/**/*.ts", "src/**/*.tsx"]);
        assert_eq!(expand_braces("{a,b}/{c,d}"), ["a/c", "a/d", "b/c", "b/d"]);
        assert_eq!(expand_braces("{a,{b,c}}x"), ["ax", "bx", "cx"]);
        assert_eq!(expand_braces("plain/**"), ["plain/**"]);
        assert_eq!(expand_braces("bad{a,b"), ["bad{a,b"]);
        assert_eq!(expand_braces("[{]x"), ["[{]x"]);
    }

    #[test]
    fn ownership_line() {
        fn source(t: &str) -> Option<&str> {
            stamp(t).map(|s| s.source)
        }
        let text = context_file(Agent::Cursor, "## x").unwrap();
        assert_eq!(source(&text), Some(CONTEXT_SOURCE));
        assert_eq!(source(&context_file(Agent::Cline, "## x").unwrap()), Some(CONTEXT_SOURCE));
        assert_eq!(source("---\nglobs: x\n---\n# Mine\n"), None);
        assert_eq!(source("---\nunclosed\n<!-- kb: generated from x; edit x, not this file -->\n"), None);
        assert_eq!(source("# Mine\n<!-- kb: generated from x; edit x, not this file -->\n"), None);
    }

    #[test]
    fn the_marker_line_hashes_the_rest_of_the_file() {
        let text = context_file(Agent::Cursor, "## x").unwrap();
        let s = stamp(&text).unwrap();
        assert!(s.intact(&text));
        let hash = s.hash.unwrap();
        assert_eq!(hash.len(), HASH_DIGITS);
        // The hash is of the file without the line and its line ending.
        let rest = format!("{}{}", &text[..s.line.start], &text[s.line.end..]);
        assert_eq!(content_hash(rest.as_bytes()), hash);
        assert!(text[s.line.clone()].ends_with(&format!("; sha256:{hash} -->\n")));
        // An edit anywhere, frontmatter included, breaks it; CRLF line endings do not.
        let edited = text.replace("## x", "## y");
        assert!(!stamp(&edited).unwrap().intact(&edited));
        let front = text.replace("alwaysApply: true", "alwaysApply: false");
        assert!(!stamp(&front).unwrap().intact(&front));
        let crlf = text.replace('\n', "\r\n");
        assert!(stamp(&crlf).unwrap().intact(&crlf));
        // An older kb's line has no hash: never intact, and compared by what the rest says.
        let old = "<!-- kb: generated from x; edit x, not this file -->\n\nbody\n";
        let s = stamp(old).unwrap();
        assert_eq!((s.source, s.hash), ("x", None));
        assert!(!s.intact(old));
        assert_eq!(unstamped(old), "\nbody\n");
        assert_eq!(unstamped(&sealed("", "x", "\nbody\n")), "\nbody\n");
        // A hash that is not 16 lower-case hex digits is no hash.
        assert_eq!(stamp("<!-- kb: generated from x; edit x, not this file; sha256:XYZ -->\n").unwrap().hash, None);
    }

    #[test]
    fn a_glob_with_a_line_break_cannot_go_into_one_line() {
        assert!(one_line_glob("src/**/*.ts"));
        assert!(one_line_glob("docs/ü/*.md"));
        for bad in ["a\nalwaysApply: true", "a\rb", "a\u{2028}b", "a\u{85}b", "a\tb", "a\u{feff}"] {
            assert!(!one_line_glob(bad), "{bad:?}");
        }
    }
}
