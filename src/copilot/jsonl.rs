//! The JSONL file as bytes and lines, and the exact writer.
//!
//! The file is kept as read; a rewrite copies every untouched line byte for byte (a CR before the
//! line feed, a BOM, odd spacing, invalid UTF-8 all stay), replaces or drops only the lines an
//! operation changed, appends new lines at the end, and ends every line with `\n`. A changed
//! record is edited in place by `set_members`, which replaces only the values of the keys that
//! changed, so its key order, unknown keys and formatting survive (serde_json's `preserve_order`
//! stays off: it would change key order elsewhere). This module knows nothing about records.

use std::path::{Path, PathBuf};

/// The largest file kb reads: record strings are stored as 31-bit offsets into it (and no
/// repository's memory file comes near this).
pub const MAX_BYTES: usize = (1 << 31) - 1;

/// One line of the file: a byte range without its `\n`.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
}

/// The whole JSONL file, split into lines.
#[derive(Debug)]
pub struct JsonlFile {
    pub path: PathBuf,
    /// Whether the file existed when read.
    pub exists: bool,
    data: Vec<u8>,
    lines: Vec<Span>,
}

/// A change to one line, or a new line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Replace line `index` (0-based) with this text.
    Replace(usize, String),
    /// Drop line `index`.
    Delete(usize),
    /// Add this line after every existing one.
    Append(String),
}

impl JsonlFile {
    /// Reads `path`; a missing file is an empty one. A file over `MAX_BYTES` is an error.
    ///
    /// Only a regular file inside `root` is read (see `crate::fsio::read_input`).
    pub fn read(path: &Path, root: &Path) -> std::io::Result<JsonlFile> {
        let too_big = || {
            let msg = format!("larger than {} MiB; kb does not read a memory file that large", MAX_BYTES >> 20);
            std::io::Error::new(std::io::ErrorKind::InvalidData, msg)
        };
        match std::fs::metadata(path) {
            Ok(m) if m.len() > MAX_BYTES as u64 => return Err(too_big()),
            _ => {}
        }
        let (data, exists) = match crate::fsio::read_input(path, root)? {
            Some(d) if d.len() > MAX_BYTES => return Err(too_big()),
            Some(d) => (d, true),
            None => (Vec::new(), false),
        };
        Ok(JsonlFile::from_bytes(path.to_path_buf(), data, exists))
    }

    /// Wraps bytes already read.
    pub fn from_bytes(path: PathBuf, data: Vec<u8>, exists: bool) -> JsonlFile {
        let mut lines = Vec::with_capacity(data.len() / 128 + 1);
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', &data) {
            lines.push(Span { start, end });
            start = end + 1;
        }
        if start < data.len() {
            lines.push(Span { start, end: data.len() });
        }
        JsonlFile { path, exists, data, lines }
    }

    /// Returns the file's bytes.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Returns the number of lines (a last line without `\n` counts).
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Returns the bytes of line `index` (0-based), without the `\n`.
    pub fn raw(&self, index: usize) -> &[u8] {
        let s = self.lines[index];
        &self.data[s.start..s.end]
    }

    /// Returns line `index` as the text a JSON parser should see: `None` when it is blank,
    /// `Err` when it is not UTF-8; a BOM and a trailing CR are removed.
    pub fn text(&self, index: usize) -> Option<Result<&str, String>> {
        self.text_in(index, None)
    }

    /// Returns line `index` like `text`; `whole` is the whole file as text when the caller has
    /// already checked that it is valid UTF-8, which saves checking each line again.
    pub fn text_in<'s>(&'s self, index: usize, whole: Option<&'s str>) -> Option<Result<&'s str, String>> {
        let s = self.lines[index];
        let raw = &self.data[s.start..s.end];
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let raw = if index == 0 { raw.strip_prefix("\u{feff}".as_bytes()).unwrap_or(raw) } else { raw };
        if raw.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            return None;
        }
        let start = raw.as_ptr() as usize - self.data.as_ptr() as usize;
        if let Some(text) = whole.and_then(|w| w.get(start..start + raw.len())) {
            return Some(Ok(text));
        }
        Some(std::str::from_utf8(raw).map_err(|e| format!("not valid UTF-8 (at byte {})", e.valid_up_to() + 1)))
    }

    /// Returns the file's new bytes after `edits`, and the 1-based line numbers the appended
    /// lines get, in order. Untouched lines keep their bytes; every line ends with `\n`.
    pub fn render(&self, edits: &[Edit]) -> (Vec<u8>, Vec<usize>) {
        let mut out = Vec::with_capacity(self.data.len() + 1);
        let numbers = self.render_to(edits, &mut out).unwrap_or_default();
        (out, numbers)
    }

    /// Returns the 1-based line numbers the appended lines of `edits` get, in order.
    pub fn appended_lines(&self, edits: &[Edit]) -> Vec<usize> {
        let deleted = edits.iter().filter(|e| matches!(e, Edit::Delete(i) if *i < self.lines.len())).count();
        let kept = self.lines.len() - deleted.min(self.lines.len());
        let appended = edits.iter().filter(|e| matches!(e, Edit::Append(_))).count();
        (kept + 1..=kept + appended).collect()
    }

    /// Writes the file's new bytes after `edits` to `out` (see `render`). Returns the 1-based
    /// line numbers of the appended lines.
    pub fn render_to(&self, edits: &[Edit], out: &mut dyn std::io::Write) -> std::io::Result<Vec<usize>> {
        // Edits by line, sorted; untouched runs of lines are copied in one piece.
        let mut changes: Vec<(usize, Option<&str>)> = Vec::new();
        let mut appended = Vec::new();
        for e in edits {
            match e {
                Edit::Replace(i, text) if *i < self.lines.len() => changes.push((*i, Some(text))),
                Edit::Delete(i) if *i < self.lines.len() => changes.push((*i, None)),
                Edit::Append(text) => appended.push(text.as_str()),
                _ => {}
            }
        }
        changes.sort_by_key(|c| c.0);
        changes.dedup_by_key(|c| c.0);
        let mut written = 0;
        let mut next = 0;
        for (i, change) in changes.into_iter().chain([(self.lines.len(), None)]) {
            if i > next {
                // Lines next..i are untouched: their bytes and line feeds are contiguous.
                let start = self.lines[next].start;
                let last = self.lines[i - 1];
                out.write_all(&self.data[start..last.end])?;
                out.write_all(b"\n")?;
                written += i - next;
            }
            if i == self.lines.len() {
                break;
            }
            if let Some(text) = change {
                out.write_all(text.as_bytes())?;
                out.write_all(b"\n")?;
                written += 1;
            }
            next = i + 1;
        }
        let mut numbers = Vec::with_capacity(appended.len());
        for text in appended {
            out.write_all(text.as_bytes())?;
            out.write_all(b"\n")?;
            written += 1;
            numbers.push(written);
        }
        Ok(numbers)
    }
}

/// One top-level member of a JSON object text: its decoded key and the byte range of its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub key: String,
    pub value_start: usize,
    pub value_end: usize,
}

/// Returns the top-level members of the JSON object in `text` (leading and trailing whitespace
/// and a BOM allowed), with the byte offsets of the opening and closing braces.
///
/// `text` must already have been accepted by a JSON parser; `None` means it is not a lone
/// object after all.
pub fn members(text: &str) -> Option<(usize, usize, Vec<Member>)> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    if text[i..].starts_with('\u{feff}') {
        i = skip_ws(b, i + 3);
    }
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let open = i;
    i = skip_ws(b, i + 1);
    let mut out = Vec::new();
    if b.get(i) == Some(&b'}') {
        return Some((open, i, out));
    }
    loop {
        let key_end = scan_string(b, i)?;
        let key: String = serde_json::from_str(&text[i..key_end]).ok()?;
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let value_start = skip_ws(b, i + 1);
        let value_end = scan_value(b, value_start)?;
        out.push(Member { key, value_start, value_end });
        i = skip_ws(b, value_end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return Some((open, i, out)),
            _ => return None,
        }
    }
}

/// Returns `text` with each `(key, json)` applied: the first member with that key gets the new
/// value text, a key not present is appended as `"key":json`. Everything else is kept.
pub fn set_members(text: &str, changes: &[(&str, String)]) -> Option<String> {
    let (_, close, members) = members(text)?;
    let mut splices: Vec<(usize, usize, String)> = Vec::new();
    let mut tail = String::new();
    for (key, json) in changes {
        match members.iter().find(|m| m.key == *key) {
            Some(m) => splices.push((m.value_start, m.value_end, json.clone())),
            None => {
                if !members.is_empty() || !tail.is_empty() {
                    tail.push(',');
                }
                tail.push_str(&serde_json::to_string(key).ok()?);
                tail.push(':');
                tail.push_str(json);
            }
        }
    }
    // Append after the last value (or right after `{`), keeping whatever spacing precedes `}`.
    let insert_at = match members.last() {
        Some(m) => m.value_end,
        None => text[..close].trim_end().len(),
    };
    if !tail.is_empty() {
        splices.push((insert_at, insert_at, tail));
    }
    splices.sort_by_key(|s| std::cmp::Reverse(s.0));
    let mut out = text.to_string();
    for (start, end, with) in splices {
        out.replace_range(start..end, &with);
    }
    Some(out)
}

use crate::format::jsonedit::{scan_string, scan_value, skip_ws};

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &[u8]) -> JsonlFile {
        JsonlFile::from_bytes(PathBuf::from("m.jsonl"), text.to_vec(), true)
    }

    #[test]
    fn lines_and_final_newline() {
        let f = file(b"a\n\nb\r\nc");
        assert_eq!(f.len(), 4);
        assert_eq!(f.raw(2), b"b\r");
        assert_eq!(f.text(2).unwrap().unwrap(), "b");
        assert!(f.text(1).is_none());
        assert_eq!(f.render(&[]).0, b"a\n\nb\r\nc\n");
        assert_eq!(file(b"").len(), 0);
        assert_eq!(file(b"\n").len(), 1);
    }

    #[test]
    fn render_edits_keep_other_bytes() {
        let f = file(b"\xef\xbb\xbf{\"a\":1}\r\n \n\xff\xfe\n{\"b\":2}");
        assert_eq!(f.text(0).unwrap().unwrap(), "{\"a\":1}");
        assert!(f.text(2).unwrap().unwrap_err().contains("UTF-8"));
        let edits = [Edit::Replace(3, "{\"b\":3}".into()), Edit::Append("x".into()), Edit::Append("y".into())];
        let (out, appended) = f.render(&edits);
        assert_eq!(out, b"\xef\xbb\xbf{\"a\":1}\r\n \n\xff\xfe\n{\"b\":3}\nx\ny\n");
        assert_eq!(appended, [5, 6]);
        assert_eq!(f.appended_lines(&edits), appended);
        let edits = [Edit::Delete(1), Edit::Append("z".into()), Edit::Delete(0)];
        let (out, appended) = f.render(&edits);
        assert_eq!(out, b"\xff\xfe\n{\"b\":2}\nz\n");
        assert_eq!((appended.clone(), f.appended_lines(&edits)), (vec![3], vec![3]));
        let (out, _) = f.render(&[Edit::Replace(1, "m".into()), Edit::Delete(2)]);
        assert_eq!(out, b"\xef\xbb\xbf{\"a\":1}\r\nm\n{\"b\":2}\n");
        assert_eq!(f.render(&[Edit::Delete(9), Edit::Replace(9, "x".into())]).0, f.render(&[]).0);
    }

    #[test]
    fn newline_search() {
        for len in 0..40 {
            for at in 0..len {
                let mut hay = vec![0x8a; len];
                hay[at] = b'\n';
                let f = file(&hay);
                assert_eq!((f.len(), f.raw(0).len()), (if at + 1 == len { 1 } else { 2 }, at));
            }
            assert_eq!(file(&vec![0x8a; len]).len(), usize::from(len > 0));
        }
    }

    #[test]
    fn members_follow_nesting_and_escapes() {
        let t = r#" { "a" : "x\"}" , "b":{"c":[1,{"d":"]"}]},"e":-1.5e3 ,"f\u0067":null,"h":true} "#;
        let (open, close, m) = members(t).unwrap();
        assert_eq!((open, &t[close..]), (1, "} "));
        let keys: Vec<_> = m.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(keys, ["a", "b", "e", "fg", "h"]);
        let vals: Vec<_> = m.iter().map(|m| &t[m.value_start..m.value_end]).collect();
        assert_eq!(vals, [r#""x\"}""#, r#"{"c":[1,{"d":"]"}]}"#, "-1.5e3", "null", "true"]);
        assert_eq!(members("{}").unwrap().2, []);
        assert!(members("[1]").is_none());
    }

    #[test]
    fn set_members_replaces_in_place_and_appends() {
        let t = r#"{"fact": "old",  "z":[1, 2], "votes":{"up":1}}"#;
        let out = set_members(t, &[("fact", "\"new\"".into()), ("updated", "\"T\"".into())]).unwrap();
        assert_eq!(out, r#"{"fact": "new",  "z":[1, 2], "votes":{"up":1},"updated":"T"}"#);
        assert_eq!(set_members("{ }", &[("a", "1".into()), ("b", "2".into())]).unwrap(), r#"{"a":1,"b":2 }"#);
        assert_eq!(set_members("{\"a\":1 }", &[("b", "2".into())]).unwrap(), "{\"a\":1,\"b\":2 }");
        let back: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(back["votes"]["up"], 1);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;
        use serde_json::{Map, Value};

        fn scalar() -> impl Strategy<Value = Value> {
            prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::from),
                "[a-z\"\\{}\\[\\],: é\u{7f}]{0,8}".prop_map(Value::from),
            ]
        }

        fn value() -> impl Strategy<Value = Value> {
            scalar().prop_recursive(3, 16, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    prop::collection::vec(("[a-c]{1,2}", inner), 0..4)
                        .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<String, Value>>())),
                ]
            })
        }

        /// Serialises `pairs` as an object with the given spacing, in order.
        fn object(pairs: &[(String, Value)], pad: &str) -> String {
            let parts: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{pad}{}{pad}:{pad}{}{pad}", serde_json::to_string(k).unwrap(), v))
                .collect();
            format!("{pad}{{{}}}{pad}", parts.join(","))
        }

        proptest! {
            #[test]
            fn untouched_bytes_round_trip(data in prop::collection::vec(any::<u8>(), 0..400)) {
                let f = JsonlFile::from_bytes("x".into(), data.clone(), true);
                for i in 0..f.len() {
                    let _ = f.text(i);
                }
                let mut want = data.clone();
                if !want.is_empty() && !want.ends_with(b"\n") {
                    want.push(b'\n');
                }
                prop_assert_eq!(f.render(&[]).0, want);
            }

            #[test]
            fn set_members_sets_one_key_and_keeps_the_rest(
                pairs in prop::collection::vec(("[a-e]{1,2}", value()), 0..6),
                key in "[a-g]{1,2}",
                new in value(),
                pad in prop_oneof![Just(""), Just(" "), Just(" \t ")],
            ) {
                let mut seen = std::collections::HashSet::new();
                let pairs: Vec<(String, Value)> = pairs.into_iter().filter(|(k, _)| seen.insert(k.clone())).collect();
                let text = object(&pairs, pad);
                let out = set_members(&text, &[(key.as_str(), new.to_string())]).unwrap();
                let mut want: Vec<(String, Value)> = pairs.clone();
                match want.iter_mut().find(|(k, _)| *k == key) {
                    Some(slot) => slot.1 = new.clone(),
                    None => want.push((key.clone(), new.clone())),
                }
                let (_, _, got) = members(&out).unwrap();
                let got: Vec<(String, Value)> = got
                    .iter()
                    .map(|m| (m.key.clone(), serde_json::from_str(&out[m.value_start..m.value_end]).unwrap()))
                    .collect();
                prop_assert_eq!(got, want);
                // Members before the changed one keep their exact text.
                if let Some(pos) = pairs.iter().position(|(k, _)| *k == key) {
                    let (_, _, before) = members(&text).unwrap();
                    let cut = before[pos].value_start;
                    prop_assert_eq!(&out[..cut], &text[..cut]);
                }
            }
        }
    }
}
