//! How PyYAML (YAML 1.1; the reader of co-cli, the Python tool whose file layout kb keeps)
//! resolves a plain scalar, for the few fields where kb must read a hand-written value exactly as
//! co-cli does: serde-saphyr resolves some plain scalars differently (`y` and `n` as booleans,
//! `1e3` and `0o17` as numbers, `007` as 7.0), so kb re-reads such values as text and applies
//! PyYAML's resolver rules (yaml/resolver.py).

use regex::Regex;
use std::sync::LazyLock;

/// The type PyYAML gives a plain (unquoted) scalar.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    Str,
    Int(i128),
    Float,
    Bool(bool),
    Null,
    Timestamp,
    /// `<<` and `=`, which PyYAML's safe loader cannot construct.
    Special,
}

static BOOL: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$"));
static FLOAT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
    )
});
static INT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
    )
});
static TIMESTAMP: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$",
    )
});

fn re(pattern: &str) -> Regex {
    // The patterns are constants checked by the tests below.
    Regex::new(pattern).unwrap_or_else(|e| panic!("invalid built-in pattern {pattern}: {e}"))
}

/// Returns the type PyYAML's resolver gives the plain scalar `text`.
pub fn resolve(text: &str) -> Resolved {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Resolved::Null,
        "<<" | "=" => return Resolved::Special,
        _ => {}
    }
    // PyYAML's resolver picks the patterns to try by the first character, as each pattern's own
    // first character allows: most text (a memory's words) is a string without a regex run.
    let (maybe_bool, maybe_number) = match text.as_bytes()[0] {
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' => (true, false),
        b'-' | b'+' | b'.' | b'0'..=b'9' => (false, true),
        _ => return Resolved::Str,
    };
    if maybe_bool && BOOL.is_match(text) {
        return Resolved::Bool(
            matches!(text.as_bytes()[0], b'y' | b'Y' | b't' | b'T') || text.eq_ignore_ascii_case("on"),
        );
    }
    if !maybe_number {
        return Resolved::Str;
    }
    if INT.is_match(text) {
        return int_value(text).map_or(Resolved::Str, Resolved::Int);
    }
    if FLOAT.is_match(text) {
        return Resolved::Float;
    }
    if TIMESTAMP.is_match(text) {
        return Resolved::Timestamp;
    }
    Resolved::Str
}

/// Returns true when the plain scalar `text` reads back as the string `text`: PyYAML resolves
/// it to a string, and it is none of YAML 1.1's boolean and null words in any letter case, `y`
/// and `n` included (PyYAML reads those two as strings, serde-saphyr and the YAML 1.1 spec's
/// type list as booleans). What may stand unquoted at all is the writer's business.
pub fn is_plain_str(text: &str) -> bool {
    const WORDS: [&str; 9] = ["y", "yes", "n", "no", "true", "false", "on", "off", "null"];
    resolve(text) == Resolved::Str && !WORDS.iter().any(|w| w.eq_ignore_ascii_case(text))
}

/// Constructs an int as PyYAML's `construct_yaml_int`: `_` ignored; `0b` binary, `0x` hex, a
/// leading `0` octal, `a:b:c` base 60.
fn int_value(text: &str) -> Option<i128> {
    let t = text.replace('_', "");
    let (sign, digits) = match t.as_bytes().first() {
        Some(b'-') => (-1, &t[1..]),
        Some(b'+') => (1, &t[1..]),
        _ => (1, t.as_str()),
    };
    let value = if digits == "0" {
        0
    } else if let Some(b) = digits.strip_prefix("0b") {
        i128::from_str_radix(b, 2).ok()?
    } else if let Some(h) = digits.strip_prefix("0x") {
        i128::from_str_radix(h, 16).ok()?
    } else if digits.starts_with('0') {
        i128::from_str_radix(digits, 8).ok()?
    } else if digits.contains(':') {
        digits.split(':').try_fold(0i128, |acc, part| acc.checked_mul(60)?.checked_add(part.parse::<i128>().ok()?))?
    } else {
        digits.parse().ok()?
    };
    Some(sign * value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_like_pyyaml() {
        assert_eq!(resolve("y"), Resolved::Str);
        assert_eq!(resolve("N"), Resolved::Str);
        assert_eq!(resolve("yes"), Resolved::Bool(true));
        assert_eq!(resolve("OFF"), Resolved::Bool(false));
        assert_eq!(resolve("On"), Resolved::Bool(true));
        assert_eq!(resolve("0o17"), Resolved::Str);
        assert_eq!(resolve("1e3"), Resolved::Str);
        assert_eq!(resolve("1.0e+3"), Resolved::Float);
        assert_eq!(resolve("007"), Resolved::Int(7));
        assert_eq!(resolve("010"), Resolved::Int(8));
        assert_eq!(resolve("0x1F"), Resolved::Int(31));
        assert_eq!(resolve("0b101"), Resolved::Int(5));
        assert_eq!(resolve("1_000"), Resolved::Int(1000));
        assert_eq!(resolve("12:30:00"), Resolved::Int(45000));
        assert_eq!(resolve("-3"), Resolved::Int(-3));
        assert_eq!(resolve("2026-01-01"), Resolved::Timestamp);
        assert_eq!(resolve("2026-01-01T00:00:00Z"), Resolved::Timestamp);
        assert_eq!(resolve("~"), Resolved::Null);
        assert_eq!(resolve("<<"), Resolved::Special);
        assert_eq!(resolve(".inf"), Resolved::Float);
        assert_eq!(resolve("python"), Resolved::Str);
        assert_eq!(resolve("09"), Resolved::Str);
    }

    /// The first-character dispatch gives what trying every pattern gives.
    #[test]
    fn the_first_character_picks_the_patterns_as_trying_each_would() {
        let every_pattern = |text: &str| match text {
            "" | "~" | "null" | "Null" | "NULL" => Resolved::Null,
            "<<" | "=" => Resolved::Special,
            _ if BOOL.is_match(text) => Resolved::Bool(
                matches!(text.as_bytes()[0], b'y' | b'Y' | b't' | b'T') || text.eq_ignore_ascii_case("on"),
            ),
            _ if INT.is_match(text) => int_value(text).map_or(Resolved::Str, Resolved::Int),
            _ if FLOAT.is_match(text) => Resolved::Float,
            _ if TIMESTAMP.is_match(text) => Resolved::Timestamp,
            _ => Resolved::Str,
        };
        proptest::proptest!(|(text in "[-+.:_ 0-9eExXbTtZYyNnOoFfaAlsu]{0,12}")| {
            proptest::prop_assert_eq!(resolve(&text), every_pattern(&text));
        });
    }

    #[test]
    fn plain_strings() {
        for s in ["python", "y", "N", "Yes", "tRUE", "off", "NULL", "~", "", "1e3", "0x1F", "2026-01-01", "<<", ".inf"]
        {
            assert_eq!(is_plain_str(s), ["python", "1e3"].contains(&s), "{s:?}");
        }
    }
}
