//! Whole-process benchmark of the core commands (SPEC §7), on a fresh clone and warm.
//!
//! Generates N memories of co-cli's shape (60–200 characters, 0–3 tags, 5 % protected, created
//! over the last 60 days) in a temporary repository, with a project `context.md` of about 4 KiB,
//! a global one of about 1.5 KiB and 24 Copilot records, then times `kb list`, `kb recall`,
//! `kb save` (a unique text, and a near-duplicate that consolidates), `kb check` and
//! `kb context` as separate processes, each twice per round:
//!
//! - **first run** (a fresh clone): `.co-cli/cache/` is deleted just before the run, as after a
//!   `git clone`, so the run finds no kb cache, reads every file and builds the cache;
//! - **warm**: the next run, on the cache the first one built.
//!
//! The page cache is warm for both. The files are aged past kb's 2 s racy-mtime margin before
//! any run (a cache built on younger files is re-verified), so a warm run reads nothing. For each
//! command and kind of run it prints the median wall time, the median CPU time (user + system:
//! steadier than wall time on a busy machine), the peak RSS (the largest of the runs), and the
//! floor: a minimal process that only lists and reads the memory files. Every timed run sets
//! `KB_DEBUG_STATS`, and the bench checks kb's `kb-stats:` lines: each first run must read every
//! file, take none from a cache and write the cache; each warm run may read at most
//! `WARM_READ_SLACK` files (the near-duplicate save rewrites one). It also checks that
//! `kb list | head -1` and `kb --json list | head -1` exit cleanly (status 0, nothing on stderr)
//! when the pipe closes while kb is still writing.
//!
//! Run: `cargo build --release && cargo run --release --example bench -- [N...]`
//! (default N: 200 2000 10000 100000). Environment:
//!
//! - `KB`: the binary to time (default `target/release/kb`).
//! - `KB_BASELINE`: a second binary to compare with. Every measurement then runs the two
//!   interleaved on the same repository (A B, B A, A B, ...: each pair back to back, alternating
//!   which goes first), and the tables have a row per command with a column per binary, the
//!   ratio of the medians and the median of the per-pair ratios, for wall and CPU time.
//! - `RUNS`: runs per command and kind of run (default 9, 5 at N ≥ 100,000).
//!
//! CPU time and peak RSS come from `wait4`'s resource usage (Linux; the peak RSS is the number
//! GNU time reports as `%M`). The process exits with status 1 when a closed-pipe check or a
//! cache check fails.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WORDS: &[&str] = &[
    "user",
    "prefers",
    "python",
    "rust",
    "postgres",
    "database",
    "tests",
    "always",
    "run",
    "before",
    "commit",
    "async",
    "await",
    "callbacks",
    "typescript",
    "web",
    "api",
    "cache",
    "config",
    "deploy",
    "docker",
    "linting",
    "format",
    "with",
    "the",
    "for",
    "and",
    "on",
    "in",
    "uses",
    "team",
    "decided",
    "avoid",
    "mocking",
    "integration",
    "service",
    "layer",
    "errors",
    "logging",
    "metrics",
    "naming",
    "snake",
    "case",
    "modules",
    "review",
    "branch",
    "main",
    "release",
    "notes",
    "schema",
    "migration",
    "queue",
    "worker",
    "retry",
    "timeout",
    "http",
    "client",
];
const TAGS: &[&str] = &[
    "preference",
    "decision",
    "pattern",
    "correction",
    "context",
    "python",
    "rust",
    "database",
    "testing",
    "style",
    "infra",
    "api",
];

/// A small deterministic generator (xorshift64*), so every run benchmarks the same files.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn word(&mut self) -> &'static str {
        WORDS[self.below(WORDS.len() as u64) as usize]
    }
}

/// A sentence of `min..min + spread` characters that starts with `lead`.
fn words(rng: &mut Rng, lead: &str, min: usize, spread: u64) -> String {
    let target = min + rng.below(spread) as usize;
    let mut s = lead.to_string();
    while s.len() < target {
        s.push(' ');
        s.push_str(rng.word());
    }
    s
}

fn sentence(rng: &mut Rng, serial: usize) -> String {
    words(rng, &format!("Note {serial}:"), 60, 141)
}

/// A context file of about `bytes` bytes: frontmatter, a title, and sections of bullets.
fn context_file(rng: &mut Rng, title: &str, bytes: usize) -> String {
    let mut s = format!("---\nversion: 1\nupdated: '2026-11-20T10:00:00+00:00'\n---\n\n# {title}\n");
    let mut section = 0;
    while s.len() < bytes {
        if section % 8 == 0 {
            s.push_str(&format!("\n## {} {}\n\n", rng.word(), section / 8 + 1));
        }
        section += 1;
        s.push_str(&words(rng, "-", 60, 80));
        s.push_str(".\n");
    }
    s
}

/// Writes N memories, the project and global `context.md` and 24 Copilot records.
fn generate(root: &Path, config: &Path, n: usize) {
    let dir = root.join(".co-cli/knowledge/memories");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ n as u64);
    let now = chrono::Utc::now();
    for id in 1..=n {
        let text = sentence(&mut rng, id);
        let mut tags: Vec<String> = Vec::new();
        for _ in 0..rng.below(4) {
            let t = TAGS[rng.below(TAGS.len() as u64) as usize].to_string();
            if !tags.contains(&t) {
                tags.push(t);
            }
        }
        let age = chrono::Duration::seconds(rng.below(60 * 86_400) as i64);
        let mut file = kb::new_memory_file(id as u64, &tags, None, &text, now - age);
        if rng.below(100) < 5 {
            file = file.replacen("id: ", "decay_protected: true\nid: ", 1);
        }
        std::fs::write(dir.join(kb::memory_file_name(id as u64, &text)), file).unwrap();
    }
    // The always-loaded context: within its budgets (project 7 KiB, global 3 KiB, 10 KiB in all).
    std::fs::write(root.join(".co-cli/knowledge/context.md"), context_file(&mut rng, "Project context", 4096)).unwrap();
    let global = config.join("co-cli/knowledge");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::write(global.join("context.md"), context_file(&mut rng, "Global context", 1536)).unwrap();
    let mut jsonl = String::new();
    for i in 0..24 {
        let fact = words(&mut rng, &format!("Fact {i}:"), 60, 60);
        let line = serde_json::json!({
            "id": format!("mem-{i:08x}"),
            "subject": format!("subject-{}", i % 6),
            "fact": fact,
            "citations": [format!("src/{}.rs:{}", rng.word(), 1 + rng.below(900))],
            "reason": "Keeps the build green.",
            "category": "general",
            "source": {"agent": "kb"},
            "created": format!("2026-11-{:02}T10:00:00+00:00", 1 + i % 20),
        });
        jsonl.push_str(&line.to_string());
        jsonl.push('\n');
    }
    std::fs::create_dir_all(root.join(".github")).unwrap();
    std::fs::write(root.join(".github/copilot-memories.jsonl"), jsonl).unwrap();
}

/// Decay is kept out of the way, as in co-cli's own measurement.
const MAX_COUNT: (&str, &str) = ("CO_CLI_MEMORY_MAX_COUNT", "1000000000");

/// Files a warm run may read: the near-duplicate save rewrites the memory it consolidates into,
/// so the next scan reads that one again.
const WARM_READ_SLACK: u64 = 2;

/// What one scan of the memories folder did: kb's `kb-stats:` line (with `KB_DEBUG_STATS`).
#[derive(Clone, Copy, Debug, Default)]
struct Scan {
    files: u64,
    read: u64,
    cached: u64,
    written: bool,
}

/// Parses `kb-stats: files=N read=R cached=C racy=Y cache_written=yes|no`.
fn parse_scan(line: &str) -> Option<Scan> {
    let rest = line.strip_prefix("kb-stats:")?;
    let mut scan = Scan::default();
    for field in rest.split_whitespace() {
        let (key, value) = field.split_once('=')?;
        match key {
            "files" => scan.files = value.parse().ok()?,
            "read" => scan.read = value.parse().ok()?,
            "cached" => scan.cached = value.parse().ok()?,
            "cache_written" => scan.written = value == "yes",
            _ => {}
        }
    }
    Some(scan)
}

/// One timed process run.
struct Sample {
    /// Wall time, ms.
    wall: f64,
    /// User + system CPU time, ms (where `wait4` is available).
    cpu: Option<f64>,
    /// Peak RSS, KiB (where `wait4` is available).
    rss: Option<u64>,
    /// The scans of the memories folder the run reported.
    scans: Vec<Scan>,
}

impl Sample {
    /// A first run: its first scan found no cache (read every file, took none from a cache) and
    /// one of its scans wrote the cache.
    fn built_cache(&self) -> bool {
        self.scans.first().is_some_and(|s| s.cached == 0 && s.read == s.files) && self.scans.iter().any(|s| s.written)
    }

    /// The most files one of its scans read.
    fn most_read(&self) -> u64 {
        self.scans.iter().map(|s| s.read).max().unwrap_or(0)
    }
}

/// Waits for a child with `wait4`, for its CPU time and peak RSS as well as its exit status.
#[cfg(target_os = "linux")]
mod rusage {
    use std::ffi::{c_int, c_long};

    #[repr(C)]
    #[derive(Default)]
    struct Timeval {
        sec: c_long,
        usec: c_long,
    }

    #[repr(C)]
    #[derive(Default)]
    struct Rusage {
        utime: Timeval,
        stime: Timeval,
        maxrss: c_long,
        rest: [c_long; 13],
    }

    unsafe extern "C" {
        fn wait4(pid: c_int, status: *mut c_int, options: c_int, rusage: *mut Rusage) -> c_int;
    }

    /// Reaps `child`: whether it exited with status 0, its user + system CPU time in ms and its
    /// peak RSS in KiB.
    pub fn wait(child: std::process::Child) -> (bool, f64, u64) {
        let pid = child.id() as c_int;
        let (mut status, mut usage) = (0, Rusage::default());
        loop {
            // SAFETY: `pid` is a child of this process that nothing has reaped (std reaps only in
            // `wait` and `try_wait`), and both pointers are valid for writes.
            if unsafe { wait4(pid, &mut status, 0, &mut usage) } == pid {
                break;
            }
            let e = std::io::Error::last_os_error();
            assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "wait4: {e}");
        }
        let ms = |t: &Timeval| t.sec as f64 * 1000.0 + t.usec as f64 / 1000.0;
        let success = (status & 0x7f) == 0 && ((status >> 8) & 0xff) == 0;
        (success, ms(&usage.utime) + ms(&usage.stime), usage.maxrss as u64)
    }
}

/// Runs `cmd` to its end: whether it succeeded, and its wall time, CPU time and peak RSS.
fn timed(cmd: &mut Command) -> (bool, f64, Option<f64>, Option<u64>) {
    let start = Instant::now();
    let child = cmd.spawn().expect("run");
    #[cfg(target_os = "linux")]
    let (success, cpu, rss) = {
        let (success, cpu, rss) = rusage::wait(child);
        (success, Some(cpu), Some(rss))
    };
    #[cfg(not(target_os = "linux"))]
    let (success, cpu, rss) = {
        let mut child = child;
        (child.wait().expect("wait").success(), None, None)
    };
    (success, ms(start.elapsed()), cpu, rss)
}

/// The repository under test and the binaries that run on it.
struct Bench {
    kbs: Vec<PathBuf>,
    root: PathBuf,
    /// `XDG_CONFIG_HOME` of every run: holds the global `context.md`, and keeps the settings of
    /// the machine's user out.
    config: PathBuf,
    /// Where a timed run's stderr goes, to read its `kb-stats:` lines.
    stderr: PathBuf,
}

impl Bench {
    fn command(&self, kb: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(kb);
        cmd.args(args)
            .current_dir(&self.root)
            .env(MAX_COUNT.0, MAX_COUNT.1)
            .env("XDG_CONFIG_HOME", &self.config)
            .env_remove("KB_DEBUG_STATS")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }

    /// One timed run of `kb ARGS`, with `KB_DEBUG_STATS` set.
    fn run(&self, kb: &Path, args: &[&str]) -> Sample {
        let stderr = std::fs::File::create(&self.stderr).unwrap();
        let mut cmd = self.command(kb, args);
        cmd.env("KB_DEBUG_STATS", "1").stderr(stderr);
        let (success, wall, cpu, rss) = timed(&mut cmd);
        assert!(success || args[0] == "check", "kb {args:?} failed");
        let text = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let scans = text.lines().filter_map(parse_scan).collect();
        Sample { wall, cpu, rss, scans }
    }

    /// Runs `kb ARGS`, untimed.
    fn untimed(&self, kb: &Path, args: &[&str]) {
        self.command(kb, args).status().expect("run kb");
    }

    /// Deletes `.co-cli/cache/`, as in a fresh clone, where it is not committed.
    fn drop_cache(&self) {
        let cache = self.root.join(".co-cli/cache");
        match std::fs::remove_dir_all(&cache) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => panic!("remove {}: {e}", cache.display()),
            _ => assert!(!cache.exists()),
        }
    }

    /// Times `kb ARGS` `reps` times with each binary, interleaved: each round runs every binary,
    /// back to back and every other round in reverse order, so that neither always goes first.
    /// Each binary's turn is a first run (`.co-cli/cache/` deleted just before) then a warm one.
    /// `after` runs (untimed) after each run, with the binary just timed. Returns the first and
    /// the warm runs, per binary.
    fn measure(&self, reps: usize, argv: &[&str], after: &dyn Fn(&Path)) -> [Vec<Vec<Sample>>; 2] {
        let mut first: Vec<Vec<Sample>> = self.kbs.iter().map(|_| Vec::with_capacity(reps)).collect();
        let mut warm: Vec<Vec<Sample>> = self.kbs.iter().map(|_| Vec::with_capacity(reps)).collect();
        for rep in 0..reps {
            let mut order: Vec<usize> = (0..self.kbs.len()).collect();
            if rep % 2 == 1 {
                order.reverse();
            }
            for i in order {
                let kb = &self.kbs[i];
                self.drop_cache();
                first[i].push(self.run(kb, argv));
                after(kb);
                warm[i].push(self.run(kb, argv));
                after(kb);
            }
        }
        [first, warm]
    }

    /// The size of the context block and its warnings, from `kb --json context`.
    fn context_size(&self, kb: &Path) -> String {
        let out = self.command(kb, &["--json", "context"]).stdout(Stdio::piped()).output().expect("run kb");
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("kb --json context");
        let sections: Vec<String> = json["sections"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| format!("{} {} bytes", s["title"].as_str().unwrap_or("?"), s["bytes"]))
            .collect();
        format!("a block of {} bytes ({}), warnings: {}", json["bytes"], sections.join(", "), json["warnings"])
    }

    /// Returns true when a read command of each binary leaves the kb cache as it was, so that
    /// the binaries really share one warm cache instead of rebuilding it for each other.
    fn shares_cache(&self) -> bool {
        let stamp = || std::fs::metadata(self.root.join(".co-cli/cache/memories.idx")).and_then(|m| m.modified()).ok();
        let before = stamp();
        for kb in &self.kbs {
            self.run(kb, &["list"]);
        }
        before.is_some() && stamp() == before
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The median wall and CPU time of `samples`, and the largest peak RSS (KiB, 0 when unknown).
fn summary(samples: &[Sample]) -> (f64, Option<f64>, u64) {
    let wall = median(samples.iter().map(|s| s.wall).collect());
    let cpu = samples.iter().map(|s| s.cpu).collect::<Option<Vec<f64>>>().map(median);
    let rss = samples.iter().filter_map(|s| s.rss).max().unwrap_or(0);
    (wall, cpu, rss)
}

fn megabytes(kib: u64) -> String {
    if kib > 0 { format!("{:.1} MB", kib as f64 / 1024.0) } else { "n/a".into() }
}

fn cpu_ms(cpu: Option<f64>) -> String {
    cpu.map_or("n/a".into(), |c| format!("{c:.1} ms"))
}

/// The floor: this program re-invoked to list and read every memory file, nothing else.
fn floor_child(dir: &Path) {
    let mut bytes = 0usize;
    for e in std::fs::read_dir(dir).unwrap() {
        bytes += std::fs::read(e.unwrap().path()).map(|b| b.len()).unwrap_or(0);
    }
    std::hint::black_box(bytes);
}

/// Runs of the floor process.
fn floor(me: &Path, dir: &Path, reps: usize) -> Vec<Sample> {
    (0..reps)
        .map(|_| {
            let mut cmd = Command::new(me);
            cmd.arg("--floor").arg(dir);
            let (success, wall, cpu, rss) = timed(&mut cmd);
            assert!(success, "the floor process failed");
            Sample { wall, cpu, rss, scans: Vec::new() }
        })
        .collect()
}

/// The binaries to time: `KB` (default `target/release/kb`), then `KB_BASELINE` when set.
fn binaries() -> Vec<PathBuf> {
    let default = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/kb");
    let kb = std::env::var_os("KB").map_or(default, PathBuf::from);
    let baseline = std::env::var_os("KB_BASELINE").map(PathBuf::from);
    std::iter::once(kb)
        .chain(baseline)
        .map(|path| {
            std::fs::canonicalize(&path)
                .unwrap_or_else(|_| panic!("no binary at {}: cargo build --release, or set KB", path.display()))
        })
        .collect()
}

/// Runs per command: `RUNS` when set, else 9 (5 at N ≥ 100,000).
fn runs(n: usize) -> usize {
    match std::env::var("RUNS") {
        Ok(r) => r.parse().ok().filter(|&r| r > 0).expect("RUNS: a positive number"),
        Err(_) if n >= 100_000 => 5,
        Err(_) => 9,
    }
}

/// `kb ARGS | head -1`: reads the first line, closes the pipe while kb is still writing (its output
/// at 10,000 memories is far larger than a pipe's buffer) and waits. Returns `None` when kb then
/// exited with status 0 and wrote nothing on stderr, else what it did.
fn closed_pipe(bench: &Bench, kb: &Path, args: &[&str]) -> Option<String> {
    let mut child = bench.command(kb, args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run kb");
    let mut first = String::new();
    // The reader, and with it the pipe's read end, is dropped at the end of this statement.
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).expect("read kb's output");
    let out = child.wait_with_output().expect("wait for kb");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let clean = out.status.success() && stderr.is_empty() && !first.is_empty();
    (!clean).then(|| format!("{}, stderr {:?}", out.status, stderr.trim()))
}

/// What the `kb-stats:` lines say about the runs of one command with one binary, and whether they
/// show first runs that built the cache and warm runs that used it.
fn check_runs(first: &[Sample], warm: &[Sample]) -> (String, bool) {
    let reported = first.iter().chain(warm).filter(|s| !s.scans.is_empty()).count();
    if reported == 0 {
        return ("no kb-stats line (no scan of the memories folder)".into(), true);
    }
    let built = first.iter().filter(|s| s.built_cache()).count();
    let files = first.iter().flat_map(|s| s.scans.first()).map(|s| s.files).max().unwrap_or(0);
    let most = warm.iter().map(Sample::most_read).max().unwrap_or(0);
    let unscanned = warm.iter().filter(|s| s.scans.is_empty()).count();
    let ok = built == first.len() && most <= WARM_READ_SLACK && unscanned == 0;
    let verdict = if ok { "ok" } else { "FAILS" };
    let text = format!(
        "{verdict}: {built} of {} first runs read all {files} files and wrote the cache; warm runs read at most {most} files{}",
        first.len(),
        if unscanned > 0 { format!(" ({unscanned} reported no scan)") } else { String::new() }
    );
    (text, ok)
}

/// One command's measurement: its name and its first and warm runs per binary.
type Rows = Vec<(&'static str, [Vec<Vec<Sample>>; 2])>;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--floor") {
        floor_child(Path::new(&args[1]));
        return;
    }
    let sizes: Vec<usize> = if args.is_empty() {
        vec![200, 2_000, 10_000, 100_000]
    } else {
        args.iter().map(|a| a.parse().expect("N")).collect()
    };
    let kbs = binaries();
    let paired = kbs.len() == 2;
    let names: &[&str] = if paired { &["KB", "KB_BASELINE"] } else { &["kb"] };
    let me = std::env::current_exe().unwrap();
    // The table lines of the first runs and of the warm runs, printed at the end.
    let mut tables: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    let mut notes = Vec::new();
    let mut all_ok = true;
    for n in sizes {
        let tmp = tempfile::tempdir().unwrap();
        let bench = Bench {
            kbs: kbs.clone(),
            root: tmp.path().join("repo"),
            config: tmp.path().join("config"),
            stderr: tmp.path().join("stderr"),
        };
        eprintln!("N = {n}: generating");
        generate(&bench.root, &bench.config, n);
        let dir = bench.root.join(".co-cli/knowledge/memories");
        let reps = runs(n);
        // As in a real repository: `kb init` has run (it keeps the context.md written above).
        bench.untimed(&kbs[0], &["init"]);
        // Let the files age past kb's racy-mtime margin, as the files of a clone have by its
        // first command; then warm the page cache and kb's cache.
        std::thread::sleep(Duration::from_millis(2500));
        for kb in &kbs {
            for argv in [&["list"][..], &["list"], &["context"]] {
                bench.run(kb, argv);
            }
        }
        notes.push(format!("N = {n}: context: {}", bench.context_size(&kbs[0])));
        if paired && !bench.shares_cache() {
            eprintln!("warning: N = {n}: the two binaries rewrite each other's kb cache");
        }
        let floor = floor(&me, &dir, reps);
        eprintln!("N = {n}: timing, {reps} rounds per command");
        let mut rows: Rows = Vec::new();
        rows.push(("list", bench.measure(reps, &["list"], &|_| {})));
        rows.push(("recall", bench.measure(reps, &["recall", "postgres"], &|_| {})));
        let unique_id = (n + 1).to_string();
        let forget = |kb: &Path| bench.untimed(kb, &["forget", &unique_id]);
        let unique = ["save", "Zebra quokka narwhal axolotl pangolin okapi capybara tapir wombat"];
        rows.push(("save (unique)", bench.measure(reps, &unique, &forget)));
        // A near-duplicate of a fresh memory: the consolidation path.
        let base = "The deploy pipeline runs integration tests on every branch before release";
        bench.untimed(&kbs[0], &["save", base]);
        let near = ["save", "The deploy pipeline runs integration tests on every branch before a release"];
        rows.push(("save (near-duplicate)", bench.measure(reps, &near, &|_| {})));
        rows.push(("check", bench.measure(reps, &["check"], &|_| {})));
        rows.push(("context", bench.measure(reps, &["context"], &|_| {})));

        for (what, [first, warm]) in &rows {
            for (i, name) in names.iter().enumerate() {
                let (text, ok) = check_runs(&first[i], &warm[i]);
                all_ok &= ok;
                let who = if paired { format!("{name}: ") } else { String::new() };
                notes.push(format!("N = {n}: {what}: {who}{text}"));
            }
        }
        let (fw, fc, frss) = summary(&floor);
        for (k, table) in tables.iter_mut().enumerate() {
            if paired {
                table.push(format!("| {n} | floor (read files) | {fw:.1} ms | | | | {} | | |", cpu_ms(fc)));
                let mut peak = [0u64; 2];
                for (what, runs) in &rows {
                    let (a, b) = (&runs[k][0], &runs[k][1]);
                    let ((wa, ca, ra), (wb, cb, rb)) = (summary(a), summary(b));
                    peak = [peak[0].max(ra), peak[1].max(rb)];
                    let wall_pairs = median(a.iter().zip(b).map(|(a, b)| a.wall / b.wall).collect());
                    let cpu_pairs = a
                        .iter()
                        .zip(b)
                        .map(|(a, b)| Some(a.cpu? / b.cpu?))
                        .collect::<Option<Vec<f64>>>()
                        .map_or("n/a".into(), |r| format!("{:.2}", median(r)));
                    table.push(format!(
                        "| {n} | {what} | {wa:.1} ms | {wb:.1} ms | {:.2} | {wall_pairs:.2} | {} | {} | {cpu_pairs} |",
                        wa / wb,
                        cpu_ms(ca),
                        cpu_ms(cb)
                    ));
                }
                let ratio = if peak[1] > 0 { format!("{:.2}", peak[0] as f64 / peak[1] as f64) } else { "n/a".into() };
                table.push(format!(
                    "| {n} | peak RSS | {} | {} | {ratio} | | | | |",
                    megabytes(peak[0]),
                    megabytes(peak[1])
                ));
            } else {
                table.push(format!("| {n} | floor (read files) | {fw:.1} ms | {} | {} |", cpu_ms(fc), megabytes(frss)));
                for (what, runs) in &rows {
                    let (wall, cpu, rss) = summary(&runs[k][0]);
                    table.push(format!("| {n} | {what} | {wall:.1} ms | {} | {} |", cpu_ms(cpu), megabytes(rss)));
                }
            }
        }
        for argv in [&["list"][..], &["--json", "list"]] {
            let verdicts: Vec<String> = kbs
                .iter()
                .zip(names)
                .map(|(kb, name)| match closed_pipe(&bench, kb, argv) {
                    None => format!("{name} exits cleanly"),
                    Some(what) => {
                        all_ok = false;
                        format!("{name} FAILS ({what})")
                    }
                })
                .collect();
            notes.push(format!("N = {n}: `kb {} | head -1`: {}", argv.join(" "), verdicts.join("; ")));
        }
    }
    let titles = [
        "First run on a fresh clone: .co-cli/cache/ deleted before each run (warm page cache)",
        "Warm: the run after a first run, on the cache it built",
    ];
    for (title, table) in titles.iter().zip(&tables) {
        println!("{title}\n");
        if paired {
            println!(
                "| N | command | KB | KB_BASELINE | KB / KB_BASELINE | paired ratio | CPU KB | CPU KB_BASELINE | CPU paired ratio |"
            );
            println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
        } else {
            println!("| N | command | wall (median) | CPU (median) | peak RSS (largest) |");
            println!("|---:|---|---:|---:|---:|");
        }
        for line in table {
            println!("{line}");
        }
        println!();
    }
    println!("whole processes; wall and CPU (user + system) time: medians; peak RSS: the largest of the runs");
    if paired {
        println!("KB = {}\nKB_BASELINE = {}", kbs[0].display(), kbs[1].display());
        println!("paired ratio: the median of KB / KB_BASELINE over the pairs of runs made back to back");
    } else {
        println!("kb = {}", kbs[0].display());
    }
    println!("\nkb-stats checks (KB_DEBUG_STATS) and closed pipes:");
    for note in notes {
        println!("{note}");
    }
    if !all_ok {
        std::process::exit(1);
    }
}
