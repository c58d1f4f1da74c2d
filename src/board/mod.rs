//! The context board (GitHub Copilot CLI's dynamic context board, kept by kb; docs/behaviour.md,
//! The context board): a small scratchpad of reusable facts per repository and branch,
//! `.co-cli/state/board/<branch>.json`, local state that is never committed. People (the CLI)
//! write `user` items, agents (MCP) `agent` items; an agent can never prune what a person wrote.
//! At most 25 items.

use crate::error::{Diagnostic, KbError, io_at};
use crate::paths::Layout;
use crate::repo::Repo;
use crate::secrets;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

type Result<T> = std::result::Result<T, KbError>;

/// The most items a board holds.
pub const CAPACITY: usize = 25;
/// From this many items on, adding warns.
pub const WARN_AT: usize = 23;
/// What a warning asks a board to be pruned to.
pub const PRUNE_TO: usize = 18;
const NAME_MAX: usize = 64;
const DESCRIPTION_MAX: usize = 200;

pub use crate::kinds::Src;

/// One board item, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    pub src: Src,
    pub name: String,
    pub description: String,
    pub content: String,
    #[serde(default)]
    pub read_count: u64,
    #[serde(default)]
    pub count: u64,
    pub created: String,
    pub updated: String,
}

/// One branch's board as read.
#[derive(Debug, Clone, Default)]
pub struct Board {
    pub branch: String,
    pub path: PathBuf,
    pub items: Vec<Item>,
}

/// Returns the branch the repository has checked out: from `.git/HEAD` (a worktree's `.git`
/// file is followed), `detached` for a detached HEAD, `default` outside git.
pub fn current_branch(root: &Path) -> String {
    let Some(git_dir) = crate::git::git_dir(root) else { return "default".into() };
    let head = match crate::fsio::read_input(&git_dir.join("HEAD"), Path::new("/")) {
        Ok(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
        _ => return "default".into(),
    };
    match head.trim().strip_prefix("ref:").map(str::trim).and_then(|r| r.strip_prefix("refs/heads/")) {
        Some(branch) if !branch.is_empty() => branch.to_string(),
        _ => "detached".into(),
    }
}

/// The longest board file name kept as the branch spells it; file systems allow 255 bytes.
const MAX_NAME_BYTES: usize = 200;

/// Returns the board file of `branch`: `/` becomes `%2F` (and `%` itself `%25`, so two branch
/// names never share a file). A name longer than [`MAX_NAME_BYTES`] (git allows long branch
/// names) becomes its first 160 bytes and a hash of the whole name, so every branch has a file.
pub fn board_path(layout: &Layout, branch: &str) -> PathBuf {
    let mut file = branch.replace('%', "%25").replace('/', "%2F");
    if file.len() > MAX_NAME_BYTES {
        let mut cut = 160;
        while !file.is_char_boundary(cut) {
            cut -= 1;
        }
        file = format!("{}~{:016x}", &file[..cut], xxhash_rust::xxh3::xxh3_64(branch.as_bytes()));
    }
    layout.co_cli().join("state").join("board").join(format!("{file}.json"))
}

/// Checks a `--branch` value.
pub fn check_branch(branch: &str) -> std::result::Result<(), String> {
    if branch.is_empty() || branch.chars().any(char::is_control) || branch.starts_with('.') || branch.contains('\\') {
        Err(format!("invalid branch {branch:?}"))
    } else {
        Ok(())
    }
}

/// Reads a board. A missing file is an empty board; a file that is not a board (corrupt, torn,
/// edited by hand) is an empty board and a diagnostic; nothing is written.
pub fn read(layout: &Layout, branch: &str) -> (Board, Option<Diagnostic>) {
    let (mut board, problem) = read_path(layout, &board_path(layout, branch));
    board.branch = branch.to_string();
    (board, problem)
}

/// Reads the board file at `path` as [`read`] does (its `branch` left empty).
fn read_path(layout: &Layout, path: &Path) -> (Board, Option<Diagnostic>) {
    let path = path.to_path_buf();
    let mut board = Board { branch: String::new(), path: path.clone(), items: Vec::new() };
    let bytes = match crate::fsio::read_input(&path, &layout.root) {
        Ok(Some(b)) => b,
        Ok(None) => return (board, None),
        Err(e) => return (board, Some(Diagnostic::error(None, format!("cannot read the board: {e}")).in_file(&path))),
    };
    match serde_json::from_slice::<Vec<Item>>(&bytes) {
        Ok(items) => {
            board.items = items;
            (board, None)
        }
        Err(e) => {
            let msg = format!("not a board (a JSON array of items): {e}; read as empty");
            (board, Some(Diagnostic::error(Some(e.line()), msg).in_file(&path)))
        }
    }
}

/// A change to a board, under the lock.
pub struct Edit<'r> {
    pub repo: &'r Repo,
    pub branch: String,
}

/// What an add did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    pub item: Item,
    /// Whether an item of the same src and name was overwritten.
    pub replaced: bool,
    /// Items on the board now.
    pub items: usize,
    pub redacted: Vec<&'static str>,
    /// A corrupt board file that the write replaced, kept aside at this path.
    pub set_aside: Option<PathBuf>,
}

impl Edit<'_> {
    /// Reads the board for a change: a corrupt file is moved aside (kept, never lost) with a
    /// note, and the change starts from an empty board.
    fn load(&self) -> Result<(Board, Option<PathBuf>)> {
        let (board, problem) = read(&self.repo.layout, &self.branch);
        let Some(_) = problem else { return Ok((board, None)) };
        if !board.path.exists() {
            return Ok((board, None));
        }
        let aside = board.path.with_extension(format!("json.corrupt-{}", self.repo.now.format("%Y%m%dT%H%M%S%.6fZ")));
        std::fs::rename(&board.path, &aside).map_err(io_at(&board.path))?;
        Ok((board, Some(aside)))
    }

    fn save(&self, board: &Board) -> Result<()> {
        write(self.repo, &board.path, &board.items)
    }

    /// Creates or overwrites the item `(src, name)`. A new item on a full board fails ("prune
    /// first"). Every field passes the secret filter: refused, or with `redact` stored as
    /// `[REDACTED:<rule>]`.
    pub fn add(&self, src: Src, name: &str, description: &str, content: &str, redact: bool) -> Result<Added> {
        check_name(name)?;
        let description = description.trim();
        if description.is_empty() || description.contains(['\n', '\r']) || description.chars().count() > DESCRIPTION_MAX
        {
            return Err(KbError::rejected(
                "description",
                format!("a board item's description is one line of 1 to {DESCRIPTION_MAX} characters"),
            ));
        }
        let content = content.trim();
        if content.is_empty() {
            return Err(KbError::rejected("content", "nothing to add: the content is empty"));
        }
        // A name is the item's key: one with a secret is refused even with `redact` (a redacted
        // name would no longer be kebab-case).
        if let Some(found) = secrets::scan(name).first() {
            return Err(KbError::rejected(
                "name",
                format!(
                    "the name matches the {} secret rule: a board item's name cannot hold a secret, even redacted",
                    found.rule
                ),
            ));
        }
        let mut screen = secrets::Screen::new(redact);
        let description = screen.field("description", description.to_string())?;
        let content = screen.field("content", content.to_string())?;
        let redacted = screen.redacted();
        let _lock = self.repo.lock()?;
        let (mut board, set_aside) = self.load()?;
        let now = crate::format::time::py_isoformat(self.repo.now);
        let existing = board.items.iter().position(|i| i.src == src && i.name == name);
        let at = match existing {
            Some(at) => {
                let item = &mut board.items[at];
                item.description = description;
                item.content = content;
                item.updated = now;
                at
            }
            None => {
                if board.items.len() >= CAPACITY {
                    return Err(KbError::refused(
                        "board add",
                        format!("the board of branch {} is full ({CAPACITY} items): prune first", board.branch),
                    ));
                }
                board.items.push(Item {
                    src,
                    name: name.to_string(),
                    description,
                    content,
                    read_count: 0,
                    count: 0,
                    created: now.clone(),
                    updated: now,
                });
                board.items.len() - 1
            }
        };
        self.save(&board)?;
        let (item, replaced) = (board.items[at].clone(), existing.is_some());
        Ok(Added { item, replaced, items: board.items.len(), redacted, set_aside })
    }

    /// Returns the item `name` (of `src`, when given) and adds 1 to its `read_count`.
    pub fn get(&self, name: &str, src: Option<Src>) -> Result<Item> {
        let _lock = self.repo.lock()?;
        let (mut board, problem) = read(&self.repo.layout, &self.branch);
        if let Some(p) = problem {
            return Err(KbError::BadFile(p));
        }
        let i = find(&board, name, src)?;
        board.items[i].read_count = board.items[i].read_count.saturating_add(1);
        self.save(&board)?;
        Ok(board.items[i].clone())
    }

    /// Deletes the item `name` (of `src`, when given; `only` restricts what may be deleted:
    /// agents prune agent items only).
    pub fn remove(&self, name: &str, src: Option<Src>, only: Option<Src>) -> Result<Item> {
        let _lock = self.repo.lock()?;
        let (mut board, problem) = read(&self.repo.layout, &self.branch);
        if let Some(p) = problem {
            return Err(KbError::BadFile(p));
        }
        // Pruning is for one src only: a person's item of that name is not the agent's to delete.
        if only.is_some_and(|o| !board.items.iter().any(|i| i.name == name && i.src == o)) {
            if board.items.iter().any(|i| i.name == name) {
                return Err(KbError::refused(
                    "board remove",
                    format!(
                        "board item {name} was written by a person: only a person removes it (kb board remove {name})"
                    ),
                ));
            }
            return Err(not_found(&board, name));
        }
        let i = find(&board, name, only.or(src))?;
        let item = board.items.remove(i);
        self.save(&board)?;
        Ok(item)
    }

    /// Adds 1 to every item's `count`: a new session sees the board. Nothing is written when the
    /// board is empty or unreadable.
    pub fn seen(&self) -> Result<()> {
        let _lock = self.repo.lock()?;
        let (mut board, problem) = read(&self.repo.layout, &self.branch);
        if problem.is_some() || board.items.is_empty() {
            return Ok(());
        }
        for item in &mut board.items {
            item.count = item.count.saturating_add(1);
        }
        self.save(&board)
    }
}

/// Writes the board file at `path` holding `items`, atomically. The caller holds the lock.
fn write(repo: &Repo, path: &Path, items: &[Item]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    repo.guard(dir)?;
    crate::paths::ensure_ignored_dir(&repo.layout.co_cli().join("state")).map_err(io_at(dir))?;
    std::fs::create_dir_all(dir).map_err(io_at(dir))?;
    let text = file_text(items)?;
    crate::fsio::write_atomic(path, text.as_bytes()).map_err(io_at(path))
}

/// Returns whether `path` is a board file's place (`.co-cli/state/board/*.json`).
pub fn is_board_path(layout: &Layout, path: &Path) -> bool {
    path.parent() == board_path(layout, "x").parent() && path.extension().is_some_and(|e| e == "json")
}

/// Items to put back into a board: what undoing a `kb consolidate` does to a board that changed
/// since it pruned it ([`PutBack::plan`], then [`PutBack::write`]).
#[derive(Debug, Clone)]
pub struct PutBack {
    path: PathBuf,
    items: Vec<Item>,
    /// The names of the items put back (those already on the board are not).
    pub names: Vec<String>,
}

impl PutBack {
    /// Plans putting `back` (items with their positions before they were removed, counters and
    /// all) into the board at `path` as it is now: each goes back at its old position (or at the
    /// end); one that is on the board already, identical, stays as it is. Whatever else changed
    /// on the board stays too. Fails, writing nothing, when the board does not read as a board or
    /// holds another item of the same src and name (written again since). The caller holds the
    /// lock.
    pub fn plan(layout: &Layout, path: &Path, mut back: Vec<(usize, Item)>) -> Result<PutBack> {
        let (board, problem) = read_path(layout, path);
        if let Some(p) = problem {
            return Err(KbError::BadFile(p));
        }
        let mut items = board.items;
        let mut names = Vec::new();
        back.sort_by_key(|(at, _)| *at);
        for (at, item) in back {
            match items.iter().find(|i| i.src == item.src && i.name == item.name) {
                Some(now) if *now == item => {}
                Some(_) => {
                    return Err(KbError::refused(
                        "undo",
                        format!("board item {} ({}) was written again since", item.name, item.src.as_str()),
                    ));
                }
                None => {
                    names.push(item.name.clone());
                    items.insert(at.min(items.len()), item);
                }
            }
        }
        Ok(PutBack { path: path.to_path_buf(), items, names })
    }

    /// Writes the board with the items put back. The caller holds the lock.
    pub fn write(&self, repo: &Repo) -> Result<()> {
        write(repo, &self.path, &self.items)
    }
}

/// Returns a description made from an item's content: its first non-blank line, cut to
/// [`DESCRIPTION_MAX`] characters (with `...` when cut).
pub fn first_line(content: &str) -> String {
    let line = content.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    if line.chars().count() <= DESCRIPTION_MAX {
        return line.to_string();
    }
    let kept: String = line.chars().take(DESCRIPTION_MAX - 3).collect();
    format!("{}...", kept.trim_end())
}

/// Returns a board file's text: the items as a pretty JSON array and a line feed.
pub fn file_text(items: &[Item]) -> Result<String> {
    let mut text = serde_json::to_string_pretty(items).map_err(|e| KbError::Internal(e.to_string()))?;
    text.push('\n');
    Ok(text)
}

/// Returns the index of item `name` (of `src`, when given); two items of that name without a
/// `src` to choose is an error naming both.
fn find(board: &Board, name: &str, src: Option<Src>) -> Result<usize> {
    let hits: Vec<usize> = (0..board.items.len())
        .filter(|&i| board.items[i].name == name && src.is_none_or(|s| board.items[i].src == s))
        .collect();
    match hits.as_slice() {
        [one] => Ok(*one),
        [] => Err(not_found(board, name)),
        _ => Err(KbError::rejected(
            "name",
            format!("board items of agent and user are both named {name}: pass --src agent or --src user"),
        )),
    }
}

/// The error for item `name`, not on `board`.
fn not_found(board: &Board, name: &str) -> KbError {
    KbError::NotFound { thing: "board item", id: name.to_string(), branch: Some(board.branch.clone()) }
}

/// Checks an item name: kebab-case, at most 64 characters.
pub fn check_name(name: &str) -> Result<()> {
    let kebab = !name.is_empty()
        && name.len() <= NAME_MAX
        && name
            .split('-')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
    if kebab {
        Ok(())
    } else {
        Err(KbError::rejected(
            "name",
            format!(
                "invalid board item name {name:?}: kebab-case (a-z, 0-9, single '-'), at most {NAME_MAX} characters"
            ),
        ))
    }
}

/// Returns the board as agents see it: a `<dynamic_context_board>` section with a
/// markdown table of the items' metadata and one line on how to read an item's content.
pub fn render(board: &Board) -> Option<String> {
    if board.items.is_empty() {
        return None;
    }
    let cell = |s: &str| s.replace('\\', "\\\\").replace('|', "\\|");
    let mut out = String::from(
        "<dynamic_context_board>\n| src | name | description | read_count | count |\n| --- | --- | --- | --- | --- |\n",
    );
    for i in &board.items {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            i.src.as_str(),
            cell(&i.name),
            cell(&i.description),
            i.read_count,
            i.count
        ));
    }
    out.push_str(
        "\nTo read an item's full content, call the context_board tool with command \"get\" and the item's src and name.\n</dynamic_context_board>",
    );
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_from_head() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(current_branch(dir.path()), "default");
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/HEAD"), "ref: refs/heads/feature/board\n").unwrap();
        assert_eq!(current_branch(dir.path()), "feature/board");
        std::fs::write(dir.path().join(".git/HEAD"), "4b825dc642cb6eb9a060e54bf8d69288fbee4904\n").unwrap();
        assert_eq!(current_branch(dir.path()), "detached");
        let l = Layout { root: dir.path().to_path_buf(), config: None };
        assert!(board_path(&l, "feature/a%b").ends_with("state/board/feature%2Fa%25b.json"));
    }

    #[test]
    fn names_are_kebab_case() {
        for ok in ["a", "build-recipe", "v2-api-3"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Build", "a--b", "-a", "a-", "a_b", "a b", &"a".repeat(65)] {
            assert!(matches!(check_name(bad), Err(KbError::Rejected { what: "name", .. })), "{bad}");
        }
    }

    #[test]
    fn renders_a_table_with_escaped_cells() {
        let item = |src, name: &str, d: &str| Item {
            src,
            name: name.into(),
            description: d.into(),
            content: "c".into(),
            read_count: 2,
            count: 1,
            created: String::new(),
            updated: String::new(),
        };
        let board =
            Board { items: vec![item(Src::Agent, "a", "x | y"), item(Src::User, "b", "z")], ..Board::default() };
        let text = render(&board).unwrap();
        assert!(text.starts_with("<dynamic_context_board>\n| src | name | description | read_count | count |\n"));
        assert!(text.contains("| agent | a | x \\| y | 2 | 1 |\n| user | b | z | 2 | 1 |\n"));
        assert!(text.ends_with("</dynamic_context_board>"));
        assert_eq!(render(&Board::default()), None);
    }

    #[test]
    fn a_name_finds_one_item_of_the_branch() {
        let item = |src| Item {
            src,
            name: "a".into(),
            description: "d".into(),
            content: "c".into(),
            read_count: 0,
            count: 0,
            created: String::new(),
            updated: String::new(),
        };
        let board = Board { branch: "main".into(), items: vec![item(Src::Agent), item(Src::User)], ..Board::default() };
        assert_eq!(find(&board, "a", Some(Src::User)).unwrap(), 1);
        let e = find(&board, "b", None).unwrap_err();
        assert!(matches!(&e, KbError::NotFound { thing: "board item", branch: Some(b), .. } if b == "main"));
        assert_eq!(e.to_string(), "board item b not found on branch main");
        let e = find(&board, "a", None).unwrap_err();
        assert!(matches!(e, KbError::Rejected { what: "name", .. }), "{e}");
    }
}
