//! Every command example of `README.md` is run, in order, and must exit 0; where the README shows
//! what a command prints, the output is compared.
//!
//! The README's conventions:
//!
//! - In a ```` ```console ```` block, a line `$ COMMAND` is a command and the lines under it, up to the
//!   next `$ ` line, are what it prints (stdout, then stderr), compared as [`crate::guide`] compares
//!   them: trailing blank lines aside, and a line `...` stands for any number of lines. A command
//!   with no line under it shows no output: its stdout is not compared, and it must print nothing
//!   on stderr (no warning).
//! - In a ```` ```sh ```` (or `bash`, `shell`) block, every line is a command; `#` starts a comment.
//! - A ```` ```markdown ```` block is the context file the reader writes by hand: the test writes it
//!   into `.co-cli/knowledge/context.md` when the sequence reaches it.
//! - A command is `kb ARGS`, optionally piped into `tail -N` or redirected with `> FILE` (`~` is
//!   HOME), `cat FILE...` (relative to the root), or `cargo run [--release] -- ARGS`: kb from a
//!   clone of this repository, run as `kb ARGS` in a folder that holds a copy of
//!   `example-knowledge/`, with the clock of the guide. Any other command, or one that runs until
//!   it is stopped, is in [`SKIPPED`] with the reason; the test fails when an entry there is no
//!   longer in the README, and when a block of another kind holds a `$ ` or `kb ` line.
//!
//! - A command whose line ends in the comment `# exits 1` must exit 1 (`kb audit` finding a stale
//!   fact); every other command must exit 0.
//!
//! The other commands run in one new repository (a `.git` folder and a `Makefile` with the targets
//! its context file names, as the README's "first five minutes" start), with the clock pinned to [`README_NOW`]; its root is shown as
//! `/tmp/myrepo`. With `KB_UPDATE_DOCS=1` the test writes the new outputs into the README instead of
//! failing (an output that already matches is left as written, `...` included).

use crate::cli_reference::{REGENERATE, repo_file, updating_docs};
use crate::common::*;
use crate::guide::{
    GUIDE_NOW, Token, matches, shown_as, split_pipe, tokens, trimmed_lines, trimmed_lines_of, write_outputs,
};

/// The README, relative to the repository.
const README: &str = "README.md";

/// The commands of the README the test does not run, as written (comment left out), and why.
const SKIPPED: [(&str, &str); 5] = [
    ("cargo install --locked --path .", "installs kb from the clone; the tests run the kb they built"),
    ("export PATH=$HOME/.cargo/bin:$PATH", "changes the reader's shell; the tests run the kb they built"),
    ("kb --version", "prints the installed kb's version, which the tests do not install"),
    ("cargo test --all-features", "runs this test suite"),
    ("kb watch", "runs until Ctrl-C; tests/cli/watch.rs runs it"),
];

/// The pinned clock of the README's repository.
const README_NOW: &str = "2026-11-24T20:23:24+00:00";

/// How the README shows the temporary root and HOME.
const SHOWN_ROOT: &str = "/tmp/myrepo";
const SHOWN_HOME: &str = "/home/me";

/// The Makefile of the README's repository: the targets its context file names.
const README_MAKEFILE: &str = "test:\n\tcargo test\nlint:\n\tcargo clippy\n";

/// The project context file, which the README's ```markdown block is.
const CONTEXT: &str = ".co-cli/knowledge/context.md";

/// One step of the README, in order.
enum Step {
    /// A command, with the 1-based line it is on and, for a console block, the 0-based range of
    /// the lines of output shown under it (empty: none shown).
    Command { command: String, line: usize, shown: (usize, usize) },
    /// The context file the reader writes, and the 1-based line its block starts on.
    Edit { text: String, line: usize },
}

/// Returns the steps of `text` (the README), in order.
fn steps(text: &str) -> Vec<Step> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(info) = lines[i].trim_start().strip_prefix("```") else {
            i += 1;
            continue;
        };
        let (open, info) = (i, info.trim());
        i += 1;
        let start = i;
        while i < lines.len() && lines[i].trim() != "```" {
            i += 1;
        }
        assert!(i < lines.len(), "{README}:{}: a code block is not closed", open + 1);
        let body = &lines[start..i];
        i += 1;
        match info {
            "console" => console(body, start, &mut out),
            "sh" | "bash" | "shell" => {
                for (n, line) in body.iter().enumerate() {
                    let command = line.trim();
                    if !command.is_empty() && !command.starts_with('#') {
                        out.push(Step::Command { command: command.to_string(), line: start + n + 1, shown: (0, 0) });
                    }
                }
            }
            "markdown" => {
                let file: String = body.iter().map(|l| format!("{l}\n")).collect();
                assert!(
                    file.starts_with("---\nversion:"),
                    "{README}:{}: a ```markdown block is the {CONTEXT} the reader writes, with its frontmatter",
                    open + 1
                );
                out.push(Step::Edit { text: file, line: open + 1 });
            }
            _ => {
                if let Some(n) =
                    body.iter().position(|l| l.trim_start().starts_with("$ ") || l.trim_start().starts_with("kb "))
                {
                    panic!(
                        "{README}:{}: a command in a ```{info} block is never run: make it console or sh",
                        start + n + 1
                    );
                }
            }
        }
    }
    out
}

/// Adds the commands of a console block whose lines are `body`, starting at 0-based line `start`.
fn console(body: &[&str], start: usize, out: &mut Vec<Step>) {
    for (n, line) in body.iter().enumerate() {
        let at = start + n;
        if let Some(command) = line.strip_prefix("$ ") {
            out.push(Step::Command { command: command.to_string(), line: at + 1, shown: (at + 1, at + 1) });
            continue;
        }
        match out.last_mut() {
            Some(Step::Command { shown, .. }) if shown.1 == at => shown.1 = at + 1,
            _ => panic!("{README}:{}: output before the first `$ ` line of a console block", at + 1),
        }
    }
}

/// Returns the command's words, comment left out, as one line: how [`SKIPPED`] names it.
fn words(command: &str) -> String {
    let words: Vec<String> = tokens(command)
        .into_iter()
        .map(|t| match t {
            Token::Word(w) => w,
            Token::Pipe => "|".into(),
        })
        .collect();
    words.join(" ")
}

/// Runs one command of the README: in `repo`, or for `cargo run` in `clone`. Returns what it
/// printed on stdout (what the pipe or the redirection left of it) and on stderr, or why it failed.
fn run(repo: &TestEnv, clone: &TestEnv, command: &str) -> Result<(String, String), String> {
    let (first, second) = split_pipe(tokens(command));
    let (mut words, tail) = match (first.is_empty(), second.as_slice()) {
        (true, _) => (second, None),
        (false, [tail, n]) if tail == "tail" && n.starts_with('-') => {
            (first, Some(n[1..].parse::<usize>().map_err(|_| format!("not a line count: {n}"))?))
        }
        _ => return Err("a README command may only pipe into `tail -N`".into()),
    };
    let redirect = match words.iter().position(|w| w == ">") {
        Some(i) if i + 2 == words.len() => Some(words.split_off(i).pop().unwrap()),
        Some(_) => return Err("`>` must be followed by one file".into()),
        None => None,
    };
    let (env, args): (&TestEnv, &[String]) = match words.as_slice() {
        [kb, args @ ..] if kb == "kb" => (repo, args),
        [cat, files @ ..] if cat == "cat" && tail.is_none() && redirect.is_none() => {
            return Ok((files.iter().map(|f| repo.read(&repo.root().join(f))).collect(), String::new()));
        }
        [cargo, run, rest @ ..] if cargo == "cargo" && run == "run" => {
            let rest = match rest {
                [release, rest @ ..] if release == "--release" => rest,
                _ => rest,
            };
            match rest {
                [dashes, args @ ..] if dashes == "--" => (clone, args),
                _ => return Err("`cargo run` takes `[--release] -- ARGS`".into()),
            }
        }
        _ => return Err("not a command this test can run; if it cannot be, add it to SKIPPED with why".into()),
    };
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = run_command(env.command(&args), None);
    let expected = if command.trim_end().ends_with("# exits 1") { 1 } else { 0 };
    if run.code != expected {
        return Err(format!("exit {}\n{}{}", run.code, run.stdout, run.stderr));
    }
    let mut stdout = run.stdout;
    if let Some(n) = tail {
        let lines: Vec<&str> = stdout.lines().collect();
        stdout = lines[lines.len().saturating_sub(n)..].iter().map(|l| format!("{l}\n")).collect();
    }
    if let Some(file) = redirect {
        let path = match file.strip_prefix("~/") {
            Some(rest) => env.home().join(rest),
            None => env.root().join(&file),
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &stdout).unwrap();
        if stdout.is_empty() {
            return Err(format!("wrote nothing into {file}"));
        }
        stdout.clear();
    }
    Ok((stdout, run.stderr))
}

#[test]
fn every_command_of_the_readme_runs_and_prints_what_it_shows() {
    let path = repo_file(README);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let steps = steps(&text);

    let repo = TestEnv::new().env("KB_NOW", README_NOW);
    // The reader's repository has the Makefile its context file names (`make test`, `make lint`):
    // else that file is stale, and every compile exits 1.
    repo.write("Makefile", README_MAKEFILE);
    let clone = TestEnv::new().env("KB_NOW", GUIDE_NOW);
    copy_tree(&repo_file("example-knowledge"), &clone.root().join("example-knowledge"));

    let mut skipped_seen = [false; SKIPPED.len()];
    // The commands that failed to run, and those that printed something else than shown.
    let (mut ran, mut errors, mut differs, mut updates) = (0, Vec::new(), Vec::new(), Vec::new());
    for step in &steps {
        let (command, line, shown) = match step {
            Step::Edit { text, line } => {
                assert!(repo.root().join(CONTEXT).is_file(), "{README}:{line}: {CONTEXT} is edited before it exists");
                repo.write(CONTEXT, text);
                continue;
            }
            Step::Command { command, line, shown } => (command, *line, *shown),
        };
        if let Some(i) = SKIPPED.iter().position(|(c, _)| *c == words(command)) {
            skipped_seen[i] = true;
            continue;
        }
        ran += 1;
        let got = match run(&repo, &clone, command) {
            // What the README does not show must not be a warning either.
            Ok((_, stderr)) if shown.0 == shown.1 && !stderr.is_empty() => {
                errors.push(format!("{README}:{line}: $ {command}\nprinted on stderr:\n{stderr}"));
                continue;
            }
            Ok(_) if shown.0 == shown.1 => continue,
            Ok((stdout, stderr)) => shown_as(&repo, &format!("{stdout}{stderr}"), SHOWN_ROOT, SHOWN_HOME),
            Err(why) => {
                errors.push(format!("{README}:{line}: $ {command}\n{why}"));
                continue;
            }
        };
        let want = trimmed_lines_of(&lines[shown.0..shown.1]);
        if matches(&want, &trimmed_lines(&got)) {
            continue;
        }
        differs.push(format!(
            "{README}:{line}: $ {command}\n--- the README shows\n{}\n--- kb printed\n{}",
            want.join("\n"),
            trimmed_lines(&got).join("\n")
        ));
        let end = shown.0 + want.len();
        updates.push(((shown.0, end), trimmed_lines(&got).iter().map(|l| l.to_string()).collect::<Vec<String>>()));
    }
    let gone: Vec<&str> = SKIPPED.iter().zip(skipped_seen).filter(|(_, seen)| !seen).map(|((c, _), _)| *c).collect();
    assert!(gone.is_empty(), "SKIPPED names commands that are no longer in {README}: {gone:?}");
    assert!(ran >= 15, "only {ran} commands of {README} ran");
    assert!(errors.is_empty(), "{} of the {ran} commands of {README} fail:\n\n{}", errors.len(), errors.join("\n\n"));
    if updating_docs() && !updates.is_empty() {
        write_outputs(&path, &lines, updates);
        return;
    }
    assert!(
        differs.is_empty(),
        "{} of the {ran} commands of {README} print something else:\n\n{}\n\nIf the new output is right, \
         update the README: {REGENERATE} readme",
        differs.len(),
        differs.join("\n\n")
    );
}

#[test]
fn readme_steps_are_read_by_its_conventions() {
    let text = "intro\n\n```sh\ncargo test   # all\n# a comment\n```\n\n```console\n$ kb init\n✓ Created\n\
                $ kb list\n```\n\n```markdown\n---\nversion: 1\n---\n\nBody\n```\n\n```json\n{}\n```\n";
    let got: Vec<String> = steps(text)
        .into_iter()
        .map(|s| match s {
            Step::Command { command, line, shown } => format!("{line}: {command} {shown:?}"),
            Step::Edit { line, .. } => format!("{line}: edit"),
        })
        .collect();
    assert_eq!(got, ["4: cargo test   # all (0, 0)", "9: kb init (9, 10)", "11: kb list (11, 11)", "14: edit"]);
    assert_eq!(words("cargo test   # all"), "cargo test");
}
