//! One store, every agent (SPEC §15): each agent's own files as that agent reads them (YAML
//! where it uses YAML, Cursor's comma string, the glob semantics of `applyTo`), ownership of
//! generated files, the agents' limits, `kb agents`, `kb compile --check`, and
//! `kb import --from claude|codex|gemini`.

use crate::common::{TestEnv, python, python_ready};
use crate::context::{PROJECT, context_file};
use std::collections::BTreeMap;
use std::path::Path;

const BEGIN: &str = "<!-- kb:context:begin -->";

/// A repository with context, an always-on instruction, and two scoped ones, for `agents`.
fn setup(agents: &[&str]) -> TestEnv {
    let env = TestEnv::new();
    env.write(PROJECT, &context_file("Hello from the project."));
    env.write(
        ".github/instructions/api.instructions.md",
        "---\napplyTo: \"src/**/*.{ts,tsx}, tests/**\"\ndescription: API rules\n---\n# API\n\nUse the typed client.\n",
    );
    env.write(".github/instructions/always.instructions.md", "---\napplyTo: \"**\"\n---\nBe kind in reviews.\n");
    env.write(
        ".github/instructions/docs.instructions.md",
        "---\napplyTo: docs/*.md\n---\n# Docs style\n\nShort sentences.\n",
    );
    set_agents(&env, agents);
    env
}

fn set_agents(env: &TestEnv, agents: &[&str]) {
    env.write(".co-cli/settings.json", &serde_json::json!({ "agents": agents }).to_string());
}

/// Paths to try each projected glob on, against the `applyTo` it came from.
const SAMPLES: [&str; 12] = [
    "src/a.ts",
    "src/x/b.tsx",
    "src/c.rs",
    "src/a.tsx.bak",
    "tests/t.rs",
    "tests/a/b.rs",
    "docs/a.md",
    "docs/x/a.md",
    "README.md",
    "x/src/a.ts",
    "srcx/a.ts",
    "tests",
];

/// Returns which samples one of `globs` matches, with the glob semantics of `applyTo` (`*`
/// stays inside a folder, `**` crosses, `{a,b}` alternates).
fn matching(globs: &[String]) -> Vec<&'static str> {
    let m: Vec<globset::GlobMatcher> = globs
        .iter()
        .map(|g| globset::GlobBuilder::new(g).literal_separator(true).build().unwrap().compile_matcher())
        .collect();
    SAMPLES.iter().copied().filter(|p| m.iter().any(|g| g.is_match(p))).collect()
}

/// The samples the api instruction's `applyTo` matches.
fn api_matches() -> Vec<&'static str> {
    matching(&["src/**/*.{ts,tsx}".to_string(), "tests/**".to_string()])
}

/// Splits a generated file into its frontmatter lines (`None`: it has none) and the rest.
fn split(text: &str) -> (Option<&str>, &str) {
    match text.strip_prefix("---\n") {
        Some(rest) => {
            let end = rest.find("\n---\n").expect("closed frontmatter");
            (Some(&rest[..end]), &rest[end + 5..])
        }
        None => (None, text),
    }
}

/// Reads frontmatter as Cursor and Windsurf do: `key: value` lines, the value raw.
fn raw_fields(front: &str) -> BTreeMap<String, String> {
    front.lines().filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_string(), v.trim().to_string())).collect()
}

/// Parses YAML frontmatter with PyYAML (a YAML reader as Claude Code, Kiro and Cline use one).
fn yaml(front: &str) -> serde_json::Value {
    let out = python("import sys, json, yaml; print(json.dumps(yaml.safe_load(sys.stdin.read())))", front);
    serde_json::from_str(&out).unwrap()
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
}

/// Asserts the file's rest starts with kb's marker line naming `source`, then the body.
fn marked(rest: &str, source: &str, body: &str) {
    let first = rest.lines().next().unwrap();
    assert!(is_marker(first, source), "{first:?}");
    assert!(rest.ends_with(&format!("\n{body}\n")), "{rest:?}");
}

/// Returns whether `line` is kb's marker line naming `source`, with a content hash.
fn is_marker(line: &str, source: &str) -> bool {
    let Some(hash) = line
        .strip_prefix(&format!("<!-- kb: generated from {source}; edit {source}, not this file; sha256:"))
        .and_then(|r| r.strip_suffix(" -->"))
    else {
        return false;
    };
    hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

const API: &str = ".github/instructions/api.instructions.md";

fn read(env: &TestEnv, rel: &str) -> String {
    env.read(&env.root().join(rel))
}

fn exists(env: &TestEnv, rel: &str) -> bool {
    env.root().join(rel).exists()
}

/// The always-loaded block holds the context and the always-on instruction, no Hot Memories.
fn is_block(text: &str) {
    assert!(text.contains("Hello from the project."), "{text}");
    assert!(text.contains("Be kind in reviews."), "{text}");
    assert!(!text.contains("Use the typed client."), "a scoped instruction is not in the block: {text}");
    assert!(!text.contains("Hot Memories"));
}

#[test]
fn claude_reads_claude_md_and_rules_with_a_paths_list() {
    if !python_ready() {
        return;
    }
    let env = setup(&["claude"]);
    env.kb(&["compile"]).ok();
    let claude = read(&env, "CLAUDE.md");
    assert!(claude.starts_with(BEGIN));
    is_block(&claude);
    let text = read(&env, ".claude/rules/kb-api.md");
    let (front, rest) = split(&text);
    let fields = yaml(front.unwrap());
    let paths = strings(&fields["paths"]);
    assert_eq!(paths, ["src/**/*.{ts,tsx}", "tests/**"]);
    assert_eq!(matching(&paths), api_matches());
    marked(rest, API, "# API\n\nUse the typed client.");
    assert!(exists(&env, ".claude/rules/kb-docs.md"));
    assert!(!exists(&env, ".claude/rules/kb-always.md"), "an always-on instruction goes into the block");
    assert!(!exists(&env, ".cursor"), "only the agents named");
}

#[test]
fn cursor_reads_mdc_rules_with_a_comma_string_and_real_booleans() {
    if !python_ready() {
        return;
    }
    let env = setup(&["cursor"]);
    env.kb(&["compile"]).ok();
    let text = read(&env, ".cursor/rules/kb-context.mdc");
    let (front, rest) = split(&text);
    let fields = yaml(front.unwrap());
    assert_eq!(fields["alwaysApply"], true, "a real boolean");
    assert!(!fields["description"].as_str().unwrap().is_empty());
    assert!(is_marker(rest.lines().next().unwrap(), ".co-cli/knowledge"), "{rest}");
    is_block(rest);
    let text = read(&env, ".cursor/rules/kb-api.mdc");
    let (front, rest) = split(&text);
    let f = raw_fields(front.unwrap());
    assert_eq!(f["alwaysApply"], "false", "unquoted: Cursor reads the string \"false\" as not a boolean");
    assert_eq!(f["description"], "API rules");
    assert!(!f["globs"].starts_with(['"', '\'', '[']), "Cursor's globs is an unquoted comma string: {}", f["globs"]);
    let globs: Vec<String> = f["globs"].split(',').map(str::to_string).collect();
    assert_eq!(matching(&globs), api_matches(), "{globs:?}");
    assert!(globs.iter().all(|g| !g.contains('{')), "alternations with commas are spelled out: {globs:?}");
    marked(rest, API, "# API\n\nUse the typed client.");
    let docs = raw_fields(split(&read(&env, ".cursor/rules/kb-docs.mdc")).0.unwrap());
    assert_eq!(docs["description"], "Docs style", "the first line when there is no description");
}

#[test]
fn windsurf_reads_trigger_rules_and_its_limit_is_fitted() {
    if !python_ready() {
        return;
    }
    let env = setup(&["windsurf"]);
    env.kb(&["compile"]).ok();
    let text = read(&env, ".windsurf/rules/kb-context.md");
    let (front, rest) = split(&text);
    assert_eq!(yaml(front.unwrap())["trigger"], "always_on");
    is_block(rest);
    let text = read(&env, ".windsurf/rules/kb-api.md");
    let f = raw_fields(split(&text).0.unwrap());
    assert_eq!(f["trigger"], "glob");
    let globs: Vec<String> = f["globs"].split(',').map(str::to_string).collect();
    assert_eq!(matching(&globs), api_matches());
    // 12,000 characters per rule file: a long context is fitted, the warning names the limit.
    let long: String = (0..400).map(|i| format!("Paragraph {i}: ünïcödé text for the limit.\n\n")).collect();
    env.write(PROJECT, &context_file(&long));
    let r = env.kb(&["compile"]).ok();
    assert!(r.stderr.contains("windsurf's 12000-character limit"), "{}", r.stderr);
    let file = read(&env, ".windsurf/rules/kb-context.md");
    assert!(file.chars().count() <= 12_000, "{}", file.chars().count());
    assert!(file.contains("<!-- kb: left out") && file.contains("to fit windsurf's 12000-character limit"));
    // §11.6's order: the scoped instruction goes before the project context is cut.
    assert!(file.contains("instructions 1") && file.contains("Paragraph 0:"), "{file}");
    // A scoped rule file over the limit is a warning: an instruction's body is never cut.
    env.write(
        ".github/instructions/big.instructions.md",
        &format!("---\napplyTo: big/**\n---\n{}\n", "word ".repeat(2600)),
    );
    let r = env.kb(&["compile"]).ok();
    assert!(r.stderr.contains(".windsurf/rules/kb-big.md is 13") && r.stderr.contains("per rule file"), "{}", r.stderr);
    let big = raw_fields(split(&read(&env, ".windsurf/rules/kb-big.md")).0.unwrap());
    let desc = big["description"].trim_matches(['\'', '"']);
    assert!(desc.ends_with('…') && desc.chars().count() <= 161, "a first line as description is cut: {desc}");
    assert!(read(&env, ".windsurf/rules/kb-big.md").chars().count() > 13_000);
}

#[test]
fn kiro_reads_steering_with_a_file_match_pattern_list() {
    if !python_ready() {
        return;
    }
    let env = setup(&["kiro"]);
    env.kb(&["compile"]).ok();
    let text = read(&env, ".kiro/steering/kb-context.md");
    let (front, rest) = split(&text);
    assert_eq!(yaml(front.unwrap())["inclusion"], "always");
    is_block(rest);
    let text = read(&env, ".kiro/steering/kb-api.md");
    let (front, rest) = split(&text);
    let fields = yaml(front.unwrap());
    assert_eq!(fields["inclusion"], "fileMatch");
    let globs = strings(&fields["fileMatchPattern"]);
    assert_eq!(matching(&globs), api_matches());
    marked(rest, API, "# API\n\nUse the typed client.");
}

#[test]
fn cline_reads_clinerules_with_a_paths_list() {
    if !python_ready() {
        return;
    }
    let env = setup(&["cline"]);
    env.kb(&["compile"]).ok();
    let context = read(&env, ".clinerules/kb-context.md");
    assert!(context.starts_with("<!-- kb: generated from .co-cli/knowledge;"), "no frontmatter: always on");
    is_block(&context);
    let text = read(&env, ".clinerules/kb-api.md");
    let (front, rest) = split(&text);
    let paths = strings(&yaml(front.unwrap())["paths"]);
    assert_eq!(matching(&paths), api_matches());
    marked(rest, API, "# API\n\nUse the typed client.");
}

#[test]
fn codex_reads_agents_md_cut_to_32_kib() {
    let env = setup(&["codex"]);
    // A person's own AGENTS.md of 30,000 bytes leaves less than 3 KiB for kb's block.
    let own = format!("# Agents\n\n{}\n", "Our own long guidance line.\n".repeat(1100));
    env.write("AGENTS.md", &own);
    let long: String = (0..60).map(|i| format!("Section {i} of the project context, a long line.\n\n")).collect();
    env.write(PROJECT, &context_file(&long));
    let r = env.kb(&["compile"]).ok();
    assert!(r.stderr.contains("codex's 32768-byte limit of AGENTS.md"), "{}", r.stderr);
    let agents = read(&env, "AGENTS.md");
    assert!(agents.starts_with(&own), "the person's text is kept byte for byte");
    assert!(agents.len() <= 32 * 1024, "{}", agents.len());
    assert!(agents.contains("<!-- kb: left out") && agents.contains("to fit codex's 32768-byte limit"));
    assert!(!exists(&env, ".codex"), "Codex has no scoped rules");
    let j = env.kb(&["--json", "agents"]).ok().json();
    let f = &j["agents"][0]["files"][0];
    assert_eq!(
        (f["path"].as_str(), f["limit"].as_u64(), f["state"].as_str()),
        (Some("AGENTS.md"), Some(32768), Some("up to date"))
    );
}

#[test]
fn copilot_reads_its_instructions_and_warns_past_4000_characters() {
    let env = setup(&["copilot"]);
    let r = env.kb(&["compile"]).ok();
    assert!(!r.stderr.contains("Copilot code review"));
    let text = read(&env, ".github/copilot-instructions.md");
    assert!(text.starts_with(BEGIN));
    is_block(&text);
    let long = "A longer context line for the review limit.\n\n".repeat(120);
    env.write(PROJECT, &context_file(&long));
    let r = env.kb(&["compile"]).ok();
    assert!(r.stderr.contains("Copilot code review reads only the first 4000"), "{}", r.stderr);
    assert!(read(&env, ".github/copilot-instructions.md").chars().count() > 4000, "a warning only: not cut");
    // Copilot reads .github/instructions/ itself: no rule files.
    let files: Vec<_> =
        std::fs::read_dir(env.root().join(".github")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(files.len(), 2, "{files:?}");
}

#[test]
fn gemini_reads_gemini_md() {
    let env = setup(&["gemini", "codex"]);
    env.write("GEMINI.md", "# Gemini\n\n## Gemini Added Memories\n- The staging DB is on port 5433\n");
    env.kb(&["compile"]).ok();
    let text = read(&env, "GEMINI.md");
    assert!(text.starts_with("# Gemini\n\n## Gemini Added Memories\n- The staging DB is on port 5433\n\n"));
    is_block(&text);
    // Two agents, two files, one block each.
    is_block(&read(&env, "AGENTS.md"));
}

#[test]
fn a_target_and_an_agent_naming_one_file_write_it_once_as_the_target_says() {
    let env = setup(&["claude", "codex"]);
    env.write(
        ".co-cli/settings.json",
        r#"{"agents": ["claude", "codex"], "context_targets": [{"path": "AGENTS.md", "decisions_only": true}]}"#,
    );
    env.kb(&["decision", "add", "Use PostgreSQL everywhere", "--type", "architectural"]).ok();
    let j = env.kb(&["--json", "compile"]).ok().json();
    let targets: Vec<&str> = j["targets"].as_array().unwrap().iter().map(|t| t["target"].as_str().unwrap()).collect();
    assert_eq!(targets, ["AGENTS.md", "CLAUDE.md"]);
    let agents = read(&env, "AGENTS.md");
    assert!(agents.contains("Use PostgreSQL everywhere") && !agents.contains("Hello from the project."));
    is_block(&read(&env, "CLAUDE.md"));
}

#[test]
fn a_hand_written_rule_survives_every_compile_and_is_reported() {
    let env = setup(&["cursor"]);
    let mine = "---\ndescription: mine\nglobs: src/**\nalwaysApply: false\n---\nMy own API rule.\n";
    let path = env.write(".cursor/rules/kb-api.mdc", mine);
    for _ in 0..2 {
        let r = env.kb(&["compile"]);
        assert_eq!(r.code, 1, "{r:?}");
        assert!(r.stderr.contains(".cursor/rules/kb-api.mdc is not kb's"), "{}", r.stderr);
        assert_eq!(env.read(&path), mine);
    }
    assert!(exists(&env, ".cursor/rules/kb-docs.mdc"), "the other files are still written");
    let j = env.kb(&["--json", "agents"]).ok().json();
    let files = j["agents"][0]["files"].as_array().unwrap();
    let api = files.iter().find(|f| f["path"] == ".cursor/rules/kb-api.mdc").unwrap();
    assert_eq!(api["state"], "foreign");
    let r = env.kb(&["compile", "--check"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("foreign .cursor/rules/kb-api.mdc"), "{}", r.stdout);
    assert_eq!(env.read(&path), mine);
}

#[test]
fn a_renamed_instruction_leaves_no_orphan() {
    let env = setup(&["cursor", "claude"]);
    let other = env.write(".cursor/rules/team.mdc", "---\nalwaysApply: true\n---\nTeam rule.\n");
    let unmarked = env.write(".cursor/rules/kb-legacy.mdc", "---\nalwaysApply: true\n---\nNot kb's.\n");
    env.kb(&["compile"]).ok();
    assert!(exists(&env, ".cursor/rules/kb-api.mdc") && exists(&env, ".claude/rules/kb-api.md"));
    let dir = env.root().join(".github/instructions");
    std::fs::rename(dir.join("api.instructions.md"), dir.join("web-api.instructions.md")).unwrap();
    let j = env.kb(&["--json", "compile"]).ok().json();
    let deleted: Vec<&str> = j["generated"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["status"] == "deleted")
        .map(|g| g["path"].as_str().unwrap())
        .collect();
    assert_eq!(deleted, [".claude/rules/kb-api.md", ".cursor/rules/kb-api.mdc"]);
    assert!(!exists(&env, ".cursor/rules/kb-api.mdc") && !exists(&env, ".claude/rules/kb-api.md"));
    assert!(read(&env, ".cursor/rules/kb-web-api.mdc").contains("web-api.instructions.md; edit"));
    assert_eq!(env.read(&other), "---\nalwaysApply: true\n---\nTeam rule.\n");
    assert!(env.read(&unmarked).contains("Not kb's."), "a file without the marker is never deleted");
}

#[test]
fn removing_an_agent_removes_its_generated_files_and_nothing_else() {
    let env = setup(&["cursor", "kiro"]);
    let mine = env.write(".cursor/rules/team.mdc", "Team rule.\n");
    env.kb(&["compile"]).ok();
    let kiro_before = read(&env, ".kiro/steering/kb-api.md");
    set_agents(&env, &["kiro"]);
    env.kb(&["compile"]).ok();
    let left: Vec<String> = std::fs::read_dir(env.root().join(".cursor/rules"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["team.mdc"]);
    assert_eq!(env.read(&mine), "Team rule.\n");
    assert_eq!(read(&env, ".kiro/steering/kb-api.md"), kiro_before);
    assert!(exists(&env, ".kiro/steering/kb-context.md"));
}

/// Every file of the tree (but `.git` and `.co-cli/cache`) with its bytes.
fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            // git's folder, and kb's derived cache (a scan may refresh it, as every read does).
            if p.file_name().is_some_and(|n| n == ".git") || p.ends_with(".co-cli/cache") {
                continue;
            }
            if p.is_dir() {
                walk(&p, root, out);
            } else {
                out.insert(p.strip_prefix(root).unwrap().display().to_string(), std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

#[test]
fn compile_check_is_clean_after_compile_dirty_after_an_edit_and_writes_nothing() {
    let env = setup(&["claude", "cursor", "windsurf", "kiro", "cline", "codex", "copilot", "gemini"]);
    env.kb(&["compile"]).ok();
    let before = snapshot(&env.root());
    let r = env.kb(&["compile", "--check"]).ok();
    assert!(r.stdout.starts_with("Up to date"), "{}", r.stdout);
    assert_eq!(snapshot(&env.root()), before, "--check writes nothing");
    // Each kind of source edit makes it dirty, and it still writes nothing.
    let edits: [(&str, &str, &str); 3] = [
        (PROJECT, &context_file("Hello again."), "stale CLAUDE.md"),
        (
            ".github/instructions/api.instructions.md",
            "---\napplyTo: src/**\n---\nNew rule.\n",
            "stale .cursor/rules/kb-api.mdc",
        ),
        (
            ".github/instructions/new.instructions.md",
            "---\napplyTo: lib/**\n---\nLib rule.\n",
            "missing .kiro/steering/kb-new.md",
        ),
    ];
    for (file, text, expected) in edits {
        env.write(file, text);
        let before = snapshot(&env.root());
        let r = env.kb(&["compile", "--check"]);
        assert_eq!(r.code, 1, "{r:?}");
        assert!(r.stdout.contains(expected), "{expected}: {}", r.stdout);
        assert_eq!(snapshot(&env.root()), before, "--check writes nothing");
        env.kb(&["compile"]).ok();
        env.kb(&["compile", "--check"]).ok();
    }
    // A deleted instruction leaves orphans until the next compile; each diff is short.
    std::fs::remove_file(env.root().join(".github/instructions/new.instructions.md")).unwrap();
    let long: String = (0..80).map(|i| format!("Line {i}\n\n")).collect();
    env.write(PROJECT, &context_file(&long));
    let j = env.kb(&["--json", "compile", "--check"]).json();
    let check = j["check"].as_array().unwrap();
    let orphaned: Vec<&str> =
        check.iter().filter(|d| d["state"] == "orphaned").map(|d| d["path"].as_str().unwrap()).collect();
    assert_eq!(orphaned.len(), 5, "{orphaned:?}");
    assert!(check.iter().all(|d| d["diff"].as_array().unwrap().len() <= 20));
    assert!(check.iter().any(|d| d["diff"].as_array().unwrap().len() == 20), "a long diff is cut to 20 lines");
}

#[test]
fn agents_lists_each_file_with_its_state() {
    let env = setup(&["claude", "windsurf"]);
    let j = env.kb(&["--json", "agents"]).ok().json();
    let states: Vec<(String, String)> = j["agents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| {
            a["files"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| (f["path"].as_str().unwrap().to_string(), f["state"].as_str().unwrap().to_string()))
        })
        .collect();
    assert!(states.iter().all(|(_, s)| s == "missing"), "{states:?}");
    env.kb(&["compile"]).ok();
    env.write(".github/instructions/docs.instructions.md", "---\napplyTo: docs/**\n---\nChanged.\n");
    let j = env.kb(&["--json", "agents"]).ok().json();
    assert_eq!(j["agents"][0]["name"], "claude");
    let files = j["agents"][1]["files"].as_array().unwrap();
    let by_path = |p: &str| files.iter().find(|f| f["path"] == p).unwrap().clone();
    let context = by_path(".windsurf/rules/kb-context.md");
    assert_eq!(
        (context["kind"].as_str(), context["state"].as_str(), context["limit"].as_u64()),
        (Some("block"), Some("up to date"), Some(12000))
    );
    assert_eq!(context["bytes"].as_u64().unwrap() as usize, read(&env, ".windsurf/rules/kb-context.md").len());
    assert!(context["tokens"].as_u64().unwrap() > 10);
    let docs = by_path(".windsurf/rules/kb-docs.md");
    assert_eq!((docs["kind"].as_str(), docs["state"].as_str()), (Some("rule"), Some("stale")));
    let text = env.kb(&["agents"]).ok().stdout;
    assert!(text.contains("windsurf\n") && text.contains("stale      .windsurf/rules/kb-docs.md (rule"), "{text}");
}

#[test]
fn the_agents_setting_is_checked() {
    let env = TestEnv::new();
    let r = env.kb(&["init", "--agents", "claude,vim"]).usage();
    assert!(r.stderr.contains("vim") && r.stderr.contains("claude, codex, copilot, cursor"), "{}", r.stderr);
    env.kb(&["init", "--agents", "claude,Cursor,claude"]).ok();
    let s: serde_json::Value = serde_json::from_str(&read(&env, ".co-cli/settings.json")).unwrap();
    assert_eq!(s["agents"], serde_json::json!(["claude", "cursor"]));
    let j = env.kb(&["--json", "config"]).ok().json();
    assert_eq!(j["agents"]["value"], serde_json::json!(["claude", "cursor"]));
    let r = env.kb(&["config", "set", "agents", "kiro,emacs"]).err();
    assert!(r.stderr.contains("emacs") && r.stderr.contains("windsurf"), "{}", r.stderr);
    env.kb(&["config", "set", "agents", "kiro,cline"]).ok();
    let j = env.kb(&["--json", "config"]).ok().json();
    assert_eq!(j["agents"]["value"], serde_json::json!(["kiro", "cline"]));
    let r = env.env("KB_AGENTS", "codex,zed").kb(&["compile"]).err();
    assert!(r.stderr.contains("KB_AGENTS") && r.stderr.contains("zed"), "{}", r.stderr);
}

// ---- kb import --from claude|codex|gemini ----

fn claude_memory_dir(env: &TestEnv) -> std::path::PathBuf {
    let slug: String =
        env.root().to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    env.home().join(".claude/projects").join(slug).join("memory")
}

fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn memories(env: &TestEnv) -> Vec<serde_json::Value> {
    env.kb(&["--json", "list"]).ok().json()["memories"].as_array().unwrap().clone()
}

#[test]
fn import_from_claude_old_and_new_shapes_secrets_and_one_undo() {
    let env = TestEnv::new();
    env.kb(&["init"]).ok();
    let dir = claude_memory_dir(&env);
    put(&dir.join("MEMORY.md"), "- [Tests](tests.md) — how tests run\n");
    put(
        &dir.join("tests.md"),
        "---\nname: tests\ndescription: how tests run\nmetadata:\n  type: feedback\n---\n\nRun the tests with `cargo nextest run`.\n",
    );
    put(
        &dir.join("port.md"),
        "---\nname: port\ndescription: The api service listens on port 8080\ntype: project\n---\n",
    );
    put(
        &dir.join("token.md"),
        "---\nname: token\ntype: reference\n---\nDeploy with ghp_abcdefghijklmnopqrstuvwxyz0123456789AB\n",
    );
    put(
        &env.root().join(".claude/agent-memory/reviewer/changelog.md"),
        "---\nname: changelog\ntype: project\n---\nEvery PR needs a changelog line.\n",
    );
    let before = snapshot(&env.root());
    let r = env.kb(&["import", "--from", "claude", "--dry-run"]).ok();
    assert!(r.stdout.contains("3 added, 0 merged, 0 already stored, 1 skipped. Nothing written."), "{}", r.stdout);
    assert_eq!(snapshot(&env.root()), before, "--dry-run writes nothing");
    let r = env.kb(&["import", "--from", "claude"]).ok();
    assert!(!r.stdout.contains("ghp_") && !r.stderr.contains("ghp_"), "a refused secret is never shown: {r:?}");
    assert!(r.stderr.contains("token.md") && r.stderr.contains("secret"), "{}", r.stderr);
    let all = memories(&env);
    assert_eq!(all.len(), 3);
    let text = |i: usize| std::fs::read_to_string(all[i]["path"].as_str().unwrap()).unwrap();
    let files: Vec<String> = (0..3).map(text).collect();
    assert!(files.iter().all(|f| f.contains("created_by: agent:claude") && f.contains("- from-claude")), "{files:?}");
    let tests = files.iter().find(|f| f.contains("cargo nextest run")).unwrap();
    assert!(tests.contains("type: pattern"), "feedback (metadata.type, the new shape) is a pattern: {tests}");
    let port = files.iter().find(|f| f.contains("port 8080")).unwrap();
    assert!(port.contains("- project"), "type (the old shape) becomes a tag; the description is the fact: {port}");
    let reviewer = files.iter().find(|f| f.contains("changelog line")).unwrap();
    assert!(reviewer.contains("agent: reviewer"), "{reviewer}");
    // A second run adds nothing; one undo takes the whole import back.
    let r = env.kb(&["import", "--from", "claude"]).ok();
    assert!(r.stdout.contains("0 added, 0 merged, 3 already stored, 1 skipped."), "{}", r.stdout);
    let list = env.kb(&["--json", "undo", "--list"]).ok().json();
    assert_eq!(list["entries"].as_array().map(Vec::len), Some(1), "{list}");
    env.kb(&["undo"]).ok();
    assert!(memories(&env).is_empty());
}

#[test]
fn import_never_merges_a_different_fact() {
    let env = TestEnv::new();
    env.kb(&["init"]).ok();
    let file = claude_memory_dir(&env).join("port.md");
    put(&file, "---\nname: port\ntype: project\n---\nThe api service listens on port 8080\n");
    env.kb(&["import", "--from", "claude"]).ok();
    put(&file, "---\nname: port\ntype: project\n---\nThe api service listens on port 8081\n");
    let j = env.kb(&["--json", "import", "--from", "claude"]).ok().json();
    assert_eq!(j["added"], 1);
    assert!(j["items"][0]["note"].as_str().unwrap().contains("different facts"), "{j}");
    assert_eq!(memories(&env).len(), 2);
}

#[test]
fn import_from_codex_reads_the_blocks_of_this_root() {
    let env = TestEnv::new();
    env.kb(&["init"]).ok();
    let root = env.root().display().to_string();
    let handbook = format!(
        "# Task Group: kb\nscope: the kb repository\napplies_to: cwd={root}/src; reuse_rule=same repo\n\n## Task 1\n\n- The release script is ./release.sh\n\n### rollout_summary_files\n- rollout_summaries/a.md\n\n### keywords\n- release\n\n## Reusable knowledge\n- Run `cargo nextest run` for the tests\n\n# Task Group: other\napplies_to: cwd=/somewhere/else\n- Not about this repository\n"
    );
    put(&env.home().join(".codex/memories/MEMORY.md"), &handbook);
    let j = env.kb(&["--json", "import", "--from", "codex"]).ok().json();
    let facts: Vec<String> = memories(&env).iter().map(|m| m["summary"].as_str().unwrap().to_string()).collect();
    assert_eq!(j["added"], 2, "{j}");
    assert!(facts.iter().any(|f| f.contains("release.sh")) && facts.iter().any(|f| f.contains("nextest")), "{facts:?}");
    // --path reads any block of the given file.
    let other = env.base.join("handbook.md");
    put(&other, &handbook);
    let j =
        env.kb(&["--json", "import", "--from", "codex", "--path", other.to_str().unwrap(), "--dry-run"]).ok().json();
    assert_eq!((j["added"].as_u64(), j["merged"].as_u64(), j["exists"].as_u64()), (Some(1), Some(0), Some(2)), "{j}");
}

#[test]
fn import_from_gemini_reads_its_sections_and_memory_files_but_not_kbs_block() {
    let env = TestEnv::new();
    env.kb(&["init"]).ok();
    env.write(
        "GEMINI.md",
        "# Project\n\n## Gemini Added Memories\n- The staging DB is on port 5433\n\n## Other\n- not a memory\n\n<!-- kb:context:begin -->\n## Gemini Added Memories\n- inside kb's block\n<!-- kb:context:end -->\n",
    );
    put(&env.home().join(".gemini/GEMINI.md"), "## Gemini Added Memories\n- Prefer ripgrep over grep\n");
    let tmp = env.home().join(".gemini/tmp");
    put(&tmp.join("p1/.project_root"), &env.root().display().to_string());
    put(&tmp.join("p1/memory/MEMORY.md"), "# Memory\n\n- Builds need the nightly toolchain\n");
    put(&tmp.join("p2/memory/MEMORY.md"), "- Another project's fact\n");
    put(&tmp.join("p3/memory/MEMORY.md"), "- Named in projects.json\n");
    // The older place, before March 2026.
    put(&env.home().join(".gemini/memory/p3/GEMINI.md"), "- Older project memory place\n");
    put(
        &env.home().join(".gemini/projects.json"),
        &serde_json::json!({"projects": {env.root().display().to_string(): "p3"}}).to_string(),
    );
    let gemini_before = read(&env, "GEMINI.md");
    let j = env.kb(&["--json", "import", "--from", "gemini"]).ok().json();
    assert_eq!((j["added"].as_u64(), j["personal"].as_u64()), (Some(4), Some(1)), "the global file stays home: {j}");
    let j = env.kb(&["--json", "import", "--from", "gemini", "--personal"]).ok().json();
    assert_eq!((j["added"].as_u64(), j["exists"].as_u64()), (Some(1), Some(4)), "{j}");
    let facts: Vec<String> = memories(&env).iter().map(|m| m["summary"].as_str().unwrap().to_string()).collect();
    for want in ["port 5433", "ripgrep", "nightly", "projects.json", "Older project"] {
        assert!(facts.iter().any(|f| f.contains(want)), "{want}: {facts:?}");
    }
    assert!(
        !facts.iter().any(|f| f.contains("kb's block") || f.contains("Another project") || f.contains("not a memory"))
    );
    assert_eq!(read(&env, "GEMINI.md"), gemini_before, "read only");
    assert!(std::fs::read_to_string(memories(&env)[0]["path"].as_str().unwrap()).unwrap().contains("from-gemini"));
}

#[test]
fn a_rule_folder_that_leads_out_of_the_root_is_never_written() {
    let env = setup(&["cursor", "kiro"]);
    let outside = env.base.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(env.root().join(".cursor")).unwrap();
    std::os::unix::fs::symlink(&outside, env.root().join(".cursor/rules")).unwrap();
    let r = env.kb(&["compile"]).err();
    assert!(r.stderr.contains("leads out of the root"), "{}", r.stderr);
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "nothing written outside the root");
    assert!(exists(&env, ".kiro/steering/kb-api.md"), "the other agents' files are written");
}

#[test]
fn an_instruction_whose_name_would_break_the_marker_line_is_left_out() {
    let env = setup(&["cursor"]);
    env.write(".github/instructions/odd\nname.instructions.md", "---\napplyTo: lib/**\n---\nOdd.\n");
    let r = env.kb(&["compile"]).ok();
    assert!(r.stderr.contains("control character"), "{}", r.stderr);
    let names: Vec<String> = std::fs::read_dir(env.root().join(".cursor/rules"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains("odd")), "{names:?}");
    env.kb(&["compile", "--check"]).ok();
}

#[test]
fn import_follows_no_symlink_out_of_the_root() {
    use std::os::unix::fs::symlink;
    let env = TestEnv::new();
    env.kb(&["init"]).ok();
    let outside = env.base.join("outside");
    put(&outside.join("notes.md"), "---\nname: n\ntype: project\n---\nDeploys go through OutsideFactClaude\n");
    put(&outside.join("folder/a.md"), "Releases are cut by OutsideFactFolder\n");
    put(&outside.join("gemini.md"), "## Gemini Added Memories\n- The mirror is OutsideFactGemini\n");
    let agents = env.root().join(".claude/agent-memory");
    std::fs::create_dir_all(agents.join("x")).unwrap();
    // Committed symlinks: a memory file, an agent's folder, the project's GEMINI.md.
    symlink(outside.join("notes.md"), agents.join("x/notes.md")).unwrap();
    symlink(outside.join("folder"), agents.join("y")).unwrap();
    symlink(outside.join("gemini.md"), env.root().join("GEMINI.md")).unwrap();
    // A symlink that stays inside the root is followed.
    env.write("docs/agent-notes.md", "The changelog is checked by InsideLinkedFact\n");
    symlink("../../../docs/agent-notes.md", agents.join("x/inside.md")).unwrap();
    // The agents' own files under HOME lie outside the root by design, symlinked or not.
    put(&env.base.join("dotfiles/gemini.md"), "## Gemini Added Memories\n- Prefer HomeLinkedFact\n");
    std::fs::create_dir_all(env.home().join(".gemini")).unwrap();
    symlink(env.base.join("dotfiles/gemini.md"), env.home().join(".gemini/GEMINI.md")).unwrap();

    let claude = env.kb(&["--json", "import", "--from", "claude"]).ok();
    let gemini = env.kb(&["--json", "import", "--from", "gemini", "--personal"]).ok();
    for (run, file) in [(&claude, "x/notes.md"), (&claude, "y/a.md"), (&gemini, "repo/GEMINI.md")] {
        assert!(
            run.stderr.lines().any(|l| l.contains(file) && l.contains("a symlink leads outside")),
            "the warning names {file}: {}",
            run.stderr
        );
    }
    let facts: Vec<String> = memories(&env).iter().map(|m| m["summary"].as_str().unwrap().to_string()).collect();
    assert_eq!(facts.len(), 2, "{facts:?}");
    assert!(facts.iter().any(|f| f.contains("InsideLinkedFact")) && facts.iter().any(|f| f.contains("HomeLinkedFact")));
    // Nothing of the outside files anywhere in the repository, the output or the warnings.
    for (path, entry) in env.snapshot() {
        if let crate::common::Entry::File { bytes, .. } = entry {
            assert!(!String::from_utf8_lossy(&bytes).contains("OutsideFact"), "{path} holds an outside fact");
        }
    }
    for run in [&claude, &gemini] {
        assert!(!run.stdout.contains("OutsideFact") && !run.stderr.contains("OutsideFact"), "{run:?}");
    }
}

// ---- issue 28: personal memories stay home; --redact; ids; source; near misses; a second run ----

#[test]
fn personal_memories_stay_home_unless_personal() {
    let env = TestEnv::new();
    env.kb(&["init"]).ok();
    let dir = claude_memory_dir(&env);
    put(&dir.join("me.md"), "---\nname: me\ntype: user\n---\nMy name is Alex, payments team at ACME\n");
    put(
        &dir.join("style.md"),
        "---\nname: style\nmetadata:\n  type: feedback\nscope: user\n---\nAlex likes terse replies\n",
    );
    put(
        &dir.join("meta.md"),
        "---\nname: meta\ntype: feedback\nmetadata:\n  type: user\n---\nAlex reads diffs first\n",
    );
    put(
        &dir.join("tests.md"),
        "---\nname: tests\nmetadata:\n  type: feedback\n---\nRun the tests with `cargo nextest run`\n",
    );
    put(&env.home().join(".gemini/GEMINI.md"), "## Gemini Added Memories\n- My name is Alex and I work at ACME\n");
    let run = env.kb(&["import", "--from", "claude"]).ok();
    assert!(
        run.stdout.contains("1 added") && run.stdout.contains("3 personal left out (--personal imports them)"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("Alex") && !run.stderr.contains("Alex"),
        "a personal fact is named, never shown: {run:?}"
    );
    let j = env.kb(&["--json", "import", "--from", "gemini"]).ok().json();
    assert_eq!((j["added"].as_u64(), j["personal"].as_u64()), (Some(0), Some(1)), "{j}");
    assert_eq!(j["items"][0]["action"], "personal");
    let facts: Vec<String> = memories(&env).iter().map(|m| m["summary"].as_str().unwrap().to_string()).collect();
    assert_eq!(facts, ["Run the tests with `cargo nextest run`"]);
    let j = env.kb(&["--json", "import", "--from", "claude", "--personal"]).ok().json();
    assert_eq!((j["added"].as_u64(), j["personal"].as_u64()), (Some(3), Some(0)), "{j}");
    env.kb(&["import", "--from", "gemini", "--personal"]).ok();
    assert_eq!(memories(&env).len(), 5);
    // --personal and --redact are not for the Copilot records.
    env.kb(&["import", "--from", "copilot", "--personal"]).usage();
}

#[test]
fn redact_stores_a_secret_replaced_and_the_warning_names_it() {
    let env = TestEnv::new();
    env.kb(&["init"]).ok();
    let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    put(
        &claude_memory_dir(&env).join("deploy.md"),
        &format!("---\nname: d\ntype: project\n---\nDeploy with {token}\n"),
    );
    let run = env.kb(&["import", "--from", "claude"]).ok();
    assert!(run.stderr.contains("--redact"), "{}", run.stderr);
    assert!(memories(&env).is_empty());
    let run = env.kb(&["import", "--from", "claude", "--redact"]).ok();
    assert!(!run.stdout.contains(token) && !run.stderr.contains(token), "{run:?}");
    assert!(run.stdout.contains("1 added") && run.stdout.contains("redacted"), "{}", run.stdout);
    let text = std::fs::read_to_string(memories(&env)[0]["path"].as_str().unwrap()).unwrap();
    assert!(text.contains("Deploy with [REDACTED:github-pat]") && !text.contains(token), "{text}");
    // Again: already stored.
    let run = env.kb(&["import", "--from", "claude", "--redact"]).ok();
    assert!(run.stdout.contains("0 added, 0 merged, 1 already stored"), "{}", run.stdout);
}

#[test]
fn dry_run_items_have_their_own_ids_and_the_ids_the_run_gives() {
    let env = TestEnv::new();
    env.kb(&["init"]).ok();
    env.kb(&["save", "Deploys go out on Tuesdays"]).ok();
    put(
        &env.home().join(".codex/memories/MEMORY.md"),
        &format!(
            "# Task Group: kb\napplies_to: cwd={}\n\n- The release script is ./release.sh\n- Run `cargo nextest run` for the tests\n- The release script is ./release.sh\n",
            env.root().display()
        ),
    );
    let dry = env.kb(&["--json", "import", "--from", "codex", "--dry-run"]).ok().json();
    let items = dry["items"].as_array().unwrap().clone();
    let ids: Vec<&str> = items.iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 3);
    assert!(
        ids[0].ends_with("MEMORY.md:4") && ids[1].ends_with("MEMORY.md:5") && ids[2].ends_with("MEMORY.md:6"),
        "{ids:?}"
    );
    let planned: Vec<(String, Option<u64>)> =
        items.iter().map(|i| (i["action"].as_str().unwrap().to_string(), i["memory_id"].as_u64())).collect();
    assert_eq!(
        planned,
        [("added".to_string(), Some(2)), ("added".to_string(), Some(3)), ("exists".to_string(), Some(2))]
    );
    let real = env.kb(&["--json", "import", "--from", "codex"]).ok().json();
    let done: Vec<(String, Option<u64>)> = real["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["action"].as_str().unwrap().to_string(), i["memory_id"].as_u64()))
        .collect();
    assert_eq!(done, planned, "the dry run gives the ids the run gives");
}

#[test]
fn imported_memories_are_detected_not_user_told() {
    let env = TestEnv::new();
    env.kb(&["init"]).ok();
    put(
        &claude_memory_dir(&env).join("port.md"),
        "---\nname: port\ntype: project\n---\nThe api service listens on port 8080\n",
    );
    put(
        &env.home().join(".codex/memories/MEMORY.md"),
        &format!("# kb\napplies_to: cwd={}\n- Builds need nightly\n", env.root().display()),
    );
    env.kb(&["import", "--from", "claude"]).ok();
    env.kb(&["import", "--from", "codex"]).ok();
    for m in memories(&env) {
        let text = std::fs::read_to_string(m["path"].as_str().unwrap()).unwrap();
        assert!(text.contains("source: detected\n") && !text.contains("user-told"), "{text}");
    }
}

#[test]
fn an_import_restating_a_persons_memory_says_so() {
    let env = TestEnv::new();
    env.kb(&["init"]).ok();
    // A person's memory, of the default type; Claude's feedback is a pattern: another dedup scope.
    env.kb(&["save", "Run the tests with `cargo nextest run`, never cargo test"]).ok();
    env.kb(&["save", "The api service listens on port 8080"]).ok();
    let dir = claude_memory_dir(&env);
    put(
        &dir.join("tests.md"),
        "---\nname: tests\nmetadata:\n  type: feedback\n---\nRun the tests with `cargo nextest run`, not cargo test\n",
    );
    put(&dir.join("port.md"), "---\nname: port\ntype: project\n---\nThe api service listens on port 8081\n");
    put(
        &dir.join("same.md"),
        "---\nname: same\nmetadata:\n  type: feedback\n---\nThe API service listens on port 8080\n",
    );
    let j = env.kb(&["--json", "import", "--from", "claude"]).ok().json();
    let by = |name: &str| {
        j["items"].as_array().unwrap().iter().find(|i| i["id"].as_str().unwrap().ends_with(name)).unwrap().clone()
    };
    let tests = by("tests.md");
    assert_eq!((tests["action"].as_str(), tests["similar_to"]["id"].as_u64()), (Some("added"), Some(1)), "{j}");
    assert_eq!(tests["similar_to"]["why"], "written by a person");
    let port = by("port.md");
    assert_eq!(port["similar_to"]["id"], 2, "{j}");
    assert_eq!(port["similar_to"]["only_in_existing"], serde_json::json!(["8080"]));
    let same = by("same.md");
    assert_eq!((same["action"].as_str(), same["memory_id"].as_u64()), (Some("exists"), Some(2)), "{j}");
    let run = env.kb(&["import", "--from", "claude", "--dry-run"]).ok();
    assert!(run.stdout.contains("0 added"), "a second run adds nothing: {}", run.stdout);
    // Both ports stay.
    let facts: Vec<String> = memories(&env).iter().map(|m| m["summary"].as_str().unwrap().to_string()).collect();
    assert!(facts.iter().any(|f| f.ends_with("8080")) && facts.iter().any(|f| f.ends_with("8081")), "{facts:?}");
}

#[test]
fn a_second_import_adds_nothing_past_the_dedup_window() {
    let env = TestEnv::new();
    env.kb(&["init"]).ok();
    let dir = claude_memory_dir(&env);
    // More facts than the window's 10 most recent, each a different fact (its own number).
    for i in 0..40 {
        put(
            &dir.join(format!("f{i:02}.md")),
            &format!("---\nname: f{i}\ntype: project\n---\nService {i} listens on port {}\n", 9000 + i),
        );
    }
    let j = env.kb(&["--json", "import", "--from", "claude"]).ok().json();
    assert_eq!(j["added"], 40, "{j}");
    let j = env.kb(&["--json", "import", "--from", "claude"]).ok().json();
    assert_eq!((j["added"].as_u64(), j["exists"].as_u64()), (Some(0), Some(40)), "{j}");
    assert_eq!(memories(&env).len(), 40);
}

#[test]
fn every_import_keeps_8080_and_8081_apart() {
    let env = TestEnv::new();
    env.kb(&["init"]).ok();
    env.kb(&["save", "The api service listens on port 8080"]).ok();
    put(
        &claude_memory_dir(&env).join("p.md"),
        "---\nname: p\ntype: project\n---\nThe api service listens on port 8081\n",
    );
    put(
        &env.home().join(".codex/memories/MEMORY.md"),
        &format!("# kb\napplies_to: cwd={}\n- The api service listens on port 8081.\n", env.root().display()),
    );
    env.write("GEMINI.md", "## Gemini Added Memories\n- the api service listens on port 8081\n");
    for tool in ["claude", "codex", "gemini"] {
        env.kb(&["import", "--from", tool]).ok();
    }
    env.write(
        ".github/copilot-memories.jsonl",
        "{\"id\":\"mem-1\",\"subject\":\"general\",\"fact\":\"The api service listens on port 8082\",\"citations\":[],\"reason\":\"r\"}\n",
    );
    env.kb(&["import", "--from", "copilot"]).ok();
    let facts: Vec<String> = memories(&env).iter().map(|m| m["summary"].as_str().unwrap().to_lowercase()).collect();
    for port in ["8080", "8081", "8082"] {
        assert!(facts.iter().any(|f| f.contains(port)), "{port}: {facts:?}");
    }
    let v = env.kb(&["--json", "consolidate"]).ok().json();
    let facts: Vec<String> = memories(&env).iter().map(|m| m["summary"].as_str().unwrap().to_lowercase()).collect();
    for port in ["8080", "8081", "8082"] {
        assert!(facts.iter().any(|f| f.contains(port)), "consolidate kept {port}: {facts:?} {v}");
    }
}

/// SPEC §15.1: a generated file copied by hand under a new name (marker line and all) and
/// edited no longer hashes to its marker line: it is no orphan of kb's, is never deleted, and
/// the warning says so; an unedited copy under a kb name is deleted as an orphan, journaled, so
/// `kb undo` brings it back.
#[test]
fn an_edited_copy_of_a_generated_file_is_never_deleted() {
    let env = setup(&["cursor"]);
    env.kb(&["compile"]).ok();
    let original = read(&env, ".cursor/rules/kb-api.mdc");
    let edit = original.replace("Use the typed client.", "Use the typed client, and my retry wrapper.");
    let copy = env.write(".cursor/rules/kb-api-mine.mdc", &edit);
    let mine = env.write(".cursor/rules/my-api.mdc", &edit);
    let plain = env.write(".cursor/rules/kb-api-copy.mdc", &original);
    for _ in 0..2 {
        let r = env.kb(&["compile"]);
        assert_eq!(r.code, 1, "{r:?}");
        assert!(
            r.stderr.contains(".cursor/rules/kb-api-mine.mdc") && r.stderr.contains("edited by hand"),
            "{}",
            r.stderr
        );
        assert_eq!(env.read(&copy), edit);
        assert_eq!(env.read(&mine), edit);
    }
    let check = env.kb(&["compile", "--check"]);
    assert_eq!(check.code, 1);
    assert!(check.stdout.contains("edited .cursor/rules/kb-api-mine.mdc"), "{}", check.stdout);
    assert_eq!(env.read(&copy), edit);
    // The unedited copy was kb's own bytes: deleted as an orphan, and undo brings it back.
    assert!(!plain.exists(), "an orphan is deleted");
    env.kb(&["undo"]).ok();
    assert_eq!(env.read(&plain), original, "kb undo brings the deleted file back");
}

/// SPEC §15.1: a hand edit inside a generated file is kept, not overwritten: the warning names
/// the file and its source, compile exits 1, `--check` and `kb agents` say `edited`.
#[test]
fn a_hand_edit_inside_a_generated_file_is_kept_and_reported() {
    let env = setup(&["cursor", "claude"]);
    env.kb(&["compile"]).ok();
    let rule = env.root().join(".cursor/rules/kb-api.mdc");
    let edited = env.read(&rule).replace("Use the typed client.", "Use the typed client. Never retry POSTs.");
    std::fs::write(&rule, &edited).unwrap();
    env.write(API, "---\napplyTo: src/**\n---\n# API\n\nUse the typed client v2.\n");
    let r = env.kb(&["compile"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains(".cursor/rules/kb-api.mdc") && r.stderr.contains("edited by hand"), "{}", r.stderr);
    assert!(r.stderr.contains(&format!("carry the change into {API}")), "{}", r.stderr);
    assert_eq!(env.read(&rule), edited, "the edit is kept");
    assert!(read(&env, ".claude/rules/kb-api.md").contains("typed client v2"), "the other agent's file is written");
    let check = env.kb(&["compile", "--check"]);
    assert_eq!(check.code, 1);
    assert!(check.stdout.contains("edited .cursor/rules/kb-api.mdc"), "{}", check.stdout);
    let j = env.kb(&["--json", "agents"]).ok().json();
    let files = j["agents"][0]["files"].as_array().unwrap();
    let api = files.iter().find(|f| f["path"] == ".cursor/rules/kb-api.mdc").unwrap();
    assert_eq!(api["state"], "edited");
    // Carried into the source and deleted, the file is kb's again.
    std::fs::remove_file(&rule).unwrap();
    env.kb(&["compile"]).ok();
    assert!(read(&env, ".cursor/rules/kb-api.mdc").contains("typed client v2"));
}

/// A generated file an older kb wrote (its marker line without a hash) is kb's while its content
/// is what kb writes now (then it gets the hash), and is left alone, as possibly edited, when it
/// is not.
#[test]
fn an_older_kbs_generated_file_is_upgraded_only_when_unchanged() {
    let env = setup(&["cursor"]);
    env.kb(&["compile"]).ok();
    let rule = env.root().join(".cursor/rules/kb-api.mdc");
    let now = env.read(&rule);
    let strip = |t: &str| regex::Regex::new(r"; sha256:[0-9a-f]{16} -->").unwrap().replace(t, " -->").into_owned();
    std::fs::write(&rule, strip(&now)).unwrap();
    env.kb(&["compile"]).ok();
    assert_eq!(env.read(&rule), now, "upgraded to the hashed marker line");
    let old_edited = strip(&now).replace("Use the typed client.", "Use the typed client. Mine.");
    std::fs::write(&rule, &old_edited).unwrap();
    let r = env.kb(&["compile"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("without a content hash"), "{}", r.stderr);
    assert_eq!(env.read(&rule), old_edited);
}

/// SPEC §7.7: an `applyTo` glob holding a line break cannot go on Cursor's and Windsurf's one
/// `globs:` line: that instruction is left out for them with a warning naming its file, so no
/// frontmatter key is injected and every file kb writes is still its own.
#[test]
fn a_glob_with_a_line_break_never_reaches_a_globs_line() {
    let env = setup(&["cursor", "windsurf", "claude"]);
    let bad = ".github/instructions/evil.instructions.md";
    env.write(bad, "---\napplyTo: \"src/**\\nalwaysApply: true\\n---\\nINJECTED\"\n---\nEvil body.\n");
    let r = env.kb(&["compile"]);
    for rel in [".cursor/rules/kb-evil.mdc", ".windsurf/rules/kb-evil.md"] {
        assert!(!exists(&env, rel), "{rel} written:\n{}", read(&env, rel));
    }
    assert!(r.stderr.contains(bad) && r.stderr.contains("line break"), "{}", r.stderr);
    for dir in [".cursor/rules", ".windsurf/rules"] {
        for e in std::fs::read_dir(env.root().join(dir)).unwrap() {
            let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
            assert!(!text.contains("INJECTED"), "{text}");
        }
    }
    // Claude's list quotes each glob: the file is written, the glob one YAML string.
    let claude = read(&env, ".claude/rules/kb-evil.md");
    assert!(claude.contains("\"src/**\\nalwaysApply: true\\n---\\nINJECTED\""), "{claude}");
    env.kb(&["compile"]);
    let check = env.kb(&["--json", "compile", "--check"]).json();
    assert!(check["check"].as_array().unwrap().is_empty(), "kb still knows every file it wrote: {check}");
}

/// SPEC §7.15: when an agent's rules folder is a regular file, the warning names that folder,
/// not the files kb would put in it.
#[test]
fn a_rules_folder_that_is_a_file_is_named() {
    let env = setup(&["kiro"]);
    env.write(".kiro/steering", "not a folder\n");
    let r = env.kb(&["compile"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains(".kiro/steering is a file, not a folder"), "{}", r.stderr);
    assert!(!r.stderr.contains("kb-context.md is not kb's"), "{}", r.stderr);
    let check = env.kb(&["compile", "--check"]);
    assert!(check.stdout.contains(".kiro/steering is a file, not a folder"), "{}", check.stdout);
    let agents = env.kb(&["agents"]);
    assert!(agents.stderr.contains(".kiro/steering is a file, not a folder"), "{}", agents.stderr);
    assert_eq!(env.read(&env.root().join(".kiro/steering")), "not a folder\n");
}
