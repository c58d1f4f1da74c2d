//! The references an item's text makes to the repository (docs/behaviour.md, Audit): paths (with a line suffix,
//! or a glob), make/just/npm/pnpm/yarn/bun targets, and code symbols. Pure text work: nothing
//! here looks at a file; [`super::Checker`] checks what is found.
//!
//! - A **path** is a record's citation, a backticked span that names a file or folder (it holds a
//!   `/` or ends in `.` + 1–6 letters and digits holding a letter; no white space; not a URL, an
//!   option, an e-mail address or a version), or a bare word holding a `/` that ends in such an
//!   extension. An optional `:N`, `:N-M` or `#LN` suffix names lines. A leading `./` or `/` is
//!   dropped; `~` and `..` paths are not checked.
//!   A citation, a span ending in `/` (a folder), a slash path whose first folder starts with `.`
//!   (`.ci/run`: no branch or MIME type does), and a slash path or a well-known file name without
//!   an extension (`Makefile`, `Dockerfile`, `LICENSE`) followed by a line suffix are **certain**:
//!   the checker never reads them as a symbol or as no reference.
//! - A **command** is a backticked span starting `make T`, `just T`, `npm run T`, `pnpm run T`,
//!   `yarn run T`, `yarn T` (T not one of yarn's own commands) or `bun run T`.
//! - A **Cargo reference** is what a backticked span starting `cargo ` names with `--bin`,
//!   `--example`, `--test`, `--bench`, `--features`/`-F` (each of a comma or space list) and
//!   `-p`/`--package` (before a `--`; not for `cargo install`, `add` and other commands whose
//!   names are not the workspace's).
//! - A **symbol** is a backticked identifier, optionally qualified by `::` or `.`, holding an `_`,
//!   an inner upper-case letter or a qualifier (`ApiError`, `fit_budget`, `config::Layout`); a
//!   trailing `()` is allowed. Its last segment is what is looked for.

/// One reference found in an item.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Ref {
    /// A file or folder, relative to the root, and the lines it names. A folder's `path` ends in
    /// `/`. `certain`: a shape only a path has (a citation, a folder, `.ci/run`, `Makefile:14`),
    /// checked as a path even when nothing is there.
    Path { raw: String, path: String, lines: Option<(u64, u64)>, glob: bool, certain: bool },
    /// A target of a task runner.
    Command { raw: String, tool: Tool, target: String },
    /// A code symbol: the whole span, and the last segment looked for.
    Symbol { raw: String, name: String },
    /// A target, feature or package a `cargo` command names: the whole span, what is named.
    Cargo { raw: String, kind: CargoKind, name: String },
}

/// What a Cargo reference names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CargoKind {
    /// `--bin B`
    Bin,
    /// `--example E`
    Example,
    /// `--test T`
    Test,
    /// `--bench B`
    Bench,
    /// `--features F` or `-F F` (one feature; `crate/feature` kept whole).
    Feature,
    /// `-p P` or `--package P` (a `@version` dropped).
    Package,
}

impl CargoKind {
    /// Returns the option as written and what it names, one and many (`--bin`, `binary`,
    /// `binaries`).
    pub fn describe(self) -> (&'static str, &'static str, &'static str) {
        match self {
            CargoKind::Bin => ("--bin", "binary", "binaries"),
            CargoKind::Example => ("--example", "example", "examples"),
            CargoKind::Test => ("--test", "test target", "test targets"),
            CargoKind::Bench => ("--bench", "bench target", "bench targets"),
            CargoKind::Feature => ("--features", "feature", "features"),
            CargoKind::Package => ("--package", "package", "packages"),
        }
    }
}

/// The task runner a command names, and the manifest its targets are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    Make,
    Just,
    /// npm, pnpm, yarn, bun: `package.json`'s `scripts`.
    Package,
}

/// Extensions a file name without a `/` may end in and still be read as a path when no such file
/// exists: a span like `user.email` or `self.config` is a key or a field, not a file that went
/// missing. (A span that names an existing file is a path whatever its extension.)
const FILE_EXTENSIONS: &[&str] = &[
    "bash", "bat", "c", "cc", "cfg", "cjs", "clj", "cmake", "conf", "cpp", "cs", "css", "csv", "dart", "env", "erl",
    "ex", "exs", "fish", "go", "gradle", "h", "hpp", "hs", "html", "ini", "ipynb", "java", "jl", "js", "json", "jsonl",
    "jsx", "kt", "kts", "lock", "lua", "md", "mdx", "mjs", "mk", "ml", "nix", "php", "pl", "proto", "ps1", "py", "r",
    "rb", "rs", "rst", "sass", "scala", "scss", "sh", "sql", "svelte", "swift", "tf", "toml", "ts", "tsx", "txt",
    "vue", "xml", "yaml", "yml", "zig", "zsh",
];

/// File names without an extension that are files by convention: a backticked one with a line
/// suffix (`Makefile:14`) is a path (a bare `Makefile` stays a word: it may live in any folder).
const EXTENSIONLESS_FILES: &[&str] = &[
    "AUTHORS",
    "Brewfile",
    "CHANGELOG",
    "CODEOWNERS",
    "CONTRIBUTING",
    "COPYING",
    "Caddyfile",
    "Containerfile",
    "Dockerfile",
    "Earthfile",
    "GNUmakefile",
    "Gemfile",
    "Jenkinsfile",
    "Justfile",
    "LICENSE",
    "Makefile",
    "NOTICE",
    "Pipfile",
    "Podfile",
    "Procfile",
    "README",
    "Rakefile",
    "Tiltfile",
    "Vagrantfile",
    "justfile",
    "makefile",
];

/// Cargo commands whose `--bin`, `--features`, `-p` … do not name the workspace's targets, features
/// or packages (another crate's, a new one's, a registry's).
const CARGO_FOREIGN: &[&str] = &[
    "add",
    "remove",
    "rm",
    "install",
    "uninstall",
    "new",
    "init",
    "search",
    "yank",
    "owner",
    "login",
    "logout",
    "help",
];

/// yarn's own commands: `yarn T` names a script only when T is none of these.
const YARN_BUILTINS: &[&str] = &[
    "add",
    "audit",
    "autoclean",
    "bin",
    "cache",
    "check",
    "config",
    "create",
    "dedupe",
    "dlx",
    "exec",
    "explain",
    "generate-lock-entry",
    "global",
    "help",
    "import",
    "info",
    "init",
    "install",
    "licenses",
    "link",
    "list",
    "login",
    "logout",
    "node",
    "npm",
    "outdated",
    "owner",
    "pack",
    "patch",
    "plugin",
    "policies",
    "publish",
    "rebuild",
    "remove",
    "run",
    "set",
    "stage",
    "tag",
    "team",
    "unlink",
    "unplug",
    "up",
    "upgrade",
    "upgrade-interactive",
    "version",
    "versions",
    "why",
    "workspace",
    "workspaces",
];

/// Returns the references of `text` and of a record's `citations`, each once, in the order found.
pub fn extract(text: &str, citations: &[&str]) -> Vec<Ref> {
    let mut out: Vec<Ref> = Vec::new();
    let mut push = |r: Ref| {
        if !out.contains(&r) {
            out.push(r);
        }
    };
    for c in citations {
        if let Some(r) = path_ref(c.trim(), true) {
            push(r);
        }
    }
    let (spans, rest) = backticked(text);
    for span in spans {
        if let Some(found) = cargo_refs(span) {
            found.into_iter().for_each(&mut push);
        } else if let Some(r) = command_ref(span) {
            push(r);
        } else if let Some(r) = path_ref(span, false) {
            push(r);
        } else if let Some(r) = symbol_ref(span) {
            push(r);
        }
    }
    for word in rest.split_whitespace() {
        let word = trim_word(word);
        if word.contains('/')
            && !is_url(word)
            && let Some(Ref::Path { raw, path, lines, glob, .. }) = path_ref(word, false)
            && has_extension(&path)
        {
            // A bare word is a path only by its extension: never certain.
            push(Ref::Path { raw, path, lines, glob, certain: false });
        }
    }
    out
}

/// Returns a bare word without the sentence punctuation around it.
fn trim_word(word: &str) -> &str {
    let w = word.trim_start_matches(['"', '\'', '(', '[', '{', '<']);
    w.trim_end_matches(['"', '\'', ')', ']', '}', '>', ',', ';', '!', '?', '.', ':'])
}

/// Returns the backticked spans of `text` (trimmed) and the text between them.
fn backticked(text: &str) -> (Vec<&str>, String) {
    let mut spans = Vec::new();
    let mut rest = String::with_capacity(text.len());
    let mut tail = text;
    while let Some(open) = tail.find('`') {
        // A run of backticks opens a span closed by the same run (markdown code spans).
        let ticks = tail[open..].bytes().take_while(|&b| b == b'`').count();
        let fence = &tail[open..open + ticks];
        let body = &tail[open + ticks..];
        let Some(len) = body.find(fence) else { break };
        rest.push_str(&tail[..open]);
        rest.push(' ');
        // A fenced block (three or more backticks) is code, not a reference.
        if ticks < 3 {
            spans.push(body[..len].trim());
        }
        tail = &body[len + ticks..];
    }
    rest.push_str(tail);
    (spans, rest)
}

/// Returns whether `s` is a URL or an address rather than a path.
fn is_url(s: &str) -> bool {
    s.contains("://") || s.starts_with("www.") || s.starts_with("mailto:") || s.contains('@')
}

/// Returns whether `s` is a version (`v1.2`, `3.12.1`, `1.2.x`).
fn is_version(s: &str) -> bool {
    let s = s.strip_prefix(['v', 'V']).unwrap_or(s);
    let mut parts = s.split('.');
    parts.next().is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && s.contains('.')
        && parts.all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Returns the extension `name` ends in when it is `.` + 1–6 letters and digits holding a letter.
fn extension(name: &str) -> Option<&str> {
    let file = name.rsplit('/').next().unwrap_or(name);
    let (stem, ext) = file.rsplit_once('.')?;
    let ok = !ext.is_empty()
        && ext.len() <= 6
        && ext.bytes().all(|b| b.is_ascii_alphanumeric())
        && ext.bytes().any(|b| b.is_ascii_alphabetic());
    (ok && (!stem.is_empty() || file.starts_with('.'))).then_some(ext)
}

fn has_extension(path: &str) -> bool {
    extension(path).is_some()
}

/// Splits a line suffix off a path: `a.rs:3`, `a.rs:3-9`, `a.rs#L3`, `a.rs#L3-L9`.
fn split_lines(s: &str) -> (&str, Option<(u64, u64)>) {
    let num = |t: &str| -> Option<u64> {
        (!t.is_empty() && t.len() <= 12 && t.bytes().all(|b| b.is_ascii_digit())).then(|| t.parse().ok()).flatten()
    };
    let range = |t: &str, l: bool| -> Option<(u64, u64)> {
        match t.split_once('-') {
            Some((a, b)) => {
                let b = if l { b.strip_prefix('L').unwrap_or(b) } else { b };
                Some((num(a)?, num(b)?))
            }
            None => num(t).map(|n| (n, n)),
        }
    };
    if let Some((p, t)) = s.rsplit_once("#L")
        && let Some(r) = range(t, true)
    {
        return (p, Some(r));
    }
    if let Some((p, t)) = s.rsplit_once(':')
        && let Some(r) = range(t, false)
    {
        return (p, Some(r));
    }
    (s, None)
}

/// Returns the path reference `s` makes, if any. A citation is a path whatever its shape (a
/// `Makefile:3` has no `/` nor extension).
fn path_ref(s: &str, citation: bool) -> Option<Ref> {
    if s.is_empty() || s.chars().any(char::is_whitespace) || s.starts_with('-') || is_url(s) {
        return None;
    }
    let (p, lines) = split_lines(s);
    if p.starts_with('~') || p.split('/').any(|seg| seg == "..") || p.contains('\\') {
        return None;
    }
    let p = p.strip_prefix("./").unwrap_or(p);
    let p = p.trim_start_matches('/');
    // A span ending in `/` names a folder: its path keeps one `/` at the end.
    let folder = p.ends_with('/');
    let p = p.trim_end_matches('/');
    if p.is_empty() || p == "." || is_version(p) {
        return None;
    }
    let slash = p.contains('/');
    let known_name = !slash && EXTENSIONLESS_FILES.contains(&p);
    if !citation {
        if !(slash || folder || has_extension(p) || (known_name && lines.is_some())) {
            return None;
        }
        // A span of code (`a::b`, a call, an assignment) is not a path.
        if p.contains("::") || p.contains(['(', ')', '=', ',', ';', '"', '\'', '<', '>', '|', '$', '{', '}', ':']) {
            return None;
        }
        if !p.chars().any(char::is_alphanumeric) {
            return None;
        }
    }
    let glob = p.contains(['*', '?', '[']);
    let certain = citation || folder || (slash && p.starts_with('.')) || (lines.is_some() && (slash || known_name));
    let path = if folder { format!("{p}/") } else { p.to_string() };
    Some(Ref::Path { raw: s.to_string(), path, lines, glob, certain })
}

/// Returns whether a path reference without a `/` may be checked even when no such file exists:
/// its extension is a common file extension (so `user.email` is not a missing file).
pub fn known_extension(path: &str) -> bool {
    extension(path).is_some_and(|e| FILE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// Returns the command reference a span makes, if any.
fn command_ref(span: &str) -> Option<Ref> {
    let words: Vec<&str> = span.split_whitespace().collect();
    let (tool, target) = match words.as_slice() {
        ["make", t, ..] => (Tool::Make, *t),
        ["just", t, ..] => (Tool::Just, *t),
        ["npm" | "pnpm" | "yarn" | "bun", "run", t, ..] => (Tool::Package, *t),
        ["yarn", t, ..] if !YARN_BUILTINS.contains(t) => (Tool::Package, *t),
        _ => return None,
    };
    // An option or a variable assignment is not a target (`make -C dir`, `make V=1`).
    if target.starts_with('-') || target.contains('=') || target.is_empty() {
        return None;
    }
    Some(Ref::Command { raw: span.to_string(), tool, target: target.to_string() })
}

/// Returns the Cargo references of a span starting `cargo ` (`None`: not a cargo command; an
/// empty list: one that names nothing kb checks, such as `cargo nextest run --workspace`).
fn cargo_refs(span: &str) -> Option<Vec<Ref>> {
    let rest = span.strip_prefix("cargo")?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let words = shell_words(rest);
    let mut out = Vec::new();
    // The subcommand: the first word that is no option and no `+toolchain`.
    let sub = words.iter().find(|w| !w.starts_with('-') && !w.starts_with('+'));
    if sub.is_some_and(|s| CARGO_FOREIGN.contains(&s.as_str())) {
        return Some(out);
    }
    let mut push = |kind: CargoKind, value: &str| {
        let values: Vec<&str> = match kind {
            CargoKind::Feature => value.split([',', ' ']).collect(),
            _ => vec![value],
        };
        for v in values {
            let v = v.trim();
            let v = if kind == CargoKind::Package { v.split('@').next().unwrap_or("") } else { v };
            // Not a name (`$BIN`, an option, a glob or an empty value): not checked.
            let name_char = |c: char| c.is_alphanumeric() || matches!(c, '-' | '_' | '/' | '.');
            if v.is_empty() || v.starts_with('-') || !v.chars().all(name_char) {
                continue;
            }
            let r = Ref::Cargo { raw: span.to_string(), kind, name: v.to_string() };
            if !out.contains(&r) {
                out.push(r);
            }
        }
    };
    let flag = |w: &str| -> Option<CargoKind> {
        Some(match w {
            "--bin" => CargoKind::Bin,
            "--example" => CargoKind::Example,
            "--test" => CargoKind::Test,
            "--bench" => CargoKind::Bench,
            "--features" | "-F" => CargoKind::Feature,
            "--package" | "-p" => CargoKind::Package,
            _ => return None,
        })
    };
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        if w == "--" {
            break;
        }
        if let Some(kind) = flag(w) {
            // `--bin` without a value lists the binaries; `--test` alone is no name either.
            if let Some(v) = words.get(i + 1).filter(|v| !v.starts_with('-')) {
                push(kind, v);
                i += 1;
            }
        } else if let Some((f, v)) = w.split_once('=')
            && let Some(kind) = flag(f)
        {
            push(kind, v);
        } else if let Some(v) = w.strip_prefix("-p").or_else(|| w.strip_prefix("-F")).filter(|v| !v.is_empty())
            && !w.starts_with("--")
        {
            push(if w.starts_with("-p") { CargoKind::Package } else { CargoKind::Feature }, v);
        }
        i += 1;
    }
    Some(out)
}

/// Splits a command line into words as a shell would for plain quoting (`'a b'`, `"a b"`).
fn shell_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_default().push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_default().push(c),
        }
    }
    words.extend(word);
    words
}

/// Returns the symbol reference a span makes, if any.
pub fn symbol_ref(span: &str) -> Option<Ref> {
    let s = span.strip_suffix("()").unwrap_or(span);
    let qualified = s.contains("::") || s.contains('.');
    let segments: Vec<&str> = s.split("::").flat_map(|p| p.split('.')).collect();
    let ident = |seg: &str| {
        seg.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if segments.is_empty() || !segments.iter().all(|seg| ident(seg)) {
        return None;
    }
    let last = *segments.last()?;
    let inner_upper = s.chars().skip(1).any(|c| c.is_ascii_uppercase());
    if !(qualified || s.contains('_') || inner_upper) {
        return None;
    }
    // A lone `_` or `__` says nothing.
    if !last.chars().any(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    Some(Ref::Symbol { raw: span.to_string(), name: last.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(raw: &str, p: &str, lines: Option<(u64, u64)>) -> Ref {
        Ref::Path { raw: raw.into(), path: p.into(), lines, glob: p.contains(['*', '?', '[']), certain: false }
    }

    fn certain(raw: &str, p: &str, lines: Option<(u64, u64)>) -> Ref {
        Ref::Path { raw: raw.into(), path: p.into(), lines, glob: false, certain: true }
    }

    fn cargo(raw: &str, kind: CargoKind, name: &str) -> Ref {
        Ref::Cargo { raw: raw.into(), kind, name: name.into() }
    }

    fn sym(raw: &str, name: &str) -> Ref {
        Ref::Symbol { raw: raw.into(), name: name.into() }
    }

    #[test]
    fn paths_with_line_suffixes_and_globs() {
        let refs = extract(
            "See `src/api/routes.rs:12`, `./build.sh`, `/etc/x.conf#L3-L9`, `docs/*.md` and `Cargo.toml:3-5`.",
            &[],
        );
        assert_eq!(
            refs,
            [
                certain("src/api/routes.rs:12", "src/api/routes.rs", Some((12, 12))),
                path("./build.sh", "build.sh", None),
                certain("/etc/x.conf#L3-L9", "etc/x.conf", Some((3, 9))),
                path("docs/*.md", "docs/*.md", None),
                path("Cargo.toml:3-5", "Cargo.toml", Some((3, 5))),
            ]
        );
    }

    #[test]
    fn bare_words_with_a_slash_and_an_extension_are_paths() {
        let refs = extract("Handlers live in src/api/routes.rs. Use and/or, see https://x.io/a.html", &[]);
        assert_eq!(refs, [path("src/api/routes.rs", "src/api/routes.rs", None)]);
    }

    #[test]
    fn citations_are_paths_whatever_their_shape() {
        let refs = extract("a fact", &["Makefile:3", "src/lib.rs"]);
        assert_eq!(refs, [certain("Makefile:3", "Makefile", Some((3, 3))), certain("src/lib.rs", "src/lib.rs", None)]);
        // Without an extension or a `/` (docs/behaviour.md, Audit: `Makefile:14`, `.ci/run:3`, `LICENSE`).
        let refs = extract("a fact", &["Makefile:14", ".ci/run:3", "LICENSE"]);
        assert_eq!(
            refs,
            [
                certain("Makefile:14", "Makefile", Some((14, 14))),
                certain(".ci/run:3", ".ci/run", Some((3, 3))),
                certain("LICENSE", "LICENSE", None),
            ]
        );
    }

    #[test]
    fn shapes_only_a_path_has_are_certain_in_text_too() {
        let refs = extract("`Makefile:14`, `.ci/run:3`, `.ci/run`, `scripts/run:3`, `assets/`, `a/b/`", &[]);
        assert_eq!(
            refs,
            [
                certain("Makefile:14", "Makefile", Some((14, 14))),
                certain(".ci/run:3", ".ci/run", Some((3, 3))),
                certain(".ci/run", ".ci/run", None),
                certain("scripts/run:3", "scripts/run", Some((3, 3))),
                certain("assets/", "assets/", None),
                certain("a/b/", "a/b/", None),
            ]
        );
        // A bare `Makefile` may live in any folder, and a host and port is no file.
        assert_eq!(
            extract("`Makefile`, `localhost:8080`, `origin/main`", &[]),
            [path("origin/main", "origin/main", None)]
        );
    }

    #[test]
    fn cargo_commands_name_targets_features_and_packages() {
        let span = "cargo test -p kb-core --test cli --features 'mcp tokens',extra -F=x --bin=kb -- --test other";
        let refs = extract(&format!("Run `{span}`."), &[]);
        assert_eq!(
            refs,
            [
                cargo(span, CargoKind::Package, "kb-core"),
                cargo(span, CargoKind::Test, "cli"),
                cargo(span, CargoKind::Feature, "mcp"),
                cargo(span, CargoKind::Feature, "tokens"),
                cargo(span, CargoKind::Feature, "extra"),
                cargo(span, CargoKind::Feature, "x"),
                cargo(span, CargoKind::Bin, "kb"),
            ]
        );
        let refs = extract("`cargo +nightly run --example demo --bench b --package=x@1.2 -pcore -F serde/derive`", &[]);
        let names: Vec<(CargoKind, &str)> = refs
            .iter()
            .map(|r| match r {
                Ref::Cargo { kind, name, .. } => (*kind, name.as_str()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            names,
            [
                (CargoKind::Example, "demo"),
                (CargoKind::Bench, "b"),
                (CargoKind::Package, "x"),
                (CargoKind::Package, "core"),
                (CargoKind::Feature, "serde/derive"),
            ]
        );
        // Another crate's names, a listing, a variable: nothing to check; never a path or symbol.
        for text in [
            "`cargo install ripgrep --bin rg`",
            "`cargo add serde --features derive`",
            "`cargo run --bin`",
            "`cargo build -p $CRATE`",
            "`cargo nextest run --workspace`",
            "`cargo fmt --all`",
        ] {
            assert_eq!(extract(text, &[]), [], "{text}");
        }
    }

    #[test]
    fn non_references_are_not_flagged() {
        for text in [
            "`https://example.com/a/b.html`",
            "`--release`",
            "`-p`",
            "`~/.cargo/config.toml`",
            "`../other/file.rs`",
            "`cargo`",
            "`nextest`",
            "`v1.2`",
            "`3.12.1`",
            "`dev@example.com`",
            "`cargo nextest run`",
            "`make`",
            "`make -C sub`",
            "`yarn install`",
            "`a b`",
            "```\nsrc/x.rs\n```",
        ] {
            assert_eq!(extract(text, &[]), [], "{text}");
        }
    }

    #[test]
    fn commands_of_each_runner() {
        let refs = extract(
            "`make build`, `just test`, `npm run lint`, `pnpm run dev`, `yarn run ci`, `yarn fmt`, `bun run x`",
            &[],
        );
        let cmd = |raw: &str, tool, t: &str| Ref::Command { raw: raw.into(), tool, target: t.into() };
        assert_eq!(
            refs,
            [
                cmd("make build", Tool::Make, "build"),
                cmd("just test", Tool::Just, "test"),
                cmd("npm run lint", Tool::Package, "lint"),
                cmd("pnpm run dev", Tool::Package, "dev"),
                cmd("yarn run ci", Tool::Package, "ci"),
                cmd("yarn fmt", Tool::Package, "fmt"),
                cmd("bun run x", Tool::Package, "x"),
            ]
        );
    }

    #[test]
    fn symbols_need_an_underscore_an_inner_capital_or_a_qualifier() {
        let refs = extract("`ApiError`, `fit_budget()`, `config::Layout`, `cargo`, `Api`, `__`", &[]);
        assert_eq!(
            refs,
            [sym("ApiError", "ApiError"), sym("fit_budget()", "fit_budget"), sym("config::Layout", "Layout")]
        );
        // A dotted name reads as a file name first; the checker makes it a symbol when no such
        // file exists and its extension is no file extension.
        assert_eq!(symbol_ref("self.load"), Some(sym("self.load", "load")));
    }

    #[test]
    fn a_dotted_name_is_a_path_or_a_symbol_by_its_extension() {
        assert!(known_extension("README.md") && known_extension("x.RS"));
        assert!(!known_extension("user.email") && !known_extension("self.config"));
        // Both shapes are found; the checker decides (a missing `user.email` is not a file).
        assert_eq!(extract("`user.email`", &[]), [path("user.email", "user.email", None)]);
    }

    #[test]
    fn versions_are_recognised() {
        assert!(is_version("v1.2") && is_version("3.12.1") && is_version("1.2.x"));
        assert!(!is_version("a.md") && !is_version("1") && !is_version("v1"));
    }
}
