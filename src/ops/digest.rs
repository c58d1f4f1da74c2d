//! `kb inbox digest`: from a finished session to a checkpoint and proposals (docs/hooks.md, The
//! digest). For each spooled session no digest has read since its last hook: read its transcript
//! with that agent's reader, write the local checkpoint, add one paragraph to the open kb session,
//! and propose what the user's own words and the commands that worked say, through the inbox (the
//! secret filter and dedup on each). Nothing enters the store without a person's `kb inbox accept`.

use super::inbox::{Proposal, ProposalKind, Proposed};
use super::{Report, View};
use crate::capture::checkpoint::{self, Checkpoint};
use crate::capture::transcript::{self, Outcome, Read, Transcript};
use crate::hooks::{spool, state};
use crate::kinds::DecisionKind;
use crate::repo::Repo;
use crate::settings::Agent;
use anyhow::Result;
use serde::Serialize;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

/// Only a session with at least this many user turns is mined for proposals.
const MIN_TURNS: usize = 3;
/// How long a summarizer may take for one session.
const SUMMARIZER_TIMEOUT: Duration = Duration::from_secs(60);
/// The most a summarizer may answer.
const SUMMARIZER_LIMIT: usize = 1 << 20;
/// Digested sessions last seen longer ago than this leave the spool.
const SPOOL_DAYS: i64 = 30;

/// What to digest.
#[derive(Debug, Default, Clone)]
pub struct Request {
    pub session: Option<String>,
    pub agent: Option<Agent>,
    pub summarizer: Option<String>,
}

#[derive(Debug, Default, Serialize)]
pub struct Skipped {
    pub unknown_lines: usize,
    pub bad_summarizer_lines: usize,
}

/// One digested session (JSON: `{"agent","session_id","checkpoint","proposals":[ID...],"skipped"}`).
#[derive(Debug, Serialize)]
pub struct Digested {
    pub agent: String,
    pub session_id: String,
    pub checkpoint: String,
    pub proposals: Vec<String>,
    pub skipped: Skipped,
    #[serde(skip)]
    pub turns: usize,
}

#[derive(Debug, Default, Serialize)]
pub struct DigestReport {
    pub sessions: Vec<Digested>,
    #[serde(skip)]
    problems: Vec<String>,
}

impl DigestReport {
    /// The problems met (also written to `hooks.log`).
    pub fn problems(&self) -> &[String] {
        &self.problems
    }
}

/// Digests the spooled sessions `req` names (default: those not yet digested).
pub fn digest(repo: &Repo, req: &Request) -> Result<DigestReport> {
    let layout = &repo.layout;
    let dir = crate::hooks::state_dir(layout)?;
    // One digest at a time: a second one started by another session-start waits its turn.
    let _held = crate::fsio::lock(&dir.join("digest.lock"), Duration::from_secs(30))?;
    let sessions = spool::sessions(&spool::read(layout)?);
    let mut report = DigestReport::default();
    let at = repo.now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    for s in sessions {
        let wanted = match (&req.session, req.agent) {
            (Some(id), _) => s.last.session_id == *id || s.last.session_id.starts_with(id.as_str()),
            (None, _) => !s.digested,
        } && req.agent.is_none_or(|a| a.as_str() == s.last.agent);
        if !wanted {
            continue;
        }
        let Some(agent) = Agent::parse(&s.last.agent) else {
            report.problems.push(format!("spool: unknown agent {:?}", s.last.agent));
            continue;
        };
        match one(repo, req, agent, &s, &mut report.problems) {
            Ok(d) => report.sessions.push(d),
            Err(e) => report.problems.push(format!("session {}: {e:#}", s.last.session_id)),
        }
        let mut mark = spool::entry(agent.as_str(), crate::kinds::HookVerb::Stop, &s.last.session_id, at.clone());
        mark.event = spool::DIGESTED.to_string();
        if let Err(e) = spool::append(layout, &mark) {
            report.problems.push(format!("cannot mark session {} digested: {e}", s.last.session_id));
        }
    }
    let keep_after = (repo.now - chrono::Duration::days(SPOOL_DAYS)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    if let Err(e) = spool::compact(layout, &keep_after) {
        report.problems.push(format!("cannot compact the spool: {e}"));
    }
    for p in &report.problems {
        state::log(layout, &at, "-", "digest", p);
    }
    Ok(report)
}

/// Digests one session.
fn one(repo: &Repo, req: &Request, agent: Agent, s: &spool::Spooled, problems: &mut Vec<String>) -> Result<Digested> {
    let id = &s.last.session_id;
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    let path = s
        .last
        .transcript_path
        .as_deref()
        .map(PathBuf::from)
        .or_else(|| transcript::default_path(agent, &home, id))
        .or_else(|| (agent == Agent::Cursor).then(|| transcript::cursor_path(&home, &repo.layout.root, id)).flatten());
    let transcript = match &path {
        Some(p) => match transcript::read(agent, p) {
            Read::Read(t) => t,
            Read::NotRead(why) => {
                problems.push(format!("transcript {} not read: {why}", p.display()));
                Transcript::default()
            }
        },
        None => Transcript::default(),
    };
    let meta = checkpoint::Meta {
        started: crate::format::time::parse(&s.first_at).ok().map(|t| t.with_timezone(&chrono::Utc)),
        ended: crate::format::time::parse(&s.last.at).ok().map(|t| t.with_timezone(&chrono::Utc)),
        branch: s.last.branch.clone(),
    };
    let cp: Checkpoint = checkpoint::from_transcript(agent, id, &transcript, path.as_deref(), meta);
    let written = checkpoint::write(&repo.layout, &cp)?;
    append_to_session(repo, agent, id, &transcript, problems);
    let by = format!("agent:{}", agent.as_str());
    let mut candidates = Vec::new();
    if transcript.requests.len() >= MIN_TURNS {
        candidates.extend(signals(&transcript.requests));
        candidates.extend(commands_that_worked(repo, &transcript));
    }
    let mut skipped = Skipped { unknown_lines: transcript.unknown_lines, bad_summarizer_lines: 0 };
    let summarizer = req.summarizer.clone().or_else(|| repo.settings.summarizer.value.clone());
    if let Some(cmd) = summarizer.filter(|_| transcript.requests.len() >= MIN_TURNS) {
        candidates.extend(summarized(repo, agent, id, &transcript, &cmd, &mut skipped, problems));
    }
    let mut ids = Vec::new();
    for c in candidates {
        let proposal = Proposal {
            kind: c.kind,
            content: c.content,
            proposed_by: by.clone(),
            session: Some(id.clone()),
            reason: Some(c.reason),
            tags: c.tags,
            source: Some("detected".into()),
            subject: None,
            citations: Vec::new(),
            decision_type: (c.kind == ProposalKind::Decision).then_some(DecisionKind::Process),
        };
        match super::inbox::propose(repo, proposal) {
            Ok(Proposed::New { id, .. }) => ids.push(id),
            Ok(_) => {}
            Err(e) => problems.push(format!("a proposal was refused: {e:#}")),
        }
    }
    Ok(Digested {
        agent: agent.as_str().to_string(),
        session_id: id.clone(),
        checkpoint: written.display().to_string(),
        proposals: ids,
        skipped,
        turns: transcript.requests.len(),
    })
}

/// Adds `Claude session 1a2b3c4d, 14 turns: changed a, b; ran cargo test (ok)` to the open kb
/// session's running summary, once.
fn append_to_session(repo: &Repo, agent: Agent, id: &str, t: &Transcript, problems: &mut Vec<String>) {
    let (open, _) = crate::session::current(&repo.layout);
    let Some(open) = open else { return };
    let mut parts = Vec::new();
    if !t.files.is_empty() {
        let mut files: Vec<&str> = t.files.iter().take(8).map(String::as_str).collect();
        if t.files.len() > 8 {
            files.push("…");
        }
        parts.push(format!("changed {}", files.join(", ")));
    }
    if !t.commands.is_empty() {
        let ran: Vec<String> =
            t.commands.iter().rev().take(5).rev().map(|c| format!("{} ({})", c.command, c.outcome)).collect();
        parts.push(format!("ran {}", ran.join(", ")));
    }
    let name = agent_name(agent);
    let short: String = id.chars().take(8).collect();
    let turns = t.requests.len();
    let head = format!("{name} session {short}, {turns} turn{}", if turns == 1 { "" } else { "s" });
    let paragraph = if parts.is_empty() { format!("{head}.") } else { format!("{head}: {}.", parts.join("; ")) };
    if open.session.summary.contains(&head) {
        return;
    }
    if let Err(e) = super::session::update(repo, &paragraph, true, true) {
        problems.push(format!("cannot add to the open session: {e:#}"));
    }
}

/// The agent's name in a sentence.
fn agent_name(agent: Agent) -> &'static str {
    match agent {
        Agent::Claude => "Claude",
        Agent::Codex => "Codex",
        Agent::Copilot => "Copilot",
        Agent::Cursor => "Cursor",
        Agent::Gemini => "Gemini",
        Agent::Cline => "Cline",
        Agent::Windsurf => "Windsurf",
        Agent::Kiro => "Kiro",
    }
}

/// A proposal before the inbox screens it.
#[derive(Debug, Clone, PartialEq)]
struct Candidate {
    kind: ProposalKind,
    content: String,
    tags: Vec<String>,
    reason: String,
}

/// The signal phrases of the user's own sentences (seed 002's table), by signal.
const SIGNALS: [(&str, &[&str]); 4] = [
    ("preference", &["i prefer ", "i like ", "i use "]),
    ("correction", &["actually", "no wait", "that's wrong", "that is wrong", "i meant "]),
    ("decision", &["we decided ", "we chose ", "we use "]),
    ("pattern", &["we always ", "never ", "whenever we "]),
];

/// Words that make a sentence speculation or a question, not a fact to keep.
const TENTATIVE: [&str; 12] = [
    "maybe",
    "i think",
    "could we",
    "should we",
    "perhaps",
    "might ",
    "probably",
    "not sure",
    "i guess",
    "i wonder",
    "what if",
    "let's try",
];

/// Question openers: a sentence that starts with one asks.
const QUESTIONS: [&str; 16] = [
    "what ", "how ", "why ", "when ", "where ", "who ", "which ", "can ", "could ", "should ", "would ", "is ", "are ",
    "do ", "does ", "did ",
];

/// The memory and decision proposals the user's own sentences carry.
fn signals(requests: &[String]) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    for request in requests {
        for sentence in sentences(request) {
            let lower = sentence.to_lowercase();
            let words = lower.split_whitespace().count();
            if !(4..=60).contains(&words) || sentence.ends_with('?') || QUESTIONS.iter().any(|q| lower.starts_with(q)) {
                continue;
            }
            if TENTATIVE.iter().any(|t| lower.contains(t)) {
                continue;
            }
            let padded = format!(" {lower}");
            let Some((signal, _)) = SIGNALS.iter().find(|(_, phrases)| {
                phrases.iter().any(|p| {
                    // "never" counts at the start of a sentence or after "we"; "actually" anywhere.
                    if *p == "never " {
                        lower.starts_with(p) || padded.contains(" we never ")
                    } else {
                        padded.contains(&format!(" {p}"))
                    }
                })
            }) else {
                continue;
            };
            let kind = if *signal == "decision" { ProposalKind::Decision } else { ProposalKind::Memory };
            let content = fact_of(&sentence);
            if out.iter().any(|c| c.content == content) {
                continue;
            }
            out.push(Candidate {
                kind,
                content,
                tags: vec![signal.to_string()],
                reason: format!("the user said it ({signal})"),
            });
        }
    }
    out
}

/// Splits text into sentences at `.`, `!`, `?` followed by a space or the end, and at line ends;
/// code spans and lines of code are not sentences of the user's.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("```") || line.starts_with('>') || line.starts_with('$') {
            continue;
        }
        let mut start = 0;
        let chars: Vec<(usize, char)> = line.char_indices().collect();
        for (k, &(i, c)) in chars.iter().enumerate() {
            let next_is_space = chars.get(k + 1).is_none_or(|&(_, n)| n.is_whitespace());
            if matches!(c, '.' | '!' | '?') && next_is_space {
                out.push(line[start..=i].trim().to_string());
                start = i + c.len_utf8();
            }
        }
        if start < line.len() {
            out.push(line[start..].trim().to_string());
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// A sentence as a fact: a leading "actually," or "no wait," dropped, its first letter capital,
/// ending with a full stop.
fn fact_of(sentence: &str) -> String {
    let mut s = sentence.trim();
    for lead in
        ["actually,", "actually", "no wait,", "no wait", "no,", "and ", "so ", "but ", "also ", "ok, ", "okay, "]
    {
        if s.len() >= lead.len() && s[..lead.len()].eq_ignore_ascii_case(lead) {
            s = s[lead.len()..].trim_start();
        }
    }
    let s = s.trim_end_matches(['.', '!']);
    let mut chars = s.chars();
    let mut out: String = chars.next().map(|c| c.to_uppercase().collect::<String>()).unwrap_or_default();
    out.push_str(chars.as_str());
    out.push('.');
    out
}

/// The build, test, lint and format tools whose commands are worth remembering.
const TOOLS: [&str; 17] = [
    "cargo",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "make",
    "just",
    "pytest",
    "go",
    "uv",
    "tox",
    "gradle",
    "./gradlew",
    "mvn",
    "dotnet",
    "python",
    "python3",
];

/// What kind of command `cmd` is (`testing`, `build`, `lint`, `format`), if it is one of a build
/// tool's.
fn command_kind(cmd: &str) -> Option<&'static str> {
    let words: Vec<&str> = cmd.split_whitespace().filter(|w| !w.contains('=') || w.starts_with('-')).collect();
    let tool = *words.first()?;
    if !TOOLS.contains(&tool) || cmd.contains(['|', ';', '>', '<']) || cmd.contains("&&") {
        return None;
    }
    let rest = words[1..].join(" ");
    let has = |w: &[&str]| w.iter().any(|x| rest.contains(x) || tool.contains(x));
    if (tool == "python" || tool == "python3") && !rest.starts_with("-m pytest") {
        return None;
    }
    if has(&["clippy", "lint", "eslint", "ruff", "vet", "flake8", "mypy"]) {
        Some("lint")
    } else if has(&["fmt", "format", "prettier", "black"]) {
        Some("format")
    } else if has(&["test", "nextest", "pytest", "tox"]) {
        Some("testing")
    } else if has(&["build", "compile", "install", "package", "check"]) || tool == "make" || tool == "just" {
        Some("build")
    } else {
        None
    }
}

/// The build, test, lint or format commands that ended `ok` after a failed attempt of the same
/// tool, or that the user named, and that no memory or record names yet.
fn commands_that_worked(repo: &Repo, t: &Transcript) -> Vec<Candidate> {
    let k = super::Knowledge::read(repo);
    let known = |cmd: &str| -> bool {
        let in_memories = k.memories().is_ok_and(|i| i.memories().any(|m| m.content.contains(cmd)));
        let in_records =
            k.records().is_ok_and(|f| crate::copilot::Records::parse(f).iter().any(|r| r.fact.contains(cmd)));
        in_memories || in_records
    };
    let asked = t.requests.join("\n");
    let mut out: Vec<Candidate> = Vec::new();
    for (i, ran) in t.commands.iter().enumerate() {
        let cmd = ran.command.trim();
        let Some(kind) = command_kind(cmd) else { continue };
        if ran.outcome != Outcome::Ok {
            continue;
        }
        let tool = cmd.split_whitespace().next().unwrap_or_default();
        let failed_before = t.commands[..i]
            .iter()
            .any(|c| matches!(c.outcome, Outcome::Failed(_)) && c.command.split_whitespace().next() == Some(tool));
        let named = asked.contains(cmd);
        if !(failed_before || named) || known(cmd) || out.iter().any(|c| c.content.contains(&format!("`{cmd}`"))) {
            continue;
        }
        let label = match kind {
            "lint" => "Lint",
            "format" => "Format",
            _ => "Build and test",
        };
        let why = if failed_before { "it worked after a failed attempt" } else { "the user named it" };
        out.push(Candidate {
            kind: ProposalKind::Memory,
            content: format!("{label}: `{cmd}`"),
            tags: vec!["command".into(), kind.into()],
            reason: format!("a {kind} command that worked: {why}"),
        });
    }
    out
}

/// Runs the summarizer on one session (the rem-agent's contract: add, never delete) and returns
/// its memory and decision proposals; its board and session lines are written here.
fn summarized(
    repo: &Repo,
    agent: Agent,
    id: &str,
    t: &Transcript,
    cmd: &str,
    skipped: &mut Skipped,
    problems: &mut Vec<String>,
) -> Vec<Candidate> {
    let existing = existing_items(repo, &t.requests.join("\n"));
    let commands: Vec<serde_json::Value> = t
        .commands
        .iter()
        .map(|c| serde_json::json!({"command": c.command, "outcome": c.outcome.to_string()}))
        .collect();
    let requests: Vec<String> = t.requests.iter().map(|r| crate::secrets::redact(r)).collect();
    let input = serde_json::json!({
        "agent": agent.as_str(), "session_id": id, "requests": requests, "files": t.files,
        "commands": commands, "errors": t.errors, "existing": existing,
    });
    let input = serde_json::to_vec(&input).unwrap_or_default();
    let timeout = repo.env.summarizer_timeout.unwrap_or(SUMMARIZER_TIMEOUT);
    let out = match super::consolidate::run_summarizer(cmd, input, timeout, &repo.layout.root, SUMMARIZER_LIMIT) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(why) => {
            problems.push(format!("the summarizer {why}"));
            return Vec::new();
        }
    };
    let mut found = Vec::new();
    let branch = crate::board::current_branch(&repo.layout.root);
    for line in out.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let bad = match line.split_once(':') {
            Some(("memory", text)) if !text.trim().is_empty() => {
                found.push(candidate(ProposalKind::Memory, text));
                false
            }
            Some(("decision", text)) if !text.trim().is_empty() => {
                found.push(candidate(ProposalKind::Decision, text));
                false
            }
            Some(("session", text)) if !text.trim().is_empty() => {
                if crate::session::current(&repo.layout).0.is_some()
                    && let Err(e) = super::session::update(repo, text.trim(), true, true)
                {
                    problems.push(format!("summarizer session line not added: {e:#}"));
                }
                false
            }
            Some((head, rest)) if head.starts_with("board ") => match rest.split_once('|') {
                Some((description, content)) if !content.trim().is_empty() => {
                    let name = head["board ".len()..].trim();
                    let added = super::board::add(
                        repo,
                        &branch,
                        crate::kinds::Src::Agent,
                        name,
                        description.trim(),
                        content.trim(),
                        true,
                    );
                    if let Err(e) = added {
                        problems.push(format!("summarizer board line not added: {e:#}"));
                    }
                    false
                }
                _ => true,
            },
            _ => true,
        };
        if bad {
            skipped.bad_summarizer_lines += 1;
        }
    }
    found
}

fn candidate(kind: ProposalKind, text: &str) -> Candidate {
    Candidate { kind, content: text.trim().to_string(), tags: Vec::new(), reason: "the summarizer proposed it".into() }
}

/// The 20 items recall ranks highest for the session's requests: `{"id","content"}`.
fn existing_items(repo: &Repo, query: &str) -> Vec<serde_json::Value> {
    let k = super::Knowledge::read(repo);
    let req = super::recall::Request {
        query: crate::output::chars_prefix(query, 4_000).to_string(),
        max_results: 20,
        exact: false,
        sources: crate::kinds::Sources::of(crate::kinds::Store::RECALL),
        origins: Default::default(),
        heat: false,
    };
    match super::recall::recall(&k, &req) {
        Ok(super::recall::RecallAnswer::Ranked(r)) => {
            r.found().into_iter().map(|f| serde_json::json!({"id": f.label, "content": f.text})).collect()
        }
        _ => Vec::new(),
    }
}

impl Report for DigestReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        if self.sessions.is_empty() {
            return writeln!(w, "Nothing to digest: every spooled session was read.");
        }
        for s in &self.sessions {
            let short: String = s.session_id.chars().take(8).collect();
            writeln!(
                w,
                "{} session {short}: {} turns, checkpoint {}",
                s.agent,
                s.turns,
                v.clean(&v.rel(std::path::Path::new(&s.checkpoint)))
            )?;
            match s.proposals.len() {
                0 => writeln!(w, "  no proposals")?,
                n => writeln!(w, "  {n} proposed: {} (review with kb inbox)", s.proposals.join(", "))?,
            }
            if s.skipped.unknown_lines > 0 {
                writeln!(w, "  {} transcript lines kb does not know were skipped", s.skipped.unknown_lines)?;
            }
            if s.skipped.bad_summarizer_lines > 0 {
                writeln!(w, "  {} summarizer lines were not understood", s.skipped.bad_summarizer_lines)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_sentences_and_their_negative_guidance() {
        let requests = vec![
            "I prefer tabs over spaces in the Makefile. Can you fix the build?".to_string(),
            "Actually, we use cargo nextest, not cargo test".to_string(),
            "We decided to keep the API versioned under /v2.".to_string(),
            "Should we use sqlite for the cache?".to_string(),
            "Maybe we always want a changelog line, I think".to_string(),
            "Never push straight to main!".to_string(),
            "I've never seen this error before".to_string(),
        ];
        let got: Vec<(ProposalKind, String, String)> =
            signals(&requests).into_iter().map(|c| (c.kind, c.content, c.tags[0].clone())).collect();
        assert_eq!(
            got,
            vec![
                (ProposalKind::Memory, "I prefer tabs over spaces in the Makefile.".into(), "preference".into()),
                (ProposalKind::Memory, "We use cargo nextest, not cargo test.".into(), "correction".into()),
                (ProposalKind::Decision, "We decided to keep the API versioned under /v2.".into(), "decision".into()),
                (ProposalKind::Memory, "Never push straight to main.".into(), "pattern".into()),
            ]
        );
    }

    #[test]
    fn build_and_test_commands_are_recognised() {
        assert_eq!(command_kind("cargo nextest run"), Some("testing"));
        assert_eq!(command_kind("cargo clippy --all-targets"), Some("lint"));
        assert_eq!(command_kind("cargo fmt --check"), Some("format"));
        assert_eq!(command_kind("npm run build"), Some("build"));
        assert_eq!(command_kind("python -m pytest -q"), Some("testing"));
        assert_eq!(command_kind("python script.py"), None);
        assert_eq!(command_kind("ls -la"), None);
        assert_eq!(command_kind("cargo test | tee log"), None);
        assert_eq!(command_kind("cargo add serde"), None);
    }
}
