//! Where kb's files live: the repository root, the global config folder, and the paths below them
//! (docs/formats.md, Where the files are). Resolved once per command and passed down; nothing else
//! reads the environment for paths.

use std::io;
use std::path::{Component, Path, PathBuf};

/// What kb says when no root was given or found (docs/behaviour.md, The root).
pub const NO_ROOT: &str = "no repository or .co-cli/ folder here or above";

/// The resolved file locations for one repository.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The repository root (`<root>`).
    pub root: PathBuf,
    /// The global config folder (`<config>`), if HOME or XDG_CONFIG_HOME is set.
    pub config: Option<PathBuf>,
}

impl Layout {
    /// Returns the folder an input at `path` must stay inside: the config folder for a file in it,
    /// else the root.
    pub fn boundary(&self, path: &Path) -> &Path {
        match &self.config {
            Some(config) if path.starts_with(config) => config,
            _ => &self.root,
        }
    }

    /// Resolves the root (docs/behaviour.md, The root): `--root`, else `$KB_ROOT`, else the nearest ancestor of `cwd`
    /// (itself included) with a `.co-cli/` folder or a `.git` entry, whichever comes first on the
    /// way up, as git finds its repository: a stray `.co-cli/` above a repository never wins over
    /// it. Else `cwd`. Relative paths are taken from `cwd`.
    pub fn resolve(root_flag: Option<&Path>, env: &dyn Fn(&str) -> Option<String>, cwd: &Path) -> Layout {
        Layout::locate(root_flag, env, cwd).0
    }

    /// Resolves the root as [`Layout::resolve`] does; also returns whether a root was found or
    /// given (false: no repository or `.co-cli/` folder here or above, and the root is `cwd`).
    pub fn locate(root_flag: Option<&Path>, env: &dyn Fn(&str) -> Option<String>, cwd: &Path) -> (Layout, bool) {
        let non_empty = |k: &str| env(k).filter(|v| !v.is_empty());
        let (root, found) = match root_flag.map(Path::to_path_buf).or_else(|| non_empty("KB_ROOT").map(PathBuf::from)) {
            Some(r) => (absolute(cwd, &r), true),
            None => match find_root(cwd) {
                Some(r) => (r, true),
                None => (cwd.to_path_buf(), false),
            },
        };
        let config = non_empty("XDG_CONFIG_HOME")
            .map(|x| absolute(cwd, Path::new(&x)).join("co-cli"))
            .or_else(|| non_empty("HOME").map(|h| PathBuf::from(h).join(".config").join("co-cli")));
        (Layout { root, config }, found)
    }

    /// `<root>/.co-cli`
    pub fn co_cli(&self) -> PathBuf {
        self.root.join(".co-cli")
    }
    /// `<root>/.co-cli/knowledge`
    pub fn knowledge(&self) -> PathBuf {
        self.co_cli().join("knowledge")
    }
    /// `<root>/.co-cli/knowledge/memories`
    pub fn memories(&self) -> PathBuf {
        self.knowledge().join("memories")
    }
    /// `<root>/.co-cli/knowledge/decisions`: team decisions.
    pub fn decisions(&self) -> PathBuf {
        self.knowledge().join("decisions")
    }
    /// `<root>/.co-cli/knowledge/inbox`: the proposals agents made, for a person to accept.
    pub fn inbox(&self) -> PathBuf {
        self.knowledge().join("inbox")
    }
    /// `<root>/.co-cli/knowledge/context.md`
    pub fn project_context(&self) -> PathBuf {
        self.knowledge().join("context.md")
    }
    /// `<config>/knowledge/context.md`
    pub fn global_context(&self) -> Option<PathBuf> {
        self.config.as_ref().map(|c| c.join("knowledge").join("context.md"))
    }
    /// `<root>/.co-cli/settings.json`
    pub fn project_settings(&self) -> PathBuf {
        self.co_cli().join("settings.json")
    }
    /// `<config>/settings.json`
    pub fn global_settings(&self) -> Option<PathBuf> {
        self.config.as_ref().map(|c| c.join("settings.json"))
    }
    /// `<root>/.co-cli/cache`: derived state only.
    pub fn cache(&self) -> PathBuf {
        self.co_cli().join("cache")
    }
    /// Returns `<root>/.co-cli/cache/NAME`, a cache file of derived state, when kb may keep one:
    /// when `.co-cli/` is a folder (kb never creates `.co-cli/` itself to keep a cache) and the
    /// cache folder stays inside the root. The memory index, the recall index and the heat tally
    /// all follow this one rule.
    pub fn cache_file(&self, name: &str) -> Option<PathBuf> {
        let cache = self.cache();
        (self.co_cli().is_dir() && check_inside(&self.root, &cache).is_ok()).then(|| cache.join(name))
    }
    /// Creates `<root>/.co-cli/cache/` if needed, with a `.gitignore` that ignores the folder
    /// itself, so derived state never shows in `git status` even without `kb init`.
    pub fn ensure_cache(&self) -> std::io::Result<PathBuf> {
        check_inside(&self.root, &self.cache())?;
        ensure_ignored_dir(&self.cache())
    }

    /// `<root>/.co-cli/state/journal`: the undo journal, local state.
    pub fn journal(&self) -> PathBuf {
        self.co_cli().join("state").join("journal")
    }

    /// `<root>/.co-cli/cache/lock`
    pub fn lock(&self) -> PathBuf {
        self.cache().join("lock")
    }

    /// The folders in the root where kb writes files, and so where a killed write can leave a
    /// temporary file, but the memories folder (each scan lists that one anyway, and the memory
    /// store sweeps it from that listing): the root (compile targets, `.gitignore`), `.co-cli/`
    /// and `knowledge/` (settings, context), `decisions/`, `sessions/`, `inbox/`, the cache, `state/`, and
    /// `.github/` (the JSONL file).
    pub fn temp_file_dirs(&self) -> Vec<PathBuf> {
        let (co_cli, knowledge) = (self.co_cli(), self.knowledge());
        vec![
            self.root.clone(),
            co_cli.join("state"),
            knowledge.join("decisions"),
            knowledge.join("sessions"),
            knowledge.join("inbox"),
            knowledge,
            self.cache(),
            co_cli,
            self.root.join(".github"),
        ]
    }

    /// Removes the stale temporary files (older than `fsio::STALE_TEMP_AGE`) that killed writes left
    /// in [`Layout::temp_file_dirs`]: one `read_dir` each. Call it under the repository lock. A
    /// folder that leads out of the root through a symlink is left alone. Returns how many were
    /// removed.
    pub fn sweep_temp_files(&self) -> usize {
        let mut removed = 0;
        for dir in self.temp_file_dirs() {
            let found = crate::fsio::temp_files_in(&dir);
            if !found.is_empty() && check_inside(&self.root, &dir).is_ok() {
                removed += crate::fsio::remove_stale_temp_files(&found).len();
            }
        }
        removed
    }

    /// `<root>/.github/copilot-memories.jsonl`
    pub fn copilot_memories(&self) -> PathBuf {
        self.root.join(".github").join("copilot-memories.jsonl")
    }
    /// `<root>/.github/instructions`: scoped instruction files, `**/*.instructions.md`.
    pub fn instructions(&self) -> PathBuf {
        self.root.join(".github").join("instructions")
    }
    /// `<root>/.co-cli/knowledge/session.md`: the one open session.
    pub fn session(&self) -> PathBuf {
        self.knowledge().join("session.md")
    }
    /// `<root>/.co-cli/knowledge/sessions`: the ended sessions.
    pub fn sessions(&self) -> PathBuf {
        self.knowledge().join("sessions")
    }
}

/// Returns `id` as a file name part: letters, digits, `-`, `_` and `.` kept, anything else `_`,
/// at most 100 characters; a name of dots only becomes `_`.
pub fn file_safe(id: &str) -> String {
    let s: String =
        id.chars().take(100).map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    if s.is_empty() || s.chars().all(|c| c == '.') { "_".into() } else { s }
}

/// Fails unless `path`, once every symlink in its existing part is resolved, lies inside `root`:
/// kb never follows a link out of the repository when it writes (docs/safety.md, Writes).
pub fn check_inside(root: &Path, path: &Path) -> std::io::Result<()> {
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let real = real_path(path)?;
    if real.starts_with(&real_root) {
        return Ok(());
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        format!("refusing to write {}: a symlink leads outside the repository, to {}", path.display(), real.display()),
    ))
}

/// Creates `dir` (and parents) when missing and makes sure it holds a `.gitignore`, written `*`
/// when kb adds it, so what kb keeps there never shows in `git status`, even in a clone where
/// `kb init` never ran (as pytest, ruff and mypy do for their caches). A folder without
/// its `.gitignore` (made by hand, or a kill between the two steps) gets one; an existing one is
/// left as it is. Costs one `stat` when all is in place.
///
/// This follows symlinks: callers check the folder with [`check_inside`] first.
pub fn ensure_ignored_dir(dir: &Path) -> std::io::Result<PathBuf> {
    let ignore = dir.join(".gitignore");
    match std::fs::symlink_metadata(&ignore) {
        Ok(_) => return Ok(dir.to_path_buf()),
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        Err(_) => {}
    }
    std::fs::create_dir_all(dir)?;
    // Atomic, so a concurrent kb or git never sees an empty file; derived state, so no fsync.
    crate::fsio::write_atomic_with(&ignore, b"*\n", false)?;
    Ok(dir.to_path_buf())
}

/// Returns `p` made absolute against `cwd`, with `.` and `..` resolved lexically (symlinks are
/// kept as written), so paths in output are clean absolute paths.
fn absolute(cwd: &Path, p: &Path) -> PathBuf {
    resolve_dots(&if p.is_absolute() { p.to_path_buf() } else { cwd.join(p) })
}

/// Returns `p` with `.` and `..` resolved lexically (without touching the file system).
pub fn resolve_dots(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                if !out.pop() {
                    out.push(c);
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Returns `p` with every symlink followed: the deepest existing ancestor canonicalized, the
/// rest appended. A symlink that leads nowhere is an error.
pub fn real_path(p: &Path) -> io::Result<PathBuf> {
    let mut rest = Vec::new();
    let mut cur = p.to_path_buf();
    loop {
        match std::fs::symlink_metadata(&cur) {
            Ok(_) => {
                let mut real = std::fs::canonicalize(&cur).map_err(|e| {
                    io::Error::new(e.kind(), format!("{} is a symlink that leads nowhere ({e})", cur.display()))
                })?;
                for c in rest.iter().rev() {
                    real.push(c);
                }
                return Ok(real);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let Some(name) = cur.file_name().map(|n| n.to_os_string()) else { return Err(e) };
                rest.push(name);
                if !cur.pop() {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Returns the nearest ancestor of `start` (itself included) holding a `.co-cli/` folder or a
/// `.git` entry (a folder, or a file in a worktree or submodule).
fn find_root(start: &Path) -> Option<PathBuf> {
    start.ancestors().find(|d| d.join(".co-cli").is_dir() || d.join(".git").exists()).map(Path::to_path_buf)
}

/// Returns `dir/name`, or `dir/<stem>-N.md` for the first N ≥ 2 that is free, so that a new file
/// never replaces a hand-made one that already has its name.
pub fn free_path(dir: &Path, name: &str) -> PathBuf {
    let first = dir.join(name);
    if std::fs::symlink_metadata(&first).is_err() {
        return first;
    }
    let stem = name.strip_suffix(".md").unwrap_or(name);
    (2..).map(|n| dir.join(format!("{stem}-{n}.md"))).find(|p| std::fs::symlink_metadata(p).is_err()).unwrap_or(first)
}

/// Reads a variable of the process environment; an empty value is unset, for every caller.
pub fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn root_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let sub = repo.join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir(repo.join(".git")).unwrap();
        let none = env_of(&[]);
        assert_eq!(Layout::resolve(None, &none, &sub).root, repo);
        std::fs::create_dir(repo.join("a/.co-cli")).unwrap();
        assert_eq!(Layout::resolve(None, &none, &sub).root, repo.join("a"));
        // The nearest marker wins: a stray .co-cli/ above a repository does not.
        std::fs::create_dir(dir.path().join(".co-cli")).unwrap();
        assert_eq!(Layout::resolve(None, &none, &repo).root, repo);
        assert!(Layout::locate(None, &none, &repo).1);
        let env = env_of(&[("KB_ROOT", "/x")]);
        assert_eq!(Layout::resolve(None, &env, &sub).root, PathBuf::from("/x"));
        assert_eq!(Layout::resolve(Some(Path::new("rel")), &env, &sub).root, sub.join("rel"));
        let empty = env_of(&[("KB_ROOT", "")]);
        assert_eq!(Layout::resolve(None, &empty, &sub).root, repo.join("a"));
    }

    #[test]
    fn config_folder() {
        let cwd = Path::new("/w");
        let l = Layout::resolve(None, &env_of(&[("HOME", "/h")]), cwd);
        assert_eq!(l.config, Some(PathBuf::from("/h/.config/co-cli")));
        let l = Layout::resolve(None, &env_of(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "/x")]), cwd);
        assert_eq!(l.config, Some(PathBuf::from("/x/co-cli")));
        assert_eq!(l.global_context(), Some(PathBuf::from("/x/co-cli/knowledge/context.md")));
    }
}
