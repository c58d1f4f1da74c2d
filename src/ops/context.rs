//! `kb context`, the MCP `get_context` tool and the context resource: the compiled block
//! (docs/behaviour.md, The context block: Layers and Budgets).

use super::{Report, View, abs};
use crate::context::block::{Block, LayerReport};
use crate::error::{Diagnostic, KbError};
use crate::knowledge::Knowledge;
use crate::repo::Repo;
use crate::settings::{BlockRequest, MIN_MAX_TOKENS, TargetSpec};
use serde::Serialize;
use std::io::{self, Write};
use std::path::Path;

/// What to do with a `for` path outside the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outside {
    /// Refuse the request (the command line, MCP).
    Refuse,
    /// Leave the path out: it cannot match an instruction (a compile target; `kb check` reports
    /// it).
    Skip,
}

/// Checks a block request as a face built it (`kb context`'s flags, an MCP `get_context` call, a
/// compile target's options) and returns it ready for the compiler: an agent name kb accepts, a
/// budget of at least [`MIN_MAX_TOKENS`], `for` paths inside the root made root-relative (one
/// outside is refused or skipped as `outside` says). One check for every face.
pub fn check(req: BlockRequest, root: &Path, outside: Outside) -> Result<BlockRequest, KbError> {
    if let Some(agent) = &req.agent {
        crate::format::text::check_agent(agent).map_err(|why| KbError::rejected("agent", why))?;
    }
    if req.max_tokens.is_some_and(|n| n < MIN_MAX_TOKENS) {
        return Err(KbError::rejected("max_tokens", format!("max_tokens must be at least {MIN_MAX_TOKENS}")));
    }
    let mut for_paths = Vec::with_capacity(req.for_paths.len());
    for p in &req.for_paths {
        match (crate::instructions::relative_path(root, Path::new(p)), outside) {
            (Ok(rel), _) => for_paths.push(rel),
            (Err(_), Outside::Skip) => {}
            (Err(e), Outside::Refuse) => {
                return Err(KbError::rejected("for", format!("for: {e}: give a path inside the repository")));
            }
        }
    }
    Ok(BlockRequest { for_paths, ..req })
}

/// The block and its warnings. JSON: `{"text":S|null, "bytes":N, "truncated":bool,
/// "tokens":N, "max_tokens":N|null, "layers":[LAYER...], "sections":[SECTION...],
/// "warnings":[S...]}`, a section being `{"title", "path":ABS, "bytes", "budget":N|null,
/// "over_budget", "cut_bytes"}` (`bytes` is the body as read, `cut_bytes` what did not fit) and a
/// layer `{"name", "items", "tokens", "dropped_items", "dropped_tokens"}`.
pub struct ContextReport {
    pub block: Block,
    /// Each warning as shown to people, paths relative to the root.
    warnings: Vec<String>,
}

/// Compiles the block `req` asks for from `k`.
pub fn context(k: &Knowledge<'_>, req: &BlockRequest) -> ContextReport {
    report(k.repo(), crate::context::build(k, req))
}

fn report(repo: &Repo, block: Block) -> ContextReport {
    let warnings = block.warnings.iter().map(|w| w.render(|p| super::rel(&repo.layout.root, p).into_owned())).collect();
    ContextReport { block, warnings }
}

impl Serialize for ContextReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct SectionJson<'a> {
            title: &'a str,
            path: String,
            bytes: usize,
            budget: Option<usize>,
            over_budget: bool,
            cut_bytes: usize,
        }
        #[derive(Serialize)]
        struct ContextJson<'a> {
            text: Option<&'a str>,
            bytes: usize,
            truncated: bool,
            tokens: Option<usize>,
            max_tokens: Option<u32>,
            layers: &'a [LayerReport],
            sections: Vec<SectionJson<'a>>,
            warnings: &'a [String],
        }
        let b = &self.block;
        let sections = b
            .sections
            .iter()
            .map(|s| SectionJson {
                title: &s.title,
                path: abs(&s.path),
                bytes: s.bytes,
                budget: s.budget,
                over_budget: s.over_budget,
                cut_bytes: s.cut_bytes,
            })
            .collect();
        ContextJson {
            text: b.text.as_deref(),
            bytes: b.bytes,
            truncated: b.truncated,
            tokens: b.tokens,
            max_tokens: b.max_tokens,
            layers: &b.layers,
            sections,
            warnings: &self.warnings,
        }
        .serialize(s)
    }
}

impl Report for ContextReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        match &self.block.text {
            Some(text) => writeln!(w, "{}", v.clean(text)),
            None => Ok(()),
        }
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.block.warnings
    }
}

/// Returns the block request of a target, checked ([`check`]). Settings
/// checked the target when they were read; a `for` path outside the root is left out.
pub fn request_of(repo: &Repo, spec: &TargetSpec) -> BlockRequest {
    // The settings checked the agent and the budget when they were read, so only a `for` path
    // can be wrong here, and one outside the root is left out.
    check(spec.block.clone(), &repo.layout.root, Outside::Skip).unwrap_or_default()
}
