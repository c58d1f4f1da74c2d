//! `kb hooks`: kb's entries in each agent's own hook file (docs/hooks.md) — installed next to a
//! person's settings and hooks without changing a byte of them, never twice, replaced when stale,
//! removed alone, undone; files kb cannot use left as they are while the other agents' files are
//! still handled; `--check`, `--kb`, the status of every agent.

use crate::common::*;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;

/// A person's Claude Code settings: other keys, other hooks, a matcher group on an event kb
/// hooks too, laid out by hand (compact in places, four spaces).
const PERSON: &str = r#"{
    "permissions": {"allow": ["Bash(cargo test:*)"], "deny": []},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
        ],
        "SessionStart": [
            {
                "matcher": "startup",
                "hooks": [{"type": "command", "command": "echo hello", "timeout": 1}]
            }
        ]
    },
    "model": "opus"
}
"#;

/// [`PERSON`] after `kb hooks install claude`: kb's group added to `SessionStart`, its other
/// events after the person's, nothing else changed.
const PERSON_INSTALLED: &str = r#"{
    "permissions": {"allow": ["Bash(cargo test:*)"], "deny": []},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
        ],
        "SessionStart": [
            {
                "matcher": "startup",
                "hooks": [{"type": "command", "command": "echo hello", "timeout": 1}]
            },
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": "kb hook session-start --agent claude",
                        "timeout": 10
                    }
                ]
            }
        ],
        "UserPromptSubmit": [
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": "kb hook prompt --agent claude",
                        "timeout": 5
                    }
                ]
            }
        ],
        "PreCompact": [
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": "kb hook pre-compact --agent claude",
                        "timeout": 5
                    }
                ]
            }
        ],
        "SessionEnd": [
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": "kb hook session-end --agent claude",
                        "timeout": 3
                    }
                ]
            }
        ]
    },
    "model": "opus"
}
"#;

const CLAUDE: &str = ".claude/settings.json";

/// The files a fresh install writes, per agent (tests/golden/hooks/).
const GOLDEN: [(&str, &str, &str); 5] = [
    ("claude", CLAUDE, include_str!("../golden/hooks/claude.json")),
    ("codex", ".codex/hooks.json", include_str!("../golden/hooks/codex.json")),
    ("copilot", ".github/hooks/kb.json", include_str!("../golden/hooks/copilot.json")),
    ("cursor", ".cursor/hooks.json", include_str!("../golden/hooks/cursor.json")),
    ("gemini", ".gemini/settings.json", include_str!("../golden/hooks/gemini.json")),
];

/// Cline's scripts, by event.
const CLINE: [(&str, &str); 4] = [
    ("TaskStart", include_str!("../golden/hooks/cline-TaskStart")),
    ("UserPromptSubmit", include_str!("../golden/hooks/cline-UserPromptSubmit")),
    ("PreCompact", include_str!("../golden/hooks/cline-PreCompact")),
    ("TaskComplete", include_str!("../golden/hooks/cline-TaskComplete")),
];

fn read(t: &TestEnv, rel: &str) -> String {
    std::fs::read_to_string(t.root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Returns the agent's object of a `kb --json hooks...` report.
fn agent<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == name)
        .unwrap_or_else(|| panic!("{name} in {report}"))
}

#[test]
fn install_keeps_every_other_key_hook_and_group_byte_for_byte() {
    let t = TestEnv::new();
    t.write(CLAUDE, PERSON);
    let r = t.kb(&["--json", "hooks", "install", "claude"]).ok().json();
    assert_eq!(agent(&r, "claude")["action"], "installed");
    assert_eq!(agent(&r, "claude")["state"], "installed");
    assert_eq!(read(&t, CLAUDE), PERSON_INSTALLED);
    // Remove takes out kb's entries and what they alone made: the person's file comes back.
    let r = t.kb(&["--json", "hooks", "remove", "claude"]).ok().json();
    assert_eq!(agent(&r, "claude")["action"], "removed");
    assert_eq!(agent(&r, "claude")["state"], "missing");
    assert_eq!(read(&t, CLAUDE), PERSON);
}

#[test]
fn a_second_install_writes_nothing() {
    let t = TestEnv::new();
    t.write(CLAUDE, PERSON);
    t.kb(&["hooks", "install"]).ok();
    let path = t.root().join(CLAUDE);
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(old).unwrap();
    let entries = t.kb(&["--json", "undo", "--list"]).ok().json();
    let before = t.snapshot();
    let r = t.kb(&["hooks", "install"]).ok();
    assert!(r.stdout.contains("claude: unchanged"), "{r:?}");
    assert_same_tree(&before, &t.snapshot());
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), old);
    assert_eq!(t.kb(&["--json", "undo", "--list"]).ok().json(), entries, "no journal entry for a no-op");
}

#[test]
fn stale_entries_are_replaced_where_they_are_and_repeats_dropped() {
    let t = TestEnv::new();
    let stale = r#"{
  "hooks": {
    "SessionStart": [
      {"matcher": "startup", "hooks": [{"type": "command", "command": "kb hook prompt --agent claude", "timeout": 99}]}
    ],
    "UserPromptSubmit": [
      {"hooks": [{"type": "command", "command": "kb hook prompt --agent claude", "timeout": 5}]},
      {"hooks": [{"type": "command", "command": "/old/bin/kb hook prompt --agent claude", "timeout": 5}]}
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]
  }
}
"#;
    t.write(CLAUDE, stale);
    let r = t.kb(&["--json", "hooks"]).ok().json();
    assert_eq!(agent(&r, "claude")["state"], "stale");
    assert_eq!(agent(&r, "claude")["events"], serde_json::json!(["SessionStart", "UserPromptSubmit"]));
    t.kb(&["hooks", "install", "--check", "claude"]).err();
    let r = t.kb(&["--json", "hooks", "install", "claude"]).ok().json();
    assert_eq!(agent(&r, "claude")["action"], "updated");
    let v: Value = serde_json::from_str(&read(&t, CLAUDE)).unwrap();
    // The stale handler was fixed inside the person's matcher group.
    assert_eq!(
        v["hooks"]["SessionStart"],
        serde_json::json!([{"matcher": "startup", "hooks": [{"type": "command", "command": "kb hook session-start --agent claude", "timeout": 10}]}])
    );
    // One entry per event, never two.
    assert_eq!(v["hooks"]["UserPromptSubmit"].as_array().unwrap().len(), 1);
    assert_eq!(v["hooks"]["Stop"], serde_json::json!([{"hooks": [{"type": "command", "command": "say done"}]}]));
    t.kb(&["hooks", "install", "--check", "claude"]).ok();
}

#[test]
fn remove_leaves_the_persons_entries_and_files() {
    let t = TestEnv::new();
    let cursor = "{\n  \"version\": 1,\n  \"hooks\": {\n    \"stop\": [\n      {\n        \"command\": \"./notify.sh\"\n      }\n    ]\n  }\n}\n";
    t.write(".cursor/hooks.json", cursor);
    t.kb(&["hooks", "install", "cursor", "copilot", "cline"]).ok();
    t.write(".clinerules/hooks/PostToolUse", "#!/bin/sh\necho mine\n");
    let r = t.kb(&["--json", "hooks", "remove"]).ok().json();
    assert_eq!(agent(&r, "cursor")["action"], "removed");
    assert_eq!(agent(&r, "codex")["action"], "absent");
    assert_eq!(read(&t, ".cursor/hooks.json"), cursor);
    // Files kb created and that now hold nothing are gone, with the folders it made.
    assert!(!t.root().join(".github").exists());
    for (event, _) in CLINE {
        assert!(!t.root().join(".clinerules/hooks").join(event).exists(), "{event}");
    }
    assert_eq!(read(&t, ".clinerules/hooks/PostToolUse"), "#!/bin/sh\necho mine\n");
    // A second remove finds nothing.
    let r = t.kb(&["--json", "hooks", "remove", "cursor"]).ok().json();
    assert_eq!(agent(&r, "cursor")["action"], "absent");
}

#[test]
fn a_file_that_is_not_json_is_an_error_with_line_and_column_and_other_agents_still_install() {
    for (name, text, line_col) in [
        ("jsonc", "{\n  // Claude's settings\n  \"model\": \"opus\"\n}\n", "line 2, column 3"),
        ("trailing comma", "{\n  \"model\": \"opus\",\n}\n", "line 3, column 1"),
        ("truncated", "{\n  \"hooks\": {\n", "line 3, column 0"),
    ] {
        let t = TestEnv::new();
        t.write(CLAUDE, text);
        let r = t.kb(&["--json", "hooks", "install", "claude", "codex"]);
        assert_eq!(r.code, 1, "{name}: {r:?}");
        assert!(r.stderr.contains(".claude/settings.json: not valid JSON at "), "{name}: {}", r.stderr);
        if !line_col.ends_with("column 0") {
            assert!(r.stderr.contains(line_col), "{name}: {}", r.stderr);
        }
        assert!(r.stderr.contains("nothing written"), "{name}: {}", r.stderr);
        assert_eq!(read(&t, CLAUDE), text, "{name}");
        let j = r.json();
        assert_eq!(agent(&j, "claude")["action"], "failed");
        assert_eq!(agent(&j, "claude")["state"], "foreign");
        assert_eq!(agent(&j, "codex")["action"], "installed");
        let status = t.kb(&["--json", "hooks"]).ok().json();
        assert_eq!(agent(&status, "claude")["state"], "foreign", "{name}");
        assert!(agent(&status, "claude")["problem"].as_str().unwrap().contains("not valid JSON"), "{name}");
    }
}

#[test]
fn a_file_kb_cannot_write_is_an_error_and_nothing_is_written() {
    let t = TestEnv::new();
    std::fs::create_dir_all(t.root().join(CLAUDE)).unwrap();
    let path = t.write(".gemini/settings.json", "{\"theme\": \"dark\"}\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    t.write(".clinerules/hooks/TaskStart", "#!/bin/sh\nnode my-hook.js\n");
    let r = t.kb(&["--json", "hooks", "install", "claude", "gemini", "cline", "codex"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("claude: .claude/settings.json is a folder, not a file"), "{}", r.stderr);
    assert!(r.stderr.contains("gemini: .gemini/settings.json is read-only: nothing written"), "{}", r.stderr);
    assert!(r.stderr.contains("cline: .clinerules/hooks/TaskStart is not kb's script"), "{}", r.stderr);
    let j = r.json();
    for name in ["claude", "gemini", "cline"] {
        assert_eq!(agent(&j, name)["action"], "failed", "{name}");
    }
    assert_eq!(agent(&j, "codex")["action"], "installed");
    assert_eq!(read(&t, ".gemini/settings.json"), "{\"theme\": \"dark\"}\n");
    assert_eq!(read(&t, ".clinerules/hooks/TaskStart"), "#!/bin/sh\nnode my-hook.js\n");
    assert!(!t.root().join(".clinerules/hooks/PreCompact").exists(), "no script of Cline's written");
    let status = t.kb(&["--json", "hooks"]).ok().json();
    assert_eq!(agent(&status, "cline")["state"], "foreign");
    assert_eq!(agent(&status, "gemini")["state"], "missing");
}

#[test]
fn check_writes_nothing_and_fails_until_installed() {
    let t = TestEnv::new();
    t.write(".co-cli/settings.json", "{\"agents\": [\"cursor\", \"windsurf\", \"codex\"]}\n");
    let before = t.snapshot();
    let r = t.kb(&["--json", "hooks", "install", "--check"]);
    assert_eq!(r.code, 1, "{r:?}");
    let j = r.json();
    let names: Vec<&str> = j["agents"].as_array().unwrap().iter().map(|a| a["agent"].as_str().unwrap()).collect();
    assert_eq!(names, ["codex", "cursor"], "the setting's agents with hooks, in the table's order");
    assert_same_tree(&before, &t.snapshot());
    let r = t.kb(&["hooks", "install"]).ok();
    assert!(r.stdout.contains("Note: Codex runs a new or changed hook only once you trust it"), "{}", r.stdout);
    assert!(!r.stdout.contains("Gemini"), "{}", r.stdout);
    t.kb(&["hooks", "install", "--check"]).ok();
    // Without the setting the default is claude.
    let t = TestEnv::new();
    let r = t.kb(&["--json", "hooks", "install"]).ok().json();
    assert_eq!(r["agents"].as_array().unwrap().len(), 1);
    assert_eq!(agent(&r, "claude")["action"], "installed");
}

#[test]
fn kb_path_is_written_and_kept() {
    let t = TestEnv::new();
    let kb = env!("CARGO_BIN_EXE_kb");
    let r = t.kb(&["--json", "hooks", "install", "codex", "cline", "--kb", kb]);
    let r = r.ok();
    assert!(!r.stderr.contains("warning"), "the path is executable: {}", r.stderr);
    let v: Value = serde_json::from_str(&read(&t, ".codex/hooks.json")).unwrap();
    assert_eq!(v["hooks"]["SessionEnd"][0]["hooks"][0]["command"], format!("{kb} hook session-end --agent codex"));
    assert!(
        read(&t, ".clinerules/hooks/TaskStart").contains(&format!("\nexec {kb} hook session-start --agent cline\n"))
    );
    // A later install and check without --kb keep the path; --check with another path is stale.
    let r = t.kb(&["--json", "hooks", "install", "codex"]).ok().json();
    assert_eq!(agent(&r, "codex")["action"], "unchanged");
    assert_eq!(agent(&r, "codex")["program"], kb);
    t.kb(&["hooks", "install", "--check", "codex", "cline"]).ok();
    t.kb(&["hooks", "install", "--check", "codex", "--kb", "/opt/other/kb"]).err();
    // A path whose program is not kb would not be recognised again: refused.
    let r = t.kb(&["hooks", "install", "--kb", "/usr/bin/kb-nightly"]).usage();
    assert!(r.stderr.contains("must be named kb"), "{}", r.stderr);
}

#[test]
fn warns_when_the_hooks_program_would_not_be_found() {
    let t = TestEnv::new().env("PATH", "/usr/bin:/bin");
    let r = t.kb(&["hooks", "install", "claude", "cursor"]).ok();
    assert!(r.stderr.contains("warning: the hooks of claude, cursor run `kb`, which is not on PATH"), "{}", r.stderr);
    let r = t.kb(&["hooks", "install", "codex", "--kb", "/nowhere/kb"]).ok();
    assert!(r.stderr.contains("run /nowhere/kb, which is not an executable file"), "{}", r.stderr);
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_kb")).parent().unwrap().display().to_string();
    let t = t.env("PATH", &bin);
    let r = t.kb(&["hooks"]).ok();
    assert!(!r.stderr.contains("not on PATH"), "{}", r.stderr);
}

#[test]
fn each_agent_gets_its_own_shape() {
    let t = TestEnv::new();
    let r = t.kb(&["--json", "hooks", "install", "claude", "codex", "copilot", "cursor", "gemini", "cline"]).ok();
    assert!(r.stdout.contains("Gemini CLI fingerprints"), "{}", r.stdout);
    for (name, file, golden) in GOLDEN {
        assert_eq!(read(&t, file), golden, "{name}: {file}");
    }
    for (event, golden) in CLINE {
        let path = t.root().join(".clinerules/hooks").join(event);
        assert_eq!(read(&t, &format!(".clinerules/hooks/{event}")), golden, "{event}");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o755, "{event}");
    }
    let status = t.kb(&["--json", "hooks"]).ok().json();
    for a in status["agents"].as_array().unwrap() {
        assert_eq!(a["state"], "installed", "{a}");
    }
    assert_eq!(agent(&status, "cursor")["events"], serde_json::json!(["sessionStart", "preCompact", "sessionEnd"]));
    // A kb script that lost its mode is stale, and install makes it executable again.
    let start = t.root().join(".clinerules/hooks/TaskStart");
    std::fs::set_permissions(&start, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(agent(&t.kb(&["--json", "hooks"]).ok().json(), "cline")["state"], "stale");
    t.kb(&["hooks", "install", "cline"]).ok();
    assert_eq!(std::fs::metadata(&start).unwrap().permissions().mode() & 0o777, 0o755);
}

#[test]
fn the_flat_shapes_merge_with_a_persons_entries() {
    let t = TestEnv::new();
    let mine = "{\n\t\"version\": 1,\n\t\"hooks\": {\n\t\t\"sessionStart\": [\n\t\t\t{\"type\": \"command\", \"bash\": \"./setup.sh\"}\n\t\t]\n\t}\n}";
    t.write(".github/hooks/kb.json", mine);
    t.kb(&["hooks", "install", "copilot"]).ok();
    let text = read(&t, ".github/hooks/kb.json");
    assert!(text.starts_with("{\n\t\"version\": 1,\n\t\"hooks\": {\n\t\t\"sessionStart\": [\n\t\t\t{\"type\": \"command\", \"bash\": \"./setup.sh\"},\n\t\t\t{\n\t\t\t\t\"type\": \"command\",\n"), "{text}");
    assert!(!text.ends_with('\n'), "the file's own (missing) final newline is kept");
    t.kb(&["hooks", "remove", "copilot"]).ok();
    assert_eq!(read(&t, ".github/hooks/kb.json"), mine);
}

#[test]
fn undo_takes_an_install_back() {
    let t = TestEnv::new();
    t.write(CLAUDE, PERSON);
    let before = t.snapshot();
    t.kb(&["hooks", "install", "claude", "cline", "gemini"]).ok();
    assert_eq!(read(&t, CLAUDE), PERSON_INSTALLED);
    let r = t.kb(&["undo"]).ok();
    assert!(r.stdout.contains("hooks"), "{}", r.stdout);
    assert_eq!(read(&t, CLAUDE), PERSON);
    assert!(!t.root().join(".gemini/settings.json").exists());
    assert!(!t.root().join(".clinerules/hooks/TaskStart").exists());
    let after = t.snapshot();
    let files = |s: &std::collections::BTreeMap<String, Entry>| -> Vec<String> {
        s.iter()
            .filter(|(k, e)| matches!(e, Entry::File { .. }) && !k.starts_with(".co-cli"))
            .map(|(k, _)| k.clone())
            .collect()
    };
    assert_eq!(files(&before), files(&after));
}

#[test]
fn status_lists_every_agent_and_names_are_checked() {
    let t = TestEnv::new();
    let r = t.kb(&["--json", "hooks"]).ok().json();
    let rows: Vec<(String, String, String)> = r["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["agent"].as_str().unwrap().into(),
                a["file"].as_str().unwrap().into(),
                a["state"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want = [
        ("claude", ".claude/settings.json"),
        ("codex", ".codex/hooks.json"),
        ("copilot", ".github/hooks/kb.json"),
        ("cursor", ".cursor/hooks.json"),
        ("gemini", ".gemini/settings.json"),
        ("cline", ".clinerules/hooks"),
    ];
    assert_eq!(rows, want.map(|(a, f)| (a.to_string(), f.to_string(), "missing".to_string())));
    assert_eq!(agent(&r, "claude")["path"], t.root().join(CLAUDE).display().to_string());
    let text = t.kb(&["hooks"]).ok().stdout;
    assert_eq!(text.lines().count(), 6, "{text}");
    for (name, why) in [("windsurf", "windsurf has no hooks"), ("kiro", "kiro has no hooks"), ("vim", "unknown agent")]
    {
        for sub in ["install", "remove"] {
            let r = t.kb(&["hooks", sub, name]).usage();
            assert!(r.stderr.contains(why), "{name}: {}", r.stderr);
            assert!(r.stderr.contains("claude, codex, copilot, cursor, gemini, cline"), "{}", r.stderr);
        }
    }
    assert!(!t.root().join(".claude").exists());
}
