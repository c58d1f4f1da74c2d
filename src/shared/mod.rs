//! Shared sources: other kb repositories whose knowledge this one reads (docs/shared.md). Where
//! each one's files are on this machine, the commit its copy holds and how old the copy is, all
//! read from files: nothing here runs git or touches the network (`sync` does, only when asked).
//!
//! A source whose `url` is a plain path is read in place; any other is read from its local copy,
//! `<cache home>/kb/shared/<name>-<first 12 hex of sha256(url)>/`, shared by every repository of
//! the user that names the same URL.

pub mod sync;

use crate::paths::Layout;
use crate::settings::{SharedSpec, SharedUrl};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The file in a copy's git folder whose mtime is the time of its last successful sync.
pub const SYNCED_STAMP: &str = "kb-synced";

/// One shared source as this machine has it.
#[derive(Debug, Clone)]
pub struct Source {
    pub spec: SharedSpec,
    /// The root of the kb repository to read: the plain path, or the local copy (which may not
    /// exist yet).
    pub root: PathBuf,
    /// Whether `root` is the plain path of the setting, read in place (never synced).
    pub in_place: bool,
}

/// The sources of the setting `shared`, located. A source whose URL kb refuses is left out (the
/// settings already refused it); one whose copy cannot be placed (no cache home) has a root that
/// does not exist, so it reads as missing.
pub fn sources(layout: &Layout, specs: &[SharedSpec], cache_home: Option<&Path>) -> Vec<Source> {
    specs
        .iter()
        .filter_map(|spec| {
            let (root, in_place) = match SharedSpec::check_url(&spec.url).ok()? {
                SharedUrl::Local => (crate::paths::resolve_dots(&layout.root.join(expand_home(&spec.url))), true),
                SharedUrl::Remote => (copy_dir(cache_home, spec), false),
            };
            Some(Source { spec: spec.clone(), root, in_place })
        })
        .collect()
}

/// `~/x` as the shell reads it, for a plain path in the setting.
fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

/// `<cache home>/kb/shared/<name>-<12 hex of sha256(url)>`; without a cache home, a path that
/// does not exist.
pub fn copy_dir(cache_home: Option<&Path>, spec: &SharedSpec) -> PathBuf {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(spec.url.as_bytes());
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    let base = cache_home.map_or_else(|| PathBuf::from("/nonexistent-kb-cache"), Path::to_path_buf);
    base.join("kb").join("shared").join(format!("{}-{hex}", spec.name))
}

impl Source {
    /// The layout of the source's repository: its own root, no global config (a person's global
    /// context is theirs, not the source's).
    pub fn layout(&self) -> Layout {
        Layout { root: self.root.clone(), config: None }
    }

    /// Whether the source's files are here (the copy exists, or the path does).
    pub fn present(&self) -> bool {
        self.root.is_dir()
    }

    /// What to say of a source whose files are not here: a copy to sync, or a folder read in
    /// place that does not exist (which no sync brings).
    pub fn missing(&self) -> String {
        let name = &self.spec.name;
        match self.in_place {
            true => format!(
                "shared source {name} is read in place from {}, which is not a folder: fix its url (kb shared remove {name}, then kb shared add)",
                self.root.display()
            ),
            false => format!("shared source {name} has no local copy: kb shared sync {name}"),
        }
    }

    /// The git folder of the source's repository, when it has one.
    pub fn git_dir(&self) -> Option<PathBuf> {
        git_dir_of(&self.root)
    }

    /// The commit the source's checkout is at, read from its git files (`HEAD`, the loose ref,
    /// `packed-refs`), never by running git.
    pub fn commit(&self) -> Option<String> {
        head_commit(&self.git_dir()?)
    }

    /// When the copy was last synced (a source used in place: when its checkout last moved).
    pub fn synced_at(&self) -> Option<SystemTime> {
        let git = self.git_dir()?;
        let stamp = if self.in_place { git.join("HEAD") } else { git.join(SYNCED_STAMP) };
        std::fs::metadata(stamp).and_then(|m| m.modified()).ok()
    }

    /// How old the copy is at `now`; `None` when it was never synced (or is used in place).
    pub fn age(&self, now: SystemTime) -> Option<Duration> {
        if self.in_place {
            return None;
        }
        self.synced_at().map(|t| now.duration_since(t).unwrap_or_default())
    }
}

/// The warnings of the read commands about the sources' copies (by `stat` alone, no git): one
/// per copy older than `ttl_hours` (`shared source org is 3 days old: kb shared sync`) or
/// missing; a source read in place whose folder is not there gets one too.
pub fn warnings(sources: &[Source], ttl_hours: u64, now: SystemTime) -> Vec<String> {
    let ttl = Duration::from_secs(ttl_hours.saturating_mul(3600));
    let mut out = Vec::new();
    for s in sources {
        let name = &s.spec.name;
        if !s.present() {
            out.push(s.missing());
            continue;
        }
        if s.in_place {
            continue;
        }
        match s.age(now) {
            None => out.push(format!("shared source {name} was never synced: kb shared sync")),
            Some(age) if age > ttl => {
                out.push(format!("shared source {name} is {} old: kb shared sync", age_text(age)))
            }
            Some(_) => {}
        }
    }
    out
}

/// The names of the sources a background sync should bring up to date: every copy that is
/// missing or older than `ttl_hours` (never one read in place).
pub fn due(sources: &[Source], ttl_hours: u64, now: SystemTime) -> Vec<String> {
    let ttl = Duration::from_secs(ttl_hours.saturating_mul(3600));
    sources
        .iter()
        .filter(|s| !s.in_place && s.age(now).is_none_or(|age| age > ttl))
        .map(|s| s.spec.name.clone())
        .collect()
}

/// An age as people say it: `40 minutes`, `5 hours`, `3 days`.
pub fn age_text(age: Duration) -> String {
    let (minutes, hours, days) = (age.as_secs() / 60, age.as_secs() / 3600, age.as_secs() / 86_400);
    let (n, unit) = if days >= 2 {
        (days, "day")
    } else if hours >= 1 {
        (hours, "hour")
    } else {
        (minutes, "minute")
    };
    if n == 1 { format!("1 {unit}") } else { format!("{n} {unit}s") }
}

/// The git folder of the repository at `root`: `root/.git` as a folder, or the folder a `.git`
/// file (`gitdir: PATH`, a worktree or submodule) names.
pub fn git_dir_of(root: &Path) -> Option<PathBuf> {
    let dot = root.join(".git");
    let meta = std::fs::symlink_metadata(&dot).ok()?;
    if meta.is_dir() {
        return Some(dot);
    }
    let text = read_small(&dot)?;
    let target = text.trim().strip_prefix("gitdir:")?.trim();
    let path = root.join(target);
    path.is_dir().then_some(path)
}

/// The commit `HEAD` of the git folder `git` names: a detached hash, or the hash its branch
/// holds (a loose ref, else `packed-refs`; a linked worktree's refs are in its common folder).
pub fn head_commit(git: &Path) -> Option<String> {
    let head = read_small(&git.join("HEAD"))?;
    let head = head.trim();
    let Some(name) = head.strip_prefix("ref:").map(str::trim) else {
        return is_hash(head).then(|| head.to_string());
    };
    if name.contains("..") || !name.starts_with("refs/") {
        return None;
    }
    let common = read_small(&git.join("commondir")).map_or_else(|| git.to_path_buf(), |c| git.join(c.trim()));
    for dir in [git, common.as_path()] {
        if let Some(hash) = read_small(&dir.join(name)).map(|t| t.trim().to_string()).filter(|h| is_hash(h)) {
            return Some(hash);
        }
    }
    for dir in [git, common.as_path()] {
        let Some(packed) = read_small(&dir.join("packed-refs")) else { continue };
        for line in packed.lines() {
            if let Some((hash, refname)) = line.split_once(' ')
                && refname.trim() == name
                && is_hash(hash)
            {
                return Some(hash.to_string());
            }
        }
    }
    None
}

/// A full SHA-1 or SHA-256 object name.
fn is_hash(s: &str) -> bool {
    matches!(s.len(), 40 | 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A regular file's text, at most 16 MiB (a `packed-refs` of a large repository), else `None`.
fn read_small(path: &Path) -> Option<String> {
    use std::io::Read;
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 16 << 20 {
        return None;
    }
    let mut text = String::new();
    std::fs::File::open(path).ok()?.take(16 << 20).read_to_string(&mut text).ok()?;
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, url: &str) -> SharedSpec {
        SharedSpec { name: name.into(), url: url.into(), reference: None }
    }

    #[test]
    fn urls_kb_allows_and_refuses() {
        use SharedUrl::*;
        for (url, kind) in [
            ("https://github.com/acme/knowledge.git", Remote),
            ("ssh://git@host/acme/k.git", Remote),
            ("git://host/k", Remote),
            ("file:///srv/k.git", Remote),
            ("git@github.com:acme/k.git", Remote),
            ("../org-knowledge", Local),
            ("/srv/org", Local),
            ("org", Local),
        ] {
            assert_eq!(SharedSpec::check_url(url), Ok(kind), "{url}");
        }
        for url in ["ext::sh -c touch% /tmp/x", "fd::3", "http://host/k", "ftp://host/k", "-uhack", "", "a\nb"] {
            assert!(SharedSpec::check_url(url).is_err(), "{url:?} must be refused");
        }
        assert!(SharedSpec::check_name("org-2").is_ok());
        for bad in ["Org", "md", "all", "", "a_b", &"x".repeat(33)] {
            assert!(SharedSpec::check_name(bad).is_err(), "{bad:?}");
        }
        for bad in ["-x", "a..b", "a b", "x:y"] {
            assert!(SharedSpec::check_ref(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_copy_lives_under_the_cache_home_by_name_and_url_hash() {
        let dir = copy_dir(Some(Path::new("/c")), &spec("org", "https://x/y.git"));
        let name = dir.file_name().unwrap().to_str().unwrap();
        assert!(dir.starts_with("/c/kb/shared"), "{dir:?}");
        assert!(name.starts_with("org-") && name.len() == 4 + 12, "{name}");
        assert_ne!(dir, copy_dir(Some(Path::new("/c")), &spec("org", "https://x/z.git")));
        let layout = Layout { root: PathBuf::from("/p/repo"), config: None };
        let found = sources(&layout, &[spec("org", "../org"), spec("team", "https://x/y.git")], Some(Path::new("/c")));
        assert_eq!(found[0].root, PathBuf::from("/p/org"));
        assert!(found[0].in_place && !found[1].in_place);
    }

    #[test]
    fn an_old_or_missing_copy_warns_and_is_due_a_place_one_never() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout { root: dir.path().join("repo"), config: None };
        std::fs::create_dir_all(dir.path().join("team")).unwrap();
        let specs = [spec("org", "https://x/y.git"), spec("fresh", "https://x/f.git"), spec("team", "../team")];
        let found = sources(&layout, &specs, Some(&dir.path().join("cache")));
        let git = found[1].root.join(".git");
        std::fs::create_dir_all(&git).unwrap();
        std::fs::write(git.join(SYNCED_STAMP), "").unwrap();
        let now = SystemTime::now();
        assert_eq!(warnings(&found, 24, now), ["shared source org has no local copy: kb shared sync org"]);
        assert_eq!(due(&found, 24, now), ["org"]);
        let later = now + Duration::from_secs(3 * 86_400 + 5);
        assert_eq!(warnings(&found, 24, later)[1], "shared source fresh is 3 days old: kb shared sync");
        assert_eq!(due(&found, 24, later), ["org", "fresh"]);
        assert_eq!(warnings(&found, 100, later).len(), 1);
        // A folder read in place that is gone is said so, and no sync is due for it.
        std::fs::remove_dir(dir.path().join("team")).unwrap();
        let gone = warnings(&found, 24, now);
        assert!(
            gone[1].starts_with("shared source team is read in place from ") && gone[1].contains("not a folder"),
            "{gone:?}"
        );
        assert_eq!(due(&found, 24, now), ["org"]);
        assert_eq!(age_text(Duration::from_secs(3600 * 30)), "30 hours");
        assert_eq!(age_text(Duration::from_secs(60)), "1 minute");
    }

    #[test]
    fn the_commit_is_read_from_git_files() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        std::fs::create_dir_all(git.join("refs/heads")).unwrap();
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(git.join("packed-refs"), format!("# pack-refs with: peeled\n{b} refs/heads/main\n")).unwrap();
        assert_eq!(head_commit(&git), Some(b.clone()), "from packed-refs");
        std::fs::write(git.join("refs/heads/main"), format!("{a}\n")).unwrap();
        assert_eq!(head_commit(&git), Some(a.clone()), "a loose ref wins");
        std::fs::write(git.join("HEAD"), format!("{b}\n")).unwrap();
        assert_eq!(head_commit(&git), Some(b), "detached");
        std::fs::write(git.join("HEAD"), "ref: ../../etc/passwd\n").unwrap();
        assert_eq!(head_commit(&git), None);
        assert_eq!(git_dir_of(dir.path()), Some(git));
    }
}
