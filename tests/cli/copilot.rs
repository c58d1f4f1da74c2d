//! Copilot-style memories in `.github/copilot-memories.jsonl` (docs/formats.md).

use crate::common::{NOW, Run, TestEnv};
use serde_json::{Value, json};
use std::path::PathBuf;

const JSONL: &str = ".github/copilot-memories.jsonl";

fn env() -> TestEnv {
    TestEnv::new().env("KB_NOW", NOW)
}

fn jsonl(env: &TestEnv) -> PathBuf {
    env.root().join(JSONL)
}

fn read_bytes(env: &TestEnv) -> Vec<u8> {
    std::fs::read(jsonl(env)).unwrap()
}

fn lines(env: &TestEnv) -> Vec<String> {
    String::from_utf8(read_bytes(env)).unwrap().lines().map(str::to_string).collect()
}

fn records(env: &TestEnv) -> Vec<Value> {
    lines(env).iter().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(Value::is_object).collect()
}

/// Runs `kb --json save --store copilot` and returns its JSON.
fn save(env: &TestEnv, subject: &str, fact: &str, citations: &[&str], extra: &[&str]) -> Value {
    let mut args = vec!["--json", "save", "--store", "copilot", "--subject", subject, "--reason", "it matters"];
    for c in citations {
        args.extend(["--citation", c]);
    }
    args.extend(extra);
    args.push(fact);
    env.kb(&args).ok().json()
}

fn ok_json(env: &TestEnv, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend(args);
    env.kb(&all).ok().json()
}

fn fail(env: &TestEnv, args: &[&str]) -> Run {
    let run = env.kb(args);
    assert_eq!(run.code, 1, "expected exit 1: {run:?}");
    assert!(run.stderr.starts_with("error: "), "{run:?}");
    run
}

// ---------------------------------------------------------------- reader and writer

/// Every shape the reader accepts, plus lines it must keep without understanding them.
const MIXED: &str = concat!(
    "\u{feff}{\"id\":\"mem-a\",\"subject\":\"build\",\"fact\":\"Run nextest\",\"citations\":[\"Makefile:14\"],\"reason\":\"CI\",\"source\":{\"agent\":\"copilot-cli\",\"v\":2},\"zz\":{\"b\":1,\"a\":[1.50,null]}}\n",
    "\n",
    "   \t\n",
    "this is not json\n",
    "{\"id\":\"mem-b\" , \"subject\": \"naming\", \"fact\": \"Files are kebab-case\", \"citations\": \"src/a.rs:41, docs/x.md:9\", \"source\": \"vscode\"}\r\n",
    "[\"an\",\"array\"]\n",
    "{\"id\":\"mem-c\",\"subject\":\"docs\",\"fact\":\"Docs live in docs/\",\"citations\":[],\"reason\":\"r\",\"source\":{\"agent\":\"kb\"}}",
);

#[test]
fn untouched_lines_come_back_byte_for_byte() {
    let env = env();
    env.write(JSONL, MIXED);
    save(&env, "testing", "Snapshot tests live next to the module", &["src/render/mod.rs:120"], &[]);
    let after = String::from_utf8(read_bytes(&env)).unwrap();
    // The old last line gains only its line feed; the new record is appended after it.
    let (old, new) = after.split_at(MIXED.len() + 1);
    assert_eq!(old, format!("{MIXED}\n"));
    let new: Value = serde_json::from_str(new.strip_suffix('\n').unwrap()).unwrap();
    assert_eq!(new["subject"], "testing");
    assert!(!new.to_string().contains('\n'));
}

#[test]
fn tolerant_reader_normalises_citations_and_source() {
    let env = env();
    env.write(JSONL, MIXED);
    let run = env.kb(&["--json", "list", "--store", "copilot"]).ok();
    let list = run.json();
    assert_eq!(list["count"], 3, "blank and bad lines are skipped: {list}");
    let lines_of: Vec<u64> = list["memories"].as_array().unwrap().iter().map(|m| m["line"].as_u64().unwrap()).collect();
    assert_eq!(lines_of, [1, 5, 7]);
    // Skipped lines are named on stderr with their line numbers; the command still succeeds.
    assert!(run.stderr.contains(&format!("skipped {JSONL}:4: not JSON")), "{}", run.stderr);
    assert!(run.stderr.contains(&format!("skipped {JSONL}:6: not a JSON object (found a list)")));
    let b = ok_json(&env, &["show", "mem-b"]);
    assert_eq!(b["citations"], json!(["src/a.rs:41", "docs/x.md:9"]));
    assert_eq!(
        (b["source"].as_str(), b["store"].as_str(), b["line"].as_u64()),
        (Some("vscode"), Some("copilot"), Some(5))
    );
    let a = ok_json(&env, &["show", "mem-a"]);
    assert_eq!((a["source"].as_str(), a["fact"].as_str()), (Some("copilot-cli"), Some("Run nextest")));
    assert_eq!(a["content"], a["fact"]);
}

#[test]
fn an_edit_changes_only_the_keys_it_touches() {
    let env = env();
    let original = r#"{"zz":{"b":1,"a":2}, "fact" : "Files are kebab-case",  "subject":"naming","id":"m1","n":1.50,"big":123456789012345678901234567890}"#;
    env.write(JSONL, &format!("{original}\r\n{{\"id\":\"m2\",\"subject\":\"s\",\"fact\":\"f\"}}\r\n"));
    env.kb(&["vote", "m1", "up", "--reason", "still true"]).ok();
    let text = String::from_utf8(read_bytes(&env)).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    let stem = original.strip_suffix('}').unwrap();
    assert_eq!(
        first,
        format!(
            r#"{stem},"votes":{{"up":1,"down":0}},"last_vote":{{"direction":"up","reason":"still true","at":"2026-11-22T12:00:00+00:00"}}}}"#
        )
    );
    assert_eq!(rest, "{\"id\":\"m2\",\"subject\":\"s\",\"fact\":\"f\"}\r\n", "the untouched CRLF line keeps its CR");
}

#[test]
fn check_reports_jsonl_problems_with_line_numbers() {
    let env = env();
    env.write(
        JSONL,
        concat!(
            "{\"id\":\"a\",\"subject\":\"s\",\"fact\":\"f\"}\n",
            "{\"id\":\"a\",\"subject\":\"s\",\"fact\":\"g\"}\n",
            "{\"subject\":\"s\"}\n",
            "{broken\n",
            "\n",
            "{\"id\":\"b\",\"subject\":\"s\",\"fact\":\"h\",\"citations\":5,\"created\":\"2026-01-01\"}\n",
            "{\"id\":7,\"subject\":\"s\",\"fact\":\"i\",\"votes\":{\"up\":\"many\"}}\n",
        ),
    );
    let run = env.kb(&["--json", "check"]);
    assert_eq!(run.code, 1);
    let path = std::path::absolute(jsonl(&env)).unwrap().display().to_string();
    let got: Vec<(u64, String)> = run.json()["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["path"] == path.as_str())
        .map(|p| (p["line"].as_u64().unwrap(), p["message"].as_str().unwrap().to_string()))
        .collect();
    let want_prefixes = [
        (1, "duplicate id a: also on line 2"),
        (2, "duplicate id a: also on line 1"),
        (3, "not a memory record: no \"fact\""),
        (4, "invalid JSON at column 2"),
        (6, "\"citations\" must be a list of strings or a comma-separated string, got a number"),
        (6, "\"created\": timestamp '2026-01-01' is a date without a time"),
        (7, "\"votes\" \"up\" must be a non-negative integer"),
    ];
    assert_eq!(got.len(), want_prefixes.len(), "{got:#?}");
    for ((line, msg), (want_line, want)) in got.iter().zip(want_prefixes) {
        assert_eq!(*line, want_line, "{msg}");
        assert!(msg.starts_with(want), "line {line}: {msg:?} should start with {want:?}");
    }
    // Human form: path:line: message.
    let run = env.kb(&["check"]);
    assert!(run.stdout.contains(&format!("{JSONL}:4: invalid JSON")), "{}", run.stdout);
    // A clean file checks clean and counts as one file.
    env.write(JSONL, "{\"id\":\"a\",\"subject\":\"s\",\"fact\":\"f\"}\n");
    let out = ok_json(&env, &["check"]);
    assert_eq!((out["files"].as_u64(), out["problems"].as_array().unwrap().len()), (Some(1), 0));
}

#[test]
fn a_file_without_final_newline_and_crlf_lines() {
    let env = env();
    env.write(
        JSONL,
        "{\"id\":\"a\",\"subject\":\"s\",\"fact\":\"one\"}\r\n{\"id\":\"b\",\"subject\":\"t\",\"fact\":\"two\"}",
    );
    assert_eq!(ok_json(&env, &["show", "b"])["fact"], "two");
    assert_eq!(ok_json(&env, &["show", "a"])["fact"], "one", "CR is not part of the JSON");
    // Consolidating the CRLF record rewrites that line with \n only; the other line gains its \n.
    let out = save(&env, "s", "one!", &["x.rs:1"], &[]);
    assert_eq!((out["action"].as_str(), out["memory_id"].as_str()), (Some("consolidated"), Some("a")));
    let text = String::from_utf8(read_bytes(&env)).unwrap();
    assert!(
        text.starts_with("{\"id\":\"a\",\"subject\":\"s\",\"fact\":\"one!\",\"citations\":[\"x.rs:1\"],"),
        "{text}"
    );
    assert!(text.ends_with("}\n{\"id\":\"b\",\"subject\":\"t\",\"fact\":\"two\"}\n"), "{text:?}");
    assert_eq!(text.matches('\r').count(), 0);
}

#[test]
fn fifty_thousand_lines() {
    let env = env();
    let mut text = String::with_capacity(50_000 * 160);
    for i in 0..50_000 {
        text.push_str(&format!(
            "{{\"id\":\"mem-{i:08x}\",\"subject\":\"subject{}\",\"fact\":\"Fact number {i} about module {}\",\"citations\":[\"src/m{}.rs:{}\"],\"reason\":\"r\",\"source\":{{\"agent\":\"kb\"}},\"created\":\"2026-11-01T00:00:00+00:00\"}}\n",
            i % 50,
            i % 977,
            i % 13,
            i % 400
        ));
    }
    env.write(JSONL, &text);
    let list = ok_json(&env, &["list", "--store", "copilot"]);
    assert_eq!(list["count"], 50_000);
    assert_eq!(list["memories"][49_999]["id"], "mem-0000c34f");
    let hits = ok_json(&env, &["recall", "--exact", "--store", "copilot", "-n", "3", "module 976"]);
    assert_eq!(hits["count"], 3);
    let out = save(&env, "subject7", "A completely different observation about caching layers", &[], &[]);
    assert_eq!((out["action"].as_str(), out["line"].as_u64()), (Some("saved"), Some(50_001)));
    let after = read_bytes(&env);
    assert_eq!(&after[..text.len()], text.as_bytes());
    let out = ok_json(&env, &["forget", "mem-00000000"]);
    assert_eq!(out["line"], 1);
    assert_eq!(read_bytes(&env).len(), after.len() - text.lines().next().unwrap().len() - 1);
}

// ---------------------------------------------------------------- save

#[test]
fn save_appends_and_reports_json() {
    let env = env();
    let out =
        save(&env, "build", "Run cargo nextest run --workspace before pushing", &["Makefile:14", ".ci/run:3"], &[]);
    let id = out["memory_id"].as_str().unwrap().to_string();
    assert!(id.starts_with("mem-") && id.len() == 12, "{id}");
    assert_eq!(out["action"], "saved");
    assert_eq!(out["store"], "copilot");
    assert_eq!(out["similarity"], Value::Null);
    assert_eq!(out["line"], 1);
    assert_eq!(out["path"], std::path::absolute(jsonl(&env)).unwrap().display().to_string());
    let recs = records(&env);
    assert_eq!(
        recs[0],
        json!({"id": id, "subject": "build", "fact": "Run cargo nextest run --workspace before pushing",
               "citations": ["Makefile:14", ".ci/run:3"], "reason": "it matters", "source": {"agent": "kb"},
               "created": "2026-11-22T12:00:00+00:00"})
    );
    // The lock's folder ignores itself: only the JSONL file is new to git.
    assert_eq!(std::fs::read_to_string(env.root().join(".co-cli/cache/.gitignore")).unwrap(), "*\n");
    // Key order as documented.
    assert!(lines(&env)[0].starts_with(&format!("{{\"id\":\"{id}\",\"subject\":\"build\",\"fact\":")));
    // The same fact saved again is the same id (ids are stable) but consolidates.
    let again =
        save(&env, "build", "Run cargo nextest run --workspace before pushing", &[], &["--category", "general"]);
    assert_eq!((again["action"].as_str(), again["memory_id"].as_str()), (Some("consolidated"), Some(id.as_str())));
    assert_eq!(again["similarity"], 100.0);
    assert_eq!(records(&env)[0]["category"], "general");
}

#[test]
fn human_save_output() {
    let env = env();
    let run = env.kb(&["save", "--store", "copilot", "--subject", "build", "--reason", "r", "Use make ci"]).ok();
    let id = records(&env)[0]["id"].as_str().unwrap().to_string();
    let path = std::path::absolute(jsonl(&env)).unwrap();
    assert_eq!(run.stdout, format!("✓ Saved Copilot memory {id}\nLocation: {}:1\n", path.display()));
    let run = env
        .kb(&["save", "--store", "copilot", "--subject", "build", "--reason", "r", "--dry-run", "Use make ci!"])
        .ok();
    assert!(run.stdout.starts_with(&format!("Would update Copilot memory {id} (consolidated duplicate, similarity ")));
}

#[test]
fn dedup_is_within_the_subject_and_merges_citations() {
    let env = env();
    let first = save(&env, "build", "Run cargo nextest before pushing", &["Makefile:14"], &[]);
    save(&env, "docs", "Docs live in docs/ and build with mdbook", &[], &[]);
    let other_subject = save(&env, "ci", "Run cargo nextest before pushing", &[], &[]);
    assert_eq!(other_subject["action"], "saved", "another subject is never a duplicate");
    let out = save(&env, " Build", "run cargo nextest before pushing!", &[".ci/run:3", "Makefile:14"], &[]);
    assert_eq!(out["action"], "consolidated");
    assert_eq!(out["memory_id"], first["memory_id"]);
    assert_eq!(out["line"], 1);
    assert!(out["similarity"].as_f64().unwrap() >= 85.0);
    let rec = &records(&env)[0];
    assert_eq!(rec["id"], first["memory_id"], "consolidation keeps the id");
    assert_eq!(rec["fact"], "run cargo nextest before pushing!", "and replaces the fact");
    assert_eq!(rec["citations"], json!(["Makefile:14", ".ci/run:3"]), "and merges citations");
    assert_eq!(rec["subject"], "build");
    assert_eq!(rec["updated"], "2026-11-22T12:00:00+00:00");
    assert_eq!(records(&env).len(), 3);
}

#[test]
fn dedup_uses_the_markdown_threshold_setting() {
    let env = env().env("CO_CLI_MEMORY_DEDUP_THRESHOLD", "100");
    save(&env, "build", "Run cargo nextest before pushing", &[], &[]);
    let out = save(&env, "build", "Run cargo nextest before pushing!", &[], &[]);
    assert_eq!(out["action"], "saved");
    env.write(".co-cli/settings.json", "{\"memory_dedup_threshold\": 50}");
    let env = TestEnv { envs: vec![("KB_NOW".into(), NOW.into())], ..env };
    let out = save(&env, "build", "Run cargo nextest before you push", &[], &[]);
    assert_eq!(out["action"], "consolidated");
}

#[test]
fn dry_run_writes_nothing() {
    let env = env();
    let out = save(&env, "build", "Use make ci", &[], &["--dry-run"]);
    assert_eq!(out["action"], "would_save");
    assert!(!jsonl(&env).exists());
    save(&env, "build", "Use make ci", &[], &[]);
    let before = read_bytes(&env);
    let out = save(&env, "build", "Use make ci!", &["x"], &["--dry-run"]);
    assert_eq!(out["action"], "would_consolidate");
    assert_eq!(read_bytes(&env), before);
}

#[test]
fn save_usage_errors() {
    let env = env();
    let run = env.kb(&["save", "--store", "copilot", "--reason", "r", "fact"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--subject"));
    let run = env.kb(&["save", "--store", "copilot", "--subject", "s", "fact"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("--reason"));
    let run = env.kb(&["save", "--subject", "s", "fact"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("need --store copilot"));
    let run = env.kb(&["save", "--store", "copilot", "--subject", "s", "--reason", "r", "-t", "x", "fact"]);
    assert_eq!(run.code, 2);
    let run = fail(&env, &["save", "--store", "copilot", "--subject", " ", "--reason", "r", "fact"]);
    assert!(run.stderr.contains("the subject is empty"));
    assert!(!jsonl(&env).exists());
}

#[test]
fn save_reads_the_fact_from_stdin() {
    let env = env();
    let run = env.kb_stdin(
        &["--json", "save", "--store", "copilot", "--subject", "s", "--reason", "r", "-"],
        Some("From stdin\n"),
    );
    assert_eq!(run.ok().json()["action"], "saved");
    assert_eq!(records(&env)[0]["fact"], "From stdin");
}

fn aws_key() -> String {
    ["AKIA", "ZZZZEXAMPLE2345Q"].concat()
}

fn github_token() -> String {
    format!("ghp_{}", "A1b2C3d4E5f6".repeat(3))
}

#[test]
fn secrets_are_refused_in_every_field() {
    let env = env();
    let key = aws_key();
    let token = github_token();
    let base = ["save", "--store", "copilot"];
    let cases: Vec<Vec<String>> = vec![
        vec!["--subject".into(), key.clone(), "--reason".into(), "r".into(), "fact".into()],
        vec!["--subject".into(), "s".into(), "--reason".into(), "r".into(), format!("the key is {key}")],
        vec![
            "--subject".into(),
            "s".into(),
            "--reason".into(),
            "r".into(),
            "--citation".into(),
            format!("https://x.test/?t={token}"),
            "fact".into(),
        ],
        vec!["--subject".into(), "s".into(), "--reason".into(), format!("token {token}"), "fact".into()],
        vec![
            "--subject".into(),
            "s".into(),
            "--reason".into(),
            "r".into(),
            "--category".into(),
            key.clone(),
            "fact".into(),
        ],
    ];
    for case in &cases {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(case.iter().map(String::as_str));
        let run = fail(&env, &args);
        assert!(run.stderr.contains("refusing to store a secret"), "{run:?}");
        assert!(!jsonl(&env).exists(), "nothing written for {case:?}");
    }
    let fact = format!("deploy with {key}");
    let out = save(&env, "deploy", &fact, &[], &["--redact"]);
    assert_eq!(out["action"], "saved");
    assert!(!out["redacted"].as_array().unwrap().is_empty());
    let text = String::from_utf8(read_bytes(&env)).unwrap();
    assert!(!text.contains(&key) && text.contains("[REDACTED:"), "{text}");
    let run = fail(&env, &["vote", out["memory_id"].as_str().unwrap(), "up", "--reason", &token]);
    assert!(run.stderr.contains("refusing to store a secret"));
}

// ---------------------------------------------------------------- vote

#[test]
fn votes_are_counted() {
    let env = env();
    let id = save(&env, "build", "Use make ci", &[], &[])["memory_id"].as_str().unwrap().to_string();
    env.kb(&["vote", &id, "up", "--reason", "worked"]).ok();
    env.kb(&["vote", &id, "upvote", "--reason", "worked again"]).ok();
    let out = ok_json(&env, &["vote", &id, "down", "--reason", "the Makefile moved"]);
    assert_eq!(out["votes"], json!({"up": 2, "down": 1}));
    assert_eq!(
        (out["id"].as_str(), out["direction"].as_str(), out["store"].as_str()),
        (Some(id.as_str()), Some("down"), Some("copilot"))
    );
    let rec = &records(&env)[0];
    assert_eq!(rec["votes"], json!({"up": 2, "down": 1}));
    assert_eq!(rec["last_vote"]["reason"], "the Makefile moved");
    let run = env.kb(&["vote", &id, "down", "--reason", "again"]).ok();
    assert_eq!(run.stdout, format!("✓ Voted down on Copilot memory {id}: 2 up, 2 down\n"));
    let shown = ok_json(&env, &["show", &id]);
    assert_eq!(shown["votes"], json!({"up": 2, "down": 2}));
    // A recall shows the votes within the record's lines, and warns of a down-voted fact.
    let out = env.kb(&["recall", "make", "ci"]).ok().stdout;
    assert!(out.contains("Subject: build\nVotes: 2 up, 2 down\n"), "{out}");
    env.kb(&["vote", &id, "down", "--reason", "still moved"]).ok();
    let out = env.kb(&["recall", "make", "ci"]).ok().stdout;
    assert!(out.contains("Votes: 2 up, 3 down (more down than up: it may be wrong)\n"), "{out}");
}

#[test]
fn vote_errors() {
    let env = env();
    assert_eq!(env.kb(&["vote", "mem-1", "up"]).code, 2, "--reason is required");
    assert_eq!(env.kb(&["vote", "mem-1", "sideways", "--reason", "r"]).code, 2);
    let run = fail(&env, &["vote", "mem-00000000", "up", "--reason", "r"]);
    assert_eq!(run.stderr, "error: memory mem-00000000 not found\n");
    env.kb(&["save", "a markdown memory"]).ok();
    let run = fail(&env, &["vote", "1", "up", "--reason", "r"]);
    assert!(run.stderr.contains("markdown memory"), "{run:?}");
    env.write(JSONL, "{\"id\":\"x\",\"subject\":\"s\",\"fact\":\"f\",\"votes\":[1]}\n");
    let run = fail(&env, &["vote", "x", "up", "--reason", "r"]);
    assert!(run.stderr.contains("copilot-memories.jsonl:1") && run.stderr.contains("votes"), "{run:?}");
}

// ---------------------------------------------------------------- list, recall, show, forget over both stores

/// One markdown memory (id 1, an hour old), one record (now), one markdown memory (id 2, in a minute).
fn both_stores() -> (TestEnv, String) {
    let env = env();
    env.memory(1, "User prefers pytest over unittest", "2026-11-22T11:00:00+00:00", &["preference", "python"]);
    let id = save(&env, "testing", "Run pytest with -x in CI", &["pyproject.toml:40"], &[])["memory_id"]
        .as_str()
        .unwrap()
        .to_string();
    env.memory(2, "Python tests use fixtures in conftest.py", "2026-11-22T12:01:00+00:00", &["python"]);
    (env, id)
}

#[test]
fn list_shows_both_stores() {
    let (env, id) = both_stores();
    let run = env.kb(&["list"]).ok();
    assert_eq!(
        run.stdout,
        format!(
            "Total memories: 2/200\n\n**001** (2026-11-22) [preference] : User prefers pytest over unittest\n**002** (2026-11-22) : Python tests use fixtures in conftest.py\n\nCopilot memories: 1\n\n**{id}** (2026-11-22) [testing] : Run pytest with -x in CI\n"
        )
    );
    let md_only = env.kb(&["list", "--store", "md"]).ok();
    assert_eq!(
        md_only.stdout,
        "Total memories: 2/200\n\n**001** (2026-11-22) [preference] : User prefers pytest over unittest\n**002** (2026-11-22) : Python tests use fixtures in conftest.py\n"
    );
    let cp = env.kb(&["list", "--store", "copilot"]).ok();
    assert_eq!(
        cp.stdout,
        format!("Copilot memories: 1\n\n**{id}** (2026-11-22) [testing] : Run pytest with -x in CI\n")
    );
    let json = ok_json(&env, &["list"]);
    assert_eq!((json["count"].as_u64(), json["limit"].as_u64()), (Some(3), Some(200)));
    assert_eq!(json["counts"], json!({"md": 2, "copilot": 1}));
    let stores: Vec<&str> = json["memories"].as_array().unwrap().iter().map(|m| m["store"].as_str().unwrap()).collect();
    assert_eq!(stores, ["md", "md", "copilot"]);
    let rec = &json["memories"][2];
    assert_eq!(
        (rec["id"].as_str(), rec["subject"].as_str(), rec["line"].as_u64()),
        (Some(id.as_str()), Some("testing"), Some(1))
    );
    for key in ["created", "updated", "tags", "category", "summary", "decay_protected", "path"] {
        assert!(rec.get(key).is_some(), "record list items keep the documented keys: {key}");
    }
    assert_eq!(json["memories"][0]["id"], 1, "a memory's id stays an integer");
    let json = ok_json(&env, &["list", "--store", "copilot"]);
    assert_eq!((json["count"].as_u64(), json["counts"]["md"].as_u64()), (Some(1), Some(0)));
}

#[test]
fn list_without_records_is_the_markdown_output() {
    let env = env();
    let root = env.root().display().to_string();
    let none_yet = format!("No memories saved yet in {root}.\n");
    assert_eq!(env.kb(&["list"]).ok().stdout, none_yet);
    assert_eq!(
        env.kb(&["list", "--store", "copilot"]).ok().stdout,
        format!("No Copilot memories saved yet in {root}.\n")
    );
    env.write(JSONL, "\n");
    assert_eq!(env.kb(&["list", "--store", "copilot"]).ok().stdout, format!("No Copilot memories found in {JSONL}.\n"));
    assert_eq!(env.kb(&["list"]).ok().stdout, none_yet);
    save(&env, "s", "a fact", &[], &[]);
    let out = env.kb(&["list"]).ok().stdout;
    assert!(out.starts_with(&format!("{none_yet}\nCopilot memories: 1\n")), "{out}");
}

#[test]
fn recall_covers_both_stores_newest_first() {
    let (env, id) = both_stores();
    let out = ok_json(&env, &["recall", "--exact", "py"]);
    let got: Vec<(String, String)> = out["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["store"].as_str().unwrap().to_string(), r["id"].to_string()))
        .collect();
    assert_eq!(
        got,
        [
            ("md".to_string(), "2".to_string()),
            ("copilot".to_string(), format!("\"{id}\"")),
            ("md".to_string(), "1".to_string())
        ]
    );
    assert_eq!(out["count"], 3);
    let out = ok_json(&env, &["recall", "--exact", "py", "-n", "1", "--store", "copilot"]);
    assert_eq!(out["results"][0]["citations"], json!(["pyproject.toml:40"]));
    let out = ok_json(&env, &["recall", "--exact", "pyproject", "--store", "md"]);
    assert_eq!(out["count"], 0);
    let out = ok_json(&env, &["recall", "--exact", "TESTING"]);
    assert_eq!(out["count"], 1, "the subject matches too");
    let run = env.kb(&["recall", "--exact", "with -x"]).ok();
    assert_eq!(
        run.stdout,
        format!(
            "Found 1 memory matching 'with -x':\n\n**Copilot memory {id}** (created 2026-11-22)\nSubject: testing\nCitations: pyproject.toml:40\nRun pytest with -x in CI\n"
        )
    );
}

#[test]
fn show_and_forget_resolve_ids_across_stores() {
    let (env, id) = both_stores();
    let run = env.kb(&["show", &id]).ok();
    assert_eq!(
        run.stdout,
        format!(
            "Copilot memory {id} ({JSONL}:1)\nSubject: testing\nCreated: 2026-11-22T12:00:00+00:00\nSource: kb\nCitations: pyproject.toml:40\nReason: it matters\n\nRun pytest with -x in CI\n"
        )
    );
    assert_eq!(ok_json(&env, &["show", "1"])["store"], "md");
    fail(&env, &["show", &id, "--store", "md"]);
    fail(&env, &["show", "1", "--store", "copilot"]);
    // An integer-looking record id: an integer always means a markdown memory; the record is
    // reached with --store copilot.
    env.write(JSONL, &format!("{}\n{{\"id\":\"1\",\"subject\":\"n\",\"fact\":\"numbered\"}}\n{{\"id\":\"77\",\"subject\":\"n\",\"fact\":\"seventy-seven\"}}\n", lines(&env)[0]));
    assert_eq!(ok_json(&env, &["show", "1"])["store"], "md");
    assert_eq!(ok_json(&env, &["show", "1", "--store", "copilot"])["fact"], "numbered");
    fail(&env, &["show", "77"]);
    fail(&env, &["forget", "77"]);
    assert_eq!(ok_json(&env, &["show", "77", "--store", "copilot"])["fact"], "seventy-seven");
    let out = ok_json(&env, &["forget", "77", "--store", "copilot"]);
    assert_eq!(
        (out["deleted"].as_str(), out["store"].as_str(), out["line"].as_u64()),
        (Some("77"), Some("copilot"), Some(3))
    );
    let run = env.kb(&["forget", &id]).ok();
    assert_eq!(run.stdout, format!("✓ Deleted Copilot memory {id} [testing] (line 1 of {JSONL})\n"));
    assert_eq!(lines(&env), ["{\"id\":\"1\",\"subject\":\"n\",\"fact\":\"numbered\"}"]);
    let out = ok_json(&env, &["forget", "1"]);
    assert_eq!((out["deleted"].as_u64(), out["store"].as_str()), (Some(1), Some("md")));
    assert_eq!(env.memory_files().len(), 1);
    let run = fail(&env, &["forget", "mem-ffffffff"]);
    assert_eq!(run.stderr, "error: memory mem-ffffffff not found\n");
    let run = fail(&env, &["show", "nope", "--store", "md"]);
    assert!(run.stderr.contains("invalid memory id"));
}

// ---------------------------------------------------------------- export and import

#[test]
fn export_maps_memories_and_is_idempotent() {
    let env = env();
    env.memory(
        1,
        "User prefers pytest over unittest",
        "2026-11-20T10:00:00+00:00",
        &["preference", "python", "testing"],
    );
    env.memory(2, "Always run the linter", "2026-11-20T10:00:00+00:00", &[]);
    env.memory(3, "We chose Postgres over MySQL", "2026-11-20T10:00:00+00:00", &["decision"]);
    env.write(
        ".co-cli/knowledge/memories/004-cited.md",
        "---\ncitations:\n- src/db.rs:12\nreason: The pool size matters\ncreated: '2026-11-20T10:00:00+00:00'\nid: 4\ntags:\n- db\n---\n\nPool size is 16\n",
    );
    let out = ok_json(&env, &["export", "--to", "copilot"]);
    assert_eq!((out["added"].as_u64(), out["merged"].as_u64(), out["skipped"].as_u64()), (Some(4), Some(0), Some(0)));
    assert_eq!((out["from"].as_str(), out["to"].as_str()), (Some("md"), Some("copilot")));
    let recs = records(&env);
    let subjects: Vec<&str> = recs.iter().map(|r| r["subject"].as_str().unwrap()).collect();
    assert_eq!(subjects, ["python", "general", "decision", "db"]);
    assert_eq!(recs[0]["category"], "preference");
    assert_eq!(recs[0]["tags"], json!(["preference", "python", "testing"]));
    assert_eq!(recs[3]["citations"], json!(["src/db.rs:12"]));
    assert_eq!(recs[3]["reason"], "The pool size matters");
    assert_eq!(recs[1]["reason"], "Exported from kb memory 2");
    assert_eq!(recs[1]["source"], json!({"agent": "kb"}));
    let item = &out["items"][0];
    assert_eq!((item["source_id"].as_str(), item["action"].as_str()), (Some("1"), Some("added")));
    assert_eq!(item["target_id"], recs[0]["id"]);
    let before = read_bytes(&env);
    let again = ok_json(&env, &["export", "--to", "copilot"]);
    assert_eq!(
        (again["added"].as_u64(), again["merged"].as_u64(), again["skipped"].as_u64()),
        (Some(0), Some(0), Some(4))
    );
    assert_eq!(read_bytes(&env), before, "a second export changes nothing");
    let run = env.kb(&["export", "--to", "copilot"]).ok();
    assert!(
        run.stdout.ends_with(&format!("✓ Exported 4 memories to {JSONL}: 0 added, 0 merged, 4 skipped.\n")),
        "{}",
        run.stdout
    );
    assert!(run.stdout.starts_with("skipped memory 1 → Copilot memory mem-"), "{}", run.stdout);
    // Importing what was exported adds nothing either.
    let back = ok_json(&env, &["import", "--from", "copilot"]);
    assert_eq!((back["added"].as_u64(), back["merged"].as_u64()), (Some(0), Some(0)));
    assert_eq!(env.memory_files().len(), 4);
}

#[test]
fn export_leaves_out_a_memory_one_agent_keeps() {
    let env = env();
    env.memory(1, "Always run the linter", "2026-11-20T10:00:00+00:00", &[]);
    env.write(
        ".co-cli/knowledge/memories/002-review.md",
        "---\nagent: reviewer\ncreated: '2026-11-20T10:00:00+00:00'\nid: 2\n---\n\nReviews check every new query has an index\n",
    );
    let run = env.kb(&["--json", "export", "--to", "copilot"]).ok();
    let out = run.json();
    assert_eq!(out["added"], 1, "{out}");
    assert!(run.stderr.contains("left out memory 2, for reviewer only"), "{run:?}");
    let recs = records(&env);
    assert_eq!(recs.len(), 1);
    assert!(!recs[0]["fact"].as_str().unwrap().contains("index"), "{recs:?}");
    // The compiled block of another agent never gets it through the records.
    let block = env.kb(&["context", "--agent", "builder"]).ok().stdout;
    assert!(!block.contains("every new query has an index"), "{block}");
}

#[test]
fn export_dedups_and_merges_into_existing_records() {
    let env = env();
    env.write(
        JSONL,
        "{\"id\":\"r1\",\"subject\":\"python\",\"fact\":\"User prefers pytest over unittest!\",\"citations\":\"a.py:1\",\"created\":\"2026-11-01T00:00:00Z\",\"zz\":1}\n",
    );
    env.write(
        ".co-cli/knowledge/memories/001-x.md",
        "---\ncitations:\n- b.py:2\ncreated: '2026-11-20T10:00:00+00:00'\nid: 1\ntags:\n- python\n---\n\nUser prefers pytest over unittest\n",
    );
    let dry = ok_json(&env, &["export", "--to", "copilot", "--dry-run"]);
    assert_eq!((dry["merged"].as_u64(), dry["dry_run"].as_bool()), (Some(1), Some(true)));
    let out = ok_json(&env, &["export", "--to", "copilot"]);
    assert_eq!(out["merged"], 1);
    assert_eq!(out["items"][0]["note"], "text replaced, citations merged");
    assert_eq!(
        lines(&env),
        [
            "{\"id\":\"r1\",\"subject\":\"python\",\"fact\":\"User prefers pytest over unittest\",\"citations\":[\"a.py:1\",\"b.py:2\"],\"created\":\"2026-11-01T00:00:00Z\",\"zz\":1,\"updated\":\"2026-11-22T12:00:00+00:00\"}"
        ]
    );
    let again = ok_json(&env, &["export", "--to", "copilot"]);
    assert_eq!((again["merged"].as_u64(), again["skipped"].as_u64()), (Some(0), Some(1)));
}

#[test]
fn import_never_rewrites_a_protected_memory() {
    let env = TestEnv::pinned();
    env.kb(&["save", "-t", "build", "Run cargo nextest before pushing to main"]).ok();
    env.kb(&["protect", "1"]).ok();
    let before = env.read(&env.file_of(1));
    env.write(
        JSONL,
        "{\"id\":\"mem-1\",\"subject\":\"build\",\"fact\":\"Always run cargo nextest before pushing to main\",\"citations\":[],\"reason\":\"r\",\"created\":\"2026-11-22T13:00:00+00:00\"}\n",
    );
    let out = ok_json(&env, &["import", "--from", "copilot"]);
    assert_eq!((out["added"].as_u64(), out["merged"].as_u64()), (Some(1), Some(0)), "{out}");
    assert_eq!(env.read(&env.file_of(1)), before, "the protected memory is untouched");
    assert_eq!(env.show(2)["content"], "Always run cargo nextest before pushing to main");
}

#[test]
fn import_writes_co_cli_memories_and_is_idempotent() {
    let env = env();
    env.write(
        JSONL,
        concat!(
            "{\"id\":\"mem-1\",\"subject\":\"build\",\"fact\":\"Run `cargo nextest` before pushing\",\"citations\":[\"Makefile:14\",\".ci/run:3\"],\"reason\":\"CI uses nextest\",\"category\":\"general\"}\n",
            "{\"id\":\"mem-2\",\"subject\":\"style\",\"fact\":\"Prefer early returns\",\"citations\":\"src/a.rs:1\",\"reason\":\"yes\",\"category\":\"preference\"}\n",
            "not json\n",
        ),
    );
    let run = env.kb(&["--json", "import", "--from", "copilot"]).ok();
    assert!(run.stderr.contains(&format!("skipped {JSONL}:3")), "{}", run.stderr);
    let out = run.json();
    assert_eq!((out["added"].as_u64(), out["to"].as_str()), (Some(2), Some("md")));
    assert_eq!(env.memory_files(), ["001-run-cargo-nextest-before-pushing.md", "002-prefer-early-returns.md"]);
    let text = env.read(&env.memories().join("001-run-cargo-nextest-before-pushing.md"));
    assert_eq!(
        text,
        "---\nauto_category: null\ncitations:\n- Makefile:14\n- '.ci/run:3'\ncreated: '2026-11-22T12:00:00+00:00'\nid: 1\nreason: CI uses nextest\nsource: user-told\ntags:\n- build\n---\n\nRun `cargo nextest` before pushing\n"
    );
    let m2 = ok_json(&env, &["show", "2"]);
    assert_eq!((m2["tags"].clone(), m2["category"].as_str()), (json!(["style", "preference"]), Some("preference")));
    let check = env.kb(&["--json", "check"]);
    assert_eq!((check.code, check.json()["problems"].as_array().unwrap().len()), (1, 1), "only the bad JSONL line");
    let again = ok_json(&env, &["import", "--from", "copilot"]);
    assert_eq!(
        (again["added"].as_u64(), again["merged"].as_u64(), again["skipped"].as_u64()),
        (Some(0), Some(0), Some(2))
    );
    // A new citation on the record merges into the memory's frontmatter, nothing else changes.
    let l = lines(&env);
    env.write(JSONL, &format!("{}\n{}\n", l[0].replace("\".ci/run:3\"]", "\".ci/run:3\",\"README.md:9\"]"), l[1]));
    let out = ok_json(&env, &["import", "--from", "copilot"]);
    assert_eq!((out["merged"].as_u64(), out["items"][0]["note"].as_str()), (Some(1), Some("citations merged")));
    let text = env.read(&env.memories().join("001-run-cargo-nextest-before-pushing.md"));
    assert!(text.contains("citations:\n- Makefile:14\n- '.ci/run:3'\n- README.md:9\n"), "{text}");
    assert!(
        text.contains("updated: '2026-11-22T12:00:00+00:00'\n")
            && text.ends_with("\n\nRun `cargo nextest` before pushing\n")
    );
    let run = env.kb(&["import", "--from", "copilot"]).ok();
    assert!(
        run.stdout.ends_with(
            "✓ Imported 2 Copilot memories into .co-cli/knowledge/memories: 0 added, 0 merged, 2 skipped.\n"
        ),
        "{}",
        run.stdout
    );
    // A record changed after the memory replaces its text (the memory keeps its id and file).
    let l = lines(&env);
    let newer = l[1]
        .replace("Prefer early returns", "Prefer early returns!")
        .replace('}', ",\"updated\":\"2026-11-22T13:00:00+00:00\"}");
    env.write(JSONL, &format!("{}\n{newer}\n", l[0]));
    let out = ok_json(&env, &["import", "--from", "copilot"]);
    assert_eq!((out["merged"].as_u64(), out["items"][1]["note"].as_str()), (Some(1), Some("text replaced")));
    let m2 = ok_json(&env, &["show", "2"]);
    assert_eq!(
        (m2["content"].as_str(), m2["updated"].as_str()),
        (Some("Prefer early returns!"), Some("2026-11-22T12:00:00+00:00"))
    );
    assert_eq!(env.memory_files()[1], "002-prefer-early-returns.md");
}

#[test]
fn imported_memories_load_in_pyyaml() {
    if !crate::common::python_ready() {
        return;
    }
    let env = env();
    env.write(
        JSONL,
        "{\"id\":\"m\",\"subject\":\"yes\",\"fact\":\"On: off\",\"citations\":[\"1_000\",\"no\",\"a: b\"],\"reason\":\"2026-01-01\"}\n",
    );
    env.kb(&["import", "--from", "copilot"]).ok();
    let path = env.memories().join(&env.memory_files()[0]);
    let script =
        "import sys,yaml,json;t=open(sys.argv[1]).read();print(json.dumps(yaml.safe_load(t.split('---\\n')[1])))";
    let out = std::process::Command::new("python3").args(["-c", script]).arg(&path).output().unwrap();
    let fm: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(fm["tags"], json!(["yes"]));
    assert_eq!(fm["citations"], json!(["1_000", "no", "a: b"]));
    assert_eq!(fm["reason"], "2026-01-01");
}

// ---------------------------------------------------------------- concurrency and identity

#[test]
fn parallel_writers_lose_nothing() {
    let env = env();
    std::thread::scope(|scope| {
        for p in 0..8 {
            let env = &env;
            scope.spawn(move || {
                for i in 0..20 {
                    let subject = format!("s{p}-{i}");
                    let fact = format!("writer {p} fact {i}");
                    let status = env
                        .command(&["save", "--store", "copilot", "--subject", &subject, "--reason", "r", &fact])
                        .stdin(std::process::Stdio::null())
                        .stdout(std::process::Stdio::null())
                        .status()
                        .unwrap();
                    assert!(status.success());
                }
            });
        }
    });
    let recs = records(&env);
    assert_eq!(recs.len(), 160);
    let mut ids: Vec<&str> = recs.iter().map(|r| r["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 160, "ids are unique");
    assert_eq!(lines(&env).len(), 160);
    assert_eq!(ok_json(&env, &["check"])["problems"], json!([]));
}

#[test]
fn identity_survives_another_tool_rewriting_the_file() {
    let env = env();
    let a = save(&env, "build", "Run cargo nextest before pushing", &["Makefile:14"], &[])["memory_id"]
        .as_str()
        .unwrap()
        .to_string();
    let b = save(&env, "docs", "Docs live in docs/ and build with mdbook", &[], &[])["memory_id"]
        .as_str()
        .unwrap()
        .to_string();
    let c =
        save(&env, "style", "Prefer early returns über nesting", &[], &[])["memory_id"].as_str().unwrap().to_string();
    // Another tool: reverses the order, pretty-prints and reorders `a`, escapes non-ASCII in `c`
    // and drops its id.
    let l = lines(&env);
    let a_line = "{ \"citations\" : [ \"Makefile:14\" ], \"fact\" : \"Run cargo nextest before pushing\", \"subject\" : \"build\", \"id\" : \"ID\" }".replace("ID", &a);
    let c_line = "{\"subject\":\"style\",\"fact\":\"Prefer early returns \\u00fcber nesting\",\"citations\":[],\"reason\":\"r\"}";
    env.write(JSONL, &format!("{c_line}\n{}\n{a_line}\n", l[1]));
    assert_eq!(ok_json(&env, &["show", &a])["line"], 3);
    assert_eq!(ok_json(&env, &["show", &b])["line"], 2);
    let shown_c = ok_json(&env, &["show", &c]);
    assert_eq!(
        (shown_c["line"].as_u64(), shown_c["fact"].as_str()),
        (Some(1), Some("Prefer early returns über nesting")),
        "found by (subject, fact)"
    );
    // Updates land on the right records, by id.
    env.kb(&["vote", &a, "up", "--reason", "r"]).ok();
    let out = save(&env, "Build", "run cargo nextest before pushing!", &["ci.yml:3"], &[]);
    assert_eq!((out["memory_id"].as_str(), out["line"].as_u64()), (Some(a.as_str()), Some(3)));
    let l2 = lines(&env);
    assert!(l2[2].starts_with("{ \"citations\" : [\"Makefile:14\",\"ci.yml:3\"], \"fact\" : \"run cargo nextest before pushing!\", \"subject\" : \"build\", \"id\" : "), "{}", l2[2]);
    assert_eq!((l2[0].as_str(), l2[1].as_str()), (c_line, l[1].as_str()));
    // A vote on the id-less record writes its id back.
    env.kb(&["vote", &c, "down", "--reason", "r"]).ok();
    let rec: Value = serde_json::from_str(&lines(&env)[0]).unwrap();
    assert_eq!((rec["id"].as_str(), rec["votes"]["down"].as_u64()), (Some(c.as_str()), Some(1)));
    // Forget removes exactly the right lines.
    env.kb(&["forget", &b]).ok();
    env.kb(&["forget", &c]).ok();
    let left = records(&env);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["id"], a.as_str());
}

#[test]
fn write_refuses_a_github_folder_outside_the_root() {
    let env = env();
    let outside = env.dir.path().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, env.root().join(".github")).unwrap();
    let run = fail(&env, &["save", "--store", "copilot", "--subject", "s", "--reason", "r", "fact"]);
    assert!(run.stderr.contains("outside the repository"), "{run:?}");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

#[test]
fn read_commands_never_fail_on_garbage() {
    let env = env();
    let mut bytes: Vec<u8> = Vec::new();
    for line in [
        &b"\x00\x01\x02"[..],
        b"\xff\xfe{}",
        b"{\"subject\":\"s\",\"fact\":\"ok\"}",
        b"{\"subject\":\"s\",\"fact\":\"f\",\"citations\":{\"a\":[[[[]]]]},\"source\":1.5}",
        b"{{{{{{{{{{{{{{{{{{{{",
        b"\"\\ud800\"",
        b"{\"a\":\"unterminated",
        b"}",
    ] {
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
    }
    std::fs::create_dir_all(env.root().join(".github")).unwrap();
    std::fs::write(jsonl(&env), &bytes).unwrap();
    for args in [&["list"][..], &["recall", "--exact", "o"], &["--json", "list"], &["check"], &["--json", "check"]] {
        let run = env.kb(args);
        assert!(run.code == 0 || (args.contains(&"check") && run.code == 1), "{args:?}: {run:?}");
        assert!(!run.stderr.contains("panicked"), "{run:?}");
    }
    assert_eq!(ok_json(&env, &["list", "--store", "copilot"])["count"], 2);
    save(&env, "s", "a new fact about something else entirely", &[], &[]);
    assert!(read_bytes(&env).starts_with(&bytes), "garbage lines are kept verbatim");
}
