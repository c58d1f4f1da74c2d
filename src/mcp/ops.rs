//! The MCP tools' work, without the protocol: each operation runs the same store code as the
//! CLI command of the same name and returns the CLI's human text and its `--json` document.
//!
//! Nothing here prints to stdout (it carries the protocol); skipped files are reported on stderr
//! exactly as the CLI reports them. The text and JSON renderers mirror `commands/{save,read,
//! forget}.rs`; `tests/cli/mcp.rs` compares them with the CLI's output so the two cannot drift.

use crate::commands::{self, Ctx};
use crate::index::MemoryRef;
use crate::memory::{detect_category, detect_source};
use crate::output::{Style, chars_prefix, summary};
use crate::paths::Layout;
use crate::store::{self, SaveRequest};
use anyhow::Result;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
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
    /// prints into a pipe) and the current time.
    fn ctx(&self) -> Ctx {
        let style = Style { color_out: false, sanitize: false, ..self.style };
        let now = self.pinned_now.unwrap_or_else(crate::time::now);
        Ctx { layout: self.layout.clone(), json: true, style, now }
    }

    /// `save_memory`: `kb save TEXT -t TAG...`.
    pub fn save(&self, content: String, tags: Vec<String>) -> Result<Reply> {
        let ctx = self.ctx();
        let out = ctx.store()?.save(SaveRequest { content, tags, dry_run: false, redact: false }, ctx.now)?;
        let location = commands::abs(&out.path).display().to_string();
        let json = json!({
            "action": if out.consolidated { "consolidated" } else { "saved" },
            "memory_id": out.memory_id,
            "path": location,
            "similarity": out.similarity,
            "decayed": out.decayed,
            "decay_strategy": out.decay_strategy.map(|s| s.as_str()),
            "redacted": out.redacted,
        });
        let mut text = if out.consolidated {
            format!("✓ Updated memory {} (consolidated duplicate)\nLocation: {location}", out.memory_id)
        } else {
            format!("✓ Saved memory {}: {}\nLocation: {location}", out.memory_id, file_name(&out.path))
        };
        if let Some(strategy) = out.decay_strategy {
            text.push_str(&format!("\n♻️ Decayed {} old memories ({})", out.decayed, strategy.as_str()));
        }
        Ok(Reply { text, json })
    }

    /// `recall_memory`: `kb recall QUERY -n N`.
    pub fn recall(&self, query: &str, max_results: usize) -> Result<Reply> {
        let ctx = self.ctx();
        let index = ctx.store()?.scan()?;
        ctx.warn_skipped(&index);
        let hits = store::recall(&index, query, max_results);
        let results: Vec<Value> = hits.iter().map(|m| memory_json(m, &index.dir)).collect();
        let json = json!({ "query": query, "count": hits.len(), "results": results });
        if hits.is_empty() {
            return Ok(Reply { text: format!("No memories found matching '{query}'"), json });
        }
        let noun = if hits.len() == 1 { "memory" } else { "memories" };
        let mut lines = vec![format!("Found {} {noun} matching '{query}':", hits.len()), String::new()];
        for m in &hits {
            lines.push(format!("**Memory {}** (created {})", m.id, chars_prefix(m.created, 10)));
            if !m.tags.is_empty() {
                lines.push(format!("Tags: {}", m.tags.join(", ")));
            }
            lines.push(m.content.to_string());
            lines.push(String::new());
        }
        Ok(Reply { text: lines.join("\n").trim_end().to_string(), json })
    }

    /// `list_memories`: `kb list`.
    pub fn list(&self) -> Result<Reply> {
        let ctx = self.ctx();
        let store = ctx.store()?;
        let index = store.scan()?;
        ctx.warn_skipped(&index);
        let limit = store.settings.memory_max_count.value;
        let mut all: Vec<MemoryRef<'_>> = index.memories().collect();
        all.sort_by(|a, b| a.id.cmp(&b.id).then_with(|| a.file_name.cmp(b.file_name)));
        let memories: Vec<Value> = all
            .iter()
            .map(|m| {
                json!({
                    "id": m.id,
                    "created": m.created,
                    "updated": m.updated,
                    "tags": m.tags,
                    "category": detect_category(&m.tags),
                    "summary": summary(m.content),
                    "decay_protected": m.decay_protected,
                    "path": commands::abs(&index.dir.join(m.file_name)).display().to_string(),
                })
            })
            .collect();
        let json = json!({ "count": all.len(), "limit": limit, "memories": memories });
        if all.is_empty() {
            let text = if index.dir_exists { "No memories found." } else { "No memories saved yet." };
            return Ok(Reply { text: text.to_string(), json });
        }
        let mut text = format!("Total memories: {}/{limit}\n\n", all.len());
        for m in &all {
            text.push_str(&format!("**{:03}** ({}", m.id, chars_prefix(m.created, 10)));
            if let Some(u) = m.updated {
                text.push_str(&format!(" → {}", chars_prefix(u, 10)));
            }
            text.push(')');
            if let Some(c) = detect_category(&m.tags) {
                text.push_str(&format!(" [{c}]"));
            }
            if m.decay_protected {
                text.push_str(" 🔒");
            }
            text.push_str(&format!(" : {}\n", summary(m.content)));
        }
        // The CLI ends the listing with a newline; a tool result has no need for it.
        text.truncate(text.trim_end_matches('\n').len());
        Ok(Reply { text, json })
    }

    /// `forget_memory`: `kb forget ID`.
    pub fn forget(&self, raw_id: &str) -> Result<Reply> {
        let ctx = self.ctx();
        let id = commands::parse_id(raw_id)?;
        let path = ctx.store()?.forget(id)?;
        let json = json!({ "deleted": id, "path": commands::abs(&path).display().to_string() });
        Ok(Reply { text: format!("✓ Deleted memory {id}: {}", file_name(&path)), json })
    }

    /// `store_memory`: `kb save --store copilot --subject S --citation C... --reason R FACT`.
    ///
    /// TODO(copilot): the Copilot JSONL store (`src/copilot.rs`) is being built on another
    /// branch. Wire this to its save function (secret filter on every field, dedup within the
    /// subject, citations merged) and render its CLI text and `--json` document here.
    pub fn store(&self, subject: String, fact: String, citations: Vec<String>, reason: String) -> Result<Reply> {
        let _ = (subject, fact, citations, reason);
        anyhow::bail!("the Copilot store is not available in this build")
    }
}

/// The compiled context may not exceed this many bytes (SPEC §8); co-cli truncates there too.
pub const CONTEXT_LIMIT: usize = 20_480;

impl Repo {
    /// Returns the always-loaded context (SPEC §8): `## Internal Knowledge`, then the global
    /// and the project `context.md` bodies as `### Global Context` and `### Project Context`.
    /// Empty when neither has a body. Frontmatter problems and unreadable files are warnings on
    /// stderr; the body is used either way.
    ///
    /// TODO(context): this is the fallback the MCP branch ships with. Once `kb context` lands
    /// (`src/context.rs` compile, section-aware truncation, the Copilot records section), call
    /// its compile function here instead, so the resource and `kb context` print the same block.
    pub fn context(&self) -> String {
        let files = [
            ("Global Context", self.layout.global_context()),
            ("Project Context", Some(self.layout.project_context())),
        ];
        let mut sections = Vec::new();
        for (title, path) in files {
            let Some(path) = path else { continue };
            let bytes = match std::fs::read(&path) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    self.style.warn(&format!("skipped {}: {e}", path.display()));
                    continue;
                }
            };
            let Ok(text) = std::str::from_utf8(&bytes) else {
                self.style.warn(&format!("skipped {}: not valid UTF-8", path.display()));
                continue;
            };
            let (body, problems) = crate::context::read(text);
            for p in problems {
                let line = p.line.map_or(String::new(), |l| format!(":{l}"));
                self.style.warn(&format!("{}{line}: {}", path.display(), p.message));
            }
            let body = crate::frontmatter::py_strip(body);
            if !body.is_empty() {
                sections.push(format!("### {title}\n\n{body}"));
            }
        }
        if sections.is_empty() {
            return String::new();
        }
        truncate(format!("## Internal Knowledge\n\n{}", sections.join("\n\n")), CONTEXT_LIMIT)
    }
}

/// Returns `text` cut to at most `limit` bytes, on a character boundary, with a visible marker
/// saying how many bytes were cut from the end.
fn truncate(text: String, limit: usize) -> String {
    if text.len() <= limit {
        return text;
    }
    // The marker's length depends on the number it carries; 20 digits bound any usize.
    let room = limit.saturating_sub(marker(usize::MAX).len());
    let mut end = room.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = text.len() - end;
    format!("{}{}", &text[..end], marker(cut))
}

fn marker(cut: usize) -> String {
    format!("\n\n[kb: {cut} bytes cut from the end: the context exceeds {CONTEXT_LIMIT} bytes]\n")
}

/// Returns one memory in the CLI's JSON shape (SPEC §5 `MEMORY`).
fn memory_json(m: &MemoryRef<'_>, dir: &Path) -> Value {
    json!({
        "id": m.id,
        "path": commands::abs(&dir.join(m.file_name)).display().to_string(),
        "content": m.content,
        "tags": m.tags,
        "created": m.created,
        "updated": m.updated,
        "source": m.source.unwrap_or_else(|| detect_source(&m.tags)),
        "category": detect_category(&m.tags),
        "decay_protected": m.decay_protected,
    })
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
        let layout = Layout::resolve(Some(&dir.join("repo")), &env, dir);
        Repo { layout, pinned_now: None, style: Style { color_out: false, color_err: false, sanitize: false } }
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn context_has_global_then_project_without_frontmatter() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        assert_eq!(repo.context(), "", "no files: an empty context");
        let project = repo.layout.project_context();
        write(&project, "---\nversion: 1\nupdated: 2026-01-01T00:00:00Z\n---\n\n  Project body\n\n");
        assert_eq!(repo.context(), "## Internal Knowledge\n\n### Project Context\n\nProject body");
        // A bad frontmatter is a warning; the body is still used. A blank body adds no section.
        write(&repo.layout.global_context().unwrap(), "---\nversion: x\n---\nGlobal body\n");
        assert_eq!(
            repo.context(),
            "## Internal Knowledge\n\n### Global Context\n\nGlobal body\n\n### Project Context\n\nProject body"
        );
        write(&project, "---\nversion: 1\nupdated: 2026-01-01T00:00:00Z\n---\n\n \n");
        assert_eq!(repo.context(), "## Internal Knowledge\n\n### Global Context\n\nGlobal body");
        // Not UTF-8: skipped with a warning, never a panic.
        std::fs::write(&project, b"\xff\xfe body").unwrap();
        assert_eq!(repo.context(), "## Internal Knowledge\n\n### Global Context\n\nGlobal body");
    }

    #[test]
    fn truncation_keeps_utf8_and_says_what_was_cut() {
        let text = "é".repeat(15_000); // 30,000 bytes
        let out = truncate(text.clone(), CONTEXT_LIMIT);
        assert!(out.len() <= CONTEXT_LIMIT, "{}", out.len());
        let kept = out.find("\n\n[kb: ").unwrap();
        assert!(out[..kept].chars().all(|c| c == 'é'));
        assert!(
            out.ends_with(&format!(
                "[kb: {} bytes cut from the end: the context exceeds 20480 bytes]\n",
                30_000 - kept
            ))
        );
        assert_eq!(truncate("short".into(), CONTEXT_LIMIT), "short");
        let exact = "x".repeat(CONTEXT_LIMIT);
        assert_eq!(truncate(exact.clone(), CONTEXT_LIMIT), exact);
    }

    #[test]
    fn operations_report_errors_as_the_cli_does() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let e = repo.forget("x").unwrap_err();
        assert_eq!(format!("{e:#}"), "invalid memory id 'x': expected a non-negative integer");
        let e = repo.forget("3").unwrap_err();
        assert_eq!(format!("{e:#}"), "memory 3 not found");
        let e = repo.save("  \n".into(), vec![]).unwrap_err();
        assert_eq!(format!("{e:#}"), "nothing to save: the text is empty");
        let saved = repo.save("We always rebase before merging".into(), vec!["pattern".into()]).unwrap();
        assert_eq!(saved.json["action"], "saved");
        let listed = repo.list().unwrap();
        assert_eq!(listed.json["count"], 1);
        assert!(listed.text.starts_with("Total memories: 1/200\n\n**001** ("), "{}", listed.text);
        assert!(listed.text.ends_with(") [pattern] : We always rebase before merging"), "{}", listed.text);
    }
}
