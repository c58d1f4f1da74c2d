//! Codex's rollout, `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`: one
//! `{"timestamp","type","payload"}` a line, `type` `session_meta` (id, cwd, `git{branch}`) |
//! `turn_context` | `response_item` (what the model saw: `message`, `function_call{name,
//! arguments, call_id}`, `function_call_output{call_id, output}`, `custom_tool_call` /
//! `custom_tool_call_output` for `apply_patch`, `local_shell_call`, `reasoning`…) | `event_msg`
//! (what the terminal replays: `user_message`, `exec_command_end{call_id, exit_code}`,
//! `patch_apply_end{call_id, success}`, `error`…) | `compacted`. The user's words are the
//! `user_message` events (the `response_item` user messages also hold the injected
//! `<environment_context>` and instructions); a rollout without such events (older ones) falls
//! back to the user messages. A shell call's output is JSON `{"output","metadata":{"exit_code"}}`
//! or text with `Exit code: N` or `Process exited with code N`. Rollouts before the envelope (one
//! bare item a line, after a `{"id","timestamp"}` first line) are read too.

use super::{Builder, Outcome, Str, Transcript, argv_command, command_of, exit_code_in, patch_files, text_of};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::io::{self, BufRead};

/// The function tools that run a shell command.
const SHELL_TOOLS: [&str; 5] = ["shell", "container.exec", "shell_command", "exec_command", "local_shell"];

/// The item types a response item can have (an older rollout writes them bare).
const ITEM_TYPES: [&str; 12] = [
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
    "ghost_snapshot",
    "compaction",
    "compaction_summary",
    "tool_search_call",
];

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, default)]
    timestamp: Option<Str<'a>>,
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    payload: Option<&'a RawValue>,
    #[serde(borrow, default)]
    record_type: Option<Str<'a>>,
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(borrow, default)]
    timestamp: Option<Str<'a>>,
    #[serde(borrow, default)]
    cwd: Option<Str<'a>>,
    #[serde(borrow, default)]
    git: Option<Git<'a>>,
}

#[derive(Deserialize)]
struct Git<'a> {
    #[serde(borrow, default)]
    branch: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    role: Option<Str<'a>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    call_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    output: Option<&'a RawValue>,
    #[serde(borrow, default)]
    action: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
    #[serde(borrow, default)]
    call_id: Option<Str<'a>>,
    #[serde(default)]
    exit_code: Option<i64>,
    #[serde(default)]
    success: Option<bool>,
    #[serde(borrow, default)]
    stderr: Option<&'a RawValue>,
}

#[derive(Default)]
struct State {
    b: Builder,
    /// The user's messages as `user_message` events.
    events: Vec<String>,
    /// The user's messages as response items (injected text included; the fallback).
    items: Vec<String>,
    /// Whether the line read was the first.
    first: bool,
}

/// Reads a Codex rollout.
pub(super) fn read(reader: impl BufRead) -> io::Result<Transcript> {
    let mut s = State { first: true, ..State::default() };
    let unknown = super::lines(reader, |line| {
        let known = known_line(&mut s, line);
        s.first = false;
        known
    })?;
    let requests = if s.events.is_empty() { std::mem::take(&mut s.items) } else { std::mem::take(&mut s.events) };
    for r in &requests {
        s.b.request(r);
    }
    Ok(s.b.finish(unknown))
}

fn known_line(s: &mut State, text: &str) -> bool {
    let Ok(line) = serde_json::from_str::<Line>(text) else { return false };
    if let Some(ts) = &line.timestamp {
        s.b.at(ts);
    }
    match (line.kind.as_deref(), line.payload) {
        (Some("session_meta"), Some(p)) => meta(s, p.get()),
        (Some("turn_context"), Some(p)) => meta(s, p.get()),
        (Some("response_item"), Some(p)) => item(s, p.get()),
        (Some("event_msg"), Some(p)) => event(s, p.get()),
        (Some("compacted"), _) => true,
        // Before the envelope: a first line of session meta, bare items, state records.
        (None, None) if line.record_type.is_some() => true,
        (None, None) if s.first && line.id.is_some() => meta(s, text),
        (Some(kind), None) if ITEM_TYPES.contains(&kind) => item(s, text),
        _ => false,
    }
}

fn meta(s: &mut State, json: &str) -> bool {
    let Ok(m) = serde_json::from_str::<Meta>(json) else { return false };
    if let Some(ts) = &m.timestamp {
        s.b.at(ts);
    }
    if let Some(cwd) = &m.cwd {
        s.b.cwd(cwd);
    }
    if let Some(branch) = m.git.as_ref().and_then(|g| g.branch.as_deref()) {
        s.b.branch(branch);
    }
    true
}

fn item(s: &mut State, json: &str) -> bool {
    let Ok(it) = serde_json::from_str::<Item>(json) else { return false };
    let Some(kind) = it.kind.as_deref() else { return false };
    let call_id = it.call_id.as_deref().or(it.id.as_deref());
    match kind {
        "message" => {
            if it.role.as_deref() == Some("user")
                && let Some(text) = it.content.and_then(text_of)
            {
                s.items.push(text);
            }
        }
        "function_call" | "custom_tool_call" => {
            let name = it.name.as_deref().unwrap_or("");
            let args = it.arguments.or(it.input);
            let (mut command, mut files) = (None, Vec::new());
            if name == "apply_patch" {
                files = args.and_then(patch_text).map(|p| patch_files(&p)).unwrap_or_default();
            } else if SHELL_TOOLS.contains(&name)
                && let Some(args) = args.and_then(json_args)
            {
                match command_of(&args) {
                    // `apply_patch` run through the shell tool is a patch, not a command.
                    Some(c) if c.trim_start().starts_with("apply_patch") => files = patch_files(&c),
                    c => command = c,
                }
            }
            s.b.tool(call_id, name, command, files);
        }
        "local_shell_call" => {
            #[derive(Deserialize)]
            struct Action<'a> {
                #[serde(borrow, default)]
                command: Vec<Str<'a>>,
            }
            let command =
                it.action.and_then(|a| serde_json::from_str::<Action>(a.get()).ok()).map(|a| argv_command(&a.command));
            s.b.tool(call_id, "local_shell", command, Vec::new());
        }
        "function_call_output" | "custom_tool_call_output" => {
            if let (Some(id), Some(out)) = (call_id, it.output) {
                output(&mut s.b, id, out);
            }
        }
        _ if ITEM_TYPES.contains(&kind) => {}
        // A newer kind of item: known as an item, nothing kb reads.
        _ => {}
    }
    true
}

/// Returns a function call's arguments as JSON: they are written as a string holding JSON.
fn json_args(raw: &RawValue) -> Option<Box<RawValue>> {
    match serde_json::from_str::<Str>(raw.get()) {
        Ok(text) => RawValue::from_string(text.into_owned()).ok(),
        Err(_) => RawValue::from_string(raw.get().to_string()).ok(),
    }
}

/// Returns the patch an `apply_patch` call carries: its input string, or the `input` or
/// `patch` of its arguments.
fn patch_text(raw: &RawValue) -> Option<String> {
    #[derive(Deserialize)]
    struct Args<'a> {
        #[serde(borrow, default)]
        input: Option<Str<'a>>,
        #[serde(borrow, default)]
        patch: Option<Str<'a>>,
    }
    let text = serde_json::from_str::<Str>(raw.get()).ok()?;
    if text.contains("*** Begin Patch") && !text.trim_start().starts_with('{') {
        return Some(text.into_owned());
    }
    let args: Args = serde_json::from_str(&text).ok()?;
    args.input.or(args.patch).map(Cow::into_owned)
}

/// Records a call's output: its exit code (JSON metadata, or the text's own line), whether it
/// succeeded, and its text as the detail of a failure.
fn output(b: &mut Builder, id: &str, raw: &RawValue) {
    #[derive(Deserialize)]
    struct Wrapped<'a> {
        #[serde(borrow, default)]
        output: Option<Str<'a>>,
        #[serde(borrow, default)]
        content: Option<Str<'a>>,
        #[serde(default)]
        metadata: Option<Metadata>,
        #[serde(default)]
        success: Option<bool>,
    }
    #[derive(Deserialize)]
    struct Metadata {
        #[serde(default)]
        exit_code: Option<i64>,
    }
    let text = text_of(raw).unwrap_or_default();
    let wrapped = if raw.get().trim_start().starts_with('{') {
        serde_json::from_str::<Wrapped>(raw.get()).ok()
    } else if text.trim_start().starts_with('{') {
        serde_json::from_str::<Wrapped>(&text).ok()
    } else {
        None
    };
    let (body, code, success) = match &wrapped {
        Some(w) => (
            w.output.as_deref().or(w.content.as_deref()).unwrap_or("").to_string(),
            w.metadata.as_ref().and_then(|m| m.exit_code).and_then(|c| i32::try_from(c).ok()),
            w.success,
        ),
        None => (text.clone(), exit_code_in(&text), None),
    };
    let patch = b.name_of(id) == Some("apply_patch");
    let outcome = match (code, success) {
        (Some(0), _) => Outcome::Ok,
        (Some(c), _) => Outcome::Failed(Some(c)),
        (None, Some(false)) => Outcome::Failed(None),
        (None, Some(true)) => Outcome::Ok,
        (None, None) if patch && body.starts_with("Success") => Outcome::Ok,
        (None, None) if patch && (body.contains("verification failed") || body.starts_with("Failed")) => {
            Outcome::Failed(None)
        }
        // A tool that is not a command and says nothing of failing worked.
        (None, None) if !b.is_command(id) && !patch => Outcome::Ok,
        (None, None) => Outcome::Unknown,
    };
    b.result(id, outcome, Some(&body));
}

fn event(s: &mut State, json: &str) -> bool {
    let Ok(ev) = serde_json::from_str::<Event>(json) else { return false };
    let Some(kind) = ev.kind.as_deref() else { return false };
    match kind {
        "user_message" => {
            if let Some(text) = ev.message.and_then(text_of) {
                s.events.push(text);
            }
        }
        "exec_command_end" => {
            if let (Some(id), Some(code)) = (ev.call_id.as_deref(), ev.exit_code.and_then(|c| i32::try_from(c).ok())) {
                let outcome = if code == 0 { Outcome::Ok } else { Outcome::Failed(Some(code)) };
                let detail = ev.stderr.and_then(text_of);
                s.b.result(id, outcome, detail.as_deref());
            }
        }
        "patch_apply_end" => {
            if let (Some(id), Some(false)) = (ev.call_id.as_deref(), ev.success) {
                let detail = ev.stderr.and_then(text_of);
                s.b.result(id, Outcome::Failed(None), detail.as_deref());
            }
        }
        "error" | "stream_error" => {
            if let Some(text) = ev.message.and_then(text_of) {
                s.b.error(&text);
            }
        }
        _ => {}
    }
    true
}
