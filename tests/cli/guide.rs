//! The examples of `docs/commands.md` are run, and their output compared.
//!
//! The convention, which the guide states at its top:
//!
//! - A fenced block whose info string is `console` is an example; other blocks are not run.
//! - In it, a line `$ COMMAND` is a command, and the lines after it, up to the next `$ ` line or the
//!   end of the block, are what it prints: its stdout, then its stderr. Trailing blank lines are not
//!   compared. A command ending in ` \` continues on the next line.
//! - A line that is exactly `...` stands for any number of lines (none included), for output that
//!   is long or varies.
//! - COMMAND is `kb ARGS`, optionally after `NAME=VALUE` environment assignments and optionally fed
//!   by `echo TEXT |` (TEXT and a newline on stdin), or `cat FILE...` (relative to the root). Words
//!   are split as a shell splits them: single and double quotes, backslash escapes, `#` comments.
//!
//! Every command runs in sequence, in one copy of `example-knowledge/` at the root of a
//! [`TestEnv`] (a cleared environment, its own HOME, `.git/HEAD` on `main`), with the clock pinned
//! to [`GUIDE_NOW`]. The
//! temporary root and HOME are shown as `/home/me/tidepool` and `/home/me`. When an output differs
//! the test fails, naming each example; with `KB_UPDATE_DOCS=1` it writes the new outputs into the
//! guide instead (an example that already matches is left as written, `...` included).

use crate::cli_reference::{REGENERATE, repo_file, updating_docs};
use crate::common::*;

/// The guide, relative to the repository.
const GUIDE: &str = "docs/commands.md";

/// The pinned clock of the examples: after the newest file of `example-knowledge/` (its session
/// was last updated on 2026-11-24 at 10:05), so that nothing in it lies in the future.
pub const GUIDE_NOW: &str = "2026-11-24T12:00:00+00:00";

/// How the guide shows the temporary root and HOME.
const SHOWN_ROOT: &str = "/home/me/tidepool";
const SHOWN_HOME: &str = "/home/me";

/// One `$ ` command of a console block and the output the guide shows for it.
struct Example {
    /// The command as written (continuation lines joined).
    command: String,
    /// The line of the `$ ` line, 1-based, for messages.
    line: usize,
    /// The expected output's lines: indexes `expected.0..expected.1` of the guide's lines.
    expected: (usize, usize),
}

/// Returns the examples of every ```console block of `text`, in order.
fn examples(text: &str) -> Vec<Example> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<Example> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_end() != "```console" {
            i += 1;
            continue;
        }
        i += 1;
        let mut current: Option<Example> = None;
        while i < lines.len() && lines[i].trim_end() != "```" {
            let line = lines[i];
            if let Some(first) = line.strip_prefix("$ ") {
                out.extend(current.take());
                let at = i;
                let mut command = first.to_string();
                while command.ends_with(" \\") && i + 1 < lines.len() {
                    command.truncate(command.len() - 1);
                    i += 1;
                    command.push_str(lines[i].trim_start());
                }
                current = Some(Example { command, line: at + 1, expected: (i + 1, i + 1) });
            } else {
                let example = current.as_mut().unwrap_or_else(|| {
                    panic!("{GUIDE}:{}: output before the first `$ ` line of a console block", i + 1)
                });
                example.expected.1 = i + 1;
            }
            i += 1;
        }
        assert!(i < lines.len(), "{GUIDE}: a console block is not closed");
        out.extend(current);
        i += 1;
    }
    out
}

/// A word of a command line, or the pipe between two commands.
#[derive(Debug, PartialEq)]
pub enum Token {
    Word(String),
    Pipe,
}

/// Splits a command line as a POSIX shell does for the simple commands the guide uses.
pub fn tokens(line: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => out.extend(word.take().map(Token::Word)),
            '#' if word.is_none() => break,
            '|' => {
                out.extend(word.take().map(Token::Word));
                out.push(Token::Pipe);
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => panic!("unclosed ' in {line:?}"),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => w.push(c),
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => panic!("unclosed \" in {line:?}"),
                        },
                        Some(c) => w.push(c),
                        None => panic!("unclosed \" in {line:?}"),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    out.extend(word.map(Token::Word));
    out
}

/// Returns the words of `tokens` before and after its one pipe (no pipe: nothing before).
pub fn split_pipe(tokens: Vec<Token>) -> (Vec<String>, Vec<String>) {
    let mut parts: Vec<Vec<String>> = vec![Vec::new()];
    for t in tokens {
        match t {
            Token::Word(w) => parts.last_mut().unwrap().push(w),
            Token::Pipe => parts.push(Vec::new()),
        }
    }
    match parts.len() {
        1 => (Vec::new(), parts.pop().unwrap()),
        2 => {
            let after = parts.pop().unwrap();
            (parts.pop().unwrap(), after)
        }
        _ => panic!("more than one pipe"),
    }
}

/// Runs one command of the guide and returns what it printed: stdout, then stderr.
fn run(t: &TestEnv, command: &str) -> String {
    let root = t.root().display().to_string();
    let (feed, mut words) = split_pipe(tokens(command));
    let stdin = match feed.split_first() {
        None => None,
        Some((echo, text)) if echo == "echo" => Some(format!("{}\n", text.join(" "))),
        Some(_) => panic!("only `echo TEXT | kb ...` may pipe: {command:?}"),
    };
    if words.first().is_some_and(|w| w == "cat") {
        assert!(stdin.is_none(), "`cat` reads files, not stdin: {command:?}");
        return words[1..].iter().map(|f| t.read(&t.root().join(f))).collect();
    }
    let assignments = words.iter().take_while(|w| is_assignment(w)).count();
    let envs: Vec<String> = words.drain(..assignments).collect();
    assert!(
        words.first().is_some_and(|w| w == "kb"),
        "a guide example runs `kb`, `cat` or `echo ... | kb`: {command:?}"
    );
    let args: Vec<String> = words[1..].iter().map(|a| a.replace(SHOWN_ROOT, &root)).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut cmd = t.command(&args);
    for assignment in &envs {
        let (name, value) = assignment.split_once('=').unwrap();
        cmd.env(name, value);
    }
    let run = run_command(cmd, stdin.as_deref().map(str::as_bytes));
    format!("{}{}", run.stdout, run.stderr)
}

/// Returns whether `word` is a shell variable assignment (`NAME=VALUE`).
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Returns `output` as the guide shows it: the temporary root and HOME replaced.
fn shown(t: &TestEnv, output: &str) -> String {
    shown_as(t, output, SHOWN_ROOT, SHOWN_HOME)
}

/// Returns `output` with the temporary root and HOME of `t` written as `root` and `home`.
pub fn shown_as(t: &TestEnv, output: &str, root: &str, home: &str) -> String {
    let mut out = output.to_string();
    for (real, shown) in [(t.root(), root), (t.home(), home)] {
        if let Ok(canonical) = real.canonicalize() {
            out = out.replace(&canonical.display().to_string(), shown);
        }
        out = out.replace(&real.display().to_string(), shown);
    }
    out
}

/// Returns `text`'s lines without the trailing blank ones.
pub fn trimmed_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().collect();
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    lines
}

/// Returns whether `got` matches `want`, where a `...` line of `want` stands for any lines.
pub fn matches(want: &[&str], got: &[&str]) -> bool {
    match want.split_first() {
        None => got.is_empty(),
        Some((&"...", rest)) => (0..=got.len()).any(|skip| matches(rest, &got[skip..])),
        Some((line, rest)) => got.first() == Some(line) && matches(rest, &got[1..]),
    }
}

#[test]
fn the_shell_words_of_an_example() {
    let words = |line: &str| -> Vec<String> {
        tokens(line)
            .into_iter()
            .map(|t| match t {
                Token::Word(w) => w,
                Token::Pipe => "|".into(),
            })
            .collect()
    };
    assert_eq!(words(r#"kb save "a \"b\" c" 'd e' f\ g # note"#), ["kb", "save", "a \"b\" c", "d e", "f g"]);
    assert_eq!(words("echo x y | kb save -"), ["echo", "x", "y", "|", "kb", "save", "-"]);
    assert_eq!(words("kb save 'a | b'"), ["kb", "save", "a | b"]);
    assert!(is_assignment("CO_CLI_MEMORY_MAX_COUNT=5") && !is_assignment("--tags=a") && !is_assignment("a-b=c"));
    assert!(matches(&["a", "...", "d"], &["a", "b", "c", "d"]));
    assert!(matches(&["a", "...", "b"], &["a", "b"]));
    assert!(!matches(&["a", "...", "d"], &["a", "b"]));
}

#[test]
fn the_guides_examples_print_what_the_guide_shows() {
    let path = repo_file(GUIDE);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let examples = examples(&text);
    assert!(examples.len() >= 20, "only {} examples in {GUIDE}", examples.len());

    let t = TestEnv::new().env("KB_NOW", GUIDE_NOW);
    copy_tree(&repo_file("example-knowledge"), &t.root());
    // A checkout of `main`, so the board examples show the branch a reader would have.
    t.write(".git/HEAD", "ref: refs/heads/main\n");
    let mut failures = Vec::new();
    let mut updates: Vec<((usize, usize), Vec<String>)> = Vec::new();
    for example in &examples {
        let got = shown(&t, &run(&t, &example.command));
        let want = &lines[example.expected.0..example.expected.1];
        let want_trimmed = trimmed_lines_of(want);
        if matches(&want_trimmed, &trimmed_lines(&got)) {
            continue;
        }
        failures.push(format!(
            "{GUIDE}:{}: $ {}\n--- the guide shows\n{}\n--- kb printed\n{}",
            example.line,
            example.command,
            want_trimmed.join("\n"),
            trimmed_lines(&got).join("\n")
        ));
        // The blank lines that separate this output from what follows stay as they are.
        let end = example.expected.0 + want_trimmed.len();
        updates.push(((example.expected.0, end), trimmed_lines(&got).iter().map(|l| l.to_string()).collect()));
    }
    if updating_docs() && !updates.is_empty() {
        write_outputs(&path, &lines, updates);
        return;
    }
    assert!(
        failures.is_empty(),
        "{} of the {} examples of {GUIDE} print something else:\n\n{}\n\nIf the new output is right, \
         update the guide: {REGENERATE} guide",
        failures.len(),
        examples.len(),
        failures.join("\n\n")
    );
}

/// Writes `lines` back to `path` with each range of lines (0-based, end excluded, ascending)
/// replaced by the new output given for it.
pub fn write_outputs(path: &std::path::Path, lines: &[&str], updates: Vec<((usize, usize), Vec<String>)>) {
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    for ((start, end), new) in updates.into_iter().rev() {
        out.splice(start..end, new);
    }
    std::fs::write(path, out.join("\n") + "\n").unwrap();
}

/// Returns `lines` without the trailing blank ones.
pub fn trimmed_lines_of<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    let mut v = lines.to_vec();
    while v.last().is_some_and(|l| l.trim().is_empty()) {
        v.pop();
    }
    v
}
