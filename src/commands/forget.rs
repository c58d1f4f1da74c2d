//! `kb forget`: delete a memory by its frontmatter id.

use super::Ctx;
use crate::output;
use anyhow::Result;
use serde::Serialize;
use std::process::ExitCode;

#[derive(Serialize)]
struct ForgetJson {
    deleted: u64,
    path: String,
}

pub fn run(ctx: &Ctx, raw_id: &str) -> Result<ExitCode> {
    let id = super::parse_id(raw_id)?;
    let path = ctx.store()?.forget(id)?;
    if ctx.json {
        output::print_json(&ForgetJson { deleted: id, path: super::abs(&path).display().to_string() })?;
    } else {
        let name = path.file_name().map(|n| ctx.style.clean(&n.to_string_lossy()).into_owned()).unwrap_or_default();
        output::print(&format!("{} Deleted memory {id}: {name}", ctx.style.ok("✓")))?;
    }
    Ok(ExitCode::SUCCESS)
}
