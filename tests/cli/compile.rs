//! `kb compile` and `kb init --agents-md`: targets, managed blocks, safety.

use crate::common::{TestEnv, standalone};
use crate::context::{PROJECT, context_file, write_global};
use std::path::Path;
use std::time::{Duration, SystemTime};

const BEGIN: &str = "<!-- kb:context:begin -->";
const END: &str = "<!-- kb:context:end -->";
const COMPILED: &str = ".co-cli/knowledge/compiled.md";

fn block(body: &str) -> String {
    format!("## Internal Knowledge\n\n### Project Context\n\n{body}")
}

fn targets(env: &TestEnv, list: &[&str]) {
    env.write(".co-cli/settings.json", &serde_json::json!({ "context_targets": list }).to_string());
}

fn mtime(p: &Path) -> SystemTime {
    std::fs::metadata(p).unwrap().modified().unwrap()
}

/// Sets a file's mtime to an hour ago, so that a rewrite would show.
fn age(p: &Path) -> SystemTime {
    let old = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options().write(true).open(p).unwrap().set_modified(old).unwrap();
    mtime(p)
}

#[test]
fn default_target_is_standalone_and_rewritten_only_on_change() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("Hello"));
    let r = env.kb(&["compile"]).ok();
    let expected = standalone(&block("Hello"));
    assert_eq!(r.stdout, format!("✓ written {COMPILED} (standalone, {} bytes)\n", expected.len()));
    let out = env.root().join(COMPILED);
    assert_eq!(env.read(&out), expected);
    assert_eq!(env.read(&out), standalone(env.kb(&["context"]).ok().stdout.trim_end_matches('\n')));
    let before = age(&out);
    let j = env.kb(&["--json", "compile"]).ok().json();
    assert_eq!(j["targets"][0]["status"], "unchanged");
    assert_eq!(mtime(&out), before, "an unchanged target keeps its mtime");
    env.write(PROJECT, &context_file("Hello again"));
    let j = env.kb(&["--json", "compile"]).ok().json();
    assert_eq!(j["targets"][0]["status"], "written");
    assert_eq!(j["targets"][0]["kind"], "standalone");
    assert_eq!(j["targets"][0]["path"], out.display().to_string());
    assert_ne!(mtime(&out), before);
}

#[test]
fn json_summary() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file(&"z".repeat(8000)));
    targets(&env, &[COMPILED, "AGENTS.md", "../outside.md"]);
    let r = env.kb(&["--json", "compile"]);
    assert_eq!(r.code, 1);
    let j = r.json();
    assert_eq!(j["bytes"], 8044);
    assert_eq!(j["truncated"], false);
    assert!(j["warnings"][0].as_str().unwrap().contains("over its 7168-byte budget"));
    let t = j["targets"].as_array().unwrap();
    assert_eq!(t.len(), 3);
    assert_eq!((t[1]["target"].as_str(), t[1]["kind"].as_str()), (Some("AGENTS.md"), Some("managed_block")));
    assert_eq!(t[2]["status"], "error");
    assert!(t[2]["error"].as_str().unwrap().contains("outside"));
    assert!(r.stderr.contains("error: target ../outside.md:"), "{}", r.stderr);
}

#[test]
fn existing_markdown_gets_a_managed_block() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("One"));
    let user = "# Agents\n\nRun `make test` before committing.\n";
    let agents = env.write("AGENTS.md", user);
    targets(&env, &["AGENTS.md"]);
    env.kb(&["compile"]).ok();
    let first = env.read(&agents);
    assert_eq!(first, format!("{user}\n{BEGIN}\n{}\n{END}\n", block("One")));
    // The user edits around the block; kb changes only what is between the markers.
    let edited = format!("Intro\n\n{first}\n## Footer\n");
    std::fs::write(&agents, &edited).unwrap();
    env.write(PROJECT, &context_file("Two"));
    env.kb(&["compile"]).ok();
    assert_eq!(env.read(&agents), edited.replace(&block("One"), &block("Two")));
}

#[test]
fn unknown_existing_files_are_never_overwritten() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("B"));
    let notes = env.write("notes.md", "my own notes\n");
    targets(&env, &["notes.md", "fresh.md"]);
    let j = env.kb(&["--json", "compile"]).ok().json();
    assert_eq!(j["targets"][0]["kind"], "managed_block");
    assert_eq!(j["targets"][1]["kind"], "standalone");
    assert!(env.read(&notes).starts_with("my own notes\n\n<!-- kb:context:begin -->\n"));
    assert_eq!(env.read(&env.root().join("fresh.md")), standalone(&block("B")));
}

#[test]
fn crlf_file_without_final_newline_is_kept_byte_for_byte() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("Line A\nLine B"));
    let user = "# Claude\r\n\r\nRules here.";
    let claude = env.write("CLAUDE.md", user);
    targets(&env, &["CLAUDE.md"]);
    env.kb(&["compile"]).ok();
    let out = env.read(&claude);
    let managed = format!("{BEGIN}\r\n{}\r\n{END}\r\n", block("Line A\nLine B").replace('\n', "\r\n"));
    assert_eq!(out, format!("{user}\r\n\r\n{managed}"));
    let before = age(&claude);
    env.kb(&["compile"]).ok();
    assert_eq!(mtime(&claude), before);
    env.write(PROJECT, &context_file("Changed"));
    env.kb(&["compile"]).ok();
    assert_eq!(
        env.read(&claude),
        format!("{user}\r\n\r\n{BEGIN}\r\n{}\r\n{END}\r\n", block("Changed").replace('\n', "\r\n"))
    );
}

#[test]
fn markers_inside_a_code_fence_are_not_markers() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("Real"));
    let user = format!("# Docs\n\nkb writes:\n\n```markdown\n{BEGIN}\nexample\n{END}\n```\n");
    let f = env.write(".github/copilot-instructions.md", &user);
    targets(&env, &[".github/copilot-instructions.md"]);
    env.kb(&["compile"]).ok();
    let out = env.read(&f);
    assert_eq!(out, format!("{user}\n{BEGIN}\n{}\n{END}\n", block("Real")));
    env.kb(&["compile"]).ok();
    assert_eq!(env.read(&f), out, "the fenced example stays, the real block is found again");
}

#[test]
fn unbalanced_markers_are_an_error_and_the_file_is_untouched() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("X"));
    let text = format!("# A\n{BEGIN}\nhalf a block\n");
    let f = env.write("AGENTS.md", &text);
    targets(&env, &["AGENTS.md", COMPILED]);
    let r = env.kb(&["compile"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("AGENTS.md: line 2: begin marker"), "{}", r.stderr);
    assert_eq!(env.read(&f), text);
    assert!(env.root().join(COMPILED).exists(), "the other target is still written");
}

#[test]
fn no_context_writes_empty_targets() {
    let env = TestEnv::new();
    env.write("AGENTS.md", "# A\n");
    targets(&env, &[COMPILED, "AGENTS.md"]);
    env.kb(&["compile"]).ok();
    assert_eq!(env.read(&env.root().join(COMPILED)), "");
    assert_eq!(env.read(&env.root().join("AGENTS.md")), format!("# A\n\n{BEGIN}\n{END}\n"));
    // Context appears, then goes away again.
    env.write(PROJECT, &context_file("Now"));
    env.kb(&["compile"]).ok();
    std::fs::remove_file(env.root().join(PROJECT)).unwrap();
    env.kb(&["compile"]).ok();
    assert_eq!(env.read(&env.root().join(COMPILED)), "");
    assert_eq!(env.read(&env.root().join("AGENTS.md")), format!("# A\n\n{BEGIN}\n{END}\n"));
}

#[test]
fn targets_outside_the_root_are_refused_except_in_the_config_folder() {
    let env = TestEnv::new();
    write_global(&env, &context_file("G"));
    let cfg = env.home().join(".config/co-cli");
    let in_cfg = cfg.join("compiled-global.md");
    let outside = env.dir.path().join("elsewhere.md");
    targets(&env, &[in_cfg.to_str().unwrap(), outside.to_str().unwrap(), "../x.md", ".co-cli/knowledge/context.md"]);
    let r = env.kb(&["compile"]);
    assert_eq!(r.code, 1);
    assert!(in_cfg.exists());
    assert!(!outside.exists() && !env.dir.path().join("x.md").exists());
    assert!(r.stderr.contains("elsewhere.md is outside the repository root"), "{}", r.stderr);
    assert!(r.stderr.contains("kb's own input"), "{}", r.stderr);
}

#[test]
fn symlinks_out_of_the_root_are_refused() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("S"));
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, env.root().join("linkdir")).unwrap();
    std::os::unix::fs::symlink(outside.join("f.md"), env.root().join("linkfile.md")).unwrap();
    std::fs::write(outside.join("f.md"), "outside file\n").unwrap();
    targets(&env, &["linkdir/out.md", "linkfile.md"]);
    let r = env.kb(&["compile"]);
    assert_eq!(r.code, 1);
    assert!(!outside.join("out.md").exists());
    assert_eq!(std::fs::read_to_string(outside.join("f.md")).unwrap(), "outside file\n");
    assert_eq!(r.stderr.matches("symlink").count(), 2, "{}", r.stderr);
}

#[test]
fn a_symlink_inside_the_root_is_written_through() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("Shared"));
    env.write("AGENTS.md", "# Shared instructions\n");
    std::os::unix::fs::symlink("AGENTS.md", env.root().join("CLAUDE.md")).unwrap();
    targets(&env, &["AGENTS.md", "CLAUDE.md"]);
    let j = env.kb(&["--json", "compile"]).ok().json();
    assert_eq!(j["targets"].as_array().unwrap().len(), 1, "one file, written once");
    assert!(std::fs::symlink_metadata(env.root().join("CLAUDE.md")).unwrap().file_type().is_symlink());
    assert!(env.read(&env.root().join("CLAUDE.md")).contains("Shared\n<!-- kb:context:end -->"));
}

#[test]
fn invalid_settings_are_an_error() {
    let env = TestEnv::new();
    env.write(".co-cli/settings.json", r#"{"context_targets": "AGENTS.md"}"#);
    let r = env.kb(&["compile"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("settings.json") && r.stderr.contains("context_targets"), "{}", r.stderr);
}

#[test]
fn init_agents_md_creates_and_registers() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("# Project context"));
    let r = env.kb(&["init", "--agents-md"]).ok();
    assert!(r.stdout.contains("Created AGENTS.md with the context block"), "{}", r.stdout);
    assert!(r.stdout.contains("Registered AGENTS.md in context_targets of .co-cli/settings.json"));
    let agents = env.read(&env.root().join("AGENTS.md"));
    assert_eq!(agents, format!("{BEGIN}\n## Internal Knowledge\n\n### Project Context\n\n# Project context\n{END}\n"));
    let settings: serde_json::Value =
        serde_json::from_str(&env.read(&env.root().join(".co-cli/settings.json"))).unwrap();
    assert_eq!(settings["context_targets"], serde_json::json!([COMPILED, "AGENTS.md"]));
    // A later compile writes both targets and leaves AGENTS.md as it is.
    let j = env.kb(&["--json", "compile"]).ok().json();
    assert_eq!(j["targets"][1]["status"], "unchanged");
    let r = env.kb(&["init", "--agents-md"]).ok();
    assert!(r.stdout.contains("already has the current context block"), "{}", r.stdout);
}

#[test]
fn init_agents_md_keeps_existing_files() {
    let env = TestEnv::new();
    let settings = "{\n    \"theme\": \"dark\",\n    \"memory_max_count\": 300\n}\n";
    env.write(".co-cli/settings.json", settings);
    env.write("AGENTS.md", "# Team rules\n\nBe kind.");
    let j = env.kb(&["--json", "init", "--agents-md"]).ok().json();
    assert_eq!(j["agents_md"]["status"], "written");
    let s = env.read(&env.root().join(".co-cli/settings.json"));
    assert_eq!(
        s,
        "{\n    \"theme\": \"dark\",\n    \"memory_max_count\": 300,\n    \"context_targets\": [\".co-cli/knowledge/compiled.md\", \"AGENTS.md\"]\n}\n"
    );
    assert!(
        env.read(&env.root().join("AGENTS.md")).starts_with("# Team rules\n\nBe kind.\n\n<!-- kb:context:begin -->\n")
    );
    // Already registered: the settings file is not touched again.
    let j = env.kb(&["--json", "init", "--agents-md"]).ok().json();
    assert_eq!(j["agents_md"]["settings"], serde_json::Value::Null);
    assert_eq!(j["agents_md"]["status"], "unchanged");
}

#[test]
fn init_agents_md_refuses_invalid_settings() {
    let env = TestEnv::new();
    env.write(".co-cli/settings.json", "{ broken");
    let r = env.kb(&["init", "--agents-md"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("settings.json"), "{}", r.stderr);
    assert!(!env.root().join("AGENTS.md").exists());
    assert_eq!(env.read(&env.root().join(".co-cli/settings.json")), "{ broken");
}

/// Returns `text` with a git conflict around the line that holds `needle`: that line is one side,
/// `theirs` the other.
fn conflicted(text: &str, needle: &str, theirs: &str) -> String {
    let line = text.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle:?} not in {text:?}"));
    text.replacen(line, &format!("<<<<<<< HEAD\n{line}\n=======\n{theirs}\n>>>>>>> feature"), 1)
}

#[test]
fn conflict_markers_never_reach_a_target_and_compile_exits_1() {
    // A context file, a memory, a record line, a decision, the session or an instruction
    // file holding merge-conflict marker lines is left out with a warning naming the file and
    // line; compile still writes the targets and exits 1; kb context exits 0.
    let t = TestEnv::new();
    std::fs::create_dir_all(t.root().join(".co-cli")).unwrap();
    // The session goes into a target that asks for it (§8: it is one person's).
    let settings = serde_json::json!({ "context_targets": [{ "path": COMPILED, "session": true }, "AGENTS.md"] });
    t.write(".co-cli/settings.json", &settings.to_string());
    t.write(PROJECT, &context_file("Project rules: OURSCTX"));
    t.write(
        ".github/copilot-memories.jsonl",
        "{\"id\":\"mem-1\",\"subject\":\"build\",\"fact\":\"GOODRECORD\"}\n\
         {\"id\":\"mem-2\",\"subject\":\"ci\",\"fact\":\"OURSREC\"}\n",
    );
    t.write(".github/instructions/all.instructions.md", "---\napplyTo: '**'\n---\n\nOURSINSTR\n");
    t.write(".github/instructions/ok.instructions.md", "---\napplyTo: '**'\n---\n\nGOODINSTR\n");
    t.kb(&["decision", "add", "OURSDEC: every service stores readings in PostgreSQL", "--type", "architectural"]).ok();
    t.kb(&["decision", "add", "GOODDEC: alerting belongs to another team", "--type", "scope"]).ok();
    t.write("src/parse.rs", "pub fn parse() {}\n");
    t.kb(&["save", "OURSMEM: the parser lives in src/parse.rs", "--type", "core_context"]).ok();
    t.kb(&["save", "GOODMEM: deploys go through the staging branch on Fridays", "--type", "core_context"]).ok();
    t.kb(&["session", "start", "OURSFOCUS"]).ok();
    let clean = t.kb(&["compile"]);
    assert_eq!(clean.code, 0, "{clean:?}");
    let all = t.read(&t.root().join(COMPILED));
    for word in ["OURSCTX", "GOODRECORD", "OURSREC", "OURSINSTR", "OURSDEC", "OURSMEM", "OURSFOCUS"] {
        assert!(all.contains(word), "{word} missing before the conflicts:\n{all}");
    }
    // Now every kind of source gets a conflict.
    let edit = |rel: &str, line: &str| {
        let p = t.root().join(rel);
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, conflicted(&text, line, "THEIRS")).unwrap();
    };
    edit(PROJECT, "Project rules: OURSCTX");
    edit(".github/copilot-memories.jsonl", "OURSREC");
    edit(".github/instructions/all.instructions.md", "OURSINSTR");
    let dec = std::fs::read_dir(t.root().join(".co-cli/knowledge/decisions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| std::fs::read_to_string(p).unwrap().contains("OURSDEC"))
        .unwrap();
    let dec_rel = dec.strip_prefix(t.root()).unwrap().to_str().unwrap().to_string();
    edit(&dec_rel, "OURSDEC: every service stores readings in PostgreSQL");
    let mem = std::fs::read_dir(t.memories())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| std::fs::read_to_string(p).unwrap().contains("OURSMEM"))
        .unwrap();
    let mem_rel = mem.strip_prefix(t.root()).unwrap().to_str().unwrap().to_string();
    edit(&mem_rel, "OURSMEM: the parser lives in src/parse.rs");
    edit(".co-cli/knowledge/session.md", "OURSFOCUS");

    let r = t.kb(&["compile"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("conflict markers"), "{}", r.stderr);
    // Each left-out item is named with its file and marker line.
    for (file, line) in [
        (PROJECT.to_string(), 6),
        (".github/copilot-memories.jsonl".to_string(), 2),
        (".github/instructions/all.instructions.md".to_string(), 5),
        (dec_rel.clone(), 0),
        (mem_rel.clone(), 0),
        (".co-cli/knowledge/session.md".to_string(), 0),
    ] {
        let at = if line > 0 { format!("{file}:{line}: ") } else { format!("{file}:") };
        let hit = r.stderr.lines().any(|l| l.contains(&at) && l.contains("left out of the context block"));
        assert!(hit, "no warning at {at}:\n{}", r.stderr);
    }
    for target in [COMPILED, "AGENTS.md"] {
        let text = t.read(&t.root().join(target));
        for line in text.lines() {
            assert!(
                !line.starts_with("<<<<<<<") && !line.starts_with(">>>>>>>") && line != "=======",
                "{target}: marker line {line:?}:\n{text}"
            );
        }
        for word in ["OURS", "THEIRS"] {
            assert!(!text.contains(word), "{target} holds {word}:\n{text}");
        }
        for word in ["GOODRECORD", "GOODINSTR", "GOODDEC", "GOODMEM"] {
            assert!(text.contains(word), "{target} lost {word}:\n{text}");
        }
    }
    // kb context leaves the same items out, warns, and exits 0.
    let c = t.kb(&["context"]).ok();
    assert!(!c.stdout.contains("OURS") && c.stdout.contains("GOODMEM"), "{}", c.stdout);
    assert!(c.stderr.contains("left out of the context block"), "{}", c.stderr);
    // Resolved, compile exits 0 again.
    std::fs::write(t.root().join(PROJECT), context_file("Project rules: resolved")).unwrap();
    for rel in [".github/instructions/all.instructions.md", &dec_rel, &mem_rel, ".co-cli/knowledge/session.md"] {
        std::fs::remove_file(t.root().join(rel)).unwrap();
    }
    t.write(".github/copilot-memories.jsonl", "{\"id\":\"mem-1\",\"subject\":\"build\",\"fact\":\"GOODRECORD\"}\n");
    assert_eq!(t.kb(&["compile"]).code, 0);
}

#[test]
fn the_text_gives_the_blocks_size_and_the_files() {
    // A managed block's size is kb's part of the file; the file's size is said too.
    let t = TestEnv::pinned();
    t.write(".co-cli/knowledge/context.md", "---\nversion: 1\nupdated: 2026-01-01T00:00:00Z\n---\n\nBody\n");
    t.write("AGENTS.md", "# My notes\n\nKept as they are.\n");
    t.write(".co-cli/settings.json", r#"{"context_targets": ["AGENTS.md", "out/agent.md"]}"#);
    let json = t.kb(&["--json", "compile"]).ok().json();
    let file_bytes = json["targets"][0]["bytes"].as_u64().unwrap();
    let text = t.root().join("AGENTS.md");
    let whole = std::fs::read_to_string(&text).unwrap();
    let start = whole.find("<!-- kb:context:begin -->").unwrap();
    let end = whole.find("<!-- kb:context:end -->").unwrap() + "<!-- kb:context:end -->".len();
    assert_eq!(file_bytes as usize, whole.len());
    std::fs::remove_file(&text).unwrap();
    t.write("AGENTS.md", "# My notes\n\nKept as they are.\n");
    let run = t.kb(&["compile"]).ok();
    let line = run.stdout.lines().next().unwrap().to_string();
    assert!(line.starts_with("✓ written AGENTS.md (managed block of "), "{line}");
    assert!(line.ends_with(&format!(", file {} bytes)", whole.len())), "{line}");
    let block: usize = line.split("managed block of ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(block < end - start + 1 && block > 0, "the block ({block}) is within the markers ({})", end - start);
    assert!(run.stdout.contains("out/agent.md (standalone, "), "{run:?}");
}

/// Every file `kb compile` writes for a repository with every agent, with its bytes.
fn compiled_files(env: &TestEnv) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for rel in [
        COMPILED,
        "AGENTS.md",
        "CLAUDE.md",
        "GEMINI.md",
        ".github/copilot-instructions.md",
        ".cursor/rules/kb-context.mdc",
        ".cursor/rules/kb-api.mdc",
        ".windsurf/rules/kb-context.md",
        ".kiro/steering/kb-context.md",
        ".clinerules/kb-context.md",
        ".claude/rules/kb-api.md",
    ] {
        let text = std::fs::read_to_string(env.root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        out.push((rel.to_string(), text));
    }
    out
}

/// A repository for every agent, with a project context, a scoped instruction and an open
/// session, and a global context under HOME.
fn every_agent() -> TestEnv {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("Team fact: the API is in src/api."));
    env.write(".github/instructions/api.instructions.md", "---\napplyTo: 'src/api/**'\n---\n\nUse the typed client.\n");
    env.write(
        ".co-cli/settings.json",
        r#"{"agents": ["claude", "codex", "copilot", "cursor", "gemini", "windsurf", "kiro", "cline"]}"#,
    );
    write_global(&env, &context_file("PERSONAL: my name is Alex and I like tabs."));
    env.kb(&["session", "start", "SESSIONFOCUS: fix the flaky test"]).ok();
    env
}

/// SPEC §8/§11.7: a committed target carries the team's knowledge only. The global context and
/// the open session stay out of every target and agent file unless a target opts in; `kb
/// context` still gives them. A teammate with another global context agrees with the committed
/// files, and a session update rewrites none of them.
#[test]
fn committed_files_leave_out_the_global_context_and_the_session() {
    let env = every_agent();
    env.kb(&["compile"]).ok();
    for (rel, text) in compiled_files(&env) {
        assert!(!text.contains("PERSONAL"), "{rel} holds the global context:\n{text}");
        assert!(!text.contains("SESSIONFOCUS"), "{rel} holds the open session:\n{text}");
    }
    assert!(env.read(&env.root().join("AGENTS.md")).contains("Team fact"));
    let context = env.kb(&["context"]).ok().stdout;
    assert!(context.contains("PERSONAL") && context.contains("SESSIONFOCUS"), "{context}");
    // A teammate's clone: another HOME with its own global context. The README's CI recipe
    // (`kb compile --check`) passes there.
    let other = tempfile::tempdir().unwrap();
    let global = other.path().join(".config/co-cli/knowledge/context.md");
    std::fs::create_dir_all(global.parent().unwrap()).unwrap();
    std::fs::write(&global, context_file("Bo's own notes: spaces, not tabs.")).unwrap();
    let mut cmd = env.command(&["compile", "--check"]);
    cmd.env("HOME", other.path());
    let r = crate::common::run_command(cmd, None);
    assert_eq!(r.code, 0, "a teammate's check fails: {r:?}");
    // A session update changes no committed file.
    let before = compiled_files(&env);
    env.kb(&["session", "update", "SESSIONNOTE: the race is in the lexer"]).ok();
    env.kb(&["compile", "--check"]).ok();
    let j = env.kb(&["--json", "compile"]).ok().json();
    assert!(j["targets"].as_array().unwrap().iter().all(|t| t["status"] == "unchanged"), "{j}");
    assert!(j["generated"].as_array().unwrap().iter().all(|g| g["status"] == "unchanged"), "{j}");
    assert_eq!(compiled_files(&env), before);
    // A target that opts in gets them.
    env.write(
        ".co-cli/settings.json",
        r#"{"context_targets": [{"path": "MINE.md", "global": true, "session": true}, "TEAM.md"]}"#,
    );
    env.kb(&["compile"]).ok();
    let mine = env.read(&env.root().join("MINE.md"));
    assert!(mine.contains("PERSONAL") && mine.contains("SESSIONFOCUS") && mine.contains("SESSIONNOTE"), "{mine}");
    let team = env.read(&env.root().join("TEAM.md"));
    assert!(!team.contains("PERSONAL") && !team.contains("SESSIONFOCUS") && team.contains("Team fact"), "{team}");
}

/// SPEC §15.1: a standalone target a person edited no longer hashes to its marker line: kb
/// leaves it alone, says how to carry the change into the sources, and exits 1; `--check`
/// reports it. Deleted, it is written again.
#[test]
fn a_hand_edited_standalone_target_is_kept_and_reported() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("One"));
    env.kb(&["compile"]).ok();
    let out = env.root().join(COMPILED);
    let edited = env.read(&out).replace("One", "One, and my own note");
    std::fs::write(&out, &edited).unwrap();
    env.write(PROJECT, &context_file("Two"));
    for args in [&["compile"][..], &["compile", "--check"]] {
        let r = env.kb(args);
        assert_eq!(r.code, 1, "{args:?}: {r:?}");
        let said = format!("{}{}", r.stdout, r.stderr);
        assert!(said.contains("edited by hand") && said.contains(COMPILED), "{args:?}: {said}");
        assert_eq!(env.read(&out), edited, "{args:?}: the edit is kept");
    }
    let r = env.kb(&["compile"]).err();
    assert!(r.stderr.contains("carry the change into"), "{}", r.stderr);
    let j = env.kb(&["--json", "compile", "--check"]).json();
    assert_eq!(j["check"][0]["state"], "edited", "{j}");
    std::fs::remove_file(&out).unwrap();
    env.kb(&["compile"]).ok();
    assert_eq!(env.read(&out), standalone(&block("Two")));
}

/// A standalone target an older kb wrote (its first line without a hash, or a heading first) is
/// kb's while it says what kb would write now (upgraded to the hashed line), and a person's
/// (left alone) once it says something else.
#[test]
fn an_older_kbs_standalone_target_upgrades_only_when_unchanged() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("Same"));
    let old_line = "<!-- kb: generated by kb compile from .co-cli/knowledge; edits here are overwritten -->\n";
    let out = env.write(COMPILED, &format!("{old_line}{}\n", block("Same")));
    env.kb(&["compile"]).ok();
    assert_eq!(env.read(&out), standalone(&block("Same")), "upgraded");
    std::fs::write(&out, format!("{}\n", block("Same"))).unwrap();
    env.kb(&["compile"]).ok();
    assert_eq!(env.read(&out), standalone(&block("Same")), "a heading-first file upgrades too");
    let mine = format!("{old_line}{}\n\nMy note.\n", block("Same"));
    std::fs::write(&out, &mine).unwrap();
    let r = env.kb(&["compile"]).err();
    assert!(r.stderr.contains("edited by hand"), "{}", r.stderr);
    assert_eq!(env.read(&out), mine);
}

/// SPEC §8: a managed block's surroundings are the person's and always survive; inside the
/// markers is kb's, so a hand edit there is replaced, and `kb undo` brings it back.
#[test]
fn a_managed_block_keeps_the_persons_text_and_undo_brings_back_an_edit_inside() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("One"));
    let agents = env.write("AGENTS.md", "# Mine\n\nBefore.\n");
    targets(&env, &["AGENTS.md"]);
    env.kb(&["compile"]).ok();
    let inside = env.read(&agents).replace("One", "One (my edit inside)") + "\nAfter.\n";
    std::fs::write(&agents, &inside).unwrap();
    env.kb(&["compile"]).ok();
    let now = env.read(&agents);
    assert!(now.starts_with("# Mine\n\nBefore.\n") && now.ends_with("\nAfter.\n"), "{now}");
    assert!(!now.contains("my edit inside"), "{now}");
    env.kb(&["undo"]).ok();
    assert_eq!(env.read(&agents), inside, "kb undo brings the edit back");
}

/// SPEC §15.1: every rewrite of a generated file is journaled: `kb undo` puts the old bytes back.
#[test]
fn undo_brings_back_what_a_compile_rewrote() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("One"));
    env.kb(&["compile"]).ok();
    let out = env.root().join(COMPILED);
    let first = env.read(&out);
    env.write(PROJECT, &context_file("Two"));
    env.kb(&["compile"]).ok();
    assert!(env.read(&out).contains("Two"));
    let r = env.kb(&["undo"]).ok();
    assert!(r.stdout.contains("compile"), "{}", r.stdout);
    assert_eq!(env.read(&out), first);
    // An unchanged compile journals nothing.
    env.kb(&["undo", "--drop"]).ok();
    env.kb(&["compile"]).ok();
    env.kb(&["compile"]).ok();
    let list = env.kb(&["undo", "--list"]).ok().stdout;
    assert_eq!(list.matches("compile: ").count(), 1, "{list}");
}

/// SPEC §11.6: a target's budget holds every line kb writes into it: a standalone target's
/// marker line, a managed block's two marker lines.
#[test]
fn a_targets_budget_counts_its_marker_lines() {
    let env = TestEnv::new();
    let body: String = (0..60).map(|i| format!("Fact number {i} about the service and its deploys.\n\n")).collect();
    env.write(PROJECT, &context_file(&body));
    for i in 0..30 {
        env.kb(&[
            "save",
            &format!("Core fact {i}: the worker queue drains every {i} minutes"),
            "--type",
            "core_context",
        ])
        .ok();
    }
    let tiktoken = |t: &str| tiktoken_rs::o200k_base_singleton().encode_ordinary(t).len();
    for budget in [150, 300, 476] {
        env.write(
            ".co-cli/settings.json",
            &serde_json::json!({"context_targets": [
                {"path": "OUT.md", "max_tokens": budget},
                {"path": "AGENTS.md", "max_tokens": budget},
            ]})
            .to_string(),
        );
        env.kb(&["compile"]).ok();
        let out = env.read(&env.root().join("OUT.md"));
        assert!(tiktoken(&out) <= budget, "{budget}: OUT.md is {} tokens:\n{out}", tiktoken(&out));
        assert!(out.starts_with("<!-- kb: generated "), "{out}");
        assert!(out.contains(&format!("to fit the {budget}-token budget")), "{out}");
        let agents = env.read(&env.root().join("AGENTS.md"));
        assert!(tiktoken(&agents) <= budget, "{budget}: AGENTS.md is {} tokens", tiktoken(&agents));
        env.kb(&["compile", "--check"]).ok();
    }
}
