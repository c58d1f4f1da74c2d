//! Ranked `kb recall` (docs/behaviour.md, Recall): BM25 with field weights over memories, Copilot
//! records, decisions and sessions; stems, splits and the substring fallback; the order of ties;
//! `--store`; the recall index as derived state. co-cli's rule (`--exact`) is in `read.rs`.

use crate::common::*;
use serde_json::Value;

fn recall(t: &TestEnv, args: &[&str]) -> Value {
    let mut all = vec!["--json", "recall"];
    all.extend_from_slice(args);
    t.kb(&all).ok().json()
}

/// The (store, id) of each result, ids as text.
fn hits(v: &Value) -> Vec<(String, String)> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let id = match &r["id"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (r["store"].as_str().unwrap().to_string(), id)
        })
        .collect()
}

fn md(id: u64) -> (String, String) {
    ("md".to_string(), id.to_string())
}

/// A repository of every kind of knowledge.
fn seeded() -> TestEnv {
    let t = TestEnv::pinned();
    t.memory(1, "Run `cargo nextest run` before pushing; CI runs the same", &days_ago(30.0), &["testing"]);
    t.memory(2, "The api service listens on port 8080", &days_ago(20.0), &[]);
    t.memory(3, "Deploys go out on Tuesdays from the release branch", &days_ago(10.0), &["deploy"]);
    t.memory(4, "Handlers return an ApiError, never a bare anyhow error", &days_ago(5.0), &["errors"]);
    t.write(
        ".github/copilot-memories.jsonl",
        "{\"id\":\"mem-1\",\"subject\":\"fixtures\",\"fact\":\"Sensor fixtures live in tests/fixtures/buoys.json\",\"citations\":[\"tests/common/mod.rs:12\"],\"reason\":\"every ingest test loads them\",\"created\":\"2026-11-01T10:00:00+00:00\"}\n",
    );
    t.write(
        ".co-cli/knowledge/decisions/001-paginate-with-cursors.md",
        "---\ncreated: '2026-10-01T10:00:00+00:00'\nid: 1\nstatus: active\ntags:\n- api\ntype: architectural\n---\n\nList endpoints paginate with opaque cursors, never with page numbers.\n",
    );
    t.write(
        ".co-cli/knowledge/decisions/002-old-offsets.md",
        "---\ncreated: '2026-09-01T10:00:00+00:00'\nid: 2\nstatus: superseded\nsuperseded_by: 1\ntags: []\ntype: architectural\n---\n\nList endpoints paginate with offsets.\n",
    );
    t.write(
        ".co-cli/knowledge/session.md",
        "---\nfocus: Migrate the ingest workers to the bounded channel\nstarted: '2026-11-21T09:00:00+00:00'\n---\n\nHalf the workers are done; the backfill job is next.\n",
    );
    t
}

#[test]
fn a_question_in_plain_words_finds_the_memory_first() {
    let t = seeded();
    let v = recall(&t, &["how", "do", "we", "run", "the", "tests"]);
    assert_eq!(hits(&v)[0], md(1), "{v}");
    // One argument or several: the same answer.
    assert_eq!(recall(&t, &["how do we run the tests"])["results"], v["results"]);
    assert_eq!(v["query"], "how do we run the tests");
    let score = v["results"][0]["score"].as_f64().unwrap();
    assert!(score > 0.0 && v["total"].as_u64().unwrap() >= v["count"].as_u64().unwrap(), "{v}");
}

#[test]
fn decisions_sessions_and_records_are_searched_and_store_narrows() {
    let t = seeded();
    let v = recall(&t, &["what did we decide about pagination"]);
    assert_eq!(hits(&v)[0], ("decision".to_string(), "1".to_string()), "{v}");
    assert!(!hits(&v).contains(&("decision".to_string(), "2".to_string())), "a superseded decision is not searched");
    assert_eq!(v["results"][0]["status"], "active");
    let v = recall(&t, &["ingest workers channel"]);
    assert_eq!(hits(&v)[0], ("session".to_string(), "session".to_string()), "{v}");
    let v = recall(&t, &["where are the sensor fixtures"]);
    assert_eq!(hits(&v)[0], ("copilot".to_string(), "mem-1".to_string()), "{v}");
    // --store narrows, and may be given more than once.
    let v = recall(&t, &["--store", "md", "pagination fixtures tests"]);
    assert!(hits(&v).iter().all(|(s, _)| s == "md"), "{v}");
    let v = recall(&t, &["--store", "decision", "--store", "session", "pagination ingest"]);
    let stores: Vec<String> = hits(&v).into_iter().map(|(s, _)| s).collect();
    assert_eq!(stores, ["decision", "session"], "{v}");
    t.kb(&["recall", "--store", "wiki", "x"]).usage();
}

#[test]
fn stems_splits_and_the_substring_fallback() {
    let t = seeded();
    assert_eq!(hits(&recall(&t, &["deploying"]))[0], md(3), "deploying and Deploys share a stem");
    assert_eq!(hits(&recall(&t, &["api error"]))[0], md(4), "ApiError is found by its parts");
    assert_eq!(hits(&recall(&t, &["apierror"]))[0], md(4), "and whole");
    // "test" matches by stem (memory 1 says "tests"? no: "nextest"): by the fallback.
    let t2 = TestEnv::pinned();
    t2.memory(1, "CI runs nextest", &days_ago(1.0), &[]);
    t2.memory(2, "Something else", &days_ago(1.0), &[]);
    let v = recall(&t2, &["test"]);
    assert_eq!(hits(&v), [md(1)], "co-cli's rule: test finds nextest");
    assert_eq!(recall(&t2, &["te"])["count"], 0, "two characters never match inside a word");
}

#[test]
fn tags_weigh_more_than_text() {
    let t = TestEnv::pinned();
    t.memory(1, "The lantern is lit", &days_ago(2.0), &[]);
    t.memory(2, "The lamp is lit", &days_ago(3.0), &["lantern"]);
    assert_eq!(hits(&recall(&t, &["lantern"])), [md(2), md(1)]);
}

#[test]
fn equal_scores_go_to_the_hotter_then_the_newer_then_the_higher_id() {
    let t = TestEnv::pinned();
    let at = days_ago(1.0);
    for id in [3, 1, 2] {
        t.memory(id, "same words here", &at, &[]);
    }
    t.memory(4, "same words here", &days_ago(2.0), &[]);
    assert_eq!(hits(&recall(&t, &["words"])), [md(3), md(2), md(1), md(4)]);
    // Reading memory 4 twice makes it the hottest.
    t.kb(&["show", "4"]).ok();
    t.kb(&["show", "4"]).ok();
    assert_eq!(hits(&recall(&t, &["words"]))[0], md(4));
}

#[test]
fn the_output_says_how_many_matched_and_an_empty_query_matches_nothing() {
    let t = seeded();
    let v = recall(&t, &["-n", "1", "the"]);
    assert_eq!(v["count"], 1);
    assert!(v["total"].as_u64().unwrap() > 1, "{v}");
    let run = t.kb(&["recall", "-n", "1", "the"]).ok();
    let first = run.stdout.lines().next().unwrap();
    assert!(first.starts_with("Found ") && first.ends_with("matching 'the' (showing 1):"), "{first}");
    let v = recall(&t, &[""]);
    assert_eq!((v["count"].as_u64(), v["total"].as_u64()), (Some(0), Some(0)));
    assert!(recall(&t, &["--exact", ""])["count"].as_u64().unwrap() >= 4, "--exact: empty matches all");
    assert_eq!(recall(&t, &["zzzz"])["count"], 0);
}

#[test]
fn exact_keeps_every_word_newest_first_memories_and_records_only() {
    let t = seeded();
    let v = recall(&t, &["--exact", "paginate"]);
    assert_eq!(v["count"], 0, "decisions are not in --exact: {v}");
    let v = recall(&t, &["--exact", "api", "8080"]);
    assert_eq!(hits(&v), [md(2)]);
    assert!(v["results"][0].get("score").is_none());
}

#[test]
fn the_index_is_derived_state() {
    let t = seeded();
    let before = recall(&t, &["how do we run the tests"]);
    let index = t.root().join(".co-cli/cache/recall.idx");
    assert!(index.is_file());
    // Corrupt, then removed: the same answer.
    let mut bytes = std::fs::read(&index).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&index, &bytes).unwrap();
    assert_eq!(recall(&t, &["how do we run the tests"]), before);
    std::fs::remove_file(&index).unwrap();
    assert_eq!(recall(&t, &["how do we run the tests"]), before);
    // An edit by hand is seen at once.
    let first = t.file_of(2);
    let text = t.read(&first).replace("listens on port 8080", "listens on port 9090 for pagination");
    std::fs::write(&first, text).unwrap();
    assert!(hits(&recall(&t, &["pagination"])).contains(&md(2)));
    assert_eq!(recall(&t, &["8080"])["count"], 0);
}

#[test]
fn text_output_names_each_kind() {
    let t = seeded();
    let out = t.kb(&["recall", "-n", "10", "pagination ingest fixtures"]).ok().stdout;
    assert!(out.contains("**Decision 1** (architectural, active, created 2026-10-01)"), "{out}");
    assert!(out.contains("**Open session** (started 2026-11-21)\nFocus: Migrate"), "{out}");
    assert!(out.contains("**Copilot memory mem-1**"), "{out}");
}

#[test]
fn stop_words_match_nothing_so_the_total_counts_only_real_matches() {
    let t = seeded();
    let v = recall(&t, &["how do I run the tests"]);
    // `run` finds memory 1, `tests` the record (its citations); `the`, `how`, `do`, `I` nothing.
    assert_eq!(v["total"], 2, "{v}");
    assert_eq!(hits(&v)[0], md(1), "{v}");
    assert!(!hits(&v).contains(&md(2)), "memory 2 holds only `The`: {v}");
    let run = t.kb(&["recall", "how", "do", "I", "run", "the", "tests"]).ok();
    assert!(run.stdout.starts_with("Found 2 "), "{run:?}");
    // Stop words alone still match.
    assert!(recall(&t, &["the"])["total"].as_u64().unwrap() >= 3);
}

#[test]
fn a_question_in_related_words_finds_the_memory_through_the_thesaurus() {
    let t = seeded();
    // Memory 3 says "Deploys … release"; the question says "ship": a related word.
    let v = recall(&t, &["when", "do", "we", "ship"]);
    assert_eq!(hits(&v), [md(3)], "{v}");
    // Through the thesaurus (`ship` ~ `deploy`, `release`) it scores less than asked directly.
    let direct = recall(&t, &["when do we deploy"]);
    assert_eq!(hits(&direct), [md(3)], "{direct}");
    let (related, direct) =
        (v["results"][0]["score"].as_f64().unwrap(), direct["results"][0]["score"].as_f64().unwrap());
    assert!(related < direct, "{related} {direct}");
}

#[test]
fn exact_uses_neither_stop_words_nor_the_thesaurus() {
    let t = seeded();
    let every = [md(3), md(2), ("copilot".to_string(), "mem-1".to_string()), md(1)];
    assert_eq!(hits(&recall(&t, &["--exact", "the"])), every, "each holding `the`, newest first (`them` too)");
    assert_eq!(hits(&recall(&t, &["--exact", "run", "the"])), [md(1)]);
    assert_eq!(recall(&t, &["--exact", "ship"])["count"], 0, "no related words");
    assert_eq!(recall(&t, &["--exact", "how do I run the tests"])["count"], 0, "every word, stop words too");
}
