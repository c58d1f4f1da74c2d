//! The memory scanner: every `*.md` file in the memories folder, parsed and validated, with a
//! cache of the parsed results in `.co-cli/cache/` that keeps commands fast (docs/performance.md).
//!
//! The cache is derived state. An entry is trusted only when the file's size, mtime and inode
//! match, and only when the mtime is older than the cache by a safety margin (a file written in the
//! same clock tick as the cache could change without its mtime changing, the "racy git" problem).
//! A missing, foreign or corrupt cache (checked by a checksum) is ignored and rebuilt, so it can
//! only cost time, never change a result. Strings live in one arena, so the index of 100,000
//! memories is a few allocations, not half a million.

use crate::error::Diagnostic;
use crate::format::text::{self, MAX_FILE_BYTES};
use crate::format::time::Micros;
use crate::format::time::Written;
use crate::memories::cache::{
    Block, CREATED_ISO, Field, Record, Stamp, UPDATED_ISO, importance_code, importance_of, type_code, type_of,
};
use crate::memories::file::{self, Importance, Memory, MemoryType};
use std::collections::HashMap;
use std::ffi::CStr;
use std::fs;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// A handle to a valid memory in an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos(usize);

/// A valid memory in the index, borrowed. Two are equal when every field is.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryRef<'a> {
    pub id: u64,
    pub file_name: &'a str,
    pub created: Written<'a>,
    pub created_at: Micros,
    pub updated: Option<Written<'a>>,
    pub updated_at: Option<Micros>,
    pub source: Option<&'a str>,
    pub decay_protected: bool,
    /// `type` as written; `None` when absent (see [`MemoryRef::effective_type`]).
    pub memory_type: Option<MemoryType>,
    /// `importance` as written; `None` when absent (see [`MemoryRef::effective_importance`]).
    pub importance: Option<Importance>,
    /// `agent` as written; `None` when absent: shared by every agent.
    pub agent: Option<&'a str>,
    /// Who created it (provenance); `None`: a person's.
    pub created_by: Option<&'a str>,
    /// Who last rewrote its content.
    pub updated_by: Option<&'a str>,
    pub tags: Vec<&'a str>,
    pub content: &'a str,
}

impl MemoryRef<'_> {
    /// Returns why no save (nor an import) may rewrite this memory's text, if so: it is core
    /// context, or protected from decay.
    pub fn never_rewritten(&self) -> Option<crate::format::salient::Why> {
        use crate::format::salient::Why;
        if self.effective_type() == MemoryType::CoreContext {
            Some(Why::CoreContext)
        } else {
            self.decay_protected.then_some(Why::Protected)
        }
    }

    /// Returns the memory's type, `learning` when the file has none.
    pub fn effective_type(&self) -> MemoryType {
        self.memory_type.unwrap_or_default()
    }

    /// Returns the memory's importance, `medium` when the file has none.
    pub fn effective_importance(&self) -> Importance {
        self.importance.unwrap_or_default()
    }

    /// Returns whether the memory is visible to `agent`: it names no agent, names
    /// `agent`, or is tagged `cross-team`; without an agent, it names none or is tagged
    /// `cross-team`.
    pub fn visible_to(&self, agent: Option<&str>) -> bool {
        file::visible(self.agent, &self.tags, agent)
    }
}

/// What a list line shows of a valid memory ([`Index::listed_at`]), borrowed.
#[derive(Debug, Clone, Copy)]
pub struct Listed<'a> {
    pub id: u64,
    pub created: Written<'a>,
    pub updated: Option<Written<'a>>,
    /// Its first signal tag ([`file::detect_category`]).
    pub category: Option<&'static str>,
    pub decay_protected: bool,
    pub content: &'a str,
}

/// What a scan did: shown on stderr when `KB_DEBUG_STATS` is set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Memory files (`*.md`) in the folder.
    pub files: usize,
    /// Files read and parsed: new, changed, or too young for the cache to trust.
    pub read: usize,
    /// Files taken from the cache without reading them.
    pub cached: usize,
    /// Files read only because they were too young to trust, and found with the cached stamp.
    pub racy: usize,
    /// Whether the scan wrote the cache.
    pub cache_written: bool,
    /// Whether the index came from the cache alone, no file stat'ed ([`Index::scan_trusting`]).
    pub trusted: bool,
}

/// All memory files of one folder, scanned.
#[derive(Debug)]
pub struct Index {
    pub dir: PathBuf,
    /// Whether the memories folder exists.
    pub dir_exists: bool,
    pub stats: ScanStats,
    arena: String,
    records: Vec<Record>,
    /// Problems found outside the records: unreadable entries, symlinks out of the root.
    extra_problems: Vec<Diagnostic>,
    /// The names of kb's temporary files (`.kb-tmp-*`) in the folder: never memories.
    temp_files: Vec<String>,
    /// Each record's position by the hash of its file name, built by the first [`Index::refresh`]
    /// or [`Index::named`] (a command never needs it; a long-running server does).
    by_name: Option<hashbrown::HashTable<u32>>,
    /// The arena's size after the last compaction: refreshes append, and compact past twice this.
    compacted_at: usize,
    /// When the index came from the cache alone: the time the cache's scan began, which its
    /// files' stamps must be older than to be trusted ([`Index::unchanged`]).
    trusted_at: Option<i64>,
    /// The folder's stamp the records hold the files of, when it was old enough to trust
    /// ([`Index::trusted_folder`]); `None` once a refresh changed the records.
    folder: Option<Stamp>,
    /// The cache write a [`Index::scan_deferring`] left to [`Index::write_pending_cache`].
    pending: std::sync::Mutex<Deferred>,
}

/// Where the cache write of a [`Index::scan_deferring`] stands.
#[derive(Debug)]
enum Deferred {
    /// Not a deferring scan, or one that had nothing to write.
    Nothing,
    Write(PendingCache),
    /// [`Index::write_pending_cache`] was called.
    Done,
}

/// A cache file to write from the index as its scan left it.
#[derive(Debug)]
struct PendingCache {
    path: PathBuf,
    started_ns: i64,
    dir_stamp: Option<Stamp>,
}

impl Index {
    /// Returns an empty index of `dir`.
    fn empty(dir: &Path) -> Index {
        Index {
            dir: dir.to_path_buf(),
            dir_exists: false,
            stats: ScanStats::default(),
            arena: String::new(),
            records: Vec::new(),
            extra_problems: Vec::new(),
            temp_files: Vec::new(),
            by_name: None,
            compacted_at: 0,
            trusted_at: None,
            folder: None,
            pending: std::sync::Mutex::new(Deferred::Nothing),
        }
    }

    /// Loads the index from the cache alone, without a stat of each file, when the folder is as
    /// the cache's scan found it (its stamp unchanged, and old enough then to trust): no file was
    /// added, removed or renamed since. What this cannot see is a file edited in place (its name
    /// kept, so the folder unchanged), or a symlinked file's target changed: a reader that shows
    /// memories from such an index checks their files with [`Index::unchanged`], and scans when
    /// one changed. Any doubt (no cache, a changed or symlinked folder) is a full [`Index::scan`].
    /// For readers that must answer within milliseconds and show a few memories (the hooks).
    pub fn scan_trusting(dir: &Path, root: &Path, cache: Option<&Path>) -> io::Result<Index> {
        if let Some(index) = cache.and_then(|c| Index::from_cache_alone(dir, root, c)) {
            return Ok(index);
        }
        Index::scan(dir, root, cache)
    }

    /// The cache's index when the folder's stamp is the one the cache trusted (see
    /// [`Index::scan_trusting`]).
    fn from_cache_alone(dir: &Path, root: &Path, cache: &Path) -> Option<Index> {
        let meta = fs::symlink_metadata(dir).ok().filter(fs::Metadata::is_dir)?;
        let cached = super::cache::Cached::load(cache).ok()?;
        if cached.dir_stamp != Some(stamp_of(&meta)) {
            return None;
        }
        // A parent folder may lead out of the repository (the check a scan makes).
        let real_root = fs::canonicalize(root).ok()?;
        if !fs::canonicalize(dir).ok()?.starts_with(&real_root) {
            return None;
        }
        let mut index = Index::empty(dir);
        index.dir_exists = true;
        index.stats.files = cached.records.len();
        index.stats.cached = cached.records.len();
        index.stats.trusted = true;
        index.trusted_at = Some(cached.cached_at_ns);
        index.folder = cached.dir_stamp;
        index.compacted_at = cached.arena.len();
        index.arena = cached.arena;
        index.records = cached.records;
        Some(index)
    }

    /// Returns whether each file named (in the index's folder) is as the index holds it. Always
    /// true for an index a scan made (it stat'ed every file); for one from the cache alone
    /// ([`Index::scan_trusting`]), each file is stat'ed: a name the index lacks, a changed stamp,
    /// or one too young to have been trusted is a change.
    pub fn unchanged<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> bool {
        let Some(cached_at) = self.trusted_at else { return true };
        let mut wanted: HashMap<&str, Option<&Record>> = names.into_iter().map(|n| (n, None)).collect();
        if wanted.is_empty() {
            return true;
        }
        // A record's name is looked up only when its length is one a wanted name has (a
        // length of 255 or more is not told apart).
        let mut lengths = [false; 256];
        for name in wanted.keys() {
            lengths[name.len().min(255)] = true;
        }
        for r in self.records.iter().filter(|r| lengths[usize::from(r.name_len)]) {
            if let Some(slot) = wanted.get_mut(r.content_and_name(&self.arena).1) {
                *slot = Some(r);
            }
        }
        wanted.into_iter().all(|(name, record)| {
            let Some(record) = record else { return false };
            let path = self.dir.join(name);
            let meta = match fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_symlink() => fs::metadata(&path),
                other => other,
            };
            meta.is_ok_and(|m| {
                let stamp = stamp_of(&m);
                stamp == record.stamp && stamp.newest_ns < cached_at - RACY_MARGIN_NS
            })
        })
    }

    /// Returns the index of memory files given as their names and bytes rather than read from
    /// `dir` (the files of a git revision, `kb diff`): each parsed and validated as a scan
    /// parses a file, its problems named as files of `dir`. No cache is read or written.
    pub fn from_files(dir: &Path, files: impl IntoIterator<Item = (String, Vec<u8>)>) -> Index {
        let mut index = Index::empty(dir);
        let mut fresh = Index::empty(dir);
        for (name, bytes) in files {
            if !is_memory_name(&name) {
                continue;
            }
            index.dir_exists = true;
            index.stats.files += 1;
            index.stats.read += 1;
            let outcome = if bytes.len() as u64 > MAX_FILE_BYTES {
                let message =
                    format!("file is {} bytes; memory files are limited to {} bytes", bytes.len(), MAX_FILE_BYTES);
                Err((Diagnostic::error(None, message), 0))
            } else {
                let written_id = || crate::format::merge::written_id(&String::from_utf8_lossy(&bytes)).unwrap_or(0);
                text::decode(&bytes).and_then(file::parse).map_err(|d| (d, written_id()))
            };
            fresh.push_parsed(&name, Stamp::default(), outcome);
        }
        index.absorb(fresh);
        index
    }

    /// Scans `dir`, using and refreshing the cache file `cache` when given.
    ///
    /// `root` bounds symlinks: a memory file that links outside it is reported, not read.
    ///
    /// The cache is written when something changed, and when files read again only because
    /// they were too young to trust are now old enough: a cache written now trusts them, so the
    /// next command reads nothing (as git refreshes its index once racily clean entries age).
    /// Without that, a cache built within the margin of a clone, a checkout or a bulk edit would
    /// leave every entry "too new" on every later run.
    ///
    /// The folder is listed while the cache loads, then stat'ed and read in batches of [`BATCH`]
    /// entries (the first batch holds the names listed meanwhile, no fewer than [`BATCH`]), and
    /// each batch's parsed files are packed into the index before the next are read, so a first
    /// scan of 100,000 files holds the finished index and one batch, not every parsed file at
    /// once.
    pub fn scan(dir: &Path, root: &Path, cache: Option<&Path>) -> io::Result<Index> {
        Index::scan_then(dir, root, cache, false)
    }

    /// [`Index::scan`], but a cache the scan would write is left to [`Index::write_pending_cache`]:
    /// for a caller with other work to do meanwhile on one thread (`kb list` prints while a first
    /// run at 100,000 memories writes a 28 MB cache). Nothing may change the index before it.
    pub fn scan_deferring(dir: &Path, root: &Path, cache: Option<&Path>) -> io::Result<Index> {
        Index::scan_then(dir, root, cache, true)
    }

    /// Writes the cache a [`Index::scan_deferring`] left. Returns, on the first call, whether
    /// the scan wrote its cache (now, or in the scan), and `None` on every later call.
    pub fn write_pending_cache(&self) -> Option<bool> {
        let mut state = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        match std::mem::replace(&mut *state, Deferred::Done) {
            Deferred::Done => None,
            Deferred::Nothing => Some(self.stats.cache_written),
            // A failed cache write only costs time next run.
            Deferred::Write(p) => Some(self.save_cache(&p.path, p.started_ns, p.dir_stamp).is_ok()),
        }
    }

    fn scan_then(dir: &Path, root: &Path, cache: Option<&Path>, defer: bool) -> io::Result<Index> {
        let mut index = Index::empty(dir);
        // Stat'ed before it is listed: a change made while the scan runs gives it another stamp.
        let dir_meta = fs::symlink_metadata(dir).ok().filter(fs::Metadata::is_dir);
        let (folder, mut listing) = match Folder::open(dir) {
            Ok(open) => open,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(index),
            Err(e) => return Err(io::Error::new(e.kind(), format!("cannot read {}: {e}", dir.display()))),
        };
        index.dir_exists = true;
        // The folder itself may be a symlink out of the repository: then nothing in it is read,
        // as for a memory file that links out.
        let real_root = fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        if let Some(real) = fs::canonicalize(dir).ok().filter(|real| !real.starts_with(&real_root)) {
            let message = format!("the memories folder leads outside the repository, to {}: not read", real.display());
            index.extra_problems.push(Diagnostic::error(None, message).in_file(dir));
            return Ok(index);
        }
        let started = now_ns();
        let mut batch = Names::default();
        // The cache is loaded (read, checked, decoded) on a thread of its own while the folder is
        // listed: the first batch takes every name listed until the cache is there.
        let (cached, more) = std::thread::scope(|scope| {
            let loader = scope.spawn(|| cache.and_then(|c| super::cache::Cached::load(c).ok()));
            let more =
                list_batch(&mut listing, &folder, &mut batch, &mut index.temp_files, &mut index.extra_problems, |n| {
                    n >= BATCH && loader.is_finished()
                });
            (loader.join().unwrap_or_else(|e| std::panic::resume_unwind(e)), more)
        });
        let mut more = more?;
        // Start from the cached arena and records: an unchanged file costs one stat and a lookup.
        let (mut old_records, cached_at_ns, cached_dir) = match cached {
            Some(c) => {
                index.arena = c.arena;
                (c.records, Some(c.cached_at_ns), c.dir_stamp)
            }
            None => (Vec::new(), None, None),
        };
        // The folder's stamp a cache written now may trust: one older than the margin, so that
        // any later change gives it another (`scan_trusting`).
        let dir_stamp = dir_meta.map(|m| stamp_of(&m)).filter(|s| s.newest_ns < started - RACY_MARGIN_NS);
        // The margin covers coarse filesystem clocks: an entry younger than the cache by less
        // than this could have changed in the same tick, so it is read again.
        let trusted_before = cached_at_ns.map_or(i64::MIN, |t| t - RACY_MARGIN_NS);
        // What a cache written by this scan will trust.
        let trusted_after_write = started - RACY_MARGIN_NS;
        let mut alive = vec![false; old_records.len()];
        let mut racy = vec![false; old_records.len()];
        let mut changed = cached_at_ns.is_none() || cached_dir != dir_stamp;
        // Files read now: packed by the workers into arenas of their own (the cached arena stays
        // borrowed by the name lookup), gathered here, appended to the index at the end.
        let mut fresh = Index::empty(dir);
        {
            let look = Lookup {
                folder: &folder,
                arena: &index.arena,
                old: &old_records,
                by_name: std::sync::OnceLock::new(),
                trusted_before,
                trusted_after_write,
                root: &real_root,
            };
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4);
            // Where the batch's first name stands among the memory files listed: the cache's
            // records are in the order of the scan that wrote them, so that is where its record
            // most likely is.
            let mut listed = 0;
            let mut next = Names::default();
            loop {
                // Stat (and, for changed files, read and parse) in parallel: at 100,000 files the
                // stat calls alone are most of a command's time. At most `BATCH` files at a time:
                // what is parsed is packed into the index before the next ones are read. While
                // the workers visit the first part, this thread lists the next batch.
                let (mut temps, mut listing_problems, mut listed_next) = (Vec::new(), Vec::new(), None);
                let parts: Vec<_> =
                    (0..batch.len()).step_by(BATCH).map(|at| at..(at + BATCH).min(batch.len())).collect();
                let mut outcomes = Vec::new();
                for (n, part) in parts.into_iter().enumerate() {
                    let mut list_next = || {
                        let full = |n: usize| n >= BATCH;
                        let found =
                            list_batch(&mut listing, &folder, &mut next, &mut temps, &mut listing_problems, full);
                        listed_next = Some(found);
                    };
                    let meanwhile = (n == 0 && more).then_some(&mut list_next as &mut dyn FnMut());
                    outcomes.extend(look.visit_parallel(&batch, part, listed, threads, meanwhile));
                }
                for o in outcomes {
                    index.stats.files += o.files;
                    index.stats.cached += o.alive.len();
                    index.stats.read += o.fresh.records.len();
                    index.stats.racy += o.racy.len();
                    for i in o.alive {
                        alive[i] = true;
                    }
                    for &i in &o.racy {
                        racy[i] = true;
                    }
                    changed |= o.fresh.records.len() > o.racy.len() || o.aged > 0;
                    fresh.absorb(o.fresh);
                    index.extra_problems.extend(o.problems);
                }
                index.temp_files.append(&mut temps);
                index.extra_problems.append(&mut listing_problems);
                let Some(found) = listed_next else { break };
                more = found?;
                listed += batch.len();
                std::mem::swap(&mut batch, &mut next);
                next.clear();
            }
        }
        // A file read again only because it is too young to trust, with the same stamp, does
        // not make the cache stale: rewriting it would not make the entry trusted any sooner.
        changed |= alive.iter().zip(&racy).any(|(a, r)| !a && !r);
        // Keep the cached records of unchanged files in place (no copy of 100,000 records).
        let mut keep = alive.iter();
        old_records.retain(|_| keep.next().copied().unwrap_or(false));
        index.records = old_records;
        index.absorb(fresh);
        index.folder = dir_stamp;
        if let (Some(cache), true) = (cache, changed) {
            index.compact_if_sparse();
            if defer {
                let pending = PendingCache { path: cache.to_path_buf(), started_ns: started, dir_stamp };
                index.pending = std::sync::Mutex::new(Deferred::Write(pending));
            } else {
                // A failed cache write only costs time next run.
                index.stats.cache_written = index.save_cache(cache, started, dir_stamp).is_ok();
            }
        }
        Ok(index)
    }

    /// Reads again the files of the folder named `names` (each created, changed or removed since
    /// the index was made), as a scan would read them, and returns how many were memory files.
    /// For a long-running reader that knows from file events what changed: it costs a stat and a
    /// read per name, not a stat of every file. Other names (swap files, temporary files) are
    /// ignored. The cache file is not written.
    pub fn refresh(&mut self, names: &[String], root: &Path) -> usize {
        self.folder = None;
        let root = fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let mut seen = 0;
        for name in names.iter().filter(|n| is_memory_name(n)) {
            seen += 1;
            let path = self.dir.join(name);
            self.extra_problems.retain(|d| d.path.as_deref() != Some(path.as_path()));
            let at = self.position_of(name);
            let meta = match fs::symlink_metadata(&path) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                meta => stat_entry(&mut self.extra_problems, meta, &path, &root),
            };
            let Some(meta) = meta else {
                if let Some(at) = at {
                    self.remove_at(at);
                }
                continue;
            };
            let mut one = Index::empty(&self.dir);
            one.push_parsed(name, stamp_of(&meta), read_memory(|| fs::File::open(&path), meta.len()));
            self.absorb(one);
            let last = self.records.len() - 1;
            match at {
                Some(at) => {
                    self.records.swap(at, last);
                    self.records.pop();
                }
                None => self.map_name(last),
            }
        }
        if self.arena.len() > 2 * self.compacted_at.max(1 << 20) {
            self.compact_if_sparse();
            self.compacted_at = self.arena.len();
        }
        seen
    }

    /// Returns the names of the memory files that `listing` (taken after this index was made) shows
    /// created, changed or removed: what [`Index::refresh`] must read again.
    pub fn changed(&mut self, listing: &Listing) -> Vec<String> {
        self.map_names();
        let mut out: Vec<String> = Vec::new();
        let mut listed = vec![false; self.records.len()];
        for (name, stamp) in listing.iter() {
            match self.find(name) {
                Some(i) => {
                    listed[i] = true;
                    if self.records[i].stamp != stamp {
                        out.push(name.to_string());
                    }
                }
                None => out.push(name.to_string()),
            }
        }
        for (i, _) in listed.iter().enumerate().filter(|(_, l)| !**l) {
            out.push(self.name_at(i).to_string());
        }
        // A file whose stat failed is in neither list: it is read again each time.
        out.extend(self.extra_problems.iter().filter_map(|d| {
            let path = d.path.as_deref()?;
            (path.parent() == Some(self.dir.as_path())).then(|| path.file_name()?.to_str().map(str::to_string))?
        }));
        out
    }

    /// Returns the valid memory in the file `name`, if there is one: a lookup once the name map
    /// is built ([`Index::map_names`]), else a walk over every record.
    pub fn named(&self, name: &str) -> Option<MemoryRef<'_>> {
        let r = &self.records[self.find(name)?];
        r.valid.then(|| self.view(r))
    }

    /// Returns the valid memory whose file name hashes to `hash` (xxh3), once the name map is
    /// built ([`Index::map_names`]).
    pub fn named_by_hash(&self, hash: u64) -> Option<MemoryRef<'_>> {
        let name_of = |&i: &u32| self.name_at(i as usize);
        let r = &self.records[*self.by_name.as_ref()?.find(hash, |i| name_hash(name_of(i)) == hash)? as usize];
        r.valid.then(|| self.view(r))
    }

    /// Returns the bytes the index holds on the heap (its capacity, not counting allocator overhead).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.arena.capacity()
            + self.records.capacity() * size_of::<Record>()
            + self.by_name.as_ref().map_or(0, |m| m.capacity() * (size_of::<u32>() + 1))
    }

    /// Builds the map of records by file name, for [`Index::named`] and [`Index::refresh`].
    /// It holds positions, found by their file names' hash and told apart by the names themselves.
    pub fn map_names(&mut self) {
        if self.by_name.is_none() {
            let mut map = hashbrown::HashTable::with_capacity(self.records.len());
            for i in 0..self.records.len() {
                map.insert_unique(name_hash(self.name_at(i)), i as u32, |&j| name_hash(self.name_at(j as usize)));
            }
            self.by_name = Some(map);
        }
    }

    /// Adds record `i` to the name map, if there is one.
    fn map_name(&mut self, i: usize) {
        if let Some(mut map) = self.by_name.take() {
            map.insert_unique(name_hash(self.name_at(i)), i as u32, |&j| name_hash(self.name_at(j as usize)));
            self.by_name = Some(map);
        }
    }

    /// Returns the file name of record `i`.
    fn name_at(&self, i: usize) -> &str {
        self.records[i].content_and_name(&self.arena).1
    }

    /// Returns the position of the record of file `name`, building the name map on first use.
    fn position_of(&mut self, name: &str) -> Option<usize> {
        self.map_names();
        self.find(name)
    }

    fn find(&self, name: &str) -> Option<usize> {
        match &self.by_name {
            Some(map) => map.find(name_hash(name), |&i| self.name_at(i as usize) == name).map(|&i| i as usize),
            None => (0..self.records.len()).find(|&i| self.name_at(i) == name),
        }
    }

    /// Removes the record at `at`; the last record takes its place.
    fn remove_at(&mut self, at: usize) {
        let last = self.records.len() - 1;
        if let Some(mut map) = self.by_name.take() {
            if let Ok(entry) = map.find_entry(name_hash(self.name_at(at)), |&i| i as usize == at) {
                entry.remove();
            }
            if let Some(moved) = map.find_mut(name_hash(self.name_at(last)), |&i| i as usize == last) {
                *moved = at as u32;
            }
            self.by_name = Some(map);
        }
        self.records.swap_remove(at);
    }

    /// Appends the records of `fresh`, whose spans point into its own arena. Past [`MAX_ARENA`]
    /// bytes, a record is reported instead of appended (see [`Index::push_parsed`]).
    fn absorb(&mut self, fresh: Index) {
        let Index { arena, records, .. } = fresh;
        if self.records.is_empty() {
            // Nothing cached survived (a first scan): take the new arena as it is, no copy.
            self.arena = arena;
            self.records = records;
            return;
        }
        if self.arena.len() + arena.len() < MAX_ARENA {
            let at = self.arena.len() as u32;
            self.arena.push_str(&arena);
            self.records.extend(records.into_iter().map(|mut r| {
                r.text += at;
                r
            }));
            return;
        }
        for r in records {
            let len = Block::parse(&arena, r.text as usize).map_or(0, |b| b.len);
            if self.arena.len() + len < MAX_ARENA {
                let text = self.arena.len() as u32;
                self.arena.push_str(arena.get(r.text as usize..r.text as usize + len).unwrap_or_default());
                self.records.push(Record { text, ..r });
            } else {
                let name = r.content_and_name(&arena).1;
                self.push_parsed(name, r.stamp, Err((too_much_text(), r.id)));
            }
        }
    }

    /// Packs a parsed file into the index.
    fn push_parsed(&mut self, name: &str, stamp: Stamp, outcome: Parsed) {
        // Spans are 32-bit: past 3 GiB of text (thousands of 1 MiB memories) a file is reported
        // instead of indexed, rather than wrapping an offset.
        let needed = name.len()
            + outcome.as_ref().map_or(256, |m| {
                m.content.len()
                    + m.created.len()
                    + m.agent.as_ref().map_or(0, String::len)
                    + m.created_by.as_ref().map_or(0, String::len)
                    + m.updated_by.as_ref().map_or(0, String::len)
                    + m.tags.iter().map(String::len).sum::<usize>()
                    + 256
            });
        let outcome = if outcome.is_ok() && self.arena.len() + needed >= MAX_ARENA {
            let id = outcome.as_ref().map_or_else(|e| e.1, |m| m.id);
            Err((too_much_text(), id))
        } else {
            outcome
        };
        let rec = match outcome {
            Ok(m) => {
                let text = self.arena.len() as u32;
                // A timestamp in co-cli's own form is kept as its instant (32 bytes less each).
                let created = Written::of(&m.created, m.created_at);
                let updated = m.updated.as_deref().zip(m.updated_at).map(|(u, at)| Written::of(u, at));
                let text_of = |w: Written<'_>| match w {
                    Written::Text(_) => true,
                    Written::Iso(_) => false,
                };
                let iso = if text_of(created) { 0 } else { CREATED_ISO }
                    | if updated.is_some_and(|u| !text_of(u)) { UPDATED_ISO } else { 0 };
                let fields = [
                    Some(m.content.as_str()),
                    Some(name),
                    Some(m.created.as_str()).filter(|_| iso & CREATED_ISO == 0),
                    m.updated.as_deref().filter(|_| iso & UPDATED_ISO == 0),
                    m.source.as_deref(),
                    m.agent.as_deref(),
                    m.created_by.as_deref(),
                    m.updated_by.as_deref(),
                ];
                let head = Block::push(&mut self.arena, fields, &m.tags);
                let mut r = Record {
                    stamp,
                    id: m.id,
                    created_at: m.created_at,
                    updated_at: m.updated_at.unwrap_or(0),
                    text,
                    line: 0,
                    valid: true,
                    protected: m.decay_protected,
                    kind: type_code(m.memory_type),
                    importance: importance_code(m.importance),
                    iso,
                    owned: m.agent.is_some(),
                    ..Record::default()
                };
                r.set_lengths(head, &m.content, name);
                r
            }
            Err((p, id)) => {
                let text = self.arena.len() as u32;
                let fields = [Some(p.message.as_str()), Some(name), None, None, None, None, None, None];
                let head = Block::push(&mut self.arena, fields, &[]);
                let mut r = Record { stamp, id, text, line: p.line.unwrap_or(0) as u32, ..Record::default() };
                r.set_lengths(head, &p.message, name);
                r
            }
        };
        self.records.push(rec);
    }

    /// Rebuilds the arena when most of it belongs to files that are gone or changed.
    fn compact_if_sparse(&mut self) {
        let live: usize = self.records.iter().map(|r| self.block(r).len).sum();
        if live * 2 >= self.arena.len() {
            return;
        }
        let old_arena = std::mem::take(&mut self.arena);
        self.arena.reserve_exact(live);
        for r in &mut self.records {
            let start = r.text as usize;
            let len = Block::parse(&old_arena, start).map_or(0, |b| b.len);
            r.text = self.arena.len() as u32;
            self.arena.push_str(old_arena.get(start..start + len).unwrap_or_default());
        }
    }

    /// Returns a record's block (an empty one for a block that does not parse: never, for a block
    /// this index wrote or a verified cache holds).
    fn block(&self, r: &Record) -> Block<'_> {
        Block::parse(&self.arena, r.text as usize).unwrap_or_default()
    }

    /// Returns a record's `created` and `updated` as written, from its block `b`.
    fn written<'a>(r: &Record, b: &Block<'a>) -> (Written<'a>, Option<Written<'a>>) {
        let created = match r.iso & CREATED_ISO {
            0 => Written::Text(b.get(Field::Created).unwrap_or_default()),
            _ => Written::Iso(r.created_at),
        };
        let updated = match r.iso & UPDATED_ISO {
            0 => b.get(Field::Updated).map(Written::Text),
            _ => Some(Written::Iso(r.updated_at)),
        };
        (created, updated)
    }

    fn view(&self, r: &Record) -> MemoryRef<'_> {
        let b = self.block(r);
        let (created, updated) = Index::written(r, &b);
        MemoryRef {
            id: r.id,
            file_name: b.get(Field::Name).unwrap_or_default(),
            created,
            created_at: r.created_at,
            updated,
            updated_at: updated.map(|_| r.updated_at),
            source: b.get(Field::Source),
            decay_protected: r.protected,
            // Records come from a parse or a verified cache: the codes are valid.
            memory_type: type_of(r.kind).flatten(),
            importance: importance_of(r.importance).flatten(),
            agent: b.get(Field::Agent),
            created_by: b.get(Field::CreatedBy),
            updated_by: b.get(Field::UpdatedBy),
            tags: b.tags().collect(),
            content: b.get(Field::Content).unwrap_or_default(),
        }
    }

    /// Returns every valid memory, in no particular order.
    pub fn memories(&self) -> impl Iterator<Item = MemoryRef<'_>> {
        self.records.iter().filter(|r| r.valid).map(|r| self.view(r))
    }

    /// Returns the stamp of the folder as the records hold its files, when the scan (or the
    /// cache it came from) found it old enough to trust and found no file that is not a valid
    /// memory: a reader that finds the folder with this stamp ([`folder_stamp`]) knows no file was
    /// added, removed or renamed since (an edit in place it cannot see).
    pub fn trusted_folder(&self) -> Option<u128> {
        let clean = self.extra_problems.is_empty() && self.records.iter().all(|r| r.valid);
        self.folder.filter(|_| clean).map(|s| packed_stamp(&s))
    }

    /// Returns the file names of the valid memories, in the order of [`Index::positions`].
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.records.iter().filter(|r| r.valid).map(|r| r.content_and_name(&self.arena).1)
    }

    /// Returns a digest of what the valid memories are made from: the arena's bytes and where
    /// each valid memory's block lies in it, in order. Two indexes of one digest hold the same
    /// memories, field for field, in the same order (a memory's every string lies in its block).
    pub fn digest(&self) -> u128 {
        let mut blocks = Vec::with_capacity(self.records.len() * 4);
        for r in self.records.iter().filter(|r| r.valid) {
            blocks.extend_from_slice(&r.text.to_le_bytes());
        }
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(self.arena.as_bytes());
        h.update(&blocks);
        h.digest128()
    }

    /// Returns the positions of the valid memories: cheap handles for sorting large sets
    /// without building a view of each.
    pub fn positions(&self) -> impl Iterator<Item = Pos> + '_ {
        self.records.iter().enumerate().filter(|(_, r)| r.valid).map(|(i, _)| Pos(i))
    }

    /// Returns the memory at a position.
    pub fn at(&self, pos: Pos) -> MemoryRef<'_> {
        self.view(&self.records[pos.0])
    }

    /// Returns what a list line shows of the memory at a position, without a view of it (no
    /// list of its tags is made).
    pub fn listed_at(&self, pos: Pos) -> Listed<'_> {
        let r = &self.records[pos.0];
        let b = self.block(r);
        let (created, updated) = Index::written(r, &b);
        Listed {
            id: r.id,
            created,
            updated,
            category: file::detect_category(b.tags()),
            decay_protected: r.protected,
            content: r.content_and_name(&self.arena).0,
        }
    }

    /// Returns the id at a position.
    pub fn id_at(&self, pos: Pos) -> u64 {
        self.records[pos.0].id
    }

    /// Returns the file name at a position.
    pub fn file_name_at(&self, pos: Pos) -> &str {
        self.name_at(pos.0)
    }

    /// Returns the time order key (created, then id) at a position.
    /// Returns whether the memory at `pos` is visible to `agent` ([`MemoryRef::visible_to`]).
    pub fn visible_at(&self, pos: Pos, agent: Option<&str>) -> bool {
        let r = &self.records[pos.0];
        if !r.owned {
            return true;
        }
        let b = self.block(r);
        file::visible(b.get(Field::Agent), b.tags(), agent)
    }

    pub fn age_key_at(&self, pos: Pos) -> (Micros, u64) {
        let r = &self.records[pos.0];
        (r.created_at, r.id)
    }

    /// Returns whether the memory at a position is protected from decay.
    pub fn protected_at(&self, pos: Pos) -> bool {
        self.records[pos.0].protected
    }

    /// Returns the memory's type at a position (`learning` when the file has none).
    pub fn type_at(&self, pos: Pos) -> MemoryType {
        type_of(self.records[pos.0].kind).flatten().unwrap_or_default()
    }

    /// Returns the memory's importance at a position (`medium` when the file has none).
    pub fn importance_at(&self, pos: Pos) -> Importance {
        importance_of(self.records[pos.0].importance).flatten().unwrap_or_default()
    }

    /// Returns who created the memory at a position (`None`: no `created_by`, a person's).
    pub fn created_by_at(&self, pos: Pos) -> Option<&str> {
        self.block(&self.records[pos.0]).get(Field::CreatedBy)
    }

    /// Returns the agent a memory names at a position (`None`: every agent's).
    pub fn agent_at(&self, pos: Pos) -> Option<&str> {
        self.block(&self.records[pos.0]).get(Field::Agent)
    }

    /// Returns the content at a position.
    pub fn content_at(&self, pos: Pos) -> &str {
        self.records[pos.0].content_and_name(&self.arena).0
    }

    /// Returns the tags at a position.
    pub fn tags_at(&self, pos: Pos) -> impl Iterator<Item = &str> {
        let r = &self.records[pos.0];
        self.block(r).tags()
    }

    /// Returns the number of valid memories.
    pub fn len(&self) -> usize {
        self.records.iter().filter(|r| r.valid).count()
    }

    /// Returns the number of memory files looked at, valid or not.
    pub fn files(&self) -> usize {
        self.records.len() + self.extra_problems.len()
    }

    /// Returns the valid memories with this id (more than one only when ids are duplicated).
    pub fn by_id(&self, id: u64) -> Vec<MemoryRef<'_>> {
        self.records.iter().filter(|r| r.valid && r.id == id).map(|r| self.view(r)).collect()
    }

    /// Returns the highest id in use, if any: in a valid memory, or on an `id: N` line of a file
    /// that does not parse (a merge may have left it with conflict markers), so that a new id never
    /// reuses one written in any file.
    pub fn max_id(&self) -> Option<u64> {
        self.records.iter().filter(|r| r.valid || r.id > 0).map(|r| r.id).max()
    }

    /// Returns the problem of each file that is not a valid memory but names `id` in an `id: N`
    /// line (so `kb show N` can say why memory N cannot be read).
    pub fn problems_of_id(&self, id: u64) -> Vec<Diagnostic> {
        self.records.iter().filter(|r| !r.valid && r.id == id).map(|r| self.problem(r)).collect()
    }

    /// Returns every file that is not a valid memory, sorted by path.
    pub fn problems(&self) -> Vec<Diagnostic> {
        let mut out: Vec<Diagnostic> = self
            .records
            .iter()
            .filter(|r| !r.valid)
            .map(|r| self.problem(r))
            .chain(self.extra_problems.iter().cloned())
            .collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// Returns the problem of a file that is not a valid memory (its record holds the message as
    /// its content).
    fn problem(&self, r: &Record) -> Diagnostic {
        let (message, name) = r.content_and_name(&self.arena);
        Diagnostic::error((r.line > 0).then_some(r.line as usize), message).in_file(&self.dir.join(name))
    }

    /// Returns the names of the memory files that were read but are not valid memories, sorted.
    pub fn invalid_files(&self) -> Vec<&str> {
        let mut out: Vec<&str> =
            self.records.iter().filter(|r| !r.valid).map(|r| r.content_and_name(&self.arena).1).collect();
        out.sort_unstable();
        out
    }

    /// Returns kb's temporary files in the memories folder (left by a killed write, or a write
    /// under way), sorted.
    pub fn temp_files(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self.temp_files.iter().map(|n| self.dir.join(n)).collect();
        out.sort();
        out
    }

    /// Returns each id used by more than one file, with those files' names sorted.
    pub fn duplicate_ids(&self) -> Vec<(u64, Vec<&str>)> {
        let mut pairs: Vec<(u64, &str)> =
            self.records.iter().filter(|r| r.valid).map(|r| (r.id, r.content_and_name(&self.arena).1)).collect();
        pairs.sort_unstable();
        pairs
            .chunk_by(|a, b| a.0 == b.0)
            .filter(|run| run.len() > 1)
            .map(|run| (run[0].0, run.iter().map(|p| p.1).collect()))
            .collect()
    }

    fn save_cache(&self, path: &Path, started_ns: i64, dir_stamp: Option<Stamp>) -> io::Result<()> {
        super::cache::write(path, started_ns, dir_stamp, &self.records, &self.arena)
    }
}

/// Lists folder entries into `batch` until `full(names in the batch)` says it is full or the
/// listing ends; returns whether entries may be left. Dot files are never memories (editor swap
/// files, kb's own `.kb-tmp-*`); kb's temporary files are noted in `temp_files`, so a write can
/// remove a stale one and `kb check` report it without listing the folder again, and a name that
/// is not UTF-8 is a problem.
fn list_batch(
    listing: &mut rustix::fs::Dir,
    folder: &Folder<'_>,
    batch: &mut Names,
    temp_files: &mut Vec<String>,
    problems: &mut Vec<Diagnostic>,
    full: impl Fn(usize) -> bool,
) -> io::Result<bool> {
    for entry in listing.by_ref() {
        let entry = entry?;
        let name = entry.file_name();
        match name.to_str() {
            Ok("." | "..") => {}
            Ok(n) if is_memory_name(n) => batch.push(name, entry.file_type() == rustix::fs::FileType::RegularFile),
            Ok(n) if crate::fsio::is_temp_name(std::ffi::OsStr::new(n)) => {
                if folder.is_file(name, entry.file_type()) {
                    temp_files.push(n.to_string());
                }
            }
            Ok(_) => {}
            Err(_) => {
                let path = folder.path.join(std::ffi::OsStr::from_bytes(name.to_bytes()));
                problems.push(Diagnostic::error(None, "file name is not valid UTF-8").in_file(&path));
            }
        }
        if full(batch.len()) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// What one scan worker found.
struct Outcome {
    /// Memory files looked at.
    files: usize,
    /// Positions in the old cache whose records are still valid.
    alive: Vec<usize>,
    /// Files read and parsed now, packed into an index of their own (so that the workers pack
    /// them, not the thread that gathers their outcomes).
    fresh: Index,
    /// Positions in the old cache of files read again only because they are too young to trust.
    racy: Vec<usize>,
    /// How many of those a cache written now would trust.
    aged: usize,
    problems: Vec<Diagnostic>,
}

/// The memories folder, open: its files are stat'ed and opened by name relative to it, so no
/// path is built, and none walked from the root, per file.
struct Folder<'a> {
    fd: rustix::fd::OwnedFd,
    path: &'a Path,
}

impl<'a> Folder<'a> {
    /// Opens the folder `path` and a listing of its entries.
    fn open(path: &'a Path) -> io::Result<(Folder<'a>, rustix::fs::Dir)> {
        use rustix::fs::{Mode, OFlags};
        let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        let listing = rustix::fs::Dir::read_from(&fd)?;
        Ok((Folder { fd, path }, listing))
    }

    /// Returns the path of the entry `name`, for a message or the rare file that needs one.
    fn path_of(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Returns whether the entry `name`, of the type its listing gave, is a regular file (not
    /// following a symlink).
    fn is_file(&self, name: &CStr, listed: rustix::fs::FileType) -> bool {
        use rustix::fs::FileType;
        match listed {
            FileType::Unknown => stat_in(&self.fd, self.path, name).is_ok_and(|s| s.kind == Kind::File),
            kind => kind == FileType::RegularFile,
        }
    }

    /// Stats the entry `name` (`lstat`), following a symlink only when it stays inside `root`
    /// (see [`stat_entry`]); records a problem and returns `None` for anything that is not a
    /// readable regular file.
    fn stat(&self, problems: &mut Vec<Diagnostic>, name: &str, c_name: &CStr, root: &Path) -> Option<(Stamp, u64)> {
        match stat_in(&self.fd, self.path, c_name) {
            Ok(s) if s.kind == Kind::File => Some((s.stamp, s.len)),
            // A symlink, anything else, or a failed stat: as a path, for the messages.
            _ => {
                let path = self.path_of(name);
                stat_entry(problems, fs::symlink_metadata(&path), &path, root).map(|m| (stamp_of(&m), m.len()))
            }
        }
    }

    /// Reads and parses the memory file `c_name` of `len` bytes.
    fn read(&self, c_name: &CStr, len: u64) -> Parsed {
        use rustix::fs::{Mode, OFlags};
        // Not blocking: a FIFO put in the file's place since its stat must not hang the scan.
        let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK;
        read_memory(|| Ok(fs::File::from(rustix::fs::openat(&self.fd, c_name, flags, Mode::empty())?)), len)
    }

    /// Opens the entry `c_name`, which the listing said is a regular file, and reads and parses
    /// it, its stamp and size taken from the open file: one lookup of the name, not a `statx` of
    /// it and then an open (a file with no cached record is read anyway). `None` when it is not
    /// a regular file now (a symlink is not opened), or cannot be opened: the caller takes the
    /// path of [`Folder::stat`], which says why.
    fn open_and_read(&self, c_name: &CStr) -> Option<(Stamp, Parsed)> {
        use rustix::fs::{Mode, OFlags};
        let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOFOLLOW;
        let file = fs::File::from(rustix::fs::openat(&self.fd, c_name, flags, Mode::empty()).ok()?);
        let meta = file.metadata().ok().filter(fs::Metadata::is_file)?;
        Some((stamp_of(&meta), read_memory(|| Ok(file), meta.len())))
    }
}

/// What a file is, as its own `lstat` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Other,
}

/// A folder entry's `lstat`: what it is, its stamp and its size.
struct EntryStat {
    kind: Kind,
    stamp: Stamp,
    len: u64,
}

/// Stats the entry `name` of the open folder `fd` (at `path`) without following a symlink:
/// `statx` relative to the folder on Linux, the path elsewhere (and where `statx` is refused).
fn stat_in(fd: &rustix::fd::OwnedFd, path: &Path, name: &CStr) -> io::Result<EntryStat> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{AtFlags, FileType, StatxFlags, StatxTimestamp};
        let want = StatxFlags::TYPE | StatxFlags::SIZE | StatxFlags::MTIME | StatxFlags::CTIME | StatxFlags::INO;
        match rustix::fs::statx(fd, name, AtFlags::SYMLINK_NOFOLLOW, want) {
            Ok(x) => {
                let ns = |t: StatxTimestamp| t.tv_sec * 1_000_000_000 + i64::from(t.tv_nsec);
                let file = FileType::from_raw_mode(u32::from(x.stx_mode)) == FileType::RegularFile;
                return Ok(EntryStat {
                    kind: if file { Kind::File } else { Kind::Other },
                    stamp: Stamp::new(x.stx_size, ns(x.stx_mtime), ns(x.stx_ctime), x.stx_ino),
                    len: x.stx_size,
                });
            }
            // A kernel before `statx` (4.11), or a sandbox that refuses it.
            Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let _ = fd;
    let meta = fs::symlink_metadata(path.join(std::ffi::OsStr::from_bytes(name.to_bytes())))?;
    let kind = if meta.file_type().is_file() { Kind::File } else { Kind::Other };
    Ok(EntryStat { kind, stamp: stamp_of(&meta), len: meta.len() })
}

/// The names of a batch of memory files, back to back, each ending in NUL (so that it is a C
/// string for the calls relative to the folder, and a `str` without it).
#[derive(Default)]
struct Names {
    text: String,
    /// Where each name's NUL ends.
    ends: Vec<u32>,
    /// Whether the listing said each is a regular file (not a symlink, not unknown).
    regular: Vec<bool>,
}

impl Names {
    /// Adds a name (valid UTF-8, no NUL inside: a folder entry's), and whether the listing said
    /// it is a regular file.
    fn push(&mut self, name: &CStr, regular: bool) {
        if let Ok(n) = name.to_str() {
            self.text.push_str(n);
            self.text.push('\0');
            self.ends.push(self.text.len() as u32);
            self.regular.push(regular);
        }
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
        self.regular.clear();
    }

    /// Returns name `k`, as text and as a C string.
    fn get(&self, k: usize) -> (&str, &CStr) {
        let start = if k == 0 { 0 } else { self.ends[k - 1] as usize };
        let with_nul = &self.text[start..self.ends[k] as usize];
        // Pushed with its NUL and none inside.
        (&with_nul[..with_nul.len() - 1], CStr::from_bytes_with_nul(with_nul.as_bytes()).unwrap_or_default())
    }
}

/// The read-only state scan workers share.
struct Lookup<'a> {
    folder: &'a Folder<'a>,
    /// The cache's arena and records.
    arena: &'a str,
    old: &'a [Record],
    /// The cache's records by the hash of their names, built by the first worker that does not
    /// find a name where the order of the listing says it should be.
    by_name: std::sync::OnceLock<hashbrown::HashTable<u32>>,
    /// Cached entries whose mtime and ctime are older than this are trusted.
    trusted_before: i64,
    /// The same for a cache this scan writes.
    trusted_after_write: i64,
    root: &'a Path,
}

impl Lookup<'_> {
    /// Visits the names `range` of `batch` (whose first name is the `listed`-th memory file
    /// listed) on up to `threads` threads: the calling one too, once it has done `meanwhile`.
    /// The names are taken [`STEAL`] at a time by whichever thread is free, so that a thread
    /// slowed down (by `meanwhile`, or by the other processes of the machine) does not leave the
    /// others waiting for it; the outcomes come back in the order of the names.
    fn visit_parallel(
        &self,
        batch: &Names,
        range: std::ops::Range<usize>,
        listed: usize,
        threads: usize,
        meanwhile: Option<&mut dyn FnMut()>,
    ) -> Vec<Outcome> {
        let parts: Vec<std::ops::Range<usize>> =
            range.clone().step_by(STEAL).map(|at| at..(at + STEAL).min(range.end)).collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let work = || {
            let mut done = Vec::new();
            loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(part) = parts.get(k) else { return done };
                done.push((k, self.visit(batch, part.clone(), listed)));
            }
        };
        // No more threads than there are `MIN_CHUNK`s of names: a thread costs more than
        // stat'ing a few files.
        let threads = threads.min(range.len().div_ceil(MIN_CHUNK)).max(1);
        let mut all = std::thread::scope(|scope| {
            let spawned = match meanwhile {
                Some(_) => threads,
                None => threads - 1,
            };
            let workers: Vec<_> = (0..spawned).map(|_| scope.spawn(work)).collect();
            if let Some(task) = meanwhile {
                task();
            }
            let mut all = work();
            for w in workers {
                all.extend(w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
            }
            all
        });
        all.sort_unstable_by_key(|&(k, _)| k);
        all.into_iter().map(|(_, outcome)| outcome).collect()
    }

    /// Returns the position of the cached record of file `name`, trying `guess` first.
    fn find(&self, name: &str, guess: usize) -> Option<usize> {
        let name_of = |i: usize| self.old[i].content_and_name(self.arena).1;
        if self.old.get(guess).is_some_and(|_| name_of(guess) == name) {
            return Some(guess);
        }
        let table = self.by_name.get_or_init(|| {
            let mut table = hashbrown::HashTable::with_capacity(self.old.len());
            for i in 0..self.old.len() {
                table.insert_unique(name_hash(name_of(i)), i as u32, |&j| name_hash(name_of(j as usize)));
            }
            table
        });
        table.find(name_hash(name), |&i| name_of(i as usize) == name).map(|&i| i as usize)
    }

    /// Stats each name of `batch` in `part`; reuses the cached record when the file is
    /// unchanged, else reads and parses it. The cache's records are looked for in the order of
    /// the listing first (the order they were written in).
    fn visit(&self, batch: &Names, part: std::ops::Range<usize>, listed: usize) -> Outcome {
        let mut out = Outcome {
            files: part.len(),
            alive: Vec::new(),
            fresh: Index::empty(self.folder.path),
            racy: Vec::new(),
            aged: 0,
            problems: Vec::new(),
        };
        let mut guess = listed + part.start;
        for k in part {
            let (name, c_name) = batch.get(k);
            // A file the cache has no record of (every file on a first run) is read whatever
            // its stat says.
            let found = if self.old.is_empty() { None } else { self.find(name, guess) };
            if found.is_none()
                && batch.regular[k]
                && let Some((stamp, parsed)) = self.folder.open_and_read(c_name)
            {
                out.fresh.push_parsed(name, stamp, parsed);
                continue;
            }
            let Some((stamp, len)) = self.folder.stat(&mut out.problems, name, c_name, self.root) else { continue };
            guess = found.map_or(guess, |i| i + 1);
            if let Some(i) = found
                && self.old[i].stamp == stamp
            {
                let newest = stamp.newest_ns;
                if newest < self.trusted_before {
                    out.alive.push(i);
                    continue;
                }
                out.racy.push(i);
                if newest < self.trusted_after_write {
                    out.aged += 1;
                }
            }
            out.fresh.push_parsed(name, stamp, self.folder.read(c_name, len));
        }
        out
    }
}

/// Takes a directory entry's own metadata (`lstat`), following a symlink only when it stays
/// inside the root; records a problem and returns `None` for anything that is not a readable
/// regular file.
fn stat_entry(
    problems: &mut Vec<Diagnostic>,
    meta: io::Result<fs::Metadata>,
    path: &Path,
    root: &Path,
) -> Option<fs::Metadata> {
    let mut problem = |message: String| {
        problems.push(Diagnostic::error(None, message).in_file(path));
        None
    };
    let meta = match meta {
        Ok(m) => m,
        Err(e) => return problem(format!("cannot stat: {e}")),
    };
    let meta = if meta.file_type().is_symlink() {
        match fs::canonicalize(path) {
            Err(e) => return problem(format!("broken or looping symlink: {e}")),
            Ok(target) if !target.starts_with(root) => {
                return problem(format!("symlink points outside the repository, to {}", target.display()));
            }
            Ok(target) => match fs::metadata(&target) {
                Ok(m) => m,
                Err(e) => return problem(format!("cannot stat symlink target: {e}")),
            },
        }
    } else {
        meta
    };
    if meta.is_dir() {
        return problem("is a directory, not a memory file".into());
    }
    if !meta.is_file() {
        return problem("is not a regular file".into());
    }
    Some(meta)
}

/// The memory files of a folder and their stamps, listed without reading them (see
/// [`Index::changed`]): what a long-running reader compares with its index to catch what file
/// events missed. Taken without holding the index, so the index stays usable meanwhile.
#[derive(Debug, Default)]
pub struct Listing {
    /// Every name, back to back.
    names: String,
    /// Each file: where its name ends in `names`, and its stamp.
    files: Vec<(u32, Stamp)>,
}

impl Listing {
    /// Lists `dir` and stats every memory file in it (following symlinks, as a scan does for
    /// those inside the root); a missing folder lists nothing.
    pub fn of(dir: &Path) -> io::Result<Listing> {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Listing::default()),
            Err(e) => return Err(e),
        };
        let mut out = Listing::default();
        for entry in entries {
            let entry = entry?;
            let file_name = entry.file_name();
            let Some(name) = file_name.to_str().filter(|n| is_memory_name(n)) else { continue };
            if let Ok(meta) = fs::metadata(entry.path()) {
                out.names.push_str(name);
                let end = u32::try_from(out.names.len())
                    .map_err(|_| io::Error::other(format!("{} lists too many files", dir.display())))?;
                out.files.push((end, stamp_of(&meta)));
            }
        }
        Ok(out)
    }

    /// Returns each file's name and stamp.
    fn iter(&self) -> impl Iterator<Item = (&str, Stamp)> {
        let starts = std::iter::once(0).chain(self.files.iter().map(|&(end, _)| end));
        starts.zip(&self.files).map(|(start, &(end, stamp))| (&self.names[start as usize..end as usize], stamp))
    }
}

/// Returns the stamp of the memories folder `dir` of the repository at `root` as
/// [`Index::trusted_folder`] gives it; `None` when it is not a folder, or leads outside the
/// repository.
pub fn folder_stamp(dir: &Path, root: &Path) -> Option<u128> {
    let meta = fs::symlink_metadata(dir).ok().filter(fs::Metadata::is_dir)?;
    let real_root = fs::canonicalize(root).ok()?;
    fs::canonicalize(dir).ok()?.starts_with(&real_root).then(|| packed_stamp(&stamp_of(&meta)))
}

/// A stamp as one number (never 0).
fn packed_stamp(s: &Stamp) -> u128 {
    ((s.newest_ns as u64 as u128) << 64 | u128::from(s.sig)).max(1)
}

/// The part of a file's metadata that says whether it changed.
fn stamp_of(meta: &fs::Metadata) -> Stamp {
    Stamp::new(
        meta.len(),
        meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
        meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
        meta.ino(),
    )
}

/// Returns whether a file name in the memories folder is a memory file's: `*.md`, not hidden.
pub fn is_memory_name(name: &str) -> bool {
    name.ends_with(".md") && !name.starts_with('.')
}

fn name_hash(name: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(name.as_bytes())
}

/// A file read and parsed: the memory, or the problem and the id its `id: N` lines name (0 for
/// none).
type Parsed = Result<Memory, (Diagnostic, u64)>;

/// Reads and parses one memory file of `len` bytes, opened by `open`.
fn read_memory(open: impl FnOnce() -> io::Result<fs::File>, len: u64) -> Parsed {
    if len > MAX_FILE_BYTES {
        return Err((
            Diagnostic::error(None, format!("file is {len} bytes; memory files are limited to {MAX_FILE_BYTES} bytes")),
            0,
        ));
    }
    let bytes = open()
        .and_then(|f| read_stat_sized(f, len))
        .map_err(|e| (Diagnostic::error(None, format!("cannot read: {e}")), 0))?;
    // A file that does not parse still holds ids a new memory must not reuse.
    let written_id = || crate::format::merge::written_id(&String::from_utf8_lossy(&bytes)).unwrap_or(0);
    match text::decode(&bytes).and_then(file::parse) {
        Ok(m) => Ok(m),
        Err(d) => Err((d, written_id())),
    }
}

/// Reads a regular file that its stat said holds `len` bytes (at most [`MAX_FILE_BYTES`] + 1 of
/// them): `read`s of a byte more than that until the `len` bytes are in, so that no last `read`
/// is needed to find the end (10,000 calls fewer on a first scan of 10,000 files). A file that grew
/// since is read on to its end; one that changed since has another stamp, and is read again by
/// the next scan.
fn read_stat_sized(mut f: fs::File, len: u64) -> io::Result<Vec<u8>> {
    let len = len.min(MAX_FILE_BYTES) as usize;
    let want = len + 1;
    let mut bytes = vec![0u8; want];
    let mut got = 0;
    loop {
        match f.read(&mut bytes[got..]) {
            Ok(0) => break,
            Ok(n) => {
                got += n;
                if got < len {
                    continue;
                }
                if got < want {
                    break;
                }
                bytes.truncate(got);
                f.take(MAX_FILE_BYTES + 1 - got as u64).read_to_end(&mut bytes)?;
                return Ok(bytes);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    bytes.truncate(got);
    Ok(bytes)
}

fn now_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64)
}

/// Files whose mtime is this close to the cache's are read again (racy-git rule).
const RACY_MARGIN_NS: i64 = 2_000_000_000;

/// How much of the arena memories may fill: its offsets are 32-bit, and the last GiB is left to
/// the problems of files past this (their names and messages), however many (small in tests, so
/// that they can pass it).
const MAX_ARENA: usize = if cfg!(test) { 4 << 20 } else { 3 << 30 };

/// The problem of a file past [`MAX_ARENA`].
fn too_much_text() -> Diagnostic {
    Diagnostic::error(None, "not indexed: the memories folder holds over 3 GiB of text")
}

/// Folder entries listed, stat'ed and parsed per batch: bounds what a first scan holds besides
/// the index (about 5 MB of parsed files and entries). Smaller in unit tests, so that a test of a
/// few hundred files crosses batches and threads.
const BATCH: usize = if cfg!(test) { 256 } else { 8192 };

/// No thread gets fewer entries than this (a thread costs more than stat'ing a few files).
const MIN_CHUNK: usize = if cfg!(test) { 64 } else { 2048 };

/// The entries a scan thread takes at a time from a batch (see [`Lookup::visit_parallel`]).
const STEAL: usize = if cfg!(test) { 16 } else { 512 };

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memories::cache::{decode, encode};

    /// A memory's id, its layer keys as written, and its tags.
    type Layers = (u64, Option<MemoryType>, Option<Importance>, Option<String>, Vec<String>);

    fn layers(index: &Index) -> Vec<Layers> {
        let mut out: Vec<_> = index
            .memories()
            .map(|m| {
                let tags = m.tags.iter().map(|t| t.to_string()).collect();
                (m.id, m.memory_type, m.importance, m.agent.map(String::from), tags)
            })
            .collect();
        out.sort_by_key(|m| m.0);
        out
    }

    #[test]
    fn the_digest_is_the_same_for_the_same_memories_and_changes_with_any_of_their_text() {
        let dir = Path::new("/nowhere/memories");
        let file = |content: &str| {
            let text = format!("---\ncreated: '2026-11-20T10:00:00+00:00'\nid: 1\ntags: [a]\n---\n\n{content}\n");
            ("001-a.md".to_string(), text.into_bytes())
        };
        let index = |files: Vec<(String, Vec<u8>)>| Index::from_files(dir, files);
        let one = index(vec![file("the same text")]);
        assert_eq!(one.digest(), index(vec![file("the same text")]).digest());
        assert_ne!(one.digest(), index(vec![file("the same text!")]).digest());
        assert_ne!(
            one.digest(),
            index(vec![file("the same text"), ("002-b.md".into(), b"no frontmatter".to_vec())]).digest()
        );
        assert_ne!(one.digest(), index(Vec::new()).digest());
    }

    #[test]
    fn the_cache_keeps_type_importance_and_agent() {
        let dir = tempfile::tempdir().unwrap();
        let memories = dir.path().join("memories");
        fs::create_dir_all(&memories).unwrap();
        let head = |id: u64| format!("---\ncreated: '2026-11-20T10:00:00+00:00'\nid: {id}\n");
        fs::write(memories.join("001-a.md"), format!("{}tags: []\n---\n\nplain\n", head(1))).unwrap();
        fs::write(
            memories.join("002-b.md"),
            format!("{}agent: reviewer\nimportance: high\ntags:\n- x\ntype: core_context\n---\n\nlayered\n", head(2)),
        )
        .unwrap();
        fs::write(memories.join("003-c.md"), format!("{}importance: low\ntype: update\n---\n\nlow\n", head(3)))
            .unwrap();
        fs::write(memories.join("004-d.md"), format!("{}type: lesson\n---\n\nbad\n", head(4))).unwrap();
        let cache = dir.path().join("cache/memories.idx");
        let scanned = Index::scan(&memories, dir.path(), Some(&cache)).unwrap();
        assert!(scanned.stats.cache_written);
        let want = vec![
            (1, None, None, None, vec![]),
            (2, Some(MemoryType::CoreContext), Some(Importance::High), Some("reviewer".to_string()), vec!["x".into()]),
            (3, Some(MemoryType::Update), Some(Importance::Low), None, vec![]),
        ];
        assert_eq!(layers(&scanned), want);
        let c = crate::memories::cache::Cached::load(&cache).unwrap();
        let cached = Index { arena: c.arena, records: c.records, ..Index::empty(&memories) };
        assert_eq!(layers(&cached), want);
        let problems = cached.problems();
        assert_eq!(problems.len(), 1);
        assert!(problems[0].message.contains("unknown type 'lesson'"), "{problems:?}");
        assert_eq!(problems[0].line, Some(4));
        let pos: Vec<Pos> = cached.positions().collect();
        let of = |id: u64| *pos.iter().find(|&&p| cached.id_at(p) == id).unwrap();
        assert_eq!((cached.type_at(of(1)), cached.agent_at(of(1))), (MemoryType::Learning, None));
        assert_eq!((cached.type_at(of(2)), cached.agent_at(of(2))), (MemoryType::CoreContext, Some("reviewer")));
        // Provenance survives the cache too (format 6); a value that is not a string is no author.
        fs::write(
            memories.join("005-e.md"),
            format!(
                "{}created_by: agent:claude
updated_by: ana@example.com
---

who
",
                head(5)
            ),
        )
        .unwrap();
        fs::write(
            memories.join("006-f.md"),
            format!(
                "{}created_by: 7
---

number
",
                head(6)
            ),
        )
        .unwrap();
        Index::scan(&memories, dir.path(), Some(&cache)).unwrap();
        let c = crate::memories::cache::Cached::load(&cache).unwrap();
        let cached = Index { arena: c.arena, records: c.records, ..Index::empty(&memories) };
        let by = |id: u64| cached.memories().find(|m| m.id == id).map(|m| (m.created_by, m.updated_by)).unwrap();
        assert_eq!(by(5), (Some("agent:claude"), Some("ana@example.com")));
        assert_eq!(by(6), (None, None));
        assert_eq!(by(1), (None, None));
    }

    #[test]
    fn an_invalid_file_still_holds_its_ids_in_the_scan_and_the_cache() {
        // After a merge, a file with conflict markers does not parse, but its ids are
        // in use; the next id is the highest seen + 1.
        let dir = tempfile::tempdir().unwrap();
        let memories = dir.path().join("memories");
        fs::create_dir_all(&memories).unwrap();
        let valid = "---\ncreated: '2026-11-20T10:00:00+00:00'\nid: 2\ntags: []\n---\n\nok\n";
        fs::write(memories.join("002-ok.md"), valid).unwrap();
        let merged = "<<<<<<< HEAD\n---\ncreated: '2026-11-20T10:00:00+00:00'\nid: 3\n---\n\na\n=======\n---\n\
                      created: '2026-11-20T10:00:00+00:00'\nid: 7\n---\n\nb\n>>>>>>> other\n";
        fs::write(memories.join("003-a.md"), merged).unwrap();
        fs::write(memories.join("004-none.md"), "no frontmatter, no id\n").unwrap();
        let cache = dir.path().join("cache/memories.idx");
        let scanned = Index::scan(&memories, dir.path(), Some(&cache)).unwrap();
        assert_eq!((scanned.len(), scanned.max_id()), (1, Some(7)));
        assert_eq!(scanned.invalid_files(), ["003-a.md", "004-none.md"]);
        let c = crate::memories::cache::Cached::load(&cache).unwrap();
        let cached = Index { arena: c.arena, records: c.records, ..Index::empty(&memories) };
        assert_eq!(cached.max_id(), Some(7));
        assert_eq!(cached.memories().map(|m| m.id).collect::<Vec<_>>(), [2]);
        fs::remove_file(memories.join("003-a.md")).unwrap();
        assert_eq!(Index::scan(&memories, dir.path(), None).unwrap().max_id(), Some(2));
    }

    #[test]
    fn a_record_with_an_unknown_code_is_not_decoded() {
        let r = Record { kind: 1, importance: 3, text: 7, line: 9, ..Record::default() };
        let bytes = encode(&r);
        let back = decode(&bytes).unwrap();
        assert_eq!((back.kind, back.importance, back.text, back.line), (1, 3, 7, 9));
        for (kind, importance) in [(5, 0), (0, 4), (255, 255)] {
            assert!(decode(&encode(&Record { kind, importance, ..r })).is_none(), "{kind} {importance}");
        }
        assert_eq!(type_code(Some(MemoryType::Update)), 4);
        assert_eq!(importance_code(Some(Importance::Low)), 3);
        assert_eq!(type_of(0), Some(None));
    }

    /// A memory as a test compares it: id, content, tags.
    type Seen = (u64, String, Vec<String>);

    /// The (id, content, tags) of every valid memory, sorted, and the invalid files.
    fn seen(index: &Index) -> (Vec<Seen>, Vec<String>) {
        let mut valid: Vec<_> = index
            .memories()
            .map(|m| (m.id, m.content.to_string(), m.tags.iter().map(|t| t.to_string()).collect()))
            .collect();
        valid.sort();
        (valid, index.invalid_files().iter().map(|n| n.to_string()).collect())
    }

    #[test]
    fn a_deferring_scan_writes_its_cache_only_when_asked_and_once() {
        let dir = tempfile::tempdir().unwrap();
        let memories = dir.path().join("memories");
        fs::create_dir_all(&memories).unwrap();
        fs::write(memories.join("001-a.md"), "---\nid: 1\ncreated: '2026-11-20T10:00:00+00:00'\n---\n\na\n").unwrap();
        let cache = dir.path().join("cache/memories.idx");
        let first = Index::scan_deferring(&memories, dir.path(), Some(&cache)).unwrap();
        assert!(!cache.exists(), "the scan left the write");
        assert_eq!(first.len(), 1);
        assert_eq!(first.write_pending_cache(), Some(true));
        assert!(cache.is_file());
        assert_eq!(first.write_pending_cache(), None, "once");
        // A scan with nothing to write says what it did, once.
        let again = Index::scan_deferring(&memories, dir.path(), Some(&cache)).unwrap();
        assert_eq!(again.write_pending_cache(), Some(again.stats.cache_written));
        assert_eq!(again.write_pending_cache(), None);
        let plain = Index::scan(&memories, dir.path(), Some(&cache)).unwrap();
        assert_eq!(plain.write_pending_cache(), Some(plain.stats.cache_written), "a plain scan wrote its own");
    }

    #[test]
    fn a_cache_in_another_order_than_the_listing_is_used_whole_over_batches_and_threads() {
        let dir = tempfile::tempdir().unwrap();
        let memories = dir.path().join("memories");
        fs::create_dir_all(&memories).unwrap();
        let n = 3 * BATCH + 100;
        let made = now_ns();
        for id in 1..=n {
            let text = match id % 100 {
                0 => "no frontmatter\n".to_string(),
                _ => format!(
                    "---\ncreated: '2026-11-20T10:00:00+00:00'\nid: {id}\ntags:\n- t{}\n---\n\nmemory {id}\n",
                    id % 7
                ),
            };
            fs::write(memories.join(format!("{id:05}-m.md")), text).unwrap();
        }
        fs::write(memories.join(".kb-tmp-left"), "").unwrap();
        let cache = dir.path().join("cache/memories.idx");
        let uncached = || Index::scan(&memories, dir.path(), None).unwrap();
        let first = Index::scan(&memories, dir.path(), Some(&cache)).unwrap();
        assert_eq!((first.stats.files, first.stats.read, first.stats.cache_written), (n, n, true));
        assert_eq!(first.temp_files(), [memories.join(".kb-tmp-left")]);
        // The cache rewritten in reverse order (no record where the listing's order puts it), as
        // if its scan had started 10 s from now, so that it trusts every file.
        let rewrite = |reverse: bool, at: i64| {
            let mut c = crate::memories::cache::Cached::load(&cache).unwrap();
            if reverse {
                c.records.reverse();
            }
            crate::memories::cache::write(&cache, at, c.dir_stamp, &c.records, &c.arena).unwrap();
        };
        rewrite(true, now_ns() + 10_000_000_000);
        let warm = Index::scan(&memories, dir.path(), Some(&cache)).unwrap();
        assert_eq!((warm.stats.files, warm.stats.read, warm.stats.cached), (n, 0, n));
        assert_eq!(seen(&warm), seen(&uncached()));
        // An edit in place is read again, alone.
        fs::write(memories.join("00042-m.md"), "---\ncreated: '2026-11-20T10:00:00+00:00'\nid: 42\n---\n\nedited\n")
            .unwrap();
        let edited = Index::scan(&memories, dir.path(), Some(&cache)).unwrap();
        assert_eq!((edited.stats.read, edited.stats.cached, edited.stats.racy), (1, n - 1, 0));
        assert_eq!(edited.by_id(42)[0].content, "edited");
        assert_eq!(seen(&edited), seen(&uncached()));
        // A cache whose scan began as the files were made trusts none of them (racy): each one
        // is read again, and found as cached.
        Index::scan(&memories, dir.path(), Some(&cache)).unwrap();
        rewrite(false, made);
        let racy = Index::scan(&memories, dir.path(), Some(&cache)).unwrap();
        assert_eq!((racy.stats.read, racy.stats.racy, racy.stats.cached), (n, n, 0));
        assert_eq!(seen(&racy), seen(&uncached()));
    }

    #[test]
    fn a_file_is_read_whole_whatever_its_stat_said() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.md");
        fs::write(&path, "0123456789").unwrap();
        for stat_len in [10, 0, 5, 9, 11, 20] {
            let bytes = read_stat_sized(fs::File::open(&path).unwrap(), stat_len).unwrap();
            assert_eq!(bytes, b"0123456789", "a stat of {stat_len} bytes");
        }
    }

    #[test]
    fn files_past_the_arena_limit_are_reported_not_indexed_across_workers_and_batches() {
        let dir = tempfile::tempdir().unwrap();
        let memories = dir.path().join("memories");
        fs::create_dir_all(&memories).unwrap();
        let n = 3 * BATCH;
        let body = "x".repeat(MAX_ARENA / (n - 100));
        for id in 1..=n {
            let text = format!("---\ncreated: '2026-11-20T10:00:00+00:00'\nid: {id}\n---\n\n{body}\n");
            fs::write(memories.join(format!("{id:05}-m.md")), text).unwrap();
        }
        let index = Index::scan(&memories, dir.path(), None).unwrap();
        assert_eq!((index.stats.files, index.files()), (n, n), "every file is in the index");
        assert!(index.arena.len() < MAX_ARENA + 200 * 100, "the problems of 100 files past it");
        let (valid, invalid) = seen(&index);
        assert!(valid.len() > n - 110 && valid.len() < n - 90, "{} valid", valid.len());
        assert_eq!(valid.len() + invalid.len(), n);
        let problem = &index.problems_of_id(n as u64)[0];
        assert!(problem.message.contains("not indexed"), "{}", problem.message);
        // The memories indexed are whole.
        assert!(index.memories().all(|m| m.content == body));
    }

    #[test]
    fn a_refresh_of_the_changed_files_reads_as_a_new_scan() {
        let dir = tempfile::tempdir().unwrap();
        let memories = dir.path().join("memories");
        fs::create_dir_all(&memories).unwrap();
        let file = |id: u64, body: &str| {
            format!("---\ncreated: '2026-11-20T10:00:00+00:00'\nid: {id}\ntags:\n- t{id}\n---\n\n{body}\n")
        };
        for id in 1..=40 {
            fs::write(memories.join(format!("{id:03}-m.md")), file(id, &format!("memory {id}"))).unwrap();
        }
        let mut index = Index::scan(&memories, dir.path(), None).unwrap();
        // Changed, removed, added, broken, and names that are no memory files.
        fs::write(memories.join("002-m.md"), file(2, "memory two, edited by hand")).unwrap();
        fs::remove_file(memories.join("003-m.md")).unwrap();
        fs::remove_file(memories.join("040-m.md")).unwrap();
        fs::write(memories.join("041-m.md"), file(41, "a new one")).unwrap();
        fs::write(memories.join("005-m.md"), "---\nid: [unclosed\n---\nbody\n").unwrap();
        fs::write(memories.join(".005-m.md.swp"), "swap").unwrap();
        fs::write(memories.join("notes.txt"), "not a memory").unwrap();
        let listing = Listing::of(&memories).unwrap();
        let mut changed = index.changed(&listing);
        changed.sort();
        assert_eq!(changed, ["002-m.md", "003-m.md", "005-m.md", "040-m.md", "041-m.md"]);
        let names: Vec<String> = changed.iter().cloned().chain([".005-m.md.swp".into(), "notes.txt".into()]).collect();
        assert_eq!(index.refresh(&names, dir.path()), 5, "the other names are not memory files");
        assert_eq!(seen(&index), seen(&Index::scan(&memories, dir.path(), None).unwrap()));
        assert_eq!(index.named("002-m.md").unwrap().content, "memory two, edited by hand");
        assert!(index.named("003-m.md").is_none() && index.named("005-m.md").is_none());
        assert_eq!(index.named("041-m.md").unwrap().id, 41);
        assert!(index.changed(&Listing::of(&memories).unwrap()).is_empty(), "nothing changed since");
        // Many refreshes of one file: the arena is compacted, the answers stay the same.
        for round in 0..2500 {
            fs::write(memories.join("007-m.md"), file(7, &format!("round {round} {}", "x".repeat(1000)))).unwrap();
            index.refresh(&["007-m.md".to_string()], dir.path());
        }
        assert!(index.compacted_at > 0 && index.arena.len() < 2 << 20, "arena {} bytes", index.arena.len());
        assert_eq!(seen(&index), seen(&Index::scan(&memories, dir.path(), None).unwrap()));
    }
}
