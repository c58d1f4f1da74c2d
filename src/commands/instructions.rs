//! `kb instructions [--for PATH]...`: the `--for` paths checked against the root (a path outside
//! it is a usage error, exit 2, as clap reports a bad value), then the listing
//! (`ops::instructions`).

use super::Ctx;
use crate::cli::InstructionsArgs;
use crate::ops;
use anyhow::Result;
use std::process::ExitCode;

pub fn run(ctx: &Ctx, args: InstructionsArgs) -> Result<ExitCode> {
    let paths = match ops::instructions::for_paths(&ctx.layout, &args.for_paths) {
        Ok(p) => p,
        Err(msg) => {
            let mut root = <crate::cli::Cli as clap::CommandFactory>::command();
            root.build();
            let msg = format!("--for {msg}: give a path inside the repository");
            let err = match root.find_subcommand_mut("instructions") {
                Some(sub) => sub.error(clap::error::ErrorKind::ValueValidation, msg),
                None => root.error(clap::error::ErrorKind::ValueValidation, msg),
            };
            let _ = err.print();
            return Ok(ExitCode::from(2));
        }
    };
    ctx.emit(&ops::instructions::instructions(&ctx.layout, &paths))
}
