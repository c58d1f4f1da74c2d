//! kb's own files at a git revision, read through git without a checkout (docs/diff.md): a
//! revision resolved to its commit, and the files under a few paths of that commit copied into
//! a private folder, with one `git ls-tree` and one `git cat-file --batch` whatever their number.
//!
//! git runs with nothing the repository configures (no hooks, no pager, no credential helper, no
//! prompt, no lazy fetch, no transport), never looks above the root for another repository, and
//! is stopped at a time limit. This module does not know what the files mean: `ops::diff` opens
//! the folder with the normal read model.

use rustc_hash::FxHashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long all the git runs of one revision may take together.
pub const TIME_LIMIT: Duration = Duration::from_secs(60);

/// The largest file copied out of a revision; a larger one is skipped (and reported).
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Why a revision could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RevisionError {
    #[error("{root} is not in a git repository: kb diff compares git revisions")]
    NotGit { root: String },
    #[error("unknown revision {rev:?}: no commit has that name ({why})")]
    Unknown { rev: String, why: String },
    #[error("revision {rev:?}: a revision cannot start with '-' or hold a control character")]
    BadName { rev: String },
    #[error("git: {0}")]
    Git(String),
}

/// What [`Git::materialize`] did with one tree: how many files it wrote, how many it gave to be
/// kept in memory instead, and the ones it skipped.
#[derive(Debug, Default)]
pub struct Materialized {
    pub written: usize,
    /// The files under the `held` prefixes, given with their bytes.
    pub held: usize,
    pub skipped: Vec<Skipped>,
}

/// A file of a revision that was not copied (too large, not a regular file), with why.
#[derive(Debug, Clone)]
pub struct Skipped {
    /// Root-relative, `/`-separated.
    pub path: String,
    pub why: String,
}

/// The config of every git run: nothing the repository configures is run.
const GIT_CONFIG: [&str; 8] = [
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.pager=cat",
    "-c",
    "credential.helper=",
    "-c",
    "core.quotePath=false",
];

/// The environment of every git run: no prompt, no lock taken, no lazy fetch in a partial clone,
/// no transport at all.
const GIT_ENV: [(&str, &str); 4] =
    [("GIT_TERMINAL_PROMPT", "0"), ("GIT_OPTIONAL_LOCKS", "0"), ("GIT_NO_LAZY_FETCH", "1"), ("GIT_ALLOW_PROTOCOL", "")];

/// The repository at a root, for reading revisions.
pub struct Git {
    root: PathBuf,
    dir: PathBuf,
    /// Where the kb root sits in the repository's tree (`svc/` for a root in a subfolder of a
    /// monorepo; empty at the top), `/`-separated.
    prefix: String,
}

impl Git {
    /// Returns the repository that holds `root` (its `.git`, a folder or a worktree's file, in
    /// `root` or the nearest folder above it that has one); an error outside git.
    pub fn at(root: &Path) -> Result<Git, RevisionError> {
        let not_git = || RevisionError::NotGit { root: root.display().to_string() };
        let real = std::fs::canonicalize(root).map_err(|_| not_git())?;
        let mut parts: Vec<String> = Vec::new();
        let mut top = real.as_path();
        loop {
            // Every git folder has a HEAD: an empty `.git` (or a stray file) is not a repository.
            if let Some(dir) = crate::git::git_dir(top).filter(|d| d.join("HEAD").is_file()) {
                let prefix: String = parts.iter().rev().map(|p| format!("{p}/")).collect();
                return Ok(Git { root: top.to_path_buf(), dir, prefix });
            }
            let name = top.file_name().ok_or_else(not_git)?.to_str().ok_or_else(not_git)?;
            parts.push(name.to_string());
            top = top.parent().ok_or_else(not_git)?;
        }
    }

    fn command(&self) -> Command {
        let mut c = Command::new("git");
        c.arg("--no-pager")
            .arg("-C")
            .arg(&self.root)
            .env("GIT_DIR", &self.dir)
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_OBJECT_DIRECTORY")
            .env_remove("GIT_ALTERNATE_OBJECT_DIRECTORIES")
            .args(GIT_CONFIG)
            .envs(GIT_ENV);
        c
    }

    /// Returns the commit `rev` names (`git rev-parse --verify REV^{commit}`), as 40 or 64 hex
    /// digits; an error naming `rev` when it names none.
    pub fn resolve(&self, rev: &str) -> Result<String, RevisionError> {
        if rev.is_empty() || rev.starts_with('-') || rev.chars().any(char::is_control) {
            return Err(RevisionError::BadName { rev: rev.to_string() });
        }
        let spec = format!("{rev}^{{commit}}");
        let deadline = Instant::now() + TIME_LIMIT;
        let mut cmd = self.command();
        cmd.args(["rev-parse", "--verify", "--quiet", "--end-of-options", &spec]);
        match run(cmd, None, deadline) {
            Ok(out) => {
                let sha = String::from_utf8_lossy(&out).trim().to_string();
                if sha.len() >= 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()) {
                    Ok(sha)
                } else {
                    Err(RevisionError::Unknown { rev: rev.to_string(), why: "git gave no commit".into() })
                }
            }
            Err(RunError::Failed(why)) => Err(RevisionError::Unknown {
                rev: rev.to_string(),
                why: if why.is_empty() { "git rev-parse found none".into() } else { why },
            }),
            Err(e) => Err(RevisionError::Git(e.to_string())),
        }
    }

    /// Lists the regular files of `commit` under `paths` (root-relative files or folders) with one
    /// `git ls-tree`, in tree order. Skipped, and named: a symlink, a submodule, a path that
    /// would leave the folder it is copied to.
    pub fn list(&self, commit: &str, paths: &[&str]) -> Result<Tree, RevisionError> {
        let deadline = Instant::now() + TIME_LIMIT;
        let mut cmd = self.command();
        cmd.args(["ls-tree", "-r", "-z", "--full-tree", commit, "--"])
            .args(paths.iter().map(|p| format!("{}{p}", self.prefix)));
        let listing = run(cmd, None, deadline).map_err(|e| RevisionError::Git(format!("ls-tree {commit}: {e}")))?;
        let mut tree = Tree::default();
        for entry in listing.split(|&b| b == 0).filter(|e| !e.is_empty()) {
            let Some(tab) = entry.iter().position(|&b| b == b'\t') else { continue };
            let (meta, path) = (&entry[..tab], &entry[tab + 1..]);
            let Ok(path) = std::str::from_utf8(path) else {
                let path = String::from_utf8_lossy(path).into_owned();
                tree.skipped.push(Skipped { path, why: "not UTF-8".into() });
                continue;
            };
            // Paths relative to the kb root, as the working tree's are.
            let path = path.strip_prefix(self.prefix.as_str()).unwrap_or(path);
            let meta = String::from_utf8_lossy(meta);
            let mut fields = meta.split(' ');
            let (mode, kind, oid) = (fields.next(), fields.next(), fields.next());
            let why = match (mode, kind, oid) {
                (Some("100644" | "100755"), Some("blob"), Some(oid)) if safe_rel(path) => {
                    tree.files.push(File { oid: oid.to_string(), path: path.to_string() });
                    continue;
                }
                (Some("100644" | "100755"), Some("blob"), Some(_)) => "a path kb does not read",
                _ => "not a regular file",
            };
            tree.skipped.push(Skipped { path: path.to_string(), why: why.into() });
        }
        Ok(tree)
    }

    /// Copies the files of each tree into its folder, at the same relative paths, but those
    /// under a prefix of `held`, which are given to `take` instead, with the tree's position in
    /// `trees`, in that tree's order, as soon as git gives them: thousands of small files cost
    /// far more to write than to keep, and they can be parsed while git reads the rest. One
    /// `git cat-file --batch` reads every blob the trees list, each once however many trees
    /// list it (two revisions share most of their files); the trees' blobs are asked in turn, so
    /// that each tree's files come at the pace of the others'. A file over [`MAX_FILE_BYTES`] is
    /// skipped, and named.
    pub fn materialize(
        &self,
        trees: &[(&Tree, &Path)],
        held: &[&str],
        mut take: impl FnMut(usize, &str, Vec<u8>),
    ) -> Result<Vec<Materialized>, RevisionError> {
        // Each distinct blob once, the trees' files taken in turn, and how many files name it.
        let mut uses: FxHashMap<&str, usize> = FxHashMap::default();
        let mut asked: Vec<(&str, &str)> = Vec::new();
        let longest = trees.iter().map(|(t, _)| t.files.len()).max().unwrap_or(0);
        for i in 0..longest {
            for f in trees.iter().filter_map(|(t, _)| t.files.get(i)) {
                let n = uses.entry(&f.oid).or_insert(0);
                if *n == 0 {
                    asked.push((&f.oid, &f.path));
                }
                *n += 1;
            }
        }
        let mut out: Vec<Materialized> =
            trees.iter().map(|(t, _)| Materialized { skipped: t.skipped.clone(), ..Materialized::default() }).collect();
        if asked.is_empty() {
            return Ok(out);
        }
        let mut input = Vec::with_capacity(asked.len() * 41);
        for (oid, _) in &asked {
            input.extend_from_slice(oid.as_bytes());
            input.push(b'\n');
        }
        // The blobs read and not yet given to every file naming them (`None`: too large).
        let mut got: FxHashMap<&str, Option<Vec<u8>>> = FxHashMap::default();
        let mut sizes: FxHashMap<&str, u64> = FxHashMap::default();
        // Each tree's next file, and the folders made in its folder.
        let mut next = vec![0usize; trees.len()];
        let mut made: Vec<Vec<PathBuf>> = vec![Vec::new(); trees.len()];
        let mut failure: Option<String> = None;
        // Gives each tree its files, in order, while their blobs are read.
        let mut deliver = |got: &mut FxHashMap<&str, Option<Vec<u8>>>,
                           sizes: &FxHashMap<&str, u64>|
         -> Result<(), String> {
            for (t, (tree, dest)) in trees.iter().enumerate() {
                while let Some(f) = tree.files.get(next[t]) {
                    let oid = f.oid.as_str();
                    let Some(slot) = got.get_mut(oid) else { break };
                    next[t] += 1;
                    let left = uses.get_mut(oid).map_or(0, |n| {
                        *n -= 1;
                        *n
                    });
                    // The last file to name a blob takes its bytes; the others copy them.
                    let bytes = if left == 0 { slot.take() } else { slot.clone() };
                    if left == 0 {
                        got.remove(oid);
                    }
                    let Some(bytes) = bytes else {
                        let size = sizes.get(oid).copied().unwrap_or_default();
                        let why = format!("{size} bytes, over {MAX_FILE_BYTES}");
                        out[t].skipped.push(Skipped { path: f.path.clone(), why });
                        continue;
                    };
                    if held.iter().any(|h| f.path.starts_with(h)) {
                        out[t].held += 1;
                        take(t, &f.path, bytes);
                        continue;
                    }
                    let target = dest.join(&f.path);
                    if let Some(parent) = target.parent()
                        && !made[t].iter().any(|m| m == parent)
                    {
                        std::fs::create_dir_all(parent)
                            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
                        made[t].push(parent.to_path_buf());
                    }
                    std::fs::write(&target, &bytes).map_err(|e| format!("cannot write {}: {e}", target.display()))?;
                    out[t].written += 1;
                }
            }
            Ok(())
        };
        let deadline = Instant::now() + TIME_LIMIT;
        let mut cmd = self.command();
        cmd.args(["cat-file", "--batch"]);
        let result = run_streaming(cmd, input, deadline, |stream| {
            for &(oid, path) in &asked {
                let mut header = Vec::new();
                stream.read_until(b'\n', &mut header)?;
                let header = String::from_utf8_lossy(&header);
                let mut fields = header.trim_end().split(' ');
                let (answer, kind, size) = (fields.next(), fields.next(), fields.next());
                let size: u64 = match (answer, kind, size.and_then(|s| s.parse().ok())) {
                    (Some(a), Some("blob"), Some(n)) if a == oid => n,
                    _ => {
                        failure = Some(format!("cat-file: unexpected answer {:?} for {path}", header.trim_end()));
                        return Ok(());
                    }
                };
                if size > MAX_FILE_BYTES {
                    std::io::copy(&mut stream.by_ref().take(size + 1), &mut std::io::sink())?;
                    sizes.insert(oid, size);
                    got.insert(oid, None);
                } else {
                    let mut bytes = vec![0u8; size as usize];
                    stream.read_exact(&mut bytes)?;
                    let mut lf = [0u8; 1];
                    stream.read_exact(&mut lf)?;
                    got.insert(oid, Some(bytes));
                }
                if let Err(why) = deliver(&mut got, &sizes) {
                    failure = Some(why);
                    return Ok(());
                }
            }
            Ok(())
        });
        match (result, failure) {
            (Err(e), _) => return Err(RevisionError::Git(format!("cat-file: {e}"))),
            (Ok(()), Some(why)) => return Err(RevisionError::Git(why)),
            (Ok(()), None) => {}
        }
        if let Some((t, f)) = trees.iter().enumerate().find_map(|(t, (tree, _))| Some((t, tree.files.get(next[t])?))) {
            return Err(RevisionError::Git(format!("cat-file: no answer for {} (tree {t})", f.path)));
        }
        Ok(out)
    }
}

/// The regular files of one commit under kb's paths, as `git ls-tree` lists them ([`Git::list`]).
#[derive(Debug, Default, Clone)]
pub struct Tree {
    /// In tree order.
    pub files: Vec<File>,
    pub skipped: Vec<Skipped>,
}

/// One regular file of a tree: its blob and its root-relative, `/`-separated path.
#[derive(Debug, Clone, PartialEq)]
pub struct File {
    pub oid: String,
    pub path: String,
}

/// Returns whether a path from a tree stays inside the folder it is copied to: relative, no
/// `..`, `.` or empty component, no `.git` component.
fn safe_rel(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && path.split('/').all(|c| !c.is_empty() && c != "." && c != ".." && !c.eq_ignore_ascii_case(".git"))
}

/// Why a git run failed.
#[derive(Debug, thiserror::Error)]
enum RunError {
    #[error("cannot run git: {0}")]
    Spawn(std::io::Error),
    #[error("git took longer than {} s and was stopped", TIME_LIMIT.as_secs())]
    Timeout,
    /// git exited unsuccessfully; its first line on stderr.
    #[error("{0}")]
    Failed(String),
    #[error("{0}")]
    Io(std::io::Error),
}

/// Runs `cmd` with `input` on stdin (none: an empty stdin) and returns its stdout; stopped at
/// `deadline`.
fn run(cmd: Command, input: Option<Vec<u8>>, deadline: Instant) -> Result<Vec<u8>, RunError> {
    let mut out = Vec::new();
    run_streaming(cmd, input.unwrap_or_default(), deadline, |r| r.read_to_end(&mut out).map(drop))?;
    Ok(out)
}

/// Runs `cmd`, writes `input` to its stdin from a thread, lets `read` consume its stdout, and
/// waits for it; a watchdog kills git at `deadline`, so nothing here can hang. Fails when git
/// exits unsuccessfully (with its first stderr line).
fn run_streaming(
    mut cmd: Command,
    input: Vec<u8>,
    deadline: Instant,
    read: impl FnOnce(&mut BufReader<std::process::ChildStdout>) -> std::io::Result<()>,
) -> Result<(), RunError> {
    let mut child =
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(RunError::Spawn)?;
    let pid = child.id();
    let (Some(mut stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(RunError::Io(std::io::Error::other("no pipes to git")));
    };
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let errors = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stderr.by_ref().take(64 * 1024).read_to_end(&mut text);
        let _ = std::io::copy(&mut stderr, &mut std::io::sink());
        text
    });
    // The watchdog: kills git at the deadline unless told it is done.
    let (done, stop) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        let wait = deadline.saturating_duration_since(Instant::now());
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(wait) {
            if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            return true;
        }
        false
    });
    let mut reader = BufReader::with_capacity(256 * 1024, stdout);
    let read_result = read(&mut reader);
    // Drain what `read` left, so git never blocks on a full pipe.
    let _ = std::io::copy(&mut reader, &mut std::io::sink());
    let status = child.wait();
    let _ = done.send(());
    let timed_out = watchdog.join().unwrap_or(false);
    let _ = writer.join();
    let stderr = errors.join().unwrap_or_default();
    if timed_out {
        return Err(RunError::Timeout);
    }
    let status = status.map_err(RunError::Io)?;
    if !status.success() {
        let text = String::from_utf8_lossy(&stderr);
        let first = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("").to_string();
        return Err(RunError::Failed(first.strip_prefix("fatal: ").unwrap_or(&first).to_string()));
    }
    read_result.map_err(RunError::Io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn a_revision_is_resolved_and_its_files_copied() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/one.md"), "one\n").unwrap();
        std::fs::write(root.join("a/two.md"), "two\n").unwrap();
        std::fs::write(root.join("other.md"), "other\n").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("a/link")).unwrap();
        git(root, &["add", "-A"]);
        git(root, &["commit", "-qm", "one"]);
        let g = Git::at(root).unwrap();
        let sha = g.resolve("HEAD").unwrap();
        assert_eq!(sha.len(), 40);
        let out = tempfile::tempdir().unwrap();
        let tree = g.list(&sha, &["a", "missing"]).unwrap();
        let mut held = Vec::new();
        let m = g.materialize(&[(&tree, out.path())], &["a/b/"], |t, p, b| held.push((t, p.to_string(), b))).unwrap();
        let m = m.into_iter().next().unwrap();
        assert_eq!((m.written, m.held), (1, 1));
        assert_eq!(held, vec![(0, "a/b/one.md".to_string(), b"one\n".to_vec())]);
        let skipped = m.skipped;
        assert_eq!(std::fs::read_to_string(out.path().join("a/two.md")).unwrap(), "two\n");
        assert!(!out.path().join("a/b/one.md").exists());
        assert!(!out.path().join("other.md").exists());
        assert_eq!(skipped.len(), 1, "the symlink is not copied: {skipped:?}");
        assert!(!out.path().join("a/link").exists());
    }

    #[test]
    fn two_trees_get_each_its_own_files_from_one_read_of_their_blobs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        std::fs::create_dir_all(root.join("m")).unwrap();
        for (name, text) in [("1.md", "same\n"), ("2.md", "old\n"), ("s.json", "{}\n")] {
            std::fs::write(root.join("m").join(name), text).unwrap();
        }
        git(root, &["add", "-A"]);
        git(root, &["commit", "-qm", "one"]);
        std::fs::write(root.join("m/2.md"), "new\n").unwrap();
        // The same bytes at a second path of one tree, and under another name than before.
        std::fs::write(root.join("m/3.md"), "same\n").unwrap();
        std::fs::rename(root.join("m/1.md"), root.join("m/0.md")).unwrap();
        git(root, &["add", "-A"]);
        git(root, &["commit", "-qm", "two"]);
        let g = Git::at(root).unwrap();
        let (one, two) = (g.resolve("HEAD~1").unwrap(), g.resolve("HEAD").unwrap());
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (first, second) = (g.list(&one, &["m"]).unwrap(), g.list(&two, &["m"]).unwrap());
        let mut given: [Vec<(String, String)>; 2] = Default::default();
        let m = g
            .materialize(&[(&first, a.path()), (&second, b.path())], &["m/1", "m/0", "m/2", "m/3"], |t, p, b| {
                given[t].push((p.to_string(), String::from_utf8(b).unwrap()))
            })
            .unwrap();
        let expect = |v: &[(&str, &str)]| v.iter().map(|(p, b)| (p.to_string(), b.to_string())).collect::<Vec<_>>();
        assert_eq!(given[0], expect(&[("m/1.md", "same\n"), ("m/2.md", "old\n")]));
        assert_eq!(given[1], expect(&[("m/0.md", "same\n"), ("m/2.md", "new\n"), ("m/3.md", "same\n")]));
        assert_eq!((m[0].written, m[0].held, m[1].written, m[1].held), (1, 2, 1, 3));
        for d in [&a, &b] {
            assert_eq!(std::fs::read_to_string(d.path().join("m/s.json")).unwrap(), "{}\n");
        }
    }

    #[test]
    fn a_bad_revision_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        let g = Git::at(dir.path()).unwrap();
        let e = g.resolve("no-such-branch").unwrap_err().to_string();
        assert!(e.contains("no-such-branch"), "{e}");
        assert!(matches!(g.resolve("--output=x"), Err(RevisionError::BadName { .. })));
        assert!(Git::at(tempfile::tempdir().unwrap().path()).is_err());
    }

    #[test]
    fn paths_from_a_tree_stay_inside() {
        assert!(safe_rel(".co-cli/knowledge/memories/001-a.md"));
        for p in ["", "/etc/x", "a/../b", "./a", "a//b", ".git/config", "a/.GIT/x"] {
            assert!(!safe_rel(p), "{p}");
        }
    }
}
