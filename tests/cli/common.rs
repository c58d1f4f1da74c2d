//! A test environment: a temporary repository, a fixed HOME, a cleared environment; and helpers
//! shared by the black-box tests (tree snapshots, Python reference readers, a seeded PRNG).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A temporary repository with its own HOME, in which `kb` runs with a clean environment.
///
/// Every command gets `KB_ROOT=<root>` (see [`TestEnv::command`]), so a `.co-cli/` or `.git`
/// folder somewhere above the temporary folder (`$TMPDIR` inside a project) cannot become the
/// root: the tests read and write their own repository and nothing else. Only the tests of root
/// discovery opt out, with [`TestEnv::discovering_root`].
pub struct TestEnv {
    pub dir: tempfile::TempDir,
    /// The folder that holds `repo/` and `home/`: `dir` itself, or a folder below it
    /// ([`TestEnv::under`]).
    pub base: PathBuf,
    pub envs: Vec<(String, String)>,
    /// The working directory of `kb`, relative to the root (default: the root itself).
    pub cwd: Option<PathBuf>,
    /// Whether kb finds the root itself from its working directory (no `KB_ROOT` is set); see
    /// [`TestEnv::discovering_root`].
    pub discover_root: bool,
}

/// What a `kb` run produced.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }
    pub fn ok(self) -> Run {
        assert_eq!(self.code, 0, "expected success: {self:?}");
        self
    }
    /// Asserts the run failed with exit status 1 and printed `error: ...` on stderr.
    pub fn err(self) -> Run {
        assert_eq!(self.code, 1, "expected exit 1: {self:?}");
        assert!(self.stderr.contains("error:"), "expected `error:` on stderr: {self:?}");
        self
    }
    /// Asserts the run was a usage error (exit 2).
    pub fn usage(self) -> Run {
        assert_eq!(self.code, 2, "expected usage error (exit 2): {self:?}");
        self
    }
}

impl TestEnv {
    /// `<tmp>/repo/.git` and `<tmp>/home`, in a fresh folder of `$TMPDIR`.
    pub fn new() -> TestEnv {
        TestEnv::in_dir(tempfile::tempdir().expect("tempdir"), "")
    }

    /// Like [`TestEnv::new`] one level down: `<tmp>/<folder>/repo/.git` and `<tmp>/<folder>/home`,
    /// so that a test can put something next to the repository, in `<tmp>/<folder>/`.
    pub fn under(folder: &str) -> TestEnv {
        TestEnv::in_dir(tempfile::tempdir().expect("tempdir"), folder)
    }

    /// Like [`TestEnv::new`], already [discovering its root](TestEnv::discovering_root), in a
    /// temporary folder with no `.co-cli` or `.git` in any folder above it: for the discovery tests
    /// whose point is that no such marker exists (the `.git` rule, the working-directory rule),
    /// which a stray marker above would otherwise win over (root discovery takes the nearest
    /// marker). It is made in `$TMPDIR` when that is clean, else in the first clean one of `/tmp`,
    /// `/var/tmp` and `/dev/shm`; when none is, returns `None` with a note (the test skips), and on
    /// CI (`CI` set) fails.
    pub fn markerless() -> Option<TestEnv> {
        let candidates = [std::env::temp_dir(), "/tmp".into(), "/var/tmp".into(), "/dev/shm".into()];
        for base in candidates {
            let Ok(real) = base.canonicalize() else { continue };
            if let Some(marked) = marker_above(&real) {
                eprintln!("note: not using {} for a markerless test: {} exists", real.display(), marked.display());
                continue;
            }
            if let Ok(dir) = tempfile::tempdir_in(&real) {
                return Some(TestEnv::in_dir(dir, "").discovering_root());
            }
        }
        assert!(
            std::env::var_os("CI").is_none(),
            "no temporary folder without a .co-cli or .git folder above it for a root-discovery test"
        );
        eprintln!("skipped: every temporary folder has a .co-cli or .git folder above it");
        None
    }

    fn in_dir(dir: tempfile::TempDir, folder: &str) -> TestEnv {
        let base = dir.path().join(folder);
        std::fs::create_dir_all(base.join("repo/.git")).unwrap();
        std::fs::create_dir_all(base.join("home")).unwrap();
        TestEnv { dir, base, envs: Vec::new(), cwd: None, discover_root: false }
    }

    /// Lets kb find the root itself from its working directory (`KB_ROOT` is not set), for the
    /// tests of root discovery only: every other test pins its root, so that a `.co-cli/` folder
    /// above the temporary folder changes nothing. Such a test must be immune by construction:
    /// the marker that should win lies inside the temporary folder (e.g. `<root>/.co-cli/`),
    /// nearer than any folder above it can be, or the test uses [`TestEnv::markerless`].
    pub fn discovering_root(mut self) -> TestEnv {
        self.discover_root = true;
        self
    }

    /// A test environment whose clock is pinned to [`NOW`] (its root is pinned like every
    /// test environment's, see [`TestEnv::command`]).
    pub fn pinned() -> TestEnv {
        TestEnv::new().env("KB_NOW", NOW)
    }

    pub fn root(&self) -> PathBuf {
        self.base.join("repo")
    }
    pub fn home(&self) -> PathBuf {
        self.base.join("home")
    }
    pub fn memories(&self) -> PathBuf {
        self.root().join(".co-cli/knowledge/memories")
    }

    pub fn env(mut self, k: &str, v: &str) -> TestEnv {
        self.envs.push((k.into(), v.into()));
        self
    }

    /// Returns a `kb ARGS` command: in the root (or `cwd` below it), with a cleared environment
    /// but HOME, PATH, `KB_ROOT=<root>` and the test's own variables.
    ///
    /// `KB_ROOT` pins the root, so that a `.co-cli/` folder above the temporary folder cannot
    /// become it. It is left out when the test passes `--root` (which pins the root itself) or
    /// [discovers the root](TestEnv::discovering_root); a `KB_ROOT` of the test's own (even an
    /// empty one, which kb ignores) replaces it.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kb"));
        let cwd = match &self.cwd {
            Some(c) => self.root().join(c),
            None => self.root(),
        };
        cmd.args(args)
            .current_dir(cwd)
            .env_clear()
            .env("HOME", self.home())
            .env("PATH", std::env::var("PATH").unwrap_or_default());
        let root_flag = args.iter().any(|a| *a == "--root" || a.starts_with("--root="));
        if !self.discover_root && !root_flag {
            cmd.env("KB_ROOT", self.root());
        }
        for (k, v) in &self.envs {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs kb with `args` and no stdin.
    pub fn kb(&self, args: &[&str]) -> Run {
        self.kb_stdin(args, None)
    }

    /// Runs kb with `args`, feeding `stdin` when given.
    ///
    /// Every run is checked for a panic: kb must never panic, whatever the input (docs/safety.md).
    pub fn kb_stdin(&self, args: &[&str], stdin: Option<&str>) -> Run {
        run_command(self.command(args), stdin.map(str::as_bytes))
    }

    /// Writes a file under the root, creating folders.
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        self.write_bytes(rel, text.as_bytes())
    }

    /// Writes raw bytes under the root, creating folders.
    pub fn write_bytes(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let p = self.root().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// Writes a file in the memories folder.
    pub fn mem_file(&self, name: &str, text: &str) -> PathBuf {
        self.write(&format!(".co-cli/knowledge/memories/{name}"), text)
    }

    /// Writes a memory file the way co-cli's test helper does.
    pub fn memory(&self, id: u64, text: &str, created: &str, tags: &[&str]) -> PathBuf {
        let tag_yaml = if tags.is_empty() {
            "tags: []\n".to_string()
        } else {
            format!("tags:\n{}", tags.iter().map(|t| format!("- {t}\n")).collect::<String>())
        };
        let slug: String =
            text.to_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).take(30).collect();
        self.write(
            &format!(".co-cli/knowledge/memories/{id:03}-{slug}.md"),
            &format!("---\ncreated: '{created}'\nid: {id}\nsource: user-told\n{tag_yaml}---\n\n{text}\n"),
        )
    }

    /// Writes a protected memory file (`decay_protected: true`).
    pub fn protected_memory(&self, id: u64, text: &str, created: &str) -> PathBuf {
        self.write(
            &format!(".co-cli/knowledge/memories/{id:03}-protected.md"),
            &format!("---\ncreated: '{created}'\ndecay_protected: true\nid: {id}\nsource: user-told\ntags: []\n---\n\n{text}\n"),
        )
    }

    /// Returns the memory files' names, sorted.
    pub fn memory_files(&self) -> Vec<String> {
        let mut names: Vec<String> = match std::fs::read_dir(self.memories()) {
            Ok(rd) => rd
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".md"))
                .collect(),
            Err(_) => Vec::new(),
        };
        names.sort();
        names
    }

    /// Returns the path of the only memory file whose name starts with `{id:03}-`.
    pub fn file_of(&self, id: u64) -> PathBuf {
        let prefix = format!("{id:03}-");
        let found: Vec<String> = self.memory_files().into_iter().filter(|n| n.starts_with(&prefix)).collect();
        assert_eq!(found.len(), 1, "expected one file for id {id}: {found:?} in {:?}", self.memory_files());
        self.memories().join(&found[0])
    }

    pub fn read(&self, path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    /// Returns `kb --json list` parsed.
    pub fn list_json(&self) -> serde_json::Value {
        self.kb(&["--json", "list"]).ok().json()
    }

    /// Returns the ids `kb list` shows, in its order.
    pub fn ids(&self) -> Vec<u64> {
        self.list_json()["memories"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect()
    }

    /// Returns `kb --json show ID` parsed.
    pub fn show(&self, id: u64) -> serde_json::Value {
        self.kb(&["--json", "show", &id.to_string()]).ok().json()
    }

    /// Returns every path under the root (but `.co-cli/cache/`, which is derived state, and the
    /// access log, which every recall and show appends to by design) with its content, inode and
    /// mtime, so that any write, even of the same bytes, shows as a difference.
    pub fn snapshot(&self) -> BTreeMap<String, Entry> {
        let mut out = BTreeMap::new();
        walk(&self.root(), &self.root(), &mut out);
        out
    }
}

/// Returns the first `.co-cli` or `.git` in `dir` or a folder above it: a marker kb's root
/// discovery would find from there.
pub fn marker_above(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().flat_map(|d| [d.join(".co-cli"), d.join(".git")]).find(|m| std::fs::symlink_metadata(m).is_ok())
}

/// One path in a tree snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Dir,
    File { bytes: Vec<u8>, ino: u64, mtime_ns: i64, mode: u32 },
    Link(PathBuf),
    Special { ino: u64 },
}

/// The access log and what comes with it: the state folder and its `.gitignore`. The folder is
/// still walked, so a board file or a journal entry written by a read shows.
const ACCESS_LOG: [&str; 2] = [".co-cli/state/access.jsonl", ".co-cli/state/.gitignore"];

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Entry>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.filter_map(|e| e.ok()) {
        let path = e.path();
        let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        if rel == ".co-cli/cache" || ACCESS_LOG.contains(&rel.as_str()) {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.file_type().is_symlink() {
            out.insert(rel, Entry::Link(std::fs::read_link(&path).unwrap()));
        } else if meta.is_dir() {
            if rel != ".co-cli/state" {
                out.insert(rel, Entry::Dir);
            }
            walk(root, &path, out);
        } else if !meta.is_file() {
            // A FIFO or a socket: reading it could block.
            out.insert(rel, Entry::Special { ino: meta.ino() });
        } else {
            let bytes = std::fs::read(&path).unwrap_or_default();
            out.insert(
                rel,
                Entry::File {
                    bytes,
                    ino: meta.ino(),
                    mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
                    mode: meta.mode(),
                },
            );
        }
    }
}

/// Asserts two snapshots are equal, naming the paths that differ.
pub fn assert_same_tree(before: &BTreeMap<String, Entry>, after: &BTreeMap<String, Entry>) {
    let mut diffs = Vec::new();
    for k in before.keys().chain(after.keys()) {
        if before.get(k) != after.get(k) && !diffs.contains(k) {
            diffs.push(k.clone());
        }
    }
    assert!(diffs.is_empty(), "the tree changed at: {diffs:?}");
}

/// Runs a prepared kb command and checks it did not panic.
pub fn run_command(mut cmd: Command, stdin: Option<&[u8]>) -> Run {
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn kb");
    if let Some(input) = stdin {
        use std::io::Write;
        let mut pipe = child.stdin.take().unwrap();
        // kb may exit before reading everything (e.g. on a usage error); that is not our failure.
        let _ = pipe.write_all(input);
    }
    let out: Output = child.wait_with_output().unwrap();
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert_ne!(run.code, 101, "kb panicked: {run:?}");
    assert_ne!(run.code, -1, "kb was killed by a signal: {run:?}");
    assert!(!run.stderr.contains("panicked"), "kb panicked: {run:?}");
    run
}

/// Returns an RFC 3339 timestamp `days` before 2026-11-22T12:00:00Z (the pinned clock).
pub fn days_ago(days: f64) -> String {
    let base = chrono::DateTime::parse_from_rfc3339(NOW).unwrap();
    let t = base - chrono::Duration::microseconds((days * 86_400_000_000.0) as i64);
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, false)
}

/// The pinned clock for tests that depend on ages.
pub const NOW: &str = "2026-11-22T12:00:00+00:00";

/// How to install what the Python parity tests need (the versions `.ci/run` installs).
pub const PYTHON_INSTALL: &str = "python3 -m pip install pyyaml==6.0.3 rapidfuzz==3.14.3";

/// Returns whether python3 with PyYAML and RapidFuzz is here, for a Python parity test.
///
/// The parity tests compare kb with the reader and the scorer co-cli uses (PyYAML 6.0.3 and
/// RapidFuzz 3.14.3; co-cli is the Python tool whose file layout kb keeps). Every one of them
/// starts with `if !python_ready() { return; }`. When something is missing, [`skip`] decides:
/// on CI the test fails, elsewhere it is skipped with a visible line.
pub fn python_ready() -> bool {
    static MISSING: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let missing = MISSING.get_or_init(|| {
        let probe = "import importlib.util as u\n\
                     print(' '.join(p for m, p in (('yaml', 'pyyaml'), ('rapidfuzz', 'rapidfuzz')) if u.find_spec(m) is None))";
        match Command::new("python3").args(["-c", probe]).stderr(Stdio::null()).output() {
            Err(_) => Some("python3 is not installed".to_string()),
            Ok(out) if !out.status.success() => Some("python3 does not run".to_string()),
            Ok(out) => {
                let modules = String::from_utf8_lossy(&out.stdout).trim().to_string();
                (!modules.is_empty()).then(|| format!("python3 lacks {}", modules.replace(' ', " and ")))
            }
        }
    });
    match missing {
        None => true,
        Some(what) => {
            skip(&format!(
                "{what} (the Python parity tests need python3 with pyyaml and rapidfuzz; install them with `{PYTHON_INSTALL}`)"
            ));
            false
        }
    }
}

/// Skips the running test because `why` (something it needs is missing), visibly.
///
/// On CI (`CI` set, other than `false` or `0`) a skip is a failure: the test panics with `why`.
/// Elsewhere it writes `SKIPPED: <test>: <why>` to stderr with a direct write, which cargo test
/// does not capture (it captures `eprintln!` of a passing test), so the line shows in a plain
/// `cargo test` run, and `.ci/run` counts these lines in its closing total. The test then returns
/// early and libtest reports it as `ok`.
pub fn skip(why: &str) {
    let on_ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    let thread = std::thread::current();
    let test = thread.name().filter(|n| *n != "main").unwrap_or("a test");
    assert!(!on_ci, "{test} cannot run on CI: {why}");
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {test}: {why}");
}

/// Runs `python3 -c script` with `stdin` and returns its stdout; panics with its stderr on failure.
///
/// Call [`python_ready`] first.
pub fn python(script: &str, stdin: &str) -> String {
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 is required for the compatibility tests");
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "python3 failed ({PYTHON_INSTALL}): {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A small deterministic PRNG (xorshift64*), so random tests are reproducible without a crate.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Returns a number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    pub fn pick_str<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
    /// Returns `n` random alphanumeric characters.
    pub fn alnum(&mut self, n: usize) -> String {
        const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..n).map(|_| CHARS[self.below(CHARS.len())] as char).collect()
    }
}

/// Words unrelated enough that sentences built from them do not dedup against each other.
pub const WORDS: &[&str] = &[
    "apple", "bridge", "cobalt", "delta", "ember", "falcon", "granite", "harbor", "indigo", "jasper", "kettle",
    "lantern", "meadow", "nebula", "orchid", "pepper", "quartz", "raven", "saffron", "tundra", "umber", "velvet",
    "walnut", "xenon", "yonder", "zephyr", "anchor", "basil", "cactus", "dune", "egret", "fjord", "glacier", "hazel",
    "iris", "juniper", "kelp", "lotus", "maple", "nutmeg", "opal", "prairie", "quill", "reef", "sierra", "thistle",
];

/// Returns a sentence of `n` random words from [`WORDS`].
pub fn sentence(rng: &mut Rng, n: usize) -> String {
    (0..n).map(|_| *rng.pick(WORDS)).collect::<Vec<_>>().join(" ")
}

/// Copies `from` into `to`, leaving out kb's derived and local state.
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "cache" || name == "state" {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Returns a file kb generates, as SPEC §15.1 spells it: `front` (frontmatter or nothing), the
/// marker line naming `source` with the first 16 hex digits of the SHA-256 of the file without
/// that line, and `rest`. Computed here, not by kb, so a test checks kb's hash.
pub fn sealed(front: &str, source: &str, rest: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{front}{rest}").as_bytes());
    let hash: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{front}<!-- kb: generated from {source}; edit {source}, not this file; sha256:{hash} -->\n{rest}")
}

/// Returns a standalone target holding `block` (the marker line, the block, a newline).
pub fn standalone(block: &str) -> String {
    sealed("", ".co-cli/knowledge", &format!("{block}\n"))
}

/// Runs kb with a deadline, killing it when it hangs: a FIFO must never block it.
pub fn kb_within(t: &TestEnv, args: &[&str], limit: std::time::Duration) -> Run {
    let start = std::time::Instant::now();
    let mut child = t
        .command(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            panic!("kb {args:?} hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
