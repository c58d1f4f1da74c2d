//! `kb shared`: list, add, remove, sync and propose shared sources (`ops::shared`).

use super::Ctx;
use crate::cli::{SharedAction, SharedArgs};
use crate::ops::{self, Report};
use anyhow::Result;
use std::process::ExitCode;

pub fn run(ctx: &Ctx, args: SharedArgs) -> Result<ExitCode> {
    match args.action {
        None => ctx.emit(&ops::shared::list(&ctx.repo()?)),
        Some(SharedAction::Add { name, url, reference }) => {
            ctx.emit(&ops::shared::add(&ctx.layout, &ctx.env, &name, &url, reference.as_deref())?)
        }
        Some(SharedAction::Remove { name }) => ctx.emit(&ops::shared::remove(&ctx.layout, &ctx.env, &name)?),
        Some(SharedAction::Sync { names, quiet }) => {
            let report = ops::shared::sync(&ctx.repo()?, &names)?;
            if quiet {
                return Ok(if report.succeeded() { ExitCode::SUCCESS } else { ExitCode::FAILURE });
            }
            ctx.emit(&report)
        }
        Some(SharedAction::Propose { id, name }) => ctx.emit(&ops::shared::propose(&ctx.repo()?, &id, &name)?),
    }
}
