//! Output: where text goes and how it looks. stdout carries the command's result; warnings and
//! errors go to stderr. Colour only on a terminal and never when NO_COLOR is set; memory text,
//! which comes from outside kb, has control and bidi characters escaped on a terminal.

use serde::Serialize;
use std::io::{self, IsTerminal, Write};

/// How to print for this run.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color_out: bool,
    pub color_err: bool,
    /// stdout is a terminal: escape control characters in untrusted text.
    pub sanitize: bool,
}

impl Style {
    /// Decides colour once, from the terminal and NO_COLOR.
    pub fn detect(no_color: bool) -> Style {
        let out = io::stdout().is_terminal();
        Style { color_out: out && !no_color, color_err: io::stderr().is_terminal() && !no_color, sanitize: out }
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

    /// Prints a warning on stderr (or collects it, inside `capture`).
    pub fn warn(&self, message: &str) {
        let label = paint(self.color_err, "33", "warning:");
        let line = format!("{label} {message}");
        if let Err(line) = CAPTURE.with_borrow_mut(|c| c.as_mut().map(|c| c.warnings.push(line.clone())).ok_or(line)) {
            let _ = writeln!(io::stderr(), "{line}");
        }
    }

    /// Prints an error on stderr.
    pub fn error(&self, message: &str) {
        let label = paint(self.color_err, "31", "error:");
        let _ = writeln!(io::stderr(), "{label} {message}");
    }
}

fn paint(on: bool, code: &str, text: &str) -> String {
    if on { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_string() }
}

/// Replaces control characters (but newline and tab) and bidi controls with visible escapes.
pub fn sanitize(text: &str) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| {
        (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(bad) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars().map(|c| if bad(c) { c.escape_unicode().to_string() } else { c.to_string() }).collect(),
    )
}

/// What a command printed inside `capture`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Captured {
    /// What `print` and `stream` wrote (stdout's bytes).
    pub stdout: Vec<u8>,
    /// Each warning line, as `Style::warn` would have printed it on stderr.
    pub warnings: Vec<String>,
}

thread_local! {
    /// Set inside `capture`: the command's result is collected here instead of printed.
    static CAPTURE: std::cell::RefCell<Option<Captured>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` (a command) with its result and warnings collected instead of printed, and returns
/// both. `kb mcp` runs the CLI's commands this way, since its stdout is the protocol. Only this
/// thread is affected; nesting is allowed, and a panic in `f` still ends the capture.
pub fn capture<T>(f: impl FnOnce() -> T) -> (T, Captured) {
    struct Restore(Option<Option<Captured>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(previous) = self.0.take() {
                CAPTURE.set(previous);
            }
        }
    }
    let mut restore = Restore(Some(CAPTURE.replace(Some(Captured::default()))));
    let value = f();
    let captured = CAPTURE.take().unwrap_or_default();
    if let Some(previous) = restore.0.take() {
        CAPTURE.set(previous);
    }
    (value, captured)
}

/// Appends `bytes` to the capture, if one is active; returns whether it was.
fn captured(bytes: impl FnOnce(&mut Vec<u8>)) -> bool {
    CAPTURE.with_borrow_mut(|c| c.as_mut().map(|c| bytes(&mut c.stdout)).is_some())
}

/// Writes the command's result to stdout. A closed pipe (`kb list | head`) is not an error.
pub fn print(text: &str) -> io::Result<()> {
    if captured(|out| {
        out.extend_from_slice(text.as_bytes());
        if !(text.ends_with('\n') || text.is_empty()) {
            out.push(b'\n');
        }
    }) {
        return Ok(());
    }
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
        serde_json::to_writer_pretty(&mut *w, value).map_err(io::Error::other)?;
        w.write_all(b"\n")
    })
}

/// Streams a large result to stdout through a buffer. A closed pipe is not an error.
pub fn stream(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    if CAPTURE.with_borrow(Option::is_some) {
        let mut buf = Vec::new();
        write(&mut buf)?;
        captured(|out| out.append(&mut buf));
        return Ok(());
    }
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    match write(&mut out).and_then(|_| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Serializes an iterator as a JSON array without collecting it first.
pub struct SerializeIter<I>(std::cell::RefCell<Option<I>>);

impl<I> SerializeIter<I> {
    pub fn new(iter: I) -> Self {
        SerializeIter(std::cell::RefCell::new(Some(iter)))
    }
}

impl<I: Iterator<Item = T>, T: Serialize> Serialize for SerializeIter<I> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0.borrow_mut().take() {
            Some(iter) => serializer.collect_seq(iter),
            None => serializer.collect_seq(std::iter::empty::<T>()),
        }
    }
}

/// Returns at most the first `n` characters (Python `s[:n]`).
pub fn chars_prefix(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Returns co-cli's list summary: the first line, cut to 77 characters + `...` past 80.
pub fn summary(content: &str) -> String {
    let first = content.lines().next().unwrap_or("");
    if first.chars().count() > 80 { format!("{}...", chars_prefix(first, 77)) } else { first.to_string() }
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
    fn capture_collects_output_and_warnings() {
        let style = Style { color_out: false, color_err: false, sanitize: false };
        let ((), got) = capture(|| {
            print("one").unwrap();
            stream(|w| w.write_all(b"two\n")).unwrap();
            style.warn("careful");
            let ((), inner) = capture(|| print("nested").unwrap());
            assert_eq!(inner.stdout, b"nested\n");
            print_json(&[1]).unwrap();
        });
        assert_eq!(String::from_utf8(got.stdout).unwrap(), "one\ntwo\n[\n  1\n]\n");
        assert_eq!(got.warnings, ["warning: careful"]);
        let caught = std::panic::catch_unwind(|| capture(|| panic!("boom")));
        assert!(caught.is_err());
        assert!(CAPTURE.with_borrow(Option::is_none), "a panic ends the capture");
    }

    #[test]
    fn sanitizes_controls() {
        assert_eq!(sanitize("a\x1b[31mb"), "a\\u{1b}[31mb");
        assert_eq!(sanitize("x\u{202e}y"), "x\\u{202e}y");
        assert_eq!(sanitize("ok\n\ttab"), "ok\n\ttab");
    }
}
