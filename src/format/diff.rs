//! A short unified diff of two texts, for `kb compile --check` (docs/behaviour.md, kb compile
//! --check): what a stale file would change, shown in at most a given number of lines.
//!
//! Hand-written rather than a dependency (docs/dependencies.md): the common head and tail are
//! skipped, and the lines between are compared with a longest-common-subsequence table, bounded
//! so a huge rewrite costs no more than printing it as removed and added.

/// The largest LCS table computed (cells); past it the changed middle shows as removed, then added.
const MAX_CELLS: usize = 4_000_000;

/// Lines of context around a change.
const CONTEXT: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Same,
    Del,
    Add,
}

/// Returns a unified diff from `old` to `new` labelled `a/LABEL` and `b/LABEL`, cut to at most
/// `max_lines` lines (the last one then says how many more there were); empty when they are equal.
pub fn unified(label: &str, old: &str, new: &str, max_lines: usize) -> Vec<String> {
    if old == new {
        return Vec::new();
    }
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = script(&a, &b);
    // Line numbers (0-based) in each text before each op.
    let mut lines = vec![format!("--- a/{label}"), format!("+++ b/{label}")];
    let (mut ia, mut ib) = (0usize, 0usize);
    let mut pos = Vec::with_capacity(ops.len());
    for &op in &ops {
        pos.push((ia, ib));
        match op {
            Op::Same => {
                ia += 1;
                ib += 1;
            }
            Op::Del => ia += 1,
            Op::Add => ib += 1,
        }
    }
    let changed: Vec<usize> = (0..ops.len()).filter(|&i| ops[i] != Op::Same).collect();
    let mut k = 0;
    while k < changed.len() {
        let start = changed[k].saturating_sub(CONTEXT);
        let mut end = changed[k];
        while k < changed.len() && changed[k] <= end + 2 * CONTEXT + 1 {
            end = changed[k];
            k += 1;
        }
        let end = (end + CONTEXT + 1).min(ops.len());
        let (sa, sb) = pos[start];
        let da = ops[start..end].iter().filter(|&&o| o != Op::Add).count();
        let db = ops[start..end].iter().filter(|&&o| o != Op::Del).count();
        lines.push(format!("@@ -{},{da} +{},{db} @@", sa + usize::from(da > 0), sb + usize::from(db > 0)));
        for (i, &op) in ops.iter().enumerate().take(end).skip(start) {
            let (x, y) = pos[i];
            lines.push(match op {
                Op::Same => format!(" {}", a[x]),
                Op::Del => format!("-{}", a[x]),
                Op::Add => format!("+{}", b[y]),
            });
        }
    }
    if lines.len() > max_lines {
        let more = lines.len() - (max_lines - 1);
        lines.truncate(max_lines - 1);
        lines.push(format!("… {more} more diff lines"));
    }
    lines
}

/// Returns how many lines an edit from `old` to `new` adds and removes (`kb diff`'s count per
/// agent), by the same edit script as [`unified`].
pub fn line_counts(old: &str, new: &str) -> (usize, usize) {
    if old == new {
        return (0, 0);
    }
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = script(&a, &b);
    (ops.iter().filter(|&&o| o == Op::Add).count(), ops.iter().filter(|&&o| o == Op::Del).count())
}

/// Returns the edit script from `a` to `b`.
fn script(a: &[&str], b: &[&str]) -> Vec<Op> {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..].iter().rev().zip(b[head..].iter().rev()).take_while(|(x, y)| x == y).count();
    let (ma, mb) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut ops = vec![Op::Same; head];
    if ma.len().saturating_mul(mb.len()) > MAX_CELLS {
        ops.extend(std::iter::repeat_n(Op::Del, ma.len()));
        ops.extend(std::iter::repeat_n(Op::Add, mb.len()));
    } else {
        // lcs[i][j]: the longest common subsequence of ma[i..] and mb[j..].
        let w = mb.len() + 1;
        let mut lcs = vec![0u32; (ma.len() + 1) * w];
        for i in (0..ma.len()).rev() {
            for j in (0..mb.len()).rev() {
                lcs[i * w + j] = if ma[i] == mb[j] {
                    lcs[(i + 1) * w + j + 1] + 1
                } else {
                    lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < ma.len() || j < mb.len() {
            if i < ma.len() && j < mb.len() && ma[i] == mb[j] {
                ops.push(Op::Same);
                i += 1;
                j += 1;
            } else if i < ma.len() && (j == mb.len() || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) {
                ops.push(Op::Del);
                i += 1;
            } else {
                ops.push(Op::Add);
                j += 1;
            }
        }
    }
    ops.extend(std::iter::repeat_n(Op::Same, tail));
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_counts_count_added_and_removed_lines() {
        assert_eq!(line_counts("a\nb\nc\n", "a\nb\nc\n"), (0, 0));
        assert_eq!(line_counts("a\nb\nc\n", "a\nx\nc\nd\n"), (2, 1));
        assert_eq!(line_counts("", "a\n"), (1, 0));
    }

    #[test]
    fn shows_a_change_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        let d = unified("x.md", old, new, 20);
        assert_eq!(d, ["--- a/x.md", "+++ b/x.md", "@@ -2,7 +2,7 @@", " b", " c", " d", "-e", "+E", " f", " g", " h"]);
        assert!(unified("x", "same", "same", 20).is_empty());
    }

    #[test]
    fn new_file_and_cut() {
        let new: String = (0..50).map(|i| format!("line {i}\n")).collect();
        let d = unified("x.md", "", &new, 20);
        assert_eq!(d.len(), 20);
        assert_eq!(d[2], "@@ -0,0 +1,50 @@");
        assert!(d[19].starts_with("… 34 more"), "{}", d[19]);
    }
}
