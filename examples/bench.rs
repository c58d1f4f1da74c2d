//! Whole-process benchmark of the core commands (SPEC §7).
//!
//! Generates N memories of co-cli's shape (60–200 characters, 0–3 tags, 5 % protected, created
//! over the last 60 days) in a temporary repository, then times `kb list`, `kb recall`,
//! `kb save` (a unique text, and a near-duplicate that consolidates) and `kb check` as separate
//! processes with a warm page cache and a warm kb cache, and prints the median of several runs, the
//! peak RSS (from GNU time, when installed) and the floor: a minimal process that only lists and
//! reads the files. It also checks that `kb list | head -1` and `kb --json list | head -1` exit
//! cleanly (status 0, nothing on stderr) when the pipe closes while kb is still writing.
//!
//! Run: `cargo build --release && cargo run --release --example bench -- [N...]`
//! (default N: 200 2000 10000 100000). Environment:
//!
//! - `KB`: the binary to time (default `target/release/kb`).
//! - `KB_BASELINE`: a second binary to compare with. Every measurement then runs the two
//!   interleaved on the same repository and cache state (A B, B A, A B, ...: each pair back to
//!   back, alternating which goes first), and the table has a row per command with a column per
//!   binary, the ratio of the medians and the median of the per-pair ratios.
//! - `RUNS`: runs per command (default 9, 5 at N ≥ 100,000).
//!
//! The process exits with status 1 when a closed-pipe check fails.

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
}

fn sentence(rng: &mut Rng, serial: usize) -> String {
    let target = 60 + rng.below(141) as usize;
    let mut s = format!("Note {serial}:");
    while s.len() < target {
        s.push(' ');
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
    }
    s
}

fn generate(root: &Path, n: usize) {
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
}

/// Decay is kept out of the way, as in co-cli's own measurement.
const MAX_COUNT: (&str, &str) = ("CO_CLI_MEMORY_MAX_COUNT", "1000000000");

/// One timed process run: wall time and peak RSS in KiB (when GNU time is available).
fn run(kb: &Path, root: &Path, args: &[&str]) -> (Duration, Option<u64>) {
    let gnu_time = Path::new("/usr/bin/time").exists();
    let rss_file = root.join(".rss");
    let mut cmd = if gnu_time {
        let mut c = Command::new("/usr/bin/time");
        c.arg("-f").arg("%M").arg("-o").arg(&rss_file).arg(kb);
        c
    } else {
        Command::new(kb)
    };
    cmd.args(args).current_dir(root).env(MAX_COUNT.0, MAX_COUNT.1).stdout(Stdio::null()).stderr(Stdio::null());
    let start = Instant::now();
    let status = cmd.status().expect("run kb");
    let wall = start.elapsed();
    assert!(status.success() || args[0] == "check", "kb {args:?} failed");
    let rss = gnu_time.then(|| std::fs::read_to_string(&rss_file).ok()).flatten().and_then(|s| s.trim().parse().ok());
    (wall, rss)
}

/// Runs `kb ARGS` in `root`, untimed.
fn untimed(kb: &Path, root: &Path, args: &[&str]) {
    Command::new(kb)
        .args(args)
        .current_dir(root)
        .env(MAX_COUNT.0, MAX_COUNT.1)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run kb");
}

/// Times `kb ARGS` `reps` times with each binary, interleaved: each round runs every binary once,
/// back to back, and every other round in reverse order, so that neither always goes first.
/// `after` runs (untimed) after each run, with the binary just timed. Returns the wall times in ms
/// per binary and raises `peak` to the largest RSS seen per binary.
fn time(
    kbs: &[PathBuf],
    root: &Path,
    reps: usize,
    argv: &[&str],
    after: &dyn Fn(&Path),
    peak: &mut [u64],
) -> Vec<Vec<f64>> {
    let mut walls = vec![Vec::with_capacity(reps); kbs.len()];
    for rep in 0..reps {
        let mut order: Vec<usize> = (0..kbs.len()).collect();
        if rep % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let (wall, rss) = run(&kbs[i], root, argv);
            peak[i] = peak[i].max(rss.unwrap_or(0));
            walls[i].push(ms(wall));
            after(&kbs[i]);
        }
    }
    walls
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The floor: this program re-invoked to list and read every memory file, nothing else.
fn floor_child(dir: &Path) {
    let mut bytes = 0usize;
    for e in std::fs::read_dir(dir).unwrap() {
        bytes += std::fs::read(e.unwrap().path()).map(|b| b.len()).unwrap_or(0);
    }
    std::hint::black_box(bytes);
}

/// The median wall time in ms of the floor process.
fn floor(me: &Path, dir: &Path, reps: usize) -> f64 {
    let walls = (0..reps)
        .map(|_| {
            let start = Instant::now();
            Command::new(me).arg("--floor").arg(dir).status().unwrap();
            ms(start.elapsed())
        })
        .collect();
    median(walls)
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

/// Returns true when a read command of each binary leaves the kb cache as it was, so that the
/// binaries really share one warm cache instead of rebuilding it for each other.
fn shares_cache(kbs: &[PathBuf], root: &Path) -> bool {
    let stamp = || std::fs::metadata(root.join(".co-cli/cache/memories.idx")).and_then(|m| m.modified()).ok();
    let before = stamp();
    for kb in kbs {
        run(kb, root, &["list"]);
    }
    before.is_some() && stamp() == before
}

/// `kb ARGS | head -1`: reads the first line, closes the pipe while kb is still writing (its output
/// at 10,000 memories is far larger than a pipe's buffer) and waits. Returns `None` when kb then
/// exited with status 0 and wrote nothing on stderr, else what it did.
fn closed_pipe(kb: &Path, root: &Path, args: &[&str]) -> Option<String> {
    let mut child = Command::new(kb)
        .args(args)
        .current_dir(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kb");
    let mut first = String::new();
    // The reader, and with it the pipe's read end, is dropped at the end of this statement.
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).expect("read kb's output");
    let out = child.wait_with_output().expect("wait for kb");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let clean = out.status.success() && stderr.is_empty() && !first.is_empty();
    (!clean).then(|| format!("{}, stderr {:?}", out.status, stderr.trim()))
}

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
    if paired {
        println!("| N | command | KB | KB_BASELINE | KB / KB_BASELINE | paired ratio |");
        println!("|---:|---|---:|---:|---:|---:|");
    } else {
        println!(
            "| N | floor (read files) | list | recall | save (unique) | save (near-duplicate) | check | peak RSS |"
        );
        println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    }
    let mut pipe_notes = Vec::new();
    let mut pipes_clean = true;
    for n in sizes {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        generate(&root, n);
        let dir = root.join(".co-cli/knowledge/memories");
        let reps = runs(n);
        // As in a real repository: `kb init` has run, so kb keeps its cache.
        untimed(&kbs[0], &root, &["init"]);
        // Let the files age past kb's racy-mtime margin, as real files have; then warm the page
        // cache and kb's cache.
        std::thread::sleep(Duration::from_millis(2500));
        for kb in &kbs {
            run(kb, &root, &["list"]);
            run(kb, &root, &["list"]);
        }
        if paired && !shares_cache(&kbs, &root) {
            eprintln!("warning: N = {n}: the two binaries rewrite each other's kb cache; both run on a cold kb cache");
        }
        let mut peak = vec![0u64; kbs.len()];
        let floor = floor(&me, &dir, reps);
        let list = time(&kbs, &root, reps, &["list"], &|_| {}, &mut peak);
        let recall = time(&kbs, &root, reps, &["recall", "postgres"], &|_| {}, &mut peak);
        let unique_id = (n + 1).to_string();
        let forget = |kb: &Path| untimed(kb, &root, &["forget", &unique_id]);
        let unique = ["save", "Zebra quokka narwhal axolotl pangolin okapi capybara tapir wombat"];
        let save = time(&kbs, &root, reps, &unique, &forget, &mut peak);
        // A near-duplicate of a fresh memory: the consolidation path.
        untimed(&kbs[0], &root, &["save", "The deploy pipeline runs integration tests on every branch before release"]);
        let near = ["save", "The deploy pipeline runs integration tests on every branch before a release"];
        let dup = time(&kbs, &root, reps, &near, &|_| {}, &mut peak);
        let check = time(&kbs, &root, reps, &["check"], &|_| {}, &mut peak);
        let megabytes = |kib: u64| if kib > 0 { format!("{:.1} MB", kib as f64 / 1024.0) } else { "n/a".into() };
        let rows = [
            ("list", list),
            ("recall", recall),
            ("save (unique)", save),
            ("save (near-duplicate)", dup),
            ("check", check),
        ];
        if paired {
            println!("| {n} | floor (read files) | {floor:.1} ms | | | |");
            for (what, mut walls) in rows {
                let (b, a) = (walls.pop().unwrap(), walls.pop().unwrap());
                let pairs = a.iter().zip(&b).map(|(a, b)| a / b).collect();
                let (ma, mb) = (median(a), median(b));
                println!("| {n} | {what} | {ma:.1} ms | {mb:.1} ms | {:.2} | {:.2} |", ma / mb, median(pairs));
            }
            let ratio = if peak[1] > 0 { format!("{:.2}", peak[0] as f64 / peak[1] as f64) } else { "n/a".into() };
            println!("| {n} | peak RSS | {} | {} | {ratio} | |", megabytes(peak[0]), megabytes(peak[1]));
        } else {
            let [list, recall, save, dup, check] = rows.map(|(_, mut walls)| median(walls.pop().unwrap()));
            println!(
                "| {n} | {floor:.1} | {list:.1} | {recall:.1} | {save:.1} | {dup:.1} | {check:.1} | {} |",
                megabytes(peak[0])
            );
        }
        for argv in [&["list"][..], &["--json", "list"]] {
            let verdicts: Vec<String> = kbs
                .iter()
                .zip(names)
                .map(|(kb, name)| match closed_pipe(kb, &root, argv) {
                    None => format!("{name} exits cleanly"),
                    Some(what) => {
                        pipes_clean = false;
                        format!("{name} FAILS ({what})")
                    }
                })
                .collect();
            pipe_notes.push(format!("N = {n}: `kb {} | head -1`: {}", argv.join(" "), verdicts.join("; ")));
        }
    }
    println!("\nmedian wall ms of whole processes; warm page cache and kb cache; peak RSS over all runs of that N");
    if paired {
        println!("KB = {}\nKB_BASELINE = {}", kbs[0].display(), kbs[1].display());
        println!("paired ratio: the median of KB / KB_BASELINE over the pairs of runs made back to back");
    }
    for note in pipe_notes {
        println!("{note}");
    }
    if !pipes_clean {
        std::process::exit(1);
    }
}
