//! The undo journal (docs/safety.md, The undo journal): one entry per operation that changes or removes knowledge
//! files (`forget`, a consolidating `save`, decay, `consolidate`, `import`, `export`, `promote`,
//! `check --fix`, `decision supersede|accept|reject|archive`, `session end`, and `compile`'s
//! writes and deletions of targets and generated files), in
//! `.co-cli/state/journal/`, local state that is never committed. An entry holds the exact
//! prior bytes of every file the operation changed or removed, and names the files it created, so
//! `kb undo` puts them back byte for byte. This module owns the entry format, the recording
//! ([`Txn`]), the reading ([`entries`]) and the restoring ([`plan_undo`], [`restore`]); which
//! operation journals what is the callers' business.
//!
//! An entry is `NNNNNN.jsonl`, one JSON object per line, appended and synced **before** each
//! change is made (a write-ahead log):
//!
//! - first line: `{"journal":1, "op":S, "what":S, "at":TS, "saved":S}`, `saved` (optional) the
//!   text a consolidating save stored, which an undo takes away with it;
//! - one line per change: `{"path":REL, "prior":PRIOR, "after":HASH|null, "removed_items":[...]}`,
//!   where `PRIOR` comes with a path's first change only: `{"absent":true}`, `{"text":S,"mode":N}`,
//!   `{"hex":S,"mode":N}` (bytes that are not UTF-8) or `{"link":S}` (a symlink); `HASH` is the
//!   xxh3-128 of the bytes written (32 hex digits), null for a removal; `removed_items` (optional)
//!   are `{"at":N, "item":JSON}`, the elements the change removed from a JSON array file (a
//!   board): when that file changed since, an undo puts them back into it instead of refusing;
//! - last, once the operation finished: `{"end":TS}`.
//!
//! Why this survives a crash: a change is on disk in the entry before the file is touched, and
//! every file write is atomic. So at any moment each file of the entry is in its prior state
//! (not changed yet, or already restored: nothing to do), or in a state the operation wrote
//! (put it back), or in neither: it changed since, and undo refuses. A torn last line is a change
//! that was never made. No "after" has to be written once the operation ends.

use crate::error::{KbError, io_at};
use crate::format::binary::Checksummed;
use crate::fsio;
use crate::repo::Repo;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

type Result<T> = std::result::Result<T, KbError>;

/// The journal keeps this many entries; writing a new one removes the oldest beyond it.
pub const KEEP: usize = 50;

/// The version written in each entry's first line.
const VERSION: u32 = 1;

/// One change an operation makes to a file.
#[derive(Debug, Clone, Copy)]
pub enum Change<'a> {
    /// Create or replace the file with these bytes (atomically).
    Write(&'a Path, &'a [u8]),
    /// Remove the file (nothing happens, and nothing is recorded, when it does not exist).
    Remove(&'a Path),
}

thread_local! {
    /// The paths this thread's transactions change while a caller records them ([`recording`]).
    static CHANGED: std::cell::RefCell<Option<Vec<PathBuf>>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f`, and returns its result with every path a transaction on this thread changed (or was
/// about to change) meanwhile: how a long-running reader learns what its own writes touched.
pub fn recording<R>(f: impl FnOnce() -> R) -> (R, Vec<PathBuf>) {
    CHANGED.with(|c| *c.borrow_mut() = Some(Vec::new()));
    let result = f();
    (result, CHANGED.with(|c| c.borrow_mut().take()).unwrap_or_default())
}

/// Notes a path a transaction changes, while [`recording`].
fn changed(path: &Path) {
    CHANGED.with(|c| {
        if let Some(paths) = c.borrow_mut().as_mut() {
            paths.push(path.to_path_buf());
        }
    });
}

/// The writes of one operation, the only way kb writes knowledge: every store writes through the
/// `Txn` its operation hands it. The operation decides, once, whether its changes are recorded
/// in a journal entry before each is made ([`Txn::begin`]) or made straight away
/// ([`Txn::unrecorded`], for operations that are not undone: a plain save, a vote, a new
/// decision). Either way the `Txn` owns the repository lock, so holding one proves the lock is
/// held. The entry is created at the first change, so an operation that changes nothing leaves
/// none.
pub struct Txn {
    journal: Option<Recorder>,
    held: fsio::Lock,
}

/// A journal entry being written.
struct Recorder {
    root: PathBuf,
    dir: PathBuf,
    head: Head,
    /// The entry file (append mode) and its path, once created.
    open: Option<(File, PathBuf)>,
    /// Paths whose prior state is recorded already.
    seen: std::collections::HashSet<PathBuf>,
    /// The elements the next change of a path removes ([`Txn::removes_items`]).
    items: HashMap<PathBuf, Vec<RemovedItem>>,
}

impl Txn {
    /// Starts journaling operation `op` (`forget`, `save`, `consolidate`...), described by
    /// `what`, at the repository's clock, under the lock `held`, which the `Txn` keeps until the
    /// operation ends.
    pub fn begin(repo: &Repo, held: fsio::Lock, op: &str, what: impl Into<String>) -> Txn {
        let head = Head {
            journal: VERSION,
            op: op.to_string(),
            what: what.into(),
            at: crate::format::time::py_isoformat(repo.now),
            saved: None,
        };
        let recorder = Recorder {
            root: repo.layout.root.clone(),
            dir: repo.layout.journal(),
            head,
            open: None,
            seen: Default::default(),
            items: HashMap::new(),
        };
        Txn { journal: Some(recorder), held }
    }

    /// Returns the transaction with the text a consolidating save stores, which undoing it takes
    /// away (`kb undo` says so). Without a journal it changes nothing.
    pub fn saving(mut self, text: impl Into<String>) -> Txn {
        if let Some(j) = &mut self.journal {
            j.head.saved = Some(text.into());
        }
        self
    }

    /// Notes that the next change of `path`, a JSON array file (a board), removes `items`, each
    /// with its position in the array before the change: an undo that finds the file changed
    /// since puts them back into it as it is then, rather than refusing. Without a journal it
    /// does nothing.
    pub fn removes_items(&mut self, path: &Path, items: Vec<(usize, serde_json::Value)>) {
        if let Some(j) = &mut self.journal {
            let items = items.into_iter().map(|(at, item)| RemovedItem { at, item }).collect();
            j.items.insert(path.to_path_buf(), items);
        }
    }

    /// Returns a transaction, under the lock `held`, whose changes are made without a journal
    /// entry.
    pub fn unrecorded(held: fsio::Lock) -> Txn {
        Txn { journal: None, held }
    }

    /// Returns the repository lock this transaction holds.
    pub fn lock(&self) -> &fsio::Lock {
        &self.held
    }

    /// Replaces `path` with `data` atomically, recording it first.
    pub fn write(&mut self, path: &Path, data: &[u8]) -> Result<()> {
        // (`apply` tells `recording` about it.)
        self.apply(&[Change::Write(path, data)])
    }

    /// Replaces `path` atomically with what `fill` writes, without building the new content in
    /// memory (a large JSONL file). The bytes are hashed as they are written to the temporary
    /// file; the change is recorded (and synced) after that and before the rename, so the entry
    /// still precedes the change.
    pub fn write_streamed(&mut self, path: &Path, fill: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
        changed(path);
        let Some(j) = &mut self.journal else {
            return fsio::write_atomic_streamed(path, true, fill).map_err(io_at(path));
        };
        let digest = std::cell::Cell::new(0u128);
        let mut recorded: Option<Result<()>> = None;
        let wrote = fsio::write_atomic_streamed_then(
            path,
            |w| {
                let mut hashed = Checksummed::new(w);
                fill(&mut hashed)?;
                digest.set(hashed.digest128()?);
                Ok(())
            },
            || {
                let outcome = j.record_one(path, Some(format!("{:032x}", digest.get())));
                let failed = outcome.is_err();
                recorded = Some(outcome);
                if failed { Err(io::Error::other("the journal entry could not be written")) } else { Ok(()) }
            },
        );
        if let Some(Err(e)) = recorded {
            return Err(e);
        }
        wrote.map_err(io_at(path))
    }

    /// Renames the file `from` to `to` (in the same folder; `to` does not exist), recording it
    /// first as the removal of `from` and the creation of `to` with the same bytes.
    pub fn rename(&mut self, from: &Path, to: &Path) -> Result<()> {
        changed(from);
        changed(to);
        if let Some(j) = &mut self.journal {
            let bytes = fs::read(from).map_err(io_at(from))?;
            j.record_hashed(&[(from, None), (to, Some(hash(&bytes)))])?;
        }
        fsio::rename_durable(from, to).map_err(io_at(from))
    }

    /// Removes `path`, recording it first. Returns false when it did not exist.
    pub fn remove(&mut self, path: &Path) -> Result<bool> {
        if fs::symlink_metadata(path).is_err() {
            return Ok(false);
        }
        self.apply(&[Change::Remove(path)])?;
        Ok(true)
    }

    /// Records every change (one append and one sync), then makes them in order. A removal of a
    /// file that is not there is skipped.
    pub fn apply(&mut self, changes: &[Change<'_>]) -> Result<()> {
        if let Some(j) = &mut self.journal {
            j.record(changes)?;
        }
        for c in changes {
            match *c {
                Change::Write(path, _) | Change::Remove(path) => changed(path),
            }
            match *c {
                Change::Write(path, data) => fsio::write_atomic(path, data).map_err(io_at(path))?,
                Change::Remove(path) => match fs::remove_file(path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io_at(path)(e)),
                },
            }
        }
        Ok(())
    }

    /// Ends the operation: marks the entry complete and releases the lock. Returns the entry's
    /// path (`None` when nothing was changed, or without a journal).
    pub fn finish(self) -> Result<Option<PathBuf>> {
        let Some(mut j) = self.journal else { return Ok(None) };
        let Some((file, path)) = j.open.take() else { return Ok(None) };
        let line = serde_json::to_string(&End { end: j.head.at.clone() }).unwrap_or_default();
        append(&file, &path, format!("{line}\n").as_bytes())?;
        Ok(Some(path))
    }
}

impl Recorder {
    /// Appends a line per change (with the prior state on a path's first change) and syncs the
    /// entry; creates the entry first when this is the operation's first change.
    fn record(&mut self, changes: &[Change<'_>]) -> Result<()> {
        let items: Vec<(&Path, Option<String>)> = changes
            .iter()
            .map(|c| match c {
                Change::Write(path, data) => (*path, Some(hash(data))),
                Change::Remove(path) => (*path, None),
            })
            .collect();
        self.record_hashed(&items)
    }

    /// Records one change whose new bytes hash to `after` (`None`: a removal).
    fn record_one(&mut self, path: &Path, after: Option<String>) -> Result<()> {
        self.record_hashed(&[(path, after)])
    }

    /// Records changes given as (path, hash of the new bytes or `None` for a removal).
    fn record_hashed(&mut self, changes: &[(&Path, Option<String>)]) -> Result<()> {
        let mut lines = String::new();
        let mut recorded: Vec<&Path> = Vec::new();
        for (path, after) in changes {
            let path = *path;
            let rel = relative(&self.root, path)?;
            let first = !self.seen.contains(path) && !recorded.contains(&path);
            let prior = if first {
                match state_of(path).map_err(io_at(path))? {
                    // Removing what is not there changes nothing.
                    State::Absent if after.is_none() => continue,
                    s => Some(Prior::of(&s, path)?),
                }
            } else {
                None
            };
            let removed_items = self.items.remove(path).unwrap_or_default();
            let line = ChangeLine { path: rel, prior, after: after.clone(), removed_items };
            lines.push_str(&serde_json::to_string(&line).map_err(|e| io_at(path)(io::Error::other(e)))?);
            lines.push('\n');
            recorded.push(path);
        }
        if lines.is_empty() {
            return Ok(());
        }
        match &self.open {
            Some((file, path)) => append(file, path, lines.as_bytes())?,
            None => {
                let head = serde_json::to_string(&self.head).unwrap_or_default();
                self.open = Some(self.create(&format!("{head}\n{lines}"))?);
            }
        }
        self.seen.extend(recorded.into_iter().map(Path::to_path_buf));
        Ok(())
    }

    /// Creates the next entry holding `text`, synced with its folder, then removes the oldest
    /// entries beyond [`KEEP`]. Returns the open file and its path.
    fn create(&self, text: &str) -> Result<(File, PathBuf)> {
        let dir = &self.dir;
        crate::paths::check_inside(&self.root, dir).map_err(io_at(dir))?;
        crate::paths::ensure_ignored_dir(dir).map_err(io_at(dir))?;
        let mut seq = list(dir).map_err(io_at(dir))?.last().map_or(1, |(n, _)| n + 1);
        let (mut file, path) = loop {
            let path = dir.join(entry_name(seq));
            match fs::OpenOptions::new().append(true).create_new(true).open(&path) {
                Ok(f) => break (f, path),
                // Only under the lock, so only a hand-made file: take the next number.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => seq += 1,
                Err(e) => return Err(io_at(&path)(e)),
            }
        };
        let written = file.write_all(text.as_bytes()).and_then(|()| file.sync_all());
        if let Err(e) = written.and_then(|()| File::open(dir)?.sync_all()) {
            // Nothing was changed yet: an entry that may be torn is better gone.
            let _ = fs::remove_file(&path);
            return Err(io_at(&path)(e));
        }
        prune(dir);
        Ok((file, path))
    }
}

/// Appends `bytes` to an entry and syncs it.
fn append(mut file: &File, path: &Path, bytes: &[u8]) -> Result<()> {
    file.write_all(bytes).and_then(|()| file.sync_data()).map_err(io_at(path))
}

/// Removes the oldest entries so that at most [`KEEP`] are left. A failure leaves an extra entry.
fn prune(dir: &Path) {
    let Ok(all) = list(dir) else { return };
    if all.len() > KEEP {
        for (_, path) in &all[..all.len() - KEEP] {
            let _ = fs::remove_file(path);
        }
    }
}

/// Returns an entry's file name.
fn entry_name(seq: u64) -> String {
    format!("{seq:06}.jsonl")
}

/// Returns the entries in `dir` by number, oldest first (no folder: none).
fn list(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for e in rd {
        let e = e?;
        let name = e.file_name();
        let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".jsonl")) else { continue };
        if let (false, Ok(n)) = (stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()), stem.parse::<u64>()) {
            out.push((n, e.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Returns `path` relative to `root`, refusing a path outside it.
fn relative(root: &Path, path: &Path) -> Result<String> {
    let rel = path.strip_prefix(root).ok().filter(|r| safe_relative(r));
    let outside = || io::Error::new(io::ErrorKind::InvalidInput, "outside the repository: not journaled");
    rel.and_then(|r| r.to_str()).map(str::to_string).ok_or_else(|| io_at(path)(outside()))
}

/// Returns whether `rel` is a plain relative path (no root, no `..`), so that an entry can never
/// lead a restore out of the repository.
fn safe_relative(rel: &Path) -> bool {
    !rel.as_os_str().is_empty() && rel.components().all(|c| matches!(c, Component::Normal(_)))
}

/// Returns the xxh3-128 hash of `data` as 32 hex digits.
fn hash(data: &[u8]) -> String {
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(data))
}

/// What is at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Absent,
    File { bytes: Vec<u8>, mode: u32 },
    Link(PathBuf),
}

/// Returns what is at `path`, without following a symlink. A folder, FIFO, socket or device is
/// an error: kb journals files only.
fn state_of(path: &Path) -> io::Result<State> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(State::Absent),
        Err(e) => return Err(e),
    };
    if meta.file_type().is_symlink() {
        return Ok(State::Link(fs::read_link(path)?));
    }
    if !meta.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
    }
    Ok(State::File { bytes: fs::read(path)?, mode: meta.permissions().mode() & 0o7777 })
}

/// The first line of an entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Head {
    journal: u32,
    op: String,
    what: String,
    at: String,
    /// The text a consolidating save stored (entries of older kb versions have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    saved: Option<String>,
}

/// The last line of a complete entry.
#[derive(Serialize, Deserialize)]
struct End {
    end: String,
}

/// One change as recorded.
#[derive(Serialize, Deserialize)]
struct ChangeLine {
    path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prior: Option<Prior>,
    after: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    removed_items: Vec<RemovedItem>,
}

/// An element a change removed from a JSON array file, at its position before the change.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RemovedItem {
    pub at: usize,
    pub item: serde_json::Value,
}

/// What a path held before the operation first changed it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Prior {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    absent: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hex: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    link: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mode: Option<u32>,
}

impl Prior {
    fn of(state: &State, path: &Path) -> Result<Prior> {
        Ok(match state {
            State::Absent => Prior { absent: true, ..Prior::default() },
            State::File { bytes, mode } => match std::str::from_utf8(bytes) {
                Ok(text) => Prior { text: Some(text.to_string()), mode: Some(*mode), ..Prior::default() },
                Err(_) => Prior { hex: Some(to_hex(bytes)), mode: Some(*mode), ..Prior::default() },
            },
            State::Link(target) => {
                let target = target.to_str().ok_or_else(|| {
                    io_at(path)(io::Error::new(io::ErrorKind::InvalidData, "a symlink whose target is not UTF-8"))
                })?;
                Prior { link: Some(target.to_string()), ..Prior::default() }
            }
        })
    }

    /// Returns the state it describes, or why it cannot be read.
    fn state(&self) -> std::result::Result<State, String> {
        let mode = self.mode.unwrap_or(0o644);
        match (self.absent, &self.text, &self.hex, &self.link) {
            (true, None, None, None) => Ok(State::Absent),
            (false, Some(t), None, None) => Ok(State::File { bytes: t.clone().into_bytes(), mode }),
            (false, None, Some(h), None) => {
                from_hex(h).map(|bytes| State::File { bytes, mode }).ok_or_else(|| "bad hex bytes".to_string())
            }
            (false, None, None, Some(l)) => Ok(State::Link(PathBuf::from(l))),
            _ => Err("a prior state that is not one of absent, text, hex or link".to_string()),
        }
    }
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// What an operation did to one file, as its entry says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Created,
    Changed,
    Removed,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Created => "created",
            Action::Changed => "changed",
            Action::Removed => "removed",
        }
    }
}

/// One file of an entry.
#[derive(Debug, Clone)]
pub struct FileChange {
    /// The absolute path.
    pub path: PathBuf,
    prior: State,
    /// The hash of each state the operation wrote, `None` for a removal.
    afters: Vec<Option<String>>,
    /// The elements the operation removed from the file (a JSON array), to put back into it when
    /// it changed since.
    pub removed_items: Vec<RemovedItem>,
}

impl FileChange {
    /// Returns what the operation did to the file.
    pub fn action(&self) -> Action {
        match (&self.prior, self.afters.last()) {
            (State::Absent, _) => Action::Created,
            (_, Some(None)) => Action::Removed,
            _ => Action::Changed,
        }
    }

    /// Returns whether the file held `state` at some point of the operation: its prior state,
    /// or one it wrote.
    fn knows(&self, state: &State) -> bool {
        if *state == self.prior || (*state == State::Absent && self.afters.contains(&None)) {
            return true;
        }
        match state {
            State::File { bytes, .. } => {
                let h = hash(bytes);
                self.afters.iter().any(|a| a.as_deref() == Some(h.as_str()))
            }
            _ => false,
        }
    }

    /// Returns the bytes the file held before, when it was a file.
    pub fn prior_bytes(&self) -> Option<&[u8]> {
        match &self.prior {
            State::File { bytes, .. } => Some(bytes),
            _ => None,
        }
    }
}

/// A journal entry as read.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its number (the file name).
    pub seq: u64,
    /// The entry file.
    pub path: PathBuf,
    pub op: String,
    pub what: String,
    /// The text a consolidating save stored, which undoing it takes away.
    pub saved: Option<String>,
    /// When the operation ran (the repository's clock).
    pub at: String,
    /// Whether the operation ended (else it was interrupted: the entry undoes what it did).
    pub complete: bool,
    /// The files, in the order first changed.
    pub files: Vec<FileChange>,
    /// Why the entry cannot be used, when a line other than the last is unreadable.
    pub damaged: Option<String>,
}

/// Reads the entries, oldest first. An entry whose first line is missing or torn is left out (it
/// was cut off before its first change was made); an unreadable entry file is an error.
pub fn entries(repo: &Repo) -> Result<Vec<Entry>> {
    let dir = repo.layout.journal();
    let mut out = Vec::new();
    for (seq, path) in list(&dir).map_err(io_at(&dir))? {
        if let Some(e) = read_entry(&repo.layout.root, seq, &path)? {
            out.push(e);
        }
    }
    Ok(out)
}

/// Reads one entry; `None` when it has no complete first line.
fn read_entry(root: &Path, seq: u64, path: &Path) -> Result<Option<Entry>> {
    let bytes = match crate::fsio::read_input(path, root) {
        Ok(Some(b)) => b,
        Ok(None) => return Ok(None),
        Err(e) => return Err(io_at(path)(e)),
    };
    // Only complete lines count: a torn last line is a change that was never made.
    let complete_lines = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(end) => &bytes[..end],
        None => return Ok(None),
    };
    let mut lines = complete_lines.split(|&b| b == b'\n');
    let Some(head) = lines.next().and_then(|l| serde_json::from_slice::<Head>(l).ok()) else {
        return Ok(None);
    };
    let mut entry = Entry {
        seq,
        path: path.to_path_buf(),
        op: head.op,
        what: head.what,
        saved: head.saved,
        at: head.at,
        complete: false,
        files: Vec::new(),
        damaged: None,
    };
    if head.journal != VERSION {
        entry.damaged = Some(format!("written by a kb with journal format {}", head.journal));
        return Ok(Some(entry));
    }
    let mut place: HashMap<PathBuf, usize> = HashMap::new();
    for (n, line) in lines.enumerate() {
        let line_no = n + 2;
        let value: serde_json::Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => {
                entry.damaged = Some(format!("line {line_no} is not JSON ({e})"));
                break;
            }
        };
        if value.get("end").is_some() {
            entry.complete = true;
            continue;
        }
        let change: ChangeLine = match serde_json::from_value(value) {
            Ok(c) => c,
            Err(e) => {
                entry.damaged = Some(format!("line {line_no}: {e}"));
                break;
            }
        };
        if !safe_relative(Path::new(&change.path)) {
            entry.damaged = Some(format!("line {line_no}: path {:?} leads outside the repository", change.path));
            break;
        }
        let abs = root.join(&change.path);
        let items = change.removed_items;
        match (place.get(&abs), change.prior) {
            (Some(&i), None) => {
                entry.files[i].afters.push(change.after);
                entry.files[i].removed_items.extend(items);
            }
            (None, Some(prior)) => match prior.state() {
                Ok(prior) => {
                    place.insert(abs.clone(), entry.files.len());
                    let afters = vec![change.after];
                    entry.files.push(FileChange { path: abs, prior, afters, removed_items: items });
                }
                Err(why) => {
                    entry.damaged = Some(format!("line {line_no}: {why}"));
                    break;
                }
            },
            (Some(_), Some(_)) => {
                entry.damaged = Some(format!("line {line_no}: {} recorded twice", change.path));
                break;
            }
            (None, None) => {
                entry.damaged = Some(format!("line {line_no}: {} has no prior state", change.path));
                break;
            }
        }
    }
    Ok(Some(entry))
}

/// What undoing an entry does to each of its files.
#[derive(Debug, Clone)]
pub struct Plan {
    pub entry: Entry,
    /// The files to put back (changed or removed by the operation), with their prior bytes.
    pub restore: Vec<FileChange>,
    /// The files the operation created, to remove.
    pub remove: Vec<PathBuf>,
    /// The files already in their prior state.
    pub unchanged: Vec<PathBuf>,
    /// The JSON array files (boards) that changed since, whose removed elements go back into
    /// them as they are now: the caller does that, between [`restore_files`] and [`discard`].
    pub put_back: Vec<FileChange>,
}

/// Returns the newest entry that has a complete first line, removing on the way the entries
/// cut off before their first change. The caller holds the lock.
fn last_entry(repo: &Repo) -> Result<Option<Entry>> {
    let dir = repo.layout.journal();
    let mut all = list(&dir).map_err(io_at(&dir))?;
    loop {
        let Some((seq, path)) = all.pop() else { return Ok(None) };
        match read_entry(&repo.layout.root, seq, &path)? {
            Some(e) => return Ok(Some(e)),
            None => {
                repo.guard(&path)?;
                fs::remove_file(&path).map_err(io_at(&path))?;
            }
        }
    }
}

/// Plans undoing the newest entry: checks that every file of it is in a state the operation left
/// (or its prior one) and stays inside the root. Returns `Ok(None)` when the journal is empty;
/// fails, naming the file, when one changed since. Entries cut off before their first change are
/// removed on the way. The caller holds the lock (`_held`).
pub fn plan_undo(repo: &Repo, _held: &fsio::Lock) -> Result<Option<Plan>> {
    let Some(entry) = last_entry(repo)? else { return Ok(None) };
    if let Some(why) = &entry.damaged {
        return Err(KbError::refused(
            "undo",
            format!(
                "cannot undo: the journal entry {} is damaged ({why}); nothing restored (`kb undo --drop` discards it, to undo the one before)",
                entry.path.display()
            ),
        ));
    }
    let mut plan = Plan {
        entry: entry.clone(),
        restore: Vec::new(),
        remove: Vec::new(),
        unchanged: Vec::new(),
        put_back: Vec::new(),
    };
    for f in &entry.files {
        repo.guard(&f.path)?;
        let now = state_of(&f.path).map_err(io_at(&f.path))?;
        if !f.knows(&now) && !f.removed_items.is_empty() && !matches!(now, State::Link(_)) {
            // A board changed since (a counter bumped, an item added): what the operation
            // removed goes back into it as it is now.
            plan.put_back.push(f.clone());
            continue;
        }
        if !f.knows(&now) {
            let rel = f.path.strip_prefix(&repo.layout.root).unwrap_or(&f.path).display().to_string();
            return Err(KbError::refused(
                "undo",
                format!("cannot undo {} ({}): {rel} changed since; nothing restored", entry.op, entry.what),
            ));
        }
        if now == f.prior {
            plan.unchanged.push(f.path.clone());
        } else if f.prior == State::Absent {
            plan.remove.push(f.path.clone());
        } else {
            plan.restore.push(f.clone());
        }
    }
    Ok(Some(plan))
}

/// Carries out a plan: puts every file back as it was, removes the files the operation
/// created, then removes the entry. Each write is atomic; a crash part way leaves the entry,
/// and undoing it again finishes the job (files already back count as unchanged). The caller
/// holds the lock and made the plan under it, and has nothing to put back ([`Plan::put_back`]).
#[cfg(test)]
pub fn restore(repo: &Repo, plan: &Plan) -> Result<()> {
    restore_files(repo, plan)?;
    discard(&plan.entry)
}

/// Discards the newest entry without restoring anything (`kb undo --drop`, for an entry that
/// can no longer apply, a damaged one included). Returns it, or `None` when the journal is
/// empty. The caller holds the lock (`_held`).
pub fn drop_last(repo: &Repo, _held: &fsio::Lock) -> Result<Option<Entry>> {
    let Some(entry) = last_entry(repo)? else { return Ok(None) };
    repo.guard(&entry.path)?;
    discard(&entry)?;
    Ok(Some(entry))
}

/// Removes an entry's file, synced with its folder: the last step of an undo.
pub fn discard(entry: &Entry) -> Result<()> {
    let path = &entry.path;
    fs::remove_file(path).map_err(io_at(path))?;
    if let Some(dir) = path.parent() {
        File::open(dir).and_then(|d| d.sync_all()).map_err(io_at(dir))?;
    }
    Ok(())
}

/// Puts back the files of a plan: every file changed or removed as it was, every file the
/// operation created removed. The entry stays ([`discard`] removes it).
pub fn restore_files(repo: &Repo, plan: &Plan) -> Result<()> {
    for f in &plan.restore {
        let path = &f.path;
        if let Some(dir) = path.parent() {
            repo.guard(dir)?;
            fs::create_dir_all(dir).map_err(io_at(dir))?;
        }
        match &f.prior {
            State::File { bytes, mode } => {
                if let Ok(m) = fs::symlink_metadata(path)
                    && m.file_type().is_symlink()
                {
                    fs::remove_file(path).map_err(io_at(path))?;
                }
                let existed = fs::symlink_metadata(path).is_ok();
                fsio::write_atomic(path, bytes).map_err(io_at(path))?;
                if !existed {
                    fs::set_permissions(path, fs::Permissions::from_mode(*mode)).map_err(io_at(path))?;
                }
            }
            State::Link(target) => {
                match fs::remove_file(path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io_at(path)(e)),
                }
                std::os::unix::fs::symlink(target, path).map_err(io_at(path))?;
            }
            State::Absent => {}
        }
    }
    for path in &plan.remove {
        match fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_at(path)(e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::Layout;

    fn repo(dir: &Path) -> Repo {
        let layout = Layout { root: dir.to_path_buf(), config: None };
        Repo::open(layout, crate::format::time::now(), Default::default()).unwrap()
    }

    #[test]
    fn records_before_writing_and_undoes_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let (a, b, c) = (dir.path().join("a.md"), dir.path().join("b.md"), dir.path().join("c.md"));
        fs::write(&a, b"old a").unwrap();
        fs::write(&b, [0xff, 0xfe, b'b']).unwrap();
        let mut txn = Txn::begin(&repo, repo.lock().unwrap(), "test", "three changes");
        txn.apply(&[Change::Write(&a, b"new a"), Change::Remove(&b), Change::Write(&c, b"c")]).unwrap();
        txn.write(&a, b"newer a").unwrap();
        assert!(!txn.remove(&dir.path().join("missing")).unwrap());
        let path = txn.finish().unwrap().unwrap();
        let held = repo.lock().unwrap();
        assert!(path.ends_with(".co-cli/state/journal/000001.jsonl"), "{}", path.display());
        assert_eq!(fs::read_to_string(repo.layout.journal().join(".gitignore")).unwrap(), "*\n");
        let all = entries(&repo).unwrap();
        assert_eq!(all.len(), 1);
        let actions: Vec<Action> = all[0].files.iter().map(FileChange::action).collect();
        assert_eq!(actions, [Action::Changed, Action::Removed, Action::Created]);
        assert!(all[0].complete);
        let plan = plan_undo(&repo, &held).unwrap().unwrap();
        restore(&repo, &plan).unwrap();
        assert_eq!(fs::read(&a).unwrap(), b"old a");
        assert_eq!(fs::read(&b).unwrap(), [0xff, 0xfe, b'b']);
        assert!(!c.exists());
        assert!(plan_undo(&repo, &held).unwrap().is_none());
    }

    #[test]
    fn a_streamed_write_is_recorded_before_it_replaces_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let a = dir.path().join("big.jsonl");
        fs::write(&a, b"old\n").unwrap();
        let mut txn = Txn::begin(&repo, repo.lock().unwrap(), "test", "streamed");
        txn.write_streamed(&a, |w| w.write_all(b"new\n")).unwrap();
        let entry = txn.finish().unwrap().unwrap();
        let text = fs::read_to_string(&entry).unwrap();
        assert!(text.contains(&hash(b"new\n")), "the after hash is the streamed bytes': {text}");
        let held = repo.lock().unwrap();
        restore(&repo, &plan_undo(&repo, &held).unwrap().unwrap()).unwrap();
        assert_eq!(fs::read(&a).unwrap(), b"old\n");
        // Unrecorded: the file is written, no entry.
        let mut txn = Txn::unrecorded(held);
        txn.write_streamed(&a, |w| w.write_all(b"x")).unwrap();
        assert!(txn.finish().unwrap().is_none());
        assert_eq!(fs::read(&a).unwrap(), b"x");
    }

    #[test]
    fn a_rename_is_undone_to_the_old_name() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let (a, b) = (dir.path().join("001-a.md"), dir.path().join("002-a.md"));
        fs::write(&a, b"body").unwrap();
        let mut txn = Txn::begin(&repo, repo.lock().unwrap(), "test", "rename");
        txn.rename(&a, &b).unwrap();
        txn.finish().unwrap();
        assert!(!a.exists() && fs::read(&b).unwrap() == b"body");
        let held = repo.lock().unwrap();
        restore(&repo, &plan_undo(&repo, &held).unwrap().unwrap()).unwrap();
        assert!(!b.exists() && fs::read(&a).unwrap() == b"body");
    }

    #[test]
    fn refuses_a_file_changed_since_and_accepts_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let a = dir.path().join("a.md");
        fs::write(&a, b"one").unwrap();
        let mut txn = Txn::begin(&repo, repo.lock().unwrap(), "test", "x");
        txn.write(&a, b"two").unwrap();
        let entry = txn.finish().unwrap().unwrap();
        let held = repo.lock().unwrap();
        fs::write(&a, b"three").unwrap();
        let err = plan_undo(&repo, &held).unwrap_err().to_string();
        assert!(err.contains("a.md changed since"), "{err}");
        fs::write(&a, b"two").unwrap();
        // A torn line at the end is a change never made.
        let mut f = fs::OpenOptions::new().append(true).open(&entry).unwrap();
        f.write_all(b"{\"path\":\"b.md\",\"pri").unwrap();
        let plan = plan_undo(&repo, &held).unwrap().unwrap();
        assert_eq!(plan.restore.len(), 1);
    }

    #[test]
    fn keeps_the_last_entries_only() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let a = dir.path().join("a.md");
        for i in 0..KEEP + 3 {
            let mut txn = Txn::begin(&repo, repo.lock().unwrap(), "test", format!("{i}"));
            txn.write(&a, i.to_string().as_bytes()).unwrap();
            txn.finish().unwrap();
        }
        let all = entries(&repo).unwrap();
        assert_eq!(all.len(), KEEP);
        assert_eq!(all[0].what, "3");
        assert_eq!(all.last().unwrap().seq as usize, KEEP + 3);
    }

    #[test]
    fn removed_items_put_back_a_changed_file_and_drop_discards() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let board = dir.path().join("board.json");
        fs::write(&board, b"[1,2,3]").unwrap();
        let mut txn = Txn::begin(&repo, repo.lock().unwrap(), "test", "pruned").saving("the text");
        txn.removes_items(&board, vec![(1, serde_json::json!(2))]);
        txn.write(&board, b"[1,3]").unwrap();
        txn.finish().unwrap();
        let all = entries(&repo).unwrap();
        assert_eq!(all[0].saved.as_deref(), Some("the text"));
        assert_eq!(all[0].files[0].removed_items.len(), 1);
        let held = repo.lock().unwrap();
        // As the operation left it: the bytes come back; changed since: the items go back.
        assert_eq!(plan_undo(&repo, &held).unwrap().unwrap().restore.len(), 1);
        fs::write(&board, b"[1,3,4]").unwrap();
        let plan = plan_undo(&repo, &held).unwrap().unwrap();
        assert!(plan.restore.is_empty());
        assert_eq!(plan.put_back[0].removed_items[0].at, 1);
        // An entry of an older kb (no `saved`, no `removed_items`) reads as before.
        let old = repo.layout.journal().join("000002.jsonl");
        fs::write(&old, "{\"journal\":1,\"op\":\"x\",\"what\":\"y\",\"at\":\"t\"}\n").unwrap();
        let e = drop_last(&repo, &held).unwrap().unwrap();
        assert_eq!((e.seq, e.saved.is_none()), (2, true));
        assert_eq!(drop_last(&repo, &held).unwrap().unwrap().seq, 1);
        assert!(drop_last(&repo, &held).unwrap().is_none());
        assert_eq!(fs::read(&board).unwrap(), b"[1,3,4]", "dropping restores nothing");
    }

    #[test]
    fn hex_round_trips() {
        assert_eq!(from_hex(&to_hex(&[0, 1, 0xab, 0xff])).unwrap(), [0, 1, 0xab, 0xff]);
        assert!(from_hex("abc").is_none() && from_hex("zz").is_none());
    }
}
