//! `kb hook VERB --agent AGENT`: what runs inside an agent's loop (docs/hooks.md).
//!
//! - `session-start` gives the agent what the committed files leave out (the global context, the
//!   open session, Hot Memories, the branch's board), stale warnings and the inbox's count; the
//!   whole block when no file the agent reads natively carries it.
//! - `prompt` is the sidekick: at most three relevant, verified items the agent has not seen.
//! - `pre-compact`, `session-end` and `stop` append one line to the spool and return.
//!
//! Nothing here fails the agent: every problem becomes a line of the answer's `problems`, which
//! the command line writes to `hooks.log`.

use crate::context::block::{self, Cap};
use crate::context::layers::LayerKind;
use crate::context::{BlockRequest, agents as formats};
use crate::hooks::{spool, state};
use crate::kinds::{HookVerb, Store};
use crate::knowledge::Knowledge;
use crate::repo::Repo;
use crate::search::tokens;
use crate::settings::Agent;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// The most context text `session-start` gives (agents move or cut longer output).
pub const SESSION_START_LIMIT: usize = 10_000;
/// The most text `prompt` gives.
pub const PROMPT_LIMIT: usize = 1_500;
/// The most items `prompt` gives.
pub const PROMPT_ITEMS: usize = 3;
/// The most stale warnings `session-start` gives.
const STALE_WARNINGS: usize = 5;

/// One hook call: the verb, the agent, the payload the agent sent (`{}` when it sent nothing
/// kb can read).
pub struct Call<'a> {
    pub verb: HookVerb,
    pub agent: Agent,
    pub payload: &'a Value,
}

/// What a hook call answers: the text to print, in the agent's output shape (nothing: print
/// nothing), the problems met, and whether a digest should start.
#[derive(Debug, Default)]
pub struct Answer {
    pub output: Option<String>,
    pub problems: Vec<String>,
    pub start_digest: bool,
    /// The shared sources whose copy is missing or older than `shared_ttl_hours`: a background
    /// `kb shared sync` should bring them up to date (session-start only).
    pub sync_shared: Vec<String>,
}

/// Whether kb has hooks for `agent` (Windsurf and Kiro have none).
pub fn hooked(agent: Agent) -> bool {
    crate::hooks::spec(agent).is_some()
}

/// Writes one problem line to `.co-cli/state/hooks.log`.
pub fn log(layout: &crate::paths::Layout, at: &str, agent: &str, verb: &str, message: &str) {
    state::log(layout, at, agent, verb, message);
}

/// Returns the first string of `payload` at one of `keys`.
fn string_at(payload: &Value, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| payload.get(k)?.as_str().filter(|s| !s.trim().is_empty()).map(str::to_string))
}

/// The session id: `session_id`, `sessionId` (Copilot), `conversation_id` (Cursor) or `taskId`
/// (Cline).
pub fn session_id(payload: &Value) -> Option<String> {
    string_at(payload, &["session_id", "sessionId", "conversation_id", "taskId"])
}

/// The folder the agent works in: `cwd`, else the first of `workspace_roots` (Cursor) or
/// `workspaceRoots` (Cline).
pub fn payload_cwd(payload: &Value) -> Option<PathBuf> {
    if let Some(cwd) = string_at(payload, &["cwd"]) {
        return Some(PathBuf::from(cwd));
    }
    ["workspace_roots", "workspaceRoots"]
        .iter()
        .find_map(|k| payload.get(k)?.as_array()?.first()?.as_str().map(PathBuf::from))
}

/// The transcript's path: `transcript_path`, or `transcriptPath` (Copilot).
fn transcript_path(payload: &Value) -> Option<String> {
    string_at(payload, &["transcript_path", "transcriptPath"])
}

/// The user's prompt: `prompt` (Claude Code, Codex, Gemini CLI, Copilot CLI), else the `prompt`
/// of Cline's per-event object (`userPromptSubmit.prompt`).
fn prompt_text(payload: &Value) -> Option<String> {
    string_at(payload, &["prompt"])
        .or_else(|| payload.as_object()?.values().find_map(|v| v.get("prompt")?.as_str().map(str::to_string)))
}

/// Runs one hook call against the repository.
pub fn run(repo: &Repo, call: &Call<'_>) -> Answer {
    let mut answer = Answer::default();
    let session = session_id(call.payload);
    let layout = &repo.layout;
    if session.is_none() {
        answer
            .problems
            .push("the payload names no session id (session_id, sessionId, conversation_id or taskId)".into());
    }
    let prompt = (call.verb == HookVerb::Prompt).then(|| prompt_text(call.payload)).flatten();
    if let Some(id) = &session {
        let key = match &prompt {
            Some(p) => format!("{id}\0prompt\0{p}"),
            None => format!("{id}\0{}", call.verb.as_str()),
        };
        match state::seen_recently(layout, &key) {
            Ok(true) => return shaped(answer, call, None),
            Ok(false) => {}
            Err(e) => answer.problems.push(format!("cannot check for a duplicate call: {e}")),
        }
    }
    let text = match call.verb {
        verb if verb.records_only() => {
            let mut entry = spool::entry(call.agent.as_str(), verb, session.as_deref().unwrap_or(""), now(repo));
            entry.transcript_path = transcript_path(call.payload);
            entry.cwd = payload_cwd(call.payload).map(|p| p.display().to_string());
            entry.branch = Some(crate::board::current_branch(&layout.root));
            if session.is_none() {
                answer.problems.push("nothing spooled: without a session id no digest can find the session".into());
            } else if let Err(e) = spool::append(layout, &entry) {
                answer.problems.push(format!("cannot append to {}: {e}", spool::path(layout).display()));
            }
            None
        }
        HookVerb::SessionStart => {
            state::sweep_recent(layout);
            state::sweep_sessions(layout);
            answer.start_digest = spool::has_pending(layout);
            answer.sync_shared = super::shared::due(repo);
            let text = session_start(repo, call.agent, &mut answer.problems);
            if let Some(id) = &session
                && let Err(e) = state::save_started(layout, call.agent.as_str(), id, text.as_deref().unwrap_or(""))
            {
                answer.problems.push(format!("cannot keep what session-start gave: {e}"));
            }
            text
        }
        _ => match (prompt, &session) {
            (Some(p), Some(id)) => prompt_context(repo, call.agent, id, &p, &mut answer.problems),
            (None, _) => {
                answer.problems.push("the payload has no prompt".into());
                None
            }
            (Some(_), None) => None,
        },
    };
    shaped(answer, call, text)
}

fn now(repo: &Repo) -> String {
    repo.now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Puts `text` into the agent's output shape for adding context (docs/hooks.md): plain stdout for
/// Claude Code; `hookSpecificOutput.additionalContext` for Codex and Gemini CLI; `additionalContext`
/// for Copilot CLI; `additional_context` for Cursor; Cline's `{"cancel":false}`, with
/// `contextModification` when there is context, for every verb.
fn shaped(mut answer: Answer, call: &Call<'_>, text: Option<String>) -> Answer {
    let event = |claude: &'static str, gemini: &'static str| match call.verb {
        HookVerb::SessionStart => "SessionStart",
        _ if call.agent == Agent::Gemini => gemini,
        _ => claude,
    };
    answer.output = match (call.agent, text) {
        (Agent::Cline, text) => {
            let mut out = json!({"cancel": false});
            if let Some(t) = text {
                out["contextModification"] = Value::String(t);
            }
            Some(out.to_string())
        }
        (_, None) => None,
        (Agent::Claude, Some(t)) => Some(t),
        (Agent::Codex | Agent::Gemini, Some(t)) => Some(
            json!({"hookSpecificOutput": {"hookEventName": event("UserPromptSubmit", "BeforeAgent"), "additionalContext": t}})
                .to_string(),
        ),
        (Agent::Copilot, Some(t)) => Some(json!({"additionalContext": t}).to_string()),
        (Agent::Cursor, Some(t)) => Some(json!({"additional_context": t}).to_string()),
        (_, Some(_)) => None,
    };
    answer
}

/// Returns the block request of the file `agent` reads natively, when one carries kb's block: the
/// agent is in the setting `agents`, or a `context_targets` entry is its native block file.
fn native_request(repo: &Repo, agent: Agent) -> Option<BlockRequest> {
    let (file, _) = formats::block_file(agent);
    let key = |raw: &str| crate::paths::resolve_dots(&repo.layout.root.join(raw));
    if let Some(t) = repo.settings.context_targets.value.iter().find(|t| key(&t.path) == key(file)) {
        return Some(super::context::request_of(repo, t));
    }
    repo.settings
        .agents
        .value
        .contains(&agent)
        .then(|| super::context::request_of(repo, &crate::settings::TargetSpec::default()))
}

/// The request of the block `session-start` gives when no native file carries one: every layer.
fn whole_request() -> BlockRequest {
    BlockRequest { global: true, session: true, hot: true, board: true, ..BlockRequest::default() }
}

/// The layers the committed files leave out: a person's and a clone's own.
fn dynamic(kind: LayerKind) -> bool {
    matches!(kind, LayerKind::Global | LayerKind::Hot | LayerKind::Session | LayerKind::Board)
}

/// `session-start`'s context text (see the module doc), `None` when there is nothing to say.
/// The memory index comes from its cache while the folder is unchanged; when a memory it shows
/// was edited since, everything is read again.
fn session_start(repo: &Repo, agent: Agent, problems: &mut Vec<String>) -> Option<String> {
    let k = Knowledge::trusting(repo);
    let mut found = Vec::new();
    let (text, shown) = session_start_from(&k, agent, &mut found);
    if k.memories_unchanged(shown.iter().map(String::as_str)) {
        problems.extend(found);
        return text;
    }
    session_start_from(&Knowledge::read(repo), agent, problems).0
}

/// [`session_start`]'s text from `k`, and the files of the memories it shows.
fn session_start_from(k: &Knowledge<'_>, agent: Agent, problems: &mut Vec<String>) -> (Option<String>, Vec<String>) {
    let repo = k.repo();
    let native = native_request(repo, agent).is_some();
    let mut inputs = block::gather(k, &whole_request());
    let mut stale: Vec<String> = super::audit::last_stale(repo);
    for d in &inputs.stale {
        let line = stale_line(&d.message);
        if !stale.iter().any(|s| s.split(':').next() == line.split(':').next()) {
            stale.push(line);
        }
    }
    stale.truncate(STALE_WARNINGS);
    if native {
        inputs.layers.retain(|l| dynamic(l.kind));
        inputs.files.retain(|(kind, _)| *kind == crate::context::SectionKind::Global);
    }
    // Only the hot memories of the kept layers are shown (core context and learnings are in the
    // native file), but checking every memory the layers took costs no more than a few stats.
    let shown = std::mem::take(&mut inputs.memory_files);
    let pending = super::inbox::count(&repo.layout);
    let mut tail = String::new();
    if !stale.is_empty() {
        tail.push_str("\nStale knowledge (fix or forget it; `kb audit` lists all):\n");
        for s in &stale {
            tail.push_str(&format!("- {s}\n"));
        }
    }
    if pending > 0 {
        let (what, verb) = if pending == 1 { ("memory", "waits") } else { ("memories", "wait") };
        tail.push_str(&format!("\n{pending} proposed {what} {verb} for review: kb inbox\n"));
    }
    let layers = inputs.layers.clone();
    let built = block::assemble(inputs, None, false, false);
    let limit = SESSION_START_LIMIT.saturating_sub(tail.chars().count() + 2);
    let cap =
        Cap { limit, chars: true, label: format!("the session-start hook's {SESSION_START_LIMIT}-character limit") };
    let built = block::fit_to_cap(&layers, built, &cap, false);
    problems.extend(built.warnings.iter().filter(|w| w.message.contains("hook's")).map(|w| w.message.clone()));
    let body = built.text.unwrap_or_default();
    let text = format!("{}{}", body.trim_end(), tail);
    let text = text.trim();
    let text = (!text.is_empty()).then(|| crate::output::chars_prefix(text, SESSION_START_LIMIT).to_string());
    (text, shown)
}

/// Turns a stale warning of the block (`stale: memory 3 left out of the context block: REASONS
/// (…)`) into a line `memory 3: REASONS`.
fn stale_line(message: &str) -> String {
    let m = message.strip_prefix("stale: ").unwrap_or(message);
    for (sep, hint) in
        [(" left out of the context block: ", " (`kb audit`"), (" is kept in the context block, but ", " (fix")]
    {
        if let Some((what, rest)) = m.split_once(sep) {
            let reasons = rest.rsplit_once(hint).map_or(rest, |(r, _)| r);
            return format!("{what}: {reasons}");
        }
    }
    m.to_string()
}

/// The distinct stemmed content words of `text` (stop words left out).
fn terms(text: &str, stems: &mut tokens::Stems) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    tokens::each_token(text, |t| {
        if t.chars().count() > 1 && !tokens::is_stop_word(t) {
            out.insert(stems.stem(t).to_string());
        }
    });
    out
}

/// How many content words (stems) of an item the prompt shares: each word it holds counts 1, each
/// other word related to one of its words in recall's thesaurus half (as recall weighs them).
fn shared_words(item: &BTreeSet<String>, prompt: &BTreeSet<String>) -> f64 {
    let thesaurus = crate::search::thesaurus::shipped();
    item.iter()
        .map(|t| match prompt.contains(t) {
            true => 1.0,
            false if thesaurus.related(t).iter().any(|r| prompt.contains(r)) => {
                crate::search::thesaurus::RELATED_WEIGHT
            }
            false => 0.0,
        })
        .sum()
}

/// `prompt`'s context text: at most [`PROMPT_ITEMS`] items recall ranks for the prompt that share
/// two content words (a related word counting half: [`shared_words`]) or one salient token with it, are not in the block the agent already has,
/// and were not sent earlier in the session; a stale one with its warning. The memory index comes
/// from its cache while the folder is unchanged; when a memory picked was edited since,
/// everything is read again.
fn prompt_context(
    repo: &Repo,
    agent: Agent,
    session: &str,
    prompt: &str,
    problems: &mut Vec<String>,
) -> Option<String> {
    let prompt = crate::output::chars_prefix(prompt, 4_000);
    let mut stems = tokens::Stems::default();
    let asked = Asked { terms: terms(prompt, &mut stems), salient: crate::format::salient::tokens(prompt), prompt };
    if asked.terms.is_empty() && asked.salient.is_empty() {
        return None;
    }
    let sent = state::sent(&repo.layout, agent.as_str(), session);
    let k = Knowledge::trusting(repo);
    let given = Given { agent, session };
    let picked = pick(&k, given, &asked, &sent, &mut stems, problems)?;
    let picked = if k.memories_unchanged(picked.memory_files.iter().map(String::as_str)) {
        picked
    } else {
        pick(&Knowledge::read(repo), given, &asked, &sent, &mut stems, problems)?
    };
    if picked.lines.is_empty() {
        return None;
    }
    if let Err(e) = state::add_sent(&repo.layout, agent.as_str(), session, &picked.keys) {
        problems.push(format!("cannot record what was sent: {e}"));
    }
    if let Some(d) = crate::heat::record(&repo.layout, repo.now, &picked.accesses) {
        problems.push(d.message);
    }
    Some(format!("{PROMPT_HEADER}\n{}", picked.lines.join("\n")))
}

const PROMPT_HEADER: &str = "Relevant knowledge (kb):";

/// Whose prompt it is: the agent and its session.
#[derive(Clone, Copy)]
struct Given<'s> {
    agent: Agent,
    session: &'s str,
}

/// What a prompt asks: its text, its stemmed content words and its salient tokens.
struct Asked<'p> {
    prompt: &'p str,
    terms: BTreeSet<String>,
    salient: Vec<String>,
}

/// The items [`prompt_context`] picked from one view.
struct Picked {
    lines: Vec<String>,
    /// `store:id` of each, for the session's record of what was sent.
    keys: Vec<String>,
    accesses: Vec<crate::heat::Access>,
    /// The files of the memories picked.
    memory_files: Vec<String>,
}

/// Ranks the prompt against every store of `k` and picks the items to send (`None`: recall failed).
fn pick(
    k: &Knowledge<'_>,
    given: Given<'_>,
    asked: &Asked<'_>,
    sent: &BTreeSet<String>,
    stems: &mut tokens::Stems,
    problems: &mut Vec<String>,
) -> Option<Picked> {
    let req = super::recall::Request {
        query: asked.prompt.to_string(),
        max_results: 10,
        exact: false,
        sources: crate::kinds::Sources::of(Store::RECALL),
        origins: Default::default(),
        heat: false,
    };
    let report = match super::recall::recall(k, &req) {
        Ok(super::recall::RecallAnswer::Ranked(r)) => r,
        Ok(super::recall::RecallAnswer::Exact(_)) => return None,
        Err(e) => {
            problems.push(format!("recall failed: {e}"));
            return None;
        }
    };
    let mut loaded: Option<String> = None;
    let mut picked = Picked { lines: Vec::new(), keys: Vec::new(), accesses: Vec::new(), memory_files: Vec::new() };
    let mut size = PROMPT_HEADER.chars().count();
    for f in report.found() {
        if picked.lines.len() == PROMPT_ITEMS {
            break;
        }
        let key = format!("{}:{}", f.store.as_str(), f.id);
        if sent.contains(&key) {
            continue;
        }
        let shared = shared_words(&terms(&f.text, stems), &asked.terms);
        let salient_shared = !asked.salient.is_empty() && {
            let (_, only_in_prompt) = crate::format::salient::differences(&f.text, asked.prompt);
            only_in_prompt.len() < asked.salient.len()
        };
        if shared < 2.0 && !salient_shared {
            continue;
        }
        let loaded = loaded.get_or_insert_with(|| loaded_text(k, given));
        let text = one_line(&f.text);
        if loaded.contains(crate::output::chars_prefix(&text, 120)) {
            continue;
        }
        let citations: Vec<&str> = f.citations.iter().map(String::as_str).collect();
        let stale = k.stale().problems(&f.text, &citations);
        let mut line = format!("- [{}] {}", f.label, crate::output::chars_prefix(&text, 500));
        if !stale.is_empty() {
            let why: Vec<&str> = stale.iter().map(|p| p.message.as_str()).collect();
            line.push_str(&format!(" (stale: {}; check before relying on it)", why.join("; ")));
        }
        let n = line.chars().count() + 1;
        if size + n > PROMPT_LIMIT {
            continue;
        }
        size += n;
        if f.store == Store::Md
            && let (Ok(index), Ok(id)) = (k.memories(), f.id.parse::<u64>())
        {
            picked.memory_files.extend(index.by_id(id).iter().map(|m| m.file_name.to_string()));
        }
        if matches!(f.store, Store::Md | Store::Copilot) {
            picked.accesses.push(crate::heat::Access { id: f.id.clone(), store: f.store });
        }
        picked.lines.push(line);
        picked.keys.push(key);
    }
    Some(picked)
}

/// What the agent has loaded, on one line: its native file as it is on disk (when one carries
/// kb's block) and what `session-start` gave it in this session; when neither is known (no
/// native file, no `session-start` in this session), the whole block `session-start` would give.
fn loaded_text(k: &Knowledge<'_>, given: Given<'_>) -> String {
    use std::io::Read;
    let repo = k.repo();
    let mut text = String::new();
    if native_request(repo, given.agent).is_some() {
        let path = repo.layout.root.join(formats::block_file(given.agent).0);
        let mut bytes = Vec::new();
        if std::fs::File::open(path).and_then(|f| f.take(1 << 20).read_to_end(&mut bytes)).is_ok() {
            text.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    match state::started(&repo.layout, given.agent.as_str(), given.session) {
        Some(started) => text.push_str(&started),
        None if text.is_empty() => text = crate::context::build(k, &whole_request()).text.unwrap_or_default(),
        None => {}
    }
    one_line(&text)
}

/// `text` with its whitespace runs made single spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_related_word_counts_half_a_shared_one() {
        let mut stems = tokens::Stems::default();
        let prompt = terms("how do we deploy once the tests pass", &mut stems);
        assert_eq!(prompt.len(), 3, "{prompt:?}");
        let item = terms("Releases are published after the suite passes", &mut stems);
        assert_eq!(shared_words(&item, &prompt), 2.5, "pass 1, release, publish and suite 0.5 each");
        assert_eq!(shared_words(&terms("The suite passes", &mut stems), &prompt), 1.5);
        assert_eq!(shared_words(&terms("Lunch is at noon", &mut stems), &prompt), 0.0);
    }

    #[test]
    fn payload_fields_of_every_agent() {
        let claude = json!({"session_id": "s1", "cwd": "/r", "transcript_path": "/t.jsonl", "prompt": "hi"});
        assert_eq!(session_id(&claude).as_deref(), Some("s1"));
        assert_eq!(payload_cwd(&claude), Some(PathBuf::from("/r")));
        assert_eq!(transcript_path(&claude).as_deref(), Some("/t.jsonl"));
        assert_eq!(prompt_text(&claude).as_deref(), Some("hi"));
        let copilot = json!({"sessionId": "c1", "cwd": "/r", "transcriptPath": "/e.jsonl"});
        assert_eq!(session_id(&copilot).as_deref(), Some("c1"));
        assert_eq!(transcript_path(&copilot).as_deref(), Some("/e.jsonl"));
        let cursor = json!({"conversation_id": "k1", "workspace_roots": ["/w", "/x"]});
        assert_eq!((session_id(&cursor).as_deref(), payload_cwd(&cursor)), (Some("k1"), Some(PathBuf::from("/w"))));
        let cline = json!({"taskId": "t1", "workspaceRoots": ["/c"], "userPromptSubmit": {"prompt": "how?"}});
        assert_eq!((session_id(&cline).as_deref(), payload_cwd(&cline)), (Some("t1"), Some(PathBuf::from("/c"))));
        assert_eq!(prompt_text(&cline).as_deref(), Some("how?"));
        assert_eq!(session_id(&json!({"session_id": "  "})), None);
    }

    #[test]
    fn stale_warnings_become_short_lines() {
        let left = "stale: memory 3 left out of the context block: `src/old.rs` matches no file (`kb audit` checks it; fix or forget it)";
        assert_eq!(stale_line(left), "memory 3: `src/old.rs` matches no file");
        let kept =
            "stale: decision 2 is kept in the context block, but `make lint`: no such target (fix the reference)";
        assert_eq!(stale_line(kept), "decision 2: `make lint`: no such target");
    }

    #[test]
    fn terms_leave_out_stop_words() {
        let mut stems = tokens::Stems::default();
        let t = terms("How do we run the tests?", &mut stems);
        assert_eq!(t.into_iter().collect::<Vec<_>>(), ["run", "test"]);
        assert!(terms("thanks, that's great!", &mut stems).iter().all(|t| t == "s"), "small talk has no terms");
    }
}
