//! The secret filter on save (SPEC §6, formats.md §5): a text or tag that matches a known secret
//! pattern is refused with exit 1 and the rule's name, and nothing is written; `--redact` stores
//! it with `[REDACTED:<rule>]`.
//!
//! Every fake key is assembled at run time, so no key-shaped literal is ever committed.

use crate::common::*;

fn github_pat() -> String {
    format!("ghp_{}", "A1b2C3d4E5f6".repeat(3))
}

fn aws_key() -> String {
    ["AKIA", "ZZZZEXAMPLE2345Q"].concat()
}

/// A high-entropy value for a `KEY="..."` assignment, different on every seed.
fn entropic(seed: u64) -> String {
    Rng::new(seed).alnum(32)
}

fn private_key() -> String {
    let body: String = (0..4).map(|i| Rng::new(i).alnum(64) + "\n").collect();
    format!("-----BEGIN {} PRIVATE KEY-----\n{body}-----END {} PRIVATE KEY-----", "OPENSSH", "OPENSSH")
}

fn slack_token() -> String {
    format!("xox{}-{}-{}-{}", "b", "1234567890", "1234567890123", Rng::new(9).alnum(24))
}

/// Asserts `text` (and `tags`) is refused naming `rule`, with nothing written.
fn assert_refused(text: &str, tags: &[&str], rule: &str) {
    let t = TestEnv::pinned();
    t.memory(1, "an existing memory", &days_ago(1.0), &[]);
    let before = t.snapshot();
    let mut args = vec!["save", text];
    for tag in tags {
        args.push("-t");
        args.push(tag);
    }
    let run = t.kb(&args);
    assert_eq!(run.code, 1, "a secret was accepted ({rule}): {run:?}");
    assert!(run.stderr.contains(rule), "stderr must name the rule {rule}: {run:?}");
    assert_same_tree(&before, &t.snapshot());
    // stdin and --json take the same path.
    let mut args = vec!["--json", "save", "-"];
    for tag in tags {
        args.push("-t");
        args.push(tag);
    }
    let run = t.kb_stdin(&args, Some(text));
    assert_eq!(run.code, 1, "{run:?}");
    assert_same_tree(&before, &t.snapshot());
}

#[test]
fn github_pat_is_refused() {
    assert_refused(&format!("my token is {} do not share", github_pat()), &[], "github-pat");
}

#[test]
fn aws_access_key_is_refused() {
    assert_refused(&format!("aws key {} for the staging bucket", aws_key()), &[], "aws-access-token");
}

#[test]
fn generic_api_key_assignment_is_refused() {
    assert_refused(&format!("set API_KEY=\"{}\" in the env", entropic(1)), &[], "generic-api-key");
}

#[test]
fn private_key_block_is_refused() {
    assert_refused(&format!("the deploy key:\n{}", private_key()), &[], "private-key");
}

#[test]
fn slack_token_is_refused() {
    assert_refused(&format!("bot token {}", slack_token()), &[], "slack");
}

#[test]
fn a_secret_in_a_tag_is_refused() {
    let tag = github_pat();
    assert_refused("harmless text", &[&tag], "github-pat");
}

#[test]
fn a_secret_is_refused_even_when_the_save_would_consolidate() {
    let t = TestEnv::pinned();
    t.memory(1, "the staging token is stored in vault", &days_ago(1.0), &[]);
    let before = t.snapshot();
    let run = t.kb(&["save", &format!("the staging token is stored in vault {}", github_pat())]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_same_tree(&before, &t.snapshot());
}

#[test]
fn a_refused_secret_is_not_echoed_on_stderr() {
    let t = TestEnv::pinned();
    let key = github_pat();
    let run = t.kb(&["save", &format!("token {key}")]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(!run.stderr.contains(&key), "the error message repeats the secret: {run:?}");
}

#[test]
fn redact_stores_the_rule_name_instead_of_the_secret() {
    let t = TestEnv::pinned();
    let key = github_pat();
    let aws = aws_key();
    let out = t.kb(&["--json", "save", "--redact", &format!("token {key} and {aws} here")]).ok().json();
    assert_eq!(out["action"], "saved");
    let text = t.read(&t.file_of(1));
    assert!(!text.contains(&key) && !text.contains(&aws), "{text}");
    assert!(text.contains("[REDACTED:github-pat]") && text.contains("[REDACTED:aws-access-token]"), "{text}");
    assert_eq!(t.show(1)["content"], "token [REDACTED:github-pat] and [REDACTED:aws-access-token] here");
}

#[test]
fn redact_generic_key_keeps_the_rest_of_the_text() {
    let t = TestEnv::pinned();
    let value = entropic(2);
    t.kb(&["save", "--redact", &format!("use API_KEY=\"{value}\" for the sandbox")]).ok();
    let content = t.show(1)["content"].as_str().unwrap().to_string();
    assert!(!content.contains(&value), "{content}");
    assert!(content.contains("[REDACTED:generic-api-key]") && content.contains("for the sandbox"), "{content}");
}

#[test]
fn ordinary_texts_are_not_mistaken_for_secrets() {
    let t = TestEnv::pinned();
    for text in [
        "The API key lives in the vault, never in the repo",
        "password rotation happens every 90 days",
        "token = read from env",
        "Use ghp_ prefix detection in the scanner",
        "AKIA prefixes identify AWS access keys",
        "key=value pairs are parsed by the config loader",
        "commit 4c2109c fixed the scanner",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 of the empty file",
    ] {
        let run = t.kb(&["save", text]);
        assert_eq!(run.code, 0, "a false positive: {text:?}: {run:?}");
    }
}

#[test]
fn dry_run_refuses_a_secret_too() {
    let t = TestEnv::pinned();
    let run = t.kb(&["save", "--dry-run", &format!("token {}", github_pat())]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(!t.root().join(".co-cli").exists());
}
