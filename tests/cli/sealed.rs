//! The tests are sealed: a `.co-cli/` folder above the temporary folder (`$TMPDIR` inside a co-cli
//! project, or a stray one in a parent folder) changes nothing. kb's root discovery would take it
//! over the test repository's `.git`, so `TestEnv` pins every command's root with `KB_ROOT`;
//! `.ci/run` also runs the whole suite below such a folder and checks that it stays empty.

use crate::common::*;
use std::path::{Path, PathBuf};

/// Returns every path below `dir`, relative to it, sorted.
fn tree(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
            let path = e.path();
            out.push(path.strip_prefix(root).unwrap().display().to_string());
            if e.file_type().unwrap().is_dir() {
                walk(root, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// The test repository at `<tmp>/outer/repo/` below a stray `<tmp>/outer/.co-cli/`; returns the
/// stray folder too.
fn below_a_stray_folder() -> (TestEnv, PathBuf) {
    let t = TestEnv::under("outer").env("KB_NOW", NOW);
    let stray = t.base.join(".co-cli");
    std::fs::create_dir(&stray).unwrap();
    (t, stray)
}

#[test]
fn the_stray_folder_is_a_root_kb_would_find() {
    // Shows the setup is real: from a folder below it with no marker of its own, root discovery
    // lands in the stray folder. (Whether it also wins over the repository's own `.git` is the
    // discovery rule's business; pinned tests do not depend on it.)
    let (t, stray) = below_a_stray_folder();
    let plain = t.base.join("plain");
    std::fs::create_dir(&plain).unwrap();
    let mut cmd = t.command(&["--json", "save", "--dry-run", "where would this go"]);
    cmd.env_remove("KB_ROOT").current_dir(&plain);
    let out = run_command(cmd, None).ok().json();
    let path = out["path"].as_str().unwrap();
    assert!(path.starts_with(&stray.display().to_string()), "{out}");
    assert!(tree(&stray).is_empty(), "a dry run wrote into the stray folder: {:?}", tree(&stray));
}

#[test]
fn a_co_cli_folder_above_the_repository_changes_nothing() {
    let (mut t, stray) = below_a_stray_folder();
    let root = t.root().display().to_string();

    t.kb(&["init"]).ok();
    let saved = t.kb(&["--json", "save", "we deploy on mondays", "-t", "ops"]).ok().json();
    assert!(saved["path"].as_str().unwrap().starts_with(&root), "{saved}");
    t.kb(&["save", "the build uses cargo nextest"]).ok();
    assert_eq!(t.ids().len(), 2);
    assert!(t.kb(&["recall", "deploy"]).ok().stdout.contains("we deploy on mondays"));
    assert_eq!(t.show(1)["content"], "we deploy on mondays");
    t.kb(&["protect", "1"]).ok();
    t.kb(&["unprotect", "1"]).ok();
    t.kb(&["check"]).ok();
    t.kb(&["config"]).ok();
    t.write(".co-cli/knowledge/context.md", "Project context: kb is a memory CLI.\n");
    assert!(t.kb(&["context"]).ok().stdout.contains("Project context"));
    t.kb(&["compile"]).ok();

    let copilot = t
        .kb(&["--json", "save", "--store", "copilot", "--subject", "build", "--reason", "r", "run make ci first"])
        .ok()
        .json();
    let id = copilot["memory_id"].as_str().unwrap();
    t.kb(&["vote", id, "up", "--reason", "it worked"]).ok();
    t.kb(&["list", "--store", "copilot"]).ok();
    t.kb(&["export", "--to", "copilot"]).ok();
    t.kb(&["import", "--from", "copilot"]).ok();
    t.kb(&["forget", "2"]).ok();

    // The pin holds from a subfolder too.
    std::fs::create_dir_all(t.root().join("src/deep")).unwrap();
    t.cwd = Some("src/deep".into());
    let deep = t.kb(&["--json", "save", "saved from deep in the tree"]).ok().json();
    assert!(deep["path"].as_str().unwrap().starts_with(&root), "{deep}");
    t.kb(&["list"]).ok();

    assert!(tree(&stray).is_empty(), "kb wrote into the stray folder above the repository: {:?}", tree(&stray));
    let files = tree(&t.root());
    for expected in [
        ".gitignore",
        ".co-cli/knowledge/context.md",
        ".co-cli/knowledge/compiled.md",
        ".github/copilot-memories.jsonl",
    ] {
        assert!(files.iter().any(|f| f == expected), "{expected} missing from the repository: {files:?}");
    }
    assert!(t.memory_files().len() >= 3, "{:?}", t.memory_files());
    assert!(!t.root().join("src/deep/.co-cli").exists());
}
