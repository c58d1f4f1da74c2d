//! `kb edit ID`: the memory's file opened in the person's editor. The editor works on a draft
//! copy, so the file changes only when the edit reads back as the memory; a refused edit stays in
//! the draft, named in the error, so no work is lost.

use super::Ctx;
use crate::ops;
use anyhow::{Context, Result, bail};
use std::process::{Command, ExitCode};

/// Opens memory `raw_id` in the editor, then keeps the edit (or refuses it with the problem).
pub fn run(ctx: &Ctx, raw_id: &str) -> Result<ExitCode> {
    let repo = ctx.repo()?;
    let editing = ops::update::begin_edit(&repo, raw_id)?;
    let name = editing.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut draft = tempfile::Builder::new()
        .prefix(&format!("kb-edit-{}-", editing.id))
        .suffix(&format!("-{name}"))
        .tempfile()
        .context("cannot create the draft file for the editor")?;
    std::io::Write::write_all(&mut draft, editing.before.as_bytes()).context("cannot write the draft file")?;
    open_editor(draft.path())?;
    let edited = std::fs::read(draft.path()).context("cannot read the edited draft")?;
    let edited = String::from_utf8(edited)
        .map_err(|e| anyhow::anyhow!("the edit is not valid UTF-8 (at byte {})", e.utf8_error().valid_up_to()));
    let result = edited.and_then(|text| ops::update::finish_edit(&repo, &editing, &text, draft.path()));
    match result {
        Ok(report) => ctx.emit(&report),
        Err(e) => {
            // Keep the person's work: the draft outlives kb and the error names it.
            let kept = draft.keep().map(|(_, path)| path).ok();
            match kept {
                Some(path) => Err(e.context(format!(
                    "memory {} was left as it was; your edit is in {}",
                    editing.id,
                    path.display()
                ))),
                None => Err(e),
            }
        }
    }
}

/// Runs the editor docs/commands.md names, `$EDITOR`, then `$VISUAL`, then `vi`, on `path` through the
/// shell (as git does, so `EDITOR="code --wait"` works), and waits for it.
fn open_editor(path: &std::path::Path) -> Result<()> {
    let editor = ["EDITOR", "VISUAL"]
        .iter()
        .find_map(|k| crate::settings::env(k).filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| "vi".to_string());
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$@\""))
        .arg(&editor)
        .arg(path)
        .status()
        .with_context(|| format!("cannot run the editor {editor:?}"))?;
    if !status.success() {
        bail!("the editor {editor:?} exited with {status}; the memory was left as it was");
    }
    Ok(())
}
