//! `kb board` and the MCP `context_board` tool: list, get, add, remove or prune an item of the current
//! branch's context board (docs/behaviour.md, The context board).

use super::{Report, View, abs};
pub use crate::board::first_line;
use crate::board::{self, Added, Board, Edit, Item, Src};
#[cfg(feature = "mcp")]
pub use crate::board::{CAPACITY, render};
use crate::error::Diagnostic;
use crate::repo::Repo;
use anyhow::Result;
use serde::Serialize;
use std::io::{self, Write};

/// Returns the branch a board command works on: `--branch`, else the checked-out one.
pub fn branch(repo: &Repo, given: Option<&str>) -> Result<String> {
    match given {
        Some(b) => {
            board::check_branch(b).map_err(anyhow::Error::msg)?;
            Ok(b.to_string())
        }
        None => Ok(board::current_branch(&repo.layout.root)),
    }
}

/// An item's metadata in JSON: `{"src","name","description","read_count","count","created","updated"}`.
#[derive(Serialize)]
struct ItemMeta<'a> {
    src: &'static str,
    name: &'a str,
    description: &'a str,
    read_count: u64,
    count: u64,
    created: &'a str,
    updated: &'a str,
}

fn meta(i: &Item) -> ItemMeta<'_> {
    ItemMeta {
        src: i.src.as_str(),
        name: &i.name,
        description: &i.description,
        read_count: i.read_count,
        count: i.count,
        created: &i.created,
        updated: &i.updated,
    }
}

/// `kb board`. JSON: `{"branch", "path", "count", "capacity", "items":[META...]}`.
pub struct BoardReport {
    board: Board,
    diagnostics: Vec<Diagnostic>,
}

/// Counts one more session that saw the board of `branch`: every item's `count` goes up (a
/// session start, an MCP server's first board request). A failure is a warning, never an error.
pub fn seen(repo: &Repo, branch: &str) -> Option<Diagnostic> {
    let seen = crate::board::Edit { repo, branch: branch.to_string() }.seen();
    seen.err().map(|e| Diagnostic::warning(None, format!("board count not updated: {e}")))
}

/// Lists the board of `branch`; a corrupt board file is a diagnostic and an empty board.
pub fn list(repo: &Repo, branch: &str) -> BoardReport {
    let (board, problem) = board::read(&repo.layout, branch);
    BoardReport { board, diagnostics: problem.into_iter().collect() }
}

impl BoardReport {
    /// The board as read.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub fn board(&self) -> &Board {
        &self.board
    }
}

impl Serialize for BoardReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Json<'a> {
            branch: &'a str,
            path: String,
            count: usize,
            capacity: usize,
            items: Vec<ItemMeta<'a>>,
        }
        Json {
            branch: &self.board.branch,
            path: abs(&self.board.path),
            count: self.board.items.len(),
            capacity: board::CAPACITY,
            items: self.board.items.iter().map(meta).collect(),
        }
        .serialize(s)
    }
}

impl Report for BoardReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let b = &self.board;
        if b.items.is_empty() {
            return writeln!(w, "The context board of branch {} is empty.", v.clean(&b.branch));
        }
        writeln!(w, "Context board of branch {} ({}/{} items):\n", v.clean(&b.branch), b.items.len(), board::CAPACITY)?;
        for i in &b.items {
            writeln!(
                w,
                "{:<5} {} (read {}, seen {}): {}",
                i.src.as_str(),
                v.clean(&i.name),
                i.read_count,
                i.count,
                v.clean(&i.description)
            )?;
        }
        Ok(())
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

/// `kb board get`: the item's content. JSON: META plus `"content"`.
pub struct ItemReport {
    item: Item,
}

/// Returns item `name` and counts the read.
pub fn get(repo: &Repo, branch: &str, name: &str, src: Option<Src>) -> Result<ItemReport> {
    let item = Edit { repo, branch: branch.to_string() }.get(name, src)?;
    Ok(ItemReport { item })
}

impl Serialize for ItemReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Json<'a> {
            #[serde(flatten)]
            meta: ItemMeta<'a>,
            content: &'a str,
        }
        Json { meta: meta(&self.item), content: &self.item.content }.serialize(s)
    }
}

impl Report for ItemReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        writeln!(w, "{}", v.clean(&self.item.content))
    }
}

/// `kb board add` and MCP `add`. JSON: `{"action":"added"|"updated", "src", "name", "count":N,
/// "capacity":25, "redacted":[RULE...]}`.
pub struct AddReport {
    added: Added,
    diagnostics: Vec<Diagnostic>,
}

/// Creates or overwrites item `(src, name)`; from 23 items on, a warning asks to prune.
pub fn add(
    repo: &Repo,
    branch: &str,
    src: Src,
    name: &str,
    description: &str,
    content: &str,
    redact: bool,
) -> Result<AddReport> {
    let added = Edit { repo, branch: branch.to_string() }.add(src, name, description, content, redact)?;
    let mut diagnostics = Vec::new();
    if let Some(aside) = &added.set_aside {
        diagnostics.push(
            Diagnostic::warning(
                None,
                format!("the board file was not a board; kept as {} and replaced", aside.display()),
            )
            .in_file(&board::board_path(&repo.layout, branch)),
        );
    }
    if let Some(full) = prune_warning(added.items) {
        diagnostics.push(Diagnostic::warning(None, full));
    }
    Ok(AddReport { added, diagnostics })
}

/// Returns the warning that a board of `items` items is nearly full (from 23 on).
fn prune_warning(items: usize) -> Option<String> {
    (items >= board::WARN_AT).then(|| {
        format!("the board holds {items} of {} items: prune it to {} or fewer", board::CAPACITY, board::PRUNE_TO)
    })
}

impl AddReport {
    /// The warning that the board is nearly full, for a face that shows no stderr (MCP).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub fn nearly_full(&self) -> Option<String> {
        prune_warning(self.added.items)
    }

    /// The secret rules whose matches were redacted.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub fn redacted(&self) -> &[&'static str] {
        &self.added.redacted
    }
}

impl Serialize for AddReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Json<'a> {
            action: &'static str,
            src: &'static str,
            name: &'a str,
            count: usize,
            capacity: usize,
            redacted: &'a [&'static str],
        }
        let a = &self.added;
        Json {
            action: if a.replaced { "updated" } else { "added" },
            src: a.item.src.as_str(),
            name: &a.item.name,
            count: a.items,
            capacity: board::CAPACITY,
            redacted: &a.redacted,
        }
        .serialize(s)
    }
}

impl Report for AddReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let a = &self.added;
        let verb = if a.replaced { "Updated" } else { "Added" };
        writeln!(
            w,
            "{} {verb} {} item {} ({}/{} items)",
            v.style.ok("✓"),
            a.item.src.as_str(),
            v.clean(&a.item.name),
            a.items,
            board::CAPACITY
        )
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

/// `kb board remove` and MCP `prune`. JSON: `{"removed":NAME, "src"}`.
#[derive(Serialize)]
pub struct RemoveReport {
    removed: String,
    src: &'static str,
}

/// Deletes item `name`; `only` restricts it to one src (agents prune agent items only).
pub fn remove(repo: &Repo, branch: &str, name: &str, src: Option<Src>, only: Option<Src>) -> Result<RemoveReport> {
    let item = Edit { repo, branch: branch.to_string() }.remove(name, src, only)?;
    Ok(RemoveReport { removed: item.name, src: item.src.as_str() })
}

impl Report for RemoveReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        writeln!(w, "{} Removed {} item {}", v.style.ok("✓"), self.src, v.clean(&self.removed))
    }
}
