//! Forgetting: a markdown memory by its frontmatter id, or a Copilot record by its id.

use super::read::{COPILOT, Route};
use super::{Report, View, abs, file_name};
use crate::copilot::RecordStore;
use crate::journal::Txn;
use crate::kinds::Sources;
use crate::memories::store::MemoryStore;
use crate::repo::Repo;
use anyhow::Result;
use serde::Serialize;
use std::io::{self, Write};
use std::path::PathBuf;

/// What a forget did. JSON: `{"deleted":N, "path":ABS, "store":"md"}` for a memory,
/// `{"deleted":S, "path":ABS, "line":N, "store":"copilot"}` for a record.
#[derive(Serialize)]
#[serde(untagged)]
pub enum ForgetReport {
    Md {
        deleted: u64,
        path: String,
        store: &'static str,
        #[serde(skip)]
        file: PathBuf,
    },
    Copilot {
        deleted: String,
        path: String,
        line: usize,
        store: &'static str,
        #[serde(skip)]
        subject: String,
        #[serde(skip)]
        file: PathBuf,
    },
}

/// Deletes what `raw_id` leads to within `scope` (see [`Route`]).
pub fn forget(repo: &Repo, raw_id: &str, scope: Sources) -> Result<ForgetReport> {
    super::read::refuse_shared(repo, raw_id)?;
    match Route::of(raw_id, scope)? {
        Route::Md(id) => {
            let mut txn = Txn::begin(repo, repo.lock()?, "forget", format!("forgot memory {id}"));
            let path = MemoryStore::new(repo).forget(&mut txn, id)?;
            txn.finish()?;
            Ok(ForgetReport::Md { deleted: id, path: abs(&path), store: "md", file: path })
        }
        Route::Copilot => forget_record(repo, raw_id),
    }
}

fn forget_record(repo: &Repo, raw_id: &str) -> Result<ForgetReport> {
    let id = raw_id.trim();
    let mut txn = Txn::begin(repo, repo.lock()?, "forget", format!("forgot Copilot memory {id}"));
    let out = RecordStore::new(repo).forget(&mut txn, id)?;
    txn.finish()?;
    Ok(ForgetReport::Copilot {
        deleted: out.id,
        path: abs(&out.path),
        line: out.line,
        store: COPILOT,
        subject: out.subject,
        file: out.path,
    })
}

impl Report for ForgetReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let mark = v.style.ok("✓");
        match self {
            ForgetReport::Md { deleted, file, .. } => {
                writeln!(w, "{mark} Deleted memory {deleted}: {}", v.clean(&file_name(file)))
            }
            ForgetReport::Copilot { deleted, line, subject, file, .. } => writeln!(
                w,
                "{mark} Deleted Copilot memory {} [{}] (line {line} of {})",
                v.clean(deleted),
                v.clean(subject),
                v.rel(file)
            ),
        }
    }
}
