//! The repairs `kb check --fix` makes to the JSONL file after a git merge (docs/safety.md, Git merges): a record
//! line a union merge repeated byte for byte is removed, and the records that share an id are
//! merged into one (citations united in order, each vote count the larger, the later line's
//! other fields) in the place of the first. Pure: returns the edits, what each does and what was left alone; the caller
//! writes them under the lock. Nothing else of the file changes.

use super::jsonl::{self, Edit, JsonlFile};
use super::record::Votes;
use super::{Record, Records, json_str};
use crate::error::Diagnostic;
use crate::output::chars_prefix;
use std::collections::HashMap;

/// The repairs of one file: the edits, a line per repair and a line per duplicate left alone,
/// each at its line as read (1-based, before the edits), without a path.
#[derive(Debug, Default)]
pub struct Repairs {
    pub edits: Vec<Edit>,
    pub fixed: Vec<Diagnostic>,
    pub left: Vec<Diagnostic>,
}

/// Returns the repairs of `file`. A file with conflict markers is left alone: its records are
/// still in the two sides of a conflict, which a person resolves first.
pub fn repairs(file: &JsonlFile) -> Repairs {
    let mut out = Repairs::default();
    let markers = crate::format::merge::markers(&String::from_utf8_lossy(file.data()));
    let all = Records::parse(file);
    if let Some((line, _)) = markers.first() {
        if !all.duplicate_ids().is_empty() || has_copies(&all) {
            let why = "not repaired: the file has git conflict markers; resolve them, then run `kb check --fix` again";
            out.left.push(Diagnostic::warning(Some(*line), why));
        }
        return out;
    }
    // A line a union merge kept twice: both branches added (or changed to) the same bytes.
    let mut first_of: HashMap<&[u8], usize> = HashMap::new();
    let mut removed = vec![false; all.len()];
    for (pos, r) in all.iter().enumerate() {
        let raw = file.raw(r.index);
        match first_of.get(raw) {
            Some(&first) => {
                removed[pos] = true;
                out.edits.push(Edit::Delete(r.index));
                let message = format!("removed this line: a copy of line {} (a union merge repeats such lines)", first);
                out.fixed.push(Diagnostic::warning(Some(r.line()), message));
            }
            None => {
                first_of.insert(raw, r.line());
            }
        }
    }
    // The records left that share an id, by their first line.
    let mut groups: Vec<(&str, Vec<Record<'_>>)> = Vec::new();
    let mut group_of: HashMap<&str, usize> = HashMap::new();
    for (pos, r) in all.iter().enumerate() {
        if removed[pos] || !r.id_in_file {
            continue;
        }
        match group_of.get(r.id) {
            Some(&g) => groups[g].1.push(r),
            None => {
                group_of.insert(r.id, groups.len());
                groups.push((r.id, vec![r]));
            }
        }
    }
    for (id, group) in groups.iter().filter(|(_, g)| g.len() > 1) {
        merge_group(file, &all, id, group, &mut out);
    }
    out.fixed.sort_by_key(|d| d.line);
    out
}

/// Returns whether two record lines of the file are the same bytes.
fn has_copies(all: &Records<'_>) -> bool {
    let mut seen = std::collections::HashSet::new();
    all.iter().any(|r| !seen.insert(all.file.raw(r.index)))
}

/// Merges the records of one id into one line: the last one's, with the citations of all and the
/// larger vote counts, in the place of the first (where the record was before the merge, so the
/// file's order stays); the others go.
fn merge_group(file: &JsonlFile, all: &Records<'_>, id: &str, group: &[Record<'_>], out: &mut Repairs) {
    let lines: Vec<String> = group.iter().map(|r| r.line().to_string()).collect();
    let (Some(first), Some(last)) = (group.first(), group.last()) else { return };
    let mut citations: Vec<String> = Vec::new();
    let mut votes = Votes::default();
    let mut last_fields = None;
    for r in group {
        let f = all.fields(r);
        // A value kb reads as absent (a malformed `votes` or `citations`) would be overwritten.
        if !f.warnings.is_empty() || !r.votes_ok {
            let why = format!(
                "not repaired: the records of id {id} (lines {}) share an id, but line {} has a value kb cannot read \
                 ({}); merge them by hand",
                lines.join(", "),
                r.line(),
                f.warnings.first().map_or("\"votes\"", String::as_str)
            );
            out.left.push(Diagnostic::warning(Some(r.line()), why));
            return;
        }
        for c in &f.citations {
            if !citations.iter().any(|have| have == c) {
                citations.push(c.to_string());
            }
        }
        votes.up = votes.up.max(f.votes.up);
        votes.down = votes.down.max(f.votes.down);
        last_fields = Some(f);
    }
    let Some(last_fields) = last_fields else { return };
    let mut changes: Vec<(&str, String)> = Vec::new();
    let same_citations = last_fields.citations.len() == citations.len()
        && last_fields.citations.iter().zip(&citations).all(|(a, b)| a == b);
    if !same_citations {
        changes.push(("citations", serde_json::to_string(&citations).unwrap_or_default()));
    }
    let raw = file.raw(last.index);
    let text = String::from_utf8_lossy(raw.strip_suffix(b"\r").unwrap_or(raw)).into_owned();
    if votes != last_fields.votes {
        // The counts change in the later line's `votes` object; its other members stay.
        let existing = jsonl::members(&text)
            .and_then(|(_, _, ms)| ms.into_iter().find(|m| m.key == "votes"))
            .map(|m| text[m.value_start..m.value_end].to_string())
            .filter(|v| v.starts_with('{'));
        let counts = [("up", votes.up.to_string()), ("down", votes.down.to_string())];
        let json = existing
            .and_then(|v| jsonl::set_members(&v, &counts))
            .unwrap_or_else(|| serde_json::to_string(&votes).unwrap_or_default());
        changes.push(("votes", json));
    }
    let merged = if changes.is_empty() {
        // The later line as it is, CR and all.
        String::from_utf8_lossy(raw).into_owned()
    } else {
        match jsonl::set_members(&text, &changes) {
            Some(line) => line,
            None => {
                let why = format!(
                    "not repaired: line {} cannot be edited; merge the records of id {id} by hand",
                    last.line()
                );
                out.left.push(Diagnostic::warning(Some(last.line()), why));
                return;
            }
        }
    };
    // The file's BOM stays at its start.
    const BOM: &str = "\u{feff}";
    let bom = if first.index == 0 && file.raw(0).starts_with(BOM.as_bytes()) { BOM } else { "" };
    out.edits.push(Edit::Replace(first.index, format!("{bom}{merged}")));
    out.edits.extend(group[1..].iter().map(|r| Edit::Delete(r.index)));
    let mut message = format!(
        "merged the records of id {} on lines {} into this line (citations united, the larger vote counts, the \
         other fields of line {})",
        json_str(id),
        lines.join(", "),
        last.line()
    );
    // A different fact must never vanish unseen.
    for r in &group[..group.len() - 1] {
        if r.fact != last.fact {
            let fact = chars_prefix(r.fact, 120);
            let more = if fact.len() < r.fact.len() { "…" } else { "" };
            message.push_str(&format!("; line {} said \"{fact}{more}\"", r.line()));
        }
    }
    out.fixed.push(Diagnostic::warning(Some(first.line()), message));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fix(text: &str) -> (String, Vec<String>, Vec<String>) {
        let file = JsonlFile::from_bytes(PathBuf::from("m.jsonl"), text.as_bytes().to_vec(), true);
        let r = repairs(&file);
        let mut out = Vec::new();
        file.render_to(&r.edits, &mut out).unwrap();
        let show = |ds: &[Diagnostic]| ds.iter().map(|d| format!("{}: {}", d.line.unwrap_or(0), d.message)).collect();
        (String::from_utf8(out).unwrap(), show(&r.fixed), show(&r.left))
    }

    #[test]
    fn copies_go_and_the_first_stays() {
        let a = r#"{"id":"a","subject":"s","fact":"x"}"#;
        let b = r#"{"id":"b","subject":"s","fact":"y"}"#;
        let (text, fixed, left) = fix(&format!("{a}\n{b}\n{a}\n\nnot json\n{b}\n"));
        assert_eq!(text, format!("{a}\n{b}\n\nnot json\n"));
        assert_eq!(fixed.len(), 2, "{fixed:?}");
        assert!(fixed[0].starts_with("3: removed this line: a copy of line 1"), "{fixed:?}");
        assert!(fixed[1].starts_with("6: removed this line: a copy of line 2"), "{fixed:?}");
        assert!(left.is_empty());
    }

    #[test]
    fn records_of_one_id_merge_into_the_first_place() {
        let one = r#"{"id":"a","subject":"s","fact":"old","citations":["x","y"],"votes":{"up":3,"down":0,"by":"me"},"reason":"r1"}"#;
        let two = r#"{"id":"a","subject":"s","fact":"new","citations":"y, z","reason":"r2","votes":{"up":1,"down":2}}"#;
        let other = r#"{"id":"b","subject":"s","fact":"keep"}"#;
        let (text, fixed, left) = fix(&format!("{one}\n{other}\n{two}\n"));
        let want = r#"{"id":"a","subject":"s","fact":"new","citations":["x","y","z"],"reason":"r2","votes":{"up":3,"down":2}}"#;
        assert_eq!(text, format!("{want}\n{other}\n"));
        assert_eq!(fixed.len(), 1);
        assert!(fixed[0].starts_with("1: merged the records of id \"a\" on lines 1, 3"), "{fixed:?}");
        assert!(fixed[0].contains("line 1 said \"old\""), "{fixed:?}");
        assert!(left.is_empty());
    }

    #[test]
    fn an_unchanged_later_line_keeps_its_bytes() {
        let one = r#"{"id":"a","subject":"s","fact":"f","citations":["x"]}"#;
        let two = "{\"id\":\"a\", \"subject\":\"s\",\"fact\":\"f\",\"citations\":[\"x\"]}\r";
        let (text, fixed, _) = fix(&format!("\u{feff}{one}\n{two}\n"));
        assert_eq!(text, format!("\u{feff}{two}\n"));
        assert!(!fixed[0].contains("said"), "{fixed:?}");
    }

    #[test]
    fn what_is_not_safe_is_left_alone() {
        let one = r#"{"id":"a","subject":"s","fact":"f","votes":{"up":"many"}}"#;
        let two = r#"{"id":"a","subject":"s","fact":"g"}"#;
        let input = format!("{one}\n{two}\n");
        let (text, fixed, left) = fix(&input);
        assert_eq!((text, fixed.len()), (input, 0));
        assert!(left[0].starts_with("1: not repaired"), "{left:?}");
        let input = format!("<<<<<<< HEAD\n{two}\n=======\n{two}\n>>>>>>> b\n");
        let (text, fixed, left) = fix(&input);
        assert_eq!((text, fixed.len()), (input, 0));
        assert!(left[0].contains("conflict markers"), "{left:?}");
    }
}
