//! Scoped instructions (docs/formats.md, Scoped instructions): the `.instructions.md` files of VS Code and Copilot in
//! `.github/instructions/` (and its subfolders), each with an `applyTo` frontmatter key (one glob,
//! or several separated by commas) and an optional `description`.
//!
//! kb only reads these files; it never edits them. A file whose `applyTo` is missing, empty, not a
//! string, or holds a glob that does not parse, and a file whose frontmatter is not valid YAML, is
//! still listed but applies to nothing, with a warning. The walk reads every file through
//! `fsio::read_input` and follows a symlinked folder only when it stays inside the root and has
//! not been read already, so a symlink loop ends.

use crate::error::{Diagnostic, KbError, io_at};
use crate::format::frontmatter::{self, SplitError};
use crate::format::text::decode;
use crate::journal::Txn;
use crate::paths::Layout;
use crate::repo::Repo;
use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What every instruction file's name ends with.
pub const SUFFIX: &str = ".instructions.md";

/// The globs that apply everywhere, even without `--for`.
const ALWAYS_ON: [&str; 2] = ["**", "**/*"];

/// One instruction file as read.
#[derive(Debug, Clone)]
pub struct Instruction {
    /// Where the file is (inside the root).
    pub path: PathBuf,
    /// The globs of `applyTo`, each trimmed, in the order written; empty when `applyTo` is
    /// missing or unusable.
    pub apply_to: Vec<String>,
    pub description: Option<String>,
    /// The text after the frontmatter (LF line ends, stripped): what the compiled block shows.
    pub body: String,
    /// One matcher per glob of `apply_to`; `None` when a glob does not parse (the file then
    /// applies to nothing).
    matchers: Option<Vec<GlobMatcher>>,
}

impl Instruction {
    /// Returns whether every glob of `applyTo` parsed (else the file applies to nothing).
    pub fn usable(&self) -> bool {
        self.matchers.is_some() && !self.apply_to.is_empty()
    }

    /// Returns whether a glob of `applyTo` is always on (`**`, `**/*`).
    pub fn always_on(&self) -> bool {
        self.apply_to.iter().any(|g| ALWAYS_ON.contains(&g.as_str()))
    }

    /// Returns the glob that makes this instruction apply to one of `paths` (root-relative, `/`
    /// separated), or an always-on glob (`**`, `**/*`) whatever the paths; `None` when it does not
    /// apply.
    pub fn matched(&self, paths: &[String]) -> Option<&str> {
        let matchers = self.matchers.as_ref()?;
        if let Some(g) = self.apply_to.iter().find(|g| ALWAYS_ON.contains(&g.as_str())) {
            return Some(g);
        }
        self.apply_to.iter().zip(matchers).find(|(_, m)| paths.iter().any(|p| m.is_match(p))).map(|(g, _)| g.as_str())
    }
}

/// Every instruction file of a repository, in path order, and the problems met reading them.
#[derive(Debug, Default)]
pub struct Instructions {
    pub files: Vec<Instruction>,
    /// Files that could not be read (left out), folders not followed, and unusable `applyTo`
    /// values or frontmatter (the file is listed but applies to nothing).
    pub problems: Vec<Diagnostic>,
}

/// Reads every `.github/instructions/**/*.instructions.md` file of the repository at `layout`.
pub fn load(layout: &Layout) -> Instructions {
    let mut found = Instructions::default();
    let top = layout.instructions();
    match std::fs::symlink_metadata(&top) {
        Err(_) => return found,
        Ok(m) if !m.is_dir() && !m.file_type().is_symlink() => return found,
        Ok(_) => {}
    }
    let root = std::fs::canonicalize(&layout.root).unwrap_or_else(|_| layout.root.clone());
    let mut paths = Vec::new();
    let mut seen = Vec::new();
    walk(&root, &top, &mut seen, &mut paths, &mut found.problems);
    paths.sort();
    for path in paths {
        match crate::fsio::read_input(&path, &layout.root) {
            Ok(Some(bytes)) => match decode(&bytes) {
                Ok(text) => {
                    let (instruction, problems) = parse(text, path.clone());
                    found.problems.extend(problems.into_iter().map(|d| d.in_file(&path)));
                    found.files.push(instruction);
                }
                Err(d) => found.problems.push(d.in_file(&path)),
            },
            Ok(None) => {}
            Err(e) => found.problems.push(Diagnostic::error(None, format!("cannot read: {e}")).in_file(&path)),
        }
    }
    found
}

/// Adds the instruction files below `dir` to `out`. A folder (or a symlink to one) is entered
/// only when its real path is inside `root` and not in `seen`, so neither a link out of the
/// repository nor a symlink loop is followed.
fn walk(root: &Path, dir: &Path, seen: &mut Vec<PathBuf>, out: &mut Vec<PathBuf>, problems: &mut Vec<Diagnostic>) {
    let real = match std::fs::canonicalize(dir) {
        Ok(r) => r,
        Err(e) => {
            problems.push(Diagnostic::error(None, format!("cannot read the folder: {e}")).in_file(dir));
            return;
        }
    };
    if !real.starts_with(root) {
        let msg = format!("a symlink leads outside the root, to {}: not read", real.display());
        problems.push(Diagnostic::error(None, msg).in_file(dir));
        return;
    }
    if seen.contains(&real) {
        let msg = format!("a symlink leads to a folder already read ({}): not read again", real.display());
        problems.push(Diagnostic::error(None, msg).in_file(dir));
        return;
    }
    seen.push(real);
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            problems.push(Diagnostic::error(None, format!("cannot read the folder: {e}")).in_file(dir));
            return;
        }
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        // `metadata` follows a symlink: a link to a folder is walked (after the checks above).
        if std::fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
            walk(root, &path, seen, out, problems);
        } else if path.file_name().is_some_and(|n| n.to_string_lossy().ends_with(SUFFIX)) {
            // Files, dangling links and anything odd: `read_input` reports what it cannot read.
            out.push(path);
        }
    }
}

/// Parses one instruction file's text; the diagnostics carry lines of the file but no path.
pub fn parse(text: &str, path: PathBuf) -> (Instruction, Vec<Diagnostic>) {
    let mut problems = Vec::new();
    let mut instruction =
        Instruction { path, apply_to: Vec::new(), description: None, body: String::new(), matchers: None };
    let split = match frontmatter::split(text) {
        Ok(s) => s,
        Err(SplitError::Missing) => {
            problems.push(Diagnostic::warning(Some(1), "no frontmatter with applyTo: the file applies to nothing"));
            return (instruction, problems);
        }
        Err(SplitError::Unclosed) => {
            let msg = "frontmatter is not closed: no '---' line after the opening one; the file applies to nothing";
            problems.push(Diagnostic::warning(Some(1), msg));
            return (instruction, problems);
        }
    };
    instruction.body = crate::format::text::clean_body(split.body);
    let fields = match frontmatter::parse(split.yaml) {
        Ok(f) => f,
        Err(e) => {
            let hint = if split.yaml.contains("applyTo: *") { " (quote the glob: applyTo: \"**/*.ts\")" } else { "" };
            let msg = format!("{}{hint}; the file applies to nothing", e.message);
            problems.push(Diagnostic::warning(e.line.map(|l| l + split.yaml_line - 1), msg));
            return (instruction, problems);
        }
    };
    let line_of = |key: &str| -> Option<usize> {
        split
            .yaml
            .lines()
            .position(|l| l.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with(':')))
            .map(|i| i + split.yaml_line)
    };
    match fields.get("description") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => instruction.description = Some(s.clone()),
        Some(other) => problems.push(Diagnostic::warning(
            line_of("description"),
            format!("description must be a string, not {}; ignored", kind(other)),
        )),
    }
    let line = line_of("applyTo");
    let raw = match fields.get("applyTo") {
        None => {
            problems.push(Diagnostic::warning(Some(1), "no applyTo: the file applies to nothing"));
            return (instruction, problems);
        }
        Some(Value::String(s)) => s,
        Some(Value::Null) => {
            problems.push(Diagnostic::warning(line, "applyTo is empty: the file applies to nothing"));
            return (instruction, problems);
        }
        Some(other) => {
            let msg = format!(
                "applyTo must be a string of globs separated by commas, not {}; the file applies to nothing",
                kind(other)
            );
            problems.push(Diagnostic::warning(line, msg));
            return (instruction, problems);
        }
    };
    instruction.apply_to = split_globs(raw);
    if instruction.apply_to.is_empty() {
        problems.push(Diagnostic::warning(line, "applyTo is empty: the file applies to nothing"));
        return (instruction, problems);
    }
    let mut matchers = Vec::new();
    for glob in &instruction.apply_to {
        match compile(glob) {
            Ok(m) => matchers.push(m),
            Err(e) => {
                let shown: String = glob.chars().take(80).collect();
                let shown = if shown.len() < glob.len() { format!("{shown}…") } else { shown };
                let msg = format!("applyTo glob '{shown}' does not parse: {e}; the file applies to nothing");
                problems.push(Diagnostic::warning(line, msg));
                return (instruction, problems);
            }
        }
    }
    instruction.matchers = Some(matchers);
    (instruction, problems)
}

/// Returns what a YAML value is, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Compiles one glob with VS Code's semantics: `*` and `?` stay inside a folder, `**` crosses
/// folders, `{a,b}` is an alternation.
pub fn compile(glob: &str) -> Result<GlobMatcher, String> {
    if glob.len() > MAX_GLOB_BYTES {
        return Err(format!("it is {} bytes long; a glob may be at most {MAX_GLOB_BYTES}", glob.len()));
    }
    let built = GlobBuilder::new(glob).literal_separator(true).backslash_escape(true).build();
    let glob = built.map_err(|e| e.kind().to_string())?;
    // globset panics when the regex of a glob exceeds the regex size limit (a 20,000-way
    // alternation does): a long glob's regex is built here first, where that is an error.
    if glob.glob().len() > CHECKED_GLOB_BYTES {
        regex::bytes::Regex::new(glob.regex()).map_err(|_| "it is too complex to match".to_string())?;
    }
    Ok(glob.compile_matcher())
}

/// The longest glob kb compiles; `applyTo` globs are paths and a few alternatives.
const MAX_GLOB_BYTES: usize = 16 * 1024;

/// A glob longer than this has its regex checked before globset builds it (shorter ones cannot
/// reach the regex size limit).
const CHECKED_GLOB_BYTES: usize = 256;

/// Splits an `applyTo` value into its globs: at each comma outside `{…}` (an alternation) and
/// `[…]` (a character class), each glob trimmed, empty ones dropped. A backslash escapes the next
/// character.
pub fn split_globs(raw: &str) -> Vec<String> {
    split_globs_raw(raw).into_iter().map(|g| g.trim().to_string()).filter(|g| !g.is_empty()).collect()
}

/// Splits at each comma outside `{…}` and `[…]` (a backslash escapes the next character), keeping
/// every part as written, empty ones too (the alternatives of `{a,}`).
pub fn split_globs_raw(raw: &str) -> Vec<String> {
    let mut globs = Vec::new();
    let mut cur = String::new();
    let (mut depth, mut class, mut escaped) = (0usize, false, false);
    for c in raw.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if class {
            class = c != ']';
        } else {
            match c {
                '[' => class = true,
                '{' => depth += 1,
                '}' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    globs.push(std::mem::take(&mut cur));
                    continue;
                }
                _ => {}
            }
        }
        cur.push(c);
    }
    globs.push(cur);
    globs
}

/// Turns a `--for PATH` into the root-relative, `/`-separated path the globs match: a relative
/// path is taken relative to the root, an absolute one must lie inside it (as written, or once
/// its symlinks are resolved). `.` and `..` are resolved. Returns `Err` with the reason for a
/// path outside the root.
pub fn relative_path(root: &Path, given: &Path) -> Result<String, String> {
    let root = crate::paths::resolve_dots(root);
    let joined = crate::paths::resolve_dots(&root.join(given));
    let rel = match joined.strip_prefix(&root) {
        Ok(r) => r.to_path_buf(),
        Err(_) => {
            let real_root = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
            let real = crate::paths::real_path(&joined).unwrap_or(joined.clone());
            match real.strip_prefix(&real_root) {
                Ok(r) => r.to_path_buf(),
                Err(_) => return Err(format!("{} is outside the root {}", given.display(), root.display())),
            }
        }
    };
    let parts: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    Ok(parts.join("/"))
}

/// Returns the path of the instruction file named `name` (without its suffix).
pub fn file_of(layout: &Layout, name: &str) -> PathBuf {
    layout.instructions().join(format!("{name}{SUFFIX}"))
}

/// Creates the instruction file `NAME.instructions.md` in `.github/instructions/` with
/// `applyTo`, `description` and `body`, through `txn` (`kb promote`). An existing file is never
/// overwritten: it is an error naming it. Returns the new file's path.
pub fn create(
    repo: &Repo,
    txn: &mut Txn,
    name: &str,
    apply_to: &str,
    description: &str,
    body: &str,
) -> Result<PathBuf, KbError> {
    let dir = repo.layout.instructions();
    let file = file_of(&repo.layout, name);
    repo.guard(&file)?;
    if std::fs::symlink_metadata(&file).is_ok() {
        return Err(KbError::refused(
            "promote",
            format!("{} exists: kb never overwrites an instruction file; pass --name", file.display()),
        ));
    }
    let yaml = frontmatter::assemble(vec![
        ("applyTo".into(), frontmatter::entry("applyTo", &serde_json::Value::from(apply_to))),
        ("description".into(), frontmatter::entry("description", &serde_json::Value::from(description))),
    ]);
    std::fs::create_dir_all(&dir).map_err(io_at(&dir))?;
    txn.write(&file, frontmatter::compose(&yaml, body).as_bytes())?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(raw: &str) -> Vec<String> {
        split_globs(raw)
    }

    #[test]
    fn commas_split_outside_braces_and_classes() {
        assert_eq!(globs("**/*.ts"), ["**/*.ts"]);
        assert_eq!(globs("**/*.ts,**/*.tsx"), ["**/*.ts", "**/*.tsx"]);
        assert_eq!(globs(" src/**/*.rs , tests/**/*.rs ,"), ["src/**/*.rs", "tests/**/*.rs"]);
        assert_eq!(globs("**/*.{ts,tsx},docs/*.md"), ["**/*.{ts,tsx}", "docs/*.md"]);
        assert_eq!(globs("{src,lib}/**/*.{rs,toml}"), ["{src,lib}/**/*.{rs,toml}"]);
        assert_eq!(globs("a[,]b,c"), ["a[,]b", "c"]);
        assert_eq!(globs("a\\,b,c"), ["a\\,b", "c"]);
        assert_eq!(globs("src/{a,b"), ["src/{a,b"], "an unclosed brace keeps the rest in one glob");
        assert!(globs("").is_empty() && globs(" , ,").is_empty());
    }

    fn instruction(apply_to: &str) -> Instruction {
        let text = format!("---\napplyTo: '{apply_to}'\n---\nbody\n");
        let (i, problems) = parse(&text, PathBuf::from("x.instructions.md"));
        assert!(problems.is_empty(), "{problems:?}");
        i
    }

    fn paths(ps: &[&str]) -> Vec<String> {
        ps.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn star_stays_in_a_folder_and_double_star_crosses() {
        let i = instruction("src/*.py");
        assert_eq!(i.matched(&paths(&["src/foo.py"])), Some("src/*.py"));
        assert_eq!(i.matched(&paths(&["src/foo/bar.py"])), None);
        let i = instruction("src/**/*.py");
        assert!(i.matched(&paths(&["src/foo.py"])).is_some() && i.matched(&paths(&["src/a/b/c.py"])).is_some());
        let i = instruction("**/subdir/**/*.py");
        assert!(i.matched(&paths(&["subdir/foo.py"])).is_some());
        assert!(i.matched(&paths(&["deep/parent/subdir/nested/qux.py"])).is_some());
        let i = instruction("*");
        assert!(i.matched(&paths(&["README.md"])).is_some() && i.matched(&paths(&["src/a.rs"])).is_none());
        assert!(i.matched(&[]).is_none(), "`*` is not always on");
    }

    #[test]
    fn alternation_lists_and_always_on() {
        let i = instruction("docs/*.md, **/*.{ts,tsx}");
        assert_eq!(i.matched(&paths(&["web/app.tsx"])), Some("**/*.{ts,tsx}"));
        assert_eq!(i.matched(&paths(&["x.rs", "docs/a.md"])), Some("docs/*.md"));
        assert_eq!(i.matched(&paths(&["web/app.js"])), None);
        assert_eq!(instruction("src/**,**").matched(&[]), Some("**"));
        assert_eq!(instruction("**/*").matched(&[]), Some("**/*"));
    }

    #[test]
    fn bad_apply_to_applies_to_nothing() {
        for (text, what) in [
            ("---\ndescription: d\n---\n", "no applyTo"),
            ("---\napplyTo: ''\n---\n", "empty"),
            ("---\napplyTo: ' , '\n---\n", "empty"),
            ("---\napplyTo:\n  - '**'\n---\n", "a list"),
            ("---\napplyTo: 3\n---\n", "a number"),
            ("---\napplyTo: 'src/['\n---\n", "does not parse"),
            ("---\napplyTo: **/*.ts\n---\n", "quote the glob"),
            ("no frontmatter\n", "no frontmatter"),
        ] {
            let (i, problems) = parse(text, PathBuf::from("x"));
            assert!(i.matched(&paths(&["src/a"])).is_none(), "{text}");
            assert_eq!(problems.len(), 1, "{text}: {problems:?}");
            assert!(problems[0].message.contains(what), "{text}: {problems:?}");
            assert!(!problems[0].skipped(), "a warning: the file is still listed");
        }
        let (_, problems) = parse("---\ndescription: d\napplyTo: 'src/['\n---\n", PathBuf::from("x"));
        assert_eq!(problems[0].line, Some(3));
    }

    #[test]
    fn for_paths_are_root_relative() {
        let root = Path::new("/r/repo");
        assert_eq!(relative_path(root, Path::new("src/a.rs")).unwrap(), "src/a.rs");
        assert_eq!(relative_path(root, Path::new("./src/../lib/b.rs")).unwrap(), "lib/b.rs");
        assert_eq!(relative_path(root, Path::new("/r/repo/src/a.rs")).unwrap(), "src/a.rs");
        assert!(relative_path(root, Path::new("/elsewhere/a.rs")).is_err());
        assert!(relative_path(root, Path::new("../other/a.rs")).is_err());
    }
}
