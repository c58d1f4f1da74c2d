//! `kb compile` and `kb init --agents-md`: targets, managed blocks, safety.

use crate::common::TestEnv;
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
    assert_eq!(r.stdout, format!("✓ written {COMPILED} (standalone, 50 bytes)\n"));
    let out = env.root().join(COMPILED);
    assert_eq!(env.read(&out), format!("{}\n", block("Hello")));
    assert_eq!(env.read(&out), env.kb(&["context"]).ok().stdout);
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
    assert_eq!(env.read(&env.root().join("fresh.md")), format!("{}\n", block("B")));
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
    let r = env.kb(&["init", "--agents-md"]).ok();
    assert!(r.stdout.contains("Created AGENTS.md with the context block"), "{}", r.stdout);
    assert!(r.stdout.contains("Registered AGENTS.md in context_targets of .co-cli/settings.json"));
    let agents = env.read(&env.root().join("AGENTS.md"));
    assert!(agents.starts_with(&format!("{BEGIN}\n## Internal Knowledge\n\n### Project Context\n\n# Project context")));
    assert!(agents.ends_with(&format!("{END}\n")));
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
