//! Claude Code's transcript, `~/.claude/projects/<project>/<session id>.jsonl`: one JSON object a
//! line, `type` `user` | `assistant` | `system` | `summary` | `file-history-snapshot` | …, with
//! `timestamp`, `cwd`, `gitBranch`, `isMeta`, `isSidechain` and `message{role, content}`, whose
//! content is a string or blocks: `text`, `thinking`, `tool_use{id, name, input}`,
//! `tool_result{tool_use_id, content, is_error}`, `image`. A failed Bash call's result is
//! `is_error` with `Exit code N` as its first line. Cursor writes the same blocks (`cursor.rs`).

use super::{Builder, Outcome, Str, Transcript, command_of, exit_code_in, file_of, text_of};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::io::{self, BufRead};

/// The line types Claude Code writes that carry nothing kb reads.
const KNOWN: [&str; 14] = [
    "summary",
    "file-history-snapshot",
    "queue-operation",
    "progress",
    "attachment",
    "custom-title",
    "ai-title",
    "tag",
    "agent-name",
    "last-prompt",
    "pr-link",
    "worktree-state",
    "mode",
    "result",
];

/// The tools that change files, and the shell tools.
pub(super) const EDIT_TOOLS: [&str; 4] = ["Edit", "Write", "MultiEdit", "NotebookEdit"];
pub(super) const SHELL_TOOLS: [&str; 2] = ["Bash", "PowerShell"];

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    timestamp: Option<Str<'a>>,
    #[serde(borrow, default)]
    cwd: Option<Str<'a>>,
    #[serde(rename = "gitBranch", borrow, default)]
    git_branch: Option<Str<'a>>,
    #[serde(rename = "isMeta", default)]
    is_meta: Option<bool>,
    #[serde(rename = "isSidechain", default)]
    is_sidechain: Option<bool>,
    #[serde(rename = "isCompactSummary", default)]
    is_compact_summary: Option<bool>,
    #[serde(rename = "isVisibleInTranscriptOnly", default)]
    transcript_only: Option<bool>,
    #[serde(rename = "isApiErrorMessage", default)]
    api_error: Option<bool>,
    #[serde(borrow, default)]
    message: Option<Message<'a>>,
    /// A `system` line's text.
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    level: Option<Str<'a>>,
    #[serde(borrow, default)]
    subtype: Option<Str<'a>>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
pub(super) struct Message<'a> {
    #[serde(borrow, default)]
    pub(super) content: Option<&'a RawValue>,
}

/// A content block; only the parts kb reads are decoded, the rest stays raw or is skipped.
#[derive(Deserialize)]
pub(super) struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(super) kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) text: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) name: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) tool_use_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) content: Option<&'a RawValue>,
    #[serde(default)]
    pub(super) is_error: Option<bool>,
}

/// Returns the blocks of a message's content (a string is one text block); `None` when it is
/// neither.
pub(super) fn blocks(content: &RawValue) -> Option<Vec<Block<'_>>> {
    let json = content.get();
    match json.trim_start().as_bytes().first() {
        Some(b'"') => Some(vec![Block {
            kind: Some("text".into()),
            text: Some(content),
            id: None,
            name: None,
            input: None,
            tool_use_id: None,
            content: None,
            is_error: None,
        }]),
        Some(b'[') => serde_json::from_str(json).ok(),
        _ => None,
    }
}

/// Reads a Claude Code transcript.
pub(super) fn read(reader: impl BufRead) -> io::Result<Transcript> {
    let mut b = Builder::default();
    let unknown = super::lines(reader, |line| known_line(&mut b, line))?;
    Ok(b.finish(unknown))
}

/// Takes what kb reads from one line; returns whether the line was of a known type and shape.
fn known_line(b: &mut Builder, text: &str) -> bool {
    let Ok(line) = serde_json::from_str::<Line>(text) else { return false };
    let Some(kind) = line.kind.as_deref() else { return false };
    if let Some(ts) = &line.timestamp {
        b.at(ts);
    }
    if let Some(cwd) = &line.cwd {
        b.cwd(cwd);
    }
    if let Some(branch) = &line.git_branch {
        b.branch(branch);
    }
    match kind {
        "user" => {
            let Some(content) = line.message.as_ref().and_then(|m| m.content) else { return false };
            let Some(blocks) = blocks(content) else { return false };
            let own = !(line.is_meta == Some(true)
                || line.is_sidechain == Some(true)
                || line.is_compact_summary == Some(true)
                || line.transcript_only == Some(true));
            user_blocks(b, &blocks, own);
            true
        }
        "assistant" => {
            let Some(content) = line.message.as_ref().and_then(|m| m.content) else { return false };
            let Some(blocks) = blocks(content) else { return false };
            if line.api_error == Some(true) {
                let text: Vec<String> = blocks.iter().filter_map(|bl| bl.text.and_then(text_of)).collect();
                b.error(&text.join(" "));
            }
            assistant_blocks(b, &blocks, SHELL_TOOLS.as_slice(), EDIT_TOOLS.as_slice());
            true
        }
        "system" => {
            let error = line.level.as_deref() == Some("error") || line.subtype.as_deref() == Some("api_error");
            if error && let Some(text) = line.content.or(line.error).and_then(text_of) {
                b.error(&text);
            }
            true
        }
        other => KNOWN.contains(&other),
    }
}

/// Takes a user line's blocks: tool results, and the user's own text when the line is theirs
/// (`own`) and holds no tool result.
pub(super) fn user_blocks(b: &mut Builder, blocks: &[Block], own: bool) {
    let mut texts = Vec::new();
    let mut results = false;
    for block in blocks {
        match block.kind.as_deref() {
            Some("text") => {
                if let Some(t) = block.text.and_then(text_of) {
                    texts.push(t);
                }
            }
            Some("tool_result") => {
                results = true;
                let Some(id) = block.tool_use_id.as_deref() else { continue };
                let failed = block.is_error == Some(true);
                // Only a failed result's text is decoded: a success's may be megabytes.
                let detail = if failed { block.content.and_then(text_of) } else { None };
                let outcome = match (failed, b.is_command(id)) {
                    (false, _) => Outcome::Ok,
                    (true, true) => Outcome::Failed(detail.as_deref().and_then(exit_code_in)),
                    (true, false) => Outcome::Failed(None),
                };
                b.result(id, outcome, detail.as_deref());
            }
            _ => {}
        }
    }
    if own && !results && !texts.is_empty() {
        b.request(&texts.join("\n"));
    }
}

/// Takes an assistant line's tool calls: a tool named in `shell` runs its `command`, one named
/// in `edit` changes the file its input names.
pub(super) fn assistant_blocks(b: &mut Builder, blocks: &[Block], shell: &[&str], edit: &[&str]) {
    for block in blocks {
        if block.kind.as_deref() != Some("tool_use") {
            continue;
        }
        let name = block.name.as_deref().unwrap_or("");
        let (mut command, mut files) = (None, Vec::new());
        if let Some(input) = block.input {
            if shell.contains(&name) {
                command = command_of(input);
            } else if edit.contains(&name)
                && let Some(f) = file_of(input)
            {
                files.push(f);
            }
        }
        b.tool(block.id.as_deref(), name, command, files);
    }
}
