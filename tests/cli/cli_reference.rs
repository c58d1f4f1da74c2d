//! `docs/cli-reference.md`: every command's `--help`, generated from the binary and checked.
//!
//! The test walks the command tree from `kb --help` (each `Commands:` list names the next level),
//! renders one section per command and compares the result with the committed file. When they
//! differ it fails and says how to regenerate; with `KB_UPDATE_DOCS=1` it writes the file instead
//! (jj's `test_generate_md_cli_help` does the same for its CLI reference). The guide's examples are
//! checked by `guide.rs`.
// The reference documents the full build (`kb mcp` included): without `mcp` only the helpers the
// guide shares are used.
#![cfg_attr(not(feature = "mcp"), allow(dead_code))]

use crate::common::*;
use std::path::PathBuf;

/// The generated file, relative to the repository.
const REFERENCE: &str = "docs/cli-reference.md";

/// How to regenerate the committed docs; printed when they are stale.
pub const REGENERATE: &str = "KB_UPDATE_DOCS=1 cargo test --all-features --test cli";

/// Returns whether the docs tests should write the files instead of comparing them.
pub fn updating_docs() -> bool {
    std::env::var_os("KB_UPDATE_DOCS").is_some_and(|v| v == "1")
}

/// Returns the path of a file of this repository.
pub fn repo_file(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Returns a short description of the first line where `want` and `got` differ.
pub fn first_difference(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    for i in 0..w.len().max(g.len()) {
        if w.get(i) != g.get(i) {
            return format!(
                "line {}:\n  committed: {}\n  generated: {}",
                i + 1,
                w.get(i).map_or("(end of file)".into(), |l| format!("{l:?}")),
                g.get(i).map_or("(end of file)".into(), |l| format!("{l:?}")),
            );
        }
    }
    "only in line ends".into()
}

/// Returns the names listed under `Commands:` in a help text, in order, without `help`.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// Returns `kb PATH... --help`, checking it succeeded.
fn help_of(t: &TestEnv, path: &[String]) -> String {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    // clap is built without `wrap_help`, so the help never depends on the terminal's width; a
    // fixed COLUMNS keeps it so should that feature ever be turned on.
    let mut cmd = t.command(&args);
    cmd.env("COLUMNS", "100");
    let run = run_command(cmd, None);
    assert_eq!(run.code, 0, "kb {} --help failed: {run:?}", path.join(" "));
    assert_eq!(run.stderr, "", "kb {} --help wrote to stderr", path.join(" "));
    run.stdout
}

/// Returns every command path, depth first in the order the help lists them, with its help.
fn command_tree(t: &TestEnv) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    let mut stack = vec![Vec::new()];
    while let Some(path) = stack.pop() {
        let help = help_of(t, &path);
        for name in subcommands(&help).into_iter().rev() {
            let mut child = path.clone();
            child.push(name);
            stack.push(child);
        }
        out.push((path, help));
    }
    out
}

/// Returns the markdown of the reference.
fn render(tree: &[(Vec<String>, String)]) -> String {
    let title = |path: &[String]| {
        if path.is_empty() { "kb".to_string() } else { format!("kb {}", path.join(" ")) }
    };
    let mut md = String::new();
    md.push_str("<!-- Generated from the `--help` of every command by tests/cli/cli_reference.rs; do not edit.\n");
    md.push_str(&format!("     Regenerate: {REGENERATE} cli_reference -->\n\n"));
    md.push_str("# Command reference\n\n");
    md.push_str(
        "Every command's `--help`, exactly as `kb` prints it: its flags, their values and defaults, and\n\
         examples. What the commands are for, with worked examples, is in [commands.md](commands.md); the\n\
         rules behind them are in [behaviour.md](behaviour.md), the files and JSON shapes in\n\
         [formats.md](formats.md).\n\n",
    );
    for (path, _) in tree {
        let depth = path.len().saturating_sub(1);
        let anchor = title(path).replace(' ', "-");
        md.push_str(&format!("{}- [{}](#{anchor})\n", "  ".repeat(depth), title(path)));
    }
    for (path, help) in tree {
        md.push_str(&format!("\n## {}\n\n```text\n{}\n```\n", title(path), help.trim_end()));
    }
    md
}

#[cfg(feature = "mcp")]
#[test]
fn the_command_reference_is_the_binarys_own_help() {
    let t = TestEnv::new();
    let tree = command_tree(&t);
    let names: Vec<String> = tree.iter().map(|(p, _)| p.join(" ")).collect();
    // The walk reached the nested commands, not only the top level.
    for want in ["save", "decision add", "session start", "board add", "config set"] {
        assert!(names.iter().any(|n| n == want), "no `kb {want}` in {names:?}");
    }
    let generated = render(&tree);
    let path = repo_file(REFERENCE);
    if updating_docs() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{REFERENCE} is not the binary's help ({}).\nRegenerate it with: {REGENERATE} cli_reference",
        first_difference(&committed, &generated)
    );
}
