//! Surgical edits of a JSON settings file: set one top-level key and keep every other byte —
//! other keys, their order, comments-free formatting, line ends — as the user wrote it.
//!
//! `serde_json` would re-serialise the whole object, sorting its keys (kb does not enable
//! `preserve_order`: it would change key order elsewhere in kb) and reformatting everything. The input must be a valid
//! JSON object; it is checked with `serde_json` before the text is scanned.

use serde_json::Value;

/// The top-level object of a settings file: its text without a BOM, where its `{` is, and each
/// member as (where its key starts, where its value starts and ends, the key).
struct Object<'t> {
    bom: &'static str,
    body: &'t str,
    open: usize,
    members: Vec<(usize, std::ops::Range<usize>, String)>,
}

/// Reads `text` as a JSON object (validated with `serde_json` first); `None` for blank text.
fn object(text: &str) -> Result<Option<Object<'_>>, String> {
    let (bom, body) = match text.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", text),
    };
    if body.trim().is_empty() {
        return Ok(None);
    }
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(_)) => {}
        Ok(_) => return Err("not a JSON object".into()),
        Err(e) => return Err(format!("invalid JSON at line {}: {e}", e.line())),
    }
    let b = body.as_bytes();
    let open = skip_ws(b, 0);
    let mut i = skip_ws(b, open + 1);
    let mut members = Vec::new();
    while b.get(i) == Some(&b'"') {
        let key_end = skip_value(b, i);
        let name: String = serde_json::from_str(&body[i..key_end]).map_err(|e| e.to_string())?;
        let v = skip_ws(b, skip_ws(b, key_end) + 1);
        let v_end = skip_value(b, v);
        members.push((i, v..v_end, name));
        i = skip_ws(b, v_end);
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        }
    }
    Ok(Some(Object { bom, body, open, members }))
}

/// Returns `text` with the top-level `key` set to `value` (JSON text): its value replaced where
/// it is, or the member appended after the last one in the file's own indentation. Empty text
/// becomes a new object.
pub fn set_key(text: &str, key: &str, value: &str) -> Result<String, String> {
    let member = format!("{}: {value}", Value::from(key));
    let Some(Object { bom, body, open, members }) = object(text)? else {
        let bom = if text.starts_with('\u{feff}') { "\u{feff}" } else { "" };
        return Ok(format!("{bom}{{\n  {member}\n}}\n"));
    };
    let found = members.iter().find(|m| m.2 == key).map(|m| m.1.clone());
    let out = match (found, members.first(), members.last()) {
        (Some(r), _, _) => format!("{}{value}{}", &body[..r.start], &body[r.end..]),
        (None, Some(first), Some(last)) => {
            let (k, end) = (first.0, last.1.end);
            let line_start = body[..k].rfind('\n').map_or(0, |p| p + 1);
            let indent = &body[line_start..k];
            let sep = if indent.trim().is_empty() && line_start > 0 {
                let nl = if body[..line_start].ends_with("\r\n") { "\r\n" } else { "\n" };
                format!(",{nl}{indent}")
            } else {
                ", ".to_string()
            };
            format!("{}{sep}{member}{}", &body[..end], &body[end..])
        }
        _ => format!("{}{{\n  {member}\n}}{}", &body[..open], &body[skip_value(body.as_bytes(), open)..]),
    };
    Ok(format!("{bom}{out}"))
}

/// Returns `text` without the top-level `key` (its member and one separating comma removed, every
/// other byte kept), and whether the key was there.
pub fn remove_key(text: &str, key: &str) -> Result<(String, bool), String> {
    let Some(Object { bom, body, open, members }) = object(text)? else { return Ok((text.to_string(), false)) };
    let Some(at) = members.iter().position(|m| m.2 == key) else { return Ok((text.to_string(), false)) };
    let (start, end) = (members[at].0, members[at].1.end);
    let out = if let Some(next) = members.get(at + 1) {
        // Up to the next member: the comma and the next member's indentation go with it.
        format!("{}{}", &body[..start], &body[next.0..])
    } else if at > 0 {
        // The last member: remove from the end of the previous value.
        format!("{}{}", &body[..members[at - 1].1.end], &body[end..])
    } else {
        // The only member: an empty object.
        let close = skip_ws(body.as_bytes(), end);
        format!("{}{{}}{}", &body[..open], &body[close + 1..])
    };
    Ok((format!("{bom}{out}"), true))
}

pub(crate) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// Returns the offset just past the string starting at `i`.
pub(crate) fn scan_string(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    loop {
        match b.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
}

/// Returns the offset just past the value starting at `i`.
pub(crate) fn scan_value(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => scan_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match b.get(j)? {
                    b'"' => {
                        j = scan_string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

/// Returns the offset just past the JSON value that starts at `i` (input already validated).
fn skip_value(b: &[u8], i: usize) -> usize {
    scan_value(b, i).unwrap_or(b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_keys_keeping_the_rest() {
        let pretty = "{\n  \"a\": 1,\n  \"k\": [1, 2],\n  \"z\": \"x\"\n}\n";
        assert_eq!(remove_key(pretty, "k").unwrap(), ("{\n  \"a\": 1,\n  \"z\": \"x\"\n}\n".to_string(), true));
        assert_eq!(remove_key(pretty, "z").unwrap().0, "{\n  \"a\": 1,\n  \"k\": [1, 2]\n}\n");
        assert_eq!(remove_key(pretty, "a").unwrap().0, "{\n  \"k\": [1, 2],\n  \"z\": \"x\"\n}\n");
        assert_eq!(remove_key("{\"k\": 1}\n", "k").unwrap().0, "{}\n");
        assert_eq!(remove_key(pretty, "nope").unwrap(), (pretty.to_string(), false));
        assert_eq!(remove_key("", "k").unwrap(), (String::new(), false));
        assert!(remove_key("[1]", "k").is_err());
        // A nested key of the same name is not the top-level one.
        assert!(!remove_key("{\"a\": {\"k\": 1}}", "k").unwrap().1);
    }

    #[test]
    fn sets_keys_keeping_the_rest() {
        let v = r#"["a", "b"]"#;
        assert_eq!(set_key("", "k", v).unwrap(), "{\n  \"k\": [\"a\", \"b\"]\n}\n");
        assert_eq!(set_key("{}\n", "k", "1").unwrap(), "{\n  \"k\": 1\n}\n");
        assert_eq!(
            set_key("{ \"z\": 1, \"a\": {\"k\": 2} }", "k", "3").unwrap(),
            "{ \"z\": 1, \"a\": {\"k\": 2}, \"k\": 3 }"
        );
        let pretty = "{\r\n    \"zeta\": \"x,}\\\"\",\r\n    \"k\": [1,\r\n 2],\r\n    \"alpha\": null\r\n}";
        assert_eq!(
            set_key(pretty, "k", "[]").unwrap(),
            "{\r\n    \"zeta\": \"x,}\\\"\",\r\n    \"k\": [],\r\n    \"alpha\": null\r\n}"
        );
        assert_eq!(
            set_key("\u{feff}{\n\t\"a\": true\n}\n", "k", "[]").unwrap(),
            "\u{feff}{\n\t\"a\": true,\n\t\"k\": []\n}\n"
        );
        assert!(set_key("[1]", "k", "1").is_err());
        assert_eq!(
            set_key(&remove_key("{\n  \"a\": 1,\n  \"k\": 2\n}\n", "k").unwrap().0, "k", "2").unwrap(),
            "{\n  \"a\": 1,\n  \"k\": 2\n}\n"
        );
        assert!(set_key("{", "k", "1").unwrap_err().contains("line 1"));
    }
}
