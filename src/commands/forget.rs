//! `kb forget`: delete a memory by its frontmatter id, or a Copilot record by its id.

use super::{Ctx, records};
use crate::cli::StoreKind;
use crate::output;
use anyhow::Result;
use serde::Serialize;
use std::process::ExitCode;

#[derive(Serialize)]
struct ForgetJson {
    deleted: u64,
    path: String,
    store: &'static str,
}

/// An integer id is a markdown memory (then, unless narrowed, a Copilot record with that id);
/// any other id is a Copilot record.
pub fn run(ctx: &Ctx, raw_id: &str, only: Option<StoreKind>) -> Result<ExitCode> {
    let id = match only {
        Some(StoreKind::Copilot) => return records::forget(ctx, raw_id),
        Some(StoreKind::Md) => super::parse_id(raw_id)?,
        None => match super::parse_id(raw_id) {
            Ok(id) => id,
            Err(_) => return records::forget(ctx, raw_id),
        },
    };
    let path = match ctx.store()?.forget(id) {
        Ok(path) => path,
        Err(crate::memories::store::StoreError::NotFound(_))
            if only.is_none() && super::read::has_record(ctx, raw_id) =>
        {
            return records::forget(ctx, raw_id);
        }
        Err(e) => return Err(e.into()),
    };
    if ctx.json {
        output::print_json(&ForgetJson { deleted: id, path: super::abs(&path).display().to_string(), store: "md" })?;
    } else {
        let name = path.file_name().map(|n| ctx.style.clean(&n.to_string_lossy()).into_owned()).unwrap_or_default();
        output::print(&format!("{} Deleted memory {id}: {name}", ctx.style.ok("✓")))?;
    }
    Ok(ExitCode::SUCCESS)
}
