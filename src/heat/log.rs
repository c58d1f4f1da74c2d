//! Reading the access log: a line in the shape kb writes is parsed in place, without serde (a
//! 100,000-line log is read by every `kb context`); anything else goes through serde_json. Lines
//! are tallied per store and id as they are read.

use crate::kinds::Store;
use rustc_hash::FxHashMap;
use serde::Deserialize;
use std::borrow::Cow;

/// One line of the log, as serde reads it when the fast path cannot. Owned strings: a record id
/// may hold escapes, which cannot be borrowed.
#[derive(Deserialize)]
struct Line {
    id: IdValue,
    store: Store,
    at: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum IdValue {
    Number(u64),
    Text(String),
}

/// One readable line: its store, id (a memory's as decimal text) and time.
pub(super) struct Parsed<'a> {
    pub store: Store,
    pub id: Cow<'a, str>,
    pub at: Cow<'a, str>,
}

/// Parses one line of the log: the exact shape `record` writes, borrowed and without serde (a
/// 100,000-line log is read on every `kb context`), else any JSON object with the three keys
/// whose `at` is a timestamp with an offset, which is then rewritten in UTC as kb writes it (so
/// its first 10 bytes are its UTC date, and times compare as text).
pub(super) fn parse_line(line: &str) -> Option<Parsed<'_>> {
    parse_written(line).or_else(|| parse_with_serde(line))
}

/// Parses a line with serde, its time read and rewritten in UTC.
fn parse_with_serde(line: &str) -> Option<Parsed<'static>> {
    let l: Line = serde_json::from_str(line).ok()?;
    let id = match l.id {
        IdValue::Number(n) => n.to_string(),
        IdValue::Text(s) => s,
    };
    let at = crate::format::time::parse(&l.at).ok()?.with_timezone(&chrono::Utc);
    // In UTC it must still be a date Python can write (years 1 to 9999).
    if !(1..=9999).contains(&chrono::Datelike::year(&at)) {
        return None;
    }
    Some(Parsed { store: l.store, id: Cow::Owned(id), at: Cow::Owned(crate::format::time::py_isoformat(at)) })
}

/// Whether `at` is a time exactly as kb writes it (Python's `isoformat` of a UTC time):
/// `YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00`, a real date and time.
fn is_written_utc(at: &str) -> bool {
    let b = at.as_bytes();
    let Some(rest) = at.strip_suffix("+00:00") else { return false };
    let shape = b"dddd-dd-ddTdd:dd:dd";
    if rest.len() < shape.len()
        || !shape.iter().zip(b).all(|(s, c)| if *s == b'd' { c.is_ascii_digit() } else { s == c })
    {
        return false;
    }
    let fraction = &rest[shape.len()..];
    let fraction_ok = fraction.is_empty()
        || (fraction.len() == 7
            && fraction.starts_with('.')
            && fraction[1..].bytes().all(|c| c.is_ascii_digit())
            && &fraction[1..] != "000000");
    let num = |range: std::ops::Range<usize>| at[range].parse::<u32>().ok();
    let (Some(year), Some(month), Some(day)) = (num(0..4), num(5..7), num(8..10)) else { return false };
    let (Some(h), Some(m), Some(sec)) = (num(11..13), num(14..16), num(17..19)) else { return false };
    fraction_ok
        && year >= 1
        && h < 24
        && m < 60
        && sec < 60
        && chrono::NaiveDate::from_ymd_opt(year as i32, month, day).is_some()
}

/// Parses `{"id":N|"S","store":"md"|"copilot","at":"TS"}` with no spaces and no escapes, the
/// form `record` writes; anything else is `None` (and goes to serde).
fn parse_written(line: &str) -> Option<Parsed<'_>> {
    // A JSON string with no escape: no quote, no backslash, no control character.
    let plain = |s: &str| !s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20);
    let rest = line.strip_prefix("{\"id\":")?;
    let (id, rest) = match rest.strip_prefix('"') {
        Some(quoted) => {
            let (id, rest) = quoted.split_once('"')?;
            (id, rest)
        }
        None => {
            let end = rest.find(',')?;
            let digits = &rest[..end];
            // serde_json's u64: no sign, no leading zero, at most 20 digits (checked below).
            let canonical = digits == "0" || (!digits.starts_with('0') && !digits.is_empty());
            if !canonical || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.parse::<u64>().is_err() {
                return None;
            }
            (digits, &rest[end..])
        }
    };
    if !plain(id) {
        return None;
    }
    let (store, rest) = if let Some(r) = rest.strip_prefix(",\"store\":\"md\",\"at\":\"") {
        (Store::Md, r)
    } else {
        (Store::Copilot, rest.strip_prefix(",\"store\":\"copilot\",\"at\":\"")?)
    };
    let at = rest.strip_suffix("\"}")?;
    (plain(at) && is_written_utc(at)).then_some(Parsed { store, id: Cow::Borrowed(id), at: Cow::Borrowed(at) })
}

/// The log's accesses, per store and id, as it is read.
#[derive(Default)]
pub(super) struct Tally<'a> {
    pub ids: FxHashMap<(Store, &'a str), IdTally<'a>>,
    /// The dates of the log, with runs of one date collapsed (the log is in time order but for
    /// clock skew between processes, so little is left to sort).
    pub days: Vec<&'a str>,
    /// The lines that are not accesses (1-based).
    pub bad_lines: Vec<u64>,
}

pub(super) struct IdTally<'a> {
    /// The latest access.
    pub last: &'a str,
    /// Accesses per date, in the order first seen.
    pub days: Vec<(&'a str, u64)>,
}

impl<'a> Tally<'a> {
    /// Counts one access at `at` (at least 10 bytes, the date first).
    pub fn add(&mut self, store: Store, id: &'a str, at: &'a str) {
        let day = &at[..10];
        if self.days.last() != Some(&day) {
            self.days.push(day);
        }
        let t = self.ids.entry((store, id)).or_insert(IdTally { last: at, days: Vec::new() });
        if at > t.last {
            t.last = at;
        }
        match t.days.iter_mut().rev().find(|(d, _)| *d == day) {
            Some((_, count)) => *count += 1,
            None => t.days.push((day, 1)),
        }
    }

    /// Tallies the lines of `text`, the first being line `first_line` (1-based) of the log.
    /// Returns the lines serde had to read, owned, for the caller to add once it holds them
    /// (a borrow of them must outlive this tally).
    pub fn add_lines(&mut self, text: &'a str, first_line: u64) -> Vec<(Store, String, String)> {
        let mut owned = Vec::new();
        for (n, line) in (first_line..).zip(text.lines()) {
            if line.trim().is_empty() {
                continue;
            }
            match parse_line(line) {
                Some(Parsed { store, id: Cow::Borrowed(id), at: Cow::Borrowed(at) }) => self.add(store, id, at),
                Some(p) => owned.push((p.store, p.id.into_owned(), p.at.into_owned())),
                None => self.bad_lines.push(n),
            }
        }
        owned
    }

    /// Adds what [`Tally::add_lines`] left owned.
    pub fn add_owned(&mut self, owned: &'a [(Store, String, String)]) {
        for (store, id, at) in owned {
            self.add(*store, id, at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What the serde path reads from a line.
    fn by_serde(line: &str) -> Option<(Store, String, String)> {
        parse_with_serde(line).map(|p| (p.store, p.id.into_owned(), p.at.into_owned()))
    }

    fn fast(line: &str) -> Option<(Store, String, String)> {
        parse_written(line).map(|p| (p.store, p.id.into_owned(), p.at.into_owned()))
    }

    #[test]
    fn the_fast_path_reads_what_kb_writes_and_leaves_the_rest_to_serde() {
        let md = r#"{"id":42,"store":"md","at":"2026-11-24T10:00:00.123456+00:00"}"#;
        assert_eq!(fast(md), by_serde(md));
        assert!(fast(md).is_some());
        let rec = r#"{"id":"mem-0000beef","store":"copilot","at":"2026-11-24T10:00:00+00:00"}"#;
        assert_eq!(fast(rec), by_serde(rec));
        assert!(fast(rec).is_some());
        for other in [
            r#"{"id":"mem-\"x","store":"copilot","at":"2026-11-24T10:00:00+00:00"}"#,
            r#"{"id":007,"store":"md","at":"2026-11-24T10:00:00+00:00"}"#,
            r#"{"id":-1,"store":"md","at":"2026-11-24T10:00:00+00:00"}"#,
            r#"{"id":99999999999999999999,"store":"md","at":"2026-11-24T10:00:00+00:00"}"#,
            r#"{"id":1,"store":"md","at":"2026-11-24\u0041"}"#,
            r#"{"id": 1, "store": "md", "at": "2026-11-24T10:00:00+00:00"}"#,
            r#"{"id":1,"store":"other","at":"2026-11-24T10:00:00+00:00"}"#,
            r#"{"id":1,"store":"md","at":"2026-11-24T10:00:00Z"}"#,
            r#"{"id":1,"store":"md","at":"2026-11-24T10:00:00.5+00:00"}"#,
            r#"{"id":1,"store":"md","at":"2026-11-24T10:00:00.000000+00:00"}"#,
            r#"{"id":1,"store":"md","at":"2026-02-30T10:00:00+00:00"}"#,
            r#"{"id":1,"store":"md","at":"2026-11-24T24:00:00+00:00"}"#,
            r#"{"id":1,"store":"md","at":"2026-11-24T10:00:00-05:00"}"#,
        ] {
            assert_eq!(fast(other), None, "{other}");
        }
    }

    #[test]
    fn other_times_are_read_in_utc_and_a_text_that_is_no_time_is_no_access() {
        let at = |line: &str| parse_line(line).map(|p| p.at.into_owned());
        let offset = r#"{"id":1,"store":"md","at":"2026-11-05T23:30:00-05:00"}"#;
        assert_eq!(at(offset).as_deref(), Some("2026-11-06T04:30:00+00:00"));
        let zulu = r#"{"id":1,"store":"md","at":"2026-11-05T23:30:00.5Z"}"#;
        assert_eq!(at(zulu).as_deref(), Some("2026-11-05T23:30:00.500000+00:00"));
        for bad in [
            "yesterday at noon",
            "2026-11-05",
            "2026-11-05T23:30:00",
            "2026-02-30T10:00:00+00:00",
            "",
            "9999-12-31T23:00:00-05:00",
            "0001-01-01T00:30:00+01:00",
        ] {
            assert_eq!(at(&format!(r#"{{"id":1,"store":"md","at":"{bad}"}}"#)), None, "{bad}");
        }
    }

    proptest! {
        /// Whatever the fast path reads, serde reads the same.
        #[test]
        fn the_fast_path_agrees_with_serde(
            id in prop_oneof![
                "[0-9]{1,21}",
                "-?[0-9]{1,3}",
                "\"[ -~\\t\u{e9}\u{1F600}]{0,12}\"",
            ],
            store in prop_oneof![Just("md".to_string()), Just("copilot".to_string()), "[a-zA-Z]{0,8}"],
            at in prop_oneof![
                "[ -~\\t\u{e9}]{0,40}",
                "20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-6][0-9]:[0-6][0-9](\\.[0-9]{1,7}|\\.0{6})?(\\+00:00|Z|-05:00)",
            ],
            tail in prop_oneof![Just(""), Just(" "), Just("}"), Just(",\"x\":1"), Just("\"")],
        ) {
            let line = format!("{{\"id\":{id},\"store\":\"{store}\",\"at\":\"{at}\"}}{tail}");
            if let Some(fast) = fast(&line) {
                prop_assert_eq!(Some(fast), by_serde(&line), "{}", line);
            }
        }
    }
}
