//! Benchmark of `kb diff` (docs/diff.md): a real git repository of N memories (the benchmarks'
//! generated repository) with two commits, the second changing 1 % of the memories, removing
//! 0.5 % and adding 0.5 %, and the agents claude, codex and windsurf set; the whole-process wall
//! time of `kb diff A B` (two revisions read through git), `kb diff A` (a revision against the
//! working tree) and `kb diff --markdown A B`, median of the runs. Prints a markdown table.
//!
//! Usage: `diff_bench KB_BINARY [N] [RUNS]` (defaults: 10,000 memories, 5 runs). Build with
//! `cargo build --release --example diff_bench`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

#[path = "common/generate.rs"]
mod generate;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(kb) = args.get(1).and_then(|a| std::fs::canonicalize(a).ok()) else {
        eprintln!("usage: diff_bench KB_BINARY [N] [RUNS] (KB_BINARY must exist)");
        std::process::exit(2);
    };
    let n: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let runs: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(5);
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("repo");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(home.join(".config")).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    generate::generate(&root, &home.join(".config"), n);
    std::fs::write(
        root.join(".co-cli/settings.json"),
        "{\"agents\": [\"claude\", \"codex\", \"windsurf\"], \"memory_max_count\": 1000000000}\n",
    )
    .unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "A"]);
    // The second commit: every 100th memory rewritten, every 200th removed, n/200 added.
    let memories = root.join(".co-cli/knowledge/memories");
    let mut names: Vec<String> = std::fs::read_dir(&memories)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let (mut changed, mut removed) = (0, 0);
    for (i, name) in names.iter().enumerate() {
        let path = memories.join(name);
        if i % 200 == 7 {
            std::fs::remove_file(&path).unwrap();
            removed += 1;
        } else if i % 100 == 3 {
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(&path, format!("{}, rewritten for the second commit\n", text.trim_end())).unwrap();
            changed += 1;
        }
    }
    let mut rng = generate::Rng(7);
    let added = n / 200;
    for k in 0..added {
        let id = (n + 1 + k) as u64;
        let text = generate::sentence(&mut rng, n + 1 + k);
        let file = kb::new_memory_file(id, &[], None, &text, chrono::Utc::now());
        std::fs::write(memories.join(kb::memory_file_name(id, &text)), file).unwrap();
    }
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "B"]);
    eprintln!("{n} memories; the second commit changes {changed}, removes {removed}, adds {added}");
    if std::env::var_os("DIFF_BENCH_KEEP").is_some() {
        eprintln!("kept: {}", root.display());
        let _ = dir.keep();
        return;
    }

    println!("| command (N = {n}) | runs | median | max |");
    println!("| --- | --- | --- | --- |");
    for (label, words) in [
        ("`kb diff main~1 main`", vec!["diff", "main~1", "main"]),
        ("`kb diff main~1` (against the working tree)", vec!["diff", "main~1"]),
        ("`kb diff --markdown main~1 main`", vec!["diff", "--markdown", "main~1", "main"]),
        ("`kb --json diff main~1 main`", vec!["--json", "diff", "main~1", "main"]),
    ] {
        // One run first: the working tree's memory cache, the page cache.
        run(&kb, &root, &home, &words);
        let mut times: Vec<f64> = (0..runs).map(|_| run(&kb, &root, &home, &words)).collect();
        times.sort_by(f64::total_cmp);
        println!("| {label} | {runs} | {:.0} ms | {:.0} ms |", times[times.len() / 2], times[times.len() - 1]);
    }
}

/// Runs `kb WORDS` in `root` and returns its wall time in ms; a failure ends the benchmark.
fn run(kb: &Path, root: &Path, home: &Path, words: &[&str]) -> f64 {
    let start = Instant::now();
    let out = Command::new(kb)
        .args(words)
        .current_dir(root)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("KB_ROOT", root)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("kb runs");
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    if !out.status.success() {
        eprintln!("kb {words:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        std::process::exit(1);
    }
    ms
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=bench", "-c", "user.email=bench@example.com", "-c", "commit.gpgsign=false"])
        .args(args)
        .stdout(Stdio::null())
        .status()
        .expect("git runs")
        .success();
    assert!(ok, "git {args:?}");
}
