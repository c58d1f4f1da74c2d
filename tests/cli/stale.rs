//! What reaches an agent is true (SPEC §8, §14): `kb compile`, `kb context` and MCP
//! `get_context` check the paths, lines and commands of every item they include, by `stat`; a
//! stale memory or record is left out, a stale decision, context file, instruction file or session
//! kept, each with a warning naming it and the reference; compile exits 1, `kb context` 0.

use crate::common::TestEnv;
use crate::context::{PROJECT, context_file};

const EVERY_AGENT: [&str; 8] = ["claude", "codex", "copilot", "cursor", "gemini", "windsurf", "kiro", "cline"];

/// Every file a compile writes for `AGENTS.md` and the eight agents.
const AGENT_FILES: [&str; 8] = [
    "AGENTS.md",
    "CLAUDE.md",
    "GEMINI.md",
    ".github/copilot-instructions.md",
    ".cursor/rules/kb-context.mdc",
    ".windsurf/rules/kb-context.md",
    ".kiro/steering/kb-context.md",
    ".clinerules/kb-context.md",
];

/// A repository whose memory, record and decision cite `src/old.rs`, with every agent on.
fn citing_old() -> TestEnv {
    let t = TestEnv::new();
    t.write(
        ".co-cli/settings.json",
        &serde_json::json!({"agents": EVERY_AGENT, "context_targets": ["AGENTS.md"]}).to_string(),
    );
    t.write("src/old.rs", "fn a() {}\nfn b() {}\nfn parse() {}\n");
    t.kb(&["save", "The parser entry point is `src/old.rs:3` (STALEMEM)", "--type", "core_context"]).ok();
    t.kb(&["save", "Deploys go out on Fridays (GOODMEM)", "--type", "core_context"]).ok();
    t.kb(&["decision", "add", "Parsing lives in `src/old.rs` alone (STALEDEC)", "--type", "architectural"]).ok();
    t.write(
        ".github/copilot-memories.jsonl",
        "{\"id\":\"mem-1\",\"subject\":\"lexer\",\"fact\":\"it lives beside the parser (STALEREC)\",\"citations\":[\"src/old.rs:2\"]}\n\
         {\"id\":\"mem-2\",\"subject\":\"ci\",\"fact\":\"runs on every push (GOODREC)\"}\n",
    );
    t
}

#[test]
fn a_memory_whose_file_was_renamed_reaches_no_agent_file_and_compile_exits_1() {
    let t = citing_old();
    t.kb(&["compile"]).ok();
    for f in AGENT_FILES {
        let text = t.read(&t.root().join(f));
        for word in ["STALEMEM", "STALEREC", "STALEDEC", "GOODMEM", "GOODREC"] {
            assert!(text.contains(word), "{f} lacks {word} before the rename:\n{text}");
        }
    }
    std::fs::rename(t.root().join("src/old.rs"), t.root().join("src/new.rs")).unwrap();
    let audit = t.kb(&["audit"]);
    assert_eq!(audit.code, 1, "{audit:?}");
    assert!(audit.stdout.contains("Memory 1 (") && audit.stdout.contains("`src/old.rs` does not exist"), "{audit:?}");

    // Before this change compile --check said "up to date" and exited 0.
    let check = t.kb(&["compile", "--check"]);
    assert_eq!(check.code, 1, "{check:?}");
    assert!(check.stderr.contains("stale item"), "{check:?}");

    let r = t.kb(&["compile"]);
    assert_eq!(r.code, 1, "{r:?}");
    let warned = |what: &str, how: &str| {
        r.stderr
            .lines()
            .any(|l| l.contains(&format!("stale: {what} {how}")) && l.contains("`src/old.rs` does not exist"))
    };
    assert!(warned("memory 1", "left out of the context block"), "{}", r.stderr);
    assert!(warned("Copilot memory mem-1", "left out of the context block"), "{}", r.stderr);
    assert!(warned("decision 1", "is kept in the context block"), "{}", r.stderr);
    assert!(r.stderr.contains(".github/copilot-memories.jsonl:1: stale:"), "the record's line: {}", r.stderr);
    assert!(r.stderr.contains("error: 3 stale items in the compiled context"), "{}", r.stderr);
    for f in AGENT_FILES {
        let text = t.read(&t.root().join(f));
        for word in ["STALEMEM", "STALEREC"] {
            assert!(!text.contains(word), "{f} still holds {word}:\n{text}");
        }
        for word in ["STALEDEC", "GOODMEM", "GOODREC"] {
            assert!(text.contains(word), "{f} lost {word}:\n{text}");
        }
    }
    // The targets were written: --check agrees with them, and still exits 1 for the stale items.
    let check = t.kb(&["compile", "--check"]);
    assert_eq!(check.code, 1, "{check:?}");
    assert!(check.stdout.starts_with("Up to date"), "{check:?}");

    // kb context leaves the same out, warns, and exits 0; its JSON carries the warnings.
    let c = t.kb(&["context"]).ok();
    assert!(!c.stdout.contains("STALEMEM") && !c.stdout.contains("STALEREC"), "{}", c.stdout);
    assert!(c.stdout.contains("STALEDEC") && c.stdout.contains("GOODMEM"), "{}", c.stdout);
    assert!(c.stderr.contains("stale: memory 1 left out"), "{}", c.stderr);
    let j = t.kb(&["--json", "context"]).ok().json();
    let warnings = j["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|w| w.as_str().unwrap().contains("stale: memory 1 left out")), "{j}");

    // Fixed, it comes back and compile exits 0.
    std::fs::rename(t.root().join("src/new.rs"), t.root().join("src/old.rs")).unwrap();
    t.kb(&["compile"]).ok();
    assert!(t.read(&t.root().join("AGENTS.md")).contains("STALEMEM"));
}

#[test]
fn lines_and_commands_count_and_what_cannot_be_checked_is_kept() {
    let t = TestEnv::new();
    t.write(".co-cli/settings.json", r#"{"context_targets": ["AGENTS.md"]}"#);
    t.write("src/a.rs", "one\ntwo\nthree\n");
    t.write("Makefile", "build:\n\techo hi\n");
    let outside = t.base.join("outside.rs");
    std::fs::write(&outside, "x\n").unwrap();
    std::os::unix::fs::symlink(&outside, t.root().join("src/link.rs")).unwrap();
    for text in [
        "Line ninety of `src/a.rs:90` holds the parser (PASTEND)",
        "Run `make release` to ship (NOTARGET)",
        "Run `make build` first; `src/a.rs:3` is the entry (HOLDS)",
        // Not checked: outside the root, a symlink out of it, a glob, no reference at all.
        "Settings in `~/.config/x.toml` and `../sibling/b.rs` (OUTSIDE)",
        "The link `src/link.rs:40` leads out (LINKOUT)",
        "Tests are under `tests/*.rs` (GLOB)",
        "Be kind in reviews (PLAIN)",
    ] {
        t.kb(&["save", text, "--type", "core_context"]).ok();
    }
    t.write(PROJECT, &context_file("The schema is in `db/schema.sql` (CTXDEAD)"));
    t.write(".github/instructions/all.instructions.md", "---\napplyTo: '**'\n---\n\nSee `docs/gone.md` (INSTRDEAD)\n");
    t.kb(&["session", "start", "moving `src/gone.rs` (SESSIONDEAD)"]).ok();
    let r = t.kb(&["compile"]);
    assert_eq!(r.code, 1, "{r:?}");
    let text = t.read(&t.root().join("AGENTS.md"));
    for gone in ["PASTEND", "NOTARGET"] {
        assert!(!text.contains(gone), "{gone} reached AGENTS.md:\n{text}");
    }
    for kept in ["HOLDS", "OUTSIDE", "LINKOUT", "GLOB", "PLAIN", "CTXDEAD", "INSTRDEAD"] {
        assert!(text.contains(kept), "{kept} left out:\n{text}");
    }
    assert!(r.stderr.contains("`src/a.rs:90` points past the end of `src/a.rs`, which has 3 lines"), "{}", r.stderr);
    assert!(r.stderr.contains("the Makefile has no target `release`"), "{}", r.stderr);
    assert!(r.stderr.contains("stale: the project context file is kept") && r.stderr.contains("`db/schema.sql`"));
    assert!(
        r.stderr.contains(".github/instructions/all.instructions.md: stale: this instruction file is kept"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("outside.rs") && !r.stderr.contains("link.rs"),
        "nothing outside is looked at: {}",
        r.stderr
    );
    // Two memories, the context file, the instructions (and the session, where a target carries it).
    assert!(r.stderr.contains(" stale items in the compiled context"), "{}", r.stderr);
    // The session reaches `kb context`: kept there, with its warning.
    let c = t.kb(&["context"]).ok();
    assert!(c.stdout.contains("SESSIONDEAD"), "{}", c.stdout);
    assert!(c.stderr.contains("stale: the session is kept") && c.stderr.contains("`src/gone.rs` does not exist"));
}

#[test]
fn symbols_count_from_the_last_audit_for_the_same_text() {
    let t = TestEnv::new();
    t.write(".co-cli/settings.json", r#"{"context_targets": ["AGENTS.md"]}"#);
    t.write("src/lib.rs", "pub struct Present;\n");
    t.kb(&["save", "Errors are `MissingErrorKind` values (SYMDEAD)", "--type", "core_context"]).ok();
    t.kb(&["save", "The entry type is `Present` in `src/lib.rs` (SYMOK)", "--type", "core_context"]).ok();
    // No audit yet: a symbol is not searched for at compile.
    t.kb(&["compile"]).ok();
    assert!(t.read(&t.root().join("AGENTS.md")).contains("SYMDEAD"));
    assert_eq!(t.kb(&["audit"]).code, 1);
    let r = t.kb(&["compile"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains("stale: memory 1 left out")
            && r.stderr.contains("`MissingErrorKind` occurs in no tracked file")
    );
    let text = t.read(&t.root().join("AGENTS.md"));
    assert!(!text.contains("SYMDEAD") && text.contains("SYMOK"), "{text}");
    // An edited text has no verdict until the next audit.
    let file = t.file_of(1);
    let old = t.read(&file);
    std::fs::write(&file, old.replace("(SYMDEAD)", "(SYMEDITED)")).unwrap();
    t.kb(&["compile"]).ok();
    assert!(t.read(&t.root().join("AGENTS.md")).contains("SYMEDITED"));
}

#[test]
fn a_record_whose_fact_holds_conflict_markers_is_left_out_and_compile_exits_1() {
    let t = TestEnv::new();
    t.write(".co-cli/settings.json", r#"{"context_targets": ["AGENTS.md"]}"#);
    t.write(
        ".github/copilot-memories.jsonl",
        "{\"id\":\"mem-1\",\"subject\":\"build\",\"fact\":\"GOODRECORD\"}\n\
         {\"id\":\"mem-2\",\"subject\":\"build\",\"fact\":\"\\n<<<<<<< HEAD\\nQuokka record ours\\n=======\\nQuokka record theirs\\n>>>>>>> feature\\n\"}\n",
    );
    let r = t.kb(&["compile"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains(".github/copilot-memories.jsonl:2: git conflict markers: this record is left out"),
        "{}",
        r.stderr
    );
    let text = t.read(&t.root().join("AGENTS.md"));
    assert!(!text.contains("Quokka") && !text.contains("<<<<<<<") && text.contains("GOODRECORD"), "{text}");
    let c = t.kb(&["context"]).ok();
    assert!(!c.stdout.contains("Quokka"), "{}", c.stdout);
}
