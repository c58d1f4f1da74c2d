//! `kb check --fix`: the repairs of what a git merge leaves that kb can make safely (docs/safety.md, Git merges),
//! under the repository lock, each file replaced atomically:
//!
//! - memories that share an id: the oldest (parsed `created`, then file name) keeps it, each
//!   newer one gets the next free id (the highest written in any file, valid or not, + 1), its
//!   frontmatter `id` set and its file renamed to match (`memories::store::renumber`);
//! - in the JSONL file, a record line repeated byte for byte is removed and records that share
//!   an id are merged into one (`copilot::merge`).
//!
//! Nothing else changes. Decisions that share an id, and conflict markers, are for a person.

use crate::copilot::merge;
use crate::error::Diagnostic;
use crate::format::merge::id_line;
use crate::journal::Txn;
use crate::memories::store;
use crate::paths::Layout;
use crate::repo::Repo;
use crate::settings::{Environment, Settings};
use anyhow::{Context as _, Result};
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::path::Path;

/// The journal's name of a repair's entry.
pub const OP: &str = "check --fix";

/// What `--fix` did: one entry per repair, at the path and line of what it repaired, and the
/// duplicates it left alone with why.
#[derive(Debug, Default)]
pub struct Fixed {
    pub fixed: Vec<Diagnostic>,
    pub left: Vec<Diagnostic>,
}

/// Repairs the repository at `layout` under its lock.
pub fn fix(layout: &Layout, now: DateTime<Utc>, env: &Environment) -> Result<Fixed> {
    // Settings do not matter to a repair: an invalid value must not stop one (check reports it).
    let (settings, _) = Settings::load_all(layout, &crate::settings::env);
    let repo = Repo { layout: layout.clone(), settings, now, env: env.clone() };
    // One journal entry for every repair of the run: `kb undo` takes them back.
    let mut txn = Txn::begin(&repo, repo.lock()?, OP, "repaired what a merge left");
    let mut out = Fixed::default();
    fix_memory_ids(&repo, &mut txn, &mut out)?;
    fix_records(&repo, &mut txn, &mut out)?;
    txn.finish()?;
    Ok(out)
}

/// Gives each newer memory of a shared id the next free id.
fn fix_memory_ids(repo: &Repo, txn: &mut Txn, out: &mut Fixed) -> Result<()> {
    let index = crate::memories::store::MemoryStore::new(repo).scan()?;
    let duplicates = index.duplicate_ids();
    if duplicates.is_empty() {
        return Ok(());
    }
    let created: HashMap<&str, i64> = index.memories().map(|m| (m.file_name, m.created_at)).collect();
    let mut last = index.max_id().unwrap_or(0);
    for (id, mut names) in duplicates {
        names.sort_by_key(|n| (created.get(n).copied().unwrap_or(i64::MIN), *n));
        let keeper = names[0];
        for name in &names[1..] {
            let path = index.dir.join(name);
            let Some(new_id) = last.checked_add(1) else {
                let why = format!("not repaired: duplicate id {id}: no id is left after {last}");
                out.left.push(Diagnostic::warning(None, why).in_file(&path));
                continue;
            };
            match store::renumber(repo, txn, &path, new_id) {
                Ok(new_path) => {
                    last = new_id;
                    let renamed = if new_path == path { String::new() } else { format!(", renamed from {name}") };
                    let message = format!(
                        "duplicate id {id}: gave this newer memory id {new_id}{renamed} ({keeper}, the oldest, keeps \
                         id {id})"
                    );
                    out.fixed.push(Diagnostic::warning(line_of_id(&new_path), message).in_file(&new_path));
                }
                Err(e) => {
                    let why =
                        format!("not repaired: duplicate id {id}: {}", crate::error::message(&anyhow::Error::from(e)));
                    out.left.push(Diagnostic::warning(None, why).in_file(&path));
                }
            }
        }
    }
    Ok(())
}

/// Removes repeated record lines and merges records that share an id, in one atomic write.
fn fix_records(repo: &Repo, txn: &mut Txn, out: &mut Fixed) -> Result<()> {
    let store = crate::copilot::RecordStore::new(repo);
    let file = store.read()?;
    if !file.exists {
        return Ok(());
    }
    let repairs = merge::repairs(&file);
    store.write(txn, &file, &repairs.edits).with_context(|| format!("cannot repair {}", file.path.display()))?;
    out.fixed.extend(repairs.fixed.into_iter().map(|d| d.in_file(&file.path)));
    out.left.extend(repairs.left.into_iter().map(|d| d.in_file(&file.path)));
    Ok(())
}

/// Returns the line of the `id` entry of the file at `path`.
fn line_of_id(path: &Path) -> Option<usize> {
    std::fs::read(path).ok().and_then(|b| id_line(&String::from_utf8_lossy(&b)))
}
