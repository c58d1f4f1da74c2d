//! The MCP tools' work: each tool runs the same operation as its CLI command (`crate::ops`) and
//! returns the report's human text and its JSON document, so the two cannot drift.
//!
//! - `save_memory`: `kb save TEXT -t TAG... [--type T] [--importance I] [--agent NAME]`;
//!   `store_memory`: `kb save --store copilot ...`;
//! - `recall_memory`: `kb recall QUERY -n N [--store S]`; `list_memories`: `kb list [--store S]
//!   [--type T] [--agent NAME]`, as a page of at most `limit` items with whole first lines;
//! - `get_memory`: `kb show ID`, or `kb decision show N` for `decision:N`;
//! - `forget_memory`: `kb forget ID`;
//! - `update_memory`: `kb update ID TEXT`, for what an agent wrote;
//! - `propose_decision`: `kb decision add TEXT --type T`, but `status: proposed`;
//! - `update_session`: `kb session update TEXT [--append]`;
//! - `vote_memory`: `kb vote ID up|down --reason R`, or the record named by its exact fact;
//! - the context resource: `kb context`'s block.
//!
//! Secrets (docs/mcp.md, Secrets are redacted, not refused): an agent cannot pass `--redact`, so
//! every tool that writes stores a secret as `[REDACTED:<rule>]` instead of refusing it, and its
//! result says which rules fired: `"redacted":[RULE...]` in the JSON and a line in the text. No
//! message tells the agent to use `--redact` ([`error_message`]).
//!
//! Nothing here prints to stdout, which is the protocol: diagnostics (a skipped file) go to
//! stderr, as the CLI's do.

use crate::error::{Diagnostic, KbError};
use crate::kinds::{DecisionKind, Direction, Importance, MemoryType, Sources, Store};
use crate::knowledge::warm::{self, Warm};
use crate::ops::inbox::ProposalKind;
use crate::ops::save::{RecordRequest, SaveRequest};
use crate::ops::vote::VoteTarget;
use crate::ops::{self, Knowledge, Report, View};
use crate::output::Style;
use crate::paths::Layout;
use crate::settings::AgentWrites;
use anyhow::Result;
use chrono::{DateTime, Utc};
use serde_json::Value;

/// What a tool returns on success: the CLI's text and the CLI's JSON document.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub text: String,
    pub json: Value,
}

/// One repository as the server sees it: the root resolved once at start, the clock, and the
/// style of stderr warnings. Settings are read again on every call, since the files may change
/// while the server runs.
#[derive(Debug, Clone)]
pub struct Server {
    pub layout: Layout,
    /// Whether the root was given or found; without one, the tools that write refuse.
    pub found: bool,
    /// A pinned clock (`KB_NOW`), else the wall clock at each call.
    pub pinned_now: Option<DateTime<Utc>>,
    /// Only its stderr half is used: stdout is the protocol.
    pub style: Style,
    /// Whether this process has shown the board yet: its first board request counts one more
    /// session that saw every item.
    pub board_seen: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// The process environment, read once at start.
    pub env: crate::settings::Environment,
    /// The client's name from `initialize` (`clientInfo.name`): what the server writes as the
    /// author (`created_by: agent:NAME`) of what it saves.
    pub client_name: std::sync::Arc<std::sync::OnceLock<String>>,
    /// What the server holds between requests, kept fresh from file events (`knowledge::warm`).
    pub warm: std::sync::Arc<std::sync::Mutex<Warm>>,
    /// The root folder's device and inode at start: a write checks the folder at the root's path
    /// is still that one (renamed or deleted while the server runs, it is not).
    root_id: Option<(u64, u64)>,
}

/// Returns the device and inode of the folder at `path`.
fn folder_id(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().filter(|m| m.is_dir()).map(|m| (m.dev(), m.ino()))
}

impl Server {
    /// Returns the server of the repository at `layout`, holding nothing yet.
    pub fn new(
        layout: Layout,
        found: bool,
        pinned_now: Option<DateTime<Utc>>,
        style: Style,
        env: crate::settings::Environment,
    ) -> Server {
        let warm = std::sync::Arc::new(std::sync::Mutex::new(Warm::new(layout.clone(), env.clone())));
        let root_id = folder_id(&layout.root);
        Server {
            root_id,
            layout,
            found,
            pinned_now,
            style,
            board_seen: Default::default(),
            env,
            client_name: Default::default(),
            warm,
        }
    }

    /// Runs one tool's work, marking what its writes changed in what the server holds.
    pub fn tool<R>(&self, f: impl FnOnce() -> R) -> R {
        warm::write(&self.warm, f)
    }
    /// Opens the repository for a tool that writes: refused without a root.
    fn repo_to_write(&self) -> Result<crate::repo::Repo> {
        if !self.found {
            anyhow::bail!("{}; start kb mcp inside a repository or pass --root", crate::paths::NO_ROOT);
        }
        // A save into a renamed repository's old path would create it anew, outside any repository.
        if self.root_id.is_some() && folder_id(&self.layout.root) != self.root_id {
            let why = format!(
                "the repository folder {} was renamed, moved or deleted while kb mcp ran; nothing was written: \
                 restart kb mcp in the repository's new place",
                self.layout.root.display()
            );
            return Err(crate::error::KbError::refused("write", why).into());
        }
        self.repo()
    }

    /// Opens the repository for one call: every change it makes is an agent's.
    fn repo(&self) -> Result<crate::repo::Repo> {
        Ok(crate::repo::Repo::open(self.layout.clone(), self.now(), self.call_env())?)
    }

    /// Returns what the server holds, brought up to date with the changes seen so far, and the
    /// repository for one call that reads it.
    fn held(&self) -> Result<(std::sync::MutexGuard<'_, Warm>, crate::repo::Repo)> {
        let mut warm = warm::lock(&self.warm);
        let repo = warm.repo(self.now(), self.call_env())?;
        Ok((warm, repo))
    }

    /// Runs `f` over what the server holds, lent as one request's view of the knowledge (read
    /// from the files when the server holds nothing yet).
    fn read<R>(&self, f: impl FnOnce(&Knowledge<'_>) -> Result<R>) -> Result<R> {
        let (warm, repo) = self.held()?;
        match warm.knowledge(&repo) {
            Some(k) => f(&k),
            None => f(&Knowledge::read(&repo)),
        }
    }

    /// The environment of one call: every change it makes is an agent's.
    fn call_env(&self) -> crate::settings::Environment {
        let actor = crate::provenance::Actor::agent(self.client_name.get().map(String::as_str));
        crate::settings::Environment { actor, ..self.env.clone() }
    }

    fn now(&self) -> DateTime<Utc> {
        self.pinned_now.unwrap_or_else(crate::format::time::now)
    }

    /// Returns a report as a tool's reply: its text as the CLI prints it into a pipe (no colour,
    /// no escaping) and its JSON; its diagnostics go to stderr. When the JSON lists redacted
    /// secret rules (a save's `"redacted"`), the text says so too.
    fn reply(&self, report: &impl Report) -> Result<Reply> {
        let mut reply = self.render(report)?;
        note_redacted(&mut reply);
        Ok(reply)
    }

    /// Returns a write's reply with the secret rules it redacted: `"redacted":[RULE...]` in the
    /// JSON (for reports whose CLI JSON has no such key) and a line in the text.
    fn written(&self, report: &impl Report, redacted: &[&'static str]) -> Result<Reply> {
        let mut reply = self.render(report)?;
        if let Value::Object(map) = &mut reply.json {
            map.insert("redacted".into(), Value::from(redacted.to_vec()));
        }
        note_redacted(&mut reply);
        Ok(reply)
    }

    /// Returns a report's text and JSON, as [`Server::reply`] describes.
    fn render(&self, report: &impl Report) -> Result<Reply> {
        self.warn(report.diagnostics());
        let view = View {
            style: Style { color_out: false, sanitize: false, ..self.style },
            root: self.layout.root.clone(),
            agent: true,
        };
        let mut buf = Vec::new();
        report.render(&view, &mut buf)?;
        let mut text = String::from_utf8(buf)?;
        text.truncate(text.trim_end_matches('\n').len());
        Ok(Reply { text, json: serde_json::to_value(report)? })
    }

    fn warn(&self, diagnostics: &[Diagnostic]) {
        for d in diagnostics {
            self.style.diagnostic(d, |p| ops::rel(&self.layout.root, p).into_owned());
        }
    }

    /// `save_memory`. `memory_type` and `importance` are the tool's strings, checked here so
    /// that a bad one is a tool error naming it (as a bad agent name is, from the store).
    pub fn save(
        &self,
        content: String,
        tags: Vec<String>,
        memory_type: Option<&str>,
        importance: Option<&str>,
        agent: Option<String>,
    ) -> Result<Reply> {
        let memory_type = memory_type.map(MemoryType::parse).transpose().map_err(anyhow::Error::msg)?;
        let importance = importance.map(Importance::parse).transpose().map_err(anyhow::Error::msg)?;
        let repo = self.repo_to_write()?;
        if self.agent_writes(&repo, "save_memory")? == AgentWrites::Propose {
            let dropped: Vec<&'static str> =
                [("type", memory_type.is_some()), ("importance", importance.is_some()), ("agent", agent.is_some())]
                    .into_iter()
                    .filter_map(|(name, given)| given.then_some(name))
                    .collect();
            let p = self.proposal(&repo, ProposalKind::Memory, content, tags);
            return self.reply(&ops::inbox::propose_report(&repo, p)?.dropping(dropped));
        }
        let req = SaveRequest {
            content,
            tags,
            dry_run: false,
            redact: true,
            no_dedup: false,
            memory_type,
            importance,
            agent,
        };
        self.reply(&ops::save::save(&repo, req)?)
    }

    /// Returns how the setting `agent_writes` treats an agent's write through `tool`: with
    /// `deny` an error saying so and how a person changes it; else `allow` or `propose`.
    fn agent_writes(&self, repo: &crate::repo::Repo, tool: &str) -> Result<AgentWrites> {
        let setting = &repo.settings.agent_writes;
        if setting.value != AgentWrites::Deny {
            return Ok(setting.value);
        }
        let from = match &setting.source {
            crate::settings::Source::File(p) => format!("set in {}", ops::rel(&repo.layout.root, p)),
            crate::settings::Source::Env(var) => format!("set by the environment variable {var}"),
            crate::settings::Source::Default => "the default".to_string(),
        };
        let why = format!(
            "agent writes are denied: the setting agent_writes is deny ({from}), so {tool} writes nothing. A person \
             changes it with `kb config set agent_writes propose` (agents propose, a person accepts with kb inbox \
             accept) or `kb config set agent_writes allow`"
        );
        Err(KbError::refused("write", why).into())
    }

    /// Returns a proposal of `kind` by this server's agent (its client's name), in no session.
    fn proposal(
        &self,
        repo: &crate::repo::Repo,
        kind: ProposalKind,
        content: String,
        tags: Vec<String>,
    ) -> ops::inbox::Proposal {
        ops::inbox::Proposal {
            kind,
            content,
            proposed_by: repo.author().unwrap_or_else(|| "agent:unknown".into()),
            session: None,
            reason: None,
            tags,
            source: None,
            subject: None,
            citations: Vec::new(),
            decision_type: None,
        }
    }

    /// `recall_memory`.
    pub fn recall(&self, args: super::RecallMemoryArgs) -> Result<Reply> {
        let req = ops::recall::Request {
            query: args.query,
            max_results: args.max_results as usize,
            exact: false,
            sources: args.store,
            origins: args.origins,
            heat: true,
        };
        self.read(|k| {
            if let Some(why) = ops::recall::unknown_source(k.repo(), &req.origins) {
                anyhow::bail!("store {why}");
            }
            let report = ops::recall::recall(k, &req)?;
            self.reply(&ops::audit::verified(&k.repo().layout.root, &report)?)
        })
    }

    /// `audit`: `kb audit [ID...]`.
    pub fn audit(&self, ids: Vec<String>) -> Result<Reply> {
        let req = ops::audit::Request { ids, stores: Vec::new() };
        self.read(|k| self.reply(&ops::audit::audit(k, &req)?))
    }

    /// `list_memories`: `kb list` with its filters, as a page of at most `limit` items whose lines
    /// are not cut; when items are left out, the text ends by saying how many and how to see more.
    pub fn list(&self, args: super::ListMemoriesArgs) -> Result<Reply> {
        let memory_type = args.memory_type.as_deref().map(MemoryType::parse).transpose().map_err(anyhow::Error::msg)?;
        let filtered = memory_type.is_some() || args.agent.is_some();
        let scope = match (args.store, filtered) {
            (s, true) if !s.has(Store::Md) => anyhow::bail!(
                "type and agent filter the markdown memories, and Copilot records have neither: leave out store, or \
                 give store md"
            ),
            (_, true) => Sources::only(Store::Md),
            (any, false) => any,
        };
        let filter = ops::read::ListFilter::new(memory_type, None, args.agent)?;
        let page = Some(args.limit as usize);
        let mut reply = self.read(|k| self.reply(&ops::read::list(k, scope, &filter, page)?))?;
        let number = |key: &str| reply.json.get(key).and_then(Value::as_u64).unwrap_or(0);
        let (count, total) = (number("count"), number("total"));
        if count < total {
            reply.text.push_str(&format!(
                "\n\nShowing {count} of {total} (limit {}): a higher limit shows more, recall_memory searches them \
                 all.",
                args.limit
            ));
        }
        Ok(reply)
    }

    /// `get_memory`: one memory or record in full, as `kb show ID` (an access, as there), or the
    /// decision `decision:N` names, as `kb decision show N`.
    pub fn get(&self, id: &str) -> Result<Reply> {
        self.read(|k| {
            let root = &k.repo().layout.root;
            if ops::read::shared_id(k.repo(), id).is_some() {
                return self.reply(&ops::audit::verified(root, &ops::read::show(k, id, Sources::memory(None))?)?);
            }
            ops::read::unknown_source(k.repo(), id)?;
            match crate::kinds::ItemId::parse(id)? {
                crate::kinds::ItemId::Decision(n) => {
                    self.reply(&ops::audit::verified(root, &ops::decision::show(k.repo(), &n.to_string())?)?)
                }
                _ => self.reply(&ops::audit::verified(root, &ops::read::show(k, id, Sources::memory(None))?)?),
            }
        })
    }

    /// `update_memory`: `kb update ID TEXT` with secrets redacted, for a memory an agent wrote.
    pub fn update(&self, id: &str, content: &str) -> Result<Reply> {
        let repo = self.repo_to_write()?;
        self.agent_writes(&repo, "update_memory")?;
        self.reply(&ops::update::update(&repo, id, content, true)?)
    }

    /// `forget_memory`: an integer id is a markdown memory, any other id a Copilot record.
    pub fn forget(&self, id: &str) -> Result<Reply> {
        let repo = self.repo_to_write()?;
        self.agent_writes(&repo, "forget_memory")?;
        self.reply(&ops::forget::forget(&repo, id, Sources::memory(None))?)
    }

    /// `store_memory`.
    pub fn store(&self, args: super::StoreMemoryArgs) -> Result<Reply> {
        let super::StoreMemoryArgs { subject, fact, citations, reason, category } = args;
        let repo = self.repo_to_write()?;
        if self.agent_writes(&repo, "store_memory")? == AgentWrites::Propose {
            let dropped = if category.is_some() { vec!["category"] } else { Vec::new() };
            let p = ops::inbox::Proposal {
                subject: Some(subject),
                citations,
                reason: Some(reason),
                ..self.proposal(&repo, ProposalKind::Record, fact, Vec::new())
            };
            return self.reply(&ops::inbox::propose_report(&repo, p)?.dropping(dropped));
        }
        let req =
            RecordRequest { subject, fact, citations, reason, category, dry_run: false, redact: true, no_dedup: false };
        self.reply(&ops::save::save_record(&repo, req)?)
    }

    /// `propose_decision`: a new decision with `status: proposed`, or the open decision that
    /// already says it; never an active one (agents propose, people decide).
    pub fn propose_decision(&self, text: String, kind: DecisionKind) -> Result<Reply> {
        let repo = self.repo_to_write()?;
        if self.agent_writes(&repo, "propose_decision")? == AgentWrites::Propose {
            let p = ops::inbox::Proposal {
                decision_type: Some(kind),
                ..self.proposal(&repo, ProposalKind::Decision, text, Vec::new())
            };
            return self.reply(&ops::inbox::propose_report(&repo, p)?);
        }
        let report = ops::decision::propose(&repo, text, kind, Vec::new(), true)?;
        self.written(&report, report.redacted())
    }

    /// `get_context`: `kb context --agent A --for P... [--decisions-only] [--max-tokens N]`, with
    /// the Hot Memories (as `kb context` has them). The JSON is `kb --json context`'s, tokens
    /// counted.
    pub fn get_context(&self, args: super::GetContextArgs) -> Result<Reply> {
        let req = crate::settings::BlockRequest {
            agent: args.agent,
            for_paths: args.for_paths,
            decisions_only: args.decisions_only,
            board: false,
            hot: true,
            global: true,
            session: true,
            max_tokens: args.max_tokens,
            wrap: false,
            count_tokens: true,
        };
        let req = ops::context::check(req, &self.layout.root, ops::context::Outside::Refuse)?;
        let mut reply = self.read(|k| self.reply(&ops::context::context(k, &req)))?;
        if reply.text.is_empty() {
            reply.text =
                "The context is empty: no decisions, context files, records, instructions, memories or session apply."
                    .into();
        }
        Ok(reply)
    }

    /// `context_board`, as GitHub Copilot CLI's tool of that name works: `get_board` lists the items'
    /// metadata as the `<dynamic_context_board>` table, `get` returns one item's content (by name,
    /// and src when two items share it) and counts the read, `add` creates or overwrites an `agent`
    /// item (secrets redacted), `prune` deletes an `agent` item and never a person's. The board is
    /// the checked-out branch's: each result names the branch (the JSON's `"branch"`).
    pub fn context_board(&self, args: super::ContextBoardArgs) -> Result<Reply> {
        use super::BoardCommand;
        use crate::kinds::Src;
        let repo = match args.command {
            BoardCommand::GetBoard | BoardCommand::Get => self.repo()?,
            BoardCommand::Add | BoardCommand::Prune => self.repo_to_write()?,
        };
        let branch = ops::board::branch(&repo, None)?;
        if self.found && !self.board_seen.swap(true, std::sync::atomic::Ordering::SeqCst) {
            self.warn(ops::board::seen(&repo, &branch).as_slice());
        }
        let command = match args.command {
            BoardCommand::GetBoard => "get_board",
            BoardCommand::Get => "get",
            BoardCommand::Add => "add",
            BoardCommand::Prune => "prune",
        };
        let need = |v: Option<String>, what: &str| {
            v.filter(|s| !s.trim().is_empty())
                .ok_or_else(|| anyhow::anyhow!("{what} is required for command {command}"))
        };
        let mut reply = match args.command {
            BoardCommand::GetBoard => {
                let report = ops::board::list(&repo, &branch);
                let mut reply = self.reply(&report)?;
                let board = report.board();
                reply.text = match ops::board::render(board) {
                    Some(table) => format!(
                        "Context board of branch {branch} ({}/{} items):\n{table}",
                        board.items.len(),
                        ops::board::CAPACITY
                    ),
                    None => format!("The context board of branch {branch} is empty."),
                };
                return Ok(reply);
            }
            BoardCommand::Get => {
                let name = need(args.name, "name")?;
                let name = name.trim();
                let src = match args.src {
                    Some(src) => Some(src),
                    None => self.board_src(&repo, &branch, name)?,
                };
                self.reply(&ops::board::get(&repo, &branch, name, src)?)?
            }
            BoardCommand::Add => {
                let (name, description) = (need(args.name, "name")?, need(args.description, "description")?);
                let context = need(args.context, "context")?;
                let report = ops::board::add(&repo, &branch, Src::Agent, name.trim(), &description, &context, true)?;
                let mut reply = self.written(&report, report.redacted())?;
                // The agent sees no stderr: the warning to prune goes into the answer.
                if let Some(full) = report.nearly_full() {
                    reply.text.push_str(&format!("\nWarning: {full} (context_board prune deletes an agent item)"));
                    if let Value::Object(map) = &mut reply.json {
                        map.insert("warning".into(), Value::from(full));
                    }
                }
                on_branch(&mut reply, &branch);
                return Ok(reply);
            }
            BoardCommand::Prune => {
                let name = need(args.name, "name")?;
                let mut reply =
                    self.reply(&ops::board::remove(&repo, &branch, name.trim(), None, Some(Src::Agent))?)?;
                on_branch(&mut reply, &branch);
                return Ok(reply);
            }
        };
        if let Value::Object(map) = &mut reply.json {
            map.insert("branch".into(), Value::from(branch));
        }
        Ok(reply)
    }

    /// Returns the src of the one item named `name` on the board of `branch`, for a `get` that
    /// gave none; `None` when no item has the name (the get then says it is not found). Two items
    /// of that name are an error listing the srcs to choose from.
    fn board_src(&self, repo: &crate::repo::Repo, branch: &str, name: &str) -> Result<Option<crate::kinds::Src>> {
        let report = ops::board::list(repo, branch);
        let srcs: Vec<&str> = report.board().items.iter().filter(|i| i.name == name).map(|i| i.src.as_str()).collect();
        match srcs.as_slice() {
            [] => Ok(None),
            [_] => Ok(report.board().items.iter().find(|i| i.name == name).map(|i| i.src)),
            many => anyhow::bail!(
                "{} board items on branch {branch} are named {name}: give src {} to say which",
                many.len(),
                many.join(" or src ")
            ),
        }
    }

    /// `update_session`: replaces the open session's summary, or appends a paragraph to it.
    pub fn update_session(&self, summary: &str, append: bool) -> Result<Reply> {
        let repo = self.repo_to_write()?;
        self.agent_writes(&repo, "update_session")?;
        let report = match ops::session::update(&repo, summary, append, true) {
            Err(e) if is_error(&e, |k| matches!(k, KbError::NoOpenSession)) => {
                anyhow::bail!("{NO_SESSION}")
            }
            other => other?,
        };
        self.written(&report, report.redacted())
    }

    /// `vote_memory`: a vote on the Copilot record named by `id` or by its exact `fact` (one of
    /// the two; a blank one counts as not given).
    pub fn vote(&self, id: Option<&str>, fact: Option<&str>, direction: Direction, reason: &str) -> Result<Reply> {
        fn given(s: Option<&str>) -> Option<&str> {
            s.filter(|s| !s.trim().is_empty())
        }
        let target = match (given(id), given(fact)) {
            (Some(id), None) => VoteTarget::Id(id),
            (None, Some(fact)) => VoteTarget::Fact(fact),
            (Some(_), Some(_)) => anyhow::bail!("give either the record's id or its fact, not both"),
            (None, None) => {
                anyhow::bail!("name the record to vote on: give its id (e.g. mem-1a2b3c4d) or its exact fact")
            }
        };
        let repo = self.repo_to_write()?;
        self.agent_writes(&repo, "vote_memory")?;
        let report = match ops::vote::vote_on(&repo, target, direction, reason, true) {
            // The CLI's message points to `kb list`, which an agent cannot run.
            Err(e) if e.downcast_ref::<ops::vote::MarkdownVote>().is_some() => anyhow::bail!(
                "memory {} is a markdown memory: votes apply to Copilot records only (ids such as mem-1a2b3c4d). To \
                 correct a markdown memory, save the right fact with save_memory and delete the wrong one with \
                 forget_memory",
                id.unwrap_or_default().trim()
            ),
            other => other?,
        };
        self.written(&report, report.redacted())
    }

    /// Returns the always-loaded context block, as `kb context` prints it; empty when
    /// no section has content. Its warnings go to stderr, as `kb context` prints them.
    pub fn context(&self) -> String {
        let req = crate::settings::BlockRequest { hot: true, global: true, session: true, ..Default::default() };
        let text = self.read(|k| {
            let report = ops::context::context(k, &req);
            self.warn(report.diagnostics());
            Ok(report.block.text.unwrap_or_default())
        });
        text.unwrap_or_else(|e| {
            self.style.error(&crate::error::message(&e));
            String::new()
        })
    }
}

/// What `update_session` says when no session is open: only a person starts one.
pub const NO_SESSION: &str = "no open session: sessions are started by a person, with `kb session start FOCUS`; \
ask the user to start one if the work needs a running summary";

/// Returns whether `e` is, or was caused by, a [`KbError`] that `test` accepts.
fn is_error(e: &anyhow::Error, test: impl Fn(&KbError) -> bool) -> bool {
    e.chain().filter_map(|c| c.downcast_ref::<KbError>()).any(test)
}

/// Returns the message of a failed tool call: what `kb` prints after `error:`, except that a
/// refused secret never points to `--redact`, which an agent cannot pass. (The writing tools
/// redact, so only a bug or a new tool could get here; the rule holds whatever the cause.)
pub fn error_message(e: &anyhow::Error) -> String {
    let message = crate::error::message(e);
    let secret = e.chain().filter_map(|c| c.downcast_ref::<KbError>()).find(|k| matches!(k, KbError::Secret { .. }));
    match secret {
        Some(k @ KbError::Secret { field, rule }) => message.replace(
            &k.to_string(),
            &format!("refusing to store a secret: the {field} matches the {rule} rule; leave the secret out"),
        ),
        _ => message,
    }
}

/// Names a board's branch in a reply: `"branch"` in the JSON, and at the end of the text's first
/// line (`✓ Added agent item x (3/25 items) on branch main`).
fn on_branch(reply: &mut Reply, branch: &str) {
    if let Value::Object(map) = &mut reply.json {
        map.insert("branch".into(), Value::from(branch));
    }
    let end = reply.text.find('\n').unwrap_or(reply.text.len());
    reply.text.insert_str(end, &format!(" on branch {branch}"));
}

/// Adds a line to a reply's text naming the secret rules in its JSON's `"redacted"`, if any.
fn note_redacted(reply: &mut Reply) {
    let rules: Vec<&str> =
        reply.json.get("redacted").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let note = match rules.as_slice() {
        [] => return,
        [rule] => format!(
            "Secret redacted (rule {rule}): kb keeps [REDACTED:{rule}] in place of the secret, never the secret itself."
        ),
        many => format!(
            "Secrets redacted (rules {}): kb keeps [REDACTED:<rule>] in place of each secret, never the secrets \
             themselves.",
            many.join(", ")
        ),
    };
    if !reply.text.is_empty() {
        reply.text.push('\n');
    }
    reply.text.push_str(&note);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn server(dir: &Path) -> Server {
        std::fs::create_dir_all(dir.join("repo/.git")).unwrap();
        let layout = Layout { root: dir.join("repo"), config: Some(dir.join("home/.config/co-cli")) };
        Server::new(
            layout,
            true,
            None,
            Style { color_out: false, color_err: false, sanitize: false },
            Default::default(),
        )
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn context_is_the_compiled_block() {
        let dir = tempfile::tempdir().unwrap();
        let server = server(dir.path());
        assert_eq!(server.context(), "", "no files: an empty context");
        write(
            &server.layout.project_context(),
            "---\nversion: 1\nupdated: 2026-01-01T00:00:00Z\n---\n\n  Project body\n\n",
        );
        // What the file watcher tells the server (no watcher runs here).
        let paths = vec![server.layout.project_context()];
        warm::lock(&server.warm).note(&crate::knowledge::watch::Changes { paths, ..Default::default() });
        let repo = server.repo().unwrap();
        let knowledge = Knowledge::read(&repo);
        let block = ops::context::context(
            &knowledge,
            &crate::settings::BlockRequest { hot: true, global: true, session: true, ..Default::default() },
        )
        .block
        .text
        .unwrap();
        assert_eq!(server.context(), block);
        assert!(block.starts_with("## Internal Knowledge\n\n### Project Context\n\nProject body"), "{block}");
    }

    #[test]
    fn operations_report_errors_as_the_cli_does() {
        let dir = tempfile::tempdir().unwrap();
        let server = server(dir.path());
        let message = |e: anyhow::Error| crate::error::message(&e);
        assert_eq!(message(server.forget("x").unwrap_err()), "memory x not found");
        assert_eq!(message(server.forget("3").unwrap_err()), "memory 3 not found");
        let save = |text: &str, tags: &[&str]| {
            server.save(text.into(), tags.iter().map(|t| t.to_string()).collect(), None, None, None)
        };
        assert_eq!(message(save("  \n", &[]).unwrap_err()), "nothing to save: the text is empty");
        let bad_type = server.save("x".into(), vec![], Some("Learning"), None, None).unwrap_err();
        assert_eq!(message(bad_type), "unknown type 'Learning': expected core_context, learning, pattern or update");
        let bad_importance = server.save("x".into(), vec![], None, Some("urgent"), None).unwrap_err();
        assert_eq!(message(bad_importance), "unknown importance 'urgent': expected high, medium or low");
        let bad_agent = server.save("x".into(), vec![], None, None, Some("a/b".into())).unwrap_err();
        assert_eq!(message(bad_agent), "invalid agent name 'a/b': an agent name cannot contain '/' or '\\'");
        let saved = save("We always rebase before merging", &["pattern"]).unwrap();
        assert_eq!(saved.json["action"], "saved");
        use crate::mcp::ToolArgs;
        let listed = server.list(crate::mcp::ListMemoriesArgs::from_value(serde_json::json!({})).unwrap()).unwrap();
        assert_eq!(listed.json["count"], 1);
        assert!(listed.text.starts_with("Total memories: 1/200\n\n**001** ("), "{}", listed.text);
        assert!(listed.text.ends_with(") [pattern] : We always rebase before merging"), "{}", listed.text);
        let forgot = server.forget(" 1 ").unwrap();
        assert_eq!((forgot.json["deleted"].as_u64(), forgot.json["store"].as_str()), (Some(1), Some("md")));
        assert!(forgot.text.starts_with("✓ Deleted memory 1: "), "{}", forgot.text);
    }

    fn store_args(subject: &str, fact: String, reason: String) -> super::super::StoreMemoryArgs {
        super::super::StoreMemoryArgs { subject: subject.into(), fact, citations: vec![], reason, category: None }
    }

    fn github_pat() -> String {
        format!("ghp_{}", "A1b2C3d4E5f6".repeat(3))
    }

    #[test]
    fn propose_decision_writes_a_proposed_decision_and_finds_duplicates() {
        let dir = tempfile::tempdir().unwrap();
        let server = server(dir.path());
        let proposed =
            server.propose_decision("We use PostgreSQL for every service".into(), DecisionKind::Architectural).unwrap();
        assert_eq!(
            (proposed.json["action"].as_str(), proposed.json["decision_id"].as_u64()),
            (Some("proposed"), Some(1))
        );
        assert_eq!(proposed.json["redacted"], serde_json::json!([]));
        assert!(proposed.text.starts_with("✓ Proposed decision 1: 001-we-use-postgresql-for-every-service.md\n"));
        assert!(proposed.text.contains("`kb decision accept 1`"), "{}", proposed.text);
        let file =
            std::fs::read_to_string(server.layout.decisions().join("001-we-use-postgresql-for-every-service.md"));
        assert!(file.unwrap().contains("\nstatus: proposed\n"));
        let again =
            server.propose_decision("We use PostgreSQL for every service!".into(), DecisionKind::Technical).unwrap();
        assert_eq!((again.json["action"].as_str(), again.json["decision_id"].as_u64()), (Some("exists"), Some(1)));
        assert_eq!(std::fs::read_dir(server.layout.decisions()).unwrap().count(), 1);
    }

    #[test]
    fn update_session_needs_a_session_a_person_started() {
        let dir = tempfile::tempdir().unwrap();
        let server = server(dir.path());
        let message = crate::error::message(&server.update_session("Done", false).unwrap_err());
        assert_eq!(message, NO_SESSION);
        assert!(message.contains("person") && message.contains("kb session start FOCUS"), "{message}");
        crate::ops::session::start(&server.repo().unwrap(), "Fix the parser", false).unwrap();
        let summary = format!("Parser done; token {}", github_pat());
        let updated = server.update_session(&summary, false).unwrap();
        assert_eq!(updated.json["summary"], "Parser done; token [REDACTED:github-pat]");
        assert_eq!(updated.json["redacted"], serde_json::json!(["github-pat"]));
        let appended = server.update_session("Tests next", true).unwrap();
        assert_eq!(appended.json["summary"], "Parser done; token [REDACTED:github-pat]\n\nTests next");
        assert!(appended.text.starts_with("✓ Appended to the summary of session: Fix the parser\n"));
        assert!(!appended.text.contains("redacted"), "{}", appended.text);
    }

    #[test]
    fn vote_takes_an_id_or_an_exact_fact() {
        let dir = tempfile::tempdir().unwrap();
        let server = server(dir.path());
        let stored = server.store(store_args("build", "Run .ci/run".into(), "CI runs it".into())).unwrap();
        let id = stored.json["memory_id"].as_str().unwrap().to_string();
        let up = server.vote(Some(&id), None, Direction::Up, "right").unwrap();
        assert_eq!(up.json["votes"], serde_json::json!({"up": 1, "down": 0}));
        let down = server.vote(Some(" "), Some("Run .ci/run"), Direction::Down, "moved").unwrap();
        assert_eq!(
            (down.json["id"].as_str(), &down.json["votes"]),
            (Some(id.as_str()), &serde_json::json!({"up": 1, "down": 1}))
        );
        let message = |r: Result<Reply>| crate::error::message(&r.unwrap_err());
        assert!(
            message(server.vote(None, Some("run .ci/run"), Direction::Up, "r"))
                .starts_with("no Copilot record has the fact")
        );
        assert!(message(server.vote(Some(&id), Some("Run .ci/run"), Direction::Up, "r")).contains("not both"));
        assert!(message(server.vote(None, None, Direction::Up, "r")).contains("id"));
    }

    #[test]
    fn secrets_are_redacted_and_named_never_refused() {
        let dir = tempfile::tempdir().unwrap();
        let server = server(dir.path());
        let proposed = server.propose_decision(format!("Deploy with {}", github_pat()), DecisionKind::Process).unwrap();
        assert_eq!(proposed.json["redacted"], serde_json::json!(["github-pat"]));
        let note = "\nSecret redacted (rule github-pat): kb keeps [REDACTED:github-pat] in place of the secret, never \
                    the secret itself.";
        assert!(proposed.text.ends_with(note), "{}", proposed.text);
        let aws = ["AKIA", "ZZZZEXAMPLE2345Q"].concat();
        let stored =
            server.store(store_args("deploy", format!("Key {aws}"), format!("token {}", github_pat()))).unwrap();
        assert_eq!(stored.json["redacted"], serde_json::json!(["aws-access-token", "github-pat"]));
        assert!(
            stored.text.ends_with("\nSecrets redacted (rules aws-access-token, github-pat): kb keeps [REDACTED:<rule>] in place of each secret, never the secrets themselves."),
            "{}",
            stored.text
        );
        // A refused secret (no writing tool refuses one) never points the agent to --redact.
        let refused =
            anyhow::Error::new(KbError::Secret { field: "reason".into(), rule: "github-pat" }).context("cannot vote");
        let message = error_message(&refused);
        assert_eq!(
            message,
            "cannot vote: refusing to store a secret: the reason matches the github-pat rule; leave the secret out"
        );
        let other = anyhow::anyhow!("plain failure");
        assert_eq!(error_message(&other), "plain failure");
    }
}
