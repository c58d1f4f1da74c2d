//! The names a Cargo workspace defines, for the audit's Cargo references (docs/behaviour.md,
//! Audit): its packages, their targets (declared in `[[bin]]`, `[[example]]`, `[[test]]`,
//! `[[bench]]`, or found by Cargo's conventions: `src/main.rs`, `src/bin/B.rs`, `src/bin/B/main.rs`,
//! `examples/E.rs`, `tests/T.rs`, `benches/B.rs` and their `*/main.rs` forms), their features
//! (`[features]`, and each optional dependency's implicit one) and the dependencies they name.
//!
//! A manifest is read with a small line reader, not a TOML parser: table headers, `key = value`
//! lines (a value may be an array over several lines, or an inline table), strings and comments.
//! That is all a `Cargo.toml` uses for these names. What it cannot read makes the workspace
//! `open`: a name not found there is then no evidence that it is gone. Only files inside the root
//! are read, only regular files.

use super::refs::CargoKind;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The most packages read (members, and path dependencies inside the root).
const MAX_PACKAGES: usize = 1000;
/// A manifest larger than this is not read.
const MAX_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;

/// One package of the workspace.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Package {
    pub name: String,
    pub features: Vec<String>,
    pub bins: Vec<String>,
    pub examples: Vec<String>,
    pub tests: Vec<String>,
    pub benches: Vec<String>,
}

/// What the workspace at the root defines.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Workspace {
    pub packages: Vec<Package>,
    /// Every dependency a manifest names (its key, and the `package` it renames).
    pub dependencies: HashSet<String>,
    /// Some manifest or member could not be read: a name not found is no evidence.
    pub open: bool,
}

impl Workspace {
    /// Reads the workspace whose root manifest is `root/Cargo.toml`; `None` when there is none.
    pub fn read(root: &Path) -> Option<Workspace> {
        let manifest = root.join("Cargo.toml");
        std::fs::symlink_metadata(&manifest).ok()?;
        let real_root = std::fs::canonicalize(root).ok()?;
        let mut ws = Workspace::default();
        let mut queue: Vec<PathBuf> = vec![root.to_path_buf()];
        let mut seen: HashSet<PathBuf> = HashSet::new();
        let mut first = true;
        while let Some(dir) = queue.pop() {
            if ws.packages.len() >= MAX_PACKAGES {
                ws.open = true;
                break;
            }
            let key = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
            if !seen.insert(key) {
                continue;
            }
            let Some(text) = read_manifest(&dir.join("Cargo.toml"), root) else {
                ws.open = true;
                continue;
            };
            let m = Manifest::parse(&text);
            if first {
                first = false;
                for member in &m.members {
                    let found = expand(root, member);
                    if found.is_empty() {
                        ws.open = true;
                    }
                    queue.extend(found);
                }
                if m.package.is_none() && !m.workspace {
                    // Neither a package nor a workspace: not a manifest kb understands.
                    ws.open = true;
                }
            }
            ws.dependencies.extend(m.dependencies.iter().cloned());
            // A path dependency inside the root is a member of the workspace too.
            for p in &m.path_dependencies {
                if let Some(real) = inside(&real_root, &dir.join(p)) {
                    queue.push(real);
                }
            }
            if let Some(name) = &m.package {
                ws.packages.push(m.package_at(name, &dir, &real_root));
            }
        }
        Some(ws)
    }

    /// Returns the names of `kind` the workspace defines, sorted, each once.
    pub fn names(&self, kind: CargoKind) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .packages
            .iter()
            .flat_map(|p| -> Box<dyn Iterator<Item = &String>> {
                match kind {
                    CargoKind::Bin => Box::new(p.bins.iter()),
                    CargoKind::Example => Box::new(p.examples.iter()),
                    CargoKind::Test => Box::new(p.tests.iter()),
                    CargoKind::Bench => Box::new(p.benches.iter()),
                    CargoKind::Feature => Box::new(p.features.iter()),
                    CargoKind::Package => Box::new(std::iter::once(&p.name)),
                }
            })
            .map(String::as_str)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Returns the package named `name`.
    pub fn package(&self, name: &str) -> Option<&Package> {
        self.packages.iter().find(|p| p.name == name)
    }
}

/// Returns the real path of `path` when it exists inside `real_root` (symlinks followed).
fn inside(real_root: &Path, path: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(path).ok().filter(|real| real.starts_with(real_root))
}

/// Reads a manifest: a regular file inside `root`, not too large, as text.
fn read_manifest(path: &Path, root: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_MANIFEST_BYTES {
        return None;
    }
    let bytes = crate::fsio::read_input(path, root).ok().flatten()?;
    String::from_utf8(bytes).ok()
}

/// Returns the folders a workspace `members` entry names (a glob per path segment), inside the
/// root only.
fn expand(root: &Path, member: &str) -> Vec<PathBuf> {
    let member = member.trim_start_matches("./").trim_end_matches('/');
    if member.is_empty() || member.starts_with('/') || member.split('/').any(|s| s == "..") {
        return Vec::new();
    }
    let mut dirs = vec![root.to_path_buf()];
    for seg in member.split('/') {
        if !seg.contains(['*', '?', '[']) {
            dirs = dirs.into_iter().map(|d| d.join(seg)).collect();
            continue;
        }
        let Ok(glob) = globset::Glob::new(seg) else { return Vec::new() };
        let m = glob.compile_matcher();
        let mut next = Vec::new();
        for d in &dirs {
            let Ok(entries) = std::fs::read_dir(d) else { continue };
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) && m.is_match(e.file_name()) {
                    next.push(e.path());
                }
                if next.len() > MAX_PACKAGES {
                    return next;
                }
            }
        }
        next.sort();
        dirs = next;
    }
    dirs.into_iter().filter(|d| std::fs::symlink_metadata(d.join("Cargo.toml")).is_ok()).collect()
}

/// What one `Cargo.toml` declares.
#[derive(Debug, Default, PartialEq, Eq)]
struct Manifest {
    /// `[package] name`.
    package: Option<String>,
    /// A `[workspace]` table is there.
    workspace: bool,
    members: Vec<String>,
    features: Vec<String>,
    /// Dependency names (keys, and what `package = "…"` renames).
    dependencies: Vec<String>,
    /// `path = "…"` of a dependency.
    path_dependencies: Vec<String>,
    /// Declared targets: kind and name (a `path` without a `name`: its file stem).
    targets: Vec<(CargoKind, String)>,
}

/// The table a line of a manifest is in.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Table {
    Other,
    Package,
    Workspace,
    Features,
    /// A `[dependencies]`-like table: each key is a dependency.
    Dependencies,
    /// `[dependencies.NAME]`: the keys are one dependency's.
    Dependency(String),
    /// `[[bin]]` and the like.
    Target(CargoKind),
}

impl Manifest {
    fn parse(text: &str) -> Manifest {
        let mut m = Manifest::default();
        let mut table = Table::Other;
        // A `[[bin]]` table's name and path, kept until the table ends.
        let mut target: Option<(CargoKind, Option<String>, Option<String>)> = None;
        let finish = |m: &mut Manifest, t: &mut Option<(CargoKind, Option<String>, Option<String>)>| {
            if let Some((kind, name, path)) = t.take() {
                let stem = path.as_deref().and_then(|p| Path::new(p).file_stem()).and_then(|s| s.to_str());
                if let Some(n) = name.or_else(|| stem.map(str::to_string)) {
                    m.targets.push((kind, n));
                }
            }
        };
        for (key, value) in entries(text) {
            if let Some(header) = key.strip_prefix('[') {
                finish(&mut m, &mut target);
                let array = header.starts_with('[');
                let path = split_dotted(header.trim_matches(['[', ']']));
                let path: Vec<&str> = path.iter().map(String::as_str).collect();
                let deps = |s: &str| matches!(s, "dependencies" | "dev-dependencies" | "build-dependencies");
                table = match path.as_slice() {
                    ["package" | "project"] => Table::Package,
                    ["workspace"] => {
                        m.workspace = true;
                        Table::Workspace
                    }
                    ["features"] => Table::Features,
                    ["workspace", d] | ["target", _, d] if deps(d) => Table::Dependencies,
                    [d] if deps(d) => Table::Dependencies,
                    [d, name] | ["target", _, d, name] | ["workspace", d, name] if deps(d) => {
                        m.dependencies.push(name.to_string());
                        Table::Dependency(name.to_string())
                    }
                    [kind] if array => match *kind {
                        "bin" => Table::Target(CargoKind::Bin),
                        "example" => Table::Target(CargoKind::Example),
                        "test" => Table::Target(CargoKind::Test),
                        "bench" => Table::Target(CargoKind::Bench),
                        _ => Table::Other,
                    },
                    _ => Table::Other,
                };
                if let Table::Target(kind) = table {
                    target = Some((kind, None, None));
                }
                continue;
            }
            let key = split_dotted(&key).into_iter().next().unwrap_or_default();
            match &table {
                Table::Package if key == "name" => m.package = string(&value),
                Table::Workspace if key == "members" => m.members = strings(&value),
                Table::Features => m.features.push(key),
                Table::Dependencies => {
                    if inline(&value, "optional").as_deref() == Some("true") {
                        m.features.push(key.clone());
                    }
                    m.dependencies.extend(inline(&value, "package").and_then(|v| string(&v)));
                    m.path_dependencies.extend(inline(&value, "path").and_then(|v| string(&v)));
                    m.dependencies.push(key);
                }
                Table::Dependency(name) => match key.as_str() {
                    "optional" if value.trim() == "true" => m.features.push(name.clone()),
                    "package" => m.dependencies.extend(string(&value)),
                    "path" => m.path_dependencies.extend(string(&value)),
                    _ => {}
                },
                Table::Target(_) => {
                    if let Some((_, name, path)) = target.as_mut() {
                        match key.as_str() {
                            "name" => *name = string(&value),
                            "path" => *path = string(&value),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        finish(&mut m, &mut target);
        m
    }

    /// Returns the package `name` whose manifest is in `dir`: its declared targets and those
    /// Cargo finds by its conventions.
    fn package_at(&self, name: &str, dir: &Path, real_root: &Path) -> Package {
        let mut p = Package { name: name.to_string(), features: self.features.clone(), ..Package::default() };
        for (kind, n) in &self.targets {
            p.list(*kind).push(n.clone());
        }
        if dir.join("src/main.rs").is_file() {
            p.bins.push(name.to_string());
        }
        for (folder, kind) in [
            ("src/bin", CargoKind::Bin),
            ("examples", CargoKind::Example),
            ("tests", CargoKind::Test),
            ("benches", CargoKind::Bench),
        ] {
            // Nothing outside the root is looked at (a folder that is a symlink out of it).
            let Some(folder) = inside(real_root, &dir.join(folder)) else { continue };
            let Ok(entries) = std::fs::read_dir(folder) else { continue };
            for e in entries.flatten() {
                let path = e.path();
                let Some(file) = e.file_name().to_str().map(str::to_string) else { continue };
                let Ok(t) = e.file_type() else { continue };
                if t.is_file()
                    && let Some(stem) = file.strip_suffix(".rs")
                {
                    p.list(kind).push(stem.to_string());
                } else if t.is_dir() && path.join("main.rs").is_file() {
                    p.list(kind).push(file);
                }
            }
        }
        p
    }
}

impl Package {
    fn list(&mut self, kind: CargoKind) -> &mut Vec<String> {
        match kind {
            CargoKind::Bin => &mut self.bins,
            CargoKind::Example => &mut self.examples,
            CargoKind::Test => &mut self.tests,
            CargoKind::Bench => &mut self.benches,
            CargoKind::Feature => &mut self.features,
            // A package lists no packages; never asked.
            CargoKind::Package => &mut self.features,
        }
    }
}

/// Returns a manifest's entries in order: a table header as (`[name]` or `[[name]]`, empty), or a
/// key and its whole value (an array over several lines joined), comments removed.
fn entries(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let line = strip_comment(line);
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if t.starts_with('[') {
            out.push((t.to_string(), String::new()));
            continue;
        }
        let Some(eq) = find_outside_quotes(t, '=') else { continue };
        let key = t[..eq].trim().to_string();
        let mut value = t[eq + 1..].trim().to_string();
        // A multi-line string: skipped to its end (no name kb reads is one).
        for fence in ["\"\"\"", "'''"] {
            if value.starts_with(fence) && !value[3..].contains(fence) {
                for l in lines.by_ref() {
                    if l.contains(fence) {
                        break;
                    }
                }
                value.clear();
            }
        }
        // An array or inline table over several lines: joined until its brackets close.
        let mut guard = 0;
        while depth(&value) > 0 && guard < 100_000 {
            guard += 1;
            let Some(next) = lines.next() else { break };
            value.push(' ');
            value.push_str(strip_comment(next).trim());
        }
        out.push((key, value));
    }
    out
}

/// Returns how many brackets and braces are open at the end of `s` (outside strings).
fn depth(s: &str) -> i64 {
    let mut d = 0i64;
    scan(s, |c| match c {
        '[' | '{' => d += 1,
        ']' | '}' => d -= 1,
        _ => {}
    });
    d
}

/// Returns each character of `s` with its byte position and whether it lies outside a TOML string
/// (a quote that opens or closes one is inside).
fn chars_outside(s: &str) -> impl Iterator<Item = (usize, char, bool)> + '_ {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    s.char_indices().map(move |(i, c)| {
        let outside = match quote {
            Some('"') if escaped => {
                escaped = false;
                false
            }
            Some('"') if c == '\\' => {
                escaped = true;
                false
            }
            Some(q) if c == q => {
                quote = None;
                false
            }
            Some(_) => false,
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                false
            }
            None => true,
        };
        (i, c, outside)
    })
}

/// Calls `f` with each character of `s` outside a string.
fn scan(s: &str, mut f: impl FnMut(char)) {
    chars_outside(s).filter(|&(_, _, outside)| outside).for_each(|(_, c, _)| f(c));
}

/// Returns the byte position of the first `target` outside a string.
fn find_outside_quotes(s: &str, target: char) -> Option<usize> {
    chars_outside(s).find(|&(_, c, outside)| outside && c == target).map(|(i, _, _)| i)
}

/// Returns a line without its `#` comment (a `#` in a string stays).
fn strip_comment(line: &str) -> &str {
    match find_outside_quotes(line, '#') {
        Some(i) => &line[..i],
        None => line,
    }
}

/// Splits a dotted key or header into its parts, unquoted (`target.'cfg(unix)'.dependencies`).
fn split_dotted(s: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        let end = find_outside_quotes(rest, '.').unwrap_or(rest.len());
        let part = rest[..end].trim();
        parts.push(string(part).unwrap_or_else(|| part.to_string()));
        rest = rest.get(end + 1..).unwrap_or("").trim();
    }
    parts
}

/// Returns the text of a string value (`"a"`, `'a'`); `None` for any other value.
fn string(value: &str) -> Option<String> {
    let v = value.trim();
    if v.len() >= 2 && v.starts_with('\'') && v.ends_with('\'') {
        return Some(v[1..v.len() - 1].to_string());
    }
    if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
        let mut out = String::new();
        let mut chars = v[1..v.len() - 1].chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next()? {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    c @ ('"' | '\\') => out.push(c),
                    // `\u…` and the rest do not occur in a name kb checks.
                    _ => return None,
                }
            } else {
                out.push(c);
            }
        }
        return Some(out);
    }
    None
}

/// Returns the strings of an array value (`["a", 'b']`); other items are left out.
fn strings(value: &str) -> Vec<String> {
    let v = value.trim();
    let Some(inner) = v.strip_prefix('[').and_then(|v| v.strip_suffix(']')) else { return Vec::new() };
    split_top(inner, ',').iter().filter_map(|item| string(item)).collect()
}

/// Returns the value of `key` in an inline table value (`{ version = "1", optional = true }`).
fn inline(value: &str, key: &str) -> Option<String> {
    let v = value.trim();
    let inner = v.strip_prefix('{')?.strip_suffix('}')?;
    split_top(inner, ',').into_iter().find_map(|item| {
        let eq = find_outside_quotes(&item, '=')?;
        let k = split_dotted(&item[..eq]).into_iter().next()?;
        (k == key).then(|| item[eq + 1..].trim().to_string())
    })
}

/// Splits `s` at each `sep` outside strings and brackets.
fn split_top(s: &str, sep: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut d = 0i64;
    for (_, c, outside) in chars_outside(s) {
        if outside {
            match c {
                '[' | '{' => d += 1,
                ']' | '}' => d -= 1,
                _ if c == sep && d == 0 => {
                    parts.push(std::mem::take(&mut current));
                    continue;
                }
                _ => {}
            }
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        parts.push(current);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"
[package]
name = "kb"   # the tool
version = "0.1.0"
description = """
name = "not-this"
"""

[[bin]]
name = "kb"
path = "src/main.rs"

[[test]]
path = "tests/cli/main.rs"

[dependencies]
serde = { version = "1", features = ["derive"] }
rmcp = { version = "3", optional = true, features = [
    "server", # a comment
] }
renamed = { package = "real-name", version = "1" }
local = { path = "crates/local" }
fast.workspace = true

[target.'cfg(unix)'.dependencies]
libc = "0.2"

[dependencies.tokio]
version = "1"
optional = true

[features]
default = ["mcp"]
mcp = ["dep:rmcp"]
"with-dash" = []

[workspace]
members = [
    "crates/*",
    'tools/gen',
]
"#;

    #[test]
    fn a_manifest_is_read_line_by_line() {
        let m = Manifest::parse(MANIFEST);
        assert_eq!(m.package.as_deref(), Some("kb"));
        assert!(m.workspace);
        assert_eq!(m.members, ["crates/*", "tools/gen"]);
        assert_eq!(m.features, ["rmcp", "tokio", "default", "mcp", "with-dash"]);
        assert_eq!(m.targets, [(CargoKind::Bin, "kb".to_string()), (CargoKind::Test, "main".to_string())]);
        for dep in ["serde", "rmcp", "real-name", "renamed", "local", "fast", "libc", "tokio"] {
            assert!(m.dependencies.iter().any(|d| d == dep), "{dep}: {:?}", m.dependencies);
        }
        assert_eq!(m.path_dependencies, ["crates/local"]);
    }

    #[test]
    fn values_and_keys() {
        assert_eq!(string(r#""a\"b""#).as_deref(), Some("a\"b"));
        assert_eq!(string("'lit'").as_deref(), Some("lit"));
        assert_eq!(string("true"), None);
        assert_eq!(
            split_dotted("target.'cfg(all(unix, x.y))'.dependencies"),
            ["target", "cfg(all(unix, x.y))", "dependencies"]
        );
        assert_eq!(strip_comment(r##"a = "#x" # c"##), r##"a = "#x" "##);
        assert_eq!(inline(r#"{ a = "1", b = { c = 2 }, optional = true }"#, "optional").as_deref(), Some("true"));
        assert_eq!(strings(r#"["a", 'b', 3]"#), ["a", "b"]);
    }

    #[test]
    fn a_workspace_is_read_with_its_members_and_conventions() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |p: &str, s: &str| {
            let p = root.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, s).unwrap();
        };
        write("Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\n");
        write("crates/app/Cargo.toml", "[package]\nname = \"app\"\n[features]\nfast = []\n");
        write("crates/app/src/main.rs", "fn main() {}\n");
        write("crates/app/src/bin/tool.rs", "fn main() {}\n");
        write("crates/app/src/bin/multi/main.rs", "fn main() {}\n");
        write("crates/app/tests/smoke.rs", "");
        write("crates/app/examples/demo.rs", "");
        write("crates/app/benches/speed.rs", "");
        write("crates/lib/Cargo.toml", "[package]\nname = \"lib\"\n[dependencies]\nregex = \"1\"\n");
        let ws = Workspace::read(root).unwrap();
        assert!(!ws.open);
        assert_eq!(ws.names(CargoKind::Package), ["app", "lib"]);
        assert_eq!(ws.names(CargoKind::Bin), ["app", "multi", "tool"]);
        assert_eq!(ws.names(CargoKind::Test), ["smoke"]);
        assert_eq!(ws.names(CargoKind::Example), ["demo"]);
        assert_eq!(ws.names(CargoKind::Bench), ["speed"]);
        assert_eq!(ws.names(CargoKind::Feature), ["fast"]);
        assert!(ws.dependencies.contains("regex"));
        assert!(Workspace::read(&root.join("crates")).is_none(), "no Cargo.toml: no workspace");
        // A member that cannot be read: what is not found is no evidence.
        write("Cargo.toml", "[workspace]\nmembers = [\"crates/*\", \"missing\"]\n");
        assert!(Workspace::read(root).unwrap().open);
    }
}
