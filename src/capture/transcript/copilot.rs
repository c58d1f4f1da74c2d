//! Copilot CLI's session log, `~/.copilot/session-state/<session id>/events.jsonl`: one event a
//! line, `{"type","data","id","timestamp","parentId"}` (events of a sub-agent add `agentId`).
//! Read: `session.start` and `session.resume` (`data.context{cwd, branch}`),
//! `session.context_changed`, `user.message` (`data.content`; a message with a `source` such as
//! `skill-…` or `agent-…` was injected, not typed), `tool.execution_start{toolCallId, toolName,
//! arguments}`, `tool.execution_complete{toolCallId, success, result{content, contents}, error}`,
//! `session.error` and `model.call_failure`. The shell tools are `bash` and `powershell`
//! (`arguments.command`), their result ends `<exited with exit code N>` (or carries a
//! `shell_exit` content with `exitCode`); `create`, `edit`, `str_replace_editor` (but `view`) and
//! `apply_patch` change `arguments.path`.

use super::{Builder, Outcome, Str, Transcript, command_of, exit_code_in, file_of, patch_files, text_of};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::io::{self, BufRead};

const SHELL_TOOLS: [&str; 3] = ["bash", "powershell", "shell"];
const EDIT_TOOLS: [&str; 6] = ["create", "edit", "str_replace_editor", "str_replace", "write", "multi_edit"];

/// The namespaces of the event types Copilot CLI writes (`session.start`, `tool.…`): an event
/// in one is known even when kb reads nothing of it.
const NAMESPACES: [&str; 20] = [
    "session",
    "user",
    "assistant",
    "tool",
    "tool_search",
    "subagent",
    "hook",
    "system",
    "skill",
    "permission",
    "user_input",
    "elicitation",
    "sampling",
    "mcp",
    "model",
    "pending_messages",
    "external_tool",
    "command",
    "auto_mode_switch",
    "abort",
];

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
    #[serde(borrow, default)]
    timestamp: Option<Str<'a>>,
    #[serde(rename = "agentId", borrow, default)]
    agent_id: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct Context<'a> {
    #[serde(borrow, default)]
    cwd: Option<Str<'a>>,
    #[serde(borrow, default)]
    branch: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct Data<'a> {
    #[serde(borrow, default)]
    context: Option<Context<'a>>,
    #[serde(rename = "startTime", borrow, default)]
    start_time: Option<Str<'a>>,
    #[serde(borrow, default)]
    cwd: Option<Str<'a>>,
    #[serde(borrow, default)]
    branch: Option<Str<'a>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    source: Option<Str<'a>>,
    #[serde(rename = "isAutopilotContinuation", default)]
    autopilot: Option<bool>,
    #[serde(rename = "toolCallId", borrow, default)]
    tool_call_id: Option<Str<'a>>,
    #[serde(rename = "toolName", borrow, default)]
    tool_name: Option<Str<'a>>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(default)]
    success: Option<bool>,
    #[serde(borrow, default)]
    result: Option<Result_<'a>>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    message: Option<Str<'a>>,
    #[serde(rename = "errorMessage", borrow, default)]
    error_message: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct Result_<'a> {
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    contents: Option<Vec<Content<'a>>>,
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(rename = "exitCode", default)]
    exit_code: Option<i64>,
}

/// Reads a Copilot CLI `events.jsonl`.
pub(super) fn read(reader: impl BufRead) -> io::Result<Transcript> {
    let mut b = Builder::default();
    let unknown = super::lines(reader, |line| known_line(&mut b, line))?;
    Ok(b.finish(unknown))
}

fn known_line(b: &mut Builder, text: &str) -> bool {
    let Ok(ev) = serde_json::from_str::<Event>(text) else { return false };
    let Some(kind) = ev.kind.as_deref() else { return false };
    if let Some(ts) = &ev.timestamp {
        b.at(ts);
    }
    let data = || ev.data.and_then(|d| serde_json::from_str::<Data>(d.get()).ok());
    let sub_agent = ev.agent_id.as_deref().is_some_and(|a| !a.is_empty());
    match kind {
        "session.start" | "session.resume" | "session.context_changed" => {
            let Some(d) = data() else { return false };
            if let Some(ts) = &d.start_time {
                b.at(ts);
            }
            let (cwd, branch) = match &d.context {
                Some(c) => (c.cwd.as_deref(), c.branch.as_deref()),
                None => (d.cwd.as_deref(), d.branch.as_deref()),
            };
            if let Some(cwd) = cwd {
                b.cwd(cwd);
            }
            if let Some(branch) = branch {
                b.branch(branch);
            }
        }
        "user.message" => {
            let Some(d) = data() else { return false };
            let injected = d.autopilot == Some(true)
                || d.source.as_deref().is_some_and(|s| !s.is_empty() && s != "user" && s != "input");
            if !injected
                && !sub_agent
                && let Some(text) = d.content.and_then(text_of)
            {
                b.request(&text);
            }
        }
        "tool.execution_start" => {
            let Some(d) = data() else { return false };
            let name = d.tool_name.as_deref().unwrap_or("");
            let (mut command, mut files) = (None, Vec::new());
            if let Some(args) = d.arguments {
                if SHELL_TOOLS.contains(&name) {
                    command = command_of(args);
                } else if name == "apply_patch" {
                    files = text_of(args).map(|p| patch_files(&p)).unwrap_or_default();
                } else if EDIT_TOOLS.contains(&name) && !viewing(args) {
                    files.extend(file_of(args));
                }
            }
            b.tool(d.tool_call_id.as_deref(), name, command, files);
        }
        "tool.execution_complete" => {
            let Some(d) = data() else { return false };
            let Some(id) = d.tool_call_id.as_deref() else { return true };
            let text = d.result.as_ref().and_then(|r| r.content).and_then(text_of);
            let code = d
                .result
                .as_ref()
                .and_then(|r| r.contents.as_ref())
                .and_then(|cs| {
                    cs.iter()
                        .filter(|c| matches!(c.kind.as_deref(), Some("shell_exit" | "terminal")))
                        .find_map(|c| c.exit_code)
                })
                .and_then(|c| i32::try_from(c).ok())
                .or_else(|| text.as_deref().and_then(exit_code_in));
            let outcome = match (d.success, code) {
                (Some(false), code) => Outcome::Failed(code),
                (_, Some(0)) => Outcome::Ok,
                (_, Some(code)) if b.is_command(id) => Outcome::Failed(Some(code)),
                (Some(true), _) => Outcome::Ok,
                (None, _) => Outcome::Unknown,
            };
            let error = d.error.and_then(|e| {
                #[derive(Deserialize)]
                struct E<'a> {
                    #[serde(borrow, default)]
                    message: Option<Str<'a>>,
                }
                serde_json::from_str::<E>(e.get())
                    .ok()
                    .and_then(|e| e.message.map(|m| m.into_owned()))
                    .or_else(|| text_of(e))
            });
            let detail = error.or(text);
            b.result(id, outcome, detail.as_deref());
        }
        "session.error" | "model.call_failure" => {
            if let Some(d) = data()
                && let Some(msg) = d.message.or(d.error_message)
            {
                b.error(&msg);
            }
        }
        other => {
            let namespace = other.split('.').next().unwrap_or(other);
            return NAMESPACES.contains(&namespace) || other.ends_with("_completed") || other.ends_with("_idle");
        }
    }
    true
}

/// Whether a `str_replace_editor` call only reads (`command` `view`).
fn viewing(args: &RawValue) -> bool {
    #[derive(Deserialize)]
    struct Args<'a> {
        #[serde(borrow, default)]
        command: Option<Str<'a>>,
    }
    serde_json::from_str::<Args>(args.get()).ok().and_then(|a| a.command).is_some_and(|c| c == "view")
}
