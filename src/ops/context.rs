//! `kb context` and the MCP context resource: the always-loaded block (SPEC §8).

use super::{Report, View, abs};
use crate::context::{self, Block};
use crate::error::Diagnostic;
use crate::paths::Layout;
use serde::Serialize;
use std::io::{self, Write};

/// The block and its warnings. JSON: `{"text":S|null, "bytes":N, "truncated":bool,
/// "sections":[SECTION...], "warnings":[S...]}`, a section being `{"title", "path":ABS, "bytes",
/// "budget":N|null, "over_budget", "cut_bytes"}` (`bytes` is the body as read, `cut_bytes` what
/// truncation removed from it).
pub struct ContextReport {
    pub block: Block,
    /// Each warning as shown to people, paths relative to the root.
    warnings: Vec<String>,
}

/// Builds the block for the repository at `layout`; `wrap` puts it in `<system-reminder>`.
pub fn context(layout: &Layout, wrap: bool) -> ContextReport {
    let block = context::build(layout, wrap);
    let warnings = block.warnings.iter().map(|w| w.render(|p| super::rel(&layout.root, p).into_owned())).collect();
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
