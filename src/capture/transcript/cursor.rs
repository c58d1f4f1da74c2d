//! Cursor's agent transcript, `~/.cursor/projects/<workspace>/agent-transcripts/<id>.jsonl` (the
//! IDE nests it in `<id>/`): one `{"role":"user"|"assistant","message":{"content":[…]}}` a line,
//! with Claude Code's blocks (`text`, `tool_use{name, input}`) but no ids, no tool results and no
//! timestamps, so a command's outcome is unknown. The user's text is wrapped in `<user_query>`,
//! after an optional `<timestamp>` line. Tools: `Write`, `StrReplace`, `Edit`, `MultiEdit`,
//! `Delete` change the `path` they name; `Shell` runs its `command`.

use super::claude::{Block, Message, assistant_blocks, blocks};
use super::{Builder, Str, Transcript, text_of};
use serde::Deserialize;
use std::io::{self, BufRead};

const EDIT_TOOLS: [&str; 9] =
    ["Write", "StrReplace", "Edit", "MultiEdit", "Delete", "EditNotebook", "edit_file", "write", "search_replace"];
const SHELL_TOOLS: [&str; 3] = ["Shell", "run_terminal_cmd", "Bash"];

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, default)]
    role: Option<Str<'a>>,
    /// Lines in Claude Code's shape say `type` instead.
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    timestamp: Option<Str<'a>>,
    #[serde(borrow, default)]
    message: Option<Message<'a>>,
}

/// Reads a Cursor transcript.
pub(super) fn read(reader: impl BufRead) -> io::Result<Transcript> {
    let mut b = Builder::default();
    let unknown = super::lines(reader, |line| known_line(&mut b, line))?;
    Ok(b.finish(unknown))
}

fn known_line(b: &mut Builder, text: &str) -> bool {
    let Ok(line) = serde_json::from_str::<Line>(text) else { return false };
    if let Some(ts) = &line.timestamp {
        b.at(ts);
    }
    let role = line.role.as_deref().or(line.kind.as_deref());
    let Some(content) = line.message.as_ref().and_then(|m| m.content) else { return false };
    let Some(blocks) = blocks(content) else { return false };
    match role {
        Some("user") => {
            user(b, &blocks);
            true
        }
        Some("assistant") => {
            assistant_blocks(b, &blocks, SHELL_TOOLS.as_slice(), EDIT_TOOLS.as_slice());
            true
        }
        _ => false,
    }
}

/// Takes the user's text: what `<user_query>` holds, or the whole text when there is no such tag.
fn user(b: &mut Builder, blocks: &[Block]) {
    let texts: Vec<String> = blocks
        .iter()
        .filter(|bl| bl.kind.as_deref() == Some("text"))
        .filter_map(|bl| bl.text.and_then(text_of))
        .collect();
    let text = texts.join("\n");
    match query(&text) {
        Some(q) => b.request(q),
        None => b.request(&text),
    }
}

/// Returns the text between `<user_query>` and `</user_query>`.
fn query(text: &str) -> Option<&str> {
    let start = text.find("<user_query>")? + "<user_query>".len();
    let end = text[start..].find("</user_query>").map_or(text.len(), |e| start + e);
    Some(text[start..end].trim())
}
