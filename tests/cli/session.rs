//! The session focus (docs/behaviour.md): `kb session start | update | end | show`, the one open
//! session in `.co-cli/knowledge/session.md`, ended ones in `.co-cli/knowledge/sessions/`, the
//! secret filter, and session files kb cannot read (missing keys, bad YAML, git conflict markers).

use crate::common::*;
use serde_json::json;

const SESSION: &str = ".co-cli/knowledge/session.md";
const LATER: &str = "2026-11-22T13:30:00.250000+00:00";
const END: &str = "2026-11-22T15:00:00+00:00";

fn github_pat() -> String {
    format!("ghp_{}", "A1b2C3d4E5f6".repeat(3))
}

fn session_path(t: &TestEnv) -> std::path::PathBuf {
    t.root().join(SESSION)
}

/// Runs `kb ARGS` with the clock at `now`.
fn at(t: &TestEnv, now: &str, args: &[&str]) -> Run {
    let mut cmd = t.command(args);
    cmd.env("KB_NOW", now);
    run_command(cmd, None)
}

/// Names of the files in `sessions/`, sorted.
fn ended(t: &TestEnv) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(t.root().join(".co-cli/knowledge/sessions"))
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn start_writes_the_open_session_and_prints_it() {
    let t = TestEnv::pinned();
    let run = t.kb(&["session", "start", "Fix", "the", "parser:", "yes"]).ok();
    assert_eq!(
        run.stdout,
        "✓ Started session: Fix the parser: yes\nStarted: 2026-11-22T12:00:00+00:00\nLocation: .co-cli/knowledge/session.md\n"
    );
    assert_eq!(
        t.read(&session_path(&t)),
        "---\nfocus: 'Fix the parser: yes'\nstarted: '2026-11-22T12:00:00+00:00'\n---\n\n\n"
    );
    let shown = t.kb(&["--json", "session", "show"]).ok().json();
    assert_eq!(
        shown,
        json!({"focus": "Fix the parser: yes", "started": "2026-11-22T12:00:00+00:00", "updated": null,
               "ended": null, "summary": "", "path": session_path(&t).display().to_string()})
    );
}

#[test]
fn start_prints_the_session_json() {
    let t = TestEnv::pinned();
    let v = t.kb(&["--json", "session", "start", "Migrate CI"]).ok().json();
    assert_eq!(
        v,
        json!({"focus": "Migrate CI", "started": "2026-11-22T12:00:00+00:00", "updated": null, "ended": null,
               "summary": "", "path": session_path(&t).display().to_string()})
    );
}

#[test]
fn start_refuses_when_one_is_open_naming_its_focus_and_start() {
    let t = TestEnv::pinned();
    t.kb(&["session", "start", "First focus"]).ok();
    let before = t.snapshot();
    let run = at(&t, LATER, &["session", "start", "Second focus"]).err();
    assert!(run.stderr.contains("already open") && run.stderr.contains("\"First focus\""), "{run:?}");
    assert!(run.stderr.contains("2026-11-22T12:00:00+00:00"), "{run:?}");
    assert_same_tree(&before, &t.snapshot());
}

#[test]
fn start_refuses_an_empty_or_multi_line_focus() {
    let t = TestEnv::pinned();
    t.kb(&["session", "start", "  "]).err();
    t.kb(&["session", "start", "one\ntwo"]).err();
    t.kb(&["session", "start"]).usage();
    assert!(!session_path(&t).exists());
}

#[test]
fn update_replaces_the_summary_and_sets_updated() {
    let t = TestEnv::pinned();
    t.kb(&["session", "start", "parser"]).ok();
    let run = at(&t, LATER, &["session", "update", "Lexer", "done"]).ok();
    assert_eq!(run.stdout, "✓ Updated the summary of session: parser\nLocation: .co-cli/knowledge/session.md\n");
    assert_eq!(
        t.read(&session_path(&t)),
        format!("---\nfocus: parser\nstarted: '2026-11-22T12:00:00+00:00'\nupdated: '{LATER}'\n---\n\nLexer done\n")
    );
    let v = at(&t, END, &["--json", "session", "update", "Parser done"]).ok().json();
    assert_eq!((v["summary"].as_str(), v["updated"].as_str()), (Some("Parser done"), Some(END)));
    assert_eq!(v["started"], "2026-11-22T12:00:00+00:00");
}

#[test]
fn update_append_adds_a_paragraph_after_a_blank_line() {
    let t = TestEnv::pinned();
    t.kb(&["session", "start", "parser"]).ok();
    // Appending to an empty summary gives just the paragraph.
    t.kb(&["session", "update", "--append", "one"]).ok();
    let run = t.kb(&["session", "update", "--append", "two\nlines"]).ok();
    assert!(run.stdout.starts_with("✓ Appended to the summary of session: parser\n"), "{run:?}");
    let v = t.kb_stdin(&["--json", "session", "update", "--append", "-"], Some("  three from stdin\n\n")).ok().json();
    assert_eq!(v["summary"], "one\n\ntwo\nlines\n\nthree from stdin");
    assert!(t.read(&session_path(&t)).ends_with("---\n\none\n\ntwo\nlines\n\nthree from stdin\n"));
    let v = t.kb_stdin(&["--json", "session", "update", "-"], Some("replaced\r\nby stdin\r\n")).ok().json();
    assert_eq!(v["summary"], "replaced\nby stdin");
}

#[test]
fn update_and_end_need_an_open_session() {
    let t = TestEnv::pinned();
    std::fs::create_dir_all(t.root().join(".co-cli/knowledge")).unwrap();
    let before = t.snapshot();
    let run = t.kb(&["session", "update", "text"]).err();
    assert!(run.stderr.contains("no open session"), "{run:?}");
    t.kb(&["session", "update", "--append", "text"]).err();
    let run = t.kb(&["session", "end"]).err();
    assert!(run.stderr.contains("no open session"), "{run:?}");
    t.kb(&["session", "end", "--summary", "x"]).err();
    assert_same_tree(&before, &t.snapshot());
    t.kb(&["session", "update"]).usage();
}

#[test]
fn update_refuses_empty_text() {
    let t = TestEnv::pinned();
    t.kb(&["session", "start", "parser"]).ok();
    t.kb(&["session", "update", "keep me"]).ok();
    let before = t.snapshot();
    t.kb(&["session", "update", " "]).err();
    t.kb_stdin(&["session", "update", "--append", "-"], Some("\n")).err();
    assert_same_tree(&before, &t.snapshot());
}

#[test]
fn end_moves_the_session_with_ended_added() {
    let t = TestEnv::pinned();
    t.kb(&["session", "start", "Fix the Parser (v2)!"]).ok();
    at(&t, LATER, &["session", "update", "running summary"]).ok();
    let run = at(&t, END, &["session", "end"]).ok();
    let name = "20261122T120000Z-fix-the-parser-v2.md";
    assert_eq!(
        run.stdout,
        format!(
            "✓ Ended session: Fix the Parser (v2)!\nStarted: 2026-11-22T12:00:00+00:00\nEnded: {END}\nLocation: .co-cli/knowledge/sessions/{name}\n"
        )
    );
    assert!(!session_path(&t).exists());
    assert_eq!(ended(&t), [name]);
    let archived = t.root().join(".co-cli/knowledge/sessions").join(name);
    assert_eq!(
        t.read(&archived),
        format!(
            "---\nended: '{END}'\nfocus: 'Fix the Parser (v2)!'\nstarted: '2026-11-22T12:00:00+00:00'\nupdated: '{LATER}'\n---\n\nrunning summary\n"
        )
    );
    assert_eq!(t.kb(&["--json", "session", "show"]).ok().json(), json!({"session": null}));
    assert_eq!(t.kb(&["session", "show"]).ok().stdout, "No open session.\n");
    // A new session can start now.
    at(&t, END, &["session", "start", "next"]).ok();
}

#[test]
fn end_summary_leads_and_the_running_notes_stay_below_it() {
    let t = TestEnv::pinned();
    t.kb(&["session", "start", "parser"]).ok();
    t.kb(&["session", "update", "running"]).ok();
    let v = at(&t, END, &["--json", "session", "end", "--summary", "final words"]).ok().json();
    let path = t.root().join(".co-cli/knowledge/sessions/20261122T120000Z-parser.md");
    assert_eq!(
        v,
        json!({"focus": "parser", "started": "2026-11-22T12:00:00+00:00", "updated": "2026-11-22T12:00:00+00:00",
               "ended": END, "summary": "final words\n\n## Notes\n\nrunning", "path": path.display().to_string()})
    );
    assert!(t.read(&path).ends_with("---\n\nfinal words\n\n## Notes\n\nrunning\n"), "the notes are not lost");
    let t = TestEnv::pinned();
    t.kb(&["session", "start", "stdin"]).ok();
    let v = t.kb_stdin(&["--json", "session", "end", "--summary", "-"], Some("from stdin\n")).ok().json();
    assert_eq!(v["summary"], "from stdin");
}

#[test]
fn end_never_overwrites_an_ended_session_of_the_same_name() {
    let t = TestEnv::pinned();
    for summary in ["first", "second", "third"] {
        t.kb(&["session", "start", "same"]).ok();
        t.kb(&["session", "end", "--summary", summary]).ok();
    }
    assert_eq!(ended(&t), ["20261122T120000Z-same-2.md", "20261122T120000Z-same-3.md", "20261122T120000Z-same.md"]);
    let dir = t.root().join(".co-cli/knowledge/sessions");
    assert!(t.read(&dir.join("20261122T120000Z-same.md")).ends_with("\nfirst\n"));
    assert!(t.read(&dir.join("20261122T120000Z-same-3.md")).ends_with("\nthird\n"));
}

#[test]
fn end_names_the_file_by_the_start_in_utc_and_a_focus_without_letters() {
    let t = TestEnv::pinned();
    t.write(SESSION, "---\nfocus: 日本語\nstarted: '2026-11-22T14:27:04.330453+02:00'\n---\n\nnotes\n");
    t.kb(&["session", "end"]).ok();
    assert_eq!(ended(&t), ["20261122T122704Z.md"]);
}

#[test]
fn show_prints_the_open_session() {
    let t = TestEnv::pinned();
    assert_eq!(t.kb(&["--json", "session", "show"]).ok().json(), json!({"session": null}));
    t.kb(&["session", "start", "parser"]).ok();
    at(&t, LATER, &["session", "update", "one\n\ntwo"]).ok();
    let run = t.kb(&["session", "show"]).ok();
    assert_eq!(
        run.stdout,
        format!(
            "Session: parser\nStarted: 2026-11-22T12:00:00+00:00\nUpdated: {LATER}\nLocation: .co-cli/knowledge/session.md\n\none\n\ntwo\n"
        )
    );
}

#[test]
fn unknown_keys_and_comments_are_kept() {
    let t = TestEnv::pinned();
    let p = t.write(SESSION, "---\n# who\nowner: ana\nfocus: parser\nstarted: 2026-11-22T12:00:00Z\n---\n\nold\n");
    t.kb(&["session", "update", "--append", "new"]).ok();
    assert_eq!(
        t.read(&p),
        "---\n# who\nowner: ana\nfocus: parser\nstarted: 2026-11-22T12:00:00Z\nupdated: '2026-11-22T12:00:00+00:00'\n---\n\nold\n\nnew\n"
    );
    let v = t.kb(&["--json", "session", "end"]).ok().json();
    assert_eq!(v["started"], "2026-11-22T12:00:00Z");
    let archived = t.root().join(".co-cli/knowledge/sessions/20261122T120000Z-parser.md");
    assert!(t.read(&archived).contains("owner: ana\n"));
}

#[test]
fn secrets_in_focus_or_summary_are_refused() {
    let t = TestEnv::pinned();
    std::fs::create_dir_all(t.root().join(".co-cli/knowledge")).unwrap();
    let pat = github_pat();
    let before = t.snapshot();
    let run = t.kb(&["session", "start", &format!("rotate {pat}")]).err();
    assert!(run.stderr.contains("focus matches the github-pat rule"), "{run:?}");
    assert_same_tree(&before, &t.snapshot());
    t.kb(&["session", "start", "rotate the token"]).ok();
    let before = t.snapshot();
    let run = t.kb(&["session", "update", &format!("token is {pat}")]).err();
    assert!(run.stderr.contains("summary matches the github-pat rule"), "{run:?}");
    t.kb(&["session", "update", "--append", &format!("token is {pat}")]).err();
    t.kb_stdin(&["session", "update", "-"], Some(&format!("token is {pat}\n"))).err();
    t.kb(&["session", "end", "--summary", &format!("token is {pat}")]).err();
    assert_same_tree(&before, &t.snapshot());
}

#[test]
fn redact_stores_the_secret_replaced() {
    let t = TestEnv::pinned();
    let pat = github_pat();
    let run = t.kb(&["--json", "session", "start", "--redact", &format!("rotate {pat}")]).ok();
    assert_eq!(run.json()["focus"], "rotate [REDACTED:github-pat]");
    assert!(run.stderr.contains("redacted secrets matching: github-pat"), "{run:?}");
    let v = t.kb(&["--json", "session", "update", "--redact", &format!("token {pat}")]).ok().json();
    assert_eq!(v["summary"], "token [REDACTED:github-pat]");
    let v = t.kb(&["--json", "session", "end", "--redact", "--summary", &format!("gone {pat}")]).ok().json();
    assert_eq!(v["summary"], "gone [REDACTED:github-pat]\n\n## Notes\n\ntoken [REDACTED:github-pat]");
    let text = t.read(std::path::Path::new(v["path"].as_str().unwrap()));
    assert!(!text.contains(&pat), "{text}");
}

/// Session files kb cannot read, and the 1-based line each problem is reported on.
fn bad_files() -> Vec<(&'static str, String, usize)> {
    vec![
        ("no started", "---\nfocus: parser\n---\n\nsummary\n".to_string(), 1),
        ("malformed YAML", "---\nfocus: parser\nstarted: [oops\n---\n\nsummary\n".to_string(), 3),
        ("bad timestamp", "---\nfocus: parser\nstarted: 'yesterday'\n---\n".to_string(), 3),
        (
            "conflict",
            "<<<<<<< HEAD\n---\nfocus: mine\nstarted: '2026-11-22T12:00:00+00:00'\n---\n\nmy summary\n=======\n---\nfocus: theirs\nstarted: '2026-11-22T11:00:00+00:00'\n---\n\ntheir summary\n>>>>>>> origin/main\n"
                .to_string(),
            1,
        ),
        (
            "conflict in the body",
            "---\nfocus: parser\nstarted: '2026-11-22T12:00:00+00:00'\n---\n\n<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> b\n"
                .to_string(),
            6,
        ),
    ]
}

#[test]
fn a_bad_session_file_stops_the_commands_that_need_it() {
    for (what, text, line) in bad_files() {
        let t = TestEnv::pinned();
        t.write(SESSION, &text);
        let before = t.snapshot();
        let at_line = format!("session.md:{line}: ");
        for args in [
            &["session", "start", "other"][..],
            &["session", "update", "x"],
            &["session", "update", "--append", "x"],
            &["session", "end"],
            &["session", "end", "--summary", "x"],
        ] {
            let run = t.kb(args).err();
            assert!(run.stderr.contains(&at_line), "{what} {args:?}: {run:?}");
            assert!(run.stderr.contains(".co-cli/knowledge/session.md"), "{what}: {run:?}");
        }
        assert_same_tree(&before, &t.snapshot());
        if what.starts_with("conflict") {
            let run = t.kb(&["session", "end"]).err();
            assert!(run.stderr.contains("conflict markers"), "{run:?}");
        }
    }
}

#[test]
fn a_bad_session_file_is_a_warning_for_show_and_never_rewritten() {
    for (what, text, line) in bad_files() {
        let t = TestEnv::pinned();
        t.write(SESSION, &text);
        let before = t.snapshot();
        let run = t.kb(&["--json", "session", "show"]).ok();
        assert_eq!(run.json(), json!({"session": null}), "{what}");
        assert!(run.stderr.contains(&format!(".co-cli/knowledge/session.md:{line}: ")), "{what}: {run:?}");
        let run = t.kb(&["session", "show"]).ok();
        assert!(run.stdout.contains("No readable open session"), "{what}: {run:?}");
        assert!(run.stderr.contains("warning"), "{what}: {run:?}");
        assert_same_tree(&before, &t.snapshot());
    }
}

#[test]
fn check_reports_bad_session_files() {
    for (what, text, line) in bad_files() {
        let t = TestEnv::pinned();
        let p = t.write(SESSION, &text);
        let before = t.snapshot();
        let run = t.kb(&["--json", "check"]);
        assert_eq!(run.code, 1, "{what}: {run:?}");
        let problems = run.json()["problems"].clone();
        // A conflict is one problem per marker line, the first one the session's own.
        let want = if what.starts_with("conflict") { 3 } else { 1 };
        assert_eq!(problems.as_array().unwrap().len(), want, "{what}: {problems}");
        assert!(problems.as_array().unwrap().iter().all(|x| x["path"] == p.display().to_string()), "{what}");
        assert_eq!(problems[0]["line"], line, "{what}");
        assert_same_tree(&before, &t.snapshot());
    }
    // Good files check clean, and an ended session without `ended` is a problem.
    let t = TestEnv::pinned();
    t.kb(&["session", "start", "a"]).ok();
    t.kb(&["session", "end"]).ok();
    t.kb(&["session", "start", "b"]).ok();
    let run = t.kb(&["--json", "check"]).ok();
    assert_eq!(run.json()["files"], 2);
    t.write(
        ".co-cli/knowledge/sessions/20261101T000000Z-x.md",
        "---\nfocus: x\nstarted: '2026-11-01T00:00:00Z'\n---\n",
    );
    let run = t.kb(&["--json", "check"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.json()["problems"][0]["message"], "missing required field: ended");
}

#[test]
fn a_session_file_symlinked_out_of_the_root_is_not_read_or_written() {
    let t = TestEnv::pinned();
    let outside = t.base.join("outside.md");
    std::fs::write(&outside, "---\nfocus: secret plans\nstarted: '2026-11-22T12:00:00+00:00'\n---\n\nx\n").unwrap();
    std::fs::create_dir_all(t.root().join(".co-cli/knowledge")).unwrap();
    std::os::unix::fs::symlink(&outside, session_path(&t)).unwrap();
    let run = t.kb(&["--json", "session", "show"]).ok();
    assert_eq!(run.json(), json!({"session": null}));
    assert!(!run.stdout.contains("secret plans"));
    t.kb(&["session", "update", "x"]).err();
    t.kb(&["session", "end"]).err();
    assert!(std::fs::read_to_string(&outside).unwrap().ends_with("\nx\n"));
    assert!(std::fs::symlink_metadata(session_path(&t)).unwrap().file_type().is_symlink());
}

#[test]
fn session_writes_need_a_repository() {
    let Some(t) = TestEnv::markerless() else { return };
    std::fs::remove_dir_all(t.root().join(".git")).unwrap();
    let run = t.kb(&["session", "start", "x"]).err();
    assert!(run.stderr.contains("no repository"), "{run:?}");
    assert!(!t.root().join(".co-cli").exists());
}

#[test]
fn every_session_command_has_examples() {
    let t = TestEnv::pinned();
    for args in [
        &["session", "--help"][..],
        &["session", "start", "--help"],
        &["session", "update", "--help"],
        &["session", "end", "--help"],
        &["session", "show", "--help"],
    ] {
        let out = t.kb(args).ok().stdout;
        assert!(out.contains("Examples:\n  kb session ") || out.contains("Examples:\n  git "), "{args:?}: {out}");
    }
}

#[test]
fn co_cli_style_readers_load_the_session_files() {
    if !python_ready() {
        return;
    }
    let t = TestEnv::pinned();
    t.kb(&["session", "start", "yes"]).ok();
    at(&t, LATER, &["session", "update", "on: 1_000"]).ok();
    let script = "import sys, yaml\ntext = open(sys.stdin.read()).read()\n_, fm, body = text.split('---\\n', 2)\nd = yaml.safe_load(fm)\nprint(sorted((k, type(v).__name__, v) for k, v in d.items()), repr(body.strip()))";
    let out = python(script, session_path(&t).to_str().unwrap());
    assert_eq!(
        out.trim(),
        format!(
            "[('focus', 'str', 'yes'), ('started', 'str', '2026-11-22T12:00:00+00:00'), ('updated', 'str', '{LATER}')] 'on: 1_000'"
        )
    );
    let v = at(&t, END, &["--json", "session", "end"]).ok().json();
    let out = python(script, v["path"].as_str().unwrap());
    assert!(out.contains(&format!("('ended', 'str', '{END}')")), "{out}");
}

#[test]
fn concurrent_starts_open_one_session() {
    let t = TestEnv::pinned();
    std::fs::create_dir_all(t.root().join(".co-cli/knowledge")).unwrap();
    let children: Vec<_> = (0..4)
        .map(|i| {
            let mut cmd = t.command(&["session", "start", &format!("focus {i}")]);
            cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
            cmd.spawn().unwrap()
        })
        .collect();
    let codes: Vec<i32> = children.into_iter().map(|mut c| c.wait().unwrap().code().unwrap_or(-1)).collect();
    assert_eq!(codes.iter().filter(|c| **c == 0).count(), 1, "{codes:?}");
    assert_eq!(codes.iter().filter(|c| **c == 1).count(), 3, "{codes:?}");
    let v = t.kb(&["--json", "session", "show"]).ok().json();
    assert!(v["focus"].as_str().unwrap().starts_with("focus "), "{v}");
}

#[test]
fn text_with_conflict_marker_lines_is_refused_and_nothing_is_written() {
    // Exit 1 means nothing was written: kb never stores what its own session reader rejects.
    let t = TestEnv::pinned();
    t.kb(&["session", "start", "Fix the parser"]).ok();
    let before = std::fs::read(session_path(&t)).unwrap();
    let marked = "Merged the branches\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> feature";
    for args in [
        &["session", "update", "--append", marked][..],
        &["session", "update", marked],
        &["session", "end", "--summary", marked],
    ] {
        let run = t.kb(args).err();
        assert!(run.stderr.contains("conflict-marker line"), "{args:?}: {run:?}");
        assert_eq!(std::fs::read(session_path(&t)).unwrap(), before, "{args:?}: session.md is untouched");
        assert!(ended(&t).is_empty(), "{args:?}: no session was ended");
    }
    let run = t.kb(&["session", "start", "<<<<<<< HEAD"]).err();
    assert!(run.stderr.contains("conflict-marker line"), "{run:?}");
    // The session still works.
    t.kb(&["session", "update", "--append", "Tests next"]).ok();
    t.kb(&["session", "show"]).ok();
    t.kb(&["session", "end"]).ok();
    assert_eq!(ended(&t).len(), 1);
}
