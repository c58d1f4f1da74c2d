//! The benchmarks' repository: N memories of the shape co-cli writes, a project and a global
//! `context.md` and 24 Copilot records, the same files on every run (a seeded generator).
//! Included by `bench.rs` and `mcp_bench.rs` (`#[path]`): not an example of its own.

use std::path::Path;

pub const WORDS: &[&str] = &[
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
pub const TAGS: &[&str] = &[
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
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn word(&mut self) -> &'static str {
        WORDS[self.below(WORDS.len() as u64) as usize]
    }
}

/// A sentence of `min..min + spread` characters that starts with `lead`.
pub fn words(rng: &mut Rng, lead: &str, min: usize, spread: u64) -> String {
    let target = min + rng.below(spread) as usize;
    let mut s = lead.to_string();
    while s.len() < target {
        s.push(' ');
        s.push_str(rng.word());
    }
    s
}

pub fn sentence(rng: &mut Rng, serial: usize) -> String {
    words(rng, &format!("Note {serial}:"), 60, 141)
}

/// A context file of about `bytes` bytes: frontmatter, a title, and sections of bullets.
pub fn context_file(rng: &mut Rng, title: &str, bytes: usize) -> String {
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
#[allow(dead_code)]
pub fn generate(root: &Path, config: &Path, n: usize) {
    generate_seeded(root, config, n, 0);
}

/// [`generate`] with other files for another `seed` (another repository of the same shape).
pub fn generate_seeded(root: &Path, config: &Path, n: usize, seed: u64) {
    let dir = root.join(".co-cli/knowledge/memories");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ n as u64 ^ seed.wrapping_mul(0x1000_0000_01b3));
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
        let cited = format!("src/{}.rs", rng.word());
        // The cited file exists with its line: a record citing a missing one is stale, left out
        // of what kb compiles (and the check at compile costs its stat and line count).
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join(&cited), "// generated\n".repeat(1000)).unwrap();
        let line = serde_json::json!({
            "id": format!("mem-{i:08x}"),
            "subject": format!("subject-{}", i % 6),
            "fact": fact,
            "citations": [format!("{cited}:{}", 1 + rng.below(900))],
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
