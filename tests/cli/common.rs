//! A test environment: a temporary repository, a fixed HOME, a cleared environment.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A temporary repository with its own HOME, in which `kb` runs with a clean environment.
pub struct TestEnv {
    pub dir: tempfile::TempDir,
    pub envs: Vec<(String, String)>,
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
}

impl TestEnv {
    pub fn new() -> TestEnv {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("repo/.git")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        TestEnv { dir, envs: Vec::new() }
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().join("repo")
    }
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    pub fn memories(&self) -> PathBuf {
        self.root().join(".co-cli/knowledge/memories")
    }

    pub fn env(mut self, k: &str, v: &str) -> TestEnv {
        self.envs.push((k.into(), v.into()));
        self
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kb"));
        cmd.args(args)
            .current_dir(self.root())
            .env_clear()
            .env("HOME", self.home())
            .env("PATH", std::env::var("PATH").unwrap_or_default());
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
    pub fn kb_stdin(&self, args: &[&str], stdin: Option<&str>) -> Run {
        let mut cmd = self.command(args);
        cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn kb");
        if let Some(input) = stdin {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        }
        let out: Output = child.wait_with_output().unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Writes a file under the root, creating folders.
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.root().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
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

    pub fn read(&self, path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }
}

/// Returns an RFC 3339 timestamp `days` before 2026-11-22T12:00:00Z (the pinned clock).
pub fn days_ago(days: f64) -> String {
    let base = chrono::DateTime::parse_from_rfc3339(NOW).unwrap();
    let t = base - chrono::Duration::microseconds((days * 86_400_000_000.0) as i64);
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, false)
}

/// The pinned clock for tests that depend on ages.
pub const NOW: &str = "2026-11-22T12:00:00+00:00";
