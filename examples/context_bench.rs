//! Benchmark of the always-loaded context: the time of one compile of a 20 KiB
//! context, and the latency from a change to a context file until `kb watch` has rewritten the
//! target. Prints markdown tables. Run it through `bench/context.sh`, which builds in release mode.
//!
//! Usage: `context_bench KB_BINARY [CHANGES] [DEBOUNCE_MS]` (defaults: 60 changes, 200 ms).

use kb::Layout;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(kb) = args.get(1).and_then(|a| std::fs::canonicalize(a).ok()) else {
        eprintln!("usage: context_bench KB_BINARY [CHANGES] [DEBOUNCE_MS] (KB_BINARY must exist)");
        std::process::exit(2);
    };
    let changes: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(60);
    let debounce: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(200);

    println!("| measurement | runs | median | max |");
    println!("| --- | --- | --- | --- |");
    compile_times(&kb);
    watch_latency(&kb, changes, debounce);
}

/// A temporary repository with a fixed HOME.
struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    fn new() -> Repo {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("repo/.git")).unwrap();
        std::fs::create_dir_all(dir.path().join("repo/.co-cli/knowledge")).unwrap();
        std::fs::create_dir_all(dir.path().join("home/.config/co-cli/knowledge")).unwrap();
        Repo { dir }
    }
    fn root(&self) -> PathBuf {
        self.dir.path().join("repo")
    }
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    fn layout(&self) -> Layout {
        Layout { root: self.root(), config: Some(self.home().join(".config/co-cli")) }
    }
    fn project(&self) -> PathBuf {
        self.root().join(".co-cli/knowledge/context.md")
    }
    fn target(&self) -> PathBuf {
        self.root().join(".co-cli/knowledge/compiled.md")
    }
    fn kb(&self, kb: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(kb);
        c.args(args).current_dir(self.root()).env_clear().env("HOME", self.home());
        c
    }
}

/// Returns a context file whose body is about `bytes` bytes of headed paragraphs and code.
fn context(bytes: usize, tag: &str) -> String {
    let mut body = format!("# Context {tag}\n\n");
    for i in 1.. {
        let topic = format!(
            "## Topic {i}\n\nA rule about topic {i}: keep functions small, name things after what they do, \
             and test the behaviour rather than the implementation.\n\n```sh\nmake test-{i}\n```\n\n"
        );
        if body.len() + topic.len() > bytes {
            break;
        }
        body.push_str(&topic);
    }
    format!("---\nversion: 1\nupdated: '2026-11-22T12:00:00+00:00'\n---\n\n{}\n", body.trim_end())
}

/// Writes a 3 KiB global and a 17 KiB project context (20 KiB in all, under the 20,480-byte limit).
fn write_20k(repo: &Repo, tag: &str) {
    let global = repo.home().join(".config/co-cli/knowledge/context.md");
    std::fs::write(global, context(3 * 1024 - 200, "global")).unwrap();
    std::fs::write(repo.project(), context(17 * 1024, tag)).unwrap();
}

fn row(what: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let median = samples[samples.len() / 2];
    let max = samples[samples.len() - 1];
    println!("| {what} | {} | {:.2} ms | {:.2} ms |", samples.len(), ms(median), ms(max));
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// One compile of a 20 KiB context, in process (read, assemble, write) and as a whole `kb
/// compile` process.
fn compile_times(kb: &Path) {
    let repo = Repo::new();
    write_20k(&repo, "a");
    let layout = repo.layout();
    let targets = [kb::DEFAULT_CONTEXT_TARGET, "AGENTS.md"];
    fn pairs<'a>(targets: &[&'a str], text: Option<&'a str>) -> Vec<(&'a str, Option<&'a str>)> {
        targets.iter().map(|t| (*t, text)).collect()
    }
    let block = kb::build_context(&layout, false).expect("settings");
    let size = block.bytes;
    let mut build = Vec::new();
    let mut write = Vec::new();
    let mut same = Vec::new();
    for i in 0..200 {
        // Alternate the project text so that every other compile really rewrites both targets.
        write_20k(&repo, if i % 2 == 0 { "b" } else { "a" });
        let t = Instant::now();
        let block = kb::build_context(&layout, false).expect("settings");
        build.push(t.elapsed());
        let t = Instant::now();
        let (r, _) = kb::write_targets(&layout, &pairs(&targets, block.text.as_deref()));
        write.push(t.elapsed());
        assert!(r.iter().all(|r| r.is_ok()));
        let t = Instant::now();
        let block = kb::build_context(&layout, false).expect("settings");
        kb::write_targets(&layout, &pairs(&targets, block.text.as_deref()));
        same.push(t.elapsed());
    }
    row(&format!("build the block from a {size}-byte context (in process)"), build);
    row("write 2 changed targets, atomically with fsync (in process)", write);
    row("compile with unchanged targets: build + compare (in process)", same);

    // Over the 20,480-byte limit: the truncation path.
    std::fs::write(repo.project(), context(40 * 1024, "big")).unwrap();
    let mut trunc = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        let b = kb::build_context(&layout, false).expect("settings");
        trunc.push(t.elapsed());
        assert!(b.truncated);
    }
    row("build a 43 KiB context truncated to 20 KiB (in process)", trunc);

    write_20k(&repo, "a");
    let mut process = Vec::new();
    for i in 0..40 {
        write_20k(&repo, if i % 2 == 0 { "b" } else { "a" });
        let t = Instant::now();
        let st = repo.kb(kb, &["compile"]).stdout(Stdio::null()).stderr(Stdio::null()).status().unwrap();
        process.push(t.elapsed());
        assert!(st.success());
    }
    row("`kb compile` of a 20 KiB context, whole process", process);
}

/// Latency from the end of a write to a context file until the target holds the new text.
fn watch_latency(kb: &Path, changes: usize, debounce: u64) {
    let repo = Repo::new();
    write_20k(&repo, "start");
    let mut child = repo
        .kb(kb, &["watch", "--debounce", &debounce.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kb watch");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    for line in lines.by_ref() {
        if line.unwrap().starts_with("watching") {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    let target = repo.target();
    let mut samples = Vec::new();
    let mut jitter: u64 = 42;
    for i in 0..changes {
        let tag = format!("change-{i}");
        let text = context(17 * 1024, &tag);
        std::fs::write(repo.project(), &text).unwrap();
        let t = Instant::now();
        let needle = format!("# Context {tag}\n");
        loop {
            if std::fs::read_to_string(&target).is_ok_and(|t| t.contains(&needle)) {
                break;
            }
            assert!(t.elapsed() < Duration::from_secs(10), "no recompile for {tag}");
            std::thread::sleep(Duration::from_micros(250));
        }
        samples.push(t.elapsed());
        // Let the watcher go idle so that each change is its own batch; a varying pause keeps
        // the writes from falling into step with the debouncer's ticks.
        jitter = jitter.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_millis(debounce / 2 + 20 + (jitter >> 33) % 60));
    }
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let _ = child.wait();
    row(&format!("change → target rewritten by `kb watch --debounce {debounce}` (20 KiB context)"), samples);
}
