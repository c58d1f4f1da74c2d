//! The MCP tools' work, without the protocol: each tool runs the CLI's own code and returns the
//! CLI's human text and its `--json` document.
//!
//! - `recall_memory` and `list_memories` run the CLI commands themselves (`commands::dispatch`)
//!   inside `output::capture`, once plainly and once with `--json`: the same text and JSON as
//!   `kb recall` and `kb list`, covering both stores, by construction.
//! - `forget_memory` runs `kb forget --json` the same way (a write runs once) and words the text
//!   as `kb forget` does, from its JSON and, for a record, the subject `kb show` gave first.
//! - `save_memory` and `store_memory` call the stores' `save` directly: `kb save` reads stdin
//!   when the text is "-", and here stdin is the protocol. Their JSON and text are worded as
//!   `kb save` and `kb save --store copilot` word them.
//!
//! - The context resource is `context::build`, the block `kb context` prints.
//!
//! `tests/cli/mcp.rs` compares every tool's text and JSON with the CLI's, so the worded ones
//! cannot drift. Nothing here prints to stdout: warnings (a skipped file) go to stderr, once.

use crate::cli::{Command, ListArgs, LookupArgs, RecallArgs};
use crate::commands::{self, Ctx};
use crate::copilot::{RecordRequest, RecordStore};
use crate::memories::store::SaveRequest;
use crate::output::{self, Style};
use crate::paths::Layout;
use anyhow::{Context as _, Result};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::io::Write;
use std::path::Path;

/// What a tool returns on success: the CLI's text and the CLI's JSON document.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub text: String,
    pub json: Value,
}

/// One repository as the server sees it: the root resolved once at start, the clock, and the
/// style of stderr warnings. Settings are re-read on every call, since the files may change
/// while the server runs.
#[derive(Debug, Clone)]
pub struct Repo {
    pub layout: Layout,
    /// A pinned clock (`KB_NOW`), else the wall clock at each call.
    pub pinned_now: Option<DateTime<Utc>>,
    /// Only its stderr half is used: stdout is the protocol.
    pub style: Style,
}

impl Repo {
    /// Returns a command context for one call: plain text (no colour, no escaping, as the CLI
    /// prints into a pipe).
    fn ctx(&self, json: bool, now: DateTime<Utc>) -> Ctx {
        let style = Style { color_out: false, sanitize: false, ..self.style };
        Ctx { layout: self.layout.clone(), json, style, now }
    }

    fn now(&self) -> DateTime<Utc> {
        self.pinned_now.unwrap_or_else(crate::format::time::now)
    }

    /// Runs a CLI command with its output captured; its warnings go to stderr when `warn`.
    /// Returns what it printed.
    fn run(&self, json: bool, now: DateTime<Utc>, command: Command, warn: bool) -> Result<String> {
        let ctx = self.ctx(json, now);
        let (result, captured) = output::capture(|| commands::dispatch(&ctx, command));
        if warn && !captured.warnings.is_empty() {
            let mut err = std::io::stderr().lock();
            for line in &captured.warnings {
                let _ = writeln!(err, "{line}");
            }
        }
        result?;
        let mut text = String::from_utf8(captured.stdout).context("internal error: a command printed invalid UTF-8")?;
        text.truncate(text.trim_end_matches('\n').len());
        Ok(text)
    }

    /// Runs a read command plainly and with `--json`; returns both outputs.
    fn read(&self, command: impl Fn() -> Command) -> Result<Reply> {
        let now = self.now();
        let text = self.run(false, now, command(), true)?;
        let json = self.run(true, now, command(), false)?;
        let json = serde_json::from_str(&json).context("internal error: a command printed invalid JSON")?;
        Ok(Reply { text, json })
    }

    /// `save_memory`: `kb save TEXT -t TAG...`.
    pub fn save(&self, content: String, tags: Vec<String>) -> Result<Reply> {
        let ctx = self.ctx(true, self.now());
        let out = ctx.store()?.save(SaveRequest { content, tags, dry_run: false, redact: false }, ctx.now)?;
        for w in &out.warnings {
            // stdout is the protocol: warnings go to stderr, as the CLI's do.
            ctx.style.warn(w);
        }
        let (text, json) = commands::save::report(&ctx, out);
        Ok(Reply { text, json: serde_json::to_value(json)? })
    }

    /// `recall_memory`: `kb recall QUERY -n N` (both stores).
    pub fn recall(&self, query: &str, max_results: usize) -> Result<Reply> {
        self.read(|| Command::Recall(RecallArgs { query: query.to_string(), max_results, store: None }))
    }

    /// `list_memories`: `kb list` (both stores).
    pub fn list(&self) -> Result<Reply> {
        self.read(|| Command::List(ListArgs { store: None }))
    }

    /// `forget_memory`: `kb forget ID`: an integer id is a markdown memory (else a Copilot
    /// record with that id), any other id a Copilot record.
    pub fn forget(&self, id: &str) -> Result<Reply> {
        let now = self.now();
        let lookup = || LookupArgs { id: id.to_string(), store: None };
        // `kb forget` names a record's subject, which its JSON leaves out: read it first.
        let shown: Option<Value> =
            self.run(true, now, Command::Show(lookup()), false).ok().and_then(|s| serde_json::from_str(&s).ok());
        let json: Value = serde_json::from_str(&self.run(true, now, Command::Forget(lookup()), true)?)
            .context("internal error: kb forget printed invalid JSON")?;
        let path = Path::new(json["path"].as_str().unwrap_or_default());
        let text = if json["store"] == "copilot" {
            let subject = shown.as_ref().and_then(|s| s["subject"].as_str()).unwrap_or_default();
            let rel = path.strip_prefix(&self.layout.root).unwrap_or(path);
            format!(
                "✓ Deleted Copilot memory {} [{subject}] (line {} of {})",
                json["deleted"].as_str().unwrap_or_default(),
                json["line"],
                rel.display()
            )
        } else {
            format!("✓ Deleted memory {}: {}", json["deleted"], file_name(path))
        };
        Ok(Reply { text, json })
    }

    /// `store_memory`: `kb save --store copilot --subject S --citation C... --reason R FACT`.
    pub fn store(&self, subject: String, fact: String, citations: Vec<String>, reason: String) -> Result<Reply> {
        let ctx = self.ctx(true, self.now());
        let store = RecordStore { layout: ctx.layout.clone(), settings: ctx.settings()? };
        let req = RecordRequest { subject, fact, citations, reason, category: None, dry_run: false, redact: false };
        let out = store.save(req, ctx.now)?;
        let (text, json) = commands::records::save_report(&ctx, out);
        Ok(Reply { text, json: serde_json::to_value(json)? })
    }
}

impl Repo {
    /// Returns the always-loaded context block, as `kb context` prints it (SPEC §8: the global
    /// and project context and the repository memories, with budgets and truncation); empty when
    /// no section has content. Its warnings go to stderr, as `kb context` prints them.
    pub fn context(&self) -> String {
        let block = crate::context::build(&self.layout, false);
        let rel = |p: &Path| p.strip_prefix(&self.layout.root).unwrap_or(p).display().to_string();
        for w in &block.warnings {
            self.style.warn(&w.render(rel));
        }
        block.text.unwrap_or_default()
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(dir: &Path) -> Repo {
        let env = |k: &str| match k {
            "HOME" => Some(dir.join("home").display().to_string()),
            _ => None,
        };
        std::fs::create_dir_all(dir.join("repo/.git")).unwrap();
        let layout = Layout::resolve(Some(&dir.join("repo")), &env, dir);
        Repo { layout, pinned_now: None, style: Style { color_out: false, color_err: false, sanitize: false } }
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn context_is_the_compiled_block() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        assert_eq!(repo.context(), "", "no files: an empty context");
        write(
            &repo.layout.project_context(),
            "---\nversion: 1\nupdated: 2026-01-01T00:00:00Z\n---\n\n  Project body\n\n",
        );
        let block = crate::context::build(&repo.layout, false).text.unwrap();
        assert_eq!(repo.context(), block);
        assert!(block.starts_with("## Internal Knowledge\n\n### Project Context\n\nProject body"), "{block}");
    }

    #[test]
    fn operations_report_errors_as_the_cli_does() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let message = |e: anyhow::Error| commands::error_message(&e);
        assert_eq!(message(repo.forget("x").unwrap_err()), "memory x not found");
        assert_eq!(message(repo.forget("3").unwrap_err()), "memory 3 not found");
        assert_eq!(message(repo.save("  \n".into(), vec![]).unwrap_err()), "nothing to save: the text is empty");
        // Nothing was printed to stdout meanwhile: the commands ran inside a capture.
        let (_, captured) = output::capture(|| repo.list().unwrap());
        assert!(captured.stdout.is_empty());
        let saved = repo.save("We always rebase before merging".into(), vec!["pattern".into()]).unwrap();
        assert_eq!(saved.json["action"], "saved");
        let listed = repo.list().unwrap();
        assert_eq!(listed.json["count"], 1);
        assert!(listed.text.starts_with("Total memories: 1/200\n\n**001** ("), "{}", listed.text);
        assert!(listed.text.ends_with(") [pattern] : We always rebase before merging"), "{}", listed.text);
    }
}
