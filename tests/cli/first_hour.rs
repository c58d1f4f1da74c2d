//! A new user's first hour: root discovery, multi-word recall, what a consolidating save replaced,
//! ids that always mean a markdown memory, and printing into a closed pipe.

use crate::common::*;

#[test]
fn the_nearest_repository_wins_over_a_stray_co_cli_folder_above() {
    // `<tmp>/outer/.co-cli` is a stray folder; the repository `<tmp>/outer/repo` has only `.git`.
    let t = TestEnv::under("outer").env("KB_NOW", NOW).discovering_root();
    let stray = t.base.join(".co-cli");
    std::fs::create_dir_all(&stray).unwrap();
    t.kb(&["init"]).ok();
    assert!(t.root().join(".co-cli/knowledge/context.md").is_file(), "kb init wrote into the repository");
    t.kb(&["save", "We deploy on Fridays"]).ok();
    assert_eq!(t.ids(), vec![1]);
    assert_eq!(std::fs::read_dir(&stray).unwrap().count(), 0, "nothing went into the stray folder");
}

#[test]
fn outside_any_repository_reads_warn_and_writes_refuse() {
    let Some(mut t) = TestEnv::markerless() else { return };
    std::fs::remove_dir_all(t.root().join(".git")).unwrap();
    t = t.env("KB_NOW", NOW);
    let run = t.kb(&["save", "stray text"]).err();
    assert!(run.stderr.contains("no repository or .co-cli/ folder here or above"), "{run:?}");
    assert!(run.stderr.contains("kb init") && run.stderr.contains("--root"), "{run:?}");
    assert!(!t.root().join(".co-cli").exists(), "a refused write creates nothing");
    for args in [&["forget", "1"][..], &["protect", "1"], &["compile"], &["vote", "x", "up", "--reason", "r"]] {
        t.kb(args).err();
    }
    assert!(!t.root().join(".co-cli").exists());
    let run = t.kb(&["list"]).ok();
    assert!(run.stderr.contains("warning: no repository or .co-cli/ folder here or above"), "{run:?}");
    // A dry run writes nothing, so it may look.
    t.kb(&["save", "--dry-run", "stray text"]).ok();
    // kb init is the one write that may create `.co-cli/` here; afterwards it is the root.
    t.kb(&["init"]).ok();
    t.kb(&["save", "now it has a home"]).ok();
    assert_eq!(t.ids(), vec![1]);
}

#[test]
fn config_and_check_name_the_root_and_the_settings_files() {
    let t = TestEnv::pinned();
    let project = t.write(".co-cli/settings.json", r#"{"memory_max_count": 50}"#);
    let out = t.kb(&["config"]).ok().stdout;
    assert!(out.starts_with(&format!("root: {}\n", t.root().display())), "{out}");
    assert!(out.contains(&format!("settings: {}\n", project.display())), "{out}");
    assert!(out.contains("/.config/co-cli/settings.json (not found)"), "{out}");
    let out = t.kb(&["check"]).ok().stdout;
    assert!(out.starts_with(&format!("root: {}\n", t.root().display())), "{out}");
    let v = t.kb(&["--json", "check"]).ok().json();
    assert_eq!(v["root"], t.root().display().to_string());
    assert_eq!(v["settings_files"].as_array().unwrap().len(), 2, "{v}");
}

#[test]
fn empty_results_name_the_root() {
    let t = TestEnv::pinned();
    let root = t.root().display().to_string();
    assert_eq!(t.kb(&["list"]).ok().stdout, format!("No memories saved yet in {root}.\n"));
    let out = t.kb(&["recall", "anything"]).ok().stdout;
    assert_eq!(out, format!("No memories found matching 'anything' in {root}\n"));
}

#[test]
fn recall_matches_every_word_anywhere() {
    let t = TestEnv::pinned();
    t.kb(&["save", "CI runs cargo nextest on every push", "-t", "build"]).ok();
    t.kb(&["save", "We use nextest locally too"]).ok();
    let ids = |q: &str| -> Vec<u64> {
        let v = t.kb(&["--json", "recall", "--exact", q]).ok().json();
        let mut ids: Vec<u64> = v["results"].as_array().unwrap().iter().map(|r| r["id"].as_u64().unwrap()).collect();
        ids.sort();
        ids
    };
    assert_eq!(ids("nextest CI"), vec![1], "words in any order");
    assert_eq!(ids("NEXTEST"), vec![1, 2]);
    assert_eq!(ids("nextest build"), vec![1], "a word may match a tag");
    assert_eq!(ids("nextest deploy"), Vec::<u64>::new(), "every word must match");
    assert_eq!(ids("  nextest   locally "), vec![2]);
}

#[test]
fn recall_of_zero_results_is_a_usage_error() {
    let t = TestEnv::pinned();
    t.kb(&["recall", "x", "-n", "0"]).usage();
    t.kb(&["recall", "x", "-n", "-1"]).usage();
    t.kb(&["recall", "x", "-n", "1"]).ok();
}

#[test]
fn a_consolidating_save_shows_the_score_and_what_it_replaced() {
    let t = TestEnv::pinned();
    t.kb(&["save", "The api service listens on port 8080"]).ok();
    let run = t.kb(&["save", "The api service now listens on port 8080"]).ok();
    assert!(run.stdout.starts_with("✓ Updated memory 1 (consolidated duplicate)\nLocation: "), "{run:?}");
    assert!(run.stdout.contains("\nSimilarity: "), "{run:?}");
    assert!(run.stdout.ends_with("\nReplaced: The api service listens on port 8080\n"), "{run:?}");
    let v = t.kb(&["--json", "save", "The api service now listens on port 8080 only"]).ok().json();
    assert_eq!(v["action"], "consolidated");
    assert_eq!(v["replaced"], "The api service now listens on port 8080");
    assert!(v["similarity"].as_f64().unwrap() >= 85.0, "{v}");
    let v = t.kb(&["--json", "save", "--dry-run", "The api service now listens on port 8080, only"]).ok().json();
    assert_eq!(
        (v["action"].as_str(), v["replaced"].as_str()),
        (Some("would_consolidate"), Some("The api service now listens on port 8080 only"))
    );
    // A new memory replaces nothing.
    let v = t.kb(&["--json", "save", "Something else entirely"]).ok().json();
    assert_eq!(v["replaced"], serde_json::Value::Null);
}

#[test]
fn no_dedup_saves_a_new_memory_regardless() {
    let t = TestEnv::pinned();
    t.kb(&["save", "The api service listens on port 8080"]).ok();
    let v = t.kb(&["--json", "save", "--no-dedup", "The api service listens on port 8080"]).ok().json();
    assert_eq!((v["action"].as_str(), v["memory_id"].as_u64()), (Some("saved"), Some(2)));
    assert_eq!(t.ids(), vec![1, 2]);
    assert_eq!(t.show(1)["content"], "The api service listens on port 8080", "the first memory is untouched");
}

#[test]
fn a_copilot_consolidation_shows_the_fact_it_replaced() {
    let t = TestEnv::pinned();
    let save = |fact: &str| {
        t.kb(&["--json", "save", "--store", "copilot", "--subject", "ports", "--reason", "r", fact]).ok().json()
    };
    save("The api service listens on port 8080");
    let v = save("The api service now listens on port 8080");
    assert_eq!(
        (v["action"].as_str(), v["replaced"].as_str()),
        (Some("consolidated"), Some("The api service listens on port 8080"))
    );
    // A different port is a different fact: a new record, and the near miss names the old one.
    let v = save("The api service now listens on port 8081");
    assert_eq!(
        (v["action"].as_str(), v["similar_to"]["why"].as_str()),
        (Some("saved"), Some("different facts")),
        "{v}"
    );
    assert_eq!(v["similar_to"]["only_in_existing"], serde_json::json!(["8080"]));
}

#[test]
fn an_integer_id_always_means_a_markdown_memory() {
    let t = TestEnv::pinned();
    t.write(
        ".github/copilot-memories.jsonl",
        "{\"id\":\"5\",\"subject\":\"s\",\"fact\":\"a record\",\"citations\":[],\"reason\":\"r\"}\n",
    );
    t.kb(&["save", "one"]).ok();
    let run = t.kb(&["forget", "5"]).err();
    assert!(run.stderr.contains("memory 5 not found"), "{run:?}");
    t.kb(&["show", "5"]).err();
    assert!(t.read(&t.root().join(".github/copilot-memories.jsonl")).contains("a record"), "the record is untouched");
    // The record is reached in its own store.
    assert_eq!(t.kb(&["--json", "show", "--store", "copilot", "5"]).ok().json()["fact"], "a record");
    t.kb(&["forget", "--store", "copilot", "5"]).ok();
}

#[test]
fn a_vote_count_at_the_maximum_saturates() {
    let t = TestEnv::pinned();
    let max = u64::MAX;
    t.write(
        ".github/copilot-memories.jsonl",
        &format!("{{\"id\":\"m1\",\"subject\":\"s\",\"fact\":\"f\",\"citations\":[],\"reason\":\"r\",\"votes\":{{\"up\":{max},\"down\":0}}}}\n"),
    );
    let v = t.kb(&["--json", "vote", "m1", "up", "--reason", "again"]).ok().json();
    assert_eq!(v["votes"]["up"].as_u64(), Some(max), "{v}");
}

#[test]
fn printing_into_a_closed_pipe_ends_quietly() {
    let t = TestEnv::pinned();
    let dir = t.memories();
    std::fs::create_dir_all(&dir).unwrap();
    for id in 1..=3000u64 {
        let text = format!("Memory number {id} about the build and the deploy pipeline of the service");
        std::fs::write(
            dir.join(format!("{id:03}-m.md")),
            format!("---\ncreated: '2026-01-01T00:00:00+00:00'\nid: {id}\ntags: []\n---\n\n{text}\n"),
        )
        .unwrap();
    }
    for args in [&["list"][..], &["--json", "list"]] {
        let mut child =
            t.command(args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
        // Read one line, then close the pipe, as `kb list | head -1` does.
        {
            use std::io::BufRead;
            let mut first = String::new();
            std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
            assert!(!first.is_empty());
        }
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    }
}

#[test]
fn config_set_and_unset_edit_one_key_and_keep_the_rest() {
    let t = TestEnv::pinned();
    let path = t.write(".co-cli/settings.json", "{\n  \"zeta\": \"co-cli's own\",\n  \"memory_max_count\": 300\n}\n");
    let run = t.kb(&["config", "set", "context_targets", r#"["AGENTS.md","CLAUDE.md"]"#]).ok();
    assert!(
        run.stdout.starts_with("✓ Set context_targets = [\"AGENTS.md\",\"CLAUDE.md\"] in .co-cli/settings.json"),
        "{run:?}"
    );
    t.kb(&["config", "set", "memory_decay_strategy", "cut"]).ok();
    t.kb(&["config", "set", "memory_max_count", "50"]).ok();
    assert_eq!(
        t.read(&path),
        "{\n  \"zeta\": \"co-cli's own\",\n  \"memory_max_count\": 50,\n  \"context_targets\": [\"AGENTS.md\",\"CLAUDE.md\"],\n  \"memory_decay_strategy\": \"cut\"\n}\n"
    );
    let v = t.kb(&["--json", "config"]).ok().json();
    assert_eq!(v["memory_max_count"]["value"], 50);
    assert_eq!(v["context_targets"]["value"], serde_json::json!(["AGENTS.md", "CLAUDE.md"]));
    // Validated against the setting's range; nothing written when invalid.
    let before = t.read(&path);
    let run = t.kb(&["config", "set", "memory_max_count", "5"]).err();
    assert!(run.stderr.contains("memory_max_count") && run.stderr.contains("≥ 10"), "{run:?}");
    let run = t.kb(&["config", "set", "memory_maxcount", "50"]).err();
    assert!(run.stderr.contains("unknown setting") && run.stderr.contains("memory_max_count"), "{run:?}");
    t.kb(&["config", "set", "context_targets", "AGENTS.md"]).err();
    assert_eq!(t.read(&path), before);
    let v = t.kb(&["--json", "config", "unset", "memory_max_count"]).ok().json();
    assert_eq!((v["changed"].as_bool(), v["value"].is_null()), (Some(true), true));
    assert!(!t.read(&path).contains("memory_max_count") && t.read(&path).contains("zeta"));
    let run = t.kb(&["config", "unset", "memory_max_count"]).ok();
    assert!(run.stdout.contains("is not set"), "{run:?}");
}

#[test]
fn config_set_global_writes_the_global_file() {
    let t = TestEnv::pinned();
    t.kb(&["config", "set", "--global", "memory_dedup_threshold", "90"]).ok();
    let global = t.home().join(".config/co-cli/settings.json");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&t.read(&global)).unwrap()["memory_dedup_threshold"], 90);
    let v = t.kb(&["--json", "config"]).ok().json();
    assert_eq!(v["memory_dedup_threshold"]["source"], global.display().to_string());
    assert!(!t.root().join(".co-cli/settings.json").exists());
}

#[test]
fn config_keeps_printing_the_table_when_a_value_is_invalid() {
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_DECAY_STRATEGY", "shred");
    let run = t.kb(&["config"]).err();
    let line = run.stdout.lines().find(|l| l.starts_with("memory_decay_strategy")).unwrap_or_else(|| panic!("{run:?}"));
    assert!(line.contains("invalid"), "{line}");
    assert!(run.stdout.lines().any(|l| l.starts_with("memory_max_count") && l.contains("200")), "{run:?}");
    assert!(run.stderr.contains("CO_CLI_MEMORY_DECAY_STRATEGY") && run.stderr.contains("shred"), "{run:?}");
    let run = t.kb(&["--json", "config"]);
    assert_eq!(run.code, 1);
    let v = run.json();
    assert!(v["memory_decay_strategy"]["invalid"].as_str().unwrap().contains("shred"), "{v}");
    assert_eq!(v["memory_decay_strategy"]["value"], "summarize", "the value in effect");
}

#[test]
fn init_prints_the_next_steps() {
    let t = TestEnv::pinned();
    let out = t.kb(&["init"]).ok().stdout;
    assert!(
        out.contains("Next steps:") && out.contains("kb config set context_targets") && out.contains("kb mcp"),
        "{out}"
    );
    let again = t.kb(&["init"]).ok().stdout;
    assert!(!again.contains("Next steps:"), "{again}");
}

#[test]
fn a_fresh_init_compiles_no_placeholder_into_agents_md() {
    let t = TestEnv::pinned();
    let run = t.kb(&["init", "--agents-md"]).ok();
    assert!(run.stdout.contains("Created AGENTS.md with an empty context block"), "{run:?}");
    assert!(run.stdout.contains("(its guidance is a comment, which kb leaves out of what agents read)"), "{run:?}");
    assert!(run.stdout.contains("Compile it into AGENTS.md:\n       kb compile "), "{run:?}");
    t.kb(&["compile"]).ok();
    let agents = t.root().join("AGENTS.md");
    let context = t.root().join(".co-cli/knowledge/context.md");
    assert_eq!(t.read(&agents), "<!-- kb:context:begin -->\n<!-- kb:context:end -->\n");
    assert_eq!(t.read(&t.root().join(".co-cli/knowledge/compiled.md")), "");
    assert_eq!(t.kb(&["context"]).ok().stdout, "");
    // The template's guidance is in context.md, for the person who fills it in.
    let template = t.read(&context);
    assert!(template.contains("## Conventions") && template.contains("Keep it short"), "{template}");
    // What they write below it is compiled, and the guidance still is not.
    std::fs::write(&context, format!("{template}\n## Commands\n\n- `make test` runs everything.\n")).unwrap();
    // (a Makefile with that target: else the context file is stale, and compile exits 1)
    t.write("Makefile", "test:\n\tcargo test\n");
    t.kb(&["compile"]).ok();
    assert_eq!(
        t.read(&agents),
        "<!-- kb:context:begin -->\n## Internal Knowledge\n\n### Project Context\n\n## Commands\n\n\
         - `make test` runs everything.\n<!-- kb:context:end -->\n"
    );
    t.kb(&["check"]).ok();
}

#[test]
fn every_command_has_examples_in_its_help() {
    let t = TestEnv::pinned();
    let commands = [
        "init",
        "save",
        "recall",
        "list",
        "show",
        "forget",
        "protect",
        "unprotect",
        "check",
        "config",
        "vote",
        "export",
        "import",
        "context",
        "compile",
        "watch",
        "mcp",
        "decision",
    ];
    for c in commands {
        let out = t.kb(&[c, "--help"]).ok().stdout;
        assert!(out.contains("Examples:\n  kb ") || out.contains("Examples:\n  claude "), "{c}: {out}");
    }
}

#[test]
fn completions_for_every_shell_and_a_man_page() {
    let t = TestEnv::pinned();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let run = t.kb(&["completions", shell]).ok();
        assert!(run.stdout.contains("kb") && run.stdout.contains("recall"), "{shell}: {run:?}");
        assert!(run.stderr.is_empty(), "{shell}: {run:?}");
    }
    t.kb(&["completions", "tcsh"]).usage();
    let man = t.kb(&["manpage"]).ok().stdout;
    assert!(man.contains(".TH kb 1") && man.contains("recall"), "{man}");
}

#[test]
fn the_man_page_refers_only_to_pages_that_exist() {
    let t = TestEnv::pinned();
    let man = t.kb(&["manpage"]).ok().stdout;
    assert!(!man.contains("(1)"), "the single page names no other page: {man}");
    assert!(
        man.contains(".SH COMMANDS") && man.contains("\\fBkb session\\fR") && man.contains("kb manpage \\-\\-dir"),
        "{man}"
    );
    // With --dir, a page per command: every page a page refers to is written.
    let dir = t.dir.path().join("man1");
    std::fs::create_dir_all(&dir).unwrap();
    t.kb(&["manpage", "--dir", dir.to_str().unwrap()]).ok();
    let pages: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(pages.contains(&"kb.1".to_string()) && pages.contains(&"kb-session-start.1".to_string()), "{pages:?}");
    let mut references = 0;
    for page in &pages {
        let text = std::fs::read_to_string(dir.join(page)).unwrap();
        for name in text.lines().filter_map(|l| l.strip_suffix("(1)")) {
            let file = format!("{}.1", name.replace("\\-", "-"));
            assert!(pages.contains(&file), "{page} refers to {file}");
            references += 1;
        }
    }
    assert!(references > 20, "the pages refer to the commands' pages: {references}");
}

#[test]
fn json_errors_are_one_json_document_on_stdout() {
    let t = TestEnv::pinned();
    let kind = |run: &Run| -> (String, String) {
        let v = run.json();
        (v["error"]["kind"].as_str().unwrap().to_string(), v["error"]["message"].as_str().unwrap().to_string())
    };
    let run = t.kb(&["--json", "show", "99"]).err();
    assert_eq!(kind(&run), ("not_found".into(), "memory 99 not found".into()));
    assert!(run.stderr.contains("error: memory 99 not found"), "the usual line on stderr too: {run:?}");
    let run = t.kb(&["--json", "frobnicate"]).usage();
    assert_eq!(kind(&run).0, "usage");
    assert!(kind(&run).1.contains("frobnicate"), "{run:?}");
    let run = t.kb(&["--json", "list", "--store", "copilot", "--type", "learning"]).usage();
    assert_eq!(kind(&run).0, "usage", "kb's own usage errors too");
    let run = t.kb(&["--json", "session", "update", "nothing open"]).err();
    assert_eq!(kind(&run).0, "not_found", "{run:?}");
    let run = t.kb(&["--json", "save", "--type", "learning", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"]).err();
    assert_eq!(kind(&run).0, "secret", "{run:?}");
    t.kb(&["session", "start", "one"]).ok();
    let run = t.kb(&["--json", "session", "start", "two"]).err();
    assert_eq!(kind(&run).0, "conflict", "{run:?}");
    // Without --json, stdout stays empty.
    assert_eq!(t.kb(&["show", "99"]).err().stdout, "");
}

/// Runs kb with `args` and the environment variables `vars` added.
fn kb_with(t: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Run {
    let mut cmd = t.command(args);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    run_command(cmd, None)
}

/// Writes an executable editor script into the test's base folder and returns its path.
fn editor(t: &TestEnv, name: &str, body: &str) -> String {
    let path = t.base.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

#[test]
fn update_replaces_the_text_keeps_the_frontmatter_and_undoes() {
    let t = TestEnv::pinned().env("KB_NOW", NOW);
    t.kb(&["save", "CI runs cargo test", "-t", "build", "--type", "pattern"]).ok();
    let before = t.read(&t.file_of(1));
    let later = "2026-11-25T09:00:00Z";
    let v = kb_with(&t, &["--json", "update", "1", "CI runs cargo nextest"], &[("KB_NOW", later)]).ok().json();
    assert_eq!((v["id"].as_u64(), v["updated"].as_bool()), (Some(1), Some(true)), "{v}");
    let m = t.show(1);
    assert_eq!(m["content"], "CI runs cargo nextest");
    assert_eq!(m["tags"], serde_json::json!(["build"]));
    let after = t.read(&t.file_of(1));
    assert!(after.contains("type: pattern") && after.contains("updated: '2026-11-25T09:00:00+00:00'"), "{after}");
    let out = t.kb(&["update", "1", "CI runs cargo nextest"]).ok().stdout;
    assert!(out.starts_with("Memory 1 is unchanged"), "{out}");
    let out = t.kb_stdin(&["update", "1", "-"], Some("from stdin\n")).ok().stdout;
    assert!(out.starts_with("✓ Updated memory 1"), "{out}");
    assert_eq!(t.show(1)["content"], "from stdin");
    t.kb(&["undo"]).ok();
    t.kb(&["undo"]).ok();
    assert_eq!(t.read(&t.file_of(1)), before, "two undos bring back the first text byte for byte");
    let run = t.kb(&["update", "1", &format!("token {}", "ghp_abcdefghijklmnopqrstuvwxyz0123456789")]).err();
    assert!(run.stderr.contains("github-pat"), "{run:?}");
    assert_eq!(t.read(&t.file_of(1)), before, "a refused secret changes nothing");
    assert!(t.kb(&["update", "9", "x"]).err().stderr.contains("memory 9 not found"));
    assert!(t.kb(&["update", "1", "   "]).err().stderr.contains("the text is empty"));
    assert!(t.kb(&["update", "mem-1a2b", "x"]).err().stderr.contains("is a Copilot record"));
}

#[test]
fn edit_keeps_a_valid_edit_and_refuses_a_broken_one_with_the_file_as_it_was() {
    let t = TestEnv::pinned().env("KB_NOW", NOW);
    t.kb(&["save", "CI runs cargo test", "-t", "build"]).ok();
    let good = editor(&t, "good.sh", r#"sed -i 's/cargo test/cargo nextest/' "$1""#);
    let out = kb_with(&t, &["edit", "1"], &[("EDITOR", &good)]).ok().stdout;
    assert!(out.starts_with("✓ Updated memory 1"), "{out}");
    assert_eq!(t.show(1)["content"], "CI runs cargo nextest");
    let kept = t.read(&t.file_of(1));
    // $VISUAL serves when $EDITOR is not set.
    let noop = editor(&t, "noop.sh", "true");
    let out = kb_with(&t, &["edit", "1"], &[("EDITOR", ""), ("VISUAL", &noop)]).ok().stdout;
    assert!(out.starts_with("Memory 1 is unchanged"), "{out}");
    for (script, problem) in [
        (r#"sed -i 's/^id: 1/id: [oops/' "$1""#, "malformed YAML"),
        (r#"sed -i 's/^id: 1/id: 2/' "$1""#, "keep `id: 1`"),
        (r#"printf '\377\376' > "$1""#, "not valid UTF-8"),
        (r#"echo "token ghp_abcdefghijklmnopqrstuvwxyz0123456789" >> "$1""#, "github-pat"),
        ("exit 3", "exited with"),
    ] {
        let ed = editor(&t, "bad.sh", script);
        let run = kb_with(&t, &["edit", "1"], &[("EDITOR", &ed)]).err();
        assert!(run.stderr.contains(problem), "{script}: {run:?}");
        assert_eq!(t.read(&t.file_of(1)), kept, "{script}: the file is as it was");
        if problem != "exited with" {
            assert!(run.stderr.contains("your edit is in "), "the draft is named: {run:?}");
        }
    }
    t.kb(&["undo"]).ok();
    assert_eq!(t.show(1)["content"], "CI runs cargo test", "an edit is one undo entry");
}
