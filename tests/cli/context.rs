//! `kb context`: the compiled block, its budgets and warnings (co-cli's context behaviour and kb's
//! byte limits, docs/behaviour.md).

use crate::common::TestEnv;

/// A context file with valid frontmatter around `body`.
pub fn context_file(body: &str) -> String {
    format!("---\nversion: 1\nupdated: '2026-11-22T12:00:00+00:00'\n---\n\n{body}\n")
}

pub const PROJECT: &str = ".co-cli/knowledge/context.md";

/// Writes the global context (under HOME, XDG_CONFIG_HOME being unset).
pub fn write_global(env: &TestEnv, text: &str) {
    let p = env.home().join(".config/co-cli/knowledge/context.md");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Bytes the block adds around a project-only body: `## Internal Knowledge\n\n### Project Context\n\n`.
const PROJECT_FRAME: usize = 44;

#[test]
fn no_context_prints_nothing() {
    let env = TestEnv::new();
    let r = env.kb(&["context"]).ok();
    assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("", ""));
    let j = env.kb(&["--json", "context"]).ok().json();
    assert_eq!(j["text"], serde_json::Value::Null);
    assert_eq!(j["bytes"], 0);
    assert_eq!(j["sections"].as_array().unwrap().len(), 0);
    // Empty bodies are no sections either.
    env.write(PROJECT, &context_file("  \n\n"));
    assert_eq!(env.kb(&["context"]).ok().stdout, "");
}

#[test]
fn global_only() {
    let env = TestEnv::new();
    write_global(&env, &context_file("Global body"));
    let r = env.kb(&["context"]).ok();
    assert_eq!(r.stdout, "## Internal Knowledge\n\n### Global Context\n\nGlobal body\n");
    assert!(!r.stdout.contains("### Project Context"));
    assert_eq!(r.stderr, "");
}

#[test]
fn project_only() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("Project body"));
    let r = env.kb(&["context"]).ok();
    assert_eq!(r.stdout, "## Internal Knowledge\n\n### Project Context\n\nProject body\n");
}

#[test]
fn both_sections_global_first() {
    let env = TestEnv::new();
    write_global(&env, &context_file("G"));
    env.write(PROJECT, &context_file("P"));
    let r = env.kb(&["context"]).ok();
    assert_eq!(r.stdout, "## Internal Knowledge\n\n### Global Context\n\nG\n\n### Project Context\n\nP\n");
    let j = env.kb(&["--json", "context"]).ok().json();
    let titles: Vec<&str> = j["sections"].as_array().unwrap().iter().map(|s| s["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["Global Context", "Project Context"]);
    assert_eq!(j["sections"][1]["path"], env.root().join(PROJECT).display().to_string());
    assert_eq!(j["sections"][0]["budget"], 3072);
    assert_eq!(j["sections"][1]["budget"], 7168);
    assert_eq!(j["bytes"], j["text"].as_str().unwrap().len());
}

#[test]
fn xdg_config_home_holds_the_global_context() {
    let env = TestEnv::new();
    let xdg = env.dir.path().join("xdg");
    std::fs::create_dir_all(xdg.join("co-cli/knowledge")).unwrap();
    std::fs::write(xdg.join("co-cli/knowledge/context.md"), context_file("from xdg")).unwrap();
    write_global(&env, &context_file("from home"));
    let env = env.env("XDG_CONFIG_HOME", xdg.to_str().unwrap());
    let out = env.kb(&["context"]).ok().stdout;
    assert!(out.contains("from xdg") && !out.contains("from home"));
}

#[test]
fn small_context_has_no_warning() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("# Rules\n\nSmall."));
    let r = env.kb(&["context"]).ok();
    assert_eq!(r.stderr, "");
    assert!(r.stdout.contains("Small."));
}

#[test]
fn over_target_warns() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file(&"x".repeat(12_000)));
    let r = env.kb(&["context"]).ok();
    assert!(r.stderr.contains("WARNING") && r.stderr.contains("exceeds target 10240 bytes"), "{}", r.stderr);
    assert!(r.stdout.contains(&"x".repeat(12_000)));
}

#[test]
fn over_limit_truncates() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file(&"x".repeat(25_000)));
    let r = env.kb(&["context"]).ok();
    assert!(r.stderr.contains("ERROR") && r.stderr.contains("exceeds hard limit 20480 bytes"), "{}", r.stderr);
    let text = r.stdout.strip_suffix('\n').unwrap();
    assert!(text.len() <= 20_480 && text.len() > 20_000, "{}", text.len());
    let kept = text.split("\n\n").find(|p| p.starts_with("xxx")).unwrap().len();
    let marker = format!(
        "[truncated by kb: {0} bytes cut to fit the 20480-byte limit (Project Context: last {0} of 25000 bytes)]",
        25_000 - kept
    );
    assert!(text.ends_with(&format!("\n\n{marker}")), "{}", &text[text.len() - 120..]);
    // Within a few bytes of the limit: the room kept for the marker is its longest form.
    assert!(text.len() > 20_470, "{}", text.len());
}

#[test]
fn cjk_truncation_keeps_characters_whole() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file(&"日本語の文章です。".repeat(900)));
    let j = env.kb(&["--json", "context"]).ok().json();
    let text = j["text"].as_str().unwrap();
    assert!(j["truncated"].as_bool().unwrap());
    assert!(text.len() <= 20_480);
    assert!(!text.contains('\u{fffd}'));
    assert_eq!(j["bytes"], text.len());
}

#[test]
fn malformed_frontmatter_warns_and_uses_the_body() {
    let env = TestEnv::new();
    env.write(PROJECT, "---\ninvalid: [unclosed\n---\nBody after bad YAML\n");
    let r = env.kb(&["context"]).ok();
    assert_eq!(r.stdout, "## Internal Knowledge\n\n### Project Context\n\nBody after bad YAML\n");
    assert!(r.stderr.contains(".co-cli/knowledge/context.md:2: frontmatter: malformed YAML"), "{}", r.stderr);
}

#[test]
fn missing_fields_warn_with_lines() {
    let env = TestEnv::new();
    env.write(PROJECT, "---\nversion: 1\n---\n\nBody with version only\n");
    let r = env.kb(&["context"]).ok();
    assert!(r.stdout.contains("Body with version only"));
    assert!(r.stderr.contains("context.md:1: frontmatter: missing required field: updated"), "{}", r.stderr);
    env.write(PROJECT, "---\nversion: one\nupdated: yesterday\n---\nB\n");
    let r = env.kb(&["--json", "context"]).ok();
    let w: Vec<String> = serde_json::from_value(r.json()["warnings"].clone()).unwrap();
    assert!(w.iter().any(|w| w.contains("context.md:2:") && w.contains("'version' must be an integer")), "{w:?}");
    assert!(w.iter().any(|w| w.contains("context.md:3:") && w.contains("'updated'")), "{w:?}");
    env.write(PROJECT, "No frontmatter at all\n");
    let r = env.kb(&["context"]).ok();
    assert!(r.stdout.contains("No frontmatter at all"));
    assert!(r.stderr.contains("context.md:1: no frontmatter"), "{}", r.stderr);
}

#[test]
fn crlf_and_bom_are_read() {
    let env = TestEnv::new();
    env.write(
        PROJECT,
        "\u{feff}---\r\nversion: 1\r\nupdated: '2026-11-22T12:00:00+00:00'\r\n---\r\n\r\nLine 1\r\nLine 2\r\n",
    );
    let r = env.kb(&["context"]).ok();
    assert_eq!(r.stdout, "## Internal Knowledge\n\n### Project Context\n\nLine 1\nLine 2\n");
    assert_eq!(r.stderr, "");
}

#[test]
fn binary_context_is_left_out_with_a_warning() {
    let env = TestEnv::new();
    env.write(PROJECT, "a\0b");
    write_global(&env, &context_file("G"));
    let r = env.kb(&["context"]).ok();
    assert!(r.stdout.contains("G") && !r.stdout.contains("Project"));
    assert!(r.stderr.contains("NUL"), "{}", r.stderr);
}

/// Runs `kb --json context` with a project body sized so that the block is `total` bytes.
fn json_for_total(total: usize) -> serde_json::Value {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file(&"x".repeat(total - PROJECT_FRAME)));
    env.kb(&["--json", "context"]).ok().json()
}

fn total_warnings(j: &serde_json::Value) -> Vec<String> {
    j["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .filter(|w| w.contains("Knowledge size"))
        .collect()
}

#[test]
fn total_size_boundaries() {
    let j = json_for_total(10_240);
    assert_eq!(j["bytes"], 10_240);
    assert!(total_warnings(&j).is_empty());
    let j = json_for_total(10_241);
    assert_eq!(j["bytes"], 10_241);
    assert!(total_warnings(&j)[0].contains("exceeds target 10240 bytes"));
    let j = json_for_total(20_480);
    assert_eq!((j["bytes"].as_u64(), j["truncated"].as_bool()), (Some(20_480), Some(false)));
    let j = json_for_total(20_481);
    assert_eq!(j["truncated"], true);
    assert!(j["bytes"].as_u64().unwrap() <= 20_480);
    assert!(total_warnings(&j)[0].contains("Knowledge size 20481 bytes exceeds hard limit 20480"), "{j}");
    assert!(j["sections"][0]["cut_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn wrap_counts_toward_the_limits() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("P"));
    let r = env.kb(&["context", "--wrap"]).ok();
    assert_eq!(r.stdout, "<system-reminder>\n## Internal Knowledge\n\n### Project Context\n\nP\n</system-reminder>\n");
    // 37 bytes of wrapping: a block of exactly 20,480 bytes is cut once wrapped.
    env.write(PROJECT, &context_file(&"x".repeat(20_480 - PROJECT_FRAME)));
    let j = env.kb(&["--json", "context", "--wrap"]).ok().json();
    assert_eq!(j["truncated"], true);
    let text = j["text"].as_str().unwrap();
    assert!(text.len() <= 20_480 && text.ends_with("]\n</system-reminder>"));
    // No context: nothing at all, not even the wrapper.
    std::fs::remove_file(env.root().join(PROJECT)).unwrap();
    assert_eq!(env.kb(&["context", "--wrap"]).ok().stdout, "");
}

#[test]
fn section_budget_boundaries() {
    for (global, len, over) in [(true, 3072, false), (true, 3073, true), (false, 7168, false), (false, 7169, true)] {
        let env = TestEnv::new();
        let body = "y".repeat(len);
        if global {
            write_global(&env, &context_file(&body));
        } else {
            env.write(PROJECT, &context_file(&body));
        }
        let j = env.kb(&["--json", "context"]).ok().json();
        assert_eq!(j["sections"][0]["bytes"], len);
        assert_eq!(j["sections"][0]["over_budget"], over, "{len}");
        let budget_warning = j["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("budget"));
        assert_eq!(budget_warning, over, "{j}");
    }
}

#[test]
fn repository_memories_section() {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("P"));
    // The first record cites it: without the file the record is stale and left out.
    env.write("Makefile", "test:\n\tcargo test\n");
    env.write(
        ".github/copilot-memories.jsonl",
        concat!(
            "{\"id\":\"a\",\"subject\":\"build\",\"fact\":\"run make test\",\"citations\":[\"Makefile:1\"]}\n",
            "\n",
            "{\"subject\":\"style\",\"fact\":\"tabs\",\"votes\":{\"up\":0,\"down\":1}}\n",
            "this is not json\n",
            "{\"subject\":\"db\",\"fact\":\"postgres 16\",\"votes\":{\"up\":3,\"down\":1}}\n",
        ),
    );
    let r = env.kb(&["context"]).ok();
    assert_eq!(
        r.stdout,
        "## Internal Knowledge\n\n### Project Context\n\nP\n\n### Repository Memories\n\nbuild: run make test\ndb: postgres 16\n"
    );
    assert!(r.stderr.contains(".github/copilot-memories.jsonl:4: not JSON"), "{}", r.stderr);
    let j = env.kb(&["--json", "context"]).ok().json();
    assert_eq!(j["sections"][1]["title"], "Repository Memories");
    assert_eq!(j["sections"][1]["budget"], serde_json::Value::Null);
}

#[test]
fn truncation_cuts_repository_memories_before_context() {
    let env = TestEnv::new();
    write_global(&env, &context_file(&"g".repeat(3000)));
    let project: String = (0..20).map(|i| format!("## Topic {i}\n\n{}\n\n", "p".repeat(340))).collect();
    env.write(PROJECT, &context_file(&project));
    let jsonl: String =
        (0..300).map(|i| format!("{{\"subject\":\"s{i}\",\"fact\":\"{}\"}}\n", "f".repeat(60))).collect();
    env.write(".github/copilot-memories.jsonl", &jsonl);
    let j = env.kb(&["--json", "context"]).ok().json();
    let text = j["text"].as_str().unwrap();
    assert_eq!(j["truncated"], true);
    assert!(text.len() <= 20_480);
    assert!(text.contains(&"g".repeat(3000)) && text.contains(project.trim()));
    assert_eq!(j["sections"][0]["cut_bytes"], 0);
    assert_eq!(j["sections"][1]["cut_bytes"], 0);
    assert!(j["sections"][2]["cut_bytes"].as_u64().unwrap() > 0);
    // Records go lowest vote score first, then oldest: without `created`, the file's first lines
    // (the removal order of docs/behaviour.md).
    assert!(text.contains("\ns299: ") && !text.contains("\ns0: "));
    let marker = text.lines().last().unwrap();
    assert!(marker.starts_with("[truncated by kb: ") && marker.contains(" of 300 items, "), "{marker}");
}

#[test]
fn comments_on_lines_of_their_own_are_left_out_and_comments_in_content_stay() {
    let env = TestEnv::new();
    let body = "<!--\nHow to fill this in (for people, not agents).\n-->\n\n# Rules\n\n<!-- TODO: more -->\n\
                Deploys need a ticket <!-- inline: kept -->.\n\n```html\n<!-- in a fence: kept -->\n```";
    env.write(PROJECT, &context_file(body));
    let j = env.kb(&["--json", "context"]).ok().json();
    let want = "# Rules\n\nDeploys need a ticket <!-- inline: kept -->.\n\n```html\n<!-- in a fence: kept -->\n```";
    assert_eq!(j["text"], format!("## Internal Knowledge\n\n### Project Context\n\n{want}"));
    // The section's size, and its budget, count what goes into the block.
    assert_eq!(j["sections"][0]["bytes"], want.len());
    // A file of nothing but comments is no section at all.
    env.write(PROJECT, &context_file("<!-- nothing yet -->\n\n<!--\n- (a placeholder)\n-->"));
    assert_eq!(env.kb(&["context"]).ok().stdout, "");
}
