//! Gemini CLI's chat recording, `~/.gemini/tmp/<project hash>/chats/session-<…>.jsonl`: a first
//! line of metadata (`sessionId`, `projectHash`, `startTime`, `lastUpdated`), then one message
//! record a line (`id`, `timestamp`, `type` `user` | `gemini` | `info` | `warning` | `error`,
//! `content` as a string or parts, and for `gemini` `toolCalls[{id, name, args, result, status}]`),
//! `{"$set":{…}}` metadata updates (a `messages` list in one replaces the conversation) and
//! `{"$rewindTo": ID}` (the messages from ID on are dropped). A message is written again each time
//! it changes, so the last record of an id wins, in the place of its first. The older recording
//! is one JSON document, `{"sessionId",…,"messages":[…]}` (a `.json` file, or a file whose first
//! line is a lone `{`). `run_shell_command` runs `args.command`, its output ends `Exit Code: N`
//! when that is not 0; `write_file` and `replace` change `args.file_path`. User messages Gemini
//! itself leaves out of a resumed session (`/commands`, `?`, `<session_context>`,
//! `<hook_context>`) are not requests.

use super::{Builder, Outcome, Str, Transcript, command_of, file_of, text_of};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::io::{self, BufRead};

const EDIT_TOOLS: [&str; 6] = ["write_file", "replace", "edit", "edit_file", "save_file", "smart_edit"];
const SHELL_TOOLS: [&str; 2] = ["run_shell_command", "shell"];

#[derive(Deserialize)]
struct Record<'a> {
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    timestamp: Option<Str<'a>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(rename = "toolCalls", borrow, default)]
    tool_calls: Option<Vec<ToolCall<'a>>>,
    #[serde(rename = "$rewindTo", borrow, default)]
    rewind: Option<Str<'a>>,
    #[serde(rename = "$set", borrow, default)]
    set: Option<&'a RawValue>,
    #[serde(rename = "sessionId", borrow, default)]
    session_id: Option<Str<'a>>,
    #[serde(rename = "startTime", borrow, default)]
    start_time: Option<Str<'a>>,
    #[serde(rename = "lastUpdated", borrow, default)]
    last_updated: Option<Str<'a>>,
    #[serde(borrow, default)]
    messages: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct ToolCall<'a> {
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(borrow, default)]
    args: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    status: Option<Str<'a>>,
    #[serde(borrow, default)]
    timestamp: Option<Str<'a>>,
}

/// What kb keeps of one message (the record itself may be large, and is written many times).
struct Msg {
    kind: String,
    timestamp: Option<String>,
    /// A user or error message's text.
    text: Option<String>,
    tools: Vec<Tool>,
}

struct Tool {
    id: String,
    name: String,
    command: Option<String>,
    file: Option<String>,
    outcome: Option<Outcome>,
    /// A failed call's output or error.
    detail: Option<String>,
}

#[derive(Default)]
struct State {
    b: Builder,
    msgs: Vec<Msg>,
    /// Each message's place in `msgs`, by id.
    at: rustc_hash::FxHashMap<String, usize>,
}

impl State {
    /// Takes a message record, or a metadata, `$set` or `$rewindTo` record; returns whether it
    /// was one.
    fn record(&mut self, json: &str) -> bool {
        let Ok(r) = serde_json::from_str::<Record>(json) else { return false };
        if let Some(to) = r.rewind.as_deref() {
            let keep = self.at.get(to).copied().unwrap_or(0);
            self.msgs.truncate(keep);
            self.at.retain(|_, i| *i < keep);
            return true;
        }
        if let Some(set) = r.set {
            return self.record_set(set);
        }
        if let Some(id) = r.id.as_deref()
            && r.session_id.is_none()
        {
            self.message(id, &r);
            return true;
        }
        if r.session_id.is_some() {
            for ts in [&r.start_time, &r.last_updated].into_iter().flatten() {
                self.b.at(ts);
            }
            // A whole older recording on one line.
            for m in r.messages.iter().flatten() {
                if !self.record(m.get()) {
                    self.b.unknown();
                }
            }
            return true;
        }
        false
    }

    /// Takes a `$set`: new metadata, and with `messages` a whole new conversation.
    fn record_set(&mut self, set: &RawValue) -> bool {
        #[derive(Deserialize)]
        struct Set<'a> {
            #[serde(rename = "lastUpdated", borrow, default)]
            last_updated: Option<Str<'a>>,
            #[serde(borrow, default)]
            messages: Option<Vec<&'a RawValue>>,
        }
        let Ok(set) = serde_json::from_str::<Set>(set.get()) else { return false };
        if let Some(ts) = &set.last_updated {
            self.b.at(ts);
        }
        if let Some(messages) = set.messages {
            self.msgs.clear();
            self.at.clear();
            for m in messages {
                if !self.record(m.get()) {
                    self.b.unknown();
                }
            }
        }
        true
    }

    fn message(&mut self, id: &str, r: &Record) {
        let kind = r.kind.as_deref().unwrap_or("").to_string();
        let text = match kind.as_str() {
            "user" | "error" => r.content.and_then(text_of),
            _ => None,
        };
        let tools = r.tool_calls.iter().flatten().map(tool).collect();
        let msg = Msg { kind, timestamp: r.timestamp.as_deref().map(str::to_string), text, tools };
        match self.at.get(id) {
            Some(&i) => self.msgs[i] = msg,
            None => {
                self.at.insert(id.to_string(), self.msgs.len());
                self.msgs.push(msg);
            }
        }
    }

    fn finish(mut self, unknown: usize) -> Transcript {
        for m in std::mem::take(&mut self.msgs) {
            if let Some(ts) = &m.timestamp {
                self.b.at(ts);
            }
            match m.kind.as_str() {
                "user" => {
                    if let Some(text) = m.text.as_deref().filter(|t| !ignored(t)) {
                        self.b.request(text);
                    }
                }
                "error" => {
                    if let Some(text) = &m.text {
                        self.b.error(text);
                    }
                }
                _ => {}
            }
            for t in m.tools {
                self.b.tool(Some(&t.id), &t.name, t.command, t.file.into_iter().collect());
                if let Some(outcome) = t.outcome {
                    self.b.result(&t.id, outcome, t.detail.as_deref());
                }
            }
        }
        self.b.finish(unknown)
    }
}

/// Returns what kb keeps of a tool call: its command or file, and from its status and result
/// its outcome.
fn tool(c: &ToolCall) -> Tool {
    let name = c.name.as_deref().unwrap_or("").to_string();
    let shell = SHELL_TOOLS.contains(&name.as_str());
    let command = if shell { c.args.and_then(command_of) } else { None };
    let file = if EDIT_TOOLS.contains(&name.as_str()) { c.args.and_then(file_of) } else { None };
    // The exit code is found in the raw result: its digits need no decoding.
    let raw = c.result.map(RawValue::get).unwrap_or("");
    let code = raw.find("Exit Code: ").and_then(|at| {
        let digits: String =
            raw[at + "Exit Code: ".len()..].chars().take_while(|ch| ch.is_ascii_digit() || *ch == '-').collect();
        digits.parse::<i32>().ok()
    });
    let outcome = match c.status.as_deref() {
        Some("success") => Some(match code {
            Some(code) if shell && code != 0 => Outcome::Failed(Some(code)),
            _ => Outcome::Ok,
        }),
        Some("error") => Some(Outcome::Failed(code)),
        Some("cancelled") => Some(Outcome::Failed(None)),
        _ => None,
    };
    let detail = match outcome {
        Some(Outcome::Failed(_)) => c.result.and_then(result_text),
        _ => None,
    };
    let id =
        c.id.as_deref()
            .map(str::to_string)
            .unwrap_or_else(|| format!("{name}@{}", c.timestamp.as_deref().unwrap_or("")));
    Tool { id, name, command, file, outcome, detail }
}

/// Returns the text of a tool result's parts: each `functionResponse.response`'s `error` or
/// `output`, or a part's `text`.
fn result_text(raw: &RawValue) -> Option<String> {
    #[derive(Deserialize)]
    struct Part<'a> {
        #[serde(rename = "functionResponse", borrow, default)]
        function_response: Option<Response<'a>>,
        #[serde(borrow, default)]
        text: Option<Str<'a>>,
    }
    #[derive(Deserialize)]
    struct Response<'a> {
        #[serde(borrow, default)]
        response: Option<Inner<'a>>,
    }
    #[derive(Deserialize)]
    struct Inner<'a> {
        #[serde(borrow, default)]
        error: Option<Str<'a>>,
        #[serde(borrow, default)]
        output: Option<Str<'a>>,
    }
    let parts: Vec<Part> = match raw.get().trim_start().as_bytes().first() {
        Some(b'[') => serde_json::from_str(raw.get()).ok()?,
        Some(b'{') => vec![serde_json::from_str(raw.get()).ok()?],
        _ => return text_of(raw),
    };
    let texts: Vec<String> = parts
        .into_iter()
        .filter_map(|p| {
            let inner = p.function_response.and_then(|r| r.response);
            inner.and_then(|i| i.error.or(i.output)).or(p.text).map(|t| t.into_owned())
        })
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// Whether Gemini CLI itself leaves a user message out of a resumed conversation.
fn ignored(text: &str) -> bool {
    let t = text.trim();
    t.is_empty()
        || t.starts_with('/')
        || t.starts_with('?')
        || t.starts_with("<session_context>")
        || t.starts_with("<hook_context>")
}

/// Reads a Gemini CLI recording; `document` when the file is the older one-document `.json`.
pub(super) fn read(mut reader: impl BufRead, document: bool) -> io::Result<Transcript> {
    let pretty = {
        let head = reader.fill_buf()?;
        let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
        let first = head.split(|&c| c == b'\n').next().unwrap_or(b"");
        first.trim_ascii() == b"{"
    };
    let mut s = State::default();
    if document || pretty {
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes)?;
        let text = String::from_utf8_lossy(&bytes);
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        if s.record(text.trim()) {
            return Ok(s.finish(0));
        }
        // Not one document after all: read it as lines.
        let mut s = State::default();
        let unknown = super::lines(io::Cursor::new(text.as_bytes()), |line| s.record(line))?;
        return Ok(s.finish(unknown));
    }
    let unknown = super::lines(reader, |line| s.record(line))?;
    Ok(s.finish(unknown))
}
