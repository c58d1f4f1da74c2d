//! Provenance (docs/formats.md, Provenance): `created_by` when kb creates a memory, a record
//! or a decision, `updated_by` when it rewrites one's content. On the command line the author is
//! `$KB_AUTHOR`, else git's `user.email`, else `$USER`; over MCP `agent:` and the client's name
//! (`mcp::with_mcp::an_agents_save_never_rewrites_what_a_person_wrote`).

use crate::common::*;
use serde_json::{Value, json};

const JSONL: &str = ".github/copilot-memories.jsonl";

#[test]
fn the_author_is_kb_author_else_git_else_user() {
    let t = TestEnv::pinned().env("KB_AUTHOR", "ana@example.com").env("USER", "ana");
    t.write(".git/config", "[user]\n\temail = git@example.com\n");
    t.kb(&["save", "Deploys go out on Tuesdays"]).ok();
    assert!(t.read(&t.file_of(1)).contains("\ncreated_by: ana@example.com\n"), "{}", t.read(&t.file_of(1)));

    let t = TestEnv::pinned().env("USER", "ana");
    t.write(".git/config", "[core]\n\tbare = false\n[user]\n\tname = Ana\n\temail = git@example.com\n");
    t.kb(&["save", "Deploys go out on Tuesdays"]).ok();
    assert!(t.read(&t.file_of(1)).contains("\ncreated_by: git@example.com\n"));

    // git's global config, from HOME.
    let t = TestEnv::pinned().env("USER", "ana");
    t.write("../home/.gitconfig", "[user]\n\temail = home@example.com\n");
    t.kb(&["save", "Deploys go out on Tuesdays"]).ok();
    assert!(t.read(&t.file_of(1)).contains("\ncreated_by: home@example.com\n"), "{}", t.read(&t.file_of(1)));

    let t = TestEnv::pinned().env("USER", "ana");
    t.kb(&["save", "Deploys go out on Tuesdays"]).ok();
    assert!(t.read(&t.file_of(1)).contains("\ncreated_by: ana\n"));

    // Nobody known: no key at all (co-cli's own layout).
    let t = TestEnv::pinned();
    t.kb(&["save", "Deploys go out on Tuesdays"]).ok();
    assert!(!t.read(&t.file_of(1)).contains("created_by"));
}

#[test]
fn a_consolidation_writes_updated_by_and_keeps_created_by() {
    let t = TestEnv::pinned().env("KB_AUTHOR", "ana@example.com");
    t.kb(&["save", "Deploys go out on Tuesdays"]).ok();
    let mut as_bo = t.command(&["--json", "save", "Deploys go out on Tuesdays!"]);
    as_bo.env("KB_AUTHOR", "bo@example.com");
    let v = run_command(as_bo, None).ok().json();
    assert_eq!(v["action"], "consolidated");
    let text = t.read(&t.file_of(1));
    assert!(
        text.contains("\ncreated_by: ana@example.com\n") && text.contains("\nupdated_by: bo@example.com\n"),
        "{text}"
    );
    // Co-cli's reader still loads it: the JSON of kb show is unchanged but for the content.
    assert_eq!(t.show(1)["content"], "Deploys go out on Tuesdays!");
}

#[test]
fn records_and_decisions_carry_their_author() {
    let t = TestEnv::pinned().env("KB_AUTHOR", "ana@example.com");
    let save = ["save", "--store", "copilot", "--subject", "build", "--reason", "seen"];
    t.kb(&[&save[..], &["Run make before pushing"]].concat()).ok();
    let line = t.read(&t.root().join(JSONL));
    assert!(line.contains("\"created_by\":\"ana@example.com\""), "{line}");
    t.kb(&[&save[..], &["Run make before pushing!"]].concat()).ok();
    let line = t.read(&t.root().join(JSONL));
    assert!(line.contains("\"updated_by\":\"ana@example.com\"") && line.lines().count() == 1, "{line}");

    t.kb(&["decision", "add", "Use PostgreSQL for every service", "--type", "architectural"]).ok();
    t.kb(&["decision", "add", "Ship on Tuesdays", "--type", "process"]).ok();
    t.kb(&["decision", "archive", "2"]).ok();
    let dir = t.root().join(".co-cli/knowledge/decisions");
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    let first = t.read(&names[0]);
    assert!(first.contains("\ncreated_by: ana@example.com\n") && !first.contains("updated_by"), "{first}");
    let second = t.read(&names[1]);
    assert!(second.contains("\nupdated_by: ana@example.com\n"), "{second}");
}

#[test]
fn a_copilot_record_of_another_fact_is_saved_beside_it() {
    let t = TestEnv::pinned();
    let save = ["--json", "save", "--store", "copilot", "--subject", "ports", "--reason", "seen"];
    t.kb(&[&save[..], &["The api service listens on port 8080"]].concat()).ok();
    let v = t.kb(&[&save[..], &["The api service listens on port 8081"]].concat()).ok().json();
    assert_eq!(v["action"], "saved", "{v}");
    assert_eq!(v["similar_to"]["why"], "different facts");
    assert_eq!(v["similar_to"]["only_in_existing"], serde_json::json!(["8080"]));
    let run = t
        .kb(&[
            "save",
            "--store",
            "copilot",
            "--subject",
            "ports",
            "--reason",
            "seen",
            "--dry-run",
            "The api service listens on port 8082",
        ])
        .ok();
    let similar = run.stdout.lines().find(|l| l.starts_with("Similar: ")).unwrap_or_default().to_string();
    assert!(similar.contains("says 8081 where you said 8082") && similar.contains("kb forget"), "{}", run.stdout);
    assert_eq!(t.read(&t.root().join(JSONL)).lines().count(), 2);
}

/// The read side (docs/formats.md, Provenance): `list`, `recall` and `show` JSON carry
/// `created_by` and `updated_by` (null when absent) for memories, records and decisions; `show`
/// prints them; `kb list --by PREFIX` keeps what an author prefix wrote, records included. The
/// authors here come from `$KB_AUTHOR`, git's `user.email` and `$USER`; an agent's from MCP
/// (`mcp::with_mcp::audit_tool_and_verified_results`).
#[test]
fn list_recall_and_show_carry_the_authors_and_list_filters_by_them() {
    let t = TestEnv::pinned();
    t.write(".git/config", "[user]\n\temail = git@example.com\n");
    let as_author = |author: Option<(&str, &str)>, args: &[&str]| {
        let mut cmd = t.command(args);
        if let Some((k, v)) = author {
            cmd.env(k, v);
        }
        run_command(cmd, None).ok()
    };
    as_author(Some(("KB_AUTHOR", "ana@example.com")), &["save", "Deploys go out on Tuesdays"]);
    as_author(None, &["save", "The api service is written in Rust"]);
    std::fs::remove_file(t.root().join(".git/config")).unwrap();
    as_author(Some(("USER", "bo")), &["save", "Releases are tagged from main only"]);
    t.memory(4, "A hand-written memory about the release train", &days_ago(1.0), &[]);
    // A later rewrite by another author: updated_by.
    as_author(Some(("KB_AUTHOR", "cy@example.com")), &["save", "Deploys go out on Tuesdays!"]);
    as_author(
        Some(("KB_AUTHOR", "agent:copilot")),
        &["save", "--store", "copilot", "--subject", "build", "--reason", "seen", "Run make before pushing"],
    );
    as_author(Some(("KB_AUTHOR", "ana@example.com")), &["decision", "add", "Use PostgreSQL", "--type", "technical"]);

    let list = t.list_json();
    let authors: Vec<(Value, Value)> = list["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["created_by"].clone(), m["updated_by"].clone()))
        .collect();
    assert_eq!(
        authors,
        [
            (json!("ana@example.com"), json!("cy@example.com")),
            (json!("git@example.com"), Value::Null),
            (json!("bo"), Value::Null),
            (Value::Null, Value::Null),
            (json!("agent:copilot"), Value::Null),
        ]
    );
    let by = |prefix: &str| -> Vec<Value> {
        let v = t.kb(&["--json", "list", "--by", prefix]).ok().json();
        v["memories"].as_array().unwrap().iter().map(|m| m["id"].clone()).collect()
    };
    assert_eq!(by("ana@"), [json!(1)]);
    assert_eq!(by("agent:"), [t.list_json()["memories"][4]["id"].clone()], "records too");
    assert_eq!(by("nobody"), Vec::<Value>::new());
    let text = t.kb(&["list", "--by", "agent:"]).ok().stdout;
    assert!(text.starts_with("No memories with created by agent:* in "), "{text}");
    assert!(text.contains("Copilot memories: 1\n") && text.contains("Run make before pushing"), "{text}");

    let show = t.show(1);
    assert_eq!(
        (show["created_by"].as_str(), show["updated_by"].as_str()),
        (Some("ana@example.com"), Some("cy@example.com"))
    );
    assert_eq!(t.show(4)["created_by"], Value::Null, "hand-written: a person's, no key");
    let text = t.kb(&["show", "1"]).ok().stdout;
    assert!(text.contains("\nCreated by: ana@example.com\nUpdated by: cy@example.com\n"), "{text}");
    assert!(!t.kb(&["show", "4"]).ok().stdout.contains("Created by"));

    let recall = t.kb(&["--json", "recall", "PostgreSQL"]).ok().json();
    assert_eq!(
        (recall["results"][0]["store"].as_str(), recall["results"][0]["created_by"].as_str()),
        (Some("decision"), Some("ana@example.com"))
    );
    let recall = t.kb(&["--json", "recall", "make"]).ok().json();
    assert_eq!(recall["results"][0]["created_by"], "agent:copilot");
    let text = t.kb(&["decision", "show", "1"]).ok().stdout;
    assert!(text.contains("\nCreated by: ana@example.com\n"), "{text}");
}
