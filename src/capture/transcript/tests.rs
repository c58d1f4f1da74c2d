use super::*;
use std::time::Duration;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts").join(name)
}

fn read_ok(agent: Agent, name: &str) -> Transcript {
    match read(agent, &fixture(name)) {
        Read::Read(t) => t,
        Read::NotRead(why) => panic!("{name} not read: {why}"),
    }
}

fn at(ts: &str) -> Option<DateTime<Utc>> {
    Some(DateTime::parse_from_rfc3339(ts).unwrap().with_timezone(&Utc))
}

const FIRST: &str = "Add a GET /v2/orders endpoint that lists orders. I prefer tabs over spaces in the Makefile, so keep them if you touch it.";
const SECOND: &str = "actually, we use cargo nextest, not cargo test. And we decided to keep the API versioned under /v2, so no unversioned aliases.";
const THIRD_GHP: &str = "should we use sqlite? The staging token is ghp_abcdefghijklmnopqrstuvwxyz0123456789 if you need it for the fixtures.";

fn ran(command: &str, outcome: Outcome) -> Ran {
    Ran { command: command.to_string(), outcome }
}

/// The build, the failed test run and the one that passed, as every session of the fixtures
/// ran them.
fn build_fail_pass() -> Vec<Ran> {
    vec![
        ran("cargo build", Outcome::Ok),
        ran("cargo nextest run", Outcome::Failed(Some(100))),
        ran("cargo nextest run", Outcome::Ok),
    ]
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn claude_code_transcript() {
    let t = read_ok(Agent::Claude, "claude.jsonl");
    assert_eq!(
        t.requests,
        strings(&[FIRST, SECOND, THIRD_GHP]),
        "no meta line, slash command, its output or sub-agent prompt"
    );
    assert_eq!(
        t.files,
        strings(&["src/api/orders.rs", "src/api/mod.rs"]),
        "the failed edit of the Makefile changed nothing"
    );
    assert_eq!(t.commands, build_fail_pass());
    assert_eq!(
        t.errors,
        strings(&[
            "cargo nextest run: error: test run failed",
            "Edit: File has not been read yet. Read it first before writing to it.",
            "API Error: 529 Overloaded. This is a server-side issue, usually temporary.",
        ])
    );
    assert_eq!((t.started, t.ended), (at("2026-11-30T09:00:01Z"), at("2026-11-30T09:02:41Z")));
    assert_eq!(t.branch.as_deref(), Some("feat/v2-api"));
    assert_eq!(t.cwd.as_deref(), Some("/home/ana/src/shop"));
    assert_eq!(t.unknown_lines, 3, "an unknown line type, a junk line and the truncated last line");
}

#[test]
fn codex_rollout() {
    let t = read_ok(Agent::Codex, "codex.jsonl");
    assert_eq!(
        t.requests,
        strings(&[
            FIRST,
            SECOND,
            "should we use sqlite? The staging key is AKIAQWERTYUIOPASDFGH if you need it for the fixtures."
        ]),
        "the user_message events, not the injected instructions and environment"
    );
    assert_eq!(
        t.files,
        strings(&["src/api/orders.rs", "src/api/mod.rs"]),
        "the patch that failed verification changed nothing"
    );
    assert_eq!(t.commands, build_fail_pass(), "JSON metadata and `Process exited with code 0`");
    assert_eq!(
        t.errors,
        strings(&[
            "cargo nextest run: error: test run failed",
            "apply_patch: apply_patch verification failed: Failed to find expected lines in Makefile:",
            "stream disconnected before completion: Transport error: error decoding response body",
        ])
    );
    assert_eq!((t.started, t.ended), (at("2026-11-30T10:00:00.050Z"), at("2026-11-30T10:02:41Z")));
    assert_eq!(t.branch.as_deref(), Some("feat/v2-api"));
    assert_eq!(t.cwd.as_deref(), Some("/home/ana/src/shop"));
    assert_eq!(t.unknown_lines, 3, "an unknown record, binary junk, the truncated last line");
}

#[test]
fn codex_rollout_without_user_message_events_falls_back_to_the_user_items() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rollout.jsonl");
    let text = [
        r#"{"id":"s1","timestamp":"2025-06-01T10:00:00Z","instructions":null}"#,
        r#"{"record_type":"state"}"#,
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n<cwd>/w</cwd>\n</environment_context>"}]}"#,
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the build"}]}"#,
        r#"{"type":"function_call","name":"shell","arguments":"{\"command\":[\"make\"]}","call_id":"c1"}"#,
        r#"{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"make: *** No rule to make target 'all'.  Stop.\\n\",\"metadata\":{\"exit_code\":2}}"}"#,
    ]
    .join("\n");
    std::fs::write(&path, text).unwrap();
    let Read::Read(t) = read(Agent::Codex, &path) else { panic!() };
    assert_eq!(t.requests, strings(&["fix the build"]));
    assert_eq!(t.commands, vec![ran("make", Outcome::Failed(Some(2)))]);
    assert_eq!(t.errors, strings(&["make: make: *** No rule to make target 'all'. Stop."]));
    assert_eq!(t.unknown_lines, 0);
}

#[test]
fn gemini_cli_recording() {
    let t = read_ok(Agent::Gemini, "gemini.jsonl");
    assert_eq!(t.requests, strings(&[FIRST, SECOND, THIRD_GHP]), "no /command, no rewound message");
    // The recording names no folder: the paths stay as written (the checkpoint makes them
    // relative to the session's folder from the hook).
    assert_eq!(t.files, strings(&["/home/ana/src/shop/src/api/orders.rs", "/home/ana/src/shop/src/api/mod.rs"]));
    assert_eq!(t.commands, build_fail_pass(), "a message rewritten with its tool results: the last one counts");
    assert_eq!(
        t.errors,
        strings(&[
            "cargo nextest run: error: test run failed",
            "replace: Failed to edit, 0 occurrences found for old_string in /home/ana/src/shop/Makefile. No edits made.",
            "[API Error: 503 The model is overloaded. Please try again later.]",
        ])
    );
    assert_eq!((t.started, t.ended), (at("2026-11-30T11:00:00Z"), at("2026-11-30T11:02:41Z")));
    assert_eq!((t.branch, t.cwd), (None, None));
    assert_eq!(t.unknown_lines, 3, "an unknown record, a junk line, the truncated last line");
}

#[test]
fn gemini_cli_older_one_document_recording() {
    let t = read_ok(Agent::Gemini, "gemini-legacy.json");
    let lines = read_ok(Agent::Gemini, "gemini.jsonl");
    assert_eq!(
        (&t.requests, &t.files, &t.commands, &t.errors),
        (&lines.requests, &lines.files, &lines.commands, &lines.errors)
    );
    assert_eq!((t.started, t.ended), (lines.started, lines.ended));
    assert_eq!(t.unknown_lines, 1, "the one message that is not an object");
    // Pretty-printed under another name: still one document.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    std::fs::copy(fixture("gemini-legacy.json"), &path).unwrap();
    assert_eq!(read(Agent::Gemini, &path), Read::Read(t));
}

#[test]
fn copilot_cli_events() {
    let t = read_ok(Agent::Copilot, "copilot-events.jsonl");
    assert_eq!(t.requests, strings(&[FIRST, SECOND, THIRD_GHP]), "not the injected skill");
    assert_eq!(t.files, strings(&["src/api/orders.rs", "src/api/mod.rs"]), "not the failed edit, not a view");
    assert_eq!(t.commands, build_fail_pass(), "`<exited with exit code N>` and `shell_exit` contents");
    assert_eq!(
        t.errors,
        strings(&[
            "cargo nextest run: error: test run failed",
            "edit: No match found for old_str in /home/ana/src/shop/Makefile",
            "Sorry, you have been rate-limited. Please wait a moment before trying again.",
        ])
    );
    assert_eq!((t.started, t.ended), (at("2026-11-30T12:00:00Z"), at("2026-11-30T12:02:41Z")));
    assert_eq!(t.branch.as_deref(), Some("feat/v2-api"));
    assert_eq!(t.cwd.as_deref(), Some("/home/ana/src/shop"));
    assert_eq!(t.unknown_lines, 3, "an unknown event namespace, a junk line, the truncated last line");
}

#[test]
fn cursor_transcript() {
    let t = read_ok(Agent::Cursor, "cursor.jsonl");
    assert_eq!(t.requests, strings(&[FIRST, SECOND, THIRD_GHP]), "the text of <user_query>");
    assert_eq!(t.files, strings(&["/home/ana/src/shop/src/api/orders.rs", "/home/ana/src/shop/src/api/mod.rs"]));
    // Cursor records no tool results: every outcome is unknown, and no error is known.
    assert_eq!(
        t.commands,
        vec![
            ran("cargo build", Outcome::Unknown),
            ran("cargo nextest run", Outcome::Unknown),
            ran("cargo nextest run", Outcome::Unknown)
        ]
    );
    assert!(t.errors.is_empty());
    assert_eq!((t.started, t.ended, t.branch, t.cwd), (None, None, None, None));
    assert_eq!(t.unknown_lines, 3, "a system line, binary junk, the truncated last line");
}

#[test]
fn junk_binary_and_a_truncated_last_line_are_counted_never_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut bytes = b"\xEF\xBB\xBF{\"type\":\"user\",\"message\":{\"content\":\"hello\"}}\r\n\n   \n".to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe, 0x00, b'\n']);
    bytes.extend_from_slice(b"[1,2,3]\n\"a string\"\n{\"type\":\"user\"}\n{\"type\":\"user\",\"message\":{\"content\":\"world\"}}\n{\"type\":\"us");
    std::fs::write(&path, &bytes).unwrap();
    for agent in [Agent::Claude, Agent::Codex, Agent::Gemini, Agent::Copilot, Agent::Cursor] {
        let Read::Read(t) = read(agent, &path) else { panic!("{agent:?}") };
        assert!(t.unknown_lines >= 4, "{agent:?}: {t:?}");
    }
    let Read::Read(t) = read(Agent::Claude, &path) else { panic!() };
    assert_eq!(t.requests, strings(&["hello", "world"]), "a BOM and CRLF are read");
    assert_eq!(t.unknown_lines, 5, "binary, an array, a string, a user line without a message, the cut line");
    // An empty file is an empty transcript.
    std::fs::write(&path, b"").unwrap();
    assert_eq!(read(Agent::Codex, &path), Read::Read(Transcript::default()));
}

#[test]
fn only_a_regular_file_of_at_most_the_limit_is_read() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(read(Agent::Claude, &dir.path().join("nope.jsonl")), Read::NotRead("missing".into()));
    assert_eq!(read(Agent::Claude, dir.path()), Read::NotRead("not a regular file (a folder)".into()));
    let big = dir.path().join("big.jsonl");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(2 << 30).unwrap();
    assert_eq!(read(Agent::Codex, &big), Read::NotRead("larger than 256.0 MiB (2.0 GiB)".into()));
    f.set_len(MAX_TRANSCRIPT + 1).unwrap();
    assert!(matches!(read(Agent::Codex, &big), Read::NotRead(why) if why.starts_with("larger than 256.0 MiB")));
    std::fs::remove_file(&big).unwrap();
    #[cfg(unix)]
    {
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert_eq!(read(Agent::Claude, &link), Read::NotRead("not a regular file (a character device)".into()));
        let dangling = dir.path().join("dangling.jsonl");
        std::os::unix::fs::symlink(dir.path().join("gone"), &dangling).unwrap();
        assert_eq!(read(Agent::Claude, &dangling), Read::NotRead("missing (a symlink that leads nowhere)".into()));
        let to_file = dir.path().join("to-file.jsonl");
        std::os::unix::fs::symlink(fixture("claude.jsonl"), &to_file).unwrap();
        assert_eq!(read(Agent::Claude, &to_file), read(Agent::Claude, &fixture("claude.jsonl")));
    }
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.jsonl");
    rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let path = fifo.clone();
    std::thread::spawn(move || tx.send(read(Agent::Claude, &path)).unwrap());
    // No writer ever opens the FIFO: a blocking open would never return.
    let got = rx.recv_timeout(Duration::from_secs(10)).expect("reading a FIFO blocked");
    assert_eq!(got, Read::NotRead("not a regular file (a FIFO)".into()));
}

#[test]
fn agents_without_a_transcript_are_not_read() {
    assert_eq!(read(Agent::Cline, &fixture("claude.jsonl")), Read::NotRead("kb reads no transcript of cline".into()));
}

#[test]
fn default_paths() {
    let home = Path::new("/h");
    assert_eq!(
        default_path(Agent::Copilot, home, "b7e3c9a1"),
        Some(PathBuf::from("/h/.copilot/session-state/b7e3c9a1/events.jsonl"))
    );
    assert_eq!(default_path(Agent::Copilot, home, "../x"), None);
    assert_eq!(default_path(Agent::Copilot, home, ""), None);
    assert_eq!(default_path(Agent::Claude, home, "b7e3c9a1"), None);
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        cursor_path(dir.path(), Path::new("/home/ana/src/my.shop"), "c1"),
        Some(dir.path().join(".cursor/projects/home-ana-src-my-shop/agent-transcripts/c1.jsonl"))
    );
    let nested = dir.path().join(".cursor/projects/home-ana-src-my-shop/agent-transcripts/c1");
    std::fs::create_dir_all(&nested).unwrap();
    assert_eq!(cursor_path(dir.path(), Path::new("/home/ana/src/my.shop"), "c1"), Some(nested.join("c1.jsonl")));
    assert_eq!(cursor_path(dir.path(), Path::new("/w"), "a/b"), None);
}

#[test]
fn outcomes_display_and_parse_back() {
    for (o, text) in [
        (Outcome::Ok, "ok"),
        (Outcome::Failed(Some(101)), "failed (exit 101)"),
        (Outcome::Failed(Some(-1)), "failed (exit -1)"),
        (Outcome::Failed(None), "failed"),
        (Outcome::Unknown, "unknown"),
    ] {
        assert_eq!(o.to_string(), text);
        assert_eq!(Outcome::parse(text), Some(o));
    }
    assert_eq!(Outcome::parse("failed (exit x)"), None);
    assert_eq!(Outcome::parse("fine"), None);
}

#[test]
fn exit_codes_in_each_agents_words() {
    assert_eq!(exit_code_in("Exit code 101\nerror: x"), Some(101));
    assert_eq!(exit_code_in("Exit code: 2\nWall time: 1s\nOutput:\n"), Some(2));
    assert_eq!(exit_code_in("Chunk ID: a\nWall time: 1s\nProcess exited with code 1\nOutput:\n"), Some(1));
    assert_eq!(exit_code_in("Output: x\nExit Code: 100\nProcess Group PGID: 1"), Some(100));
    let long = format!("{}\n<exited with exit code 3>", "line\n".repeat(1000));
    assert_eq!(exit_code_in(&long), Some(3));
    let buried = format!("{}Exit code 7\n{}", "line\n".repeat(50), "line\n".repeat(50));
    assert_eq!(exit_code_in(&buried), None, "a command's own output in the middle says nothing");
    assert_eq!(exit_code_in("all good"), None);
}

#[test]
fn error_lines_prefer_what_says_error() {
    assert_eq!(error_line("Exit code 1\n  Summary: 1 failed\nerror: test run failed"), Some("error: test run failed"));
    assert_eq!(error_line("Exit code 1\nthread panicked at x\n"), Some("thread panicked at x"));
    assert_eq!(error_line("Exit code 1\n\nnothing here"), Some("nothing here"));
    assert_eq!(error_line("<tool_use_error>File does not exist.</tool_use_error>"), Some("File does not exist."));
    assert_eq!(error_line("Exit code 1\n"), None);
    let long = format!("{}\nerror[E0308]: mismatched types", "ok\n".repeat(5000));
    assert_eq!(error_line(&long), Some("error[E0308]: mismatched types"), "the last lines are looked at too");
}

#[test]
fn one_line_cuts_at_the_limit() {
    assert_eq!(one_line("  a\n\tb  c ", 200), "a b c");
    assert_eq!(one_line("abcdef", 6), "abcdef");
    assert_eq!(one_line("abcdefg", 6), "abcde…");
    assert_eq!(one_line("abc defg", 6), "abc d…");
    assert_eq!(one_line("abcd efg", 6), "abcd…", "no space before the mark");
    assert_eq!(one_line(&"é".repeat(300), 200).chars().count(), 200);
}

#[test]
fn injected_text_is_not_a_request() {
    for text in [
        "<command-name>/clear</command-name>\n<command-message>clear</command-message>",
        "<local-command-stdout>done</local-command-stdout>",
        "<environment_context>\n<cwd>/w</cwd>\n</environment_context>",
        "<user-prompt-submit-hook>kb: ...</user-prompt-submit-hook>",
        "[Request interrupted by user for tool use]",
        "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>x</INSTRUCTIONS>",
    ] {
        assert!(injected(text), "{text}");
    }
    for text in ["fix <b>this</b>", "<3 thanks", "should we use sqlite?", "<div> is not closed here"] {
        assert!(!injected(text), "{text}");
    }
}

#[test]
fn files_are_relative_to_the_session_folder_when_inside_it() {
    assert_eq!(relative("/w/src/a.rs", Some("/w")), "src/a.rs");
    assert_eq!(relative("/w2/src/a.rs", Some("/w")), "/w2/src/a.rs");
    assert_eq!(relative("./src/a.rs", Some("/w")), "src/a.rs");
    assert_eq!(relative("/w", Some("/w")), "/w");
    let mut t = Transcript { files: strings(&["/w/a", "a", "/x/b"]), ..Transcript::default() };
    t.relativize(Some("/w"));
    assert_eq!(t.files, strings(&["a", "/x/b"]));
}

#[test]
fn commands_from_arguments() {
    let raw = |s: &str| RawValue::from_string(s.to_string()).unwrap();
    assert_eq!(command_of(&raw(r#"{"command":"cargo test"}"#)).as_deref(), Some("cargo test"));
    assert_eq!(
        command_of(&raw(r#"{"command":["bash","-lc","cargo test --all"]}"#)).as_deref(),
        Some("cargo test --all")
    );
    assert_eq!(command_of(&raw(r#"{"command":["/bin/zsh","-c","ls"]}"#)).as_deref(), Some("ls"));
    assert_eq!(command_of(&raw(r#"{"command":["git","status"]}"#)).as_deref(), Some("git status"));
    assert_eq!(command_of(&raw(r#"{"cmd":"make"}"#)).as_deref(), Some("make"));
    assert_eq!(command_of(&raw(r#"{"x":1}"#)), None);
    assert_eq!(
        patch_files(
            "*** Begin Patch\n*** Add File: a.rs\n+x\n*** Update File: b.rs\n*** Move to: c.rs\n*** Delete File: d.rs\n*** End Patch"
        ),
        strings(&["a.rs", "b.rs", "c.rs", "d.rs"])
    );
}

#[test]
fn errors_are_short_kept_once_and_at_most_twenty() {
    let mut b = Builder::default();
    for i in 0..30 {
        b.error(&format!("error {i} {}", "x".repeat(300)));
        b.error(&format!("error {i} {}", "x".repeat(300)));
    }
    let t = b.finish(0);
    assert_eq!(t.errors.len(), MAX_ERRORS);
    assert!(t.errors.iter().all(|e| e.chars().count() <= MAX_ERROR_CHARS));
    assert!(t.errors[1].starts_with("error 1 "));
}
