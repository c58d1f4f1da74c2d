//! An ordered JSON tree, and a JSON file rewritten with every part nobody changed kept as it was.
//!
//! kb does not enable `serde_json`'s `preserve_order` (it would change key order elsewhere in
//! kb), so a `serde_json::Value` sorts an object's keys. [`Value`] keeps them in the file's order,
//! objects being `Vec<(String, Value)>`, and has serde's `Deserialize` and `Serialize`. A
//! [`Document`] is a file read into a `Value` together with where each of its parts was in the
//! text; [`Document::render`] writes a changed tree back, copying the original bytes of every
//! value the change left equal and laying out only what is new in the file's own indentation
//! (two or four spaces or a tab, detected), line ends, byte order mark and leading and trailing
//! white space. A file that is not JSON (comments and trailing commas included: JSONC is not
//! JSON) is an error with its line and column. Nothing here touches the file system.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use std::fmt;
use std::ops::Range;

/// A JSON value whose objects keep their members in order (a repeated key is kept twice, as
/// written). A number is kept as its JSON text, so it is written back exactly.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

impl Value {
    /// Returns a number value for `n`.
    pub fn int(n: i64) -> Value {
        Value::Number(n.to_string())
    }

    /// Returns a string value.
    pub fn str(s: &str) -> Value {
        Value::String(s.to_string())
    }

    /// Returns the object's members, if it is an object.
    pub fn as_object(&self) -> Option<&Vec<(String, Value)>> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    /// Returns the object's members to change, if it is an object.
    pub fn as_object_mut(&mut self) -> Option<&mut Vec<(String, Value)>> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    /// Returns the array's items, if it is an array.
    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// Returns the array's items to change, if it is an array.
    pub fn as_array_mut(&mut self) -> Option<&mut Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// Returns the string, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// Returns the number as an integer, if it is one that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) => n.parse().ok(),
            _ => None,
        }
    }

    /// Returns the value of member `key` of an object (the last one when the key repeats, as
    /// `JSON.parse` reads it); `None` for a missing key or a value that is not an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object()?.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Returns the value of member `key` to change (the last one when the key repeats).
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.as_object_mut()?.iter_mut().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Removes every member `key` of an object; returns whether there was one.
    pub fn remove(&mut self, key: &str) -> bool {
        let Some(members) = self.as_object_mut() else { return false };
        let before = members.len();
        members.retain(|(k, _)| k != key);
        members.len() != before
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Number(n) => match n.parse::<serde_json::Number>() {
                Ok(n) => n.serialize(s),
                Err(_) => s.serialize_str(n),
            },
            Value::String(t) => s.serialize_str(t),
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Value::Object(members) => {
                let mut map = s.serialize_map(Some(members.len()))?;
                for (k, v) in members {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.to_string()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.to_string()))
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(n)
            .map(|n| Value::Number(n.to_string()))
            .ok_or_else(|| E::custom(format!("{n} is not a JSON number")))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Value>()? {
            members.push((k, v));
        }
        Ok(Value::Object(members))
    }
}

/// Where a value was in the text: its bytes, and those of its items or members (each member
/// with the bytes of its key as written).
#[derive(Debug, Clone)]
enum Spans {
    Leaf(Range<usize>),
    Array(Range<usize>, Vec<Spans>),
    Object(Range<usize>, Vec<(Range<usize>, Spans)>),
}

impl Spans {
    fn range(&self) -> Range<usize> {
        match self {
            Spans::Leaf(r) | Spans::Array(r, _) | Spans::Object(r, _) => r.clone(),
        }
    }
}

/// What a text is not, when it is not JSON: the 1-based line and column where reading stopped,
/// and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "not valid JSON at line {}, column {}: {}", self.line, self.column, self.message)
    }
}

/// One indentation step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Indent {
    Spaces(usize),
    Tab,
}

/// A JSON file's text read into a [`Value`], with what [`Document::render`] needs to write a
/// changed value back in the file's own layout.
#[derive(Debug, Clone)]
pub struct Document {
    /// The text without its byte order mark.
    text: String,
    bom: bool,
    /// The value, `None` for a blank text.
    parsed: Option<(Value, Spans)>,
    pub indent: Indent,
    newline: &'static str,
}

impl Document {
    /// Reads `text` (a byte order mark allowed): blank text is a document without a value (a new
    /// file); anything that is not one JSON value is an error with its line and column.
    pub fn parse(text: &str) -> Result<Document, SyntaxError> {
        let (bom, body) = match text.strip_prefix('\u{feff}') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let newline = if body.contains("\r\n") { "\r\n" } else { "\n" };
        let indent = detect_indent(body);
        if body.trim().is_empty() {
            return Ok(Document { text: body.to_string(), bom, parsed: None, indent, newline });
        }
        // serde_json decides what is JSON and where it is not; the scan below only finds where
        // each part is, in text known to be valid.
        if let Err(e) = serde_json::from_str::<de::IgnoredAny>(body) {
            let mut err = syntax_error(&e);
            let at = body.lines().nth(err.line - 1).and_then(|l| l.chars().nth(err.column - 1));
            if at == Some('/') {
                err.message.push_str(" (a comment: JSON has none)");
            }
            return Err(err);
        }
        let mut scan = Scan { b: body.as_bytes(), text: body, i: 0 };
        let parsed = scan.value().map_err(|message| {
            let (line, column) = line_column(body, scan.i);
            SyntaxError { line, column, message }
        })?;
        Ok(Document { text: body.to_string(), bom, parsed: Some(parsed), indent, newline })
    }

    /// Returns the value read, `None` for a blank text.
    pub fn value(&self) -> Option<&Value> {
        self.parsed.as_ref().map(|(v, _)| v)
    }

    /// Returns the file's text holding `value`: the original bytes of every part of it that is
    /// equal to the part it replaces, the rest laid out in the file's indentation and line ends,
    /// and the byte order mark and the white space around the value kept (a new file ends in a
    /// newline). When `value` is the value read, this is the text read.
    pub fn render(&self, value: &Value) -> String {
        let mut out = String::new();
        if self.bom {
            out.push('\u{feff}');
        }
        let Some((old, spans)) = &self.parsed else {
            self.emit(&mut out, value, None, 0);
            out.push_str(self.newline);
            return out;
        };
        let r = spans.range();
        out.push_str(&self.text[..r.start]);
        self.emit(&mut out, value, Some((old, spans)), 0);
        out.push_str(&self.text[r.end..]);
        out
    }

    /// Writes `new` at nesting `depth`: the old text when it equals `old`, else laid out, each
    /// member or item compared with its old counterpart.
    fn emit(&self, out: &mut String, new: &Value, old: Option<(&Value, &Spans)>, depth: usize) {
        if let Some((o, s)) = old
            && o == new
        {
            out.push_str(&self.text[s.range()]);
            return;
        }
        match new {
            Value::Object(members) if !members.is_empty() => {
                let olds: Vec<(&str, &Value, &Range<usize>, &Spans)> = match old {
                    Some((Value::Object(om), Spans::Object(_, os))) => {
                        om.iter().zip(os).map(|((k, v), (kr, s))| (k.as_str(), v, kr, s)).collect()
                    }
                    _ => Vec::new(),
                };
                let mut used = vec![false; olds.len()];
                out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    out.push_str(self.newline);
                    self.pad(out, depth + 1);
                    let found = olds.iter().enumerate().position(|(j, o)| !used[j] && o.0 == k);
                    match found {
                        Some(j) => {
                            used[j] = true;
                            out.push_str(&self.text[olds[j].2.clone()]);
                            out.push_str(": ");
                            self.emit(out, v, Some((olds[j].1, olds[j].3)), depth + 1);
                        }
                        None => {
                            out.push_str(&json_string(k));
                            out.push_str(": ");
                            self.emit(out, v, None, depth + 1);
                        }
                    }
                    if i + 1 < members.len() {
                        out.push(',');
                    }
                }
                out.push_str(self.newline);
                self.pad(out, depth);
                out.push('}');
            }
            Value::Array(items) if !items.is_empty() => {
                let olds: Vec<(&Value, &Spans)> = match old {
                    Some((Value::Array(oa), Spans::Array(_, os))) => oa.iter().zip(os).collect(),
                    _ => Vec::new(),
                };
                // Each item takes the first old item from `next` on that equals it; else the old
                // item at `next`, when it is a container too, to keep what inside it is unchanged.
                let mut next = 0;
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    out.push_str(self.newline);
                    self.pad(out, depth + 1);
                    let pair = match olds[next.min(olds.len())..].iter().position(|o| o.0 == item) {
                        Some(j) => {
                            next += j + 1;
                            Some(olds[next - 1])
                        }
                        None if next < olds.len() && same_kind(olds[next].0, item) => {
                            next += 1;
                            Some(olds[next - 1])
                        }
                        None => None,
                    };
                    self.emit(out, item, pair, depth + 1);
                    if i + 1 < items.len() {
                        out.push(',');
                    }
                }
                out.push_str(self.newline);
                self.pad(out, depth);
                out.push(']');
            }
            Value::Object(_) => out.push_str("{}"),
            Value::Array(_) => out.push_str("[]"),
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => out.push_str(n),
            Value::String(s) => out.push_str(&json_string(s)),
        }
    }

    fn pad(&self, out: &mut String, depth: usize) {
        for _ in 0..depth {
            match self.indent {
                Indent::Tab => out.push('\t'),
                Indent::Spaces(n) => out.extend(std::iter::repeat_n(' ', n)),
            }
        }
    }
}

/// Whether two values are both objects or both arrays.
fn same_kind(a: &Value, b: &Value) -> bool {
    matches!((a, b), (Value::Object(_), Value::Object(_)) | (Value::Array(_), Value::Array(_)))
}

/// Returns `s` as a JSON string.
fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// Returns the indentation of the first indented line (a tab, or its number of spaces, 1 to 8);
/// two spaces when no line is indented.
fn detect_indent(text: &str) -> Indent {
    for line in text.lines().skip(1) {
        if line.starts_with('\t') {
            return Indent::Tab;
        }
        let n = line.len() - line.trim_start_matches(' ').len();
        if n > 0 && line.len() > n {
            return Indent::Spaces(n.min(8));
        }
    }
    Indent::Spaces(2)
}

/// Returns serde_json's error as a [`SyntaxError`], its message without the position it adds.
fn syntax_error(e: &serde_json::Error) -> SyntaxError {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = text.strip_suffix(&suffix).unwrap_or(&text).to_string();
    SyntaxError { line: e.line().max(1), column: e.column().max(1), message }
}

/// Returns the 1-based line and column (in characters) of byte `at`.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// A scan of text already known to be valid JSON, finding each part's bytes. It still returns an
/// error rather than panicking if the text is not what it expects.
struct Scan<'t> {
    b: &'t [u8],
    text: &'t str,
    i: usize,
}

impl Scan<'_> {
    fn ws(&mut self) {
        while matches!(self.b.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        self.ws();
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected `{}`", c as char))
        }
    }

    fn value(&mut self) -> Result<(Value, Spans), String> {
        self.ws();
        let start = self.i;
        match self.b.get(self.i) {
            Some(b'{') => {
                self.i += 1;
                let (mut members, mut spans) = (Vec::new(), Vec::new());
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        let key_start = self.i;
                        let key = self.string()?;
                        let key_range = key_start..self.i;
                        self.expect(b':')?;
                        let (v, s) = self.value()?;
                        members.push((key, v));
                        spans.push((key_range, s));
                        self.ws();
                        match self.b.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b'}') => {
                                self.i += 1;
                                break;
                            }
                            _ => return Err("expected `,` or `}`".into()),
                        }
                    }
                }
                Ok((Value::Object(members), Spans::Object(start..self.i, spans)))
            }
            Some(b'[') => {
                self.i += 1;
                let (mut items, mut spans) = (Vec::new(), Vec::new());
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                } else {
                    loop {
                        let (v, s) = self.value()?;
                        items.push(v);
                        spans.push(s);
                        self.ws();
                        match self.b.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b']') => {
                                self.i += 1;
                                break;
                            }
                            _ => return Err("expected `,` or `]`".into()),
                        }
                    }
                }
                Ok((Value::Array(items), Spans::Array(start..self.i, spans)))
            }
            Some(b'"') => {
                let s = self.string()?;
                Ok((Value::String(s), Spans::Leaf(start..self.i)))
            }
            Some(b't') => self.word("true", Value::Bool(true)),
            Some(b'f') => self.word("false", Value::Bool(false)),
            Some(b'n') => self.word("null", Value::Null),
            Some(c) if *c == b'-' || c.is_ascii_digit() => {
                while matches!(self.b.get(self.i), Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')) {
                    self.i += 1;
                }
                Ok((Value::Number(self.text[start..self.i].to_string()), Spans::Leaf(start..self.i)))
            }
            _ => Err("expected a value".into()),
        }
    }

    fn word(&mut self, word: &str, v: Value) -> Result<(Value, Spans), String> {
        let start = self.i;
        if !self.text[start..].starts_with(word) {
            return Err(format!("expected `{word}`"));
        }
        self.i += word.len();
        Ok((v, Spans::Leaf(start..self.i)))
    }

    /// Reads a string at the position (its escapes decoded by serde_json).
    fn string(&mut self) -> Result<String, String> {
        let start = self.i;
        if self.b.get(self.i) != Some(&b'"') {
            return Err("expected a string".into());
        }
        self.i += 1;
        loop {
            match self.b.get(self.i) {
                Some(b'\\') => self.i += 2,
                Some(b'"') => {
                    self.i += 1;
                    break;
                }
                Some(_) => self.i += 1,
                None => return Err("unterminated string".into()),
            }
        }
        let raw = self.text.get(start..self.i).ok_or("a string cut inside a character")?;
        serde_json::from_str(raw).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Document {
        Document::parse(text).unwrap()
    }

    #[test]
    fn objects_keep_their_order_through_serde() {
        let v: Value = serde_json::from_str(r#"{"z":1,"a":{"y":true,"b":null},"m":[1.5,"x"]}"#).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["z", "a", "m"]);
        assert_eq!(serde_json::to_string(&v).unwrap(), r#"{"z":1,"a":{"y":true,"b":null},"m":[1.5,"x"]}"#);
        assert_eq!(v.get("z").and_then(Value::as_i64), Some(1));
    }

    #[test]
    fn an_unchanged_value_renders_as_read() {
        for text in [
            "{\n  \"b\": 1,\n  \"a\": [1, 2]\n}\n",
            "\u{feff}{\"x\":{\"y\" :  [ ]}}",
            "\n\n{\r\n\t\"k\": \"\\u0041\"\r\n}\r\n\r\n",
            "[]",
            "  3  ",
        ] {
            let d = doc(text);
            assert_eq!(d.render(d.value().unwrap()), text);
        }
    }

    #[test]
    fn a_change_keeps_every_other_byte() {
        let text = "{\n    \"model\": \"x\",\n    \"env\": {\"A\": \"1\",   \"B\": 2},\n    \"hooks\": {\n        \"Stop\": [ {\"hooks\": []} ]\n    }\n}";
        let d = doc(text);
        let mut v = d.value().unwrap().clone();
        let hooks = v.get_mut("hooks").unwrap().as_object_mut().unwrap();
        hooks.push(("SessionStart".into(), Value::Array(vec![Value::Object(vec![("a".into(), Value::int(1))])])));
        let out = d.render(&v);
        assert_eq!(
            out,
            "{\n    \"model\": \"x\",\n    \"env\": {\"A\": \"1\",   \"B\": 2},\n    \"hooks\": {\n        \"Stop\": [ {\"hooks\": []} ],\n        \"SessionStart\": [\n            {\n                \"a\": 1\n            }\n        ]\n    }\n}"
        );
        assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), v);
    }

    #[test]
    fn removing_an_item_keeps_the_others_as_written() {
        let d = doc("{\n\t\"a\": [\n\t\t{\"x\": 1},\n\t\t{\"kb\": 2},\n\t\t{\"y\":   3}\n\t]\n}\n");
        assert_eq!(d.indent, Indent::Tab);
        let mut v = d.value().unwrap().clone();
        v.get_mut("a").unwrap().as_array_mut().unwrap().remove(1);
        assert_eq!(d.render(&v), "{\n\t\"a\": [\n\t\t{\"x\": 1},\n\t\t{\"y\":   3}\n\t]\n}\n");
        assert!(v.remove("a") && !v.remove("a"));
        assert_eq!(d.render(&v), "{}\n");
    }

    #[test]
    fn a_new_document_is_laid_out_with_a_trailing_newline() {
        let d = doc("");
        let v = Value::Object(vec![("version".into(), Value::int(1)), ("e".into(), Value::Array(vec![]))]);
        assert_eq!(d.render(&v), "{\n  \"version\": 1,\n  \"e\": []\n}\n");
        assert_eq!(detect_indent("{\n    \"a\": 1\n}"), Indent::Spaces(4));
    }

    #[test]
    fn jsonc_and_broken_json_are_errors_with_line_and_column() {
        let e = Document::parse("{\n  // a comment\n  \"a\": 1\n}").unwrap_err();
        assert_eq!((e.line, e.column), (2, 3), "{e}");
        assert!(e.message.ends_with("(a comment: JSON has none)"), "{e}");
        let e = Document::parse("{\"a\": 1,}").unwrap_err();
        assert_eq!(e.line, 1, "{e}");
        assert!(e.to_string().starts_with("not valid JSON at line 1, column "), "{e}");
        let e = Document::parse("{\"a\": 1} {").unwrap_err();
        assert!(e.message.contains("trailing"), "{e}");
    }

    #[test]
    fn numbers_and_escapes_survive() {
        let d = doc(r#"{"n": 1.50e3, "s": "\ud83d\ude00 \" \\"}"#);
        let v = d.value().unwrap();
        assert_eq!(v.get("n"), Some(&Value::Number("1.50e3".into())));
        assert_eq!(v.get("s").and_then(Value::as_str), Some("😀 \" \\"));
        let mut changed = v.clone();
        changed.as_object_mut().unwrap().push(("t".into(), Value::str("é\n")));
        let out = d.render(&changed);
        assert!(out.contains(r#""n": 1.50e3"#) && out.contains(r#""t": "é\n""#), "{out}");
    }
}
