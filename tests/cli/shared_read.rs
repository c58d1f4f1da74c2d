//! What flows from a shared source into a repository (docs/shared.md): its context and active
//! decisions into the block, its memories, records and decisions into recall (namespaced ids),
//! `kb show NAME:ID`, writes refused, shared items unverified. The source here is a plain path,
//! read in place, so no git runs.

use crate::common::TestEnv;
use serde_json::Value;

/// A project whose setting `shared` names the kb repository `org` beside it, with a context
/// file, an active decision, a memory and a record.
fn with_org() -> (TestEnv, String) {
    let t = TestEnv::pinned();
    let org = t.root().parent().unwrap().join("org");
    let org = org.to_str().unwrap().to_string();
    std::fs::create_dir_all(format!("{org}/.git")).unwrap();
    let in_org = |args: &[&str]| {
        let mut all = vec!["--root", org.as_str()];
        all.extend_from_slice(args);
        t.kb(&all).ok();
    };
    in_org(&["init"]);
    std::fs::write(
        format!("{org}/.co-cli/knowledge/context.md"),
        "---\nversion: 1\nupdated: 2026-12-01T00:00:00Z\n---\n# Org\n\nEvery service logs JSON lines to stdout.\n",
    )
    .unwrap();
    in_org(&["decision", "add", "Every service exposes a /healthz endpoint", "--type", "architectural"]);
    in_org(&["save", "Use the org retry helper for outbound HTTP calls"]);
    in_org(&[
        "save",
        "--store",
        "copilot",
        "--subject",
        "tracing",
        "--citation",
        "lib/trace.rs:1",
        "--reason",
        "one format",
        "Spans carry the request id",
    ]);
    t.kb(&["init"]).ok();
    t.kb(&["config", "set", "shared", r#"[{"name":"org","url":"../org"}]"#]).ok();
    (t, org)
}

#[test]
fn the_shared_context_and_decisions_reach_the_block_after_the_projects_own() {
    let (t, _org) = with_org();
    t.kb(&["decision", "add", "The public API stays under /v2", "--type", "architectural"]).ok();
    t.write(
        ".co-cli/knowledge/context.md",
        "---\nversion: 1\nupdated: 2026-12-01T00:00:00Z\n---\n# Project\n\nThe API is in src/api.\n",
    );
    let out = t.kb(&["context"]).ok().stdout;
    let project = out.find("- The public API stays under /v2").expect(&out);
    let shared = out.find("- (org) Every service exposes a /healthz endpoint").expect(&out);
    assert!(project < shared, "the project's decisions first: {out}");
    let org_context = out.find("### Shared Context (org)\n\n# Org\n\nEvery service logs JSON").expect(&out);
    let own_context = out.find("### Project Context").expect(&out);
    assert!(org_context < own_context, "between the global and the project context: {out}");
    let j = t.kb(&["--json", "context"]).ok().json();
    let names: Vec<&str> = j["layers"].as_array().unwrap().iter().filter_map(|l| l["name"].as_str()).collect();
    assert_eq!(&names[..4], ["decisions", "global", "shared_context", "project"]);
    let titles: Vec<&str> = j["sections"].as_array().unwrap().iter().filter_map(|s| s["title"].as_str()).collect();
    assert_eq!(titles, ["Shared Context (org)", "Project Context"], "{j:#}");
    let org_section = &j["sections"][0];
    assert_eq!(org_section["budget"], 3072);
    assert_eq!(org_section["over_budget"], false);
    assert_eq!(org_section["cut_bytes"], 0);
    assert!(org_section["path"].as_str().unwrap().ends_with("org/.co-cli/knowledge/context.md"), "{j:#}");
    // One over its budget says so, in its section as in the warning.
    let long =
        format!("---\nversion: 1\nupdated: 2026-12-01T00:00:00Z\n---\n{}\n", "Logs are JSON lines. ".repeat(200));
    std::fs::write(t.root().parent().unwrap().join("org/.co-cli/knowledge/context.md"), long).unwrap();
    let run = t.kb(&["--json", "context"]).ok();
    assert!(run.stderr.contains("over its 3072-byte budget"), "{run:?}");
    let j = run.json();
    assert_eq!(j["sections"][0]["over_budget"], true, "{j:#}");
    assert!(j["sections"][0]["bytes"].as_u64().unwrap() > 3072, "{j:#}");
    // Without the setting, nothing of the source is read, and the layers are the usual ten.
    t.kb(&["config", "set", "shared", "[]"]).ok();
    let out = t.kb(&["context"]).ok().stdout;
    assert!(!out.contains("org") && !out.contains("healthz"), "{out}");
    assert_eq!(t.kb(&["--json", "context"]).ok().json()["layers"].as_array().unwrap().len(), 10);
}

#[test]
fn shared_items_answer_recall_with_namespaced_ids_and_the_project_wins() {
    let (t, _org) = with_org();
    t.kb(&["save", "Outbound HTTP calls retry with backoff in src/net.rs"]).ok();
    let j = t.kb(&["--json", "recall", "outbound", "http", "calls"]).ok().json();
    let ids: Vec<Value> = j["results"].as_array().unwrap().iter().map(|r| r["id"].clone()).collect();
    assert!(ids.contains(&Value::from(1)) && ids.contains(&Value::from("org:1")), "{j}");
    let shared = j["results"].as_array().unwrap().iter().find(|r| r["id"] == "org:1").unwrap();
    assert_eq!((shared["shared"].as_str(), shared["store"].as_str()), (Some("org"), Some("md")));
    let out = t.kb(&["recall", "healthz"]).ok().stdout;
    assert!(out.contains("**Decision org:decision:1**"), "{out}");
    let j = t.kb(&["--json", "recall", "request", "id", "spans"]).ok().json();
    let id = j["results"][0]["id"].as_str().unwrap();
    assert!(id.starts_with("org:mem-") && id.len() > 8, "{j}");
    assert_eq!(j["results"][0]["store"], "copilot");
    // An item the project restates is shown once, as the project's.
    t.kb(&["save", "Use the org retry helper for outbound HTTP calls", "--type", "pattern"]).ok();
    let j = t.kb(&["--json", "recall", "org", "retry", "helper"]).ok().json();
    let texts: Vec<&str> = j["results"].as_array().unwrap().iter().filter_map(|r| r["content"].as_str()).collect();
    assert_eq!(texts.iter().filter(|c| c.contains("org retry helper")).count(), 1, "{j}");
    assert!(j["results"].as_array().unwrap().iter().all(|r| r["id"] != "org:1"), "the project's copy wins: {j}");
    // `--exact` is co-cli's rule over this repository's stores: unchanged.
    let exact = t.kb(&["--json", "recall", "--exact", "healthz"]).ok().json();
    assert_eq!(exact["count"], 0, "{exact}");
}

#[test]
fn show_reads_a_shared_item_and_writes_to_it_are_refused() {
    let (t, _org) = with_org();
    let out = t.kb(&["show", "org:1"]).ok().stdout;
    assert!(out.starts_with("Memory org:1 (") && out.contains("Use the org retry helper"), "{out}");
    let j = t.kb(&["--json", "show", "org:decision:1"]).ok().json();
    assert_eq!((j["id"].as_str(), j["shared"].as_str()), (Some("org:decision:1"), Some("org")));
    assert_eq!(j["status"], "active");
    t.kb(&["decision", "add", "Releases are cut from main", "--type", "process"]).ok();
    assert!(t.kb(&["show", "decision:1"]).ok().stdout.starts_with("Decision 1 ("));
    for args in [
        vec!["forget", "org:1"],
        vec!["protect", "org:1"],
        vec!["update", "org:1", "new text"],
        vec!["decision", "supersede", "org:1", "Services expose /health"],
    ] {
        let run = t.kb(&args);
        assert_ne!(run.code, 0, "{args:?}: {run:?}");
        assert!(
            run.stderr.contains(
                "org:1 lives in the shared source org: change it there, or propose it with kb shared propose"
            ),
            "{args:?}: {run:?}"
        );
    }
    // Nothing in the source changed.
    assert!(t.kb(&["show", "org:1"]).ok().stdout.contains("Use the org retry helper"));
    // Checked at use, a shared item is unverified, never stale.
    let j = t.kb(&["--json", "recall", "--verify", "healthz"]).ok().json();
    assert_eq!(j["results"][0]["verified"], "unverified", "{j}");
}

#[test]
fn a_missing_source_is_left_out_and_its_ids_say_so() {
    let (t, org) = with_org();
    std::fs::remove_dir_all(&org).unwrap();
    let out = t.kb(&["context"]).ok().stdout;
    assert!(!out.contains("Shared Context"), "{out}");
    t.kb(&["recall", "healthz"]).ok();
    let run = t.kb(&["show", "org:1"]).err();
    assert!(
        run.stderr.contains("shared source org is read in place from") && run.stderr.contains("not a folder"),
        "{run:?}"
    );
}

#[test]
fn check_checks_the_shared_copies_and_names_the_source() {
    let (t, org) = with_org();
    assert!(t.kb(&["check"]).ok().stdout.contains("no problems"));
    std::fs::write(format!("{org}/.co-cli/knowledge/memories/009-broken.md"), "---\nid: [oops\n---\nbody\n").unwrap();
    let run = t.kb(&["check"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.contains("shared source org: ") && run.stdout.contains("009-broken.md"), "{run:?}");
    let j = t.kb(&["--json", "check"]).json();
    let problem = j["problems"].as_array().unwrap().iter().find(|p| p["shared"] == "org").expect("a shared problem");
    assert!(problem["path"].as_str().unwrap().ends_with("009-broken.md"), "{j}");
    assert!(j["problems"].as_array().unwrap().iter().all(|p| p["shared"] == "org"), "the project has none: {j}");
}

#[test]
fn store_shared_or_a_source_name_narrows_recall_to_the_shared_sources() {
    let (t, _org) = with_org();
    t.kb(&["save", "Outbound HTTP calls retry with backoff in src/net.rs"]).ok();
    let ids = |args: &[&str]| -> Vec<Value> {
        let mut all = vec!["--json", "recall", "outbound", "http", "calls", "healthz", "spans"];
        all.extend_from_slice(args);
        t.kb(&all).ok().json()["results"].as_array().unwrap().iter().map(|r| r["id"].clone()).collect()
    };
    let everything = ids(&[]);
    assert!(everything.contains(&Value::from(1)) && everything.contains(&Value::from("org:1")), "{everything:?}");
    for narrowed in [ids(&["--store", "shared"]), ids(&["--store", "org"])] {
        assert!(!narrowed.is_empty(), "{narrowed:?}");
        assert!(narrowed.iter().all(|id| id.as_str().is_some_and(|s| s.starts_with("org:"))), "{narrowed:?}");
    }
    // With a kind, only that kind of the source.
    let md = ids(&["--store", "org", "--store", "md"]);
    assert_eq!(md, [Value::from("org:1")]);
    let decisions = ids(&["--store", "shared", "--store", "decision"]);
    assert_eq!(decisions, [Value::from("org:decision:1")]);
    // A name no source has is a usage error naming the sources; so is --exact with one.
    let run = t.kb(&["recall", "x", "--store", "team"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--store team") && run.stderr.contains("org"), "{run:?}");
    assert_eq!(t.kb(&["recall", "x", "--store", "shared", "--exact"]).code, 2);
    assert_eq!(t.kb(&["recall", "x", "--store", "Not A Name"]).code, 2);
}

#[test]
fn audit_lists_shared_items_as_unverified_and_never_stale() {
    let (t, org) = with_org();
    // A reference that does not hold in this repository: never stale for the source's item.
    std::fs::write(
        format!("{org}/.co-cli/knowledge/memories/002-gone.md"),
        "---\nid: 2\ncreated: 2026-12-01T00:00:00Z\n---\nThe parser lives in src/nowhere.rs\n",
    )
    .unwrap();
    t.kb(&["save", "The parser lives in src/nowhere.rs"]).ok();
    let j = t.kb(&["--json", "audit"]).json();
    let items = j["items"].as_array().unwrap();
    let shared: Vec<&Value> = items.iter().filter(|i| i["shared"] == "org").collect();
    let ids: Vec<&str> = shared.iter().filter_map(|i| i["id"].as_str()).collect();
    assert!(ids.contains(&"org:1") && ids.contains(&"org:2") && ids.contains(&"org:decision:1"), "{j}");
    assert!(ids.iter().any(|id| id.starts_with("org:mem-")), "{j}");
    assert!(shared.iter().all(|i| i["verdict"] == "unverified" && i["problems"] == Value::Array(vec![])), "{j}");
    assert_eq!(j["counts"]["stale"], 1, "only the project's own memory is stale: {j}");
    assert!(j["counts"]["unverified"].as_u64().unwrap() >= 4, "{j}");
    let own = items.iter().find(|i| i["id"] == 1).unwrap();
    assert_eq!((own["verdict"].as_str(), own.get("shared")), (Some("stale"), None), "{j}");
    // Named, a shared item is audited alone; --store narrows the source's items too.
    let one = t.kb(&["--json", "audit", "org:2"]).ok().json();
    assert_eq!(one["items"].as_array().unwrap().len(), 1, "{one}");
    assert_eq!(
        (one["items"][0]["id"].as_str(), one["items"][0]["verdict"].as_str()),
        (Some("org:2"), Some("unverified"))
    );
    let md = t.kb(&["--json", "audit", "--store", "decision"]).ok().json();
    assert!(md["items"].as_array().unwrap().iter().all(|i| i["store"] == "decision"), "{md}");
    assert!(t.kb(&["audit", "org:99"]).err().stderr.contains("99"));
}

#[test]
fn a_shared_memory_edited_in_place_after_its_caches_trusted_the_folder_is_shown_as_it_now_reads() {
    let (t, org) = with_org();
    // Past the racy margin, the source's caches trust its memories folder, and recall reads
    // them without a stat of each file.
    std::thread::sleep(std::time::Duration::from_millis(2300));
    let t = t.env("KB_DEBUG_STATS", "1");
    for _ in 0..2 {
        let j = t.kb(&["--json", "recall", "org", "retry", "helper"]).ok().json();
        assert_eq!(j["results"][0]["id"], "org:1", "{j}");
    }
    let trusted = t.kb(&["recall", "org", "retry", "helper"]).ok().stderr;
    assert!(trusted.contains("shared org: the recall index alone, 1 memory files read"), "{trusted}");
    // An edit in place leaves the folder's stamp as it was.
    let memories = std::path::Path::new(&org).join(".co-cli/knowledge/memories");
    let file = std::fs::read_dir(&memories).unwrap().map(|e| e.unwrap().path()).find(|p| p.is_file()).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("outbound HTTP calls", "outbound HTTP calls, with jitter")).unwrap();
    let j = t.kb(&["--json", "recall", "org", "retry", "helper"]).ok().json();
    let content = j["results"][0]["content"].as_str().unwrap_or_default();
    assert!(content.contains("with jitter"), "the memory as it now reads: {j}");
}

#[test]
fn a_shown_shared_memory_that_grew_past_the_limit_or_now_links_out_of_its_source_is_not_shown() {
    let (t, org) = with_org();
    std::thread::sleep(std::time::Duration::from_millis(2300));
    for _ in 0..2 {
        t.kb(&["--json", "recall", "org", "retry", "helper"]).ok();
    }
    let memories = std::path::Path::new(&org).join(".co-cli/knowledge/memories");
    let file = std::fs::read_dir(&memories).unwrap().map(|e| e.unwrap().path()).find(|p| p.is_file()).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    // Grown in place past the limit of a memory file: the folder's stamp is unchanged.
    let padding = " retry".repeat(200_000);
    std::fs::write(&file, text.replace("outbound HTTP calls", &format!("outbound HTTP calls{padding}"))).unwrap();
    let out = t.kb(&["--json", "recall", "org", "retry", "helper"]).ok();
    assert!(!out.stdout.contains("retry retry retry"), "{}", out.stdout);
    assert!(out.stderr.contains("shared source org: file is") && out.stderr.contains("limited to"), "{}", out.stderr);
    // Now a symlink to a file outside the source.
    let secret = t.root().parent().unwrap().join("secret.md");
    std::fs::write(&secret, text.replace("outbound HTTP calls", "the secret token")).unwrap();
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(&secret, &file).unwrap();
    let out = t.kb(&["--json", "recall", "org", "retry", "helper"]).ok();
    assert!(!out.stdout.contains("secret token"), "{}", out.stdout);
    assert!(out.stderr.contains("shared source org: symlink points outside"), "{}", out.stderr);
}

#[test]
fn show_names_the_source_in_the_warnings_of_a_shared_item() {
    let (t, org) = with_org();
    std::fs::write(format!("{org}/.co-cli/knowledge/memories/009-bad.md"), "---\nid: [\n---\nbroken\n").unwrap();
    let run = t.kb(&["show", "org:1"]).ok();
    assert!(run.stdout.contains("Use the org retry helper"), "{run:?}");
    assert!(run.stderr.contains("shared source org: ") && run.stderr.contains("009-bad.md"), "{run:?}");
}
