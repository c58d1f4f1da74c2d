//! Changing a memory's text in place: `kb update ID TEXT|-` replaces its content, `kb edit ID`
//! writes back a person's edit of its whole file (the face runs the editor), and MCP
//! `update_memory` is `kb update` under the agent rule (docs/mcp.md). Each is one undo entry.

use super::read::Route;
use super::{Report, View, abs, file_name};
use crate::error::{Diagnostic, KbError};
use crate::journal::Txn;
use crate::kinds::{Sources, Store};
use crate::memories::store::MemoryStore;
use crate::repo::Repo;
use anyhow::Result;
use serde::Serialize;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// JSON: `{"id":N, "path":ABS, "updated":B, "redacted":[RULE...], "store":"md"}`; `updated` is
/// false when the text was already the memory's.
#[derive(Serialize)]
pub struct UpdateReport {
    id: u64,
    path: String,
    updated: bool,
    redacted: Vec<&'static str>,
    store: &'static str,
    #[serde(skip)]
    file: PathBuf,
    #[serde(skip)]
    diagnostics: Vec<Diagnostic>,
}

/// Returns the markdown memory `raw_id` names; a Copilot record's id is refused, saying how a
/// record changes.
fn memory_id(raw_id: &str) -> Result<u64, KbError> {
    match Route::of(raw_id, Sources::only(Store::Md)) {
        Ok(Route::Md(id)) => Ok(id),
        _ if Route::of(raw_id, Sources::memory(None)).is_ok_and(|r| r == Route::Copilot) => Err(KbError::rejected(
            "id",
            format!(
                "{} is a Copilot record: a record's fact is not edited in place; save the corrected fact \
                 (kb save --store copilot) and forget the old one (kb forget {})",
                raw_id.trim(),
                raw_id.trim()
            ),
        )),
        Ok(Route::Copilot) | Err(_) => Err(KbError::rejected("id", format!("invalid memory id {raw_id:?}"))),
    }
}

/// Replaces the content of memory `raw_id` with `text` (`kb update`, MCP `update_memory`): the
/// frontmatter kept, `updated` and `updated_by` set, journaled. A secret is refused unless
/// `redact`; an agent may change only what an agent wrote.
pub fn update(repo: &Repo, raw_id: &str, text: &str, redact: bool) -> Result<UpdateReport> {
    super::read::refuse_shared(repo, raw_id)?;
    let id = memory_id(raw_id)?;
    let mut txn = Txn::begin(repo, repo.lock()?, "update", format!("updated memory {id}"));
    let change = MemoryStore::new(repo).set_content(&mut txn, id, text, redact)?;
    txn.finish()?;
    let diagnostics = super::save::redacted_warning(&change.redacted).into_iter().collect();
    Ok(UpdateReport {
        id,
        path: abs(&change.path),
        updated: change.changed,
        redacted: change.redacted,
        store: "md",
        file: change.path,
        diagnostics,
    })
}

/// A memory's file as it was when a person began to edit it ([`begin_edit`]).
pub struct Editing {
    pub id: u64,
    pub path: PathBuf,
    pub before: String,
}

/// Reads memory `raw_id`'s file for `kb edit`.
pub fn begin_edit(repo: &Repo, raw_id: &str) -> Result<Editing> {
    super::read::refuse_shared(repo, raw_id)?;
    let id = memory_id(raw_id)?;
    let (path, before) = MemoryStore::new(repo).text_of(id)?;
    Ok(Editing { id, path, before })
}

/// Writes back `edited`, the person's edit of `editing` kept at `draft`: refused, with the
/// problem and the file as it was, when it no longer reads as the memory (a broken frontmatter,
/// another id), holds a secret, or the file changed meanwhile. Journaled.
pub fn finish_edit(repo: &Repo, editing: &Editing, edited: &str, draft: &Path) -> Result<UpdateReport> {
    let id = editing.id;
    let mut txn = Txn::begin(repo, repo.lock()?, "edit", format!("edited memory {id}"));
    let (path, changed) = MemoryStore::new(repo).replace_text(&mut txn, id, &editing.before, edited, draft)?;
    txn.finish()?;
    Ok(UpdateReport {
        id,
        path: abs(&path),
        updated: changed,
        redacted: Vec::new(),
        store: "md",
        file: path,
        diagnostics: Vec::new(),
    })
}

impl Report for UpdateReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let (id, name) = (self.id, v.clean(&file_name(&self.file)).into_owned());
        if !self.updated {
            return writeln!(w, "Memory {id} is unchanged: {name}");
        }
        writeln!(w, "{} Updated memory {id}: {name}", v.style.ok("✓"))
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_markdown_memory_is_updated_in_place() {
        assert_eq!(memory_id(" 7 ").unwrap(), 7);
        let record = memory_id("mem-1a2b").unwrap_err().to_string();
        assert!(record.contains("mem-1a2b is a Copilot record") && record.contains("kb forget mem-1a2b"), "{record}");
        assert!(memory_id("").is_err());
    }
}
