//! Output: where text goes and how it looks. stdout carries the command's result; warnings and
//! errors go to stderr. Colour only on a terminal and never when NO_COLOR is set; memory text,
//! which comes from outside kb, has control and bidi characters escaped on a terminal.

use crate::error::Diagnostic;
use serde::Serialize;
use std::io::{self, IsTerminal, Write};
use std::path::Path;

/// How to print for this run.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color_out: bool,
    pub color_err: bool,
    /// Escape control characters in untrusted text (always, for the command line's human output:
    /// a memory file could hold an OSC 52 clipboard write or a screen clear; not in MCP replies).
    pub sanitize: bool,
}

impl Style {
    /// Decides colour once, from the terminal and NO_COLOR.
    pub fn detect(no_color: bool) -> Style {
        let out = io::stdout().is_terminal();
        Style { color_out: out && !no_color, color_err: io::stderr().is_terminal() && !no_color, sanitize: true }
    }

    /// Returns `text` in green (success marks) when colour is on.
    pub fn ok(&self, text: &str) -> String {
        paint(self.color_out, "32", text)
    }

    /// Returns `text` in bold when colour is on.
    pub fn bold(&self, text: &str) -> String {
        paint(self.color_out, "1", text)
    }

    /// Returns untrusted text made safe for the terminal.
    pub fn clean<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        if self.sanitize { sanitize(text) } else { std::borrow::Cow::Borrowed(text) }
    }

    /// Prints a warning on stderr.
    pub fn warn(&self, message: &str) {
        let label = paint(self.color_err, "33", "warning:");
        status(&format!("{label} {message}"));
    }

    /// Prints an error on stderr: the one place kb prints `error: <what>`.
    pub fn error(&self, message: &str) {
        let label = paint(self.color_err, "31", "error:");
        status(&format!("{label} {sanitized}", sanitized = sanitize(message)));
    }

    /// Prints a diagnostic on stderr, its path shown by `show`: `warning: path:line: message`,
    /// with `skipped` before the place when kb left the thing out, and the labelled lines
    /// (`WARNING: ...`) of co-cli (the Python tool whose file layout kb keeps) as co-cli prints them. Text from
    /// files is always escaped here.
    pub fn diagnostic(&self, d: &Diagnostic, show: impl Fn(&Path) -> String) {
        let text = d.render(show);
        if d.co_cli_label {
            status(&sanitize(&text));
        } else if d.skipped() && d.path.is_some() {
            self.warn(&sanitize(&format!("skipped {text}")));
        } else {
            self.warn(&sanitize(&text));
        }
    }
}

/// Writes one line on stderr. A closed or failing stderr is ignored: a diagnostic must never
/// stop kb (`eprintln!` would panic).
pub fn status(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

fn paint(on: bool, code: &str, text: &str) -> String {
    if on { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_string() }
}

/// Replaces control characters (but newline and tab) and bidi controls with visible escapes.
pub fn sanitize(text: &str) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| {
        (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if printable_ascii(text.as_bytes()) || !text.chars().any(bad) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars().map(|c| if bad(c) { c.escape_unicode().to_string() } else { c.to_string() }).collect(),
    )
}

/// Returns whether every byte is printable ASCII (space to `~`): most text, decided eight bytes at
/// a time without decoding it.
fn printable_ascii(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    // A byte below 0x20 or of 0x7f (DEL) or above is not printable ASCII: with the high bit of
    // each byte clear, `x + 0x60` sets it exactly where the byte is 0x20 or more, and `x + 0x01`
    // where it is 0x7f.
    let printable = |x: u64| x & HIGH == 0 && !(x + 0x60 * ONES) & HIGH == 0 && (x + ONES) & HIGH == 0;
    let mut words = bytes.chunks_exact(8);
    words.all(|w| printable(u64::from_ne_bytes(w.try_into().unwrap_or_default())))
        && words.remainder().iter().all(|b| matches!(b, b' '..=b'~'))
}

/// Writes the command's result to stdout. A closed pipe (`kb list | head`) is not an error.
pub fn print(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    let r = out
        .write_all(text.as_bytes())
        .and_then(|_| if text.ends_with('\n') || text.is_empty() { Ok(()) } else { out.write_all(b"\n") });
    match r.and_then(|_| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Prints a value as one pretty JSON document.
pub fn print_json<T: Serialize>(value: &T) -> io::Result<()> {
    stream(|w| {
        // Keep the IO error's kind, so that a closed pipe stays a closed pipe (not an error).
        serde_json::to_writer_pretty(&mut *w, value).map_err(|e| match e.io_error_kind() {
            Some(kind) => io::Error::from(kind),
            None => io::Error::other(e),
        })?;
        w.write_all(b"\n")
    })
}

/// Prints an error as the one JSON document of a `--json` run (docs/behaviour.md, Output and exit status):
/// `{"error":{"message":S,"kind":S}}`, so a script that parses stdout always gets JSON.
pub fn print_json_error(message: &str, kind: &str) {
    let _ = print_json(&serde_json::json!({"error": {"message": message, "kind": kind}}));
}

/// Streams a large result to stdout through a buffer. A closed pipe is not an error.
pub fn stream(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    match write(&mut out).and_then(|_| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

pub use crate::format::text::chars_prefix;

/// Returns co-cli's list summary: the first line, cut to 77 characters + `...` past 80.
pub fn summary(content: &str) -> String {
    match summary_cut(content) {
        (head, true) => format!("{head}..."),
        (line, false) => line.to_string(),
    }
}

/// Returns co-cli's list summary as the text it keeps of `content` and whether `...` follows
/// (see [`summary`]), without making a string.
pub fn summary_cut(content: &str) -> (&str, bool) {
    let first = content.lines().next().unwrap_or("");
    // No more characters than bytes: a short line is never cut, and needs no count; nor does one
    // whose first 81 bytes are ASCII.
    let long = first.len() > 80 && (first.as_bytes()[..81].is_ascii() || first.chars().count() > 80);
    if long { (chars_prefix(first, 77), true) } else { (first, false) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries() {
        assert_eq!(summary("First memory"), "First memory");
        assert_eq!(summary("Second memory\nWith multiple lines"), "Second memory");
        let long = "x".repeat(81);
        assert_eq!(summary(&long), format!("{}...", "x".repeat(77)));
        assert_eq!(summary(&"é".repeat(80)), "é".repeat(80));
        assert_eq!(summary(""), "");
    }

    #[test]
    fn printable_ascii_is_told_eight_bytes_at_a_time_as_byte_by_byte() {
        let one_by_one = |b: &[u8]| b.iter().all(|b| matches!(b, b' '..=b'~'));
        for byte in 0..=255u8 {
            for at in 0..19 {
                let mut text = b"printable text, 19b".to_vec();
                text[at] = byte;
                for len in [at + 1, 8, 16, 19] {
                    let part = &text[..len.max(at + 1)];
                    assert_eq!(printable_ascii(part), one_by_one(part), "byte {byte:#x} at {at} of {len}");
                }
            }
        }
        assert!(printable_ascii(b""));
    }

    #[test]
    fn sanitizes_controls() {
        assert_eq!(sanitize("a\x1b[31mb"), "a\\u{1b}[31mb");
        assert_eq!(sanitize("x\u{202e}y"), "x\\u{202e}y");
        assert_eq!(sanitize("ok\n\ttab"), "ok\n\ttab");
    }
}
