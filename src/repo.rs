//! One repository as every operation sees it: where its files are (`Layout`), its settings and
//! the clock. This module owns the safety rules every write shares (SPEC §6): the one repository
//! lock and the one guard that keeps writes inside the root, and the parsing of ids as people
//! type them.

use crate::copilot::RecordStore;
use crate::error::{KbError, io_at};
use crate::fsio;
use crate::memories::store::Store;
use crate::paths::{self, Layout};
use crate::settings::{Settings, SettingsError};
use chrono::{DateTime, Utc};
use std::path::Path;

/// A repository with its settings, at one moment.
#[derive(Debug, Clone)]
pub struct Repo {
    pub layout: Layout,
    pub settings: Settings,
    /// The clock: now, or `KB_NOW` when tests pin it.
    pub now: DateTime<Utc>,
}

impl Repo {
    /// Opens the repository at `layout`, loading its settings from the files and the process
    /// environment; an invalid value is an error naming where it came from.
    pub fn open(layout: Layout, now: DateTime<Utc>) -> Result<Repo, SettingsError> {
        let settings = Settings::load(&layout, &env)?;
        Ok(Repo { layout, settings, now })
    }

    /// Returns the markdown memory store.
    pub fn memories(&self) -> Store<'_> {
        Store { repo: self }
    }

    /// Returns the Copilot record store.
    pub fn records(&self) -> RecordStore<'_> {
        RecordStore { repo: self }
    }

    /// Takes the repository's write lock (see [`lock`]).
    pub fn lock(&self) -> Result<fsio::Lock, KbError> {
        lock(&self.layout)
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
/// root: kb never follows a link out of the repository when it writes (SPEC §6).
pub fn guard(layout: &Layout, path: &Path) -> Result<(), KbError> {
    paths::check_inside(&layout.root, path).map_err(io_at(path))
}

/// Reads a knowledge file that people and other tools write (a context file, a settings file,
/// the JSONL file): `Ok(None)` when it does not exist. Only a regular file is opened: a FIFO, a
/// socket or a device would block kb or feed it endless bytes ("not a regular file"). And, as for
/// memory files, a file whose symlinks lead out of `within` (the root for the project's files, the
/// config folder for the global ones) is refused, so a committed symlink cannot leak a file such
/// as `~/.aws/credentials` into a compiled context.
pub fn read_input(path: &Path, within: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let Some(mut file) = open_input(path, within)? else { return Ok(None) };
    let mut bytes = Vec::with_capacity(file.metadata()?.len() as usize);
    file.read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// Opens a knowledge file as [`read_input`] reads it, for a caller that reads part of it.
pub fn open_input(path: &Path, within: &Path) -> std::io::Result<Option<std::fs::File>> {
    use std::io::{Error, ErrorKind};
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            // A dangling symlink is not a missing file.
            return match std::fs::symlink_metadata(path) {
                Ok(_) => Err(Error::new(ErrorKind::NotFound, "a symlink that leads nowhere")),
                Err(_) => Ok(None),
            };
        }
        Err(e) => return Err(e),
    };
    if !meta.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    let real = std::fs::canonicalize(path)?;
    let boundary = std::fs::canonicalize(within).unwrap_or_else(|_| within.to_path_buf());
    if !real.starts_with(&boundary) {
        return Err(Error::new(
            ErrorKind::PermissionDenied,
            format!("a symlink leads outside {}, to {}: not read", within.display(), real.display()),
        ));
    }
    let file = std::fs::File::open(path)?;
    // The file may have been swapped for a FIFO since the check: look at what was opened.
    if !file.metadata()?.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    Ok(Some(file))
}

/// Returns the folder an input at `path` must stay inside: the config folder for a file in it,
/// else the root.
pub fn boundary<'a>(layout: &'a Layout, path: &Path) -> &'a Path {
    match &layout.config {
        Some(config) if path.starts_with(config) => config,
        _ => &layout.root,
    }
}

/// Reads an environment variable (settings treat an empty value as unset).
pub fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Parses a memory id the way people type it (` 7 `, `+7`, `007`).
pub fn parse_id(raw: &str) -> Result<u64, KbError> {
    let t = raw.trim();
    t.strip_prefix('+')
        .unwrap_or(t)
        .parse::<u64>()
        .map_err(|_| KbError::Invalid(format!("invalid memory id '{raw}': expected a non-negative integer")))
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
