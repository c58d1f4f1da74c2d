//! The secret filter on save (docs/safety.md): a text or tag that matches a known secret pattern is
//! refused with exit 1 and the rule's name, and nothing is written; `--redact` stores it with
//! `[REDACTED:<rule>]`.
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

// ---- secrets that used to slip through, and documentation examples that used to be refused ----

/// A random-looking 40-character AWS-style secret access key (base64 with `/`).
fn aws_secret() -> String {
    let mut r = Rng::new(40);
    format!("{}/{}/{}", r.alnum(13), r.alnum(7), r.alnum(18))
}

/// A random-looking opaque bearer token of 36 characters.
fn bearer_token() -> String {
    format!("{}.{}-{}", Rng::new(7).alnum(20), Rng::new(8).alnum(8), Rng::new(9).alnum(6))
}

/// Asserts `text` is refused naming `rule` (see [`assert_refused`]), and that `--redact` stores
/// exactly `redacted`, without `secret`.
fn assert_refused_and_redacted(text: &str, secret: &str, rule: &str, redacted: &str) {
    assert_refused(text, &[], rule);
    let t = TestEnv::pinned();
    let out = t.kb(&["--json", "save", "--redact", text]).ok().json();
    assert_eq!(out["action"], "saved", "{out}");
    let stored = t.read(&t.file_of(1));
    assert!(!stored.contains(secret), "the secret was stored: {stored}");
    assert_eq!(t.show(1)["content"], redacted);
}

#[test]
fn a_secret_behind_a_rejected_keyword_value_is_refused() {
    // `creds:` captures `aws_secret_access_key` first (no digit, so not a secret); the real
    // value after `=` must still be tried.
    let secret = aws_secret();
    assert_eq!(secret.len(), 40);
    assert_refused_and_redacted(
        &format!("creds: aws_secret_access_key = {secret}"),
        &secret,
        "generic-api-key",
        "creds: aws_secret_access_key = [REDACTED:generic-api-key]",
    );
    assert_refused_and_redacted(
        &format!("aws creds: aws_secret_access_key = {secret} (rotated monthly)"),
        &secret,
        "generic-api-key",
        "aws creds: aws_secret_access_key = [REDACTED:generic-api-key] (rotated monthly)",
    );
}

#[test]
fn a_password_in_a_url_is_refused() {
    let password = Rng::new(3).alnum(16);
    assert_refused_and_redacted(
        &format!("staging db is postgres://app:{password}@db.internal:5432/app"),
        &password,
        "url-credentials",
        "staging db is postgres://app:[REDACTED:url-credentials]@db.internal:5432/app",
    );
    // Short passwords count too: the userinfo of a URL is a credential whatever its length.
    assert_refused_and_redacted(
        "postgres://user:pw@host/db",
        "user:pw@",
        "url-credentials",
        "postgres://user:[REDACTED:url-credentials]@host/db",
    );
    assert_refused_and_redacted(
        "fetch https://u:p@example.com/feed.xml daily",
        "u:p@",
        "url-credentials",
        "fetch https://u:[REDACTED:url-credentials]@example.com/feed.xml daily",
    );
}

#[test]
fn a_bearer_token_is_refused() {
    let token = bearer_token();
    assert_refused_and_redacted(
        &format!("call the API with Authorization: Bearer {token}"),
        &token,
        "bearer-token",
        "call the API with Authorization: Bearer [REDACTED:bearer-token]",
    );
    assert_refused_and_redacted(
        &format!("curl -H 'authorization: bearer {token}' https://api.internal/v1"),
        &token,
        "bearer-token",
        "curl -H 'authorization: bearer [REDACTED:bearer-token]' https://api.internal/v1",
    );
}

#[test]
fn aws_documentation_examples_are_stored() {
    // AWS's documented example credentials are public placeholders (gitleaks allows them too).
    let t = TestEnv::pinned();
    let text = "the AWS docs use AKIAIOSFODNN7EXAMPLE with \
                aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    let run = t.kb(&["save", text]);
    assert_eq!(run.code, 0, "a false positive: {run:?}");
    assert_eq!(t.show(1)["content"], text);
    // --redact leaves them alone as well.
    let t = TestEnv::pinned();
    t.kb(&["save", "--redact", "key id AKIAIOSFODNN7EXAMPLE"]).ok();
    assert_eq!(t.show(1)["content"], "key id AKIAIOSFODNN7EXAMPLE");
}

/// Benign texts that look a little like secrets; none may be refused.
const BENIGN: &[&str] = &[
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 reverted the token change",
    "short sha 4c2109c touched the auth module",
    "uuid 123e4567-e89b-12d3-a456-426614174000 belongs to the api client",
    "request_id: 6f1c2d3e-4b5a-4c7d-8e9f-0a1b2c3d4e5f",
    "the secret header is aGVsbG8gd29ybGQ= (base64 of hello world)",
    "auth: dGVzdA== is just base64 of test",
    "key file at /home/dev/.ssh/id_ed25519.pub",
    "credentials live in C:\\Users\\dev\\AppData\\Roaming\\app\\credentials.json",
    "docs at https://example.com and https://docs.rs/regex/1.10.2/regex/#syntax",
    "clone git@github.com:org/repo.git or ssh://git@github.com:22/org/repo.git",
    "the server runs on http://localhost:8080/api/v1/token",
    "mail https://alice@example.org/inbox for the token",
    "postgres://user:${PASSWORD}@db:5432/app reads the password from the env",
    "logs show https://admin:****@proxy.internal:3128",
    "template: https://user:<password>@host/path",
    "redis://:{{ redis_password }}@cache:6379/0",
    "password: <see vault>",
    "api_version = 2024-10-01, key: v1.2.3-rc.4+build.567",
    "rustc 1.82.0 (f6e511eec 2024-10-15) builds the token parser",
    "send Authorization: Bearer <token>, or Bearer $TOKEN, never the word Bearer token",
    "Authorization: Bearer YOUR_ACCESS_TOKEN_HERE",
];

#[test]
fn benign_look_alikes_are_not_refused() {
    let t = TestEnv::pinned();
    for text in BENIGN {
        let run = t.kb(&["save", "--dry-run", text]);
        assert_eq!(run.code, 0, "a false positive: {text:?}: {run:?}");
        assert!(!run.stderr.contains("secret"), "{text:?}: {run:?}");
    }
}
