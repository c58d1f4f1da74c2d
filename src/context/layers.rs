//! The compiled block as layers of whole items, and fitting it into a budget: tokens when a budget
//! is set, else the block's byte limit, removing whole items lowest priority first and cutting the
//! context files last, section-aware (docs/behaviour.md, Layers and Budgets).
//!
//! Nothing here reads a file: `gather` builds the layers, this module renders and fits them.

use crate::format::markdown;

/// The layers, in priority order (highest first); also their order in the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LayerKind {
    Decisions,
    Global,
    /// The context files of the shared sources (docs/shared.md), one item each with its heading.
    SharedContext,
    Project,
    RepositoryMemories,
    Instructions,
    CoreContext,
    Hot,
    Learnings,
    Session,
    Board,
}

impl LayerKind {
    /// Every layer, in priority order.
    pub const ALL: [LayerKind; 11] = [
        LayerKind::Decisions,
        LayerKind::Global,
        LayerKind::SharedContext,
        LayerKind::Project,
        LayerKind::RepositoryMemories,
        LayerKind::Instructions,
        LayerKind::CoreContext,
        LayerKind::Hot,
        LayerKind::Learnings,
        LayerKind::Session,
        LayerKind::Board,
    ];

    /// Returns the layer's name in JSON and in the left-out marker.
    pub fn name(self) -> &'static str {
        match self {
            LayerKind::Decisions => "decisions",
            LayerKind::Global => "global",
            LayerKind::SharedContext => "shared_context",
            LayerKind::Project => "project",
            LayerKind::RepositoryMemories => "repository_memories",
            LayerKind::Instructions => "instructions",
            LayerKind::CoreContext => "core_context",
            LayerKind::Hot => "hot",
            LayerKind::Learnings => "learnings",
            LayerKind::Session => "session",
            LayerKind::Board => "board",
        }
    }

    /// Returns the heading the layer's items sit under, for messages.
    pub fn title(self) -> &'static str {
        match self {
            LayerKind::Decisions => "Boundaries and Decisions",
            LayerKind::Global => "Global Context",
            LayerKind::SharedContext => "Shared Context",
            LayerKind::Project => "Project Context",
            LayerKind::RepositoryMemories => "Repository Memories",
            LayerKind::Instructions => "Scoped Instructions",
            LayerKind::CoreContext => "Core Context",
            LayerKind::Hot => "Hot Memories",
            LayerKind::Learnings => "Learnings",
            LayerKind::Session => "Current Session",
            LayerKind::Board => "Context Board",
        }
    }

    /// Whether the layer is one context file, cut section-aware rather than removed item by item.
    fn is_file(self) -> bool {
        matches!(self, LayerKind::Global | LayerKind::Project)
    }
}

/// The order in which an over-budget block loses its content: the board, the
/// session (its summary first), learnings, hot memories, Repository Memories, scoped
/// instructions, core context, the shared sources' context files, then the Project and Global
/// Context are cut. Decisions never go.
const REMOVAL: [LayerKind; 8] = [
    LayerKind::Board,
    LayerKind::Session,
    LayerKind::Learnings,
    LayerKind::Hot,
    LayerKind::RepositoryMemories,
    LayerKind::Instructions,
    LayerKind::CoreContext,
    LayerKind::SharedContext,
];
const CUT: [LayerKind; 2] = [LayerKind::Project, LayerKind::Global];

/// One layer: its items as they appear in the block, and the order they go in when the block is
/// over its budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    pub kind: LayerKind,
    /// Each item's text, in block order. A decision or memory item is `- ` and its content with
    /// further lines indented; an instruction is `### name` and its body; a context file is its
    /// body.
    pub items: Vec<String>,
    /// Indices into `items`, the first to be removed first.
    pub removal: Vec<usize>,
}

impl Layer {
    /// Returns a layer whose items go last first (block order reversed).
    pub fn last_first(kind: LayerKind, items: Vec<String>) -> Layer {
        let removal = (0..items.len()).rev().collect();
        Layer { kind, items, removal }
    }

    /// Returns a layer whose items go in `removal` order.
    pub fn with_removal(kind: LayerKind, items: Vec<String>, removal: Vec<usize>) -> Layer {
        debug_assert_eq!(removal.len(), items.len());
        Layer { kind, items, removal }
    }
}

/// Returns a list item: `- ` and `text`, its further lines indented two spaces (blank lines stay
/// blank).
pub fn list_item(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str("- ");
    for (i, line) in text.lines().enumerate() {
        if i > 0 {
            out.push('\n');
            if !line.is_empty() {
                out.push_str("  ");
            }
        }
        out.push_str(line);
    }
    out
}

/// The heading of the decisions section, the block's first when there are decisions.
pub const DECISIONS_HEADER: &str = "## Boundaries and Decisions";
/// The line under the decisions heading.
pub const DECISIONS_PREAMBLE: &str = "These decisions take precedence over all other context.";
const WRAP_OPEN: &str = "<system-reminder>\n";
const WRAP_CLOSE: &str = "\n</system-reminder>";

/// How much of each item is kept: its byte length when whole, 0 when removed, a prefix length
/// for a cut context file.
pub type Kept = Vec<Vec<usize>>;

/// Returns every item whole.
pub fn all_kept(layers: &[Layer]) -> Kept {
    layers.iter().map(|l| l.items.iter().map(String::len).collect()).collect()
}

/// Returns the block text of the kept items (`None` when nothing is kept), with `marker` as its
/// last paragraph and inside `<system-reminder>` lines when `wrap`.
pub fn render(layers: &[Layer], kept: &Kept, marker: Option<&str>, wrap: bool) -> Option<String> {
    let item = |li: usize, i: usize| &layers[li].items[i][..kept[li][i]];
    let kept_items =
        |li: usize| (0..layers[li].items.len()).filter(move |&i| kept[li][i] > 0).map(move |i| item(li, i));
    let of = |kind: LayerKind| layers.iter().position(|l| l.kind == kind);
    let nonempty = |kind: LayerKind| of(kind).is_some_and(|li| kept_items(li).next().is_some());
    let joined = |kind: LayerKind, sep: &str| of(kind).map(|li| kept_items(li).collect::<Vec<_>>().join(sep));

    let mut sections: Vec<String> = Vec::new();
    if nonempty(LayerKind::Decisions) {
        sections.push(format!(
            "{DECISIONS_HEADER}\n\n{DECISIONS_PREAMBLE}\n\n{}",
            joined(LayerKind::Decisions, "\n").unwrap_or_default()
        ));
    }
    let subsections = |kinds: &[LayerKind], header: &str, sep: &str| -> Option<String> {
        let mut s = String::new();
        for &k in kinds.iter().filter(|&&k| nonempty(k)) {
            // A shared source's context item carries its own heading (the source's name).
            if k == LayerKind::SharedContext {
                s.push_str("\n\n");
                s.push_str(&joined(k, "\n\n").unwrap_or_default());
                continue;
            }
            s.push_str("\n\n### ");
            s.push_str(k.title());
            s.push_str("\n\n");
            s.push_str(&joined(k, sep).unwrap_or_default());
        }
        (!s.is_empty()).then(|| format!("{header}{s}"))
    };
    let knowledge = [LayerKind::Global, LayerKind::SharedContext, LayerKind::Project, LayerKind::RepositoryMemories];
    sections.extend(subsections(&knowledge, super::HEADER, "\n"));
    if nonempty(LayerKind::Instructions) {
        sections
            .push(format!("## Scoped Instructions\n\n{}", joined(LayerKind::Instructions, "\n\n").unwrap_or_default()));
    }
    sections.extend(subsections(&[LayerKind::CoreContext, LayerKind::Hot, LayerKind::Learnings], "## Memory", "\n"));
    if nonempty(LayerKind::Session) {
        sections.push(format!("## Current Session\n\n{}", joined(LayerKind::Session, "\n\n").unwrap_or_default()));
    }
    if nonempty(LayerKind::Board) {
        sections.push(joined(LayerKind::Board, "\n\n").unwrap_or_default());
    }
    if sections.is_empty() {
        return None;
    }
    let mut text = sections.join("\n\n");
    if let Some(m) = marker {
        text.push_str("\n\n");
        text.push_str(m);
    }
    Some(if wrap { format!("{WRAP_OPEN}{text}{WRAP_CLOSE}") } else { text })
}

/// What the block is measured in: tokens (a budget is set) or UTF-8 bytes (the byte limit).
#[derive(Clone, Copy)]
pub enum Unit<'a> {
    Tokens(&'a dyn Fn(&str) -> usize),
    Bytes,
    /// Unicode scalar values: what an agent that counts characters (Windsurf) counts.
    Chars,
}

impl Unit<'_> {
    pub fn measure(&self, text: &str) -> usize {
        match self {
            Unit::Tokens(count) => count(text),
            Unit::Bytes => text.len(),
            Unit::Chars => text.chars().count(),
        }
    }
}

/// What one layer lost to the budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Items removed whole.
    pub items: usize,
    /// Their size, each measured alone, plus what was cut from a context file.
    pub size: usize,
    /// Whether a context file was cut (kept in part).
    pub cut: bool,
}

/// The outcome of fitting the layers into a limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    pub kept: Kept,
    /// Per layer (same order as the layers), what went.
    pub dropped: Vec<Dropped>,
    /// The final text, marker included; `None` when nothing is left.
    pub text: Option<String>,
    /// The final text's size in the unit fitted.
    pub size: usize,
    /// Whether anything was removed or cut.
    pub truncated: bool,
}

/// Fits `layers` into `limit` (in `unit`), lowest priority first (`REMOVAL`); `marker`
/// makes the last line from what was dropped. When even the decisions alone do not fit, they
/// are all kept (with whatever else cannot go) and the result is over the limit: the caller
/// warns.
pub fn fit(
    layers: &[Layer],
    limit: usize,
    unit: Unit<'_>,
    wrap: bool,
    marker: &dyn Fn(&[Layer], &[Dropped]) -> String,
) -> Fitted {
    let mut kept = all_kept(layers);
    let mut dropped = vec![Dropped::default(); layers.len()];
    let text = render(layers, &kept, None, wrap);
    let size = text.as_deref().map_or(0, |t| unit.measure(t));
    if size <= limit {
        return Fitted { kept, dropped, text, size, truncated: false };
    }
    // Whole items, in removal order, each with its size measured alone (an estimate of what
    // removing it saves: sizes add up but for the separators and headers around them).
    let order: Vec<(usize, usize)> = REMOVAL
        .iter()
        .filter_map(|&k| layers.iter().position(|l| l.kind == k))
        .flat_map(|li| layers[li].removal.iter().map(move |&i| (li, i)))
        .collect();
    let cost: Vec<usize> = order.iter().map(|&(li, i)| unit.measure(&layers[li].items[i])).collect();
    let finish = |kept: &Kept, dropped: &[Dropped]| {
        let m = marker(layers, dropped);
        let text = render(layers, kept, Some(&m), wrap);
        let size = text.as_deref().map_or(0, |t| unit.measure(t));
        (text, size)
    };
    // The state with the first `n` items of `order` removed (and every file whole).
    let removed = |n: usize| {
        let mut kept = all_kept(layers);
        let mut dropped = vec![Dropped::default(); layers.len()];
        for (m, &(li, i)) in order[..n].iter().enumerate() {
            kept[li][i] = 0;
            dropped[li].items += 1;
            dropped[li].size += cost[m];
        }
        (kept, dropped)
    };
    // How many items to keep: guessed from the sizes (they add up but for separators and
    // headers), then settled with exact measures of the whole block, marker included.
    let mut estimate = size + unit.measure(&marker(layers, &dropped));
    let mut guess = 0;
    while guess < order.len() && estimate > limit {
        estimate = estimate.saturating_sub(cost[guess] + 1);
        guess += 1;
    }
    let keep = largest_fitting(order.len(), order.len() - guess, |m| {
        let (k, d) = removed(order.len() - m);
        finish(&k, &d).1 <= limit
    });
    let n = order.len() - keep.unwrap_or(0);
    (kept, dropped) = removed(n);
    let (mut text, mut size) = finish(&kept, &dropped);
    // Then the context files, project first, each cut at the largest block boundary that fits.
    for &kind in &CUT {
        if size <= limit {
            break;
        }
        let Some(li) = layers.iter().position(|l| l.kind == kind && l.kind.is_file()) else { continue };
        let Some(body) = layers[li].items.first() else { continue };
        let with = |k: usize, kept: &mut Kept, dropped: &mut [Dropped]| {
            kept[li][0] = k;
            let cut_part = &body[k..];
            dropped[li] = Dropped {
                items: usize::from(k == 0),
                size: if cut_part.is_empty() { 0 } else { unit.measure(cut_part) },
                cut: k > 0 && k < body.len(),
            };
        };
        // The bytes offered to `markdown::cut` (what it keeps grows with them, and so does the
        // block), guessed in proportion to how far over the block is.
        let over = size - limit;
        let guess = body.len().saturating_sub(body.len().saturating_mul(over) / size.max(1) * 11 / 10);
        let offered = largest_fitting(body.len(), guess, |x| {
            let (mut k, mut d) = (kept.clone(), dropped.clone());
            with(markdown::cut(body, x), &mut k, &mut d);
            finish(&k, &d).1 <= limit
        });
        with(offered.map_or(0, |x| markdown::cut(body, x)), &mut kept, &mut dropped);
        (text, size) = finish(&kept, &dropped);
    }
    Fitted { kept, dropped, text, size, truncated: true }
}

/// Returns the largest `x` in `0..=hi` for which `fits(x)` holds, `fits` being true up to some
/// point and false after it; `None` when not even `fits(0)` holds. The search starts at `guess`
/// and gallops outward, so a close guess costs a few calls (each measures a whole block).
fn largest_fitting(hi: usize, guess: usize, mut fits: impl FnMut(usize) -> bool) -> Option<usize> {
    let guess = guess.min(hi);
    // `lo` fits; `up` does not (or is past `hi`).
    let (mut lo, mut up);
    if fits(guess) {
        lo = guess;
        up = hi + 1;
        let mut step = 1;
        while lo + step <= hi {
            if fits(lo + step) {
                lo += step;
                step *= 2;
            } else {
                up = lo + step;
                break;
            }
        }
    } else {
        up = guess;
        let mut step = 1;
        loop {
            if up == 0 {
                return None;
            }
            let next = up.saturating_sub(step);
            if fits(next) {
                lo = next;
                break;
            }
            up = next;
            step *= 2;
        }
    }
    while up - lo > 1 {
        let mid = lo + (up - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            up = mid;
        }
    }
    Some(lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_fitting_finds_the_edge_from_any_guess() {
        for edge in 0..40usize {
            for guess in 0..45 {
                let mut calls = 0;
                let found = largest_fitting(39, guess, |x| {
                    calls += 1;
                    x <= edge
                });
                assert_eq!(found, Some(edge.min(39)), "edge {edge} guess {guess}");
                assert!(calls <= 14, "{calls} calls");
            }
        }
        assert_eq!(largest_fitting(10, 5, |_| false), None);
        assert_eq!(largest_fitting(0, 0, |_| true), Some(0));
    }

    fn layer(kind: LayerKind, items: &[&str]) -> Layer {
        Layer::last_first(kind, items.iter().map(|s| s.to_string()).collect())
    }

    fn plain_marker(_: &[Layer], d: &[Dropped]) -> String {
        format!("[cut {}]", d.iter().map(|d| d.items).sum::<usize>())
    }

    #[test]
    fn renders_sections_in_order_and_leaves_out_empty_ones() {
        let layers = vec![
            layer(LayerKind::Decisions, &["- Use Postgres", "- Only the API crate talks HTTP"]),
            layer(LayerKind::Project, &["Project body"]),
            layer(LayerKind::RepositoryMemories, &["build: make", "test: make test"]),
            layer(LayerKind::Instructions, &["### rust.instructions.md\n\nUse anyhow."]),
            layer(LayerKind::CoreContext, &["- core"]),
            layer(LayerKind::Hot, &[]),
            layer(LayerKind::Learnings, &["- learned"]),
            layer(LayerKind::Session, &["Focus: tests", "found the race"]),
        ];
        let text = render(&layers, &all_kept(&layers), None, false).unwrap();
        assert_eq!(
            text,
            "## Boundaries and Decisions\n\nThese decisions take precedence over all other context.\n\n\
             - Use Postgres\n- Only the API crate talks HTTP\n\n\
             ## Internal Knowledge\n\n### Project Context\n\nProject body\n\n\
             ### Repository Memories\n\nbuild: make\ntest: make test\n\n\
             ## Scoped Instructions\n\n### rust.instructions.md\n\nUse anyhow.\n\n\
             ## Memory\n\n### Core Context\n\n- core\n\n### Learnings\n\n- learned\n\n\
             ## Current Session\n\nFocus: tests\n\nfound the race"
        );
        let only = vec![layer(LayerKind::Project, &["p"])];
        assert_eq!(
            render(&only, &all_kept(&only), None, true).unwrap(),
            "<system-reminder>\n## Internal Knowledge\n\n### Project Context\n\np\n</system-reminder>"
        );
        let none = vec![layer(LayerKind::Learnings, &[])];
        assert_eq!(render(&none, &all_kept(&none), None, false), None);
    }

    #[test]
    fn list_items_indent_further_lines() {
        assert_eq!(list_item("a\nb\n\nc"), "- a\n  b\n\n  c");
        assert_eq!(list_item("one"), "- one");
    }

    #[test]
    fn removes_lowest_priority_first_and_never_decisions() {
        let layers = vec![
            layer(LayerKind::Decisions, &["- D"]),
            layer(LayerKind::Project, &["P"]),
            layer(LayerKind::CoreContext, &["- core one", "- core two"]),
            layer(LayerKind::Learnings, &["- L1", "- L2"]),
            layer(LayerKind::Session, &["Focus: f", "summary"]),
        ];
        let full = render(&layers, &all_kept(&layers), None, false).unwrap().len();
        let f = fit(&layers, full - 1, Unit::Bytes, false, &plain_marker);
        assert!(f.size < full && f.truncated);
        // The summary goes first: the marker is longer than it, so the focus goes too.
        assert_eq!(f.kept[4], [0, 0]);
        let tiny = fit(&layers, 10, Unit::Bytes, false, &plain_marker);
        let text = tiny.text.unwrap();
        assert!(text.starts_with("## Boundaries and Decisions") && text.contains("- D"), "{text}");
        assert!(tiny.size > 10, "decisions alone exceed the limit and stay");
        assert_eq!(tiny.kept[1], [0], "the project file is cut to nothing");
        assert_eq!(tiny.dropped[2].items, 2);
    }

    #[test]
    fn fits_exactly_when_the_estimate_overshoots() {
        let items: Vec<String> = (0..50).map(|i| format!("line {i}")).collect();
        let layers = vec![Layer::last_first(LayerKind::RepositoryMemories, items)];
        let full = render(&layers, &all_kept(&layers), None, false).unwrap().len();
        for limit in (40..full).step_by(7) {
            let f = fit(&layers, limit, Unit::Bytes, false, &plain_marker);
            assert!(f.size <= limit, "{limit}: {}", f.size);
            // One more item would not have fitted.
            let kept = f.kept[0].iter().filter(|&&k| k > 0).count();
            if kept < 50 {
                let mut more = f.kept.clone();
                let next = more[0].iter().position(|&k| k == 0).unwrap();
                more[0][next] = layers[0].items[next].len();
                let mut d = f.dropped.clone();
                d[0].items -= 1;
                let t = render(&layers, &more, Some(&plain_marker(&layers, &d)), false).unwrap();
                assert!(t.len() > limit, "{limit}: item {next} would have fitted");
            }
        }
    }

    mod prop {
        use super::super::*;
        use proptest::prelude::*;

        fn words() -> impl Strategy<Value = String> {
            prop::collection::vec(prop_oneof!["[a-z]{1,8}", "漢字|かな|한국어|中文", "😀|👍🏽|🇫🇷|é"], 1..12)
                .prop_map(|w| w.join(" "))
        }

        fn block() -> impl Strategy<Value = String> {
            prop_oneof![
                (1..7usize, words()).prop_map(|(n, w)| format!("{} {w}", "#".repeat(n))),
                prop::collection::vec(words(), 1..4).prop_map(|l| l.join("\n")),
                (words(), prop::collection::vec(words(), 0..5)).prop_map(|(info, l)| format!(
                    "```{}\n{}\n```",
                    info.replace(' ', ""),
                    l.join("\n\n")
                )),
            ]
        }

        fn body() -> impl Strategy<Value = String> {
            prop::collection::vec(block(), 1..20).prop_map(|b| crate::format::text::clean_body(&b.join("\n\n")))
        }

        fn marker(_: &[Layer], d: &[Dropped]) -> String {
            let n: usize = d.iter().map(|d| d.items).sum();
            let size: usize = d.iter().map(|d| d.size).sum();
            format!("[left out {n} items, {size}]")
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(200))]
            /// Whatever the limit, the block fits (nothing here is a decision), files are cut at
            /// block boundaries with fences balanced, items go in removal order, and one more
            /// item would not have fitted.
            #[test]
            fn fits_in_removal_order(
                project in body(),
                records in prop::collection::vec(words(), 0..30),
                learnings in prop::collection::vec(words(), 0..10),
                frac in 0.0f64..1.2,
                wrap in any::<bool>(),
            ) {
                let layers = vec![
                    Layer::last_first(LayerKind::Project, vec![project.clone()]),
                    Layer::last_first(LayerKind::RepositoryMemories, records),
                    Layer::last_first(LayerKind::Learnings, learnings.iter().map(|l| list_item(l)).collect()),
                ];
                let full = render(&layers, &all_kept(&layers), None, wrap).unwrap().len();
                let limit = 200 + (frac * full as f64) as usize;
                let f = fit(&layers, limit, Unit::Bytes, wrap, &marker);
                prop_assert!(f.size <= limit, "{} > {limit}", f.size);
                prop_assert_eq!(f.truncated, full > limit);
                if let Some(t) = &f.text {
                    prop_assert_eq!(t.len(), f.size);
                }
                let k = f.kept[0][0];
                prop_assert!(project.is_char_boundary(k));
                prop_assert!(project[..k].lines().filter(|l| l.starts_with("```")).count() % 2 == 0);
                // Learnings go before records, last first; the project is cut only when both are gone.
                let kept_l = f.kept[2].iter().filter(|&&k| k > 0).count();
                let kept_r = f.kept[1].iter().filter(|&&k| k > 0).count();
                prop_assert!(f.kept[2][..kept_l].iter().all(|&k| k > 0));
                prop_assert!(kept_l == 0 || kept_r == layers[1].items.len());
                prop_assert!(k == project.len() || kept_r == 0);
            }
        }
    }
}
