//! Whole-process benchmark of recall with shared sources (the target and the results are in
//! docs/performance.md, Shared sources).
//!
//! Generates a project of N memories (default 10,000) twice, `alone` and `shared`, and two more
//! kb repositories of N memories each (other files of the same shape), `org` and `team`; the
//! setting `shared` of the `shared` project names both as plain paths (read in place: the same
//! reading as a synced copy's, without git). After the files have aged past kb's racy-mtime
//! margin and one recall in each project has warmed the caches, it times `kb recall QUERY` in each
//! project, the two in turn, `RUNS` times per query (default 21), and prints each query's
//! medians and their ratio, then the ratio of the summed medians (the target: ≤ 1.3).
//!
//! `KEEP`: when set, the repositories stay on disk (their folder goes to stderr) for profiling.
//!
//! Run: `cargo build --release && cargo run --release --example shared_bench -- target/release/kb [N] [RUNS]`

#[path = "common/generate.rs"]
mod generate;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const QUERIES: &[&str] = &[
    "how do we configure the postgres connection pool for tests",
    "retry timeout http client",
    "release notes branch",
    "snake case naming modules",
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(kb) = args.get(1).and_then(|a| std::fs::canonicalize(a).ok()) else {
        eprintln!("usage: shared_bench KB_BINARY [N] [RUNS] (KB_BINARY must exist)");
        std::process::exit(2);
    };
    let n: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let runs: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(21);
    let mut dir = tempfile::tempdir().expect("tempdir");
    if std::env::var_os("KEEP").is_some() {
        // Left on disk for profiling by hand.
        dir.disable_cleanup(true);
        eprintln!("the repositories stay in {}", dir.path().display());
    }
    let home = dir.path().join("home");
    let config = home.join(".config/co-cli");
    std::fs::create_dir_all(config.join("knowledge")).unwrap();
    let alone = dir.path().join("alone");
    let shared = dir.path().join("shared");
    generate::generate_seeded(&alone, &config, n, 0);
    generate::generate_seeded(&shared, &config, n, 0);
    for (name, seed) in [("org", 1), ("team", 2)] {
        generate::generate_seeded(&dir.path().join(name), &config, n, seed);
    }
    let setting = r#"{"shared": [{"name": "org", "url": "../org"}, {"name": "team", "url": "../team"}]}"#;
    std::fs::write(shared.join(".co-cli/settings.json"), setting).unwrap();
    let kb_run = |root: &Path, args: &[&str]| -> Duration {
        let start = Instant::now();
        let out = Command::new(&kb)
            .args(args)
            .env("KB_ROOT", root)
            .env("HOME", &home)
            .env_remove("XDG_CACHE_HOME")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .output()
            .expect("kb runs");
        assert!(out.status.success(), "kb {args:?} failed in {}", root.display());
        start.elapsed()
    };
    // Let the files age past kb's racy-mtime margin (2 s), as a clone's have by its first
    // command: "warm" is a cache that trusts them.
    std::thread::sleep(Duration::from_millis(2500));
    for root in [&alone, &shared] {
        kb_run(root, &["recall", "postgres"]);
        kb_run(root, &["recall", "postgres"]);
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "N = {n} memories in the project and in each of 2 shared sources; {runs} runs each, whole process, warm\n"
    );
    println!("| query | project alone | with 2 shared sources | ratio |");
    println!("| --- | --- | --- | --- |");
    let (mut sum_alone, mut sum_shared) = (0.0, 0.0);
    for q in QUERIES {
        let words: Vec<&str> = std::iter::once("recall").chain(q.split(' ')).collect();
        let (mut a, mut s) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            a.push(kb_run(&alone, &words));
            s.push(kb_run(&shared, &words));
        }
        let (ma, msh) = (ms(median(&mut a)), ms(median(&mut s)));
        sum_alone += ma;
        sum_shared += msh;
        println!("| {q} | {ma:.1} ms | {msh:.1} ms | {:.2} |", msh / ma);
    }
    println!(
        "| all queries (sum of medians) | {sum_alone:.1} ms | {sum_shared:.1} ms | {:.2} (target ≤ 1.3) |",
        sum_shared / sum_alone
    );
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}
