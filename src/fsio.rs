//! Safe file IO: atomic replacement of a file and the repository's write lock.
//!
//! A write goes to a temporary file in the target's folder, is synced, takes the old file's
//! permissions, and is renamed over the target; then the folder is synced. A crash leaves the old
//! or the new file, never a torn one. Every command that writes holds an exclusive `flock` on
//! `.co-cli/cache/lock` for its whole read-modify-write (a sidecar file: the lock must not live on
//! an inode that a rename replaces).
//!
//! A write killed before its rename leaves its temporary file (`.kb-tmp-XXXXXX`), which may hold
//! part of the new text. Readers never take one for a memory (memory files end in `.md` and never
//! start with a dot); the next write removes those older than [`STALE_TEMP_AGE`], and `kb check`
//! reports them.

use crate::error::{KbError, io_at};
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// The name of every temporary file of an atomic write starts with this.
pub const TEMP_PREFIX: &str = ".kb-tmp-";

/// A temporary file not modified for this long is left over from a killed write: a live write
/// renames its file milliseconds after its last byte.
pub const STALE_TEMP_AGE: Duration = Duration::from_secs(60);

/// Replaces `path` with `data` atomically and durably.
///
/// Refuses to write through a symlink: the link would be replaced by a regular file.
pub fn write_atomic(path: &Path, data: &[u8]) -> io::Result<()> {
    write_atomic_with(path, data, true)
}

/// Replaces `path` with `data` atomically; `durable` also fsyncs the data and the folder.
/// Derived state (caches) skips the fsyncs: losing it only costs time.
pub fn write_atomic_with(path: &Path, data: &[u8], durable: bool) -> io::Result<()> {
    write_atomic_streamed(path, durable, |w| w.write_all(data))
}

/// Replaces `path` atomically and durably with what `fill` writes, without first building the
/// new content in memory (a rewrite of a large file streams from the old bytes).
pub fn write_atomic_streamed(
    path: &Path,
    durable: bool,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    write_staged(path, durable, fill, || Ok(()))
}

/// Replaces `path` atomically and durably with what `fill` writes, calling `before_rename` once
/// the new bytes are synced in the temporary file and before they replace the file (the undo
/// journal records the change there). An error from it leaves the file as it was.
pub fn write_atomic_streamed_then(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    before_rename: impl FnOnce() -> io::Result<()>,
) -> io::Result<()> {
    write_staged(path, true, fill, before_rename)
}

/// Creates `path` holding `data`, atomically and durably, and never over a file that exists, not
/// even one created meanwhile (an `AlreadyExists` error, as for a symlink there): a crash or a
/// failed write leaves no file at `path`, never an empty or a torn one.
pub fn create_atomic(path: &Path, data: &[u8]) -> io::Result<()> {
    let dir = parent_dir(path);
    let mut tmp = temp_file_in(dir)?;
    tmp.as_file_mut().write_all(data)?;
    tmp.as_file().sync_all()?;
    tmp.persist_noclobber(path).map_err(|e| e.error)?;
    File::open(dir)?.sync_all()
}

/// Returns a new temporary file in `dir` for an atomic write, created 0666 less the umask, as
/// `File::create` does (tempfile's default is 0600).
fn temp_file_in(dir: &Path) -> io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new().prefix(TEMP_PREFIX).permissions(fs::Permissions::from_mode(0o666)).tempfile_in(dir)
}

fn write_staged(
    path: &Path,
    durable: bool,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    before_rename: impl FnOnce() -> io::Result<()>,
) -> io::Result<()> {
    let dir = parent_dir(path);
    let old_mode = match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(io::Error::other(format!("refusing to replace symlink {}", path.display())));
        }
        Ok(m) => Some(m.permissions().mode()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let mut tmp = temp_file_in(dir)?;
    {
        let mut w = io::BufWriter::with_capacity(1 << 16, tmp.as_file_mut());
        fill(&mut w)?;
        w.flush()?;
    }
    if durable {
        tmp.as_file().sync_all()?;
    }
    // A replaced file keeps its mode.
    if let Some(mode) = old_mode {
        tmp.as_file().set_permissions(fs::Permissions::from_mode(mode))?;
    }
    before_rename()?;
    tmp.persist(path).map_err(|e| e.error)?;
    if durable {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Renames `from` to `to` (in the same folder) durably: the folder is synced after the rename.
/// The caller holds the lock and made sure `to` does not exist.
pub fn rename_durable(from: &Path, to: &Path) -> io::Result<()> {
    fs::rename(from, to)?;
    File::open(parent_dir(to))?.sync_all()
}

/// Returns whether a folder entry named `name` is one of kb's temporary files.
pub fn is_temp_name(name: &std::ffi::OsStr) -> bool {
    name.as_bytes().starts_with(TEMP_PREFIX.as_bytes())
}

/// Returns kb's temporary files directly in `dir` (regular files named `.kb-tmp-*`), sorted;
/// none when `dir` cannot be read. One `read_dir`, no `stat` per entry on common filesystems.
pub fn temp_files_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| is_temp_name(&e.file_name()) && e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Removes each of `paths` that is still a regular file last modified more than
/// [`STALE_TEMP_AGE`] ago. Call it under the repository lock (no locked write is then under way);
/// an unlocked write (a cache) renames within milliseconds, so its file is never that old. A file
/// that cannot be removed is left for `kb check` to report. Returns the paths removed.
pub fn remove_stale_temp_files(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths.iter().filter(|p| is_stale_temp_file(p) && fs::remove_file(p).is_ok()).cloned().collect()
}

/// Returns whether `path` is a regular file last modified more than [`STALE_TEMP_AGE`] ago: a
/// temporary file a killed write left, not one a write under way is filling.
pub fn is_stale_temp_file(path: &Path) -> bool {
    let Some(cutoff) = SystemTime::now().checked_sub(STALE_TEMP_AGE) else { return false };
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file() && m.modified().is_ok_and(|t| t < cutoff))
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// An exclusive lock held until dropped.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

/// How long a writer waits for another kb process before giving up.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(30);

/// Takes the exclusive lock on `path`, creating the file and its folder, waiting up to `timeout`.
pub fn lock(path: &Path, timeout: Duration) -> io::Result<Lock> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let file = fs::OpenOptions::new().create(true).truncate(false).write(true).open(path)?;
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Lock { _file: file }),
            Err(fs::TryLockError::WouldBlock) if start.elapsed() < timeout => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(fs::TryLockError::WouldBlock) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("another kb process holds {} (waited {}s)", path.display(), timeout.as_secs()),
                ));
            }
            Err(fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// Reads a knowledge file that people and other tools write (a context file, a settings file,
/// the JSONL file): `Ok(None)` when it does not exist. Only a regular file is opened: a FIFO, a
/// socket or a device would block kb or feed it endless bytes ("not a regular file"). And, as for
/// memory files, a file whose symlinks lead out of `within` (the root for the project's files, the
/// config folder for the global ones) is refused, so a committed symlink cannot leak a file such
/// as `~/.aws/credentials` into a compiled context.
pub fn read_input(path: &Path, within: &Path) -> std::io::Result<Option<Vec<u8>>> {
    read_input_at_most(path, within, u64::MAX)
}

/// [`read_input`] of a file that may hold at most `max` bytes: a longer one is an error
/// (`InvalidData`), and no more than `max + 1` of its bytes are read even if it grows meanwhile.
pub fn read_input_at_most(path: &Path, within: &Path, max: u64) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::{Error, ErrorKind, Read};
    let Some(file) = open_input(path, within)? else { return Ok(None) };
    let len = file.metadata()?.len();
    let too_long = |len: u64| Error::new(ErrorKind::InvalidData, format!("{len} bytes, over the limit of {max}"));
    if len > max {
        return Err(too_long(len));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    match bytes.len() as u64 > max {
        true => Err(too_long(bytes.len() as u64)),
        false => Ok(Some(bytes)),
    }
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

/// Reads a knowledge file kb was asked to change, as text (a file that is not text is a bad
/// file, named with the line at fault).
pub fn read_text(path: &Path) -> Result<String, KbError> {
    let bytes = std::fs::read(path).map_err(io_at(path))?;
    crate::format::text::decode(&bytes).map(str::to_string).map_err(|d| KbError::BadFile(d.in_file(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_keeps_mode_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.md");
        write_atomic(&p, b"one").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o640);
        let leftovers = fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 1);
    }

    #[test]
    fn new_files_get_the_umask_default() {
        let dir = tempfile::tempdir().unwrap();
        let (ours, plain) = (dir.path().join("ours"), dir.path().join("plain"));
        write_atomic(&ours, b"x").unwrap();
        File::create(&plain).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode();
        assert_eq!(mode(&ours), mode(&plain));
        write_atomic_with(&ours, b"y", false).unwrap();
        assert_eq!(mode(&ours), mode(&plain));
    }

    #[test]
    fn refuses_symlink_targets() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        fs::write(&real, "x").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(write_atomic(&link, b"y").is_err());
        assert_eq!(fs::read(&real).unwrap(), b"x");
    }

    #[test]
    fn create_atomic_writes_a_new_file_and_never_replaces_one() {
        let dir = tempfile::tempdir().unwrap();
        let (p, plain) = (dir.path().join("context.md"), dir.path().join("plain"));
        create_atomic(&p, b"template").unwrap();
        File::create(&plain).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode();
        assert_eq!((fs::read(&p).unwrap(), mode(&p)), (b"template".to_vec(), mode(&plain)));
        // An existing file (as one made between init's check and its write) or a dangling
        // symlink stays as it was, and no temporary file is left.
        let e = create_atomic(&p, b"other").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&p).unwrap(), b"template");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).unwrap();
        assert_eq!(create_atomic(&link, b"x").unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert!(!dir.path().join("nowhere").exists());
        assert!(temp_files_in(dir.path()).is_empty());
    }

    #[test]
    fn stale_temp_files_are_found_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let at = |n: &str| dir.path().join(n);
        let age = |n: &str, secs: u64| {
            let when = SystemTime::now() - Duration::from_secs(secs);
            File::options().write(true).open(at(n)).unwrap().set_modified(when).unwrap();
        };
        for n in [".kb-tmp-old", ".kb-tmp-new", ".kb-tmpX", "a.md"] {
            fs::write(at(n), "x").unwrap();
            age(n, 120);
        }
        age(".kb-tmp-new", 0);
        fs::create_dir(at(".kb-tmp-dir")).unwrap();
        std::os::unix::fs::symlink(at("a.md"), at(".kb-tmp-link")).unwrap();
        let found = temp_files_in(dir.path());
        assert_eq!(found, [at(".kb-tmp-new"), at(".kb-tmp-old")]);
        assert_eq!(remove_stale_temp_files(&found), [at(".kb-tmp-old")]);
        assert_eq!(temp_files_in(dir.path()), [at(".kb-tmp-new")]);
        assert!(at("a.md").exists() && at(".kb-tmpX").exists() && at(".kb-tmp-dir").is_dir());
        assert!(temp_files_in(&at("missing")).is_empty());
        // A write's own temporary file is named with the prefix and is gone after the rename.
        write_atomic(&at("b"), b"y").unwrap();
        assert_eq!(temp_files_in(dir.path()), [at(".kb-tmp-new")]);
    }

    #[test]
    fn lock_excludes_and_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cache/lock");
        let held = lock(&p, LOCK_TIMEOUT).unwrap();
        let err = lock(&p, Duration::from_millis(20)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        drop(held);
        lock(&p, Duration::from_millis(20)).unwrap();
    }

    #[test]
    fn lock_serialises_threads() {
        let dir = tempfile::tempdir().unwrap();
        let lock_path = dir.path().join("lock");
        let counter = dir.path().join("n");
        fs::write(&counter, "0").unwrap();
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (lock_path, counter) = (lock_path.clone(), counter.clone());
                std::thread::spawn(move || {
                    for _ in 0..25 {
                        let _g = lock(&lock_path, LOCK_TIMEOUT).unwrap();
                        let n: u32 = fs::read_to_string(&counter).unwrap().parse().unwrap();
                        write_atomic_with(&counter, (n + 1).to_string().as_bytes(), false).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(fs::read_to_string(&counter).unwrap(), "200");
    }
}
