//! The references an item's text makes to the repository (docs/behaviour.md, Audit): paths (with a line suffix,
//! or a glob), make/just/npm/pnpm/yarn/bun targets, and code symbols. Pure text work: nothing
//! here looks at a file; [`super::Checker`] checks what is found.
//!
//! - A **path** is a record's citation, a backticked span that names a file or folder (it holds a
//!   `/` or ends in `.` + 1–6 letters and digits holding a letter; no white space; not a URL, an
//!   option, an e-mail address or a version), or a bare word holding a `/` that ends in such an
//!   extension. An optional `:N`, `:N-M` or `#LN` suffix names lines. A leading `./` or `/` is
//!   dropped; `~` and `..` paths are not checked.
//! - A **command** is a backticked span starting `make T`, `just T`, `npm run T`, `pnpm run T`,
//!   `yarn run T`, `yarn T` (T not one of yarn's own commands) or `bun run T`.
//! - A **symbol** is a backticked identifier, optionally qualified by `::` or `.`, holding an `_`,
//!   an inner upper-case letter or a qualifier (`ApiError`, `fit_budget`, `config::Layout`); a
//!   trailing `()` is allowed. Its last segment is what is looked for.

/// One reference found in an item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ref {
    /// A file or folder, relative to the root, and the lines it names.
    Path { raw: String, path: String, lines: Option<(u64, u64)>, glob: bool },
    /// A target of a task runner.
    Command { raw: String, tool: Tool, target: String },
    /// A code symbol: the whole span, and the last segment looked for.
    Symbol { raw: String, name: String },
}

/// The task runner a command names, and the manifest its targets are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
        if let Some(r) = command_ref(span) {
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
            && let Some(Ref::Path { raw, path, lines, glob }) = path_ref(word, false)
            && has_extension(&path)
        {
            push(Ref::Path { raw, path, lines, glob });
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
    let p = p.trim_end_matches('/');
    if p.is_empty() || p == "." || is_version(p) {
        return None;
    }
    if !citation {
        let slash = p.contains('/') || s.ends_with('/');
        if !slash && !has_extension(p) {
            return None;
        }
        // A span of code (`a::b`, a call, an assignment) is not a path.
        if p.contains("::") || p.contains(['(', ')', '=', ',', ';', '"', '\'', '<', '>', '|', '$', '{', '}']) {
            return None;
        }
        if !p.chars().any(char::is_alphanumeric) {
            return None;
        }
    }
    let glob = p.contains(['*', '?', '[']);
    Some(Ref::Path { raw: s.to_string(), path: p.to_string(), lines, glob })
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
        Ref::Path { raw: raw.into(), path: p.into(), lines, glob: p.contains(['*', '?', '[']) }
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
                path("src/api/routes.rs:12", "src/api/routes.rs", Some((12, 12))),
                path("./build.sh", "build.sh", None),
                path("/etc/x.conf#L3-L9", "etc/x.conf", Some((3, 9))),
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
        assert_eq!(refs, [path("Makefile:3", "Makefile", Some((3, 3))), path("src/lib.rs", "src/lib.rs", None)]);
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
