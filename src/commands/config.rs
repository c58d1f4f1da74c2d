//! `kb config`: the effective settings and where each value came from.

use super::Ctx;
use crate::output;
use anyhow::Result;
use serde_json::{Map, Value, json};
use std::process::ExitCode;

pub fn run(ctx: &Ctx) -> Result<ExitCode> {
    let settings = ctx.settings()?;
    let entries = settings.entries();
    if ctx.json {
        let map: Map<String, Value> =
            entries.iter().map(|(k, v, src)| (k.to_string(), json!({"value": v, "source": src.to_string()}))).collect();
        output::print_json(&map)?;
        return Ok(ExitCode::SUCCESS);
    }
    let width = entries.iter().map(|(k, _, _)| k.len()).max().unwrap_or(0);
    let mut text = String::new();
    for (k, v, src) in &entries {
        text.push_str(&format!("{k:<width$} = {v}  ({src})\n"));
    }
    output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}
