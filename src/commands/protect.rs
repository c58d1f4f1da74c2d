//! `kb protect` / `kb unprotect`: set or remove `decay_protected: true`; nothing else changes.

use super::Ctx;
use crate::output;
use anyhow::Result;
use serde::Serialize;
use std::process::ExitCode;

#[derive(Serialize)]
struct ProtectJson {
    id: u64,
    decay_protected: bool,
    path: String,
    changed: bool,
}

pub fn run(ctx: &Ctx, raw_id: &str, protect: bool) -> Result<ExitCode> {
    let id = super::parse_id(raw_id)?;
    let (path, changed) = ctx.store()?.set_protected(id, protect)?;
    if ctx.json {
        output::print_json(&ProtectJson {
            id,
            decay_protected: protect,
            path: super::abs(&path).display().to_string(),
            changed,
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let name = path.file_name().map(|n| ctx.style.clean(&n.to_string_lossy()).into_owned()).unwrap_or_default();
    let text = match (protect, changed) {
        (true, true) => format!("{} Protected memory {id}: {name}", ctx.style.ok("✓")),
        (false, true) => format!("{} Unprotected memory {id}: {name}", ctx.style.ok("✓")),
        (true, false) => format!("Memory {id} is already protected: {name}"),
        (false, false) => format!("Memory {id} is not protected: {name}"),
    };
    output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}
