//! Whole-process benchmark of the core commands, on a fresh clone and warm (the targets and the
//! results are in docs/performance.md).
//!
//! Generates N memories of the shape co-cli (the Python tool whose memory layout kb keeps) writes
//! (60–200 characters, 0–3 tags, 5 % protected, created over the last 60 days) in a temporary
//! repository, with a project `context.md` of about 4 KiB, a global one of about 1.5 KiB and 24
//! Copilot records, then times `kb list`, `kb recall` (one word, and a question in plain words), `kb save` (a unique text, and a
//! near-duplicate that consolidates), `kb check` and `kb context` as separate processes, each
//! twice per round:
//!
//! - **first run** (a fresh clone): `.co-cli/cache/` is deleted just before the run, as after a
//!   `git clone`, so the run finds no kb cache, reads every file and builds the cache;
//! - **warm**: the next run, on the cache the first one built.
//!
//! Every timed run's stdout is read to its end through a pipe, as a caller reads it (not
//! `/dev/null`, which a writer may take for free): `kb list` prints a line per memory. The page
//! cache is warm for both. The files are aged past kb's 2 s racy-mtime margin before
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
//! With `--layered` (the first argument), the bench times the layered context (docs/behaviour.md,
//! Layers) instead, on the same repository with the layers added (a mode of its own, so that the
//! default tables stay comparable with earlier runs): of the N memories, 1 % get `type: core_context` (for the
//! agents reviewer, coder, tester or every agent) and 5 % `importance: high` (learnings and
//! patterns), and the repository gets 200 decisions of every type and status (mostly active), 50
//! `.github/instructions/` files with varied `applyTo` globs (7 apply to `src/api/routes.rs`, 3 of
//! them always on) and an open session. It times the plain `kb context`,
//! `kb context --agent reviewer --for src/api/routes.rs --max-tokens 8000` and its `--json` form,
//! first runs and warm as above, interleaved (each round runs the three back to back, every
//! other round in reverse order, so that they see the same load); prints the ratio of each
//! layered median to the plain one and the paired ratio (the median of the ratios round by
//! round); and checks (exit status 1 otherwise) that the layered block holds the decisions, the
//! scoped instructions, the core context, the learnings and the session, within 8000 tokens.
//!
//! With `--heat`, the bench times access heat instead: the repository gets an access
//! log of 100,000 lines over 30 active days (half the accesses to 20 memories, 30 % to 1 % of
//! them), and the bench times `kb context --no-hot`, `kb context` (with Hot Memories), `kb heat`,
//! and `kb recall postgres` logging its accesses and not logging them (the log moved aside and a
//! folder put in its place: kb checks the path, warns and writes nothing), interleaved as above,
//! with the ratios of the Hot Memories context and of `kb heat` to `context --no-hot`, and of the
//! logging recall to the other.
//!
//! With `--agents`, the bench builds the layered repository and times `kb compile` of four
//! targets (the default block, the reviewer's for one file within 8,000 tokens, the coder's, the
//! decisions only) against the same with all eight agents of the setting `agents`, and
//! `kb compile --check`, warm (`agents_bench`).
//!
//! With `--audit [N [FILES [NEAR]]]`, the bench times `kb audit` (docs/behaviour.md, Audit)
//! instead: a real git repository of FILES tracked files (default 100,000: small Rust files, each
//! defining a few functions, committed at once, then one rename commit) with N memories (default
//! 10,000) of the usual shape, of which about a third cite a file (with a line), a fifth name a
//! function, 1 % name a make target, and a few cite a file or a function that is not there (so the
//! symbol pass reads every file), and NEAR more (default 0) that are near copies of some of them:
//! the same text with another line, file or function cited (a conflict), or a word added (a
//! restatement). It times `kb audit` on a fresh clone (`.co-cli/cache/` deleted before each run,
//! as in CI without a cache) and warm, `kb audit ID` (a memory with a path and a symbol that hold)
//! and `kb recall --verify` (paths and commands at use), warm (the second of two runs and after),
//! `RUNS` times each (default 5).
//!
//! Run: `cargo build --release && cargo run --release --example bench -- [--layered|--agents|--heat|--audit] [N...]`
//! (default N: 200 2000 10000 100000). Environment:
//!
//! - `KB`: the binary to time (default `target/release/kb`).
//! - `KB_BASELINE`: a second binary to compare with. Every measurement then runs the two
//!   interleaved on the same repository (A B, B A, A B, ...: each pair back to back, alternating
//!   which goes first), and the tables have a row per command with a column per binary, the
//!   ratio of the medians and the median of the per-pair ratios, for wall and CPU time.
//! - `RUNS`: runs per command and kind of run (default 9, 5 at N ≥ 100,000).
//! - `KEEP`: when set, each repository stays on disk (its path goes to stderr) for profiling.
//!
//! CPU time and peak RSS come from `wait4`'s resource usage (Linux; the peak RSS is the number
//! GNU time reports as `%M`). The process exits with status 1 when a closed-pipe check, a cache
//! check or the layered block's check fails.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "common/generate.rs"]
mod generate;
use generate::*;

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

    // SAFETY: this is wait4(2)'s C prototype, and `Rusage` is laid out as Linux's `struct rusage`
    // (two timevals of two longs each, then 14 longs: maxrss and 13 more).
    #[allow(unsafe_code)]
    unsafe extern "C" {
        fn wait4(pid: c_int, status: *mut c_int, options: c_int, rusage: *mut Rusage) -> c_int;
    }

    /// Reaps `child`: whether it exited with status 0, its user + system CPU time in ms and its
    /// peak RSS in KiB.
    pub fn wait(child: std::process::Child) -> (bool, f64, u64) {
        let pid = child.id() as c_int;
        let (mut status, mut usage) = (0, Rusage::default());
        loop {
            #[allow(unsafe_code)]
            // SAFETY: `pid` is a child of this process that nothing has reaped (std reaps only in
            // `wait` and `try_wait`), and both pointers are valid for writes.
            let reaped = unsafe { wait4(pid, &mut status, 0, &mut usage) };
            if reaped == pid {
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

/// Runs `cmd` to its end: whether it succeeded, and its wall time, CPU time and peak RSS. When
/// its stdout is piped, a thread reads it all meanwhile (as a caller that reads the output does:
/// the time then includes handing every byte over, where `/dev/null` would take it for free).
fn timed(cmd: &mut Command) -> (bool, f64, Option<f64>, Option<u64>) {
    let start = Instant::now();
    let mut child = cmd.spawn().expect("run");
    let reader = child.stdout.take().map(|mut out| {
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            let mut total = 0usize;
            while let Ok(n @ 1..) = std::io::Read::read(&mut out, &mut buf) {
                total += n;
            }
            total
        })
    });
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
    if let Some(reader) = reader {
        std::hint::black_box(reader.join().expect("read kb's output"));
    }
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

    /// One timed run of `kb ARGS`, with `KB_DEBUG_STATS` set, its output read through a pipe.
    fn run(&self, kb: &Path, args: &[&str]) -> Sample {
        let stderr = std::fs::File::create(&self.stderr).unwrap();
        let mut cmd = self.command(kb, args);
        cmd.env("KB_DEBUG_STATS", "1").stderr(stderr).stdout(Stdio::piped());
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

    /// Times each of `cmds` `reps` times with each binary, all interleaved: each round runs every
    /// command with every binary, back to back, every other round in reverse order; each turn is
    /// a first run (`.co-cli/cache/` deleted just before) then a warm one, inside the command's
    /// hook (called with `true` before the turn and `false` after it). So the commands of one
    /// round see the same load, and their ratios can be taken round by round. Returns, per
    /// command, the first and the warm runs per binary.
    fn measure_interleaved(&self, reps: usize, cmds: &[Cmd<'_>]) -> Vec<[Vec<Vec<Sample>>; 2]> {
        let empty = || -> Vec<Vec<Sample>> { self.kbs.iter().map(|_| Vec::with_capacity(reps)).collect() };
        let mut out: Vec<[Vec<Vec<Sample>>; 2]> = cmds.iter().map(|_| [empty(), empty()]).collect();
        for rep in 0..reps {
            let mut order: Vec<(usize, usize)> =
                (0..cmds.len()).flat_map(|c| (0..self.kbs.len()).map(move |b| (c, b))).collect();
            if rep % 2 == 1 {
                order.reverse();
            }
            for (c, b) in order {
                let kb = &self.kbs[b];
                let hook = cmds[c].hook.unwrap_or(&|_| {});
                hook(true);
                self.drop_cache();
                out[c][0][b].push(self.run(kb, cmds[c].argv));
                out[c][1][b].push(self.run(kb, cmds[c].argv));
                hook(false);
            }
        }
        out
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

/// A command of an interleaved measurement, with a hook around each of its turns.
struct Cmd<'a> {
    argv: &'a [&'a str],
    hook: Option<&'a dyn Fn(bool)>,
}

impl<'a> Cmd<'a> {
    fn plain(argv: &'a [&'a str]) -> Cmd<'a> {
        Cmd { argv, hook: None }
    }
}

/// The ratio table's lines: each of `rows` (name, first and warm runs per binary) over the
/// baseline `base`, as the ratio of the medians and the median of the ratios round by round.
fn ratio_lines(
    n: usize,
    names: &[&str],
    base: &[Vec<Vec<Sample>>; 2],
    rows: &[(&str, &[Vec<Vec<Sample>>; 2])],
) -> Vec<String> {
    let mut lines = Vec::new();
    for (k, kind) in ["first run", "warm"].iter().enumerate() {
        for (i, name) in names.iter().enumerate() {
            let plain = &base[k][i];
            let (pw, pc, _) = summary(plain);
            for (what, runs) in rows {
                let other = &runs[k][i];
                let (lw, lc, _) = summary(other);
                let cpu = pc.zip(lc).map_or("n/a".into(), |(p, l)| format!("{:.2}", l / p));
                let pairs = other.iter().zip(plain);
                let wall_pairs = median(pairs.clone().map(|(l, p)| l.wall / p.wall).collect());
                let cpu_pairs = pairs
                    .map(|(l, p)| Some(l.cpu? / p.cpu?))
                    .collect::<Option<Vec<f64>>>()
                    .map_or("n/a".into(), |r| format!("{:.2}", median(r)));
                lines.push(format!(
                    "| {n} | {kind} | {name} | {what} | {:.2} | {wall_pairs:.2} | {cpu} | {cpu_pairs} |",
                    lw / pw
                ));
            }
        }
    }
    lines
}

/// Prints a ratio table.
fn print_ratios(title: &str, lines: &[String], notes: &[String]) {
    println!("{title}\n");
    println!("| N | run | binary | command | wall ratio | paired wall ratio | CPU ratio | paired CPU ratio |");
    println!("|---:|---|---|---|---:|---:|---:|---:|");
    for line in lines {
        println!("{line}");
    }
    println!();
    for note in notes {
        println!("{note}");
    }
    println!();
}

// ---------------------------------------------------------------------------------------------
// Access heat (`--heat`).

/// Lines of the generated access log.
const ACCESS_LINES: usize = 100_000;
/// Active days the log spans (over 40 calendar days).
const ACCESS_DAYS: u64 = 30;

/// Writes `.co-cli/state/access.jsonl` of `ACCESS_LINES` lines, as `kb recall` and `kb show`
/// append them, over `ACCESS_DAYS` active days ending today, in time order: half the accesses go
/// to 20 memories, 30 % to 1 % of them, 18 % to any, 2 % to the Copilot records. Returns what it
/// wrote.
fn add_access_log(root: &Path, n: usize) -> String {
    let mut rng = Rng(0x0acc_e55e_d0c0_ffee ^ n as u64);
    let today = chrono::Utc::now().date_naive();
    // 30 of the last 40 calendar days, oldest first.
    let mut days: Vec<chrono::NaiveDate> = (0..40).map(|d| today - chrono::Duration::days(d)).collect();
    while days.len() as u64 > ACCESS_DAYS {
        let skip = 1 + rng.below(days.len() as u64 - 1) as usize;
        days.remove(skip);
    }
    days.reverse();
    let hot: Vec<u64> = (0..20).map(|_| 1 + rng.below(n as u64)).collect();
    let warm: Vec<u64> = (0..(n / 100).max(1)).map(|_| 1 + rng.below(n as u64)).collect();
    let per_day = ACCESS_LINES / days.len();
    let mut log = String::with_capacity(ACCESS_LINES * 70);
    let mut lines = 0;
    for (d, day) in days.iter().enumerate() {
        let count = if d + 1 == days.len() { ACCESS_LINES - lines } else { per_day };
        let mut seconds: Vec<u64> = (0..count).map(|_| rng.below(86_400 * 1_000_000)).collect();
        seconds.sort_unstable();
        for micros in seconds {
            let at = day.and_hms_opt(0, 0, 0).unwrap().and_utc() + chrono::Duration::microseconds(micros as i64);
            let at = at.format("%Y-%m-%dT%H:%M:%S%.6f+00:00");
            let roll = rng.below(100);
            let line = match roll {
                0..2 => format!("{{\"id\":\"mem-{:08x}\",\"store\":\"copilot\",\"at\":\"{at}\"}}", rng.below(24)),
                2..52 => format!("{{\"id\":{},\"store\":\"md\",\"at\":\"{at}\"}}", hot[rng.below(20) as usize]),
                52..82 => format!(
                    "{{\"id\":{},\"store\":\"md\",\"at\":\"{at}\"}}",
                    warm[rng.below(warm.len() as u64) as usize]
                ),
                _ => format!("{{\"id\":{},\"store\":\"md\",\"at\":\"{at}\"}}", 1 + rng.below(n as u64)),
            };
            log.push_str(&line);
            log.push('\n');
        }
        lines += count;
    }
    let state = root.join(".co-cli/state");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(state.join("access.jsonl"), &log).unwrap();
    format!("an access log of {lines} lines ({} KiB) over {} active days", log.len() / 1024, days.len())
}

/// Moves the access log aside and puts a folder in its place (`true`), so that kb cannot log
/// (it checks the path, warns, and writes nothing), or puts it back (`false`).
fn log_disabled(root: &Path, disabled: bool) {
    let log = root.join(".co-cli/state/access.jsonl");
    let aside = root.join(".co-cli/state/access.jsonl.aside");
    if disabled {
        std::fs::rename(&log, &aside).unwrap();
        std::fs::create_dir(&log).unwrap();
    } else {
        std::fs::remove_dir(&log).unwrap();
        std::fs::rename(&aside, &log).unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// The agents' files (`--agents`).

/// The four targets of the layered compile: the default block, the reviewer's block for one file
/// within 8,000 tokens, the coder's block, and a decisions-only block.
const FOUR_TARGETS: &str = r#"[".co-cli/knowledge/compiled.md", {"path": "REVIEW.md", "agent": "reviewer", "for": ["src/api/routes.rs"], "max_tokens": 8000}, {"path": "CODER.md", "agent": "coder"}, {"path": ".co-cli/knowledge/workers.md", "decisions_only": true}]"#;

/// Copies the folder `from` to `to` (files and folders; the repository has no symlinks).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type().unwrap().is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// Times `kb compile` on the layered repository with the four targets alone, against a copy of it
/// with the same targets and all eight agents (their blocks, and a rule file per scoped
/// instruction for the five agents that have rules), and `kb compile --check` on the copy: warm
/// runs (every file already current), interleaved round by round (every other round in reverse
/// order, so that the three see the same load). Returns the table's lines.
fn agents_bench(bench: &Bench, kb: &Path, n: usize, reps: usize) -> Vec<String> {
    let eight_root = bench.root.with_file_name("repo-agents");
    let write = |root: &Path, agents: bool| {
        let list = if agents {
            r#", "agents": ["claude","codex","copilot","cursor","gemini","windsurf","kiro","cline"]"#
        } else {
            ""
        };
        std::fs::write(root.join(".co-cli/settings.json"), format!("{{\"context_targets\": {FOUR_TARGETS}{list}}}"))
            .unwrap();
    };
    write(&bench.root, false);
    copy_tree(&bench.root, &eight_root);
    write(&eight_root, true);
    let eight = Bench {
        kbs: bench.kbs.clone(),
        root: eight_root.clone(),
        config: bench.config.clone(),
        stderr: bench.stderr.clone(),
    };
    bench.untimed(kb, &["compile"]);
    eight.untimed(kb, &["compile"]);
    let generated: usize = [".claude/rules", ".cursor/rules", ".windsurf/rules", ".kiro/steering", ".clinerules"]
        .iter()
        .map(|dir| std::fs::read_dir(eight_root.join(dir)).map_or(0, |d| d.count()))
        .sum();
    let cmds: [(&Bench, &[&str]); 3] =
        [(bench, &["compile"]), (&eight, &["compile"]), (&eight, &["compile", "--check"])];
    let mut times: [Vec<f64>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for round in 0..reps {
        let mut order = [0, 1, 2];
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            // `--check` exits 0 here (everything is current): `run` asserts success.
            times[i].push(cmds[i].0.run(kb, cmds[i].1).wall);
        }
    }
    let paired = |i: usize| median(times[i].iter().zip(&times[0]).map(|(a, b)| a / b).collect());
    let m: Vec<f64> = times.iter().map(|t| median(t.clone())).collect();
    let check_to_compile = median(times[2].iter().zip(&times[1]).map(|(a, b)| a / b).collect());
    vec![
        format!("N = {n}: layered repository, {reps} warm rounds; {generated} generated agent files"),
        "| command | median | ratio to four targets (medians / paired) |".to_string(),
        "| --- | --- | --- |".to_string(),
        format!("| `kb compile`, four targets | {:.1} ms | 1.00 |", m[0]),
        format!(
            "| `kb compile`, four targets + eight agents | {:.1} ms | {:.2} / {:.2} |",
            m[1],
            m[1] / m[0],
            paired(1)
        ),
        format!(
            "| `kb compile --check`, four targets + eight agents | {:.1} ms | {:.2} / {:.2} (to that compile: {check_to_compile:.2}) |",
            m[2],
            m[2] / m[0],
            paired(2)
        ),
    ]
}

// The layered context (`--layered`).

/// The agent, the file and the budget of the layered `kb context`.
const LAYERED: [&str; 7] = ["context", "--agent", "reviewer", "--for", "src/api/routes.rs", "--max-tokens", "8000"];
/// The token budget of `LAYERED`.
const LAYERED_BUDGET: u64 = 8000;
/// The headings a layered block must hold (nothing may be left out to fit the budget).
const LAYERED_HEADINGS: [&str; 5] = [
    "## Boundaries and Decisions",
    "## Scoped Instructions",
    "### Core Context",
    "### Learnings",
    "## Current Session",
];

/// Returns the memory file `file` with the frontmatter entries `keys` added (an entry already
/// there is kept as it is), all entries sorted by key as kb writes them. An entry is a `key:`
/// line and the `- item` lines of its block list.
fn with_keys(file: &str, keys: &[(&str, &str)]) -> String {
    let rest = file.strip_prefix("---\n").expect("frontmatter");
    let (yaml, body) = rest.split_once("\n---\n").expect("closed frontmatter");
    let mut entries: Vec<String> = Vec::new();
    for line in yaml.lines() {
        match entries.last_mut() {
            Some(entry) if line.starts_with("- ") || line.starts_with("  ") => {
                entry.push('\n');
                entry.push_str(line);
            }
            _ => entries.push(line.to_string()),
        }
    }
    let key_of = |e: &str| e.split_once(':').map_or(e.to_string(), |(k, _)| k.to_string());
    for (key, value) in keys {
        if !entries.iter().any(|e| key_of(e) == *key) {
            entries.push(format!("{key}: {value}"));
        }
    }
    entries.sort_by_key(|e| key_of(e));
    format!("---\n{}\n---\n{body}", entries.join("\n"))
}

/// Returns a co-cli timestamp (`+00:00`, whole seconds) `age` before `now`, single-quoted.
fn timestamp(now: chrono::DateTime<chrono::Utc>, age: chrono::Duration) -> String {
    format!("'{}'", (now - age).format("%Y-%m-%dT%H:%M:%S+00:00"))
}

/// The `applyTo` of the instruction files, and whether it applies to `src/api/routes.rs`: the
/// first 7 (3 always on, 4 specific) once each, the others in turn for the remaining 43 files.
const APPLY_TO: &[(&str, bool)] = &[
    ("**", true),
    ("**", true),
    ("**/*", true),
    ("src/api/**/*.rs", true),
    ("src/**/*.rs", true),
    ("src/{api,db}/*.rs", true),
    ("src/api/*.rs,src/api/**/mod.rs", true),
    ("src/db/**/*.rs", false),
    ("src/cli/*.rs", false),
    ("src/worker/**/*.rs", false),
    ("src/queue/*.rs", false),
    ("src/api/**/*.sql", false),
    ("migrations/**/*.sql", false),
    ("web/*.ts", false),
    ("web/**/*.tsx", false),
    ("web/components/**/*.{ts,tsx}", false),
    ("web/**/*.css,web/**/*.scss", false),
    ("tests/**/*.rs", false),
    ("benches/*.rs", false),
    ("docs/**/*.md", false),
    ("*.md", false),
    (".github/workflows/*.yml", false),
    ("scripts/*.sh", false),
    ("Cargo.toml,**/Cargo.toml", false),
    ("deploy/**/*.yaml", false),
    ("docker/Dockerfile*", false),
    ("proto/**/*.proto", false),
    ("src/api/v1/**/*.rs", false),
    ("python/**/*.py", false),
    ("python/tests/test_*.py", false),
];

/// Adds the context layers to the repository `generate` wrote: of the N memories, 1 % become
/// `type: core_context` (for the agents `reviewer`, `coder`, `tester` or none) and 5 %
/// `importance: high` learnings or patterns; 200 decisions of every type and status (mostly
/// active); 50 scoped instruction files; an open session. The memories keep their text, so the
/// memories folder has the same files as the plain bench's but for the added keys.
fn add_layers(root: &Path, n: usize) -> String {
    let mut rng = Rng(0x51_7cc1_b727_220a ^ n as u64);
    let now = chrono::Utc::now();
    let knowledge = root.join(".co-cli/knowledge");
    let (mut core, mut high) = (0, 0);
    for entry in std::fs::read_dir(knowledge.join("memories")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let id: u64 = name.split('-').next().and_then(|s| s.parse().ok()).expect("a memory file name");
        let agents = ["reviewer", "coder", "tester", ""];
        let keys: Vec<(&str, &str)> = if id % 100 == 50 {
            // 1 %: core context, a quarter each for reviewer, coder, tester and every agent.
            core += 1;
            let agent = agents[(id / 100 % 4) as usize];
            let mut keys = vec![("type", "core_context"), ("decay_protected", "true")];
            if !agent.is_empty() {
                keys.push(("agent", agent));
            }
            keys
        } else if id % 20 == 7 {
            // 5 %: high importance; a learning (`type` absent or written) or a pattern, a fifth of
            // them for the coder alone.
            high += 1;
            let mut keys = vec![("importance", "high")];
            match id / 20 % 3 {
                0 => keys.push(("type", "pattern")),
                1 => keys.push(("type", "learning")),
                _ => {}
            }
            if id / 20 % 5 == 4 {
                keys.push(("agent", "coder"));
            }
            keys
        } else {
            continue;
        };
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, with_keys(&text, &keys)).unwrap();
    }

    // 200 decisions, created over the last 120 days in id order: 70 % active, 10 % proposed,
    // 10 % superseded (by a later one), 5 % archived, 5 % rejected; types 30 % architectural,
    // 20 % scope, 25 % process, 25 % technical.
    let decisions = knowledge.join("decisions");
    std::fs::create_dir_all(&decisions).unwrap();
    let count = 200u64;
    for id in 1..=count {
        let roll = rng.below(100);
        let kind = match roll {
            0..30 => "architectural",
            30..50 => "scope",
            50..75 => "process",
            _ => "technical",
        };
        let roll = rng.below(100);
        let status = match roll {
            _ if id == count => "active",
            0..70 => "active",
            70..80 => "proposed",
            80..90 => "superseded",
            90..95 => "archived",
            _ => "rejected",
        };
        let created = timestamp(now, chrono::Duration::hours(((count - id) * 14 + 2) as i64));
        let mut tags: Vec<&str> = Vec::new();
        for _ in 0..rng.below(3) {
            let t = TAGS[rng.below(TAGS.len() as u64) as usize];
            if !tags.contains(&t) {
                tags.push(t);
            }
        }
        tags.sort_unstable();
        let mut text = words(&mut rng, &format!("Decision {id}:"), 40, 81);
        text.push('.');
        if rng.below(100) < 30 {
            text.push_str("\n\n");
            text.push_str(&words(&mut rng, "Because", 60, 101));
            text.push('.');
        }
        let mut yaml = format!("created: {created}\nid: {id}\nstatus: {status}\n");
        if status == "superseded" {
            yaml.push_str(&format!("superseded_by: {}\n", id + 1 + rng.below(count - id)));
        }
        if tags.is_empty() {
            yaml.push_str("tags: []\n");
        } else {
            yaml.push_str("tags:\n");
            for t in &tags {
                yaml.push_str(&format!("- {t}\n"));
            }
        }
        yaml.push_str(&format!("type: {kind}\n"));
        if matches!(status, "superseded" | "archived" | "rejected") {
            yaml.push_str(&format!("updated: {}\n", timestamp(now, chrono::Duration::hours(1))));
        }
        let file = format!("---\n{yaml}---\n\n{text}\n");
        std::fs::write(decisions.join(kb::memory_file_name(id, &text)), file).unwrap();
    }

    // 50 instruction files, a few in subfolders, each with a description and 3–6 bullets.
    let instructions = root.join(".github/instructions");
    let mut applying = 0;
    for i in 0..50 {
        let (glob, applies) = if i < 7 { APPLY_TO[i] } else { APPLY_TO[7 + (i - 7) % (APPLY_TO.len() - 7)] };
        applying += usize::from(applies);
        let folder = match i % 7 {
            3 => instructions.join("backend"),
            5 => instructions.join("frontend"),
            _ => instructions.clone(),
        };
        std::fs::create_dir_all(&folder).unwrap();
        let mut body = String::new();
        for _ in 0..3 + rng.below(4) {
            body.push_str(&words(&mut rng, "-", 50, 70));
            body.push_str(".\n");
        }
        let file = format!(
            "---\napplyTo: '{glob}'\ndescription: 'Conventions {i} for {}'\n---\n\n# Conventions {i}\n\n{body}",
            glob.replace('\'', "''")
        );
        std::fs::write(folder.join(format!("rules-{i:02}-{}.instructions.md", rng.word())), file).unwrap();
    }

    // The open session.
    let mut summary = String::new();
    for lead in ["Done:", "Next:", "Open question:"] {
        summary.push_str(&words(&mut rng, lead, 120, 100));
        summary.push_str(".\n\n");
    }
    let session = format!(
        "---\nfocus: Rate limits for the public API routes\nstarted: {}\nupdated: {}\n---\n\n{}",
        timestamp(now, chrono::Duration::hours(26)),
        timestamp(now, chrono::Duration::minutes(40)),
        summary.trim_end()
    );
    std::fs::write(knowledge.join("session.md"), format!("{session}\n")).unwrap();
    format!(
        "{core} core-context memories, {high} high-importance ones, {count} decisions, 50 instruction files \
         ({applying} apply to src/api/routes.rs), an open session"
    )
}

impl Bench {
    /// Checks the layered block of `kb`: `kb context` with `LAYERED` holds every heading of
    /// `LAYERED_HEADINGS`, and so does the text of its `--json` form, whose `tokens` are within
    /// the budget. Returns what the block holds, and whether it passed.
    fn layered_check(&self, kb: &Path) -> (String, bool) {
        let plain = self.command(kb, &LAYERED).stdout(Stdio::piped()).output().expect("run kb");
        let text = String::from_utf8_lossy(&plain.stdout);
        let mut json_args = vec!["--json"];
        json_args.extend(LAYERED);
        let out = self.command(kb, &json_args).stdout(Stdio::piped()).output().expect("run kb");
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("kb --json context");
        let json_text = json["text"].as_str().unwrap_or("");
        let tokens = json["tokens"].as_u64();
        let mut problems: Vec<String> = Vec::new();
        if !plain.status.success() || !out.status.success() {
            problems.push(format!("exit status {} / {}", plain.status, out.status));
        }
        for heading in LAYERED_HEADINGS {
            let line = |t: &str| t.lines().any(|l| l == heading);
            if !line(&text) {
                problems.push(format!("no `{heading}` in the text"));
            }
            if !line(json_text) {
                problems.push(format!("no `{heading}` in the JSON text"));
            }
        }
        match tokens {
            Some(t) if t <= LAYERED_BUDGET => {}
            other => problems.push(format!("tokens {other:?}, budget {LAYERED_BUDGET}")),
        }
        let layers: Vec<String> = json["layers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|l| l["items"].as_u64().unwrap_or(0) + l["dropped_items"].as_u64().unwrap_or(0) > 0)
            .map(|l| {
                let dropped = l["dropped_items"].as_u64().unwrap_or(0);
                let dropped = if dropped > 0 { format!(", {dropped} left out") } else { String::new() };
                format!("{} {} items {} tokens{dropped}", l["name"].as_str().unwrap_or("?"), l["items"], l["tokens"])
            })
            .collect();
        let ok = problems.is_empty();
        let verdict = if ok { "ok".to_string() } else { format!("FAILS ({})", problems.join("; ")) };
        let summary = format!(
            "{verdict}: {} tokens of {LAYERED_BUDGET}, {} bytes ({}), warnings: {}",
            tokens.map_or("?".into(), |t| t.to_string()),
            json["bytes"],
            layers.join(", "),
            json["warnings"]
        );
        (summary, ok)
    }
}

/// One command's measurement: its name and its first and warm runs per binary.
type Rows = Vec<(&'static str, [Vec<Vec<Sample>>; 2])>;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--floor") {
        floor_child(Path::new(&args[1]));
        return;
    }
    let mode = args.first().map(String::as_str).filter(|a| a.starts_with("--")).map(str::to_string);
    if mode.is_some() {
        args.remove(0);
    }
    if mode.as_deref() == Some("--audit") {
        audit_bench(&args);
        return;
    }
    let agents = mode.as_deref() == Some("--agents");
    let layered = mode.as_deref() == Some("--layered") || agents;
    let heat = mode.as_deref() == Some("--heat");
    assert!(mode.is_none() || layered || heat, "unknown mode {mode:?}: --layered, --agents, --heat or --audit");
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
    // With `--layered` or `--heat`: the ratios to the baseline command, per N and binary.
    let mut ratios: Vec<String> = Vec::new();
    let mut notes = Vec::new();
    let mut all_ok = true;
    for n in sizes {
        let mut tmp = tempfile::tempdir().unwrap();
        if std::env::var_os("KEEP").is_some() {
            // Left on disk for profiling by hand.
            tmp.disable_cleanup(true);
            eprintln!("N = {n}: the repository stays in {}", tmp.path().join("repo").display());
        }
        let bench = Bench {
            kbs: kbs.clone(),
            root: tmp.path().join("repo"),
            config: tmp.path().join("config"),
            stderr: tmp.path().join("stderr"),
        };
        eprintln!("N = {n}: generating");
        generate(&bench.root, &bench.config, n);
        if layered {
            let what = add_layers(&bench.root, n);
            notes.push(format!("N = {n}: layered repository: {what}"));
        }
        if heat {
            let what = add_access_log(&bench.root, n);
            notes.push(format!("N = {n}: {what}"));
        }
        let dir = bench.root.join(".co-cli/knowledge/memories");
        let reps = runs(n);
        // As in a real repository: `kb init` has run (it keeps the context.md written above).
        bench.untimed(&kbs[0], &["init"]);
        if agents {
            std::thread::sleep(Duration::from_millis(2500));
            for line in agents_bench(&bench, &kbs[0], n, reps.max(15)) {
                println!("{line}");
            }
            continue;
        }
        // Let the files age past kb's racy-mtime margin, as the files of a clone have by its
        // first command; then warm the page cache and kb's cache.
        std::thread::sleep(Duration::from_millis(2500));
        for kb in &kbs {
            for argv in [&["list"][..], &["list"], &["context"]] {
                bench.run(kb, argv);
            }
            if layered {
                bench.run(kb, &LAYERED);
            }
        }
        notes.push(format!("N = {n}: context: {}", bench.context_size(&kbs[0])));
        if layered {
            for (kb, name) in kbs.iter().zip(names) {
                let (text, ok) = bench.layered_check(kb);
                all_ok &= ok;
                let who = if paired { format!("{name}: ") } else { String::new() };
                notes.push(format!("N = {n}: `kb {}`: {who}{text}", LAYERED.join(" ")));
            }
        }
        if paired && !bench.shares_cache() {
            eprintln!("warning: N = {n}: the two binaries rewrite each other's kb cache");
        }
        let floor = floor(&me, &dir, reps);
        eprintln!("N = {n}: timing, {reps} rounds per command");
        let mut rows: Rows = Vec::new();
        if layered {
            let mut json = vec!["--json"];
            json.extend(LAYERED);
            let whats = ["context", "layered context", "layered context (--json)"];
            let cmds = [Cmd::plain(&["context"]), Cmd::plain(&LAYERED), Cmd::plain(&json)];
            rows.extend(whats.into_iter().zip(bench.measure_interleaved(reps, &cmds)));
            let others: Vec<_> = rows[1..].iter().map(|(w, r)| (*w, r)).collect();
            ratios.extend(ratio_lines(n, names, &rows[0].1, &others));
        } else if heat {
            let root = bench.root.clone();
            let disable = move |on: bool| log_disabled(&root, on);
            let recall = ["recall", "postgres"];
            let cmds = [
                Cmd::plain(&["context", "--no-hot"]),
                Cmd::plain(&["context"]),
                Cmd::plain(&["heat"]),
                Cmd::plain(&recall),
                Cmd { argv: &recall, hook: Some(&disable) },
            ];
            let whats = ["context --no-hot", "context (Hot Memories)", "heat", "recall (logging)", "recall (no log)"];
            rows.extend(whats.into_iter().zip(bench.measure_interleaved(reps, &cmds)));
            ratios.extend(ratio_lines(n, names, &rows[0].1, &[(rows[1].0, &rows[1].1), (rows[2].0, &rows[2].1)]));
            ratios.extend(ratio_lines(n, names, &rows[4].1, &[(rows[3].0, &rows[3].1)]));
        } else {
            rows.push(("list", bench.measure(reps, &["list"], &|_| {})));
            rows.push(("recall", bench.measure(reps, &["recall", "postgres"], &|_| {})));
            let question = ["recall", "how", "do", "we", "deploy", "the", "database", "schema"];
            rows.push(("recall (a question)", bench.measure(reps, &question, &|_| {})));
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
        }

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
    if layered {
        print_ratios(
            "Layered / plain: the median of the layered `kb context` over that of the plain one",
            &ratios,
            &[
                format!("layered context: kb {}", LAYERED.join(" ")),
                "paired ratio: the median of layered / plain over the rounds (each round runs the three commands back to back)".into(),
            ],
        );
    }
    if heat {
        print_ratios(
            "Heat: `kb context` with Hot Memories and `kb heat` over `kb context --no-hot`; `kb recall` logging over not logging",
            &ratios,
            &["paired ratio: the median of the ratios over the rounds (each round runs the five commands back to back)".into()],
        );
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

/// Writes the repository of `--audit`: `files` tracked Rust files committed at once (git
/// fast-import, much quicker than `git add` of 100,000 files), a rename commit, a Makefile; and
/// `n` memories, some citing the files, their lines and functions, a few citing what is not there;
/// then `near` near copies of those that cite something (see the top of this file).
fn generate_audit(root: &Path, n: usize, files: usize, near: usize) {
    std::fs::create_dir_all(root).unwrap();
    let git = |args: &[&str], stdin: Option<&[u8]>| {
        let mut cmd = Command::new("git");
        cmd.current_dir(root)
            .args(["-c", "user.email=bench@example.com", "-c", "user.name=Bench", "-c", "commit.gpgsign=false"])
            .args(args)
            .stdout(Stdio::null());
        if let Some(input) = stdin {
            cmd.stdin(Stdio::piped());
            let mut child = cmd.spawn().expect("git");
            std::io::Write::write_all(child.stdin.as_mut().unwrap(), input).unwrap();
            drop(child.stdin.take());
            assert!(child.wait().unwrap().success(), "git {args:?}");
        } else {
            assert!(cmd.status().expect("git").success(), "git {args:?}");
        }
    };
    git(&["init", "-q"], None);
    let mut rng = Rng(0x51ed_270b_27a4_4c31 ^ files as u64);
    let path_of = |i: usize| format!("src/mod_{:03}/file_{i}.rs", i / 1000);
    // fast-import stream: one commit with every file, then the working tree is checked out.
    let mut stream = Vec::new();
    stream.extend_from_slice(
        b"commit refs/heads/main\ncommitter Bench <bench@example.com> 1764000000 +0000\ndata 6\nstart\n",
    );
    for i in 0..files {
        let mut body = format!("//! Module {i}.\n\npub fn item_{i}() -> u32 {{\n    {i}\n}}\n\n");
        body.push_str(&format!("pub fn helper_{i}_{}() {{}}\n", rng.word()));
        body.push_str(&format!("// {}\n", words(&mut rng, "note:", 60, 120)));
        stream.extend_from_slice(format!("M 100644 inline {}\ndata {}\n", path_of(i), body.len()).as_bytes());
        stream.extend_from_slice(body.as_bytes());
        stream.push(b'\n');
    }
    let makefile = "build:\n\tcargo build\n\ntest:\n\tcargo test\n";
    stream.extend_from_slice(format!("M 100644 inline Makefile\ndata {}\n{makefile}\n", makefile.len()).as_bytes());
    git(&["fast-import", "--quiet"], Some(&stream));
    git(&["symbolic-ref", "HEAD", "refs/heads/main"], None);
    git(&["checkout", "-q", "-f", "main"], None);
    git(&["mv", &path_of(0), "src/renamed.rs"], None);
    git(&["commit", "-qm", "rename"], None);

    let dir = root.join(".co-cli/knowledge/memories");
    std::fs::create_dir_all(&dir).unwrap();
    let now = chrono::Utc::now();
    let mut citing: Vec<String> = Vec::new();
    for id in 1..=n {
        // Prose from a wide vocabulary (the 57 words of the other modes plus made-up words), so
        // that two memories are as alike as two real ones, not near-duplicates by construction.
        let target = 60 + rng.below(141) as usize;
        let mut text = String::new();
        while text.len() < target {
            if !text.is_empty() {
                text.push(' ');
            }
            if rng.below(2) == 0 {
                text.push_str(rng.word());
            } else {
                let len = 3 + rng.below(7) as usize;
                text.extend((0..len).map(|_| (b'a' + rng.below(26) as u8) as char));
            }
        }
        let f = 1 + rng.below(files as u64 - 1) as usize;
        match rng.below(100) {
            0..=32 => text.push_str(&format!(" (see `{}:{}`)", path_of(f), 1 + rng.below(5))),
            33..=52 => text.push_str(&format!(" (calls `item_{f}`)")),
            53 => text.push_str(" (`make build`)"),
            _ => {}
        }
        if id % 2000 == 0 {
            text.push_str(&format!(" (`src/gone_{id}.rs`, `removed_fn_{id}`)"));
        }
        let age = chrono::Duration::seconds(rng.below(60 * 86_400) as i64);
        let file = kb::new_memory_file(id as u64, &[], None, &text, now - age);
        std::fs::write(dir.join(kb::memory_file_name(id as u64, &text)), file).unwrap();
        if text.contains("(see `") || text.contains("(calls `") {
            citing.push(text);
        }
    }
    // Near copies (after the N, so that those are the same with or without them): another line,
    // file or function cited, or the same citation with a word added.
    for id in n + 1..=n + near {
        let base = &citing[rng.below(citing.len() as u64) as usize];
        let f = 1 + rng.below(files as u64 - 1) as usize;
        let text = match (rng.below(4), base.rfind(':')) {
            (0, Some(colon)) if base.contains("(see `") => format!("{}:{}`)", &base[..colon], 1 + rng.below(5)),
            (0 | 1, _) if base.contains("(see `") => {
                let at = base.rfind("(see `").unwrap();
                format!("{}(see `{}:{}`)", &base[..at], path_of(f), 1 + rng.below(5))
            }
            (0 | 1, _) => format!("{}(calls `item_{f}`)", &base[..base.rfind("(calls `").unwrap()]),
            (2, _) => format!("{} {}", rng.word(), base),
            _ => base.replacen(' ', &format!(" {} ", rng.word()), 1),
        };
        let age = chrono::Duration::seconds(rng.below(60 * 86_400) as i64);
        let file = kb::new_memory_file(id as u64, &[], None, &text, now - age);
        std::fs::write(dir.join(kb::memory_file_name(id as u64, &text)), file).unwrap();
    }
}

/// `--audit [N [FILES]]`: times `kb audit`, `kb audit ID` and `kb recall --verify` (see the top
/// of this file).
fn audit_bench(args: &[String]) {
    let n: usize = args.first().map_or(10_000, |a| a.parse().expect("N"));
    let files: usize = args.get(1).map_or(100_000, |a| a.parse().expect("FILES"));
    let near: usize = args.get(2).map_or(0, |a| a.parse().expect("NEAR"));
    let kb = binaries().remove(0);
    let mut tmp = tempfile::tempdir().unwrap();
    if std::env::var_os("KEEP").is_some() {
        tmp.disable_cleanup(true);
    }
    let root = tmp.path().join("repo");
    let t0 = Instant::now();
    eprintln!("audit: generating {files} tracked files and {n} + {near} memories in {}", root.display());
    generate_audit(&root, n, files, near);
    eprintln!("audit: generated in {:.1} s", t0.elapsed().as_secs_f64());
    let run = |argv: &[&str]| -> (f64, Option<f64>, Option<u64>, bool) {
        let mut cmd = Command::new(&kb);
        cmd.args(argv)
            .current_dir(&root)
            .env("XDG_CONFIG_HOME", tmp.path().join("config"))
            .env(MAX_COUNT.0, MAX_COUNT.1)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let (ok, wall, cpu, rss) = timed(&mut cmd);
        (wall, cpu, rss, ok)
    };
    Command::new(&kb).arg("init").current_dir(&root).stdout(Stdio::null()).status().unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    // The id of a memory whose references hold: one that cites a file and one that names a function.
    let id = (1..=n)
        .find(|id| {
            let name = std::fs::read_dir(root.join(".co-cli/knowledge/memories"))
                .unwrap()
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .find(|f| f.starts_with(&format!("{id:03}-")) || f.starts_with(&format!("{id}-")));
            name.is_some_and(|f| {
                std::fs::read_to_string(root.join(".co-cli/knowledge/memories").join(f)).unwrap().contains("`item_")
            })
        })
        .unwrap_or(1)
        .to_string();
    let reps = std::env::var("RUNS").ok().and_then(|r| r.parse().ok()).unwrap_or(5);
    // (what, arguments, whether each run starts without `.co-cli/cache/`)
    let cases: [(&str, Vec<&str>, bool); 4] = [
        ("audit, first run", vec!["audit"], true),
        ("audit", vec!["audit"], false),
        ("audit ID", vec!["audit", &id], false),
        ("recall --verify", vec!["recall", "--verify", "postgres", "deploy"], false),
    ];
    println!("kb audit on a git repository of {files} tracked files and {n} + {near} memories\n");
    println!("| command | wall (median) | CPU (median) | peak RSS (largest) |");
    println!("|---|---:|---:|---:|");
    let cache = root.join(".co-cli/cache");
    for (what, argv, fresh) in &cases {
        let sample = || {
            if *fresh {
                let _ = std::fs::remove_dir_all(&cache);
            }
            run(argv)
        };
        sample(); // warm the page cache (and kb's caches, for a warm run)
        let samples: Vec<(f64, Option<f64>, Option<u64>, bool)> = (0..reps).map(|_| sample()).collect();
        let wall = median(samples.iter().map(|s| s.0).collect());
        let cpu = samples.iter().map(|s| s.1).collect::<Option<Vec<f64>>>().map(median);
        let rss = samples.iter().filter_map(|s| s.2).max().unwrap_or(0);
        let exits: Vec<bool> = samples.iter().map(|s| s.3).collect();
        let first = if *fresh { " (first run)" } else { "" };
        println!("| kb {}{first} | {wall:.1} ms | {} | {} |", argv.join(" "), cpu_ms(cpu), megabytes(rss));
        eprintln!("audit: {what}: exit 0 in {} of {} runs", exits.iter().filter(|&&e| e).count(), exits.len());
    }
    println!("\nkb = {}", kb.display());
}
