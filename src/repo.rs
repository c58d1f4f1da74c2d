//! One repository as every operation sees it: where its files are (`Layout`), its settings and
//! the clock. This module owns the safety rules every write shares (docs/safety.md): the one repository
//! lock and the one guard that keeps writes inside the root, and the parsing of ids as people
//! type them.

use crate::error::{KbError, io_at};
use crate::fsio;
use crate::paths::{self, Layout};
use crate::settings::{Environment, Settings, SettingsError};
use chrono::{DateTime, Utc};
use std::path::Path;

/// A repository with its settings, at one moment.
#[derive(Debug, Clone)]
pub struct Repo {
    pub layout: Layout,
    pub settings: Settings,
    /// The clock: now, or `KB_NOW` when tests pin it.
    pub now: DateTime<Utc>,
    /// What the process environment asks of kb beyond the settings, read once.
    pub env: Environment,
}

impl Repo {
    /// Returns who makes this command's changes, as `created_by`/`updated_by` name them
    /// (`provenance::author`).
    pub fn author(&self) -> Option<String> {
        crate::provenance::author(&self.env, &self.layout.root)
    }

    /// Opens the repository at `layout`, loading its settings from the files and the process
    /// environment; an invalid value is an error naming where it came from. `env` is what the
    /// caller read of the environment once, at start.
    pub fn open(layout: Layout, now: DateTime<Utc>, env: Environment) -> Result<Repo, SettingsError> {
        let (repo, mut errors) = Repo::open_lenient(layout, now, env);
        if errors.is_empty() { Ok(repo) } else { Err(errors.swap_remove(0)) }
    }

    /// Opens the repository as [`Repo::open`] does, but a value or file kb will not take is
    /// skipped (the layer below keeps its value) and returned, for a command that reports it
    /// instead of failing (`kb diff`).
    pub fn open_lenient(layout: Layout, now: DateTime<Utc>, env: Environment) -> (Repo, Vec<SettingsError>) {
        let (settings, errors) = Settings::load_all(&layout, &crate::settings::env);
        (Repo { layout, settings, now, env }, errors)
    }

    /// Takes the repository's write lock (see [`lock`]).
    pub fn lock(&self) -> Result<fsio::Lock, KbError> {
        lock(&self.layout)
    }

    /// With `KB_DEBUG_STATS` set, prints `line` on stderr: what a scan or a recall did, for the
    /// benchmarks. A debug line: a closed stderr must not fail (or panic) the command.
    pub fn debug_line(&self, line: impl FnOnce() -> String) {
        if self.env.debug_stats {
            let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("{}\n", line()).as_bytes());
        }
    }

    /// Fails unless writing `path` stays inside the root (see [`guard`]).
    pub fn guard(&self, path: &Path) -> Result<(), KbError> {
        guard(&self.layout, path)
    }
}

/// Takes the repository's exclusive write lock, `.co-cli/cache/lock`, waiting up to
/// `fsio::LOCK_TIMEOUT`. Every command that writes holds it for its whole read-modify-write, so
/// concurrent kb processes lose no update. The cache folder is created when missing, with a
/// `.gitignore` of `*` so it never shows in `git status`, and never through a symlink that leads
/// out of the root.
pub fn lock(layout: &Layout) -> Result<fsio::Lock, KbError> {
    let path = layout.lock();
    let cache = layout.cache();
    guard(layout, &cache)?;
    // Opening a FIFO for writing blocks until a reader comes: never open anything but a file.
    if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
        let source = std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file");
        return Err(KbError::Lock { path, source });
    }
    paths::ensure_ignored_dir(&cache).map_err(io_at(&cache))?;
    let held = fsio::lock(&path, fsio::LOCK_TIMEOUT).map_err(|source| KbError::Lock { path, source })?;
    layout.sweep_temp_files();
    Ok(held)
}

/// Fails unless `path`, once every symlink in its existing part is resolved, lies inside the
/// root: kb never follows a link out of the repository when it writes.
pub fn guard(layout: &Layout, path: &Path) -> Result<(), KbError> {
    paths::check_inside(&layout.root, path).map_err(io_at(path))
}

/// Parses a memory id the way people type it (` 7 `, `+7`, `007`).
pub fn parse_id(raw: &str) -> Result<u64, KbError> {
    crate::kinds::number(raw, "memory")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_as_typed() {
        assert_eq!(parse_id(" 7 ").unwrap(), 7);
        assert_eq!(parse_id("+007").unwrap(), 7);
        assert!(parse_id("-1").is_err() && parse_id("mem-1").is_err() && parse_id("").is_err());
    }

    #[test]
    fn lock_creates_an_ignored_cache_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout { root: dir.path().to_path_buf(), config: None };
        let held = lock(&layout).unwrap();
        assert_eq!(std::fs::read_to_string(layout.cache().join(".gitignore")).unwrap(), "*\n");
        drop(held);
        let outside = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let layout = Layout { root: other.path().to_path_buf(), config: None };
        std::os::unix::fs::symlink(outside.path(), other.path().join(".co-cli")).unwrap();
        assert!(lock(&layout).is_err(), "a .co-cli symlink out of the root is refused");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "nothing was created outside");
    }
}
