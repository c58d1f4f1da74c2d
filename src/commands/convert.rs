//! `kb export --to copilot` and `kb import --from copilot`: copy memories between the stores,
//! with dedup, and report what was added, merged and skipped.

use super::{Ctx, records};
use crate::cli::{ExportArgs, ImportArgs, OtherStore};
use crate::convert::{self, Action, Report};
use crate::output;
use anyhow::Result;
use serde::Serialize;
use std::process::ExitCode;

/// `export` / `import` JSON.
#[derive(Serialize)]
struct ConvertJson<'a> {
    direction: &'static str,
    from: &'static str,
    to: &'static str,
    path: String,
    dry_run: bool,
    added: usize,
    merged: usize,
    skipped: usize,
    items: Vec<ItemJson<'a>>,
    warnings: &'a [String],
}

#[derive(Serialize)]
struct ItemJson<'a> {
    source_id: &'a str,
    target_id: Option<&'a str>,
    subject: &'a str,
    action: &'static str,
    similarity: Option<f64>,
    note: &'a str,
}

pub fn export(ctx: &Ctx, args: ExportArgs) -> Result<ExitCode> {
    let OtherStore::Copilot = args.to;
    let report = convert::export(&ctx.store()?, &records::store(ctx)?, args.dry_run, ctx.now)?;
    print(ctx, &report, "export", ("md", records::STORE))
}

pub fn import(ctx: &Ctx, args: ImportArgs) -> Result<ExitCode> {
    let OtherStore::Copilot = args.from;
    let store = records::store(ctx)?;
    let file = records::read(ctx)?;
    records::warn_skipped(ctx, &crate::copilot::Records::parse(&file));
    drop(file);
    let report = convert::import(&ctx.store()?, &store, args.dry_run, ctx.now)?;
    print(ctx, &report, "import", (records::STORE, "md"))
}

fn print(
    ctx: &Ctx,
    report: &Report,
    direction: &'static str,
    (from, to): (&'static str, &'static str),
) -> Result<ExitCode> {
    for item in report.items.iter().filter(|i| i.action == Action::Skipped && i.target_id.is_none()) {
        ctx.style.warn(&format!("not {direction}ed {}: {}", item.source_id, item.note));
    }
    for w in &report.warnings {
        ctx.style.warn(w);
    }
    let (added, merged, skipped) =
        (report.count(Action::Added), report.count(Action::Merged), report.count(Action::Skipped));
    if ctx.json {
        let items = report
            .items
            .iter()
            .map(|i| ItemJson {
                source_id: &i.source_id,
                target_id: i.target_id.as_deref(),
                subject: &i.subject,
                action: i.action.as_str(),
                similarity: i.similarity,
                note: &i.note,
            })
            .collect();
        output::print_json(&ConvertJson {
            direction,
            from,
            to,
            path: super::abs(&report.target).display().to_string(),
            dry_run: report.dry_run,
            added,
            merged,
            skipped,
            items,
            warnings: &report.warnings,
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let name = |store: &str, id: &str| {
        let id = ctx.style.clean(id);
        if store == "md" { format!("memory {id}") } else { format!("Copilot memory {id}") }
    };
    let mut text = String::new();
    for i in &report.items {
        let verb = if report.dry_run {
            match i.action {
                Action::Added => "would add",
                Action::Merged => "would merge",
                Action::Skipped => "would skip",
            }
        } else {
            i.action.as_str()
        };
        let width = if report.dry_run { 11 } else { 7 };
        text.push_str(&format!("{verb:<width$} {}", name(from, &i.source_id)));
        if let Some(t) = &i.target_id {
            text.push_str(&format!(" → {}", name(to, t)));
        }
        text.push_str(&format!(" [{}]", ctx.style.clean(&i.subject)));
        let mut notes: Vec<String> = Vec::new();
        if !i.note.is_empty() {
            notes.push(ctx.style.clean(&i.note).into_owned());
        }
        if let Some(s) = i.similarity.filter(|_| i.action != Action::Added) {
            notes.push(format!("similarity {s:.1}"));
        }
        if !notes.is_empty() {
            text.push_str(&format!(" ({})", notes.join(", ")));
        }
        text.push('\n');
    }
    if !report.items.is_empty() {
        text.push('\n');
    }
    let total = report.items.len();
    let what = if from == "md" {
        if total == 1 { "memory" } else { "memories" }
    } else if total == 1 {
        "Copilot memory"
    } else {
        "Copilot memories"
    };
    let place = ctx.rel(&report.target);
    let line = match (direction, report.dry_run) {
        ("export", false) => format!("{} Exported {total} {what} to {place}", ctx.style.ok("✓")),
        ("export", true) => format!("Would export {total} {what} to {place}"),
        (_, false) => format!("{} Imported {total} {what} into {place}", ctx.style.ok("✓")),
        (_, true) => format!("Would import {total} {what} into {place}"),
    };
    text.push_str(&format!("{line}: {added} added, {merged} merged, {skipped} skipped."));
    if report.dry_run {
        text.push_str(" Nothing written.");
    }
    output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}
