//! `kb instructions` (docs/behaviour.md): scoped `.github/instructions/**/*.instructions.md` files,
//! their `applyTo` globs with VS Code semantics, `--for` paths, and the bad inputs that make a file
//! apply to nothing (a warning, and a `kb check` problem).

use crate::common::*;
use serde_json::json;

/// Writes `.github/instructions/<name>` with this frontmatter and a body.
fn instruction(t: &TestEnv, name: &str, yaml: &str) -> std::path::PathBuf {
    t.write(&format!(".github/instructions/{name}"), &format!("---\n{yaml}---\n\nFollow the rules.\n"))
}

/// Runs `kb --json instructions ARGS` and returns `name → (applies, matched)` for each file, in
/// the order listed.
fn applies(t: &TestEnv, args: &[&str]) -> Vec<(String, bool, serde_json::Value)> {
    let mut full = vec!["--json", "instructions"];
    full.extend_from_slice(args);
    let v = t.kb(&full).ok().json();
    v["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let path = i["path"].as_str().unwrap();
            let name = path.rsplit_once(".github/instructions/").unwrap().1.to_string();
            (name, i["applies"].as_bool().unwrap(), i["matched"].clone())
        })
        .collect()
}

/// Returns whether the file `name` applies for `args`, and the glob that matched.
fn one(t: &TestEnv, name: &str, args: &[&str]) -> (bool, serde_json::Value) {
    let all = applies(t, args);
    let (_, a, m) = all.iter().find(|(n, _, _)| n == name).unwrap_or_else(|| panic!("{name} not listed: {all:?}"));
    (*a, m.clone())
}

#[test]
fn json_shape_path_order_and_text() {
    let t = TestEnv::pinned();
    instruction(&t, "web.instructions.md", "applyTo: \"web/**/*.ts\"\ndescription: \"Frontend rules\"\n");
    let rust = instruction(&t, "backend/rust.instructions.md", "applyTo: 'src/**/*.rs'\n");
    instruction(&t, "all.instructions.md", "applyTo: '**'\ndescription: Everywhere\n");
    t.write(".github/instructions/notes.md", "---\napplyTo: '**'\n---\nnot an instruction file\n");
    t.write(".github/copilot-instructions.md", "repo-wide, not scoped\n");
    let run = t.kb(&["--json", "instructions", "--for", "src/store/db.rs"]).ok();
    assert_eq!(run.stderr, "", "{run:?}");
    let v = run.json();
    let dir = t.root().join(".github/instructions");
    assert_eq!(
        v,
        json!({"instructions": [
            {"path": dir.join("all.instructions.md").display().to_string(), "apply_to": ["**"],
             "description": "Everywhere", "applies": true, "matched": "**"},
            {"path": rust.display().to_string(), "apply_to": ["src/**/*.rs"],
             "description": null, "applies": true, "matched": "src/**/*.rs"},
            {"path": dir.join("web.instructions.md").display().to_string(), "apply_to": ["web/**/*.ts"],
             "description": "Frontend rules", "applies": false, "matched": null},
        ]})
    );
    // Text: one line per file, whether it applies, which glob matched, the description.
    let out = t.kb(&["instructions", "--for", "src/store/db.rs"]).ok().stdout;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[0].contains("applies") && lines[0].contains("all.instructions.md") && lines[0].contains("Everywhere")
    );
    assert!(lines[1].contains("applies") && lines[1].contains("backend/rust.instructions.md"));
    assert!(lines[1].contains("matched src/**/*.rs"), "{out}");
    assert!(
        lines[2].contains("not applied") && lines[2].contains("web/**/*.ts") && lines[2].contains("Frontend rules")
    );
    // kb never edits them.
    assert!(t.read(&rust).starts_with("---\napplyTo: 'src/**/*.rs'\n---\n"));
}

#[test]
fn no_instructions_folder() {
    let t = TestEnv::pinned();
    assert_eq!(t.kb(&["--json", "instructions"]).ok().json(), json!({"instructions": []}));
    assert!(t.kb(&["instructions"]).ok().stdout.contains("No scoped instructions"));
    assert_eq!(t.kb(&["check"]).code, 0);
}

#[test]
fn star_stays_inside_a_folder_double_star_crosses() {
    let t = TestEnv::pinned();
    instruction(&t, "py.instructions.md", "applyTo: 'src/*.py'\n");
    instruction(&t, "deep.instructions.md", "applyTo: 'src/**/*.py'\n");
    instruction(&t, "sub.instructions.md", "applyTo: '**/subdir/**/*.py'\n");
    instruction(&t, "top.instructions.md", "applyTo: '*'\n");
    assert_eq!(one(&t, "py.instructions.md", &["--for", "src/foo.py"]), (true, json!("src/*.py")));
    assert_eq!(one(&t, "py.instructions.md", &["--for", "src/foo/bar.py"]), (false, json!(null)));
    assert!(one(&t, "deep.instructions.md", &["--for", "src/foo.py"]).0);
    assert!(one(&t, "deep.instructions.md", &["--for", "src/a/b/c.py"]).0);
    assert!(one(&t, "sub.instructions.md", &["--for", "subdir/foo.py"]).0);
    assert!(one(&t, "sub.instructions.md", &["--for", "deep/parent/subdir/nested/qux.py"]).0);
    assert!(!one(&t, "sub.instructions.md", &["--for", "src/foo.py"]).0);
    // `*` is one folder level (the root's files), not "always on".
    assert!(one(&t, "top.instructions.md", &["--for", "README.md"]).0);
    assert!(!one(&t, "top.instructions.md", &["--for", "src/foo.py"]).0);
    assert!(!one(&t, "top.instructions.md", &[]).0);
}

#[test]
fn comma_lists_and_brace_alternation() {
    let t = TestEnv::pinned();
    instruction(&t, "ts.instructions.md", "applyTo: \"**/*.{ts,tsx}, docs/*.md\"\n");
    let v = t.kb(&["--json", "instructions"]).ok().json();
    assert_eq!(v["instructions"][0]["apply_to"], json!(["**/*.{ts,tsx}", "docs/*.md"]));
    assert_eq!(one(&t, "ts.instructions.md", &["--for", "web/app.tsx"]), (true, json!("**/*.{ts,tsx}")));
    assert_eq!(one(&t, "ts.instructions.md", &["--for", "a.ts"]), (true, json!("**/*.{ts,tsx}")));
    assert_eq!(one(&t, "ts.instructions.md", &["--for", "docs/guide.md"]), (true, json!("docs/*.md")));
    assert_eq!(one(&t, "ts.instructions.md", &["--for", "docs/api/x.md"]), (false, json!(null)));
    assert_eq!(one(&t, "ts.instructions.md", &["--for", "web/app.js"]), (false, json!(null)));
    // Several --for paths: one match is enough.
    assert!(one(&t, "ts.instructions.md", &["--for", "web/app.js", "--for", "docs/guide.md"]).0);
}

#[test]
fn always_on_globs_apply_without_for() {
    let t = TestEnv::pinned();
    instruction(&t, "a.instructions.md", "applyTo: '**'\n");
    instruction(&t, "b.instructions.md", "applyTo: '**/*'\n");
    instruction(&t, "c.instructions.md", "applyTo: 'src/**, **'\n");
    instruction(&t, "d.instructions.md", "applyTo: 'src/**'\n");
    let got = applies(&t, &[]);
    let summary: Vec<(&str, bool, serde_json::Value)> =
        got.iter().map(|(n, a, m)| (n.as_str(), *a, m.clone())).collect();
    assert_eq!(
        summary,
        [
            ("a.instructions.md", true, json!("**")),
            ("b.instructions.md", true, json!("**/*")),
            ("c.instructions.md", true, json!("**")),
            ("d.instructions.md", false, json!(null)),
        ]
    );
    assert_eq!(one(&t, "d.instructions.md", &["--for", "src/x/y.rs"]), (true, json!("src/**")));
}

#[test]
fn for_paths_relative_to_the_root_or_absolute_inside_it() {
    let mut t = TestEnv::pinned();
    instruction(&t, "rs.instructions.md", "applyTo: 'src/**/*.rs'\n");
    let abs = t.root().join("src/lib.rs");
    assert_eq!(one(&t, "rs.instructions.md", &["--for", abs.to_str().unwrap()]), (true, json!("src/**/*.rs")));
    assert!(one(&t, "rs.instructions.md", &["--for", "./tests/../src/lib.rs"]).0);
    // Relative to the root, not to the working directory.
    std::fs::create_dir_all(t.root().join("docs")).unwrap();
    t.cwd = Some("docs".into());
    assert!(one(&t, "rs.instructions.md", &["--for", "src/lib.rs"]).0);
    // Through a symlink to the root, an absolute path is still inside it.
    let link = t.base.join("link");
    std::os::unix::fs::symlink(t.root(), &link).unwrap();
    assert!(one(&t, "rs.instructions.md", &["--for", link.join("src/lib.rs").to_str().unwrap()]).0);
}

#[test]
fn for_path_outside_the_root_is_a_usage_error() {
    let t = TestEnv::pinned();
    instruction(&t, "rs.instructions.md", "applyTo: '**'\n");
    let outside = t.home().join("a.rs");
    let run = t.kb(&["instructions", "--for", outside.to_str().unwrap()]).usage();
    assert!(run.stderr.contains("outside the root"), "{run:?}");
    assert_eq!(run.stdout, "");
    let run = t.kb(&["--json", "instructions", "--for", "../elsewhere/a.rs"]).usage();
    assert!(run.stderr.contains("outside the root"), "{run:?}");
    assert_eq!(run.json()["error"]["kind"], "usage", "with --json the error is JSON on stdout");
}

/// Writes one good and one bad instruction file; asserts the bad one is listed, applies to
/// nothing (even for a path its glob would match, or always-on), warns on stderr naming it and
/// `needle`, and is a `kb check` problem (with `line` when given), while the good one applies.
fn assert_bad(yaml: &str, needle: &str, line: Option<u64>) {
    let t = TestEnv::pinned();
    instruction(&t, "good.instructions.md", "applyTo: 'src/**'\n");
    let bad = t.write(".github/instructions/bad.instructions.md", &format!("---\n{yaml}---\nbody\n"));
    let run = t.kb(&["--json", "instructions", "--for", "src/a.rs"]).ok();
    assert!(run.stderr.contains("warning:") && run.stderr.contains("bad.instructions.md"), "{yaml}: {run:?}");
    assert!(run.stderr.contains(needle), "{yaml}: {needle:?} not in {run:?}");
    let v = run.json();
    let list = v["instructions"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{yaml}: the bad file is listed");
    assert_eq!(list[0]["applies"], json!(false), "{yaml}");
    assert_eq!(list[0]["matched"], json!(null), "{yaml}");
    assert_eq!(list[1]["applies"], json!(true), "{yaml}: the other file still loads");
    let check = t.kb(&["--json", "check"]);
    assert_eq!(check.code, 1, "{yaml}: {check:?}");
    let check_json = check.json();
    let problems: Vec<&serde_json::Value> =
        check_json["problems"].as_array().unwrap().iter().filter(|p| p["path"] == bad.display().to_string()).collect();
    assert_eq!(problems.len(), 1, "{yaml}: {check:?}");
    assert!(problems[0]["message"].as_str().unwrap().contains(needle), "{yaml}: {problems:?}");
    if line.is_some() {
        assert_eq!(problems[0]["line"].as_u64(), line, "{yaml}: {problems:?}");
    }
    assert!(t.kb(&["check"]).stdout.contains("bad.instructions.md"));
}

#[test]
fn missing_or_empty_apply_to() {
    assert_bad("description: no globs\n", "no applyTo", None);
    assert_bad("applyTo: ''\ndescription: x\n", "applyTo is empty", Some(2));
    assert_bad("applyTo: ' , '\n", "applyTo is empty", Some(2));
    assert_bad("applyTo:\n", "applyTo is empty", Some(2));
}

#[test]
fn apply_to_a_list_or_not_a_string() {
    assert_bad("description: d\napplyTo:\n  - 'src/**'\n  - '**'\n", "not a list", Some(3));
    assert_bad("applyTo: ['**']\n", "not a list", Some(2));
    assert_bad("applyTo: 42\n", "not a number", Some(2));
    assert_bad("applyTo: true\n", "not a boolean", Some(2));
}

#[test]
fn glob_that_does_not_parse() {
    assert_bad("applyTo: 'src/['\n", "'src/[' does not parse", Some(2));
    assert_bad("applyTo: '**, src/{a,b'\n", "does not parse", Some(2));
}

#[test]
fn malformed_yaml() {
    // Unquoted, `*` starts a YAML alias: the hint says to quote the glob.
    assert_bad("applyTo: **/*.ts\n", "quote the glob", Some(2));
    assert_bad("applyTo: 'src/**'\ndescription: [unclosed\n", "malformed YAML", None);
    let t = TestEnv::pinned();
    t.write(".github/instructions/open.instructions.md", "---\napplyTo: '**'\nno closing fence\n");
    let run = t.kb(&["--json", "instructions"]).ok();
    assert!(run.stderr.contains("not closed"), "{run:?}");
    assert_eq!(run.json()["instructions"][0]["applies"], json!(false));
    assert_eq!(t.kb(&["check"]).code, 1);
}

#[test]
fn symlink_loops_and_links_out_of_the_root_are_not_followed() {
    let t = TestEnv::pinned();
    instruction(&t, "a.instructions.md", "applyTo: '**'\n");
    let dir = t.root().join(".github/instructions");
    std::os::unix::fs::symlink(&dir, dir.join("loop")).unwrap();
    std::os::unix::fs::symlink("..", dir.join("up")).unwrap();
    // A folder and a file outside the root, linked in.
    let outside = t.base.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("x.instructions.md"), "---\napplyTo: '**'\n---\nsecret\n").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("out")).unwrap();
    std::os::unix::fs::symlink(outside.join("x.instructions.md"), dir.join("leak.instructions.md")).unwrap();
    // A symlinked folder inside the root is read.
    t.write("shared/inner/s.instructions.md", "---\napplyTo: 'src/**'\n---\nshared\n");
    std::os::unix::fs::symlink(t.root().join("shared/inner"), dir.join("inner")).unwrap();
    let run = t.kb(&["--json", "instructions"]).ok();
    let names: Vec<String> = run.json()["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap().rsplit_once("instructions/").unwrap().1.to_string())
        .collect();
    assert_eq!(names, ["a.instructions.md", "inner/s.instructions.md"], "{run:?}");
    assert!(run.stderr.contains("outside"), "{run:?}");
    assert!(!run.stdout.contains("secret"));
    let check = t.kb(&["check"]);
    assert_eq!(check.code, 1, "{check:?}");
    assert!(check.stdout.contains("leak.instructions.md") && check.stdout.contains("out"), "{check:?}");
}

#[test]
fn instructions_folder_symlinked_out_of_the_root() {
    let t = TestEnv::pinned();
    let outside = t.base.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("x.instructions.md"), "---\napplyTo: '**'\n---\nsecret\n").unwrap();
    std::fs::create_dir_all(t.root().join(".github")).unwrap();
    std::os::unix::fs::symlink(&outside, t.root().join(".github/instructions")).unwrap();
    let run = t.kb(&["--json", "instructions"]).ok();
    assert_eq!(run.json(), json!({"instructions": []}));
    assert!(run.stderr.contains("outside the root"), "{run:?}");
}

#[test]
fn help_has_examples() {
    let t = TestEnv::pinned();
    let out = t.kb(&["instructions", "--help"]).ok().stdout;
    assert!(out.contains("Examples:\n  kb instructions") && out.contains("--for"), "{out}");
}

#[test]
fn a_huge_alternation_is_a_warning_not_a_crash() {
    // globset panics on a glob whose regex is too large; kb refuses such a glob with a warning.
    let t = TestEnv::pinned();
    instruction(&t, "good.instructions.md", "applyTo: 'src/**'\n");
    let huge: Vec<String> = (0..20_000).map(|i| format!("f{i}")).collect();
    t.write(
        ".github/instructions/huge.instructions.md",
        &format!("---\napplyTo: 'src/{{{}}}'\n---\nbody\n", huge.join(",")),
    );
    let large: Vec<String> = (0..2_000).map(|i| format!("d{i}")).collect();
    t.write(
        ".github/instructions/large.instructions.md",
        &format!("---\napplyTo: 'src/{{{}}}/**'\n---\nbody\n", large.join(",")),
    );
    let run = t.kb(&["--json", "instructions", "--for", "src/d1999/x.rs"]).ok();
    assert!(run.stderr.contains("huge.instructions.md") && run.stderr.contains("does not parse"), "{run:?}");
    assert!(run.stderr.len() < 2_000, "the warning does not print the whole glob: {} bytes", run.stderr.len());
    let applies: Vec<bool> =
        run.json()["instructions"].as_array().unwrap().iter().map(|i| i["applies"].as_bool().unwrap()).collect();
    assert_eq!(applies, [true, false, true], "good and large apply, huge applies to nothing");
    for args in [&["context", "--for", "src/a.rs"][..], &["compile"], &["check"]] {
        let run = t.kb(args);
        assert!(run.code == 0 || run.code == 1, "{args:?}: {run:?}");
        assert!(!run.stderr.contains("panicked"), "{args:?}: {run:?}");
    }
}

#[test]
fn without_for_each_file_says_where_it_applies() {
    let t = TestEnv::pinned();
    instruction(&t, "api.instructions.md", "applyTo: 'src/api/**, docs/api.md'\n");
    let text = t.kb(&["instructions"]).ok().stdout;
    assert!(text.contains("api.instructions.md  (applies to: src/api/**, docs/api.md)"), "{text}");
    assert!(!text.contains("not applied"), "nothing was asked about files: {text}");
    let text = t.kb(&["instructions", "--for", "README.md"]).ok().stdout;
    assert!(text.contains("- not applied") && text.contains("(applyTo src/api/**, docs/api.md)"), "{text}");
}
