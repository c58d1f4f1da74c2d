//! `kb watch` with real file events: editors' save patterns, folders coming and going, malformed
//! files, its own writes, signals. Results are polled for (up to `WAIT`), never slept for: the
//! test machine is small and loaded.

use crate::common::TestEnv;
use crate::context::{PROJECT, context_file};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(10);
const COMPILED: &str = ".co-cli/knowledge/compiled.md";

/// A running `kb watch` whose stderr lines are collected as they come.
struct Watch {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Watch {
    /// Starts `kb watch --debounce 100 ARGS` and waits until it watches.
    fn start(env: &TestEnv, args: &[&str]) -> Watch {
        Watch::start_with(env, 100, args)
    }

    /// Starts `kb watch --debounce DEBOUNCE ARGS` and waits until it watches.
    fn start_with(env: &TestEnv, debounce: u64, args: &[&str]) -> Watch {
        let debounce = debounce.to_string();
        let mut all = vec!["watch", "--debounce", debounce.as_str()];
        all.extend_from_slice(args);
        let mut child = env
            .command(&all)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn kb watch");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        let w = Watch { child, lines };
        w.wait_line("watching");
        w
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Returns how many stderr lines start with `prefix`.
    fn count(&self, prefix: &str) -> usize {
        self.lines().iter().filter(|l| l.starts_with(prefix)).count()
    }

    /// Waits for a stderr line that contains `needle`.
    fn wait_line(&self, needle: &str) {
        let ok = poll(|| self.lines().iter().any(|l| l.contains(needle)));
        assert!(ok, "no stderr line with {needle:?} in {WAIT:?}: {:#?}", self.lines());
    }

    /// Waits until at least `n` recompiles have been reported.
    fn wait_recompiles(&self, n: usize) {
        let ok = poll(|| self.count("recompiled:") >= n);
        assert!(ok, "fewer than {n} recompiles in {WAIT:?}: {:#?}", self.lines());
    }

    /// Waits until no stderr line has come for 600 ms (the last recompile is reported), and
    /// returns the number of recompiles so far.
    fn settle(&self) -> usize {
        let mut last = (self.lines().len(), Instant::now());
        let ok = poll(|| {
            let n = self.lines().len();
            if n != last.0 {
                last = (n, Instant::now());
            }
            last.1.elapsed() > Duration::from_millis(600)
        });
        assert!(ok, "kb watch never settled: {:#?}", self.lines());
        self.count("recompiled:")
    }

    /// Sends a signal and returns the exit code.
    fn signal(mut self, sig: &str) -> i32 {
        let pid = self.child.id().to_string();
        let st = std::process::Command::new("kill").args([sig, &pid]).status().unwrap();
        assert!(st.success());
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            assert!(start.elapsed() < WAIT, "kb watch did not exit after {sig}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `f` every 20 ms for up to `WAIT`.
fn poll(mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < WAIT {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

/// Waits until the file at `p` contains `needle`.
fn wait_content(p: &Path, needle: &str) {
    let ok = poll(|| std::fs::read_to_string(p).is_ok_and(|t| t.contains(needle)));
    assert!(ok, "{} never contained {needle:?}: {:?}", p.display(), std::fs::read_to_string(p));
}

fn setup() -> (TestEnv, PathBuf) {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("Version one"));
    let out = env.root().join(COMPILED);
    (env, out)
}

#[test]
fn edit_in_place() {
    let (env, out) = setup();
    let w = Watch::start(&env, &[]);
    wait_content(&out, "Version one");
    assert_eq!(w.count("compiled;"), 1, "{:?}", w.lines());
    env.write(PROJECT, &context_file("Version two"));
    wait_content(&out, "Version two");
    w.wait_recompiles(1);
    let line = w.lines().into_iter().find(|l| l.starts_with("recompiled:")).unwrap();
    assert!(line.contains(".co-cli/knowledge/context.md changed"), "{line}");
    assert!(line.contains(" bytes;") && line.contains("1 written") && line.ends_with(" ms"), "{line}");
    assert_eq!(w.signal("-TERM"), 0);
}

#[test]
fn atomic_save_renames_over() {
    let (env, out) = setup();
    let _w = Watch::start(&env, &[]);
    let tmp = env.write(".co-cli/knowledge/.context.md.tmp1234", &context_file("Atomic"));
    std::fs::rename(tmp, env.root().join(PROJECT)).unwrap();
    wait_content(&out, "Atomic");
}

#[test]
fn vim_style_save() {
    let (env, out) = setup();
    let _w = Watch::start(&env, &[]);
    let ctx = env.root().join(PROJECT);
    let backup = env.root().join(".co-cli/knowledge/context.md~");
    // vim: a probe file, a swap file, rename the original to a backup, write anew, drop the backup.
    env.write(".co-cli/knowledge/4913", "");
    std::fs::remove_file(env.root().join(".co-cli/knowledge/4913")).unwrap();
    env.write(".co-cli/knowledge/.context.md.swp", "swap");
    std::fs::rename(&ctx, &backup).unwrap();
    std::fs::write(&ctx, context_file("Vim wrote this")).unwrap();
    std::fs::remove_file(&backup).unwrap();
    std::fs::remove_file(env.root().join(".co-cli/knowledge/.context.md.swp")).unwrap();
    wait_content(&out, "Vim wrote this");
}

#[test]
fn new_folder_with_a_file_in_it() {
    let env = TestEnv::new();
    // The only target is at the root, so nothing creates .co-cli/knowledge/ but the test.
    let cfg = env.home().join(".config/co-cli");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(cfg.join("settings.json"), r#"{"context_targets": ["OUT.md"]}"#).unwrap();
    let out = env.root().join("OUT.md");
    let w = Watch::start(&env, &[]);
    assert!(!env.root().join(".co-cli/knowledge").exists());
    // notify reports only the new folder, not the file created in it at once.
    env.write(PROJECT, &context_file("Born in a new folder"));
    wait_content(&out, "Born in a new folder");
    // A later edit inside the new folder is seen as well (the folder is now watched).
    env.write(PROJECT, &context_file("Edited later"));
    wait_content(&out, "Edited later");
    // A sub-folder of the memories folder: a recompile, nothing to write.
    let n = w.settle();
    env.write(".co-cli/knowledge/memories/sub/deeper/001-x.md", "---\nid: 1\n---\nx\n");
    w.wait_recompiles(n + 1);
}

#[test]
fn folder_removed_and_created_again() {
    let (env, out) = setup();
    let _w = Watch::start(&env, &[]);
    wait_content(&out, "Version one");
    let knowledge = env.root().join(".co-cli/knowledge");
    let moved = env.root().join("moved-away");
    std::fs::rename(&knowledge, &moved).unwrap();
    // The target went with the folder; kb writes it again, without the context.
    wait_content(&out, "");
    assert!(poll(|| std::fs::read_to_string(&out).is_ok_and(|t| t.is_empty())));
    std::fs::remove_dir_all(&moved).unwrap();
    env.write(PROJECT, &context_file("Recreated"));
    wait_content(&out, "Recreated");
}

#[test]
fn deleted_file() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("Project part"));
    let cfg = env.home().join(".config/co-cli/knowledge");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(cfg.join("context.md"), context_file("Global part")).unwrap();
    env.write(
        ".co-cli/settings.json",
        &format!(r#"{{"context_targets": [{{"path": "{COMPILED}", "global": true}}]}}"#),
    );
    let out = env.root().join(COMPILED);
    let _w = Watch::start(&env, &[]);
    wait_content(&out, "Project part");
    std::fs::remove_file(env.root().join(PROJECT)).unwrap();
    assert!(poll(|| std::fs::read_to_string(&out).is_ok_and(|t| !t.contains("Project part"))));
    assert!(std::fs::read_to_string(&out).unwrap().contains("Global part"));
    std::fs::remove_file(cfg.join("context.md")).unwrap();
    assert!(poll(|| std::fs::read_to_string(&out).is_ok_and(|t| t.is_empty())));
}

#[test]
fn malformed_yaml_then_fixed() {
    let (env, out) = setup();
    let w = Watch::start(&env, &[]);
    env.write(PROJECT, "---\nversion: [unclosed\n---\n\nBody despite bad YAML\n");
    wait_content(&out, "Body despite bad YAML");
    w.wait_line("context.md:2: frontmatter: malformed YAML");
    let warnings = w.count("warning:");
    env.write(PROJECT, &context_file("Fixed body"));
    wait_content(&out, "Fixed body");
    w.wait_recompiles(2);
    assert_eq!(w.count("warning:"), warnings, "no new warning once fixed: {:#?}", w.lines());
    // A broken settings file is an error line; the watch keeps running and recovers.
    env.write(".co-cli/settings.json", "{ not json");
    w.wait_line("not compiled, waiting for the next change");
    env.write(".co-cli/settings.json", r#"{"context_targets": ["AGENTS.md"]}"#);
    wait_content(&env.root().join("AGENTS.md"), "Fixed body");
}

#[test]
fn own_writes_cause_no_second_recompile() {
    let (env, out) = setup();
    env.write(".co-cli/settings.json", &format!(r#"{{"context_targets": ["{COMPILED}", "AGENTS.md"]}}"#));
    let w = Watch::start(&env, &[]);
    env.write(PROJECT, &context_file("Only once"));
    wait_content(&out, "Only once");
    wait_content(&env.root().join("AGENTS.md"), "Only once");
    w.wait_recompiles(1);
    // Ten debounce periods: any event from kb's own writes would have fired by now.
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(w.count("recompiled:"), 1, "{:#?}", w.lines());
}

/// Saves `context.md` 10 times, 10 ms apart (in place, or atomically: a temporary file renamed
/// over), waits until the watch has been quiet for three debounce periods, and checks that the
/// burst caused one recompile (two are tolerated: a loaded machine can stretch the burst) and
/// that the target ends with the last save.
fn burst(env: &TestEnv, w: &Watch, out: &Path, name: &str, atomic: bool) {
    let before = w.settle();
    let ctx = env.root().join(PROJECT);
    let started = Instant::now();
    for i in 1..=10 {
        let text = context_file(&format!("{name} save {i}."));
        if atomic {
            let tmp = env.write(&format!(".co-cli/knowledge/.context.md.tmp{i}"), &text);
            std::fs::rename(tmp, &ctx).unwrap();
        } else {
            std::fs::write(&ctx, text).unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = started.elapsed();
    wait_content(out, &format!("{name} save 10."));
    w.wait_recompiles(before + 1);
    let n = w.settle() - before;
    assert!(n <= 2, "{n} recompiles for 10 saves ({name}) in {took:?}: {:#?}", w.lines());
    let text = std::fs::read_to_string(out).unwrap();
    assert!(text.contains(&format!("{name} save 10.")) && !text.contains(&format!("{name} save 9.")), "{text}");
}

#[test]
fn a_burst_of_saves_is_one_recompile() {
    // The bug this guards against: 10 writes within 0.1 s with a 200 ms debounce gave 5 recompiles,
    // one per debouncer tick the burst spanned.
    let (env, out) = setup();
    let w = Watch::start_with(&env, 200, &[]);
    wait_content(&out, "Version one");
    burst(&env, &w, &out, "In place", false);
    burst(&env, &w, &out, "Atomic", true);
}

#[test]
fn folders_kb_creates_cause_no_recompile() {
    // No .co-cli/ at all: the first compile creates it (lock, default target's folder).
    let env = TestEnv::new();
    let cfg = env.home().join(".config/co-cli/knowledge");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(cfg.join("context.md"), context_file("Global only")).unwrap();
    // The global context goes into a target that asks for it (set in the global settings, so
    // that the root has no .co-cli/ yet).
    let target = format!(r#"{{"context_targets": [{{"path": "{COMPILED}", "global": true}}]}}"#);
    std::fs::write(env.home().join(".config/co-cli/settings.json"), target).unwrap();
    let w = Watch::start(&env, &[]);
    wait_content(&env.root().join(COMPILED), "Global only");
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(w.count("recompiled:"), 0, "{:#?}", w.lines());
    // A folder the user creates afterwards is theirs.
    env.write(PROJECT.replace("context.md", "memories/001-a.md").as_str(), "---\nid: 1\n---\na\n");
    w.wait_recompiles(1);
}

#[test]
fn other_inputs_trigger_recompiles() {
    let (env, out) = setup();
    env.write(
        ".co-cli/settings.json",
        &format!(r#"{{"context_targets": [{{"path": "{COMPILED}", "global": true}}]}}"#),
    );
    let w = Watch::start(&env, &[]);
    env.write(".github/copilot-memories.jsonl", "{\"subject\":\"ci\",\"fact\":\"runs on push\"}\n");
    wait_content(&out, "ci: runs on push");
    let cfg = env.home().join(".config/co-cli/knowledge");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(cfg.join("context.md"), context_file("Global arrives")).unwrap();
    wait_content(&out, "Global arrives");
    env.write(".co-cli/settings.json", r#"{"context_targets": [{"path": "NEW.md", "global": true}]}"#);
    wait_content(&env.root().join("NEW.md"), "Global arrives");
    let n = w.settle();
    env.write(".co-cli/knowledge/memories/001-a.md", "---\nid: 1\n---\na\n");
    w.wait_recompiles(n + 1);
    // Files that are not inputs are ignored.
    let n = w.settle();
    env.write("README.md", "x");
    env.write(".co-cli/knowledge/notes.txt", "x");
    env.write(".co-cli/knowledge/memories/.001-a.md.swp", "x");
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(w.count("recompiled:"), n, "{:#?}", w.lines());
}

#[test]
fn decisions_sessions_and_instructions_trigger_recompiles() {
    let (env, out) = setup();
    env.write(
        ".co-cli/settings.json",
        &format!(r#"{{"context_targets": [{{"path": "{COMPILED}", "session": true}}]}}"#),
    );
    let w = Watch::start(&env, &[]);
    wait_content(&out, "Version one");
    // The decisions folder does not exist yet: `kb decision add` creates it with the file.
    env.kb(&["decision", "add", "Every service stores its data in PostgreSQL", "--type", "architectural"]).ok();
    wait_content(&out, "- Every service stores its data in PostgreSQL");
    env.kb(&["session", "start", "Ship the v2 routes"]).ok();
    wait_content(&out, "Focus: Ship the v2 routes");
    // Instruction folders, nested and created while watching.
    env.write(".github/instructions/team/all.instructions.md", "---\napplyTo: '**'\n---\n\nWrite tests first.\n");
    wait_content(&out, "### all.instructions.md\n\nWrite tests first.");
    // A target for an agent gets its own block.
    env.write(
        ".co-cli/settings.json",
        r#"{"context_targets": [{"path": ".co-cli/knowledge/compiled.md", "session": true}, {"path": "WORKERS.md", "decisions_only": true}]}"#,
    );
    wait_content(&env.root().join("WORKERS.md"), "## Boundaries and Decisions");
    env.kb(&["session", "end"]).ok();
    let gone = poll(|| std::fs::read_to_string(&out).is_ok_and(|t| !t.contains("Focus: Ship")));
    assert!(gone, "the ended session stays in {}", out.display());
    let workers = std::fs::read_to_string(env.root().join("WORKERS.md")).unwrap();
    assert!(!workers.contains("## Internal Knowledge"), "{workers}");
    assert_eq!(w.signal("-TERM"), 0);
}

#[test]
fn sigint_ends_with_status_zero() {
    let (env, _) = setup();
    let w = Watch::start(&env, &[]);
    assert_eq!(w.signal("-INT"), 0);
}

#[test]
fn once_compiles_and_exits() {
    let (env, out) = setup();
    let r = env.kb(&["watch", "--once"]).ok();
    assert!(r.stderr.starts_with("compiled; "), "{}", r.stderr);
    assert!(env.read(&out).contains("Version one"));
    let r = env.kb(&["--json", "watch", "--once"]).ok();
    let j: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(
        (j["event"].as_str(), j["written"].as_u64(), j["unchanged"].as_u64()),
        (Some("compiled"), Some(0), Some(1))
    );
    assert_eq!(j["targets"][0]["status"], "unchanged");
    let r = env.kb(&["watch", "--debounce", "0"]);
    assert_eq!(r.code, 2);
}

#[test]
fn agents_files_follow_their_instructions_without_reacting_to_their_own_writes() {
    let (env, _) = setup();
    env.write(".co-cli/settings.json", r#"{"agents": ["cursor", "copilot", "claude"]}"#);
    let w = Watch::start(&env, &[]);
    let rule = env.root().join(".cursor/rules/kb-api.mdc");
    env.write(".github/instructions/api.instructions.md", "---\napplyTo: src/**\n---\nUse the client.\n");
    wait_content(&rule, "Use the client.");
    wait_content(&env.root().join(".claude/rules/kb-api.md"), "Use the client.");
    let n = w.settle();
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(w.count("recompiled:"), n, "kb's own writes are no reason to recompile: {:#?}", w.lines());
    // A renamed instruction: the old files go, the new ones come.
    let dir = env.root().join(".github/instructions");
    std::fs::rename(dir.join("api.instructions.md"), dir.join("web.instructions.md")).unwrap();
    wait_content(&env.root().join(".cursor/rules/kb-web.mdc"), "Use the client.");
    assert!(poll(|| !rule.exists()), "the orphan is deleted");
    wait_content(&env.root().join(".github/copilot-instructions.md"), "Version one");
}

#[test]
fn a_shared_source_changing_recompiles() {
    let (env, out) = setup();
    let org = env.root().parent().unwrap().join("org-watched");
    std::fs::create_dir_all(org.join(".co-cli/knowledge/decisions")).unwrap();
    std::fs::write(org.join(".co-cli/knowledge/context.md"), context_file("Org says one")).unwrap();
    let setting = format!(r#"[{{"name":"org","url":"{}"}}]"#, org.display());
    env.kb(&["config", "set", "shared", &setting]).ok();
    let w = Watch::start(&env, &[]);
    wait_content(&out, "Org says one");
    // A sync moves the copy's files in place, as this edit does.
    std::fs::write(org.join(".co-cli/knowledge/context.md"), context_file("Org says two")).unwrap();
    wait_content(&out, "Org says two");
    w.wait_recompiles(1);
    // A source named after the watch started is watched too.
    let other = env.root().parent().unwrap().join("team-watched");
    std::fs::create_dir_all(other.join(".co-cli/knowledge")).unwrap();
    std::fs::write(other.join(".co-cli/knowledge/context.md"), context_file("Team says hi")).unwrap();
    let both = format!(r#"[{{"name":"org","url":"{}"}},{{"name":"team","url":"{}"}}]"#, org.display(), other.display());
    env.kb(&["config", "set", "shared", &both]).ok();
    wait_content(&out, "Team says hi");
    let n = w.settle();
    std::fs::write(other.join(".co-cli/knowledge/context.md"), context_file("Team says bye")).unwrap();
    wait_content(&out, "Team says bye");
    w.wait_recompiles(n + 1);
}
