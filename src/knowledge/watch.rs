//! What `kb watch` watches and which file events make it recompile (docs/behaviour.md, kb watch).
//!
//! The inputs are the two `context.md` files, the two `settings.json` files, the Copilot JSONL
//! file, the session file and the folders of memories, decisions and scoped instructions. Rather than watching the whole repository (a recursive watch
//! costs one inotify watch per folder, and node_modules-sized trees exhaust the limit), kb
//! watches only the folders that hold inputs; a folder that does not exist yet is covered by a
//! watch on its nearest existing ancestor, so its creation is seen.
//!
//! Events are filtered by path against that list, which is why kb never reacts to its own writes
//! (a target can never be an input: `compile::resolve` refuses that) nor to editors' swap,
//! backup and temporary files. notify does not report files created inside a brand-new folder
//! (notify-rs/notify#727), so any event on a folder that holds or may hold inputs
//! asks for a re-plan of the watches and a full recompile, which reads every input afresh anyway.
//!
//! The debounce is a trailing edge of kb's own, kept by [`Pending`]: a recompile waits until the
//! inputs have been quiet for the debounce period, so a burst of saves is one recompile.
//! notify-debouncer-full cannot do that alone: it delays every event by its timeout and emits
//! each on the first tick after that, so a burst spread over several ticks came out as several
//! batches, each a recompile (10 saves in 0.1 s with a 200 ms debounce made 5). kb therefore runs
//! it with a short timeout (it still stitches rename pairs and merges each tick's events) and
//! waits for the rest of the period itself.
//!
//! This module owns no threads and prints nothing; `commands::watch` runs the loop, and `kb mcp`
//! one of its own that keeps the server's state fresh (`mcp::live`).

use crate::paths::Layout;
use notify_debouncer_full::notify::{EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebouncedEvent, Debouncer, RecommendedCache};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The inputs of the compiled context and the folders that hold them.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// Files whose every change matters.
    files: Vec<PathBuf>,
    /// The folders of markdown inputs (memories, decisions, scoped instructions): `*.md` files
    /// in them (and in their sub-folders) matter.
    markdown: Vec<PathBuf>,
    /// Folders to watch, with whether to watch them recursively.
    folders: Vec<(PathBuf, RecursiveMode)>,
}

/// What a batch of events asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// The input paths (files or folders) that changed, in event order, without repeats.
    pub paths: Vec<PathBuf>,
    /// Those of `paths` that are folders holding (or above) inputs: they appeared, moved or went
    /// away, so the watches must be set up again.
    pub folders: Vec<PathBuf>,
    /// Events were lost: read everything and set the watches up again.
    pub rescan: bool,
}

impl Changes {
    /// Returns whether nothing relevant happened.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty() && !self.rescan
    }

    /// Returns whether the watches must be set up again.
    pub fn replan(&self) -> bool {
        self.rescan || !self.folders.is_empty()
    }

    /// Adds another batch's changes.
    pub fn merge(&mut self, other: Changes) {
        for p in other.paths {
            if !self.paths.contains(&p) {
                self.paths.push(p);
            }
        }
        for p in other.folders {
            if !self.folders.contains(&p) {
                self.folders.push(p);
            }
        }
        self.rescan |= other.rescan;
    }

    /// Drops the folder events of folders that kb itself created (for a target or its lock):
    /// its own writes are no reason to recompile. Each folder in `own` is discounted once and
    /// removed from it.
    pub fn discount(&mut self, own: &mut Vec<PathBuf>) {
        let seen: Vec<PathBuf> = own.iter().filter(|p| self.folders.contains(p)).cloned().collect();
        self.paths.retain(|p| !seen.contains(p));
        self.folders.retain(|p| !seen.contains(p));
        own.retain(|p| !seen.contains(p));
    }
}

/// Changes waiting for the inputs to be quiet: the trailing edge of the debounce.
#[derive(Debug, Clone, Default)]
pub struct Pending {
    changes: Changes,
    /// When the first and the last of the waiting changes arrived.
    first: Option<Instant>,
    last: Option<Instant>,
}

impl Pending {
    /// Adds changes that arrived at `now`; nothing if they are empty.
    pub fn add(&mut self, changes: Changes, now: Instant) {
        if changes.is_empty() {
            return;
        }
        self.changes.merge(changes);
        self.first.get_or_insert(now);
        self.last = Some(now);
    }

    /// Returns whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// Returns when to recompile: once nothing has arrived for `quiet`, but while changes keep
    /// coming, no later than `longest` after the first (a steady stream must not starve the
    /// targets). `None` when nothing waits.
    pub fn due(&self, quiet: Duration, longest: Duration) -> Option<Instant> {
        Some((self.last? + quiet).min(self.first? + longest))
    }

    /// Returns the waiting changes and forgets them.
    pub fn take(&mut self) -> Changes {
        std::mem::take(self).changes
    }
}

impl Inputs {
    /// Returns the inputs of `layout` for a long-running server, which also reads the ended
    /// sessions (recall searches them).
    pub fn with_sessions(layout: &Layout) -> Inputs {
        let mut inputs = Inputs::new(layout);
        inputs.markdown.push(layout.sessions());
        inputs.folders.push((layout.sessions(), RecursiveMode::NonRecursive));
        inputs
    }

    /// Returns the inputs of `layout`.
    pub fn new(layout: &Layout) -> Inputs {
        let mut files =
            vec![layout.project_context(), layout.project_settings(), layout.copilot_memories(), layout.session()];
        files.extend(layout.global_context());
        files.extend(layout.global_settings());
        let mut folders = vec![
            (layout.root.clone(), RecursiveMode::NonRecursive),
            (layout.co_cli(), RecursiveMode::NonRecursive),
            (layout.knowledge(), RecursiveMode::NonRecursive),
            (layout.memories(), RecursiveMode::Recursive),
            (layout.decisions(), RecursiveMode::NonRecursive),
            (layout.root.join(".github"), RecursiveMode::NonRecursive),
            (layout.instructions(), RecursiveMode::Recursive),
        ];
        if let Some(c) = &layout.config {
            folders.push((c.clone(), RecursiveMode::NonRecursive));
            folders.push((c.join("knowledge"), RecursiveMode::NonRecursive));
        }
        Inputs { files, markdown: vec![layout.memories(), layout.decisions(), layout.instructions()], folders }
    }

    /// Adds the files of the shared sources at `roots` that reach the compiled block (their
    /// context and decisions), so that a sync moving a copy recompiles like any edit.
    pub fn with_shared(mut self, roots: impl IntoIterator<Item = PathBuf>) -> Inputs {
        for root in roots {
            let l = Layout { root, config: None };
            self.files.push(l.project_context());
            self.folders.push((l.knowledge(), RecursiveMode::NonRecursive));
            self.folders.push((l.decisions(), RecursiveMode::NonRecursive));
            self.markdown.push(l.decisions());
        }
        self
    }

    /// Returns the folders to watch now: each wanted folder that exists, else its nearest
    /// existing ancestor (not recursively), without repeats.
    pub fn plan(&self) -> Vec<(PathBuf, RecursiveMode)> {
        let mut out: Vec<(PathBuf, RecursiveMode)> = Vec::new();
        for (dir, mode) in &self.folders {
            let (dir, mode) = if dir.is_dir() {
                (dir.clone(), *mode)
            } else {
                match dir.ancestors().skip(1).find(|a| a.is_dir()) {
                    Some(a) => (a.to_path_buf(), RecursiveMode::NonRecursive),
                    None => continue,
                }
            };
            match out.iter_mut().find(|(d, _)| *d == dir) {
                Some(entry) if mode == RecursiveMode::Recursive => entry.1 = mode,
                Some(_) => {}
                None => out.push((dir, mode)),
            }
        }
        out
    }

    /// Returns the wanted folders and their ancestors that exist now; comparing two snapshots
    /// tells which of them a compile created.
    pub fn existing_folders(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        for (dir, _) in &self.folders {
            for a in dir.ancestors() {
                if !out.iter().any(|o| o == a) && a.is_dir() {
                    out.push(a.to_path_buf());
                }
            }
        }
        out
    }

    /// Returns whether a change at `path` matters, and whether it is a folder that holds (or may
    /// come to hold) inputs. `is_folder` is the event's own word, when it has one.
    pub fn classify(&self, path: &Path, is_folder: bool) -> Option<bool> {
        if self.files.iter().any(|f| f == path) {
            return Some(false);
        }
        // A wanted folder, or a folder above one (e.g. `.co-cli` appearing).
        if self.folders.iter().any(|(d, _)| d.starts_with(path)) && path != self.folders[0].0 {
            return Some(true);
        }
        if self.markdown.iter().any(|m| path.starts_with(m)) {
            if is_folder || path.is_dir() {
                return Some(true);
            }
            return memory_file_name(path).then_some(false);
        }
        None
    }

    /// Returns what a batch of debounced events asks for.
    pub fn changes(&self, events: &[DebouncedEvent]) -> Changes {
        let mut ch = Changes::default();
        for ev in events {
            if ev.event.need_rescan() {
                ch.rescan = true;
                continue;
            }
            let folder_kind = match ev.event.kind {
                EventKind::Access(_) => continue,
                EventKind::Create(k) => k == notify_debouncer_full::notify::event::CreateKind::Folder,
                EventKind::Remove(k) => k == notify_debouncer_full::notify::event::RemoveKind::Folder,
                _ => false,
            };
            for p in &ev.event.paths {
                if let Some(folder) = self.classify(p, folder_kind) {
                    if folder && !ch.folders.contains(p) {
                        ch.folders.push(p.clone());
                    }
                    if !ch.paths.contains(p) {
                        ch.paths.push(p.clone());
                    }
                }
            }
        }
        ch
    }
}

/// Returns the debouncer's timeout, which is also its tick: an eighth of the debounce, 1 to 25 ms.
/// The debouncer only stitches rename pairs and merges the events of a tick; kb waits for the
/// rest of the debounce period itself (`Pending`), so the timeout adds nothing to the latency, and
/// the tick adds up to one tick: a median near debounce + 12 ms at 200 ms, for 40 idle wake-ups a
/// second.
pub fn stitch(debounce_ms: u64) -> Duration {
    Duration::from_micros(debounce_ms * 1000 / 8).clamp(Duration::from_millis(1), Duration::from_millis(25))
}

/// The file watcher `kb watch` and `kb mcp` run: notify's, behind the debouncer.
pub type Watcher = Debouncer<RecommendedWatcher, RecommendedCache>;

impl Inputs {
    /// Replaces the watches in `old` by the current plan; returns the new ones. All are replaced,
    /// not only the difference: a folder removed and created again has lost its watch. A folder
    /// that cannot be watched is `warn`ed about.
    pub fn rewatch(
        &self,
        d: &mut Watcher,
        old: &[(PathBuf, RecursiveMode)],
        warn: &dyn Fn(&str),
    ) -> Vec<(PathBuf, RecursiveMode)> {
        for (dir, _) in old {
            let _ = d.unwatch(dir);
        }
        let mut now = Vec::new();
        for (dir, mode) in self.plan() {
            match d.watch(&dir, mode) {
                Ok(()) => now.push((dir, mode)),
                // The folder went away between planning and watching: its removal is an event too.
                Err(e) if !dir.exists() => drop(e),
                Err(e) => warn(&format!("cannot watch {}: {e}", dir.display())),
            }
        }
        now
    }
}

/// Returns whether a file name in a markdown input folder is an input: `*.md`, not hidden
/// (editors' swap files, kb's own temporary files) and not a backup.
fn memory_file_name(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".md") && !name.starts_with('.') && !name.starts_with('#')
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify_debouncer_full::notify::Event;
    use notify_debouncer_full::notify::event::{AccessKind, CreateKind, ModifyKind, RemoveKind, RenameMode};

    fn layout(dir: &Path) -> Layout {
        Layout { root: dir.join("repo"), config: Some(dir.join("cfg")) }
    }

    fn ev(kind: EventKind, paths: &[PathBuf]) -> DebouncedEvent {
        let mut e = Event::new(kind);
        e.paths = paths.to_vec();
        DebouncedEvent::new(e, Instant::now())
    }

    #[test]
    fn plan_covers_missing_folders_with_ancestors() {
        let dir = tempfile::tempdir().unwrap();
        let l = layout(dir.path());
        std::fs::create_dir_all(&l.root).unwrap();
        let plan = Inputs::new(&l).plan();
        assert_eq!(
            plan,
            vec![
                (l.root.clone(), RecursiveMode::NonRecursive),
                (dir.path().to_path_buf(), RecursiveMode::NonRecursive)
            ]
        );
        std::fs::create_dir_all(l.memories()).unwrap();
        let plan = Inputs::new(&l).plan();
        assert!(plan.contains(&(l.memories(), RecursiveMode::Recursive)));
        assert!(plan.contains(&(l.knowledge(), RecursiveMode::NonRecursive)));
    }

    #[test]
    fn only_inputs_count() {
        let dir = tempfile::tempdir().unwrap();
        let l = layout(dir.path());
        let i = Inputs::new(&l);
        let modify = EventKind::Modify(ModifyKind::Any);
        let k = l.knowledge();
        let cases: Vec<(DebouncedEvent, Changes)> = vec![
            (ev(modify, &[l.project_context()]), Changes { paths: vec![l.project_context()], ..Changes::default() }),
            (ev(EventKind::Access(AccessKind::Any), &[l.project_context()]), Changes::default()),
            (ev(modify, &[k.join("compiled.md")]), Changes::default()),
            (ev(modify, &[l.root.join("AGENTS.md")]), Changes::default()),
            (ev(EventKind::Create(CreateKind::File), &[k.join(".kb-tmp-abc")]), Changes::default()),
            (ev(EventKind::Create(CreateKind::File), &[k.join(".context.md.swp")]), Changes::default()),
            (ev(EventKind::Create(CreateKind::File), &[k.join("4913")]), Changes::default()),
            (ev(modify, &[l.memories().join(".001-a.md.swp")]), Changes::default()),
            (ev(modify, &[l.memories().join("001-a.md~")]), Changes::default()),
            (ev(modify, &[l.root.join(".co-cli/cache/index")]), Changes::default()),
            (
                ev(
                    EventKind::Modify(ModifyKind::Name(RenameMode::Both)),
                    &[k.join("context.md~"), l.project_context()],
                ),
                Changes { paths: vec![l.project_context()], ..Changes::default() },
            ),
            (
                ev(EventKind::Create(CreateKind::Folder), std::slice::from_ref(&k)),
                Changes { paths: vec![k.clone()], folders: vec![k.clone()], rescan: false },
            ),
            (
                ev(EventKind::Create(CreateKind::Folder), &[l.memories().join("sub")]),
                Changes {
                    paths: vec![l.memories().join("sub")],
                    folders: vec![l.memories().join("sub")],
                    rescan: false,
                },
            ),
            (
                ev(EventKind::Remove(RemoveKind::File), &[l.memories().join("002-b.md")]),
                Changes { paths: vec![l.memories().join("002-b.md")], ..Changes::default() },
            ),
            (
                ev(modify, &[l.global_settings().unwrap()]),
                Changes { paths: vec![l.global_settings().unwrap()], ..Changes::default() },
            ),
            (ev(EventKind::Create(CreateKind::Folder), &[l.root.join("src")]), Changes::default()),
        ];
        for (e, want) in cases {
            assert_eq!(i.changes(std::slice::from_ref(&e)), want, "{:?}", e.event);
        }
    }

    #[test]
    fn own_folders_are_discounted() {
        let dir = tempfile::tempdir().unwrap();
        let l = layout(dir.path());
        let i = Inputs::new(&l);
        let batch = [
            ev(EventKind::Create(CreateKind::Folder), &[l.co_cli()]),
            ev(EventKind::Modify(ModifyKind::Any), &[l.project_settings()]),
        ];
        let mut ch = i.changes(&batch);
        assert!(ch.replan());
        let mut own = vec![l.co_cli(), l.knowledge()];
        ch.discount(&mut own);
        assert_eq!(ch, Changes { paths: vec![l.project_settings()], ..Changes::default() });
        assert_eq!(own, vec![l.knowledge()]);
        assert!(!ch.replan() && !ch.is_empty());
        let mut only_own = i.changes(&batch[..1]);
        only_own.discount(&mut vec![l.co_cli()]);
        assert!(only_own.is_empty());
    }

    #[test]
    fn pending_waits_for_quiet_with_a_limit() {
        let dir = tempfile::tempdir().unwrap();
        let l = layout(dir.path());
        let (quiet, longest) = (Duration::from_millis(200), Duration::from_millis(400));
        let ms = |n| Duration::from_millis(n);
        let one = |p: PathBuf| Changes { paths: vec![p], ..Changes::default() };
        let t0 = Instant::now();
        let mut p = Pending::default();
        assert_eq!(p.due(quiet, longest), None);
        p.add(Changes::default(), t0);
        assert!(p.is_empty(), "nothing relevant waits");
        p.add(one(l.project_context()), t0);
        assert_eq!(p.due(quiet, longest), Some(t0 + ms(200)));
        // Each change within the quiet period moves the deadline: a burst is one recompile.
        p.add(one(l.project_context()), t0 + ms(30));
        p.add(one(l.project_settings()), t0 + ms(90));
        assert_eq!(p.due(quiet, longest), Some(t0 + ms(290)));
        // A steady stream: no later than `longest` after the first change.
        p.add(one(l.project_context()), t0 + ms(350));
        assert_eq!(p.due(quiet, longest), Some(t0 + ms(400)));
        let ch = p.take();
        assert_eq!(ch.paths, vec![l.project_context(), l.project_settings()]);
        assert!(p.is_empty() && p.due(quiet, longest).is_none());
        let mut p = Pending::default();
        p.add(Changes { rescan: true, ..Changes::default() }, t0);
        assert!(p.take().rescan);
    }

    #[test]
    fn existing_folders_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let l = layout(dir.path());
        std::fs::create_dir_all(&l.root).unwrap();
        let i = Inputs::new(&l);
        let before = i.existing_folders();
        std::fs::create_dir_all(l.knowledge()).unwrap();
        let after = i.existing_folders();
        let created: Vec<_> = after.into_iter().filter(|p| !before.contains(p)).collect();
        assert_eq!(created, vec![l.co_cli(), l.knowledge()]);
    }
}
