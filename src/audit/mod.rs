//! Is this still true? Checking the references of knowledge items against the repository
//! (docs/behaviour.md, Audit): paths exist (and cited lines are inside the file), task-runner targets are
//! defined, code symbols occur in a tracked file. Deterministic, offline, nothing executed (the
//! `git` binary is run for `ls-files` and the rename history only, told to start no program the
//! repository configures; without git, kb walks the folder honouring `.gitignore`). Nothing
//! outside the root is read: a cited path or a tracked file that is a symlink out of it is
//! neither checked nor evidence.
//!
//! This module knows nothing of the stores: it checks lists of [`refs::Ref`] and returns
//! [`Problem`]s; `ops::audit` gathers the items and builds the verdicts. Two modes: a full audit
//! (`kb audit`: every reference kind; the tracked files are listed once and read once for all
//! the symbols, with an Aho-Corasick automaton), and a check at use (`kb recall --verify`, MCP
//! `recall_memory` and `get_memory`: paths and commands only, a few `stat`s and one parse of the
//! manifests).

mod cargo;
pub mod refs;
pub mod verdicts;

use aho_corasick::{AhoCorasick, MatchKind};
use refs::{CargoKind, Ref, Tool};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// Files larger than this are not read for symbols (generated data, not code).
const MAX_SCANNED_BYTES: u64 = 8 * 1024 * 1024;
/// Files larger than this are not read to count their lines (a cited line is then not checked).
const MAX_COUNTED_BYTES: u64 = 256 * 1024 * 1024;
/// A file holding a NUL byte in its first this-many bytes is binary: not read for symbols.
const BINARY_SNIFF: usize = 8192;
/// The most targets a command problem's hint lists.
const HINT_TARGETS: usize = 8;

/// What kind of reference failed (JSON `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Path,
    Line,
    Command,
    Symbol,
    Conflict,
}

/// A failing reference of an item (or, `Conflict`, another item it may contradict).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub kind: Kind,
    /// The reference as written (a conflict: the other item).
    pub reference: String,
    pub message: String,
    /// What to do, when kb knows something specific (the new path, the targets there are).
    pub hint: Option<String>,
}

/// What checking one item's references found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    /// The references that could be checked (held or failed); 0: the item is unverified.
    pub references: usize,
    pub problems: Vec<Problem>,
}

impl Checked {
    fn tally(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Holds => self.references += 1,
            Outcome::Fails(p) => {
                self.references += 1;
                self.problems.push(p);
            }
            Outcome::Unknown => {}
        }
    }
}

/// How much a [`Checker`] checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every reference kind: `kb audit`.
    Full,
    /// Paths and commands only, no file list (a glob or a symbol is not checked): at use.
    AtUse,
    /// As `AtUse`, and no git at all (a missing path gets no rename hint): what the compiled
    /// context checks of every item it includes, at every compile and every `get_context`. A
    /// `stat` per cited path (each checked once per checker), a read of a file whose lines are
    /// cited, one parse of the manifests.
    Stat,
}

/// Where a cited path leads (see [`Checker::place`]).
enum Place {
    /// Its real path, inside the root.
    Inside(PathBuf),
    /// Through a symlink out of the root, or to nothing: not looked at.
    Outside,
    /// Nothing by that name.
    Missing,
}

/// The result of checking one reference.
#[derive(Clone)]
enum Outcome {
    Holds,
    Fails(Problem),
    /// Not a reference after all, or nothing to check it against: never stale.
    Unknown,
}

/// Checks references against the repository at `root`. What it reads (the file list, the
/// manifests, the rename history) is read once, when first needed.
pub struct Checker {
    root: PathBuf,
    mode: Mode,
    /// Root-relative files and folders (a folder ends in `/`) that are kb's own knowledge, never
    /// evidence for a symbol.
    excluded: Vec<String>,
    /// The root with every symlink followed: what a file's real path must start with.
    real_root: OnceLock<PathBuf>,
    tracked: OnceLock<Vec<String>>,
    manifests: OnceLock<Manifests>,
    /// Where the file each symbol was last found in is kept (`.co-cli/cache/symbols.json`):
    /// a symbol found there again, in a file still tracked, needs no scan.
    symbol_cache: Option<PathBuf>,
    renames: OnceLock<HashMap<String, (String, String)>>,
    /// Renames not yet committed (read only when a cited path is missing).
    pending: OnceLock<Pending>,
    submodules: OnceLock<Vec<String>>,
    cargo: OnceLock<Option<cargo::Workspace>>,
    /// What each path or command reference checked at use came to: a reference cited by many
    /// items costs its `stat`s once.
    seen: Mutex<HashMap<Ref, Outcome>>,
    /// The line count of each file whose lines were cited, counted once per checker.
    lines: Mutex<HashMap<PathBuf, Option<u64>>>,
}

/// Locks one of a checker's memos (a panic while one was held left only a memo).
fn locked<T>(memo: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    memo.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Checker {
    /// Returns a checker of the repository at `root`; `excluded` are root-relative paths of kb's
    /// knowledge files (a folder ending in `/`, a prefix ending in `*`).
    pub fn new(root: &Path, mode: Mode, excluded: Vec<String>) -> Checker {
        Checker {
            root: root.to_path_buf(),
            mode,
            excluded,
            real_root: OnceLock::new(),
            tracked: OnceLock::new(),
            manifests: OnceLock::new(),
            renames: OnceLock::new(),
            pending: OnceLock::new(),
            submodules: OnceLock::new(),
            cargo: OnceLock::new(),
            symbol_cache: None,
            seen: Default::default(),
            lines: Default::default(),
        }
    }

    /// Returns the checker keeping where it found each symbol in `path` (derived state).
    pub fn with_symbol_cache(self, path: Option<PathBuf>) -> Checker {
        Checker { symbol_cache: path, ..self }
    }

    /// Returns what checking each item's references found, in the items' order. Every symbol of
    /// every item is looked for in one pass over the tracked files.
    pub fn check(&self, items: &[Vec<Ref>]) -> Vec<Checked> {
        if self.mode != Mode::Full {
            return items.iter().map(|refs| self.check_at_use(refs)).collect();
        }
        // A dotted name that is no file and has no file extension is a symbol (`user.email`).
        let items: Vec<Vec<Ref>> =
            items.iter().map(|refs| refs.iter().filter_map(|r| self.resolve(r)).collect()).collect();
        let symbols: Vec<&str> = if self.mode == Mode::Full {
            let mut seen = HashSet::new();
            items
                .iter()
                .flatten()
                .filter_map(|r| if let Ref::Symbol { name, .. } = r { Some(name.as_str()) } else { None })
                .filter(|n| seen.insert(*n))
                .collect()
        } else {
            Vec::new()
        };
        let found = self.find_symbols(&symbols);
        let found: HashSet<&str> = symbols.iter().zip(&found).filter(|(_, f)| **f).map(|(s, _)| *s).collect();
        items
            .iter()
            .map(|refs| {
                let mut checked = Checked::default();
                for r in refs {
                    checked.tally(self.check_one(r, &found));
                }
                checked
            })
            .collect()
    }

    /// Returns what checking one item's references at use found (no symbol, no glob): each
    /// reference is looked at once per checker, however many items cite it.
    fn check_at_use(&self, refs: &[Ref]) -> Checked {
        let mut checked = Checked::default();
        for r in refs {
            let known = locked(&self.seen).get(r).cloned();
            let outcome = known.unwrap_or_else(|| {
                let o = match self.resolve(r) {
                    Some(resolved) => self.check_one(&resolved, &HashSet::new()),
                    None => Outcome::Unknown,
                };
                locked(&self.seen).insert(r.clone(), o.clone());
                o
            });
            checked.tally(outcome);
        }
        checked
    }

    /// Returns the reference as it is checked: a path that names nothing and does not look like a
    /// file name becomes a symbol (`user.email`) or nothing (`origin/main`).
    fn resolve(&self, r: &Ref) -> Option<Ref> {
        let Ref::Path { raw, path, glob: false, certain: false, .. } = r else { return Some(r.clone()) };
        if self.root.join(path).symlink_metadata().is_ok() {
            return Some(r.clone());
        }
        if !path.contains('/') {
            if refs::known_extension(path) {
                return Some(r.clone());
            }
            return refs::symbol_ref(raw);
        }
        // A slash word without an extension whose first folder is not here is a branch, a MIME
        // type or a repository name (`origin/main`), unless git saw it renamed.
        let first = path.split('/').next().unwrap_or("");
        if refs::known_extension(path)
            || path.rsplit('/').next().is_some_and(|f| f.contains('.'))
            || self.root.join(first).is_dir()
            || self.renamed(path).is_some()
        {
            return Some(r.clone());
        }
        None
    }

    fn check_one(&self, r: &Ref, symbols: &HashSet<&str>) -> Outcome {
        match r {
            Ref::Path { raw, path, lines, glob, .. } => self.check_path(raw, path, *lines, *glob),
            Ref::Command { raw, tool, target } => self.check_command(raw, *tool, target),
            Ref::Cargo { raw, kind, name } => self.check_cargo(raw, *kind, name),
            Ref::Symbol { raw, name } => match self.mode {
                Mode::AtUse | Mode::Stat => Outcome::Unknown,
                Mode::Full if symbols.contains(name.as_str()) => Outcome::Holds,
                Mode::Full => Outcome::Fails(Problem {
                    kind: Kind::Symbol,
                    reference: raw.clone(),
                    message: format!("`{name}` occurs in no tracked file"),
                    hint: None,
                }),
            },
        }
    }

    fn check_path(&self, raw: &str, path: &str, lines: Option<(u64, u64)>, glob: bool) -> Outcome {
        if glob {
            if self.mode != Mode::Full {
                return Outcome::Unknown;
            }
            // A folder glob (`docs/*/`) holds when a tracked file lies in a folder it matches.
            let pattern = if path.ends_with('/') { format!("{path}**") } else { path.to_string() };
            let Ok(g) = globset::GlobBuilder::new(&pattern).literal_separator(true).build() else {
                return Outcome::Unknown;
            };
            let m = g.compile_matcher();
            if self.tracked().iter().any(|f| m.is_match(f)) {
                return Outcome::Holds;
            }
            // git lists no file of a submodule: a glob into one is no evidence either way.
            if self.submodules().iter().any(|s| path.starts_with(&format!("{s}/"))) {
                return Outcome::Unknown;
            }
            return Outcome::Fails(Problem {
                kind: Kind::Path,
                reference: raw.to_string(),
                message: format!("`{path}` matches no file"),
                hint: None,
            });
        }
        let missing = || {
            // A submodule that is not checked out holds the path or not: nothing to check.
            if self.in_absent_submodule(path) {
                return Outcome::Unknown;
            }
            let (message, hint) = match self.renamed(path) {
                Some((new, Some(commit))) => (
                    format!("`{path}` no longer exists (renamed to `{new}` in {commit})"),
                    Some(format!("update the reference to `{new}`")),
                ),
                Some((new, None)) => (
                    format!("`{path}` no longer exists (renamed to `{new}`, not yet committed)"),
                    Some(format!("update the reference to `{new}`")),
                ),
                None if path.ends_with('/') => (format!("folder `{path}` does not exist"), None),
                None => (format!("`{path}` does not exist"), None),
            };
            Outcome::Fails(Problem { kind: Kind::Path, reference: raw.to_string(), message, hint })
        };
        let full = match self.place(path) {
            Place::Inside(real) => real,
            // kb looks at nothing outside the root: whether the file there exists, or how many
            // lines it has, is no evidence about the repository (and must not leak into a report).
            Place::Outside => return Outcome::Unknown,
            Place::Missing => return missing(),
        };
        let meta = match std::fs::metadata(&full) {
            // A span ending in `/` names a folder.
            Ok(m) if path.ends_with('/') && !m.is_dir() => return missing(),
            Ok(m) => m,
            Err(_) => return missing(),
        };
        let Some((first, last)) = lines else { return Outcome::Holds };
        if first == 0 || last == 0 {
            return Outcome::Fails(Problem {
                kind: Kind::Line,
                reference: raw.to_string(),
                message: format!("`{raw}` names line 0, which does not exist: lines count from 1"),
                hint: None,
            });
        }
        if !meta.is_file() || meta.len() > MAX_COUNTED_BYTES {
            return Outcome::Holds;
        }
        let counted = locked(&self.lines).get(&full).copied();
        let counted = counted.unwrap_or_else(|| {
            let n = count_lines(&full);
            locked(&self.lines).insert(full.clone(), n);
            n
        });
        let Some(count) = counted else { return Outcome::Holds };
        if last > count {
            let s = if count == 1 { "" } else { "s" };
            return Outcome::Fails(Problem {
                kind: Kind::Line,
                reference: raw.to_string(),
                message: format!("`{raw}` points past the end of `{path}`, which has {count} line{s}"),
                hint: None,
            });
        }
        Outcome::Holds
    }

    fn check_command(&self, raw: &str, tool: Tool, target: &str) -> Outcome {
        let m = self.manifests.get_or_init(|| Manifests::read(&self.root));
        let (manifest, what) = match tool {
            Tool::Make => (&m.make, "target"),
            Tool::Just => (&m.just, "recipe"),
            Tool::Package => (&m.package, "script"),
        };
        let name = match tool {
            Tool::Make => "Makefile",
            Tool::Just => "justfile",
            Tool::Package => "package.json",
        };
        let fail = |message: String, hint: Option<String>| {
            Outcome::Fails(Problem { kind: Kind::Command, reference: raw.to_string(), message, hint })
        };
        match manifest {
            Targets::Absent => fail(format!("`{raw}`: there is no {name} at the root"), None),
            Targets::Unreadable => Outcome::Unknown,
            Targets::Known { names, open } => {
                if names.iter().any(|n| n == target) {
                    Outcome::Holds
                } else if *open {
                    // The manifest includes others kb does not read: no evidence either way.
                    Outcome::Unknown
                } else {
                    let mut listed: Vec<&str> = names.iter().map(String::as_str).collect();
                    listed.sort_unstable();
                    listed.dedup();
                    let more = if listed.len() > HINT_TARGETS { ", …" } else { "" };
                    listed.truncate(HINT_TARGETS);
                    let hint = (!listed.is_empty()).then(|| format!("{name} {what}s: {}{more}", listed.join(", ")));
                    fail(format!("`{raw}`: the {name} has no {what} `{target}`"), hint)
                }
            }
        }
    }

    /// Checks a target, feature or package a `cargo` command names against the workspace at the
    /// root. No `Cargo.toml` at the root: no evidence (cargo may run in a folder below).
    fn check_cargo(&self, raw: &str, kind: CargoKind, name: &str) -> Outcome {
        let Some(ws) = self.cargo.get_or_init(|| cargo::Workspace::read(&self.root)) else {
            return Outcome::Unknown;
        };
        let (flag, what, many) = kind.describe();
        let names = ws.names(kind);
        let holds = match kind {
            // Cargo always accepts `default`.
            CargoKind::Feature if name == "default" => true,
            CargoKind::Feature => match name.split_once('/') {
                // `crate/feature`: a workspace package's feature; a dependency's is not checked.
                Some((krate, feature)) => match ws.package(krate) {
                    Some(p) => p.features.iter().any(|f| f == feature) || feature == "default",
                    None => return Outcome::Unknown,
                },
                None => names.contains(&name),
            },
            // A dependency is a package `-p` may name too (`cargo update -p serde`).
            CargoKind::Package => names.contains(&name) || ws.dependencies.contains(name),
            _ => names.contains(&name),
        };
        if holds {
            return Outcome::Holds;
        }
        if ws.open {
            return Outcome::Unknown;
        }
        let listed = match kind {
            CargoKind::Feature if name.contains('/') => {
                let krate = name.split('/').next().unwrap_or("");
                ws.package(krate).map(|p| p.features.iter().map(String::as_str).collect()).unwrap_or_default()
            }
            _ => names,
        };
        let more = if listed.len() > HINT_TARGETS { ", …" } else { "" };
        let hint = match listed.len() {
            0 => format!("the workspace has no {many}"),
            _ => format!("{many}: {}{more}", listed[..listed.len().min(HINT_TARGETS)].join(", ")),
        };
        Outcome::Fails(Problem {
            kind: Kind::Command,
            reference: raw.to_string(),
            message: format!("`{raw}`: the workspace has no {what} `{name}` ({flag})"),
            hint: Some(hint),
        })
    }

    /// Returns the root with every symlink followed (the root as given when it cannot be).
    fn real_root(&self) -> &Path {
        self.real_root.get_or_init(|| std::fs::canonicalize(&self.root).unwrap_or_else(|_| self.root.clone()))
    }

    /// Returns where the root-relative `path` leads: its real path when that is inside the root;
    /// `Outside` when a symlink on the way leads out of the root, or nowhere (a link to nothing may
    /// point outside, so it is not called missing); `Missing` when it names nothing. One `lstat`
    /// per component, and a `canonicalize` only for a symlink.
    fn place(&self, path: &str) -> Place {
        let mut at = self.root.clone();
        for c in Path::new(path).components() {
            match c {
                std::path::Component::Normal(name) => at.push(name),
                std::path::Component::CurDir => continue,
                // `..` is never a reference (refs.rs): never resolved here either.
                _ => return Place::Outside,
            }
            match std::fs::symlink_metadata(&at) {
                Err(_) => return Place::Missing,
                Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(&at) {
                    Ok(real) if real.starts_with(self.real_root()) => at = real,
                    _ => return Place::Outside,
                },
                Ok(_) => {}
            }
        }
        Place::Inside(at)
    }

    /// Returns the tracked files, root-relative, `/`-separated.
    fn tracked(&self) -> &[String] {
        self.tracked.get_or_init(|| tracked_files(&self.root))
    }

    /// Returns where `path` went and in which commit (`None`: not yet committed), when it was
    /// renamed (or a folder holding it was) and the new path exists now: a rename in the index or
    /// the working tree wins over git's history; renames are followed to the newest.
    fn renamed(&self, path: &str) -> Option<(String, Option<String>)> {
        if self.mode == Mode::Stat {
            return None;
        }
        let history = self.renames.get_or_init(|| renames(&self.root));
        let mut current = path.trim_end_matches('/').to_string();
        let mut seen = HashSet::new();
        for _ in 0..16 {
            if !seen.insert(current.clone()) {
                return None;
            }
            let next = self
                .pending_rename(&current)
                .map(|new| (new, None))
                .or_else(|| renamed_in(history, &current).map(|(new, commit)| (new, Some(commit))));
            let (new, commit) = next?;
            // A hint names only a path that exists now (a path of an old commit is no help).
            if self.root.join(&new).symlink_metadata().is_ok() {
                return Some((new, commit));
            }
            current = new;
        }
        None
    }

    /// Returns where `path` went in a rename not yet committed: staged (`git mv`), or a file
    /// moved in the working tree (its content, as the index or HEAD has it, is now at another path
    /// that exists: tracked, or untracked and not ignored).
    fn pending_rename(&self, path: &str) -> Option<String> {
        let p = self.pending.get_or_init(|| Pending::read(&self.root));
        if let Some(new) = renamed_in(&p.staged, path) {
            return Some(new);
        }
        let blob = p.blobs.get(path)?;
        // Its bytes at one other path only: an empty file or a second copy says nothing.
        let exists = |f: &str| self.root.join(f).symlink_metadata().is_ok();
        let added: Vec<&String> = p.added.iter().filter(|(f, b)| *b == blob && exists(f)).map(|(f, _)| f).collect();
        if let [one] = added.as_slice() {
            return Some((*one).clone());
        }
        // An untracked file with the same bytes: read the blob (only for a cited path git knows).
        let size: u64 = String::from_utf8(git(&self.root, &["cat-file", "-s", blob])?).ok()?.trim().parse().ok()?;
        if size == 0 || size > MAX_SCANNED_BYTES || !added.is_empty() {
            return None;
        }
        let untracked = p.untracked.get_or_init(|| {
            let out = git(&self.root, &["ls-files", "-z", "--others", "--exclude-standard"]).unwrap_or_default();
            out.split(|&b| b == 0).filter_map(|f| std::str::from_utf8(f).ok()).map(str::to_string).collect()
        });
        let sized: Vec<&String> = untracked
            .iter()
            .filter(|f| std::fs::symlink_metadata(self.root.join(f)).is_ok_and(|m| m.is_file() && m.len() == size))
            .collect();
        if sized.is_empty() {
            return None;
        }
        let bytes = git(&self.root, &["cat-file", "blob", blob])?;
        let mut buf = Vec::new();
        let same: Vec<&String> = sized
            .into_iter()
            .filter(|f| read_text_file(&self.root.join(f), self.real_root(), &mut buf) && buf == bytes)
            .collect();
        match same.as_slice() {
            [one] => Some((*one).clone()),
            _ => None,
        }
    }

    /// Returns the root-relative paths of the submodules `.gitmodules` names.
    fn submodules(&self) -> &[String] {
        self.submodules.get_or_init(|| {
            let path = self.root.join(".gitmodules");
            let Ok(Some(bytes)) = crate::fsio::read_input(&path, &self.root) else { return Vec::new() };
            submodule_paths(&String::from_utf8_lossy(&bytes))
        })
    }

    /// Returns whether `path` lies in a submodule that is not checked out (its folder empty or
    /// absent): whether it exists there cannot be known.
    fn in_absent_submodule(&self, path: &str) -> bool {
        let path = path.trim_end_matches('/');
        self.submodules().iter().any(|s| {
            (path == s || path.starts_with(&format!("{s}/")))
                && std::fs::read_dir(self.root.join(s)).map_or(true, |mut d| d.next().is_none())
        })
    }

    /// Returns, for each name, whether it occurs as a whole word in a tracked text file other
    /// than kb's knowledge: one pass over the files, stopping once every name was found.
    fn find_symbols(&self, names: &[&str]) -> Vec<bool> {
        if names.is_empty() {
            return Vec::new();
        }
        let files: Vec<&String> = self.tracked().iter().filter(|f| !self.is_excluded(f)).collect();
        // The file each symbol was found in last time: read first, and alone when it still holds it.
        let mut cache = SymbolCache::load(self.symbol_cache.as_deref());
        let index: HashMap<&str, usize> = files.iter().enumerate().map(|(i, f)| (f.as_str(), i)).collect();
        const NONE: usize = usize::MAX;
        let found_at: Vec<AtomicUsize> = names.iter().map(|_| AtomicUsize::new(NONE)).collect();
        let mut buf = Vec::new();
        for (k, name) in names.iter().enumerate() {
            if let Some(&i) = cache.hits.get(*name).and_then(|f| index.get(f.as_str()))
                && read_text_file(&self.root.join(files[i]), self.real_root(), &mut buf)
                && memchr::memmem::find_iter(&buf, name.as_bytes()).any(|at| whole_word(&buf, at, at + name.len()))
            {
                found_at[k].store(i, Ordering::Relaxed);
            }
        }
        let rest: Vec<usize> = (0..names.len()).filter(|&k| found_at[k].load(Ordering::Relaxed) == NONE).collect();
        if !rest.is_empty()
            && let Ok(ac) = AhoCorasick::builder().match_kind(MatchKind::Standard).build(rest.iter().map(|&k| names[k]))
        {
            let left = AtomicUsize::new(rest.len());
            let next = AtomicUsize::new(0);
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
            let (root, real_root, ac, found_at, left, next, files, rest) =
                (&self.root, self.real_root(), &ac, &found_at, &left, &next, &files, &rest);
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(move || {
                        let mut buf = Vec::new();
                        loop {
                            if left.load(Ordering::Relaxed) == 0 {
                                return;
                            }
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(file) = files.get(i) else { return };
                            if !read_text_file(&root.join(file), real_root, &mut buf) {
                                continue;
                            }
                            for m in ac.find_overlapping_iter(&buf[..]) {
                                let k = rest[m.pattern().as_usize()];
                                if found_at[k].load(Ordering::Relaxed) != NONE || !whole_word(&buf, m.start(), m.end())
                                {
                                    continue;
                                }
                                if found_at[k].compare_exchange(NONE, i, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
                                    left.fetch_sub(1, Ordering::Relaxed);
                                }
                            }
                        }
                    });
                }
            });
        }
        let found: Vec<bool> = found_at.iter().map(|f| f.load(Ordering::Relaxed) != NONE).collect();
        if let Some(path) = &self.symbol_cache {
            for (k, name) in names.iter().enumerate() {
                match found_at[k].load(Ordering::Relaxed) {
                    NONE => cache.hits.remove(*name),
                    i => cache.hits.insert(name.to_string(), files[i].clone()),
                };
            }
            cache.save(path);
        }
        found
    }

    fn is_excluded(&self, file: &str) -> bool {
        self.excluded.iter().any(|e| match e.strip_suffix('*') {
            Some(prefix) => file.starts_with(prefix),
            None if e.ends_with('/') => file.starts_with(e.as_str()),
            None => file == e,
        })
    }
}

/// Where each symbol was last found: `{"version":1,"hits":{NAME:FILE}}` (derived state; a file
/// that cannot be read or parsed is an empty cache).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct SymbolCache {
    version: u32,
    hits: HashMap<String, String>,
}

impl SymbolCache {
    const VERSION: u32 = 1;
    /// The most names kept: a cache never grows without bound.
    const MAX: usize = 100_000;

    fn load(path: Option<&Path>) -> SymbolCache {
        let cache: Option<SymbolCache> = path
            .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() < 64 * 1024 * 1024))
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|b| serde_json::from_slice(&b).ok());
        cache.filter(|c| c.version == SymbolCache::VERSION).unwrap_or_default()
    }

    fn save(&mut self, path: &Path) {
        self.version = SymbolCache::VERSION;
        if self.hits.len() > SymbolCache::MAX {
            self.hits.clear();
        }
        // Derived state: a cache that cannot be written only costs time next run.
        if let Some(dir) = path.parent()
            && crate::paths::ensure_ignored_dir(dir).is_ok()
            && let Ok(bytes) = serde_json::to_vec(self)
        {
            let _ = crate::fsio::write_atomic_with(path, &bytes, false);
        }
    }
}

/// Returns whether `buf[start..end]` stands as a whole word: no identifier character around it.
fn whole_word(buf: &[u8], start: usize, end: usize) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    (start == 0 || !word(buf[start - 1])) && buf.get(end).is_none_or(|&b| !word(b))
}

/// Reads a regular text file into `buf`; false for a folder, a link to nothing or out of
/// `real_root`, a file too large or binary (a NUL byte near its start), or one that cannot be read.
///
/// Only the file itself is looked at for a symlink: git tracks no file below a symlinked folder
/// (nor checks one out there), and the walk without git follows no symlink. So the scan costs one
/// `lstat` per file, as the `stat` it replaces, and a `canonicalize` per tracked symlink.
fn read_text_file(path: &Path, real_root: &Path, buf: &mut Vec<u8>) -> bool {
    buf.clear();
    let Ok(mut meta) = std::fs::symlink_metadata(path) else { return false };
    if meta.file_type().is_symlink() {
        // A file outside the root is no evidence that the repository holds a symbol.
        if !std::fs::canonicalize(path).is_ok_and(|real| real.starts_with(real_root)) {
            return false;
        }
        let Ok(target) = std::fs::metadata(path) else { return false };
        meta = target;
    }
    if !meta.is_file() || meta.len() > MAX_SCANNED_BYTES {
        return false;
    }
    let Ok(mut f) = std::fs::File::open(path) else { return false };
    if f.read_to_end(buf).is_err() {
        return false;
    }
    !buf[..buf.len().min(BINARY_SNIFF)].contains(&0)
}

/// Returns the number of lines of a file (a last line without a line break counts), or `None`
/// when it cannot be read.
fn count_lines(path: &Path) -> Option<u64> {
    let mut f = std::fs::File::open(path).ok()?;
    let mut buf = vec![0u8; 1 << 16];
    let (mut lines, mut last) = (0u64, b'\n');
    loop {
        let n = f.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        lines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        last = buf[n - 1];
    }
    Some(lines + u64::from(last != b'\n'))
}

/// What `git` is told on every run, so that a repository's own config (`.git/config`, or the
/// config of the folder a `.git` file names) starts no program: the command line beats every
/// config file. `ls-files` runs the `core.fsmonitor` hook; `log` runs `gpg.program` on a signed
/// commit when `log.showSignature` is set. No hook runs for these commands, and neither does a
/// pager (stdout is a pipe), an external diff or a textconv driver (no patch is asked for): they
/// are switched off all the same (`log` also gets `--no-ext-diff --no-textconv`), should git
/// change that. The transports are in [`GIT_ENV`].
const GIT_CONFIG: [&str; 10] = [
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.pager=cat",
    "-c",
    "log.showSignature=false",
    "-c",
    "credential.helper=",
];

/// The environment of every `git` run. In a partial clone, `log -M` fetches each missing blob
/// from the promisor remote, and that remote's URL is the repository's to choose
/// (`ext::<command>`, with `protocol.ext.allow=always`, which `-c protocol.allow=never` does not
/// override): no lazy fetch, and no transport at all (an empty `GIT_ALLOW_PROTOCOL` allows none,
/// whatever the config says). The rename hints of such a clone are then missing, which is not an
/// error.
const GIT_ENV: [(&str, &str); 3] =
    [("GIT_OPTIONAL_LOCKS", "0"), ("GIT_NO_LAZY_FETCH", "1"), ("GIT_ALLOW_PROTOCOL", "")];

/// Runs `git -C root ARGS` and returns its standard output, or `None` when git is not there, the
/// folder is not in a repository, or git fails. Nothing the repository configures is run (see
/// [`GIT_CONFIG`]).
fn git(root: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let dir = crate::git::git_dir(root)?;
    // The repository is named outright: git never looks above the root for another one.
    let out = Command::new("git")
        .arg("--no-pager")
        .arg("-C")
        .arg(root)
        .env("GIT_DIR", &dir)
        .env("GIT_WORK_TREE", root)
        .args(GIT_CONFIG)
        .args(["-c", "core.quotePath=false"])
        .args(args)
        .envs(GIT_ENV)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

/// Returns the repository's tracked files (`git ls-files`), or without git every regular file a
/// walk that honours `.gitignore` (and `.git/info/exclude`) finds; root-relative, `/`-separated.
pub fn tracked_files(root: &Path) -> Vec<String> {
    if let Some(out) = git(root, &["ls-files", "-z"]) {
        return out
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .filter_map(|p| std::str::from_utf8(p).ok().map(str::to_string))
            .collect();
    }
    let mut files = Vec::new();
    let mut matchers = Vec::new();
    // git's own excludes of the repository, below every `.gitignore`.
    if root.join(".git").is_dir() {
        matchers.extend(ignore_file(&root.join(".git/info/exclude"), root));
    }
    walk(root, root, &mut matchers, &mut files, 0);
    files
}

/// How deep the walk without git goes (it follows no symlink, so it cannot loop).
const MAX_WALK_DEPTH: usize = 256;
/// An ignore file larger than this is not read.
const MAX_IGNORE_BYTES: u64 = 4 * 1024 * 1024;

/// Adds the files below `dir` to `files` (root-relative, sorted per folder), leaving out what the
/// `.gitignore` files of `dir` and its parents up to the root (`matchers`, innermost last) ignore.
/// Only `.gitignore` says what a repository tracks (not ripgrep's `.ignore`), and only a regular
/// file is read as one: a FIFO there must not block the audit.
fn walk(
    root: &Path,
    dir: &Path,
    matchers: &mut Vec<ignore::gitignore::Gitignore>,
    files: &mut Vec<String>,
    depth: usize,
) {
    if depth > MAX_WALK_DEPTH {
        return;
    }
    let pushed = match ignore_file(&dir.join(".gitignore"), dir) {
        Some(m) => {
            matchers.push(m);
            true
        }
        None => false,
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        if pushed {
            matchers.pop();
        }
        return;
    };
    let mut entries: Vec<(std::ffi::OsString, std::fs::FileType)> =
        entries.flatten().filter_map(|e| Some((e.file_name(), e.file_type().ok()?))).collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, kind) in entries {
        if name == ".git" {
            continue;
        }
        let path = dir.join(&name);
        let is_dir = kind.is_dir();
        // A symlink is neither walked nor listed, and a FIFO or socket is no file.
        if !is_dir && !kind.is_file() {
            continue;
        }
        let ignored = matchers.iter().rev().find_map(|m| {
            let found = m.matched(&path, is_dir);
            (!found.is_none()).then(|| found.is_ignore())
        });
        if ignored == Some(true) {
            continue;
        }
        if is_dir {
            walk(root, &path, matchers, files, depth + 1);
        } else if let Ok(rel) = path.strip_prefix(root)
            && let Some(rel) = rel.to_str()
        {
            files.push(rel.replace(std::path::MAIN_SEPARATOR, "/"));
        }
    }
    if pushed {
        matchers.pop();
    }
}

/// Returns the patterns of the ignore file at `path` (relative to `base`), when it is a regular
/// file (a FIFO, a folder or a symlink is not opened) of a sane size.
fn ignore_file(path: &Path, base: &Path) -> Option<ignore::gitignore::Gitignore> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.file_type().is_file() || meta.len() > MAX_IGNORE_BYTES {
        return None;
    }
    let bytes = crate::fsio::read_input(path, base).ok().flatten()?;
    let mut builder = ignore::gitignore::GitignoreBuilder::new(base);
    for line in String::from_utf8_lossy(&bytes).lines() {
        // A bad pattern is left out, as git does.
        let _ = builder.add_line(None, line);
    }
    builder.build().ok()
}

/// Returns every rename in the history of the repository at `root` (one `git log`): old path →
/// (new path, short commit), the newest rename of a path winning. Empty without git.
fn renames(root: &Path) -> HashMap<String, (String, String)> {
    let mut map = HashMap::new();
    let Some(out) = git(
        root,
        &[
            "log",
            "--no-show-signature",
            "--no-textconv",
            "--no-ext-diff",
            "--name-status",
            "-M",
            "--diff-filter=R",
            "--format=commit %h",
        ],
    ) else {
        return map;
    };
    let text = String::from_utf8_lossy(&out);
    let mut commit = String::new();
    for line in text.lines() {
        if let Some(c) = line.strip_prefix("commit ") {
            commit = c.trim().to_string();
        } else if line.starts_with('R') {
            let mut parts = line.split('\t');
            let (_, Some(old), Some(new)) = (parts.next(), parts.next(), parts.next()) else { continue };
            // A quoted name (a tab or a newline in it) is left out rather than misread.
            if old.starts_with('"') || new.starts_with('"') {
                continue;
            }
            map.entry(old.to_string()).or_insert_with(|| (new.to_string(), commit.clone()));
        }
    }
    map
}

/// Returns where `path` went by `map` (old path → new path, or → (new path, commit)): the path
/// itself, or a folder of which some file moved to a folder with the same rest of its path.
fn renamed_in<V: RenameTarget>(map: &HashMap<String, V>, path: &str) -> Option<V::Out> {
    if let Some(v) = map.get(path) {
        return Some(v.out(v.new_path().to_string()));
    }
    let prefix = format!("{path}/");
    map.iter().filter(|(old, _)| old.starts_with(&prefix)).find_map(|(old, v)| {
        let rest = &old[prefix.len()..];
        let dir = v.new_path().strip_suffix(rest)?.strip_suffix('/')?;
        Some(v.out(dir.to_string()))
    })
}

/// A value of a rename map: the new path, and what [`renamed_in`] returns with it.
trait RenameTarget {
    type Out;
    fn new_path(&self) -> &str;
    fn out(&self, new: String) -> Self::Out;
}

impl RenameTarget for String {
    type Out = String;
    fn new_path(&self) -> &str {
        self
    }
    fn out(&self, new: String) -> String {
        new
    }
}

impl RenameTarget for (String, String) {
    type Out = (String, String);
    fn new_path(&self) -> &str {
        &self.0
    }
    fn out(&self, new: String) -> (String, String) {
        (new, self.1.clone())
    }
}

/// What git knows of renames not yet committed.
#[derive(Default)]
struct Pending {
    /// Staged renames, the index against HEAD (`git mv`): old path → new path.
    staged: HashMap<String, String>,
    /// The blob each path had, in the index or (deleted from the index) in HEAD.
    blobs: HashMap<String, String>,
    /// Files added to the index since HEAD: path → blob.
    added: HashMap<String, String>,
    /// Untracked files that are not ignored (read only when a moved file is looked for).
    untracked: OnceLock<Vec<String>>,
}

impl Pending {
    /// Reads the staged changes and the index's blobs (two `git` runs; empty without git).
    fn read(root: &Path) -> Pending {
        let mut p = Pending::default();
        if let Some(out) = git(root, &["diff", "--cached", "--raw", "-z", "-M", "--no-ext-diff", "--no-textconv"]) {
            // `:old-mode new-mode old-blob new-blob STATUS\0path\0[new path\0]`
            let mut fields = out.split(|&b| b == 0).map(|f| String::from_utf8_lossy(f).into_owned());
            while let Some(head) = fields.next() {
                let parts: Vec<&str> = head.trim_start_matches(':').split(' ').collect();
                let (Some(old_blob), Some(new_blob), Some(status)) = (parts.get(2), parts.get(3), parts.get(4)) else {
                    break;
                };
                let Some(old) = fields.next() else { break };
                match status.chars().next() {
                    Some('A') => {
                        p.added.insert(old, new_blob.to_string());
                    }
                    Some('R') => {
                        let Some(new) = fields.next() else { break };
                        p.staged.insert(old, new);
                    }
                    Some('C') => {
                        fields.next();
                    }
                    Some('D') => {
                        p.blobs.insert(old, old_blob.to_string());
                    }
                    _ => {}
                }
            }
        }
        if let Some(out) = git(root, &["ls-files", "-s", "-z"]) {
            for entry in out.split(|&b| b == 0).filter(|e| !e.is_empty()) {
                // `mode blob stage\tpath`
                let entry = String::from_utf8_lossy(entry);
                let Some((meta, path)) = entry.split_once('\t') else { continue };
                let Some(blob) = meta.split(' ').nth(1) else { continue };
                p.blobs.entry(path.to_string()).or_insert_with(|| blob.to_string());
            }
        }
        p
    }
}

/// Returns the `path = …` values of a `.gitmodules` file's text.
fn submodule_paths(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let (key, value) = l.split_once('=')?;
            (key.trim() == "path").then(|| value.trim().trim_matches('"').trim_matches('/').to_string())
        })
        .filter(|p| !p.is_empty() && !p.split('/').any(|s| s == ".."))
        .collect()
}

/// The targets of one task runner's manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Targets {
    /// No such file at the root.
    Absent,
    /// The file is there but cannot be read or parsed: no evidence.
    Unreadable,
    /// Its targets; `open`: it includes other files, so a name not found is no evidence.
    Known { names: Vec<String>, open: bool },
}

/// Reads a manifest's targets, and whether it includes other files (`None`: cannot be parsed).
type Parser = fn(&str) -> Option<(Vec<String>, bool)>;

/// The manifests of the root: Makefile, justfile, package.json.
struct Manifests {
    make: Targets,
    just: Targets,
    package: Targets,
}

impl Manifests {
    fn read(root: &Path) -> Manifests {
        let first = |names: &[&str]| -> Option<Option<String>> {
            let path = names.iter().map(|n| root.join(n)).find(|p| p.is_file())?;
            let meta = std::fs::metadata(&path).ok()?;
            if meta.len() > 4 * 1024 * 1024 {
                return Some(None);
            }
            // Read as every knowledge file is: a committed symlink out of the root is not followed.
            let bytes = crate::fsio::read_input(&path, root).ok().flatten();
            Some(bytes.map(|b| String::from_utf8_lossy(&b).into_owned()))
        };
        let parse = |found: Option<Option<String>>, f: Parser| match found {
            None => Targets::Absent,
            Some(None) => Targets::Unreadable,
            Some(Some(text)) => match f(&text) {
                Some((names, open)) => Targets::Known { names, open },
                None => Targets::Unreadable,
            },
        };
        Manifests {
            make: parse(first(&["GNUmakefile", "makefile", "Makefile"]), make_targets),
            just: parse(first(&["justfile", "Justfile", ".justfile"]), just_recipes),
            package: parse(first(&["package.json"]), package_scripts),
        }
    }
}

/// Returns a Makefile's rule targets, and whether it includes other makefiles (or builds target
/// names from variables or patterns).
fn make_targets(text: &str) -> Option<(Vec<String>, bool)> {
    let mut names = Vec::new();
    let mut open = false;
    for line in text.lines() {
        if line.starts_with('\t') || line.trim_start().starts_with('#') {
            continue;
        }
        let t = line.trim_start();
        if ["include ", "-include ", "sinclude "].iter().any(|p| t.starts_with(p)) {
            open = true;
            continue;
        }
        let Some(colon) = t.find(':') else { continue };
        let (head, after) = (&t[..colon], &t[colon + 1..]);
        // `X := v`, `X ::= v`, `X ?= v`: an assignment, not a rule.
        if after.starts_with('=') || after.starts_with(":=") || head.contains('=') {
            continue;
        }
        for name in head.split_whitespace() {
            if name.contains('$') || name.contains('%') {
                open = true;
            } else if !name.starts_with('.') || name.contains('/') {
                names.push(name.to_string());
            }
        }
    }
    Some((names, open))
}

/// Returns a justfile's recipes and aliases, and whether it imports other files.
fn just_recipes(text: &str) -> Option<(Vec<String>, bool)> {
    let mut names = Vec::new();
    let mut open = false;
    let ident = |s: &str| {
        !s.is_empty()
            && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    for line in text.lines() {
        if line.starts_with([' ', '\t', '#', '[']) || line.is_empty() {
            continue;
        }
        if line.starts_with("import ") || line.starts_with("mod ") || line.starts_with("import?") {
            open = true;
            continue;
        }
        if let Some(rest) = line.strip_prefix("alias ") {
            if let Some((name, _)) = rest.split_once(":=")
                && ident(name.trim())
            {
                names.push(name.trim().to_string());
            }
            continue;
        }
        let l = line.strip_prefix('@').unwrap_or(line);
        let Some(colon) = l.find(':') else { continue };
        if l[colon + 1..].starts_with('=') {
            continue;
        }
        let name = l[..colon].split_whitespace().next().unwrap_or("");
        if ident(name) {
            names.push(name.to_string());
        }
    }
    Some((names, open))
}

/// Returns the `scripts` of a package.json; `None` when it is not a JSON object.
fn package_scripts(text: &str) -> Option<(Vec<String>, bool)> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let obj = v.as_object()?;
    let names = match obj.get("scripts") {
        Some(serde_json::Value::Object(s)) => s.keys().cloned().collect(),
        _ => Vec::new(),
    };
    Some((names, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makefile_rules_not_assignments() {
        let (names, open) =
            make_targets("CC := gcc\nX = a:b\n.PHONY: build\nbuild test: dep\n\techo hi:there\nlint::\n").unwrap();
        assert_eq!(names, ["build", "test", "lint"]);
        assert!(!open);
        assert!(make_targets("include other.mk\n").unwrap().1);
        assert!(make_targets("%.o: %.c\n").unwrap().1);
    }

    #[test]
    fn justfile_recipes_and_aliases() {
        let (names, open) = just_recipes(
            "set shell := [\"bash\"]\nx := \"1\"\n# c\n@test arg='a':\n  echo\nbuild: test\nalias b := build\n",
        )
        .unwrap();
        assert_eq!(names, ["test", "build", "b"]);
        assert!(!open);
    }

    #[test]
    fn package_scripts_are_read() {
        let (names, _) = package_scripts(r#"{"scripts":{"lint":"eslint .","test":"jest"}}"#).unwrap();
        assert_eq!(names, ["lint", "test"]);
        assert!(package_scripts("not json").is_none());
    }

    #[test]
    fn whole_words_only() {
        assert!(whole_word(b"a ApiError b", 2, 10));
        assert!(!whole_word(b"MyApiError", 2, 10));
        assert!(!whole_word(b"ApiErrors", 0, 8));
    }

    #[test]
    fn a_symlink_out_of_the_root_is_not_read_for_symbols() {
        let dir = tempfile::tempdir().unwrap();
        let (root, outside) = (dir.path().join("repo"), dir.path().join("outside.rs"));
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(&outside, "pub struct Outside;\n").unwrap();
        std::fs::write(root.join("src/real.rs"), "pub struct Inside;\n").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("src/out.rs")).unwrap();
        std::os::unix::fs::symlink("real.rs", root.join("src/in.rs")).unwrap();
        let real_root = std::fs::canonicalize(&root).unwrap();
        let mut buf = Vec::new();
        assert!(!read_text_file(&root.join("src/out.rs"), &real_root, &mut buf));
        assert!(buf.is_empty());
        assert!(read_text_file(&root.join("src/in.rs"), &real_root, &mut buf));
        assert_eq!(buf, b"pub struct Inside;\n");
        let checker = Checker::new(&root, Mode::AtUse, Vec::new());
        assert!(matches!(checker.place("src/out.rs"), Place::Outside));
        assert!(matches!(checker.place("src/in.rs"), Place::Inside(p) if p == real_root.join("src/real.rs")));
        assert!(matches!(checker.place("src/gone.rs"), Place::Missing));
    }

    #[test]
    fn lines_are_counted_with_or_without_a_final_break() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "a\nb\nc").unwrap();
        assert_eq!(count_lines(&p), Some(3));
        std::fs::write(&p, "a\nb\n").unwrap();
        assert_eq!(count_lines(&p), Some(2));
        std::fs::write(&p, "").unwrap();
        assert_eq!(count_lines(&p), Some(0));
    }
}
