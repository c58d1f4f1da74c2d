//! Keeps what the server holds fresh (`knowledge::warm`): one thread that reads everything once at
//! start (before it watches: the watcher reports every file opened, and the first reading opens
//! them all), then watches the repository's inputs with the watcher `kb watch` uses
//! (`knowledge::watch`: the same folders, the same handling of folders created and removed, of
//! editors' atomic saves and of swap files) and marks what each batch of events touched. A
//! request reads what is marked before it answers; the thread reads it too, once the inputs have
//! been quiet for the debounce period, so that a request rarely has anything left to read. Every
//! 30 seconds, and at once after the watcher reports an error or lost events, it revalidates:
//! a stat of every memory file, taken without holding the state, then the files that differ.
//!
//! The thread lives as long as the process; it prints one line on stderr when the server is warm,
//! and a line per watcher problem.

use super::Server;
use crate::knowledge::warm::{self, Warm};
use crate::knowledge::watch::{Changes, Inputs, Pending, stitch};
use notify_debouncer_full::new_debouncer;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the inputs must be quiet before the thread reads what changed: `kb watch`'s default.
const DEBOUNCE_MS: u64 = 200;

/// How often the thread revalidates unless `KB_MCP_REVALIDATE_MS` says otherwise.
const REVALIDATE: Duration = Duration::from_secs(30);

/// Starts the thread that warms `server`'s state and keeps it fresh.
pub fn start(server: &Server) {
    let warm = server.warm.clone();
    let layout = server.layout.clone();
    let style = server.style;
    let every = server.env.mcp_revalidate.unwrap_or(REVALIDATE).max(Duration::from_millis(10));
    let events = !server.env.mcp_no_events;
    let spawned = std::thread::Builder::new().name("kb-mcp-live".into()).spawn(move || {
        let warn = |message: &str| style.warn(&format!("kb mcp: {message}"));
        run(&warm, Inputs::with_sessions(&layout), every, events, &warn);
    });
    if let Err(e) = spawned {
        // The server still answers, reading what changed at each request's revalidation.
        style.warn(&format!("kb mcp: cannot start the file watcher thread: {e}"));
    }
}

fn run(warm: &Arc<Mutex<Warm>>, inputs: Inputs, every: Duration, events: bool, warn: &dyn Fn(&str)) {
    let (tx, rx) = mpsc::channel();
    let tick = stitch(DEBOUNCE_MS);
    let mut debouncer = if events {
        match new_debouncer(tick, Some(tick), move |r| {
            let _ = tx.send(r);
        }) {
            Ok(d) => Some(d),
            Err(e) => {
                warn(&format!("cannot start the file watcher ({e}): changes are seen at each revalidation"));
                None
            }
        }
    } else {
        drop(tx);
        None
    };
    let started = Instant::now();
    let mut watched = Vec::new();
    {
        // Requests wait until the state is warm (it stays locked), and the line is written first.
        let mut held = warm::lock(warm);
        // Every file is read before the watches are set: the watcher reports each file opened,
        // and 100,000 of them would overflow its queue. What changed meanwhile is found by a stat
        // of each file once the watches are in place.
        // The corpus is built by the revalidation's refresh, once its listing is gone.
        let first = held.refresh_files();
        if let Some(d) = &mut debouncer {
            watched = inputs.rewatch(d, &[], warn);
        }
        match first.and_then(|()| held.revalidate_held()) {
            Ok(_) => {
                let (memories, records, decisions) = held.sizes();
                let watching = match &debouncer {
                    Some(_) => format!("watching {} folders", watched.len()),
                    None => "not watching files".to_string(),
                };
                crate::output::status(&format!(
                    "kb mcp: warm in {:.0} ms: {memories} memories, {records} records, {decisions} decisions; \
                     {watching}, revalidating every {} s",
                    started.elapsed().as_secs_f64() * 1000.0,
                    every.as_secs_f64()
                ));
                crate::heap::release_freed_memory();
                if std::env::var_os("KB_DEBUG_STATS").is_some() {
                    let (index, pairs, rest) = held.heap_bytes();
                    let mb = |b: usize| b as f64 / 1_048_576.0;
                    crate::output::status(&format!(
                        "kb mcp: holding {:.1} MiB: memory index {:.1} MiB, recall pairs {:.1} MiB, recall rest {:.1} MiB",
                        mb(index + pairs + rest),
                        mb(index),
                        mb(pairs),
                        mb(rest)
                    ));
                }
            }
            // The next request reads it all again and reports the problem to the agent.
            Err(e) => warn(&format!("not warm: {}", crate::error::message(&e))),
        }
    }
    let quiet = Duration::from_millis(DEBOUNCE_MS).saturating_sub(tick);
    let longest = quiet + Duration::from_millis(DEBOUNCE_MS);
    let mut pending = Pending::default();
    let mut revalidate_at = Instant::now() + every;
    loop {
        let due = pending.due(quiet, longest).map_or(revalidate_at, |d| d.min(revalidate_at));
        match rx.recv_timeout(due.saturating_duration_since(Instant::now())) {
            Ok(Ok(batch)) => {
                let changes = inputs.changes(&batch);
                if changes.replan()
                    && let Some(d) = &mut debouncer
                {
                    watched = inputs.rewatch(d, &watched, warn);
                }
                if changes.rescan {
                    revalidate_at = Instant::now();
                }
                warm::lock(warm).note(&changes);
                pending.add(changes, Instant::now());
            }
            Ok(Err(errors)) => {
                for e in errors {
                    warn(&format!("file watcher: {e}"));
                }
                warm::lock(warm).note(&Changes { rescan: true, ..Changes::default() });
                revalidate_at = Instant::now();
            }
            Err(RecvTimeoutError::Timeout) => {}
            // Without a watcher nothing sends: revalidation alone keeps the state fresh.
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(due.saturating_duration_since(Instant::now())),
        }
        let now = Instant::now();
        if pending.due(quiet, longest).is_some_and(|d| d <= now) {
            pending.take();
            let refreshed = warm::lock(warm).refresh();
            if let Err(e) = refreshed {
                warn(&crate::error::message(&e));
            }
        }
        if revalidate_at <= now {
            match warm::revalidate(warm) {
                // Only news is told: what the events had missed.
                Ok(0) => {}
                Ok(n) => crate::output::status(&format!(
                    "kb mcp: revalidation read {n} memory files again that file events had not reported, in {:.0} ms",
                    now.elapsed().as_secs_f64() * 1000.0
                )),
                Err(e) => warn(&format!("revalidation: {}", crate::error::message(&e))),
            }
            crate::heap::release_freed_memory();
            revalidate_at = Instant::now() + every;
        }
    }
}
