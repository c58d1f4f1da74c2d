//! Whole-process benchmark of the core commands (SPEC §7).
//!
//! Generates N memories of co-cli's shape (60–200 characters, 0–3 tags, 5 % protected, created
//! over the last 60 days) in a temporary repository, then times `kb list`, `kb recall`,
//! `kb save` (a unique text, and a near-duplicate that consolidates) and `kb check` as separate
//! processes with a warm page cache and a warm kb cache, and prints the median of several runs, the
//! peak RSS (from GNU time, when installed) and the floor: a minimal process that only lists and
//! reads the files.
//!
//! Run: `cargo build --release && cargo run --release --example bench -- [N...]`
//! (default N: 200 2000 10000 100000).

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

/// One timed process run: wall time and peak RSS in KiB (when GNU time is available).
fn run(kb: &Path, root: &Path, args: &[&str], env: &[(&str, &str)]) -> (Duration, Option<u64>) {
    let gnu_time = Path::new("/usr/bin/time").exists();
    let rss_file = root.join(".rss");
    let mut cmd = if gnu_time {
        let mut c = Command::new("/usr/bin/time");
        c.arg("-f").arg("%M").arg("-o").arg(&rss_file).arg(kb);
        c
    } else {
        Command::new(kb)
    };
    cmd.args(args).current_dir(root).stdout(Stdio::null()).stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let start = Instant::now();
    let status = cmd.status().expect("run kb");
    let wall = start.elapsed();
    assert!(status.success() || args[0] == "check", "kb {args:?} failed");
    let rss = gnu_time.then(|| std::fs::read_to_string(&rss_file).ok()).flatten().and_then(|s| s.trim().parse().ok());
    (wall, rss)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

/// The floor: this program re-invoked to list and read every memory file, nothing else.
fn floor_child(dir: &Path) {
    let mut bytes = 0usize;
    for e in std::fs::read_dir(dir).unwrap() {
        bytes += std::fs::read(e.unwrap().path()).map(|b| b.len()).unwrap_or(0);
    }
    std::hint::black_box(bytes);
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
    let kb = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/kb");
    assert!(kb.exists(), "build first: cargo build --release");
    let me = std::env::current_exe().unwrap();
    println!("| N | floor (read files) | list | recall | save (unique) | save (near-duplicate) | check | peak RSS |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for n in sizes {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        generate(&root, n);
        let dir = root.join(".co-cli/knowledge/memories");
        let reps = if n >= 100_000 { 5 } else { 9 };
        // As in a real repository: `kb init` has run, so kb keeps its cache.
        Command::new(&kb).arg("init").current_dir(&root).stdout(Stdio::null()).status().unwrap();
        let big = [("CO_CLI_MEMORY_MAX_COUNT", "1000000000")];
        // Let the files age past kb's racy-mtime margin, as real files have; then warm the page
        // cache and kb's cache.
        std::thread::sleep(Duration::from_millis(2500));
        run(&kb, &root, &["list"], &big);
        run(&kb, &root, &["list"], &big);
        let mut peak = 0u64;
        let mut time = |argv: &[&str], after: &dyn Fn()| -> Duration {
            let mut walls = Vec::new();
            for _ in 0..reps {
                let (w, rss) = run(&kb, &root, argv, &big);
                peak = peak.max(rss.unwrap_or(0));
                walls.push(w);
                after();
            }
            median(walls)
        };
        let floor = {
            let mut walls = Vec::new();
            for _ in 0..reps {
                let start = Instant::now();
                Command::new(&me).arg("--floor").arg(&dir).status().unwrap();
                walls.push(start.elapsed());
            }
            median(walls)
        };
        let list = time(&["list"], &|| {});
        let recall = time(&["recall", "postgres"], &|| {});
        let unique_id = (n + 1).to_string();
        let forget = || {
            let _ = Command::new(&kb)
                .args(["forget", &unique_id])
                .current_dir(&root)
                .env("CO_CLI_MEMORY_MAX_COUNT", "1000000000")
                .stdout(Stdio::null())
                .status();
        };
        let save = time(&["save", "Zebra quokka narwhal axolotl pangolin okapi capybara tapir wombat"], &forget);
        // A near-duplicate of a fresh memory: the consolidation path.
        Command::new(&kb)
            .args(["save", "The deploy pipeline runs integration tests on every branch before release"])
            .current_dir(&root)
            .env("CO_CLI_MEMORY_MAX_COUNT", "1000000000")
            .stdout(Stdio::null())
            .status()
            .unwrap();
        let dup =
            time(&["save", "The deploy pipeline runs integration tests on every branch before a release"], &|| {});
        let check = time(&["check"], &|| {});
        let rss = if peak > 0 { format!("{:.1} MB", peak as f64 / 1024.0) } else { "n/a".into() };
        println!(
            "| {n} | {} | {} | {} | {} | {} | {} | {rss} |",
            ms(floor),
            ms(list),
            ms(recall),
            ms(save),
            ms(dup),
            ms(check)
        );
    }
    println!("\nmedian wall ms of whole processes; warm page cache and kb cache; peak RSS over all runs of that N");
}
