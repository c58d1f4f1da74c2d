//! `kb init`, `kb config`, root resolution, exit codes, colour and the global flags
//! (docs/cli-reference.md).

use crate::common::*;
use serde_json::json;
use std::process::Command;

#[test]
fn init_makes_a_working_knowledge_folder() {
    let t = TestEnv::pinned();
    t.kb(&["init"]).ok();
    assert!(t.memories().is_dir());
    let context = t.root().join(".co-cli/knowledge/context.md");
    assert!(context.is_file());
    assert_eq!(t.read(&t.root().join(".gitignore")), ".co-cli/cache/\n.co-cli/state/\n");
    assert_eq!(t.read(&t.root().join(".gitattributes")), ".github/copilot-memories.jsonl merge=union\n");
    let run = t.kb(&["check"]);
    assert_eq!(run.code, 0, "a fresh init must pass check: {run:?}");
    assert_eq!(t.kb(&["list"]).ok().stdout.trim_end(), format!("No memories found in {}.", t.root().display()));
    t.kb(&["save", "first memory after init"]).ok();
    assert_eq!(t.ids(), [1]);
    assert_eq!(t.kb(&["check"]).code, 0);
}

#[test]
fn init_twice_changes_nothing() {
    let t = TestEnv::pinned();
    t.kb(&["init"]).ok();
    let before = t.snapshot();
    t.kb(&["init"]).ok();
    t.kb(&["--json", "init"]).ok().json();
    assert_same_tree(&before, &t.snapshot());
    assert_eq!(t.read(&t.root().join(".gitignore")).matches(".co-cli/cache/").count(), 1);
}

#[test]
fn init_keeps_existing_files() {
    let t = TestEnv::pinned();
    t.write(".gitignore", "/target\n*.log");
    let context = t.write(".co-cli/knowledge/context.md", "my own context\n");
    t.memory(1, "an existing memory", &days_ago(1.0), &[]);
    let mem = t.file_of(1);
    let mem_before = std::fs::read(&mem).unwrap();
    t.kb(&["init"]).ok();
    assert_eq!(t.read(&context), "my own context\n");
    assert_eq!(std::fs::read(&mem).unwrap(), mem_before);
    assert_eq!(t.read(&t.root().join(".gitignore")), "/target\n*.log\n.co-cli/cache/\n.co-cli/state/\n");
}

#[test]
fn an_init_whose_context_write_fails_leaves_no_context_md_and_the_next_writes_the_template() {
    // The file size limit at 0 makes every write into a file fail (EFBIG, SIGXFSZ ignored): a
    // write of context.md in place would leave it empty, and the next init would keep it.
    let t = TestEnv::pinned();
    // The one file kb writes before context.md (the cache's own `.gitignore`), already there.
    t.write(".co-cli/cache/.gitignore", "*\n");
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "trap '' XFSZ; ulimit -f 0; exec \"$0\" init", env!("CARGO_BIN_EXE_kb")])
        .current_dir(t.root())
        .env_clear()
        .env("HOME", t.home())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("KB_ROOT", t.root());
    for (k, v) in &t.envs {
        cmd.env(k, v);
    }
    let run = run_command(cmd, None).err();
    assert!(run.stderr.contains("context.md"), "{run:?}");
    assert!(t.memories().is_dir(), "init failed before it wrote context.md: {run:?}");
    let context = t.root().join(".co-cli/knowledge/context.md");
    assert!(std::fs::symlink_metadata(&context).is_err(), "a failed write left {}", context.display());
    t.kb(&["init"]).ok();
    let fresh = TestEnv::pinned();
    fresh.kb(&["init"]).ok();
    assert_eq!(t.read(&context), fresh.read(&fresh.root().join(".co-cli/knowledge/context.md")));
}

#[test]
fn init_respects_an_existing_ignore_rule() {
    let t = TestEnv::pinned();
    t.write(".gitignore", "/target\n.co-cli/cache/\n.co-cli/state/\n");
    let before = t.read(&t.root().join(".gitignore"));
    t.kb(&["init"]).ok();
    assert_eq!(t.read(&t.root().join(".gitignore")), before);
}

#[test]
fn init_in_a_subfolder_initialises_the_repository_root() {
    // A fresh git repository, found by its `.git` (there is no `.co-cli/` yet): a root-discovery
    // test, run where no marker above can win over that `.git`.
    let Some(t) = TestEnv::markerless() else { return };
    let mut t = t.env("KB_NOW", NOW);
    std::fs::create_dir_all(t.root().join("a/b")).unwrap();
    t.cwd = Some("a/b".into());
    t.kb(&["init"]).ok();
    assert!(t.memories().is_dir());
    assert!(!t.root().join("a/b/.co-cli").exists());
}

#[test]
fn config_defaults_with_sources() {
    let t = TestEnv::pinned();
    let v = t.kb(&["--json", "config"]).ok().json();
    for (key, value) in [
        ("memory_max_count", json!(200)),
        ("memory_dedup_window_days", json!(7)),
        ("memory_dedup_threshold", json!(85.0)),
        ("memory_decay_strategy", json!("summarize")),
        ("memory_decay_percentage", json!(0.2)),
    ] {
        assert_eq!(v[key]["value"].as_f64(), value.as_f64(), "{key}: {v}");
        if value.is_string() {
            assert_eq!(v[key]["value"], value);
        }
        assert_eq!(v[key]["source"], "default", "{key}");
    }
    let run = t.kb(&["config"]).ok();
    for key in ["memory_max_count", "memory_dedup_window_days", "memory_dedup_threshold", "memory_decay_strategy"] {
        let line = run.stdout.lines().find(|l| l.contains(key)).unwrap_or_else(|| panic!("{key}: {run:?}"));
        assert!(line.contains("default"), "{line}");
    }
    assert!(run.stdout.lines().any(|l| l.contains("memory_max_count") && l.contains("200")), "{run:?}");
}

#[test]
fn config_sources_file_and_env() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_DEDUP_THRESHOLD", "90").env("CO_CLI_MEMORY_MAX_COUNT", "");
    let project = t.write(".co-cli/settings.json", r#"{"memory_max_count": 50, "memory_decay_strategy": "cut"}"#);
    let global = t.home().join(".config/co-cli/settings.json");
    std::fs::create_dir_all(global.parent().unwrap()).unwrap();
    std::fs::write(&global, r#"{"memory_decay_percentage": 0.5, "memory_max_count": 40}"#).unwrap();
    let v = t.kb(&["--json", "config"]).ok().json();
    assert_eq!(v["memory_max_count"], json!({"value": 50, "source": project.display().to_string()}));
    assert_eq!(v["memory_decay_strategy"], json!({"value": "cut", "source": project.display().to_string()}));
    assert_eq!(v["memory_decay_percentage"], json!({"value": 0.5, "source": global.display().to_string()}));
    assert_eq!(v["memory_dedup_threshold"]["value"].as_f64(), Some(90.0));
    assert_eq!(v["memory_dedup_threshold"]["source"], "env:CO_CLI_MEMORY_DEDUP_THRESHOLD");
    assert_eq!(v["memory_dedup_window_days"]["source"], "default");
    let run = t.kb(&["config"]).ok();
    assert!(run.stdout.contains("env:CO_CLI_MEMORY_DEDUP_THRESHOLD"), "{run:?}");
    assert!(run.stdout.contains(&project.display().to_string()), "{run:?}");
}

#[test]
fn config_with_an_invalid_value_fails_naming_it() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_DECAY_STRATEGY", "shred");
    let run = t.kb(&["config"]).err();
    assert!(run.stderr.contains("CO_CLI_MEMORY_DECAY_STRATEGY") && run.stderr.contains("shred"), "{run:?}");
}

/// The settings of the layered context and of heat: defaults, ranges (both ends accepted, one past
/// refused), environment variables winning over the files, and errors naming the file or variable.
#[test]
fn layered_context_settings_defaults_ranges_and_env() {
    let t = TestEnv::pinned();
    let v = t.kb(&["--json", "config"]).ok().json();
    for (key, value) in [
        ("context_max_tokens", json!(null)),
        ("learnings_limit", json!(5)),
        ("hot_limit", json!(10)),
        ("heat_window_days", json!(10)),
    ] {
        assert_eq!(v[key], json!({"value": value, "source": "default"}), "{key}");
    }
    let settings = t.root().join(".co-cli/settings.json");
    for (key, var, ok, bad) in [
        ("context_max_tokens", "KB_CONTEXT_MAX_TOKENS", ["100", "4294967295"], ["99", "4294967296"]),
        ("learnings_limit", "KB_LEARNINGS_LIMIT", ["0", "100"], ["-1", "101"]),
        ("hot_limit", "KB_HOT_LIMIT", ["0", "100"], ["-1", "101"]),
        ("heat_window_days", "KB_HEAT_WINDOW_DAYS", ["1", "365"], ["0", "366"]),
    ] {
        for value in ok {
            t.kb(&["config", "set", key, "--", value]).ok();
            let v = t.kb(&["--json", "config"]).ok().json();
            assert_eq!(
                v[key],
                json!({"value": value.parse::<u64>().unwrap(), "source": settings.display().to_string()})
            );
        }
        let env = TestEnv::pinned().env(var, ok[0]);
        let v = env.kb(&["--json", "config"]).ok().json();
        assert_eq!(v[key], json!({"value": ok[0].parse::<u64>().unwrap(), "source": format!("env:{var}")}));
        for value in bad {
            let before = t.read(&settings);
            let run = t.kb(&["config", "set", key, "--", value]).err();
            assert!(run.stderr.contains(key) && run.stderr.contains(value), "{key} {value}: {run:?}");
            assert_eq!(t.read(&settings), before, "nothing is written");
            let run = TestEnv::pinned().env(var, value).kb(&["config"]).err();
            assert!(run.stderr.contains(&format!("invalid {var}='{value}'")), "{key} {value}: {run:?}");
        }
        let run = TestEnv::pinned().env(var, "many").kb(&["context"]).err();
        assert!(run.stderr.contains(var), "{run:?}");
    }
}

/// A repository at `root` with one memory whose text names it.
fn repo_with_memory(dir: &std::path::Path, name: &str) {
    let mem = dir.join(".co-cli/knowledge/memories");
    std::fs::create_dir_all(&mem).unwrap();
    std::fs::write(
        mem.join("001-x.md"),
        format!("---\ncreated: '2026-11-01T10:00:00+00:00'\nid: 1\n---\n\nin {name}\n"),
    )
    .unwrap();
}

fn content_of_1(t: &TestEnv, extra: &[&str]) -> String {
    let mut args = extra.to_vec();
    args.extend(["--json", "show", "1"]);
    t.kb(&args).ok().json()["content"].as_str().unwrap().to_string()
}

// Root discovery (docs/cli-reference.md). These tests cannot pin the root; each is immune to a
// stray `.co-cli/` above the temporary folder instead: either the marker that must win is inside it
// (nearer than anything above), or the test runs where no marker is above (`TestEnv::markerless`).

#[test]
fn root_flag_then_env_then_markers() {
    // Immune: the repository has its own `.co-cli/`.
    let base = TestEnv::pinned().discovering_root();
    let other = base.dir.path().join("other");
    let third = base.dir.path().join("third");
    repo_with_memory(&base.root(), "repo");
    repo_with_memory(&other, "other");
    repo_with_memory(&third, "third");
    assert_eq!(content_of_1(&base, &[]), "in repo");
    assert_eq!(content_of_1(&base, &["--root", other.to_str().unwrap()]), "in other");
    let t = base.env("KB_ROOT", third.to_str().unwrap());
    assert_eq!(content_of_1(&t, &[]), "in third");
    assert_eq!(content_of_1(&t, &["--root", other.to_str().unwrap()]), "in other", "--root beats KB_ROOT");
    // A relative --root is taken from the working directory.
    assert_eq!(content_of_1(&t, &["--root", "../other"]), "in other");
}

#[test]
fn empty_kb_root_is_ignored() {
    // Immune: the repository has its own `.co-cli/`.
    let t = TestEnv::pinned().discovering_root().env("KB_ROOT", "");
    repo_with_memory(&t.root(), "repo");
    assert_eq!(content_of_1(&t, &[]), "in repo");
}

#[test]
fn nearest_co_cli_folder_beats_git() {
    // Immune: both `.co-cli/` folders are in the repository.
    let mut t = TestEnv::pinned().discovering_root();
    repo_with_memory(&t.root(), "repo");
    repo_with_memory(&t.root().join("packages/app"), "app");
    std::fs::create_dir_all(t.root().join("packages/app/src/deep")).unwrap();
    t.cwd = Some("packages/app/src/deep".into());
    assert_eq!(content_of_1(&t, &[]), "in app");
    std::fs::create_dir_all(t.root().join("packages/lib/src")).unwrap();
    t.cwd = Some("packages/lib/src".into());
    assert_eq!(content_of_1(&t, &[]), "in repo");
}

#[test]
fn the_nearest_marker_wins_even_a_nested_git() {
    // Whichever of `.co-cli/` and `.git` comes first on the way up wins, as git finds its
    // repository: a nested repository is its own root. Immune: both markers are inside the
    // temporary folder.
    let mut t = TestEnv::pinned().discovering_root();
    repo_with_memory(&t.root(), "repo");
    repo_with_memory(&t.root().join("vendor/sub"), "sub");
    std::fs::create_dir_all(t.root().join("vendor/sub/.git")).unwrap();
    t.cwd = Some("vendor/sub/deeper".into());
    std::fs::create_dir_all(t.root().join("vendor/sub/deeper")).unwrap();
    assert_eq!(content_of_1(&t, &[]), "in sub");
    t.cwd = Some("vendor".into());
    assert_eq!(content_of_1(&t, &[]), "in repo");
}

#[test]
fn nearest_git_when_there_is_no_co_cli_folder() {
    // No `.co-cli/` anywhere above: run where there is none.
    let Some(t) = TestEnv::markerless() else { return };
    let mut t = t.env("KB_NOW", NOW);
    std::fs::create_dir_all(t.root().join("src/x")).unwrap();
    t.cwd = Some("src/x".into());
    t.kb(&["save", "saved at the git root"]).ok();
    assert!(t.memories().join("001-saved-at-the-git-root.md").is_file());
}

#[test]
fn working_directory_when_there_is_no_marker() {
    // No marker anywhere above: reads use the working directory with a warning; writes refuse and
    // create nothing; `kb init` makes it a root.
    let Some(t) = TestEnv::markerless() else { return };
    let t = t.env("KB_NOW", NOW);
    let plain = t.dir.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let in_plain = |args: &[&str]| {
        let mut cmd = t.command(args);
        cmd.current_dir(&plain);
        run_command(cmd, None)
    };
    in_plain(&["save", "saved in a plain folder"]).err();
    assert!(!plain.join(".co-cli").exists());
    assert!(in_plain(&["list"]).ok().stderr.contains("no repository or .co-cli/ folder here or above"));
    in_plain(&["init"]).ok();
    in_plain(&["save", "saved in a plain folder"]).ok();
    assert!(plain.join(".co-cli/knowledge/memories/001-saved-in-a-plain-folder.md").is_file());
    assert!(!t.memories().exists());
}

#[test]
fn usage_errors_exit_2() {
    let t = TestEnv::pinned();
    t.kb(&[]).usage();
    t.kb(&["frobnicate"]).usage();
    t.kb(&["list", "--frobnicate"]).usage();
    t.kb(&["--frobnicate", "list"]).usage();
    t.kb(&["recall"]).usage();
    t.kb(&["recall", "x", "-n", "many"]).usage();
    t.kb(&["recall", "x", "-n", "-1"]).usage();
    t.kb(&["show"]).usage();
    t.kb(&["forget"]).usage();
    t.kb(&["list", "extra"]).usage();
    t.kb(&["--root"]).usage();
    assert!(!t.root().join(".co-cli").exists());
}

#[test]
fn help_and_version_exit_0() {
    let t = TestEnv::pinned();
    let run = t.kb(&["--help"]).ok();
    for cmd in ["init", "save", "recall", "list", "show", "forget", "protect", "unprotect", "check", "config"] {
        assert!(run.stdout.contains(cmd), "{cmd} missing from --help");
    }
    t.kb(&["save", "--help"]).ok();
    let run = t.kb(&["--version"]).ok();
    assert!(run.stdout.starts_with("kb "), "{run:?}");
}

#[test]
fn errors_print_error_prefix_on_stderr_only() {
    let t = TestEnv::pinned();
    let run = t.kb(&["show", "999"]).err();
    assert_eq!(run.stderr.trim_end(), "error: memory 999 not found");
    assert!(run.stdout.is_empty());
}

#[test]
fn invalid_kb_now_is_an_error() {
    let t = TestEnv::new().env("KB_NOW", "yesterday");
    let run = t.kb(&["save", "x"]).err();
    assert!(run.stderr.contains("KB_NOW"), "{run:?}");
    assert!(t.memory_files().is_empty());
}

#[test]
fn no_escape_sequences_when_not_a_terminal() {
    let t = TestEnv::pinned();
    t.memory(1, "plain output", &days_ago(1.0), &[]);
    t.mem_file("002-bad.md", "broken");
    for args in [&["list"][..], &["save", "another"], &["check"], &["show", "9"], &["recall", "plain"]] {
        let run = t.kb(args);
        assert!(!run.stdout.contains('\u{1b}') && !run.stderr.contains('\u{1b}'), "{args:?}: {run:?}");
    }
}

/// Runs kb under a pseudo-terminal (util-linux `script`), returning everything it printed.
fn on_a_terminal(t: &TestEnv, no_color: Option<&str>, kb_args: &str) -> Option<String> {
    if std::process::Command::new("script").arg("--version").output().is_err() {
        return None;
    }
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &format!("{} {kb_args}", env!("CARGO_BIN_EXE_kb")), "/dev/null"])
        .current_dir(t.root())
        .env_clear()
        .env("HOME", t.home())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TERM", "xterm")
        .env("KB_ROOT", t.root())
        .env("KB_NOW", NOW);
    if let Some(v) = no_color {
        cmd.env("NO_COLOR", v);
    }
    let out = cmd.output().unwrap();
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn colour_on_a_terminal_unless_no_color() {
    let t = TestEnv::pinned();
    let Some(coloured) = on_a_terminal(&t, None, "save 'kettles whistle at dawn'") else { return };
    assert!(coloured.contains("\u{1b}["), "no colour on a terminal: {coloured:?}");
    let plain = on_a_terminal(&t, Some("1"), "save 'lanterns glow in harbors'").unwrap();
    assert!(plain.contains("Saved memory 2") && !plain.contains("\u{1b}["), "NO_COLOR=1: {plain:?}");
    let empty = on_a_terminal(&t, Some(""), "save 'quartz raven saffron tundra'").unwrap();
    assert!(empty.contains("\u{1b}["), "an empty NO_COLOR must be ignored: {empty:?}");
}

#[test]
fn terminal_output_escapes_control_characters_in_memories() {
    let t = TestEnv::pinned();
    t.mem_file(
        "001-x.md",
        "---\ncreated: '2026-11-01T10:00:00+00:00'\nid: 1\n---\n\nclear \u{1b}[2J screen and rtl \u{202e}txt\n",
    );
    let Some(out) = on_a_terminal(&t, Some("1"), "list") else { return };
    assert!(!out.contains("\u{1b}[2J") && !out.contains('\u{202e}'), "{out:?}");
    let out = on_a_terminal(&t, Some("1"), "show 1").unwrap();
    assert!(!out.contains("\u{1b}[2J") && !out.contains('\u{202e}'), "{out:?}");
    let out = on_a_terminal(&t, Some("1"), "recall clear").unwrap();
    assert!(!out.contains("\u{1b}[2J") && !out.contains('\u{202e}'), "{out:?}");
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    let t = TestEnv::pinned();
    let mut rng = Rng::new(3);
    for id in 1..=300 {
        t.memory(id, &sentence(&mut rng, 12), &days_ago(id as f64), &[]);
    }
    let mut cmd = t.command(&["list"]);
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).stdin(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.status.code().is_some(), "killed by SIGPIPE: {:?}", out.status);
}

#[test]
fn terminal_output_escapes_control_characters_in_file_names_and_warnings() {
    let t = TestEnv::pinned();
    // A file name and an invalid value that carry "clear screen" escape sequences.
    t.mem_file("001-\u{1b}[2J.md", "---\ncreated: '2026-11-01T10:00:00+00:00'\nid: 1\n---\n\nname\n");
    t.mem_file("002-bad.md", "---\ncreated: '2026-11-01T10:00:00+00:00'\nid: \"\\e[2J\"\n---\n\nbad\n");
    for args in ["list", "check", "show 1", "recall name", "forget 1"] {
        let Some(out) = on_a_terminal(&t, Some("1"), args) else { return };
        assert!(!out.contains("\u{1b}[2J"), "{args}: a raw escape sequence reached the terminal: {out:?}");
    }
}

#[test]
fn works_without_home_and_in_a_root_with_spaces_and_unicode() {
    let t = TestEnv::pinned();
    let root = t.dir.path().join("my repo — ünïcode");
    std::fs::create_dir_all(&root).unwrap();
    let root_s = root.to_str().unwrap();
    let mut cmd = t.command(&["--root", root_s, "--json", "save", "saved without HOME"]);
    cmd.env_remove("HOME");
    let out = run_command(cmd, None).ok().json();
    assert!(out["path"].as_str().unwrap().starts_with(root_s), "{out}");
    let mut cmd = t.command(&["--root", root_s, "check"]);
    cmd.env_remove("HOME");
    run_command(cmd, None).ok();
}

#[test]
fn config_set_refuses_a_target_compile_could_not_write() {
    // Checked when set: a value every later compile fails on is never written.
    let t = TestEnv::pinned();
    t.kb(&["init"]).ok();
    let settings = t.root().join(".co-cli/settings.json");
    let before = std::fs::read(&settings).ok();
    for target in
        [r#"["../outside.md"]"#, r#"[".git/config"]"#, r#"[{"path": ".co-cli/cache/x.md"}]"#, r#"["/etc/agents.md"]"#]
    {
        let run = t.kb(&["config", "set", "context_targets", target]).err();
        assert!(run.stderr.contains("context_targets"), "{target}: {run:?}");
        assert_eq!(std::fs::read(&settings).ok(), before, "{target}: nothing written");
    }
    t.kb(&["config", "set", "context_targets", r#"["AGENTS.md", {"path": "docs/agents.md", "agent": "reviewer"}]"#])
        .ok();
    t.kb(&["compile"]).ok();
}
