//! `kb context`, the MCP `get_context` tool and the context resource: the compiled block
//! (SPEC §8, §11.5, §11.6).

use super::{Report, View, abs};
use crate::context::block::{Block, LayerReport, Request};
use crate::error::Diagnostic;
use crate::repo::Repo;
use serde::Serialize;
use std::io::{self, Write};

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

/// Compiles the block `req` asks for.
pub fn context(repo: &Repo, req: &Request) -> ContextReport {
    let block = crate::context::build(repo, req);
    let warnings = block.warnings.iter().map(|w| w.render(|p| super::rel(&repo.layout.root, p).into_owned())).collect();
    ContextReport { block, warnings }
}

impl Serialize for ContextReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct SectionJson {
            title: &'static str,
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
            sections: Vec<SectionJson>,
            warnings: &'a [String],
        }
        let b = &self.block;
        let sections = b
            .sections
            .iter()
            .map(|s| SectionJson {
                title: s.kind.title(),
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
