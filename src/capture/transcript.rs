//! The agents' session transcripts, read into one shape (docs/capture.md, Transcripts): the
//! user's requests, the files the agent changed with its edit tools, the commands it ran with
//! their outcome, the errors it hit, when, on which branch, in which folder.
//!
//! One tolerant reader per agent (`claude`, `codex`, `gemini`, `copilot`, `cursor` below): a line
//! that is not JSON, not UTF-8, or of a type the reader does not know is counted in
//! [`Transcript::unknown_lines`] and skipped, never fatal; a truncated last line is one such line.
//! Each line is parsed into small borrowed structs that skip what they do not need (a tool result
//! of several megabytes is scanned, not copied), and the file is streamed, so a 256 MiB
//! transcript costs one buffer of its longest line. Only a regular file is opened, without
//! blocking (a FIFO in its place is refused, not waited on), and one larger than
//! [`MAX_TRANSCRIPT`] is not read at all.

use crate::settings::Agent;
use chrono::{DateTime, Utc};
use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

mod claude;
mod codex;
mod copilot;
mod cursor;
mod gemini;

/// The largest transcript kb reads: a bigger one is not read at all.
pub const MAX_TRANSCRIPT: u64 = 256 << 20;
/// At most this many errors are kept per session.
pub const MAX_ERRORS: usize = 20;
/// Each error is cut to this many characters.
pub const MAX_ERROR_CHARS: usize = 200;

/// What a transcript says about its session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transcript {
    /// The user's own messages, in order: not tool results, not text a hook or the agent
    /// injected, not the wrappers of slash commands and their output, not meta lines.
    pub requests: Vec<String>,
    /// The paths the agent changed with its edit and write tools, in the order of their first
    /// change, each once; relative to the session's folder when inside it. A call whose result
    /// says it failed changed nothing and is left out.
    pub files: Vec<String>,
    /// The shell commands the agent ran, in order, with the outcome their result shows.
    pub commands: Vec<Ran>,
    /// The errors it hit (failed tool calls, failed commands' first error line, API errors), each
    /// at most [`MAX_ERROR_CHARS`] characters, at most [`MAX_ERRORS`] of them, each once.
    pub errors: Vec<String>,
    /// The earliest timestamp of the transcript.
    pub started: Option<DateTime<Utc>>,
    /// The latest timestamp of the transcript.
    pub ended: Option<DateTime<Utc>>,
    /// The git branch, when the transcript says (the last one it names).
    pub branch: Option<String>,
    /// The session's folder, when the transcript says.
    pub cwd: Option<String>,
    /// Lines that are not JSON or not UTF-8, or whose type or shape the reader does not know.
    pub unknown_lines: usize,
}

/// A shell command the agent ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    pub command: String,
    pub outcome: Outcome,
}

/// How a command ended, as its tool result shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// Failed, with the exit code when the result shows one.
    Failed(Option<i32>),
    /// No result, or one that does not say.
    Unknown,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Ok => f.write_str("ok"),
            Outcome::Failed(Some(code)) => write!(f, "failed (exit {code})"),
            Outcome::Failed(None) => f.write_str("failed"),
            Outcome::Unknown => f.write_str("unknown"),
        }
    }
}

impl Outcome {
    /// Returns the outcome written as [`Outcome`]'s `Display` writes it.
    pub fn parse(text: &str) -> Option<Outcome> {
        match text.trim() {
            "ok" => Some(Outcome::Ok),
            "failed" => Some(Outcome::Failed(None)),
            "unknown" => Some(Outcome::Unknown),
            other => {
                let code = other.strip_prefix("failed (exit ")?.strip_suffix(')')?;
                code.parse().ok().map(|c| Outcome::Failed(Some(c)))
            }
        }
    }
}

/// What reading a transcript gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    Read(Transcript),
    /// Why it was not read, in words for the hooks log: `missing`, `not a regular file (a
    /// FIFO)`, `larger than 256 MiB (2.0 GiB)`, `unreadable: ...`.
    NotRead(String),
}

/// Reads `agent`'s transcript at `path`. Never fails and never blocks: what it cannot read is
/// [`Read::NotRead`], with the reason.
pub fn read(agent: Agent, path: &Path) -> Read {
    let file = match open_regular(path) {
        Ok(f) => f,
        Err(why) => return Read::NotRead(why),
    };
    let reader = BufReader::with_capacity(256 << 10, file);
    let read = match agent {
        Agent::Claude => claude::read(reader),
        Agent::Codex => codex::read(reader),
        Agent::Gemini => gemini::read(reader, path.extension().is_some_and(|e| e == "json")),
        Agent::Copilot => copilot::read(reader),
        Agent::Cursor => cursor::read(reader),
        Agent::Windsurf | Agent::Kiro | Agent::Cline => {
            return Read::NotRead(format!("kb reads no transcript of {}", agent.as_str()));
        }
    };
    match read {
        Ok(t) => Read::Read(t),
        Err(e) => Read::NotRead(format!("unreadable: {e}")),
    }
}

/// Returns the agent's own transcript path for a session when the hook gave none: Copilot CLI's
/// `<home>/.copilot/session-state/<id>/events.jsonl`. `None` for the other agents (Cursor's
/// depends on the workspace: [`cursor_path`]) and for an id that is not a plain file name.
pub fn default_path(agent: Agent, home: &Path, session_id: &str) -> Option<PathBuf> {
    let plain = !session_id.is_empty() && session_id != "." && session_id != ".." && !session_id.contains(['/', '\\']);
    match agent {
        Agent::Copilot if plain => Some(home.join(".copilot/session-state").join(session_id).join("events.jsonl")),
        _ => None,
    }
}

/// Returns Cursor's transcript path for a session of the workspace `root`:
/// `<home>/.cursor/projects/<root with every character but ASCII letters and digits turned into
/// '-', the leading '/' dropped>/agent-transcripts/`, then `<id>/<id>.jsonl` (the IDE's layout)
/// when that file or folder exists, else `<id>.jsonl` (the CLI's).
pub fn cursor_path(home: &Path, root: &Path, session_id: &str) -> Option<PathBuf> {
    if session_id.is_empty() || session_id.contains(['/', '\\']) || session_id.starts_with('.') {
        return None;
    }
    let root = root.to_string_lossy();
    let project: String =
        root.trim_start_matches('/').chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let dir = home.join(".cursor/projects").join(project).join("agent-transcripts");
    let nested = dir.join(session_id);
    if nested.exists() {
        return Some(nested.join(format!("{session_id}.jsonl")));
    }
    Some(dir.join(format!("{session_id}.jsonl")))
}

/// Opens `path` for reading when it is a regular file of at most [`MAX_TRANSCRIPT`] bytes;
/// else returns why not. A symlink is followed (to a regular file only). The open never blocks:
/// `O_NONBLOCK` keeps a FIFO from waiting for a writer, and the check is made on what was opened.
fn open_regular(path: &Path) -> Result<std::fs::File, String> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(match std::fs::symlink_metadata(path) {
                Ok(_) => "missing (a symlink that leads nowhere)".to_string(),
                Err(_) => "missing".to_string(),
            });
        }
        Err(e) => return Err(format!("unreadable: {e}")),
    };
    let meta = file.metadata().map_err(|e| format!("unreadable: {e}"))?;
    if !meta.is_file() {
        return Err(format!("not a regular file ({})", kind_of(&meta)));
    }
    if meta.len() > MAX_TRANSCRIPT {
        return Err(format!("larger than {} ({})", size(MAX_TRANSCRIPT), size(meta.len())));
    }
    Ok(file)
}

/// Returns what a file that is not a regular one is, for a message: `a FIFO`, `a folder`...
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if meta.is_dir() { "a folder" } else { "not a file" }
}

/// Returns a size in binary units with one decimal: `256.0 MiB`, `2.0 GiB`.
fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} bytes") } else { format!("{value:.1} {}", UNITS[unit]) }
}

/// Calls `each` with every line of `reader` that is not blank, as text (a UTF-8 BOM and a `\r`
/// before the `\n` removed); `each` returns whether it knew the line. Returns how many lines were
/// unknown: not UTF-8, or not known to `each`.
pub(super) fn lines(mut reader: impl BufRead, mut each: impl FnMut(&str) -> bool) -> io::Result<usize> {
    let mut buf = Vec::with_capacity(64 << 10);
    let mut unknown = 0;
    let mut first = true;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            return Ok(unknown);
        }
        let mut line = buf.as_slice();
        if first {
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
            first = false;
        }
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match std::str::from_utf8(line) {
            Ok(text) if each(text) => {}
            _ => unknown += 1,
        }
    }
}

/// A JSON string borrowed from the line when it has no escapes.
pub(super) type Str<'a> = Cow<'a, str>;

/// Returns the text of a JSON string, or of an array of strings and `{"text":…}` parts joined
/// by new lines (the content shapes the agents write); `None` for anything else.
pub(super) fn text_of(raw: &RawValue) -> Option<String> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Part<'a> {
        Text(#[serde(borrow)] Str<'a>),
        Object {
            #[serde(borrow, default)]
            text: Option<Str<'a>>,
        },
    }
    let json = raw.get().trim_start();
    match json.as_bytes().first() {
        Some(b'"') => serde_json::from_str::<Str>(json).ok().map(Cow::into_owned),
        Some(b'[') => {
            let parts: Vec<Part> = serde_json::from_str(json).ok()?;
            let texts: Vec<Str> = parts
                .into_iter()
                .filter_map(|p| match p {
                    Part::Text(t) => Some(t),
                    Part::Object { text } => text,
                })
                .collect();
            Some(texts.join("\n"))
        }
        Some(b'{') => serde_json::from_str::<Part>(json).ok().and_then(|p| match p {
            Part::Text(t) => Some(t.into_owned()),
            Part::Object { text } => text.map(Cow::into_owned),
        }),
        _ => None,
    }
}

/// Returns the exit code a command's output text shows, in the forms the agents write: `Exit code
/// 1` (Claude Code), `Exit code: 1` (Codex), `Process exited with code 1` (Codex), `Exit Code: 1`
/// (Gemini CLI), `<exited with exit code 1>` (Copilot CLI). Only the first and last lines are
/// looked at: the command's own output in between may say anything.
pub(super) fn exit_code_in(text: &str) -> Option<i32> {
    let code = |line: &str| -> Option<i32> {
        let line = line.trim();
        let rest = ["Exit code: ", "Exit code ", "Exit Code: ", "Process exited with code ", "<exited with exit code "]
            .iter()
            .find_map(|p| line.strip_prefix(p))?;
        let digits: &str = rest.split(|c: char| !(c.is_ascii_digit() || c == '-')).next()?;
        digits.parse().ok()
    };
    text.lines().take(6).find_map(code).or_else(|| text.lines().rev().take(4).find_map(code))
}

/// Returns the first line of a failed tool's output worth showing: the first that starts with
/// `error`, else the first that mentions an error, else a failure, else the first with any text;
/// among its first 400 and last 40 lines, leaving out the agents' own framing lines (`Exit code
/// 1`, `Output:`, `Wall time: …`) and `<tool_use_error>` tags.
pub(super) fn error_line(text: &str) -> Option<&str> {
    let framing = |l: &str| {
        exit_code_in(l).is_some()
            || l == "Output:"
            || l.starts_with("Wall time:")
            || l.starts_with("Chunk ID:")
            || l.starts_with("Original token count:")
            || l.starts_with("Process running with session ID")
    };
    let mut lines: Vec<&str> = text.lines().take(400).collect();
    if lines.len() == 400 {
        let mut tail: Vec<&str> = text.lines().rev().take(40).collect();
        tail.reverse();
        lines.extend(tail);
    }
    let candidates: Vec<&str> = lines
        .into_iter()
        .map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("<tool_use_error>").unwrap_or(l);
            l.strip_suffix("</tool_use_error>").unwrap_or(l).trim()
        })
        .filter(|l| !l.is_empty() && !framing(l))
        .collect();
    let lower: Vec<String> = candidates.iter().map(|l| l.to_ascii_lowercase()).collect();
    let pick = |test: &dyn Fn(&str) -> bool| lower.iter().position(|l| test(l)).map(|i| candidates[i]);
    pick(&|l| l.starts_with("error"))
        .or_else(|| pick(&|l| l.contains("error")))
        .or_else(|| pick(&|l| ["failed", "panicked", "fatal"].iter().any(|w| l.contains(w))))
        .or_else(|| candidates.first().copied())
}

/// Returns `text` on one line (white space runs made one space), at most `max` characters: a
/// longer one is cut, `…` its last character.
pub fn one_line(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max.saturating_mul(4)));
    let mut n = 0;
    'words: for word in text.split_whitespace() {
        if n > 0 {
            out.push(' ');
            n += 1;
        }
        for c in word.chars() {
            if n >= max {
                n += 1;
                break 'words;
            }
            out.push(c);
            n += 1;
        }
    }
    if n <= max {
        return out;
    }
    let mut cut: String = out.chars().take(max.saturating_sub(1)).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

/// Whether a user message is text the agent or a hook put there rather than the user's own
/// words: one that opens with a tag and closes it (`<environment_context>…</environment_context>`,
/// `<command-name>/clear</command-name>`, `<local-command-stdout>…`), or opens with one of the
/// agents' fixed notes.
pub(super) fn injected(text: &str) -> bool {
    const NOTES: [&str; 6] = [
        "Caveat: The messages below were generated by the user while running local commands",
        "[Request interrupted by user",
        "This session is being continued from a previous conversation",
        "# AGENTS.md instructions",
        "<environment_context>",
        "<user_instructions>",
    ];
    let t = text.trim_start();
    if NOTES.iter().any(|n| t.starts_with(n)) {
        return true;
    }
    let Some(rest) = t.strip_prefix('<') else { return false };
    let name: &str = rest.split(['>', ' ']).next().unwrap_or("");
    !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && rest[name.len()..].starts_with(['>', ' '])
        && t.contains(&format!("</{name}>"))
}

/// A tool call waiting for its result.
#[derive(Debug, Clone)]
struct Call {
    name: String,
    /// Its index in the commands, for a shell call.
    command: Option<usize>,
    /// Its indexes in the edits, for an edit call.
    edits: Vec<usize>,
    /// Whether its result was recorded (Codex writes a command's result twice).
    done: bool,
}

/// Collects a transcript as a reader walks it: every reader feeds the same calls, so every agent
/// gets the same rules for requests, files, commands and errors.
#[derive(Debug, Default)]
pub(super) struct Builder {
    t: Transcript,
    /// Each file an edit call named, and whether that call failed.
    edits: Vec<(String, bool)>,
    pending: FxHashMap<String, Call>,
    /// Calls without an id (Cursor records none): their results cannot be matched.
    anonymous: usize,
}

impl Builder {
    /// Notes a timestamp of the transcript (an unparsable one is ignored).
    pub(super) fn at(&mut self, ts: &str) {
        let Ok(at) = DateTime::parse_from_rfc3339(ts.trim()) else { return };
        let at = at.with_timezone(&Utc);
        if self.t.started.is_none_or(|s| at < s) {
            self.t.started = Some(at);
        }
        if self.t.ended.is_none_or(|e| at > e) {
            self.t.ended = Some(at);
        }
    }

    /// Notes the session's folder (the first one named wins).
    pub(super) fn cwd(&mut self, cwd: &str) {
        if self.t.cwd.is_none() && !cwd.trim().is_empty() {
            self.t.cwd = Some(cwd.to_string());
        }
    }

    /// Notes the git branch (the last one named wins).
    pub(super) fn branch(&mut self, branch: &str) {
        let branch = branch.trim();
        if !branch.is_empty() && self.t.branch.as_deref() != Some(branch) {
            self.t.branch = Some(branch.to_string());
        }
    }

    /// Adds a request of the user, unless it is empty or [`injected`].
    pub(super) fn request(&mut self, text: &str) {
        let text = text.trim();
        if !text.is_empty() && !injected(text) {
            self.t.requests.push(text.to_string());
        }
    }

    /// Notes a tool call: `command` for a shell call, `files` for an edit call (none for the
    /// rest). `id` matches it with its result.
    pub(super) fn tool(&mut self, id: Option<&str>, name: &str, command: Option<String>, files: Vec<String>) {
        let command = command.filter(|c| !c.trim().is_empty()).map(|c| {
            self.t.commands.push(Ran { command: c.trim().to_string(), outcome: Outcome::Unknown });
            self.t.commands.len() - 1
        });
        let edits = files
            .into_iter()
            .filter(|f| !f.trim().is_empty())
            .map(|f| {
                self.edits.push((f, false));
                self.edits.len() - 1
            })
            .collect();
        match id {
            Some(id) if !id.is_empty() => {
                self.pending.insert(id.to_string(), Call { name: name.to_string(), command, edits, done: false });
            }
            _ => self.anonymous += 1,
        }
    }

    /// Returns whether the call `id` was a shell call.
    pub(super) fn is_command(&self, id: &str) -> bool {
        self.pending.get(id).is_some_and(|c| c.command.is_some())
    }

    /// Returns the name of the pending call `id`.
    pub(super) fn name_of(&self, id: &str) -> Option<&str> {
        self.pending.get(id).map(|c| c.name.as_str())
    }

    /// Records the result of the call `id`: a shell call gets `outcome`; any call that failed
    /// adds an error made of `detail` (its output or message), and an edit call that failed
    /// changed nothing. A result for no known call is ignored; a second result of a call only
    /// settles an outcome the first left unknown.
    pub(super) fn result(&mut self, id: &str, outcome: Outcome, detail: Option<&str>) {
        let Some(call) = self.pending.get_mut(id) else { return };
        if call.done {
            if let Some(i) = call.command
                && self.t.commands[i].outcome == Outcome::Unknown
            {
                self.t.commands[i].outcome = outcome;
            }
            return;
        }
        call.done = true;
        let call = call.clone();
        let failed = matches!(outcome, Outcome::Failed(_));
        if let Some(i) = call.command {
            self.t.commands[i].outcome = outcome;
        }
        if !failed {
            return;
        }
        for &e in &call.edits {
            self.edits[e].1 = true;
        }
        let line = detail.and_then(error_line);
        let what = match call.command {
            Some(i) => one_line(&self.t.commands[i].command, 60),
            None => call.name.clone(),
        };
        match (line, outcome) {
            (Some(line), _) => self.error(&format!("{what}: {line}")),
            (None, Outcome::Failed(Some(code))) => self.error(&format!("{what}: exit {code}")),
            (None, _) => self.error(&format!("{what}: failed")),
        }
    }

    /// Adds an error (cut to one line of [`MAX_ERROR_CHARS`]), unless it is already there or
    /// [`MAX_ERRORS`] are.
    pub(super) fn error(&mut self, text: &str) {
        let text = one_line(text, MAX_ERROR_CHARS);
        if !text.is_empty() && self.t.errors.len() < MAX_ERRORS && !self.t.errors.contains(&text) {
            self.t.errors.push(text);
        }
    }

    /// Counts a line the reader did not know.
    pub(super) fn unknown(&mut self) {
        self.t.unknown_lines += 1;
    }

    /// Returns the transcript, with `unknown` more unknown lines: the files of the edits that did
    /// not fail, relative to the session's folder.
    pub(super) fn finish(mut self, unknown: usize) -> Transcript {
        self.t.unknown_lines += unknown;
        let edits = std::mem::take(&mut self.edits);
        let files: Vec<String> = edits.into_iter().filter(|(_, failed)| !failed).map(|(f, _)| f).collect();
        self.t.files = files;
        let cwd = self.t.cwd.clone();
        self.t.relativize(cwd.as_deref());
        self.t
    }
}

impl Transcript {
    /// Makes the changed files relative to `dir` when they lie inside it (a leading `./` is
    /// dropped too), and drops the repeats that leaves.
    pub fn relativize(&mut self, dir: Option<&str>) {
        let mut seen = rustc_hash::FxHashSet::default();
        let files = std::mem::take(&mut self.files);
        for f in files {
            let rel = relative(&f, dir);
            if seen.insert(rel.clone()) {
                self.files.push(rel);
            }
        }
    }
}

/// Returns `path` relative to `dir` when it lies inside it; else as given, less a leading `./`.
pub fn relative(path: &str, dir: Option<&str>) -> String {
    let path = path.trim();
    if let Some(dir) = dir.filter(|d| !d.is_empty())
        && let Ok(rel) = Path::new(path).strip_prefix(Path::new(dir))
        && !rel.as_os_str().is_empty()
    {
        return rel.to_string_lossy().into_owned();
    }
    let mut p = path;
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    p.to_string()
}

/// Returns the shell command a tool's arguments hold: `command` (a string, or an argv whose
/// `bash -lc SCRIPT` form gives the script), else `cmd`.
pub(super) fn command_of(args: &RawValue) -> Option<String> {
    #[derive(Deserialize)]
    struct Args<'a> {
        #[serde(borrow, default)]
        command: Option<&'a RawValue>,
        #[serde(borrow, default)]
        cmd: Option<Str<'a>>,
    }
    let args: Args = serde_json::from_str(args.get()).ok()?;
    if let Some(raw) = args.command {
        if let Ok(s) = serde_json::from_str::<Str>(raw.get()) {
            return Some(s.into_owned());
        }
        if let Ok(argv) = serde_json::from_str::<Vec<Str>>(raw.get()) {
            return Some(argv_command(&argv));
        }
    }
    args.cmd.map(Cow::into_owned)
}

/// Returns the command an argv runs: the script of `bash -lc SCRIPT` (any shell, `-c` or `-lc`),
/// else the words joined by spaces.
pub(super) fn argv_command(argv: &[Str]) -> String {
    if let [shell, flag, script, ..] = argv
        && ["bash", "sh", "zsh", "dash", "fish", "pwsh", "powershell"]
            .contains(&shell.rsplit('/').next().unwrap_or(shell).trim_end_matches(".exe"))
        && ["-c", "-lc", "-ic", "-Command", "-NoProfile"].contains(&flag.as_ref())
    {
        return script.to_string();
    }
    argv.join(" ")
}

/// Returns the file an edit tool's arguments name: `file_path`, `path`, `notebook_path`,
/// `absolute_path` or `target_file`, whichever is there first.
pub(super) fn file_of(args: &RawValue) -> Option<String> {
    #[derive(Deserialize)]
    struct Args<'a> {
        #[serde(borrow, default)]
        file_path: Option<Str<'a>>,
        #[serde(borrow, default)]
        path: Option<Str<'a>>,
        #[serde(borrow, default)]
        notebook_path: Option<Str<'a>>,
        #[serde(borrow, default)]
        absolute_path: Option<Str<'a>>,
        #[serde(borrow, default)]
        target_file: Option<Str<'a>>,
    }
    let a: Args = serde_json::from_str(args.get()).ok()?;
    a.file_path.or(a.path).or(a.notebook_path).or(a.absolute_path).or(a.target_file).map(Cow::into_owned)
}

/// Returns the files a patch in the `*** Begin Patch` format (Codex's `apply_patch`) changes:
/// every `*** Add File:`, `*** Update File:`, `*** Delete File:` and `*** Move to:` path, in
/// order.
pub(super) fn patch_files(patch: &str) -> Vec<String> {
    const HEADS: [&str; 4] = ["*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "];
    patch
        .lines()
        .filter_map(|l| HEADS.iter().find_map(|h| l.strip_prefix(h)))
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

#[cfg(test)]
mod tests;
