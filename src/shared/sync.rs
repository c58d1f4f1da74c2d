//! Running git for the shared sources (docs/shared.md): the clone or fetch of `kb shared sync`
//! and the branch and commit of `kb shared propose`. This is the only code of kb that runs git
//! against a remote; no read command comes here.
//!
//! Every git process runs with no hooks, no pager, no prompt and no credential helper asking on
//! a terminal, with stdin closed, only the transports kb allows, in a process group of its own
//! that is killed at the time limit.

use super::{SYNCED_STAMP, Source};
use crate::settings::{SharedSpec, SharedUrl};
use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;
#[cfg(test)]
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

/// How long one git process may run (`KB_SHARED_TIMEOUT_MS` changes it, for the tests).
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// The configuration every git process of kb runs with: no hooks, no file-system monitor, no
/// background maintenance left running after it (`git maintenance --auto --detach`, `gc
/// --auto`), and only the transports kb allows (`ext::`, `fd::` and remote helpers are never run).
const CONFIG: [&str; 9] = [
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "maintenance.auto=false",
    "gc.auto=0",
    "protocol.allow=never",
    "protocol.https.allow=always",
    "protocol.ssh.allow=always",
    "protocol.git.allow=always",
    "protocol.file.allow=always",
];

/// The variables a caller's environment may hold that would point git at another repository or
/// ask a person for a password.
const CLEARED: [&str; 8] = [
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_EXEC_PATH",
    "GIT_CONFIG_PARAMETERS",
];

/// Runs `git -C DIR ARGS` (`-c` options first: `extra` adds some, such as the committer) and
/// returns its stdout, or why it failed: it could not start, ran past `timeout` (its whole
/// process group is killed), or exited unsuccessfully (what git wrote on stderr, [`failure`]).
///
/// git looks for a repository in `dir` itself and never above it: a copy whose `.git` is broken
/// must fail, not let git find (and fetch into, or check out over) a repository that holds it.
pub fn git<S: AsRef<OsStr>>(dir: &Path, extra: &[String], args: &[S], timeout: Duration) -> Result<String, String> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let mut cmd = Command::new("git");
    for c in CONFIG.iter().map(|s| s.to_string()).chain(extra.iter().cloned()) {
        cmd.arg("-c").arg(c);
    }
    cmd.args(args).current_dir(dir);
    for var in CLEARED {
        cmd.env_remove(var);
    }
    let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if let Some(parent) = real.parent() {
        cmd.env("GIT_CEILING_DIRECTORIES", parent);
    }
    cmd.env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .env("GCM_INTERACTIVE", "never")
        .env("GIT_SSH_VARIANT", "auto")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().map_err(|e| format!("could not start git: {e}"))?;
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.by_ref().take(4 << 20).read_to_end(&mut buf);
                let _ = std::io::copy(&mut p, &mut std::io::sink());
            }
            let _ = tx.send(buf);
        });
        rx
    };
    let out = read(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = read(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let deadline = Instant::now() + timeout;
    // Waited for without reaping it, so that its process group id stays its own until the
    // group is killed.
    let pid = rustix::process::Pid::from_child(&child);
    let exited = loop {
        use rustix::process::{WaitId, WaitIdOptions, waitid};
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG;
        match waitid(WaitId::Pid(pid), options) {
            Ok(Some(_)) => break true,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => break false,
        }
    };
    // Whatever git left running in its group (ssh, a remote helper) goes too.
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    let status = child.wait().ok();
    if !exited {
        return Err(format!("git took longer than {} s and was stopped", timeout.as_secs_f64().ceil() as u64));
    }
    let wait = Duration::from_secs(1);
    let stdout = String::from_utf8_lossy(&out.recv_timeout(wait).unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err.recv_timeout(wait).unwrap_or_default()).into_owned();
    match status {
        Some(s) if s.success() => Ok(stdout),
        _ => Err(failure(&stderr)),
    }
}

/// What a failed git said, in one line: its first paragraph of messages (git's `fatal:` line
/// and the cause before it, such as ssh's "Could not resolve hostname"), without its hints and
/// the advice it adds after a blank line ("Please make sure you have the correct access
/// rights…"); at most three lines of it.
fn failure(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().map(str::trim).collect();
    let said = |l: &str| !l.is_empty() && !l.starts_with("hint:") && !l.starts_with("warning:");
    let Some(start) = lines.iter().position(|l| said(l)) else { return "git failed".to_string() };
    let paragraph: Vec<&str> =
        lines[start..].iter().take_while(|l| !l.is_empty()).filter(|l| said(l)).take(3).copied().collect();
    crate::output::sanitize(&paragraph.join("; ")).into_owned()
}

/// What a sync did to one source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Synced {
    /// The copy was made: a clone at this commit.
    Cloned { commit: String },
    /// The copy was fetched and moved (`from` → `to`; equal when nothing changed).
    Fetched { from: Option<String>, to: String },
    /// A plain-path source: read in place, nothing to sync.
    InPlace,
}

/// Syncs one source with git: clones a missing copy (into a folder next to it, renamed into
/// place once complete), or fetches the copy's ref and moves its checkout there; touches the
/// stamp on success. The URL is checked again first (a transport kb refuses never reaches git).
/// On failure the old copy is untouched and the error says why.
pub fn sync(source: &Source, timeout: Duration) -> Result<Synced, String> {
    if source.in_place {
        return Ok(Synced::InPlace);
    }
    match SharedSpec::check_url(&source.spec.url)? {
        SharedUrl::Local => return Ok(Synced::InPlace),
        SharedUrl::Remote => {}
    }
    let copy = &source.root;
    // One sync of a copy at a time (two session starts, a person and the background): the lock
    // file sits next to the copy, outside it.
    let name = copy.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let lock_path = copy.with_file_name(format!(".{name}.lock"));
    let _held = crate::fsio::lock(&lock_path, crate::fsio::LOCK_TIMEOUT)
        .map_err(|e| format!("another sync of this copy is running ({}: {e})", lock_path.display()))?;
    // The copy is kb's own clone: its `.git` is a folder. Anything else in its place is not
    // kb's to delete (a `.git` file could lead git into another repository).
    let in_the_way =
        |what: &str| format!("{} {what}: move it away, and kb shared sync makes a new copy", copy.display());
    match std::fs::symlink_metadata(copy.join(".git")) {
        Ok(m) if m.is_dir() => fetch(source, timeout),
        Ok(_) => Err(in_the_way("is not a copy kb made (its .git is not a folder)")),
        Err(_) if std::fs::read_dir(copy).is_ok_and(|mut entries| entries.next().is_some()) => {
            Err(in_the_way("exists and is not a git repository"))
        }
        Err(_) => clone(source, timeout),
    }
}

/// Clones the source into a temporary folder beside its copy, then renames it into place.
fn clone(source: &Source, timeout: Duration) -> Result<Synced, String> {
    let copy = &source.root;
    let parent = copy.parent().ok_or("the copy has no parent folder")?;
    std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let name = copy.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = parent.join(format!(".{name}.clone-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&temp);
    let os = OsStr::new;
    let mut args: Vec<&OsStr> = vec![os("clone"), os("--depth"), os("1"), os("--quiet")];
    if let Some(r) = &source.spec.reference {
        args.extend([os("--branch"), os(r)]);
    }
    args.extend([os("--"), os(&source.spec.url), temp.as_os_str()]);
    if let Err(why) = git(parent, &[], &args, timeout) {
        let _ = std::fs::remove_dir_all(&temp);
        return Err(why);
    }
    stamp(&temp.join(".git")).map_err(|e| format!("cannot write the sync stamp: {e}"))?;
    // An empty folder in the way is moved aside (anything else was refused before the clone).
    let old = parent.join(format!(".{name}.old-{}", std::process::id()));
    let moved = copy.exists() && std::fs::rename(copy, &old).is_ok();
    if let Err(e) = std::fs::rename(&temp, copy) {
        let _ = std::fs::remove_dir_all(&temp);
        return Err(format!("cannot move the clone into {}: {e}", copy.display()));
    }
    if moved {
        let _ = std::fs::remove_dir_all(&old);
    }
    let commit = super::head_commit(&copy.join(".git")).unwrap_or_default();
    Ok(Synced::Cloned { commit })
}

/// Fetches the copy's ref (the remote's default branch when none is set) and moves its
/// checkout to the fetched commit, detached.
fn fetch(source: &Source, timeout: Duration) -> Result<Synced, String> {
    let copy = &source.root;
    repository(copy, timeout).map_err(|e| format!("{e}: move it away, and kb shared sync makes a new copy"))?;
    let from = source.commit();
    let reference = source.spec.reference.as_deref().unwrap_or("HEAD");
    git(copy, &[], &["fetch", "--quiet", "--depth", "1", "--no-tags", "origin", "--", reference], timeout)?;
    git(copy, &[], &["checkout", "--quiet", "--force", "--detach", "FETCH_HEAD"], timeout)?;
    stamp(&copy.join(".git")).map_err(|e| format!("cannot write the sync stamp: {e}"))?;
    let to = source.commit().unwrap_or_default();
    Ok(Synced::Fetched { from, to })
}

/// Fails unless `root` is the top of a git repository of its own (its `.git` readable by git):
/// the check before any git command that changes a checkout.
pub fn repository(root: &Path, timeout: Duration) -> Result<(), String> {
    let broken = |why: String| format!("{} is not a git repository ({why})", root.display());
    let found = git(root, &[], &["rev-parse", "--show-toplevel", "--absolute-git-dir"], timeout).map_err(broken)?;
    let mut lines = found.lines().map(str::trim);
    let (top, git_dir) = (lines.next().unwrap_or_default(), lines.next().unwrap_or_default());
    let same = |p: &Path| std::fs::canonicalize(p).ok();
    if same(Path::new(top)) != same(root) {
        return Err(broken(format!("git finds the repository at {top}")));
    }
    // A `.git` folder is the repository's own (a `.git` file, a linked worktree's, names another).
    let dot_git = root.join(".git");
    if dot_git.is_dir() && same(Path::new(git_dir)) != same(&dot_git) {
        return Err(broken(format!("git reads the repository at {git_dir}")));
    }
    Ok(())
}

/// Sets the sync stamp's mtime to now (creating it).
fn stamp(git_dir: &Path) -> std::io::Result<()> {
    let file = std::fs::OpenOptions::new().create(true).append(true).open(git_dir.join(SYNCED_STAMP))?;
    file.set_modified(SystemTime::now())
}

/// Whether the folder holds kb knowledge: `.co-cli/knowledge/` or `.github/copilot-memories.jsonl`.
pub fn is_kb_repository(root: &Path) -> bool {
    root.join(".co-cli/knowledge").is_dir() || root.join(".github/copilot-memories.jsonl").is_file()
}

/// Where a source's checkout stands before `propose` moves it: a branch, or a detached commit.
#[derive(Debug, Clone)]
pub enum Checkout {
    Branch(String),
    Detached(String),
}

impl Checkout {
    /// Reads where the checkout of the repository at `root` stands.
    pub fn of(root: &Path, timeout: Duration) -> Result<Checkout, String> {
        if let Ok(branch) = git(root, &[], &["symbolic-ref", "--quiet", "--short", "HEAD"], timeout) {
            return Ok(Checkout::Branch(branch.trim().to_string()));
        }
        let commit = git(root, &[], &["rev-parse", "--verify", "HEAD"], timeout)?;
        Ok(Checkout::Detached(commit.trim().to_string()))
    }

    /// Puts the checkout back where it stood.
    pub fn restore(&self, root: &Path, timeout: Duration) -> Result<(), String> {
        let args: Vec<&str> = match self {
            Checkout::Branch(b) => vec!["checkout", "--quiet", b],
            Checkout::Detached(c) => vec!["checkout", "--quiet", "--detach", c],
        };
        git(root, &[], &args, timeout).map(|_| ())
    }
}

/// Fails unless the working tree of the repository at `root` is clean (nothing changed, nothing
/// untracked that git does not ignore): a proposal's commit holds the proposal and nothing else.
pub fn check_clean(root: &Path, timeout: Duration) -> Result<(), String> {
    let status = git(root, &[], &["status", "--porcelain", "--untracked-files=all"], timeout)?;
    match status.lines().next() {
        None => Ok(()),
        Some(first) => Err(format!(
            "{} has uncommitted changes ({}): commit or discard them first",
            root.display(),
            crate::output::sanitize(first.trim())
        )),
    }
}

/// Returns the folder a temporary clone for `copy` would use (for the tests).
#[cfg(test)]
fn temp_of(copy: &Path) -> PathBuf {
    let name = copy.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    copy.with_file_name(format!(".{name}.clone-{}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_runs_with_no_prompt_and_its_failure_is_what_it_said() {
        let dir = tempfile::tempdir().unwrap();
        let e = git(dir.path(), &[], &["rev-parse", "--verify", "HEAD"], TIMEOUT).unwrap_err();
        assert!(e.contains("not a git repository"), "{e}");
        let out = git(dir.path(), &[], &["config", "--get", "protocol.allow"], TIMEOUT).unwrap();
        assert_eq!(out.trim(), "never");
        assert!(!temp_of(&dir.path().join("org-1")).exists());
    }

    #[test]
    fn a_failure_is_the_first_paragraph_of_what_git_said_without_hints_and_advice() {
        let ssh = "ssh: Could not resolve hostname nope: Name or service not known\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.\n";
        assert_eq!(
            failure(ssh),
            "ssh: Could not resolve hostname nope: Name or service not known; fatal: Could not read from remote repository."
        );
        assert_eq!(failure("hint: use --force\n\nfatal: bad ref\n"), "fatal: bad ref");
        assert_eq!(failure("\n\n"), "git failed");
        assert_eq!(failure("fatal: a\nfatal: b\nfatal: c\nfatal: d\n"), "fatal: a; fatal: b; fatal: c");
    }

    #[test]
    fn a_refused_transport_never_reaches_git() {
        let spec = SharedSpec { name: "org".into(), url: "ext::sh -c touch% /tmp/kb-ext".into(), reference: None };
        let source = Source { spec, root: PathBuf::from("/nonexistent/org"), in_place: false };
        let e = sync(&source, TIMEOUT).unwrap_err();
        assert!(e.contains("transport"), "{e}");
    }
}
