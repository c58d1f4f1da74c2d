//! Markdown structure, read with pulldown-cmark: where a text may be cut, which byte ranges are
//! code, whether a text ends inside an unclosed code fence, and which comments stand on lines of
//! their own (notes for people, left out of a context file's section).
//!
//! This module owns the rules that keep truncation and managed blocks well-formed: a cut lands at
//! the start of a block (a heading, a paragraph, a list item...), never inside a UTF-8 character,
//! a code block or an HTML block. It knows nothing about sections, budgets or files; the input is
//! a markdown body whose frontmatter has already been removed (pulldown-cmark would otherwise read
//! a YAML block as a thematic break plus a setext heading).

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag};
use std::borrow::Cow;
use std::ops::Range;

/// The deepest nesting of block quotes and list items handed to the parser. pulldown-cmark's
/// time grows with the square of the nesting (a line of 100,000 `>` took 20 s); a markdown file
/// people write nests a few levels.
const MAX_NESTING: usize = 32;

/// Returns the parser kb reads markdown with; its input comes from [`tamed`], whose offsets are
/// the original text's.
fn parser(text: &str) -> Parser<'_> {
    Parser::new_ext(text, Options::empty())
}

/// Returns `text` with the container markers beyond [`MAX_NESTING`] at the start of any line
/// replaced by `.` (ASCII for ASCII, so offsets and character boundaries stay), borrowed when no
/// line nests that deep.
fn tamed(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    while i < bytes.len() {
        let mut j = i;
        let mut markers = 0;
        while j < bytes.len() {
            let marker = match bytes[j] {
                b'>' => true,
                b'-' | b'*' | b'+' => matches!(bytes.get(j + 1), Some(b' ' | b'\t')),
                b' ' | b'\t' => false,
                _ => break,
            };
            if marker {
                markers += 1;
                if markers > MAX_NESTING {
                    out.get_or_insert_with(|| bytes.to_vec())[j] = b'.';
                }
            }
            j += 1;
        }
        i = memchr::memchr(b'\n', &bytes[j..]).map_or(bytes.len(), |k| j + k + 1);
    }
    match out.map(String::from_utf8) {
        Some(Ok(s)) => Cow::Owned(s),
        _ => Cow::Borrowed(text),
    }
}

/// Returns the byte offsets at which `text` may be cut, ascending, always ending with `text.len()`.
///
/// An offset is the start of a line on which a block begins with only indentation before it:
/// headings, paragraphs, lists and list items, block quotes, code and HTML blocks, thematic
/// breaks. Offsets inside a code or HTML block never appear (those contain no blocks), nor do
/// blocks that start mid-line (a paragraph after `> ` or `- `): cutting there would leave a
/// dangling marker.
#[cfg(test)]
pub fn block_starts(text: &str) -> Vec<usize> {
    scan(text).0
}

/// Returns `block_starts` and the end offsets (trailing whitespace excluded) of every heading.
fn scan(text: &str) -> (Vec<usize>, Vec<usize>) {
    let mut out = Vec::new();
    let mut heading_ends = Vec::new();
    let parsed = tamed(text);
    for (event, range) in parser(&parsed).into_offset_iter() {
        if let Event::Start(Tag::Heading { .. }) = event {
            heading_ends.push(text[..range.end].trim_end().len());
        }
        let block = match &event {
            Event::Start(tag) => is_block(tag),
            Event::Rule => true,
            _ => false,
        };
        if !block {
            continue;
        }
        let line = line_start(text, range.start);
        if text[line..range.start].bytes().all(|b| b == b' ' || b == b'\t') {
            out.push(line);
        }
    }
    out.push(text.len());
    out.sort_unstable();
    out.dedup();
    (out, heading_ends)
}

fn is_block(tag: &Tag<'_>) -> bool {
    matches!(
        tag,
        Tag::Paragraph
            | Tag::Heading { .. }
            | Tag::BlockQuote(_)
            | Tag::CodeBlock(_)
            | Tag::HtmlBlock
            | Tag::List(_)
            | Tag::Item
            | Tag::FootnoteDefinition(_)
            | Tag::Table(_)
            | Tag::TableRow
            | Tag::DefinitionList
    )
}

/// Returns the offset of the first byte of the line that contains `pos`.
fn line_start(text: &str, pos: usize) -> usize {
    text[..pos].rfind('\n').map_or(0, |i| i + 1)
}

/// Returns the byte ranges of code blocks (fenced and indented) and, when `with_html` is set, of
/// HTML blocks.
pub fn code_ranges(text: &str, with_html: bool) -> Vec<Range<usize>> {
    parser(&tamed(text))
        .into_offset_iter()
        .filter_map(|(event, range)| match event {
            Event::Start(Tag::CodeBlock(_)) => Some(range),
            Event::Start(Tag::HtmlBlock) if with_html => Some(range),
            _ => None,
        })
        .collect()
}

/// Returns `text` without its comment blocks: each top-level HTML block that is one comment
/// (`<!--` opens it, its first `-->` ends it, and nothing else is on its lines), with the blank
/// lines after it when a blank line (or the start) comes before it. A comment inside a code
/// block, a list or a quote, or beside other text on a line, is content and stays. Borrowed when
/// nothing is removed.
pub fn without_comments(text: &str) -> Cow<'_, str> {
    if !text.contains("<!--") {
        return Cow::Borrowed(text);
    }
    let mut remove: Vec<Range<usize>> = Vec::new();
    let mut depth = 0usize;
    let parsed = tamed(text);
    for (event, range) in parser(&parsed).into_offset_iter() {
        match event {
            Event::Start(Tag::HtmlBlock) if depth == 0 => {
                depth += 1;
                if is_one_comment(&text[range.clone()]) {
                    remove.push(line_start(text, range.start)..range.end);
                }
            }
            Event::Start(_) => depth += 1,
            Event::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if remove.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for r in remove {
        out.push_str(&text[at..r.start]);
        at = r.end;
        // `out` ends at a line start: is the line before it blank (or is there none)?
        let after_blank = out.strip_suffix('\n').is_none_or(|b| b.rsplit('\n').next().unwrap_or("").trim().is_empty());
        if after_blank {
            // The blank lines that separated the comment from what follows.
            while let Some(n) = text[at..].find('\n').filter(|&n| text[at..at + n].trim().is_empty()) {
                at += n + 1;
            }
        }
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// Returns whether an HTML block's text is one comment and nothing else.
fn is_one_comment(block: &str) -> bool {
    let t = block.trim();
    t.strip_prefix("<!--").and_then(|rest| rest.find("-->")).is_some_and(|end| end + 4 + 3 == t.len())
}

/// Returns how many bytes of `text` to keep so that at most `avail` bytes remain, cut where
/// markdown allows. The kept text is `text[..n]`, already free of trailing whitespace.
///
/// The cut is at the last block start that fits and does not leave a heading last (a heading
/// without its content tells the reader nothing). When not even the first block fits, the cut
/// goes inside it — at its last line break that fits, else its last space, else its last
/// character boundary — unless that point is inside a code or HTML block, whose start is then
/// the cut (so a code block is kept whole or not at all). Returns 0 when nothing can be kept.
pub fn cut(text: &str, avail: usize) -> usize {
    if text.len() <= avail {
        return text.len();
    }
    let kept = |end: usize| text[..end].trim_end().len();
    let (starts, heading_ends) = scan(text);
    let at_block = starts.into_iter().rev().map(kept).find(|&k| k <= avail && !heading_ends.contains(&k)).unwrap_or(0);
    if at_block > 0 {
        return at_block;
    }
    kept(cut_inside(text, avail))
}

/// Returns a cut point ≤ `avail` inside the first block: a line break, else whitespace, else a
/// character boundary, moved back to the start of any code or HTML block it falls into.
fn cut_inside(text: &str, avail: usize) -> usize {
    let limit = floor_char_boundary(text, avail.min(text.len()));
    let head = &text[..limit];
    let mut at = match head.rfind('\n') {
        Some(i) if !head[..i].trim().is_empty() => i,
        _ => head.char_indices().rev().find(|&(_, c)| c.is_whitespace()).map_or(limit, |(i, _)| i),
    };
    for r in code_ranges(text, true) {
        if r.start < at && at < r.end {
            at = r.start;
        }
    }
    at
}

/// Returns the largest character boundary ≤ `i`.
pub fn floor_char_boundary(text: &str, i: usize) -> usize {
    let mut i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A top-level fenced code block that runs to the end of the text without a closing fence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenFence {
    /// 1-based line of the opening fence.
    pub line: usize,
    /// The fence that closes it (the opening fence's characters, e.g. "```").
    pub closer: String,
}

/// Returns the top-level fenced code block that `text` ends inside, if any.
///
/// Such a fence would swallow everything placed after the text (the next section, a managed
/// block's end marker). A fence inside a list item or block quote ends with its container, so
/// only top-level fences matter.
pub fn open_fence(text: &str) -> Option<OpenFence> {
    let mut depth = 0usize;
    let mut last = None;
    let parsed = tamed(text);
    for (event, range) in parser(&parsed).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) if depth == 0 => {
                last = Some(range);
                depth += 1;
            }
            Event::Start(_) => depth += 1,
            Event::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let range = last?;
    if !text[range.end..].trim().is_empty() {
        return None;
    }
    let block = &text[range.clone()];
    let opening = block.lines().next()?.trim_start();
    let ch = opening.chars().next()?;
    let n = opening.chars().take_while(|&c| c == ch).count();
    let mut lines = block.lines();
    lines.next();
    let closed = lines.next_back().is_some_and(|l| {
        let t = l.trim();
        t.chars().all(|c| c == ch) && t.chars().count() >= n && l.len() - l.trim_start().len() <= 3
    });
    if closed {
        return None;
    }
    Some(OpenFence { line: text[..range.start].matches('\n').count() + 1, closer: ch.to_string().repeat(n) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_past_the_limit_is_read_as_text_with_every_offset_kept() {
        let deep = format!("{} deep\n\nafter\n", ">".repeat(100));
        let t = tamed(&deep);
        assert_eq!(t.len(), deep.len());
        assert_eq!(&t[..MAX_NESTING], &deep[..MAX_NESTING]);
        assert!(t[MAX_NESTING..100].bytes().all(|b| b == b'.'));
        assert_eq!(&t[100..], &deep[100..]);
        let bullets = format!("{}x\n", "- ".repeat(40));
        assert_eq!(tamed(&bullets).matches("- ").count(), MAX_NESTING);
        // Ordinary markdown, a long rule and a setext underline included, is handed over as it is.
        for plain in ["# T\n\n> quote\n> > inner\n\n- a\n  - b\n", "Title\n-----------------------------------------\n"]
        {
            assert!(matches!(tamed(plain), Cow::Borrowed(_)), "{plain:?}");
        }
        // A block start after the deep quote is still found, at its own offset.
        assert!(block_starts(&deep).contains(&deep.find("after").unwrap()));
    }

    #[test]
    fn starts_are_block_boundaries_outside_code() {
        let t = "# A\n\npara one\nstill one\n\n```\n# not a heading\n\nx\n```\n\n- i1\n- i2\n";
        let s = block_starts(t);
        let lines: Vec<&str> = s.iter().map(|&i| t[i..].lines().next().unwrap_or("")).collect();
        assert_eq!(lines, ["# A", "para one", "```", "- i1", "- i2", ""]);
    }

    #[test]
    fn quote_and_item_paragraphs_are_not_cut_mid_line() {
        let t = "> q1\n>\n> q2\n\n- a\n\n  second para\n";
        let s = block_starts(t);
        assert!(s.contains(&0));
        assert!(!s.contains(&t.find("q2").unwrap()));
        assert!(s.contains(&t.find("  second").unwrap()));
    }

    #[test]
    fn cut_prefers_blocks_and_keeps_code_whole() {
        let t = "para 1\n\n```\ncode\ncode\n```\n\npara 3";
        assert_eq!(cut(t, 100), t.len());
        assert_eq!(&t[..cut(t, 24)], "para 1");
        assert_eq!(&t[..cut(t, t.len() - 1)], &t[..t.find("\n\npara 3").unwrap()]);
        // One long paragraph: cut inside at a line break, then a space, then a character.
        let p = "line one\nline two\nline three";
        assert_eq!(&p[..cut(p, 20)], "line one\nline two");
        assert_eq!(&p[..cut(p, 6)], "line");
        assert_eq!(&"abcdef"[..cut("abcdef", 3)], "abc");
        let cjk = "漢字漢字";
        assert_eq!(&cjk[..cut(cjk, 4)], "漢");
        // A leading code block that does not fit is not kept at all.
        assert_eq!(cut("```\nlong code line\n```\n", 10), 0);
        assert_eq!(cut("x", 0), 0);
        // A heading is not left without its content.
        let h = "# A\n\naaaa\n\n## B\n\nbbbbbbbb";
        assert_eq!(&h[..cut(h, h.len() - 2)], "# A\n\naaaa");
    }

    #[test]
    fn open_fences() {
        assert_eq!(open_fence("a\n\n```rust\nfn x() {}\n"), Some(OpenFence { line: 3, closer: "```".into() }));
        assert_eq!(open_fence("~~~~\nx"), Some(OpenFence { line: 1, closer: "~~~~".into() }));
        assert_eq!(open_fence("```\nx\n```"), None);
        assert_eq!(open_fence("```\nx\n```\n\nafter"), None);
        assert_eq!(open_fence("- ```\n  x"), None);
        assert_eq!(open_fence("````\nx\n```"), Some(OpenFence { line: 1, closer: "````".into() }));
        assert_eq!(open_fence("```"), Some(OpenFence { line: 1, closer: "```".into() }));
    }

    #[test]
    fn code_ranges_cover_fences() {
        let t = "a\n\n```\n<!-- m -->\n```\n\n<!-- c -->\n";
        let r = code_ranges(t, false);
        assert_eq!(r.len(), 1);
        assert!(t[r[0].clone()].contains("<!-- m -->"));
        assert_eq!(code_ranges(t, true).len(), 2);
    }

    #[test]
    fn comment_blocks_are_left_out_and_comments_in_content_stay() {
        let t = "<!--\nGuidance\n\n- (a placeholder)\n-->\n\n# Title\n\n<!-- one line -->\npara\n\n  <!-- indented -->\n\nend\n";
        assert_eq!(without_comments(t), "# Title\n\npara\n\nend\n");
        // A comment beside text, in a fence, in a list or a quote, or never closed, is content.
        for kept in [
            "a <!-- inline --> b\n",
            "<!-- c --> trailing text\n",
            "<!-- a --> x <!-- b -->\n",
            "```\n<!-- in a fence -->\n```\n",
            "    <!-- indented code -->\n",
            "- <!-- in an item -->\n",
            "> <!-- in a quote -->\n",
            "<!-- never closed\n\nmore\n",
            "no comment at all\n",
        ] {
            assert_eq!(without_comments(kept), kept, "{kept:?}");
        }
        // The blank lines around a comment between two blocks collapse to one.
        assert_eq!(without_comments("a\n\n<!-- c -->\n\nb"), "a\n\nb");
        assert_eq!(without_comments("a\n<!-- c -->\nb\n"), "a\nb\n");
        assert_eq!(without_comments("a\n\n<!-- c -->"), "a\n\n");
        assert_eq!(without_comments("<!-- only -->\n"), "");
        assert_eq!(without_comments("<!-- a -->\n<!-- b -->\n\nx"), "x");
    }

    mod prop {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]
            /// Any text, any budget: no panic, a character boundary, within the budget.
            #[test]
            fn cut_is_total(text in "(?s).{0,300}|[#`~ >\\-\n\r*a-z漢😀]{0,300}", avail in 0usize..400) {
                let k = cut(&text, avail);
                prop_assert!(k <= avail);
                prop_assert!(text.is_char_boundary(k));
                let _ = open_fence(&text);
                let _ = code_ranges(&text, true);
                let _ = without_comments(&text);
            }
        }
    }
}
