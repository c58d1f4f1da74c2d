//! The MCP tools' work: each tool runs the same operation as its CLI command (`crate::ops`) and
//! returns the report's human text and its JSON document, so the two cannot drift.
//!
//! - `save_memory`: `kb save TEXT -t TAG... [--type T] [--importance I] [--agent NAME]`;
//!   `store_memory`: `kb save --store copilot ...`;
//! - `recall_memory`: `kb recall QUERY -n N`; `list_memories`: `kb list` (both stores);
//! - `forget_memory`: `kb forget ID`;
//! - the context resource: `kb context`'s block.
//!
//! Nothing here prints to stdout, which is the protocol: diagnostics (a skipped file) go to
//! stderr, as the CLI's do.

use crate::copilot::RecordRequest;
use crate::error::Diagnostic;
use crate::memories::file::{Importance, MemoryType};
use crate::memories::store::SaveRequest;
use crate::ops::read::Scope;
use crate::ops::{self, Report, View};
use crate::output::Style;
use crate::paths::Layout;
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
}

impl Server {
    /// Opens the repository for a tool that writes: refused without a root (SPEC §1).
    fn repo_to_write(&self) -> Result<crate::repo::Repo> {
        if !self.found {
            anyhow::bail!("{}; start kb mcp inside a repository or pass --root", crate::paths::NO_ROOT);
        }
        self.repo()
    }

    fn repo(&self) -> Result<crate::repo::Repo> {
        Ok(crate::repo::Repo::open(self.layout.clone(), self.pinned_now.unwrap_or_else(crate::format::time::now))?)
    }

    /// Returns a report as a tool's reply: its text as the CLI prints it into a pipe (no colour,
    /// no escaping) and its JSON; its diagnostics go to stderr.
    fn reply(&self, report: &impl Report) -> Result<Reply> {
        self.warn(report.diagnostics());
        let view =
            View { style: Style { color_out: false, sanitize: false, ..self.style }, root: self.layout.root.clone() };
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
        let req = SaveRequest {
            content,
            tags,
            dry_run: false,
            redact: false,
            no_dedup: false,
            memory_type,
            importance,
            agent,
        };
        self.reply(&ops::save::save(&self.repo_to_write()?, req)?)
    }

    /// `recall_memory`.
    pub fn recall(&self, query: &str, max_results: usize) -> Result<Reply> {
        let loaded = ops::read::load(&self.repo()?, Scope::Both)?;
        self.reply(&ops::read::recall(&loaded, query, max_results))
    }

    /// `list_memories`.
    pub fn list(&self) -> Result<Reply> {
        let loaded = ops::read::load(&self.repo()?, Scope::Both)?;
        self.reply(&ops::read::list(&loaded, &ops::read::ListFilter::default()))
    }

    /// `forget_memory`: an integer id is a markdown memory, any other id a Copilot record.
    pub fn forget(&self, id: &str) -> Result<Reply> {
        self.reply(&ops::forget::forget(&self.repo_to_write()?, id, Scope::Both)?)
    }

    /// `store_memory`.
    pub fn store(&self, subject: String, fact: String, citations: Vec<String>, reason: String) -> Result<Reply> {
        let req = RecordRequest { subject, fact, citations, reason, category: None, dry_run: false, redact: false };
        self.reply(&ops::save::save_record(&self.repo_to_write()?, req)?)
    }

    /// Returns the always-loaded context block, as `kb context` prints it (SPEC §8); empty when
    /// no section has content. Its warnings go to stderr, as `kb context` prints them.
    pub fn context(&self) -> String {
        let report = ops::context::context(&self.layout, false);
        self.warn(report.diagnostics());
        report.block.text.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn server(dir: &Path) -> Server {
        std::fs::create_dir_all(dir.join("repo/.git")).unwrap();
        let layout = Layout { root: dir.join("repo"), config: Some(dir.join("home/.config/co-cli")) };
        Server {
            layout,
            found: true,
            pinned_now: None,
            style: Style { color_out: false, color_err: false, sanitize: false },
        }
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
        let block = crate::context::build(&server.layout, false).text.unwrap();
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
        let listed = server.list().unwrap();
        assert_eq!(listed.json["count"], 1);
        assert!(listed.text.starts_with("Total memories: 1/200\n\n**001** ("), "{}", listed.text);
        assert!(listed.text.ends_with(") [pattern] : We always rebase before merging"), "{}", listed.text);
        let forgot = server.forget(" 1 ").unwrap();
        assert_eq!((forgot.json["deleted"].as_u64(), forgot.json["store"].as_str()), (Some(1), Some("md")));
        assert!(forgot.text.starts_with("✓ Deleted memory 1: "), "{}", forgot.text);
    }
}
