//! A hostile repository: FIFOs where files should be, compile targets aimed at git's and kb's own
//! files, symlinks that would leak a file from outside the root, terminal escapes.

use crate::common::*;
use std::time::{Duration, Instant};

/// Makes a FIFO at `path` (with the `mkfifo` command: the tests have no libc binding).
fn mkfifo(path: &std::path::Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let status = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(status.success());
}

const LIMIT: Duration = Duration::from_secs(10);

#[test]
fn a_fifo_context_file_is_reported_not_opened() {
    let t = TestEnv::pinned();
    t.kb(&["init"]).ok();
    let context = t.root().join(".co-cli/knowledge/context.md");
    std::fs::remove_file(&context).unwrap();
    mkfifo(&context);
    let run = kb_within(&t, &["context"], LIMIT);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("not a regular file"), "{run:?}");
    let run = kb_within(&t, &["check"], LIMIT);
    assert!(run.code == 1 && run.stdout.contains("not a regular file"), "{run:?}");
    let run = kb_within(&t, &["compile"], LIMIT);
    assert_eq!(run.code, 0, "{run:?}");
}

#[test]
fn a_fifo_global_context_or_settings_file_is_reported_not_opened() {
    let t = TestEnv::pinned();
    mkfifo(&t.home().join(".config/co-cli/knowledge/context.md"));
    mkfifo(&t.home().join(".config/co-cli/settings.json"));
    let run = kb_within(&t, &["context"], LIMIT);
    assert!(run.stderr.contains("not a regular file"), "{run:?}");
    let run = kb_within(&t, &["list"], LIMIT);
    assert!(run.code == 1 && run.stderr.contains("not a regular file"), "{run:?}");
    let run = kb_within(&t, &["check"], LIMIT);
    assert!(run.code == 1 && run.stdout.contains("not a regular file"), "{run:?}");
}

#[test]
fn a_fifo_project_settings_file_or_jsonl_is_reported_not_opened() {
    let t = TestEnv::pinned();
    mkfifo(&t.root().join(".co-cli/settings.json"));
    mkfifo(&t.root().join(".github/copilot-memories.jsonl"));
    let run = kb_within(&t, &["save", "x"], LIMIT);
    assert!(run.code == 1 && run.stderr.contains("not a regular file"), "{run:?}");
    kb_within(&t, &["config", "set", "memory_max_count", "50"], LIMIT);
    let run = kb_within(&t, &["check"], LIMIT);
    assert!(run.code == 1 && run.stdout.matches("not a regular file").count() == 2, "{run:?}");
}

#[test]
fn a_fifo_jsonl_does_not_block_a_read_or_a_record_save() {
    let t = TestEnv::pinned();
    mkfifo(&t.root().join(".github/copilot-memories.jsonl"));
    let run = kb_within(&t, &["list"], LIMIT);
    assert!(run.code == 0 && run.stderr.contains("not a regular file"), "{run:?}");
    let run = kb_within(&t, &["save", "--store", "copilot", "--subject", "s", "--reason", "r", "fact"], LIMIT);
    assert!(run.code == 1 && run.stderr.contains("not a regular file"), "{run:?}");
    kb_within(&t, &["context"], LIMIT);
}

#[test]
fn a_fifo_lock_file_is_an_error_not_a_hang() {
    let t = TestEnv::pinned();
    mkfifo(&t.root().join(".co-cli/cache/lock"));
    let run = kb_within(&t, &["save", "x"], LIMIT);
    assert!(run.code == 1 && run.stderr.contains("not a regular file"), "{run:?}");
}

#[test]
fn a_fifo_recall_index_is_not_opened() {
    let t = TestEnv::pinned();
    t.memory(1, "Run the tests with nextest", &days_ago(1.0), &[]);
    mkfifo(&t.root().join(".co-cli/cache/recall.idx"));
    let run = kb_within(&t, &["--json", "recall", "how", "do", "we", "run", "the", "tests"], LIMIT);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.json()["results"][0]["id"], 1);
}

#[test]
fn a_fifo_compile_target_is_refused() {
    let t = TestEnv::pinned();
    t.write(".co-cli/knowledge/context.md", "---\nversion: 1\nupdated: 2026-01-01T00:00:00Z\n---\n\nBody\n");
    t.write(".co-cli/settings.json", r#"{"context_targets": ["AGENTS.md", "pipe.md"]}"#);
    mkfifo(&t.root().join("pipe.md"));
    let run = kb_within(&t, &["compile"], LIMIT);
    assert!(run.code == 1 && run.stderr.contains("not a regular file"), "{run:?}");
    assert!(t.read(&t.root().join("AGENTS.md")).contains("Body"), "the other target is written");
}

#[test]
fn targets_inside_git_or_kb_state_are_refused() {
    let t = TestEnv::pinned();
    std::fs::write(t.root().join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    t.write(".co-cli/knowledge/context.md", "---\nversion: 1\nupdated: 2026-01-01T00:00:00Z\n---\n\nBody\n");
    for target in [
        ".git/config",
        ".git/hooks/pre-commit",
        ".git/info/exclude",
        ".co-cli/cache/lock",
        ".co-cli/state/x.md",
        "./.git/../.git/HEAD",
    ] {
        t.write(".co-cli/settings.json", &format!(r#"{{"context_targets": ["{target}"]}}"#));
        let run = t.kb(&["compile"]);
        assert_eq!(run.code, 1, "{target}: {run:?}");
        assert!(run.stderr.contains("refused"), "{target}: {run:?}");
        let check = t.kb(&["check"]);
        assert!(check.code == 1 && check.stdout.contains("context_targets"), "{target}: {check:?}");
    }
    assert_eq!(t.read(&t.root().join(".git/config")), "[core]\n\tbare = false\n");
    assert!(!t.root().join(".git/hooks/pre-commit").exists());
    // `.github/` is not `.git/`.
    t.write(".co-cli/settings.json", r#"{"context_targets": [".github/copilot-instructions.md"]}"#);
    t.kb(&["compile"]).ok();
}

#[test]
fn a_context_file_symlinked_out_of_the_root_is_not_compiled() {
    let t = TestEnv::pinned();
    let secret = t.dir.path().join("credentials");
    std::fs::write(&secret, "aws_secret_access_key = do-not-leak\n").unwrap();
    std::fs::create_dir_all(t.root().join(".co-cli/knowledge")).unwrap();
    std::os::unix::fs::symlink(&secret, t.root().join(".co-cli/knowledge/context.md")).unwrap();
    t.write(".co-cli/settings.json", r#"{"context_targets": ["AGENTS.md"]}"#);
    let run = t.kb(&["context"]).ok();
    assert!(!run.stdout.contains("do-not-leak"), "{run:?}");
    assert!(run.stderr.contains("outside"), "{run:?}");
    t.kb(&["compile"]).ok();
    let agents = t.root().join("AGENTS.md");
    assert!(!agents.exists() || !t.read(&agents).contains("do-not-leak"));
    let check = t.kb(&["check"]);
    assert!(check.code == 1 && check.stdout.contains("outside"), "{check:?}");
    // A symlink that stays inside the root is fine.
    std::fs::remove_file(t.root().join(".co-cli/knowledge/context.md")).unwrap();
    t.write("docs/context.md", "---\nversion: 1\nupdated: 2026-01-01T00:00:00Z\n---\n\nShared body\n");
    std::os::unix::fs::symlink(t.root().join("docs/context.md"), t.root().join(".co-cli/knowledge/context.md"))
        .unwrap();
    assert!(t.kb(&["context"]).ok().stdout.contains("Shared body"));
}

#[test]
fn a_jsonl_file_symlinked_out_of_the_root_is_not_read() {
    let t = TestEnv::pinned();
    let outside = t.dir.path().join("other.jsonl");
    std::fs::write(&outside, "{\"id\":\"m1\",\"subject\":\"s\",\"fact\":\"outside fact\"}\n").unwrap();
    std::fs::create_dir_all(t.root().join(".github")).unwrap();
    std::os::unix::fs::symlink(&outside, t.root().join(".github/copilot-memories.jsonl")).unwrap();
    let run = t.kb(&["list"]).ok();
    assert!(!run.stdout.contains("outside fact") && run.stderr.contains("outside"), "{run:?}");
    assert!(!t.kb(&["context"]).ok().stdout.contains("outside fact"));
}

#[test]
fn terminal_escapes_in_files_are_shown_escaped() {
    let t = TestEnv::pinned();
    // An OSC 52 clipboard write and a screen clear.
    let evil = "Build with make\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}[2J";
    t.memory(1, evil, "2026-11-20T10:00:00+00:00", &["build"]);
    for args in [&["list"][..], &["recall", "make"], &["show", "1"]] {
        let out = t.kb(args).ok().stdout;
        assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{args:?}: {out:?}");
        assert!(out.contains("\\u{1b}"), "{args:?}: {out:?}");
    }
    t.mem_file("002-x.md", "---\nid: 2\ncreated: \u{1b}[2J\n---\n\nx\n");
    let out = t.kb(&["check"]).stdout;
    assert!(!out.contains('\u{1b}'), "{out:?}");
    // JSON is JSON: the characters are escaped by the JSON encoding itself.
    let v = t.kb(&["--json", "show", "1"]).ok().json();
    assert_eq!(v["content"], evil);
}

#[test]
fn validation_is_as_strict_as_co_cli() {
    let t = TestEnv::pinned();
    let cases = [
        ("created: '2026-01-01 10:00:00+00:00'\nid: 1", "upper-case T"),
        ("created: '2026-01-01t10:00:00+00:00'\nid: 2", "upper-case T"),
        ("created: '0000-01-01T10:00:00+00:00'\nid: 3", "year 0"),
        ("created: '2026-01-01T10:00:60+00:00'\nid: 4", "second 60"),
        ("created: '2026-01-01T10:00:00+00:00'\nid: 0o17", "'id' must be an integer"),
        ("created: '2026-01-01T10:00:00+00:00'\nid: 6\nx: !!python/object:os.system ls", "!!python/object:os.system"),
        ("created: '2026-01-01T10:00:00+00:00'\nid: 7\nupdated: '2026-01-02 10:00:00+00:00'", "upper-case T"),
    ];
    for (i, (yaml, _)) in cases.iter().enumerate() {
        t.mem_file(&format!("{i}-x.md"), &format!("---\n{yaml}\n---\n\nbody {i}\n"));
    }
    // Still valid: the decimal id, an octal 007 as PyYAML reads it (7), a +00:00 offset.
    t.mem_file("9-ok.md", "---\ncreated: '2026-01-01T10:00:00+00:00'\nid: 9\n---\n\nfine\n");
    let run = t.kb(&["check"]);
    assert_eq!(run.code, 1);
    for (i, (_, why)) in cases.iter().enumerate() {
        let line =
            run.stdout.lines().find(|l| l.contains(&format!("{i}-x.md"))).unwrap_or_else(|| panic!("{i}: {run:?}"));
        assert!(line.contains(why), "{i}: {line}");
    }
    assert!(!run.stdout.contains("9-ok.md"), "{run:?}");
    let v = t.list_json();
    assert_eq!(v["count"], 1, "only the valid memory is listed");
}

#[test]
fn a_python_tag_only_as_text_is_read_as_text() {
    let t = TestEnv::pinned();
    let created = "created: '2026-01-01T10:00:00+00:00'";
    let fine = [
        format!("{created}\nid: 1\ncreated_by: 'agent:!!python/x'"),
        format!("{created}\nid: 2\ntags:\n- \"!!python/object\""),
        format!("{created}\nid: 3\nauthor: Alex !!python/name:os.system"),
        format!("{created}\nid: 4 # !!python/object:os.system"),
    ];
    for (i, yaml) in fine.iter().enumerate() {
        t.mem_file(&format!("{i}-fine.md"), &format!("---\n{yaml}\n---\n\nbody {i}\n"));
    }
    let tagged = [
        format!("{created}\nid: 5\nx: !!python/object:os.system ls"),
        format!("{created}\nid: 6\ntags:\n- !!python/tuple [a]"),
        format!("{created}\nid: 7\ntags: [a, !!python/str b]"),
    ];
    for (i, yaml) in tagged.iter().enumerate() {
        t.mem_file(&format!("{i}-tagged.md"), &format!("---\n{yaml}\n---\n\nbody {i}\n"));
    }
    assert_eq!(t.ids(), vec![1, 2, 3, 4], "a quoted or plain string holding !!python/ is text, as PyYAML reads it");
    let run = t.kb(&["check"]);
    assert_eq!(run.stdout.matches("unsupported YAML tag !!python/").count(), 3, "{run:?}");
}

/// Returns `n` bytes of words drawn from a seeded generator (no two texts alike).
fn words(seed: u64, n: usize) -> String {
    let mut rng = Rng::new(seed);
    let mut s = String::with_capacity(n + 16);
    while s.len() < n {
        let len = 1 + rng.below(9);
        s.push_str(&rng.alnum(len));
        s.push(' ');
    }
    s
}

#[test]
fn scoring_a_large_text_does_not_hold_the_lock() {
    let t = TestEnv::pinned();
    t.kb(&["init"]).ok();
    let big = 56 * 1024;
    t.kb_stdin(&["save", "-"], Some(&words(1, big))).ok();
    let start = Instant::now();
    let mut large = t
        .command(&["save", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        large.stdin.take().unwrap().write_all(words(2, big).as_bytes()).unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    let small_start = Instant::now();
    t.kb(&["save", "a small fact saved meanwhile"]).ok();
    let small = small_start.elapsed();
    assert!(large.wait().unwrap().success());
    let whole = start.elapsed();
    if whole < Duration::from_secs(2) {
        eprintln!("note: the large save took only {whole:?}; too fast to show lock contention");
        return;
    }
    assert!(small < whole / 2, "the small save waited for the large one: {small:?} of {whole:?}");
    assert_eq!(t.ids().len(), 3);
}

#[test]
fn a_huge_text_is_not_compared_with_short_memories() {
    let t = TestEnv::pinned();
    for i in 0..10 {
        t.kb(&["save", &format!("short memory number {i} about the deploy")]).ok();
    }
    let start = Instant::now();
    t.kb_stdin(&["save", "-"], Some(&words(3, 900 * 1024))).ok();
    assert!(start.elapsed() < Duration::from_secs(20), "{:?}", start.elapsed());
}

#[test]
fn a_co_cli_folder_symlinked_out_of_the_root_gets_no_lock_or_cache() {
    let t = TestEnv::pinned();
    let outside = t.dir.path().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, t.root().join(".co-cli")).unwrap();
    t.write(".github/copilot-memories.jsonl", "{\"id\":\"m1\",\"subject\":\"s\",\"fact\":\"f\"}\n");
    let writes: [&[&str]; 5] = [
        &["save", "--store", "copilot", "--subject", "s", "--reason", "r", "another fact"],
        &["vote", "m1", "up", "--reason", "r"],
        &["export", "--to", "copilot"],
        &["compile"],
        &["save", "a memory"],
    ];
    for args in writes {
        let run = t.kb(args);
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert!(run.stderr.contains("outside the repository"), "{args:?}: {run:?}");
    }
    t.kb(&["watch", "--once"]).err();
    t.kb(&["list"]).ok();
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "nothing was created outside the root");
}

#[test]
fn a_cache_folder_symlinked_out_of_the_root_is_not_used() {
    let t = TestEnv::pinned();
    t.kb(&["init"]).ok();
    t.kb(&["save", "one"]).ok();
    let outside = t.dir.path().join("cache-elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::remove_dir_all(t.root().join(".co-cli/cache")).unwrap();
    std::os::unix::fs::symlink(&outside, t.root().join(".co-cli/cache")).unwrap();
    t.kb(&["list"]).ok();
    t.kb(&["save", "two"]).err();
    t.kb(&["vote", "x", "up", "--reason", "r"]).err();
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "nothing was written outside the root");
}

#[test]
fn a_memories_folder_symlinked_out_of_the_root_is_not_read() {
    let t = TestEnv::pinned();
    let outside = t.dir.path().join("memories-elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("001-x.md"), "---\ncreated: '2026-01-01T00:00:00+00:00'\nid: 1\n---\n\nfrom outside\n")
        .unwrap();
    std::fs::create_dir_all(t.root().join(".co-cli/knowledge")).unwrap();
    std::os::unix::fs::symlink(&outside, t.root().join(".co-cli/knowledge/memories")).unwrap();
    let run = t.kb(&["list"]).ok();
    assert!(!run.stdout.contains("from outside"), "{run:?}");
    assert!(run.stderr.contains("outside"), "{run:?}");
    assert!(!t.kb(&["recall", "outside"]).ok().stdout.contains("from outside"));
    let check = t.kb(&["check"]);
    assert!(check.code == 1 && check.stdout.contains("outside"), "{check:?}");
    t.kb(&["save", "a memory"]).err();
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
}

#[test]
fn a_fifo_cache_index_is_ignored_not_opened() {
    let t = TestEnv::pinned();
    t.kb(&["init"]).ok();
    t.kb(&["save", "one"]).ok();
    let idx = t.root().join(".co-cli/cache/memories.idx");
    let _ = std::fs::remove_file(&idx);
    mkfifo(&idx);
    let run = kb_within(&t, &["list"], LIMIT);
    assert!(run.code == 0 && run.stdout.contains("one"), "{run:?}");
}

#[test]
fn a_fifo_access_log_never_blocks_or_fails_a_read() {
    let t = TestEnv::pinned();
    t.memory(1, "Use nextest in CI", &days_ago(1.0), &[]);
    mkfifo(&t.root().join(".co-cli/state/access.jsonl"));
    for args in [&["recall", "nextest"][..], &["show", "1"], &["heat"]] {
        let run = kb_within(&t, args, LIMIT);
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
        assert!(run.stderr.contains("access.jsonl"), "{args:?}: {run:?}");
    }
    // The compiled block reads the log for its Hot Memories, and says it could not.
    let context = kb_within(&t, &["context"], LIMIT);
    assert_eq!(context.code, 0, "{context:?}");
    assert!(context.stderr.contains("access.jsonl") && context.stderr.contains("not a regular file"), "{context:?}");
    assert!(kb_within(&t, &["recall", "nextest"], LIMIT).stdout.contains("Use nextest in CI"));
}

#[test]
fn a_fifo_named_git_does_not_block_the_branch_read() {
    let t = TestEnv::new();
    std::fs::create_dir_all(t.root().join(".co-cli")).unwrap();
    std::fs::remove_dir_all(t.root().join(".git")).ok();
    mkfifo(&t.root().join(".git"));
    for args in [
        &["board"][..],
        &["session", "start", "Fix the parser"],
        &["context", "--board"],
        &["consolidate", "--dry-run"],
    ] {
        let run = kb_within(&t, args, LIMIT);
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
    }
    assert_eq!(kb_within(&t, &["--json", "board"], LIMIT).json()["branch"], "default");
}

#[test]
fn a_fifo_gitignore_or_gitattributes_stops_init_before_it_creates_anything() {
    for name in [".gitignore", ".gitattributes"] {
        let t = TestEnv::new();
        mkfifo(&t.root().join(name));
        let run = kb_within(&t, &["init"], LIMIT);
        assert_eq!(run.code, 1, "{name}: {run:?}");
        assert!(run.stderr.contains(name) && run.stderr.contains("not a regular file"), "{run:?}");
        assert!(!t.root().join(".co-cli").exists(), "{name}: nothing is created");
    }
}

#[test]
fn init_appends_to_a_gitignore_that_is_not_utf8() {
    // git reads these files as bytes: kb appends its lines and keeps every byte.
    let t = TestEnv::new();
    let ignore = b"# caf\xe9\n*.o\n".to_vec();
    let attributes = b"*.bin binary \xff\xfe".to_vec();
    std::fs::write(t.root().join(".gitignore"), &ignore).unwrap();
    std::fs::write(t.root().join(".gitattributes"), &attributes).unwrap();
    t.kb(&["init"]).ok();
    let after = std::fs::read(t.root().join(".gitignore")).unwrap();
    assert!(after.starts_with(&ignore) && after.len() > ignore.len(), "{after:?}");
    assert!(String::from_utf8_lossy(&after[ignore.len()..]).contains(".co-cli/cache/"));
    let after = std::fs::read(t.root().join(".gitattributes")).unwrap();
    assert!(after.starts_with(&attributes), "{after:?}");
    assert_eq!(after[attributes.len()], b'\n', "a line break before the appended line");
    // A second init changes nothing.
    let before =
        (std::fs::read(t.root().join(".gitignore")).unwrap(), std::fs::read(t.root().join(".gitattributes")).unwrap());
    t.kb(&["init"]).ok();
    assert_eq!(before.0, std::fs::read(t.root().join(".gitignore")).unwrap());
    assert_eq!(before.1, std::fs::read(t.root().join(".gitattributes")).unwrap());
}

#[test]
fn deeply_nested_markdown_stays_fast() {
    // pulldown-cmark's time grows with the square of the nesting; kb bounds what it hands over.
    let t = TestEnv::new();
    let deep = format!("# Project context\n\n{} deep\n\n## Commands\n\nrun it\n", ">".repeat(100_000));
    let lines: String = (1..300).map(|i| format!("{} line\n", ">".repeat(i))).collect();
    for body in [deep, lines] {
        t.write(".co-cli/knowledge/context.md", &body);
        let run = kb_within(&t, &["context"], LIMIT);
        assert_eq!(run.code, 0, "{run:?}");
        kb_within(&t, &["compile"], LIMIT);
    }
}

#[test]
fn a_target_in_the_ended_sessions_is_refused_and_one_named_twice_is_written_once_with_a_warning() {
    let t = TestEnv::pinned();
    t.write(".co-cli/knowledge/context.md", "---\nversion: 1\nupdated: 2026-01-01T00:00:00Z\n---\n\nBody\n");
    // The ended sessions are kb's input, like the other knowledge folders.
    t.write(".co-cli/settings.json", r#"{"context_targets": [".co-cli/knowledge/sessions/x.md"]}"#);
    let run = t.kb(&["compile"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("kb's own input"), "{run:?}");
    assert!(!t.root().join(".co-cli/knowledge/sessions/x.md").exists());
    // Two entries naming one file: the first is written, and a warning says the second was not.
    t.write(
        ".co-cli/settings.json",
        r#"{"context_targets": ["AGENTS.md", {"path": "./AGENTS.md", "agent": "reviewer"}]}"#,
    );
    let run = t.kb(&["--json", "compile"]).ok();
    assert_eq!(run.json()["targets"].as_array().unwrap().len(), 1, "{run:?}");
    assert!(
        run.stderr.contains("warning:") && run.stderr.contains("./AGENTS.md is the same file as AGENTS.md"),
        "{run:?}"
    );
}
