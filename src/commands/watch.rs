//! `kb watch`: keep the context targets current. Compiles once, then recompiles once the inputs
//! have been quiet for the debounce period after a change (`crate::knowledge::watch` decides which
//! events count and keeps the trailing edge), printing one line per compile on stderr, until
//! SIGINT or SIGTERM.

use super::Ctx;
use crate::cli::WatchArgs;
use crate::knowledge::watch::Watcher;
use crate::knowledge::watch::{Changes, Inputs, Pending};
use crate::ops::Report as _;
use crate::ops::compile::{CompileReport, TargetJson, compile};
use crate::output::status;
use anyhow::{Context as _, Result};
use notify_debouncer_full::notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, new_debouncer};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// What the loop waits for.
enum Msg {
    Events(DebounceEventResult),
    Stop,
}

/// Signals received so far: the first stops the loop cleanly, the second exits at once.
static SIGNALS: AtomicUsize = AtomicUsize::new(0);

/// One compile in `--json` mode, one JSON document per line on stdout:
/// `{"event":"compiled"|"recompiled", "changed":[S...], "bytes":N, "truncated":bool,
/// "written":N, "unchanged":N, "failed":N, "ms":F, "targets":[TARGET...]}`.
#[derive(Serialize)]
struct CompileLine {
    event: &'static str,
    changed: Vec<String>,
    bytes: usize,
    truncated: bool,
    written: usize,
    unchanged: usize,
    failed: usize,
    ms: f64,
    targets: Vec<TargetJson>,
}

pub fn run(ctx: &Ctx, args: WatchArgs) -> Result<ExitCode> {
    if args.once {
        let failed = recompile(ctx, None)?.counts().2;
        return Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE });
    }
    let (tx, rx) = mpsc::channel();
    install_signal_handler(tx.clone())?;
    let events = tx.clone();
    let debounce = Duration::from_millis(args.debounce);
    let stitch = crate::knowledge::watch::stitch(args.debounce);
    let mut debouncer = new_debouncer(stitch, Some(stitch), move |r| {
        let _ = events.send(Msg::Events(r));
    })
    .context("cannot start the file watcher")?;
    // A change arrives `stitch` to twice that after it happened; waiting `quiet` more after the
    // last one makes the inputs quiet for the debounce period (up to one tick more).
    let quiet = debounce.saturating_sub(stitch);
    let longest = quiet + debounce;
    let mut inputs = watched_inputs(ctx);
    let mut watched = inputs.rewatch(&mut debouncer, &[], &warn(ctx));
    // The first compile runs after the watches are in place, so no change can fall between them.
    let mut own = compile_watched(ctx, None, &inputs, &mut debouncer, &mut watched);
    // Events of kb's own folder creations arrive within a debounce period or two; after that, a
    // folder event is the user's.
    let own_window = debounce * 2 + Duration::from_millis(500);
    let mut own_until = Instant::now() + own_window;
    status(&format!(
        "watching {} folders for context changes (debounce {} ms); Ctrl-C stops",
        watched.len(),
        args.debounce
    ));
    let mut pending = Pending::default();
    loop {
        let msg = match pending.due(quiet, longest) {
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(due) => rx.recv_timeout(due.saturating_duration_since(Instant::now())),
        };
        let mut changes = match msg {
            Ok(Msg::Events(Ok(events))) => inputs.changes(&events),
            Ok(Msg::Events(Err(errors))) => {
                for e in errors {
                    ctx.style.warn(&format!("file watcher: {e}"));
                }
                // Lost events: read everything again.
                Changes { rescan: true, ..Changes::default() }
            }
            Err(RecvTimeoutError::Timeout) => {
                let changes = pending.take();
                own = compile_watched(ctx, Some(&changes.paths), &inputs, &mut debouncer, &mut watched);
                own_until = Instant::now() + own_window;
                continue;
            }
            Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => {
                // A change made just before the signal still reaches the targets.
                if !pending.is_empty() {
                    compile_watched(ctx, Some(&pending.take().paths), &inputs, &mut debouncer, &mut watched);
                }
                break;
            }
        };
        if Instant::now() > own_until {
            own.clear();
        }
        changes.discount(&mut own);
        // The settings name the shared sources: a change there may watch other copies.
        let settings = ctx.layout.project_settings();
        if changes.paths.contains(&settings) {
            inputs = watched_inputs(ctx);
        }
        // New folders are watched at once; the compile waits for the inputs to be quiet.
        if changes.replan() || changes.paths.contains(&settings) {
            watched = inputs.rewatch(&mut debouncer, &watched, &warn(ctx));
        }
        pending.add(changes, Instant::now());
    }
    debouncer.stop_nonblocking();
    Ok(ExitCode::SUCCESS)
}

/// The inputs of the compiled block: this repository's, and the context and decisions of each
/// shared source the settings name (settings that do not load: this repository's alone).
fn watched_inputs(ctx: &Ctx) -> Inputs {
    let inputs = Inputs::new(&ctx.layout);
    let Ok(repo) = ctx.repo() else { return inputs };
    let sources = crate::shared::sources(&repo.layout, &repo.settings.shared.value, repo.env.cache_home.as_deref());
    inputs.with_shared(sources.into_iter().map(|s| s.root))
}

/// Ends the loop on SIGINT, SIGTERM or SIGHUP; a second signal exits at once with status 130.
///
/// `ctrlc` with its `termination` feature covers all three with one handler that runs on its
/// own thread, where sending on a channel is allowed (a raw signal handler may not allocate or
/// lock); `signal-hook` would do too but needs more code for the same thing.
fn install_signal_handler(tx: Sender<Msg>) -> Result<()> {
    ctrlc::set_handler(move || {
        if SIGNALS.fetch_add(1, Ordering::SeqCst) > 0 {
            std::process::exit(130);
        }
        let _ = tx.send(Msg::Stop);
    })
    .context("cannot install the signal handler")
}

/// Prints a watcher's warning.
fn warn(ctx: &Ctx) -> impl Fn(&str) + '_ {
    |message| ctx.style.warn(message)
}

/// Compiles (see `recompile`), after creating the folders the compile writes into (the
/// targets', the lock's) and watching those that hold inputs: a file written into such a folder
/// is then either seen by the compile or reported by the watch. Returns the folders it created
/// that hold inputs, so that their events can be told from the user's.
fn compile_watched(
    ctx: &Ctx,
    changed: Option<&[PathBuf]>,
    inputs: &Inputs,
    d: &mut Watcher,
    watched: &mut Vec<(PathBuf, RecursiveMode)>,
) -> Vec<PathBuf> {
    let before = inputs.existing_folders();
    let mine = prepare_folders(ctx);
    let created: Vec<PathBuf> = inputs
        .existing_folders()
        .into_iter()
        .filter(|p| !before.contains(p) && mine.iter().any(|m| m.starts_with(p)))
        .collect();
    if !created.is_empty() {
        *watched = inputs.rewatch(d, watched, &warn(ctx));
    }
    report_error(ctx, recompile(ctx, changed).map(|_| ()));
    created
}

/// Creates the folders of the lock and of every target that resolves; returns those paths.
/// Problems are left for the compile to report.
fn prepare_folders(ctx: &Ctx) -> Vec<PathBuf> {
    let mut paths = vec![ctx.layout.lock()];
    if let Ok(repo) = ctx.repo() {
        paths.extend(crate::ops::compile::written_paths(&repo));
    }
    for dir in paths.iter().filter_map(|p| p.parent()) {
        let _ = std::fs::create_dir_all(dir);
    }
    paths
}

/// Compiles and prints one line about it (plus warnings and target errors); `changed` is what
/// triggered it, `None` for the first compile. Returns what the compile did.
fn recompile(ctx: &Ctx, changed: Option<&[PathBuf]>) -> Result<CompileReport> {
    let report = compile(&ctx.repo()?)?;
    let view = ctx.view();
    for d in report.diagnostics() {
        ctx.style.diagnostic(d, |p| view.rel(p).into_owned());
    }
    for e in report.errors() {
        ctx.style.error(&e);
    }
    let (written, unchanged, failed) = report.counts();
    let ms = report.elapsed.as_secs_f64() * 1000.0;
    let shown: Vec<String> = changed.unwrap_or_default().iter().map(|p| view.rel(p).into_owned()).collect();
    let what = match shown.len() {
        0 if changed.is_some() => "recompiled: folders changed".to_string(),
        0 => "compiled".to_string(),
        1..=3 => format!("recompiled: {} changed", shown.join(", ")),
        n => format!("recompiled: {} and {} more changed", shown[..3].join(", "), n - 3),
    };
    let failed_note = if failed > 0 { format!(", {failed} failed") } else { String::new() };
    status(&format!(
        "{what}; {} bytes{}; {written} written, {unchanged} unchanged{failed_note}; {ms:.1} ms",
        report.block.bytes,
        if report.block.truncated { " (truncated)" } else { "" },
    ));
    if ctx.json {
        crate::output::print(&serde_json::to_string(&CompileLine {
            event: if changed.is_some() { "recompiled" } else { "compiled" },
            changed: shown,
            bytes: report.block.bytes,
            truncated: report.block.truncated,
            written,
            unchanged,
            failed,
            ms: (ms * 100.0).round() / 100.0,
            targets: report.targets_json(),
        })?)?;
    }
    Ok(report)
}

/// Prints a compile that could not run at all (invalid settings, lock not obtained); the watch
/// goes on and tries again at the next change.
fn report_error(ctx: &Ctx, r: Result<()>) {
    if let Err(e) = r {
        ctx.style.error(&format!("{}; not compiled, waiting for the next change", crate::error::message(&e)));
    }
}
