//! Protecting a memory from decay: set or remove `decay_protected: true`; nothing else changes.

use super::{Report, View, abs, file_name};
use crate::journal::Txn;
use crate::memories::store::MemoryStore;
use crate::repo::{Repo, parse_id};
use anyhow::Result;
use serde::Serialize;
use std::io::{self, Write};
use std::path::PathBuf;

/// JSON: `{"id":N, "decay_protected":B, "path":ABS, "changed":B}`.
#[derive(Serialize)]
pub struct ProtectReport {
    id: u64,
    decay_protected: bool,
    path: String,
    changed: bool,
    #[serde(skip)]
    file: PathBuf,
}

/// Protects (`protect`) or unprotects the memory `raw_id`.
pub fn protect(repo: &Repo, raw_id: &str, protect: bool) -> Result<ProtectReport> {
    super::read::refuse_shared(repo, raw_id)?;
    let id = parse_id(raw_id)?;
    let mut txn = Txn::unrecorded(repo.lock()?);
    let (file, changed) = MemoryStore::new(repo).set_protected(&mut txn, id, protect)?;
    txn.finish()?;
    Ok(ProtectReport { id, decay_protected: protect, path: abs(&file), changed, file })
}

impl Report for ProtectReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let (id, name, mark) = (self.id, v.clean(&file_name(&self.file)).into_owned(), v.style.ok("✓"));
        match (self.decay_protected, self.changed) {
            (true, true) => writeln!(w, "{mark} Protected memory {id}: {name}"),
            (false, true) => writeln!(w, "{mark} Unprotected memory {id}: {name}"),
            (true, false) => writeln!(w, "Memory {id} is already protected: {name}"),
            (false, false) => writeln!(w, "Memory {id} is not protected: {name}"),
        }
    }
}
