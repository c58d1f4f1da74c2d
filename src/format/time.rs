//! Timestamps as co-cli (the Python tool whose file layout kb keeps) writes and reads them.
//!
//! co-cli writes `datetime.now(timezone.utc).isoformat()`: UTC, a `+00:00` offset, six fraction
//! digits, and no fraction at all when the microseconds are zero. It reads with
//! `datetime.fromisoformat`. kb reads any RFC 3339 timestamp (`T` or a space, `Z` or an offset) and
//! refuses naive and date-only values, which co-cli accepts but then crashes on.

use chrono::{DateTime, Datelike, FixedOffset, Timelike, Utc};

/// Microseconds since the Unix epoch, in UTC: what kb orders memories by.
pub type Micros = i64;

/// Returns `dt` formatted like Python's `isoformat()` for an aware UTC datetime.
pub fn py_isoformat(dt: DateTime<Utc>) -> String {
    let mut out = String::with_capacity(32);
    let _ = write_py_isoformat(&mut out, dt);
    out
}

/// Writes `dt` as [`py_isoformat`] returns it, without chrono's format parser for the usual years
/// (a list of 100,000 memories renders as many timestamps).
fn write_py_isoformat(w: &mut impl std::fmt::Write, dt: DateTime<Utc>) -> std::fmt::Result {
    let micros = dt.nanosecond() / 1000;
    if !(0..=9999).contains(&dt.year()) || dt.nanosecond() >= 1_000_000_000 {
        let form = if micros == 0 { "%Y-%m-%dT%H:%M:%S+00:00" } else { "%Y-%m-%dT%H:%M:%S%.6f+00:00" };
        return write!(w, "{}", dt.format(form));
    }
    // `YYYY-MM-DDTHH:MM:SS.ffffff+00:00`, its digits put in place (no formatter per field).
    let mut text = *b"0000-00-00T00:00:00.000000+00:00";
    put_digits(&mut text[..4], dt.year() as u32);
    put_digits(&mut text[5..7], dt.month());
    put_digits(&mut text[8..10], dt.day());
    put_digits(&mut text[11..13], dt.hour());
    put_digits(&mut text[14..16], dt.minute());
    put_digits(&mut text[17..19], dt.second());
    put_digits(&mut text[20..26], micros);
    let text = if micros == 0 {
        text.copy_within(26.., 19);
        &text[..25]
    } else {
        &text[..]
    };
    // Digits and ASCII punctuation only.
    w.write_str(std::str::from_utf8(text).unwrap_or_default())
}

/// Writes `n` into `out` as decimal digits, zero-padded on the left to `out`'s length (its last
/// digits when it has more).
fn put_digits(out: &mut [u8], mut n: u32) {
    for b in out.iter_mut().rev() {
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// Returns the day (`YYYY-MM-DD`) of the instant `micros`, for the years of four digits.
fn day_of(micros: Micros) -> Option<[u8; 10]> {
    let dt = DateTime::from_timestamp_micros(micros).filter(|dt| (0..=9999).contains(&dt.year()))?;
    let mut text = *b"0000-00-00";
    put_digits(&mut text[..4], dt.year() as u32);
    put_digits(&mut text[5..7], dt.month());
    put_digits(&mut text[8..10], dt.day());
    Some(text)
}

/// A timestamp as a file wrote it: its text, or, where the text was exactly co-cli's own
/// rendering of the instant ([`py_isoformat`]), the instant alone (the memory index keeps 100,000
/// of them; the text is made only when shown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written<'a> {
    Text(&'a str),
    Iso(Micros),
}

impl Written<'_> {
    /// Returns `text` as written for the instant `micros`: [`Written::Iso`] when it is the
    /// instant's [`py_isoformat`], so that it can be kept without its text.
    pub fn of(text: &str, micros: Micros) -> Written<'_> {
        match DateTime::from_timestamp_micros(micros) {
            Some(dt) if py_isoformat(dt) == text => Written::Iso(micros),
            _ => Written::Text(text),
        }
    }
}

impl std::fmt::Display for Written<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Written::Text(t) => f.write_str(t),
            Written::Iso(m) => match DateTime::from_timestamp_micros(m) {
                Some(dt) => write_py_isoformat(f, dt),
                None => Ok(()),
            },
        }
    }
}

impl<'a> Written<'a> {
    /// Returns its first ten characters, the day as lists show it (`2026-11-22`), without
    /// writing the rest.
    pub fn day(self) -> Day<'a> {
        Day(self)
    }
}

/// The first ten characters of a [`Written`] timestamp.
pub struct Day<'a>(Written<'a>);

impl Day<'_> {
    /// Appends the day to `out`, as its `Display` writes it (a list of 100,000 memories writes as
    /// many days: no formatter for the usual ones).
    pub fn push_to(&self, out: &mut Vec<u8>) {
        match self.0 {
            Written::Text(t) => out.extend_from_slice(super::text::chars_prefix(t, 10).as_bytes()),
            Written::Iso(m) => match day_of(m) {
                Some(day) => out.extend_from_slice(&day),
                None => out.extend_from_slice(super::text::chars_prefix(&self.0.to_string(), 10).as_bytes()),
            },
        }
    }
}

impl std::fmt::Display for Day<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = Vec::with_capacity(10);
        self.push_to(&mut out);
        // Whole characters of a `str` (a prefix by characters) or ASCII digits.
        f.write_str(std::str::from_utf8(&out).unwrap_or_default())
    }
}

impl serde::Serialize for Written<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Returns the current time truncated to microseconds, as Python would see it.
pub fn now() -> DateTime<Utc> {
    let now = Utc::now();
    now.with_nanosecond(now.nanosecond() / 1000 * 1000).unwrap_or(now)
}

/// Parses an ISO 8601 / RFC 3339 timestamp that carries an offset.
///
/// Returns a reason when the text is not one: naive, date-only and malformed values are errors.
pub fn parse(text: &str) -> Result<DateTime<FixedOffset>, String> {
    let t = text.trim();
    if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
        return python_range(dt, t);
    }
    // Python also accepts a `+0000` style offset; chrono's parser with %z handles it.
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f%z", "%Y-%m-%d %H:%M:%S%.f%z"] {
        if let Ok(dt) = DateTime::parse_from_str(t, fmt) {
            return python_range(dt, t);
        }
    }
    if chrono::NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f").is_ok()
        || chrono::NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f").is_ok()
    {
        return Err(format!("timestamp '{t}' has no UTC offset (write it as {t}+00:00)"));
    }
    if chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d").is_ok() {
        return Err(format!("timestamp '{t}' is a date without a time (write it as {t}T00:00:00+00:00)"));
    }
    Err(format!("'{t}' is not an ISO 8601 timestamp (YYYY-MM-DDTHH:MM:SS+00:00)"))
}

/// Parses a timestamp of a memory or context file as co-cli validates it: it must start with
/// `YYYY-MM-DDTHH:MM:SS` (an upper-case `T`, co-cli's regex) and be a real moment Python can
/// represent (year 1 or later, seconds 0–59), then as [`parse`] (with an offset).
pub fn parse_co_cli(text: &str) -> Result<DateTime<FixedOffset>, String> {
    let t = text.trim();
    let b = t.as_bytes();
    let shape = b"dddd-dd-ddTdd:dd:dd";
    let prefix_ok = b.len() >= shape.len()
        && shape.iter().zip(b).all(|(s, c)| if *s == b'd' { c.is_ascii_digit() } else { s == c });
    if !prefix_ok {
        // The more precise reason when there is one (a date without a time, no offset).
        let reason = match parse(t) {
            Err(e) if !e.contains("not an ISO 8601") => e,
            _ => format!("'{t}' is not an ISO 8601 timestamp (YYYY-MM-DDTHH:MM:SS+00:00, with an upper-case T)"),
        };
        return Err(reason);
    }
    parse(t)
}

/// Refuses what chrono accepts but Python's `datetime` does not: a leap second (`:60`) and the
/// year 0.
fn python_range(dt: DateTime<FixedOffset>, t: &str) -> Result<DateTime<FixedOffset>, String> {
    if dt.nanosecond() >= 1_000_000_000 {
        return Err(format!("timestamp '{t}' has second 60, which is not a valid time"));
    }
    if chrono::Datelike::year(&dt.naive_local()) < 1 {
        return Err(format!("timestamp '{t}' has year 0, which is not a valid date"));
    }
    Ok(dt)
}

/// Returns the microseconds since the epoch of a parsed timestamp.
pub fn micros(dt: DateTime<FixedOffset>) -> Micros {
    dt.timestamp_micros()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timestamp_in_co_clis_own_form_is_kept_as_its_instant() {
        let t = |s: &'static str| {
            let micros = micros(parse(s).unwrap());
            (Written::of(s, micros), micros)
        };
        let (w, m) = t("2026-11-22T14:27:04.330453+00:00");
        assert_eq!(w, Written::Iso(m));
        assert_eq!(w.to_string(), "2026-11-22T14:27:04.330453+00:00");
        let (w, m) = t("2026-11-22T14:27:04+00:00");
        assert_eq!((w, w.to_string()), (Written::Iso(m), "2026-11-22T14:27:04+00:00".to_string()));
        // The usual years are written without chrono's format parser, the same as with it.
        for s in ["0001-01-01T00:00:00+00:00", "9999-12-31T23:59:59.999999+00:00", "2026-02-03T04:05:06.000007+00:00"] {
            let dt = parse(s).unwrap().with_timezone(&Utc);
            assert_eq!(py_isoformat(dt), dt.format("%Y-%m-%dT%H:%M:%S%.6f+00:00").to_string().replace(".000000", ""));
            assert_eq!(py_isoformat(dt), s);
        }
        assert_eq!(Written::Iso(m).day().to_string(), "2026-11-22");
        assert_eq!(Written::Text("2026-11-22 14:27:04Z").day().to_string(), "2026-11-22");
        // Any other form keeps its text: the same instant, written otherwise.
        for other in ["2026-11-22T14:27:04Z", "2026-11-22T14:27:04.000000+00:00", "2026-11-22T15:27:04+01:00"] {
            assert_eq!(t(other).0, Written::Text(other));
        }
    }

    #[test]
    fn days_and_timestamps_put_digit_by_digit_read_as_chrono_formats_them() {
        // Every 7,777,777 s and 1 µs over the four-digit years, then the years past them.
        let step: usize = 7_777_777_000_001;
        let at = |y, mo, d, h, mi, s| chrono::NaiveDate::from_ymd_opt(y, mo, d).and_then(|d| d.and_hms_opt(h, mi, s));
        let first = at(0, 1, 1, 0, 0, 0).unwrap().and_utc().timestamp_micros();
        let last = at(9999, 12, 31, 23, 59, 59).unwrap().and_utc().timestamp_micros() + 999_999;
        let edges = [first, last, 0, -1, first - 1, last + 1, i64::MIN, i64::MAX, 8_000_000_000_000_000_000];
        for m in (first..=last).step_by(step).chain(edges) {
            let shown = Written::Iso(m).to_string();
            let day = Written::Iso(m).day().to_string();
            let Some(dt) = DateTime::from_timestamp_micros(m) else {
                assert_eq!((shown.as_str(), day.as_str()), ("", ""), "{m}");
                continue;
            };
            let form =
                if m.rem_euclid(1_000_000) == 0 { "%Y-%m-%dT%H:%M:%S+00:00" } else { "%Y-%m-%dT%H:%M:%S%.6f+00:00" };
            assert_eq!(shown, dt.format(form).to_string(), "{m}");
            let mut pushed = b"x".to_vec();
            Written::Iso(m).day().push_to(&mut pushed);
            assert_eq!(pushed, [b"x", crate::format::text::chars_prefix(&shown, 10).as_bytes()].concat(), "{m}");
            assert_eq!(day.as_bytes(), &pushed[1..]);
        }
        let mut pushed = Vec::new();
        Written::Text("2026-11-22x").day().push_to(&mut pushed);
        Written::Text("é").day().push_to(&mut pushed);
        assert_eq!(pushed, "2026-11-22é".as_bytes());
    }

    #[test]
    fn co_cli_timestamps_are_strict() {
        assert!(parse_co_cli("2026-11-22T14:27:04.330453+00:00").is_ok());
        assert!(parse_co_cli("2026-11-22T14:27:04Z").is_ok());
        assert!(parse_co_cli("2026-11-22 14:27:04+00:00").unwrap_err().contains("upper-case T"));
        assert!(parse_co_cli("2026-11-22t14:27:04+00:00").unwrap_err().contains("upper-case T"));
        assert!(parse_co_cli("0000-01-01T00:00:00+00:00").unwrap_err().contains("year 0"));
        assert!(parse_co_cli("2026-12-31T23:59:60+00:00").unwrap_err().contains("second 60"));
        assert!(parse_co_cli("2026-11-22").unwrap_err().contains("date without a time"));
        // The lenient reader (records, KB_NOW) still takes a space, but not second 60.
        assert!(parse("2026-11-22 14:27:04+00:00").is_ok());
        assert!(parse("2026-12-31T23:59:60Z").is_err());
    }
    use chrono::TimeZone;

    #[test]
    fn isoformat_matches_python() {
        let dt = Utc.with_ymd_and_hms(2026, 11, 22, 14, 27, 4).unwrap();
        assert_eq!(py_isoformat(dt), "2026-11-22T14:27:04+00:00");
        let dt = dt.with_nanosecond(330_453_000).unwrap();
        assert_eq!(py_isoformat(dt), "2026-11-22T14:27:04.330453+00:00");
        let dt = dt.with_nanosecond(1_000).unwrap();
        assert_eq!(py_isoformat(dt), "2026-11-22T14:27:04.000001+00:00");
    }

    #[test]
    fn parses_offsets_and_rejects_naive() {
        for ok in [
            "2026-11-22T14:27:04.330453+00:00",
            "2026-02-09T14:30:00Z",
            "2026-11-22T14:27:04.33+05:30",
            "2026-11-22 14:27:04+00:00",
            "2026-11-22t14:27:04z",
            "2026-11-22T14:27:04+0000",
        ] {
            assert!(parse(ok).is_ok(), "{ok}");
        }
        assert!(parse("2026-01-01T00:00:00").unwrap_err().contains("no UTC offset"));
        assert!(parse("2026-01-01").unwrap_err().contains("date without a time"));
        assert!(parse("2026-01-01T00:00:00garbage").unwrap_err().contains("not an ISO 8601"));
        assert!(parse("").is_err());
    }

    #[test]
    fn ordering_uses_instants_not_strings() {
        let a = micros(parse("2026-01-01T10:00:00Z").unwrap());
        let b = micros(parse("2026-01-01T10:00:00.500000+00:00").unwrap());
        let c = micros(parse("2026-01-01T05:00:00-08:00").unwrap());
        assert!(c > b && b > a);
    }
}
