//! One session file (docs/formats.md, A session): markdown with YAML frontmatter, keys `started`,
//! `focus`, optional `updated` (and `ended` once archived), the running summary as the body.
//! Written with kb's frontmatter writer (sorted keys, `+00:00` timestamps, strings quoted as for
//! co-cli, the Python tool whose file layout kb keeps); read tolerantly (BOM, CRLF, `...`), refusing git
//! conflict markers, a missing key and bad YAML with the line at fault. Keys kb does not know are
//! kept when kb rewrites the file.

use crate::error::Diagnostic;
use crate::format::frontmatter::{self, Fields};
use crate::format::text::slugify;
use crate::format::time;
use chrono::{DateTime, FixedOffset, Utc};
use serde_json::Value;

/// A session as read from its file.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub focus: String,
    /// `started` as written.
    pub started: String,
    pub started_at: DateTime<FixedOffset>,
    pub updated: Option<String>,
    pub ended: Option<String>,
    /// The body: stripped, `\n` line ends.
    pub summary: String,
    /// Every frontmatter key as read (the known ones too), for a rewrite that keeps unknown keys.
    fields: Fields,
    /// The YAML block as written, `\r` removed.
    yaml: String,
}

/// Returns the 1-based line of the first git conflict marker (`format::merge::markers`: a lone
/// `=======` is a markdown heading underline, not a marker).
pub fn conflict_line(text: &str) -> Option<usize> {
    crate::format::merge::markers(text).first().map(|&(line, _)| line)
}

/// Parses and validates a session file's text.
pub fn parse(text: &str) -> Result<Session, Diagnostic> {
    if let Some(line) = conflict_line(text) {
        return Err(Diagnostic::error(
            Some(line),
            "git conflict markers (two open sessions after a merge?): keep one session, or end one and start it \
             again, and remove the <<<<<<<, ======= and >>>>>>> lines",
        ));
    }
    let (split, fields) = frontmatter::split_and_parse(text).map_err(|mut d| {
        d.line = d.line.or(Some(1));
        d
    })?;
    let yaml_line = split.yaml_line;
    let yaml = split.yaml.replace("\r\n", "\n");
    let line_of = |key: &str| -> Option<usize> {
        frontmatter::raw_entries(&yaml, &fields)
            .and_then(|es| es.into_iter().find(|e| e.key == key))
            .map(|e| e.line + yaml_line - 1)
            .or(Some(1))
    };
    let string = |key: &str| -> Result<Option<String>, Diagnostic> {
        match fields.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(Diagnostic::error(
                line_of(key),
                format!("'{key}' must be a string, got {} (quote it)", frontmatter::describe(other)),
            )),
        }
    };
    let timestamp = |key: &str| -> Result<Option<(String, DateTime<FixedOffset>)>, Diagnostic> {
        let Some(text) = string(key)? else { return Ok(None) };
        let at = time::parse_co_cli(&text).map_err(|e| Diagnostic::error(line_of(key), format!("'{key}': {e}")))?;
        Ok(Some((text, at)))
    };
    let Some((started, started_at)) = timestamp("started")? else {
        return Err(Diagnostic::error(Some(1), "missing required field: started"));
    };
    let Some(focus) = string("focus")? else {
        return Err(Diagnostic::error(Some(1), "missing required field: focus"));
    };
    if focus.trim().is_empty() {
        return Err(Diagnostic::error(line_of("focus"), "'focus' is empty"));
    }
    let updated = timestamp("updated")?.map(|(t, _)| t);
    let ended = timestamp("ended")?.map(|(t, _)| t);
    let body = frontmatter::py_strip(split.body);
    let summary = if body.contains('\r') { body.replace("\r\n", "\n").replace('\r', "\n") } else { body.to_string() };
    Ok(Session { focus, started, started_at, updated, ended, summary, fields, yaml })
}

/// Returns a frontmatter entry; timestamps are single-quoted as PyYAML writes them.
fn entry_text(key: &str, value: &str) -> String {
    if matches!(key, "started" | "updated" | "ended") && !value.contains('\'') {
        format!("{key}: '{value}'\n")
    } else {
        frontmatter::entry(key, &Value::from(value))
    }
}

/// Returns the text of a new session file: `focus`, `started` (now), an empty summary.
pub fn new_file(focus: &str, now: DateTime<Utc>) -> String {
    let started = time::py_isoformat(now);
    let entries =
        vec![("focus".to_string(), entry_text("focus", focus)), ("started".into(), entry_text("started", &started))];
    frontmatter::compose(&frontmatter::assemble(entries), "")
}

impl Session {
    /// Returns the file text with the keys in `changes` set (each a timestamp or the focus) and
    /// `summary` as the body. Every other key is kept: as written when the block is simple
    /// enough to edit in place, else rewritten from its value by kb's writer.
    pub fn rewrite(&self, changes: &[(&str, &str)], summary: &str) -> String {
        let texts: Vec<(String, Option<String>)> =
            changes.iter().map(|(k, v)| (k.to_string(), Some(entry_text(k, v)))).collect();
        let yaml = match frontmatter::raw_entries(&self.yaml, &self.fields) {
            Some(entries) => frontmatter::edit_entries(entries, &texts),
            None => {
                let mut entries: Vec<(String, String)> = Vec::new();
                for (k, v) in &self.fields {
                    let text = match (k.as_str(), v) {
                        ("started" | "updated" | "ended" | "focus", Value::String(s)) => entry_text(k, s),
                        _ => frontmatter::entry(k, v),
                    };
                    entries.push((k.clone(), text));
                }
                for (k, t) in texts {
                    entries.retain(|(have, _)| *have != k);
                    entries.push((k, t.unwrap_or_default()));
                }
                frontmatter::assemble(entries)
            }
        };
        frontmatter::compose(&yaml, summary)
    }
}

/// Returns the name of an ended session's file: `<started in UTC as %Y%m%dT%H%M%SZ>-<slug of the
/// focus>.md`, or `<stamp>.md` when the focus has no letter or digit to slug.
pub fn archive_name(started_at: DateTime<FixedOffset>, focus: &str) -> String {
    let stamp = started_at.with_timezone(&Utc).format("%Y%m%dT%H%M%SZ");
    let slug = slugify(focus);
    if slug.is_empty() { format!("{stamp}.md") } else { format!("{stamp}-{slug}.md") }
}

/// Returns `old` with `paragraph` appended after a blank line (just `paragraph` when `old` is
/// empty).
pub fn append(old: &str, paragraph: &str) -> String {
    if old.is_empty() { paragraph.to_string() } else { format!("{old}\n\n{paragraph}") }
}

/// Returns the ended session's body: the final `summary`, then the running `notes` under
/// `## Notes` (left out when empty or the same text).
pub fn with_notes(summary: &str, notes: &str) -> String {
    let notes = notes.trim();
    if notes.is_empty() || notes == summary.trim() {
        summary.to_string()
    } else {
        format!("{summary}\n\n## Notes\n\n{notes}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-22T12:00:00Z").unwrap().with_timezone(&Utc)
    }

    #[test]
    fn an_ended_summary_keeps_the_running_notes_below_it() {
        assert_eq!(with_notes("Done.", "step one\n\nstep two\n"), "Done.\n\n## Notes\n\nstep one\n\nstep two");
        assert_eq!(with_notes("Done.", "  \n"), "Done.");
        assert_eq!(with_notes("Done.", "Done.\n"), "Done.", "a summary that is the notes is not written twice");
    }

    #[test]
    fn a_new_file_has_sorted_quoted_keys_and_reads_back() {
        let text = new_file("Fix the parser: yes", now());
        assert_eq!(text, "---\nfocus: 'Fix the parser: yes'\nstarted: '2026-11-22T12:00:00+00:00'\n---\n\n\n");
        let s = parse(&text).unwrap();
        assert_eq!(
            (s.focus.as_str(), s.started.as_str(), s.summary.as_str()),
            ("Fix the parser: yes", "2026-11-22T12:00:00+00:00", "")
        );
        assert_eq!((s.updated, s.ended), (None, None));
        // YAML 1.1 words are quoted.
        assert!(new_file("yes", now()).contains("focus: 'yes'\n"));
    }

    #[test]
    fn rewrite_sets_keys_in_order_and_keeps_unknown_ones() {
        let text = "---\n# mine\nfocus: parser\nowner: ana\nstarted: '2026-11-22T12:00:00+00:00'\n---\n\nold\n";
        let s = parse(text).unwrap();
        let out = s.rewrite(&[("updated", "2026-11-22T13:00:00+00:00")], "new summary");
        assert_eq!(
            out,
            "---\n# mine\nfocus: parser\nowner: ana\nstarted: '2026-11-22T12:00:00+00:00'\nupdated: '2026-11-22T13:00:00+00:00'\n---\n\nnew summary\n"
        );
        let out = parse(&out).unwrap().rewrite(&[("ended", "2026-11-22T14:00:00+00:00")], "done");
        assert!(out.starts_with("---\nended: '2026-11-22T14:00:00+00:00'\n# mine\nfocus: parser\n"), "{out}");
        let back = parse(&out).unwrap();
        assert_eq!((back.ended.as_deref(), back.summary.as_str()), (Some("2026-11-22T14:00:00+00:00"), "done"));
    }

    #[test]
    fn reads_bom_crlf_and_unquoted_timestamps() {
        let s = parse("\u{feff}---\r\nstarted: 2026-11-22T12:00:00Z\r\nfocus: x\r\n...\r\n\r\none\r\ntwo\r\n").unwrap();
        assert_eq!((s.started.as_str(), s.summary.as_str()), ("2026-11-22T12:00:00Z", "one\ntwo"));
        assert_eq!(archive_name(s.started_at, &s.focus), "20261122T120000Z-x.md");
    }

    #[test]
    fn bad_files_name_the_line() {
        let e = parse("---\nfocus: x\n---\n\nsummary\n").unwrap_err();
        assert_eq!((e.line, e.message.as_str()), (Some(1), "missing required field: started"));
        let e = parse("---\nstarted: '2026-11-22T12:00:00+00:00'\n---\n").unwrap_err();
        assert_eq!(e.message, "missing required field: focus");
        let e = parse("---\nfocus: x\nstarted: 'soon'\n---\n").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(e.message.starts_with("'started':"), "{e:?}");
        let e = parse("---\nfocus: x\nstarted: 2026-11-22\n---\n").unwrap_err();
        assert!(e.message.contains("'started' must be a string") || e.message.contains("date without a time"), "{e:?}");
        let e = parse("---\nfocus: [x\nstarted: '2026-11-22T12:00:00+00:00'\n---\n").unwrap_err();
        assert!(e.message.starts_with("malformed YAML"), "{e:?}");
        let e = parse("---\nfocus: 12\nstarted: '2026-11-22T12:00:00+00:00'\n---\n").unwrap_err();
        assert_eq!((e.line, e.message.contains("must be a string")), (Some(2), true));
        assert!(parse("no frontmatter").unwrap_err().message.starts_with("no frontmatter"));
        assert!(parse("---\nfocus: x\n").unwrap_err().message.contains("not closed"));
        let e = parse("---\nfocus: ''\nstarted: '2026-11-22T12:00:00+00:00'\n---\n").unwrap_err();
        assert_eq!(e.message, "'focus' is empty");
    }

    #[test]
    fn conflict_markers_are_refused_but_a_heading_underline_is_not() {
        let merged = "<<<<<<< HEAD\n---\nfocus: a\nstarted: '2026-11-22T12:00:00+00:00'\n---\n=======\n---\nfocus: b\nstarted: '2026-11-22T13:00:00+00:00'\n---\n>>>>>>> other\n";
        let e = parse(merged).unwrap_err();
        assert_eq!(e.line, Some(1));
        assert!(e.message.contains("conflict"), "{e:?}");
        let inner = "---\nfocus: a\nstarted: '2026-11-22T12:00:00+00:00'\n---\n\nsummary\n<<<<<<< HEAD\none\n=======\ntwo\n>>>>>>> b\n";
        assert_eq!(parse(inner).unwrap_err().line, Some(7));
        let heading = "---\nfocus: a\nstarted: '2026-11-22T12:00:00+00:00'\n---\n\nTitle\n=======\n\ntext\n";
        assert_eq!(parse(heading).unwrap().summary, "Title\n=======\n\ntext");
        assert_eq!(conflict_line("<<<<<<<<< not a marker\n>>>>>>>>\n"), None);
        // A leftover end marker of a half-resolved conflict still counts.
        assert_eq!(conflict_line("text\n>>>>>>> other\n"), Some(2));
    }

    #[test]
    fn archive_names() {
        let at = DateTime::parse_from_rfc3339("2026-11-22T14:27:04.330453+02:00").unwrap();
        assert_eq!(archive_name(at, "Fix the Parser (v2)!"), "20261122T122704Z-fix-the-parser-v2.md");
        assert_eq!(archive_name(at, "日本語"), "20261122T122704Z.md");
        assert_eq!(append("", "a"), "a");
        assert_eq!(append("a", "b"), "a\n\nb");
    }
}
