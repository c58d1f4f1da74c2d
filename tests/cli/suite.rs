//! Checks on the test suite itself: every file in `tests/cli/` is compiled into this binary, and
//! every test that `tests/coverage.md` names exists.
//!
//! These read source files only; they run no `kb`.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The package root (where `Cargo.toml` is).
fn package() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Returns the modules `tests/cli/main.rs` declares (`mod name;`, `pub mod name;`).
fn declared_modules() -> Vec<String> {
    let main = fs::read_to_string(package().join("tests/cli/main.rs")).expect("read tests/cli/main.rs");
    main.lines()
        .filter_map(|line| {
            let line = line.trim();
            let line = line.strip_prefix("pub ").unwrap_or(line);
            line.strip_prefix("mod ")?.strip_suffix(';').map(|name| name.trim().to_string())
        })
        .collect()
}

/// A file in `tests/cli/` that `main.rs` does not declare is never compiled, so its tests never
/// run and nobody notices (jj keeps the same guard, `test_no_forgotten_test_files`).
#[test]
fn no_forgotten_test_files() {
    let declared = declared_modules();
    let mut forgotten = Vec::new();
    for entry in fs::read_dir(package().join("tests/cli")).expect("list tests/cli") {
        let path = entry.expect("read tests/cli").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let module = if path.is_dir() {
            // A module kept as a folder (`name/mod.rs`).
            if !path.join("mod.rs").exists() {
                continue;
            }
            name.clone()
        } else if let Some(stem) = name.strip_suffix(".rs") {
            stem.to_string()
        } else {
            continue;
        };
        if module != "main" && !declared.contains(&module) {
            forgotten.push(name);
        }
    }
    forgotten.sort();
    assert!(
        forgotten.is_empty(),
        "tests/cli/main.rs does not declare these files, so their tests never run; add `mod NAME;` for each: {forgotten:?}"
    );
}

/// One test name in `tests/coverage.md`.
#[derive(Debug, PartialEq)]
enum Cited {
    /// `file::name` or `file::module::name`: a test in `tests/cli/<file>.rs`.
    BlackBox(String),
    /// `module::path::tests::name`: a unit test inside `src/`.
    Unit(String),
}

/// Returns the test names that one cell of the tests column cites.
///
/// The cell is a list of names separated by commas. A note in parentheses after a name is
/// ignored. `unit:` starts the unit tests, up to the next `;` (a `;` separates the two lists).
fn cited_in_cell(cell: &str) -> Result<Vec<Cited>, String> {
    // Drop the notes: everything inside parentheses, nested ones included; a parenthesis inside a
    // code span (`f(x)`) does not count.
    let mut text = String::new();
    let (mut depth, mut code) = (0usize, false);
    for c in cell.replace("\\|", "|").chars() {
        match c {
            '`' => {
                code = !code;
                if depth == 0 {
                    text.push(c);
                }
            }
            '(' if !code => depth += 1,
            ')' if !code && depth > 0 => depth -= 1,
            _ if depth == 0 => text.push(c),
            _ => {}
        }
    }
    if depth > 0 {
        return Err(format!("unbalanced parentheses in `{cell}`"));
    }
    let mut cited = Vec::new();
    for part in text.split(';') {
        let part = part.trim();
        let (unit, names) = match part.strip_prefix("unit:") {
            Some(rest) => (true, rest),
            None => (false, part),
        };
        for name in names.split(',').map(str::trim) {
            let segments: Vec<&str> = name.split("::").collect();
            let well_formed = segments.len() >= 2
                && segments.iter().all(|s| {
                    s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
                        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                });
            if !well_formed {
                return Err(format!(
                    "`{name}` is not a test name (file::test, or unit: module::tests::test) in `{cell}`"
                ));
            }
            if unit && !segments.contains(&"tests") {
                return Err(format!("unit test `{name}` should read module::path::tests::name"));
            }
            cited.push(if unit { Cited::Unit(name.to_string()) } else { Cited::BlackBox(name.to_string()) });
        }
    }
    Ok(cited)
}

/// Returns every test `text` (the coverage map) cites, with its line number, or the problems
/// found in its tables.
fn cited_in_map(text: &str) -> (Vec<(usize, Cited)>, Vec<String>) {
    let (mut cited, mut problems) = (Vec::new(), Vec::new());
    let mut in_table = false;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if !line.starts_with('|') {
            in_table = false;
            continue;
        }
        // Cells are split at `|` but not at `\|` (an escaped bar inside a cell).
        let cells: Vec<String> =
            line.replace("\\|", "\u{0}").split('|').map(|c| c.replace('\u{0}', "\\|").trim().to_string()).collect();
        let cells = &cells[1..cells.len() - 1];
        if !in_table {
            // The header: a table whose last column is `tests` maps behaviour to tests.
            in_table = cells.last().is_some_and(|c| c == "tests");
            continue;
        }
        if cells.iter().all(|c| c.chars().all(|c| c == '-' || c == ':')) {
            continue;
        }
        match cited_in_cell(cells.last().expect("a cell")) {
            Ok(names) if names.is_empty() => problems.push(format!("line {}: no test cited", i + 1)),
            Ok(names) => cited.extend(names.into_iter().map(|n| (i + 1, n))),
            Err(e) => problems.push(format!("line {}: {e}", i + 1)),
        }
    }
    (cited, problems)
}

/// Returns whether `source` defines `fn name` (a whole word, followed by `(` or `<`).
fn defines_fn(source: &str, name: &str) -> bool {
    let needle = format!("fn {name}");
    source.match_indices(&needle).any(|(at, _)| {
        let before = source[..at].chars().next_back();
        let after = source[at + needle.len()..].trim_start().chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && matches!(after, Some('(' | '<'))
    })
}

/// Returns whether `source` has a test function `name`: `fn name` under a `#[test]`-like
/// attribute (`#[test]`, `#[tokio::test]`; proptest's `#[test]` inside `proptest!` too).
fn defines_test(source: &str, name: &str) -> bool {
    let lines: Vec<&str> = source.lines().collect();
    lines.iter().enumerate().any(|(i, line)| {
        if !defines_fn(line, name) {
            return false;
        }
        lines[..i]
            .iter()
            .rev()
            .map(|l| l.trim())
            .take_while(|l| l.starts_with("#[") || l.starts_with("//") || l.ends_with(']') || l.ends_with(','))
            .any(|l| l.starts_with("#[") && l.contains("test"))
    })
}

/// Returns every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else { return files };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// Returns the full name of every test in this binary, as libtest lists them (`file::name`,
/// `file::module::name`).
fn listed_tests() -> HashSet<String> {
    let me = std::env::current_exe().expect("the test binary's path");
    let out = Command::new(me).args(["--list", "--format", "terse"]).output().expect("list the tests");
    assert!(out.status.success(), "--list failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.strip_suffix(": test")).map(str::to_string).collect()
}

/// Returns why `test` does not exist, or `None` when it does.
///
/// A black-box name must be exact: `file::name` is a test function `name` in
/// `tests/cli/<file>.rs`, and the whole name (with any module between, `mcp::with_mcp::name`) is
/// one that libtest lists, so `cargo test --test cli NAME` runs it (`listed`; `None` when the
/// `mcp` feature is off and the MCP tests are not compiled). A unit test `a::b::tests::name`
/// counts as existing when `fn name` appears in any file of module `a` (`src/a.rs` or under
/// `src/a/`): unit tests move between the files of a module as it is split, and the map names the
/// behaviour, not the file.
fn missing(test: &Cited, listed: Option<&HashSet<String>>) -> Option<String> {
    match test {
        Cited::BlackBox(name) => {
            let segments: Vec<&str> = name.split("::").collect();
            let (file, test) = (segments[0], segments[segments.len() - 1]);
            let Ok(source) = fs::read_to_string(package().join(format!("tests/cli/{file}.rs"))) else {
                return Some(format!("{name}: there is no tests/cli/{file}.rs"));
            };
            if !defines_test(&source, test) {
                return Some(format!("{name}: tests/cli/{file}.rs has no test `{test}`"));
            }
            let listed = listed?;
            if listed.contains(name) {
                return None;
            }
            let real: Vec<&String> = listed
                .iter()
                .filter(|l| l.starts_with(&format!("{file}::")) && l.ends_with(&format!("::{test}")))
                .collect();
            Some(format!("{name}: not a full test name; libtest calls it {real:?}"))
        }
        Cited::Unit(name) => {
            let segments: Vec<&str> = name.split("::").collect();
            let (module, test) = (segments[0], segments[segments.len() - 1]);
            let src = package().join("src");
            let mut files = rust_files(&src.join(module));
            files.push(src.join(format!("{module}.rs")));
            let found = files.iter().any(|f| fs::read_to_string(f).is_ok_and(|s| defines_fn(&s, test)));
            (!found).then(|| format!("{name}: no `fn {test}` in src/{module}.rs or src/{module}/"))
        }
    }
}

/// `tests/coverage.md` maps kb's behaviour to the tests that check it. A renamed or removed test
/// would leave it pointing at nothing; this keeps every name in it real.
#[test]
fn every_test_the_coverage_map_names_exists() {
    let path = package().join("tests/coverage.md");
    let text = fs::read_to_string(&path).expect("read tests/coverage.md");
    let (cited, mut problems) = cited_in_map(&text);
    assert!(cited.len() > 100, "tests/coverage.md cites only {} tests: is its table format still parsed?", cited.len());
    let listed = cfg!(feature = "mcp").then(listed_tests);
    for (line, test) in &cited {
        if let Some(why) = missing(test, listed.as_ref()) {
            problems.push(format!("line {line}: {why}"));
        }
    }
    assert!(problems.is_empty(), "tests/coverage.md is out of date:\n{}", problems.join("\n"));
}

#[test]
fn a_cell_lists_black_box_and_unit_tests_and_ignores_notes() {
    let cell = "a::one (exact bytes, `f(x)` and (nested)), a::two; unit: m::tests::three, m::n::tests::four (note)";
    assert_eq!(
        cited_in_cell(cell).unwrap(),
        vec![
            Cited::BlackBox("a::one".into()),
            Cited::BlackBox("a::two".into()),
            Cited::Unit("m::tests::three".into()),
            Cited::Unit("m::n::tests::four".into()),
        ]
    );
    assert!(cited_in_cell("see above").is_err());
    assert!(cited_in_cell("unit: m::three").is_err(), "a unit test is named through its tests module");
    assert!(cited_in_cell("a::one (unclosed").is_err());
}

#[test]
fn a_test_is_a_function_under_a_test_attribute() {
    let source = "#[test]\nfn real() {}\n\nfn helper() {}\n\n#[tokio::test(flavor = \"multi_thread\")]\n#[ignore]\n/// Doc.\nasync fn io() {}\nfn real_but_longer() {}\n";
    assert!(defines_test(source, "real"));
    assert!(defines_test(source, "io"));
    assert!(!defines_test(source, "helper"));
    assert!(!defines_test(source, "rea"));
    assert!(defines_fn(source, "helper"));
}
