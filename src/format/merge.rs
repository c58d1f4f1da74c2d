//! What a git merge leaves in a text file (docs/safety.md, Git merges): the lines of an unresolved conflict, and
//! the ids still written in a file that no longer parses. Pure text; no IO.

/// One kind of git conflict-marker line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// `<<<<<<< ours`: where a conflict starts.
    Start,
    /// `||||||| base`: the common ancestor's side (`merge.conflictStyle` diff3 or zdiff3).
    Base,
    /// `=======`: between the two sides.
    Middle,
    /// `>>>>>>> theirs`: where a conflict ends.
    End,
}

impl Marker {
    /// Returns the marker as git writes it (without the label after it).
    pub fn as_str(self) -> &'static str {
        match self {
            Marker::Start => "<<<<<<<",
            Marker::Base => "|||||||",
            Marker::Middle => "=======",
            Marker::End => ">>>>>>>",
        }
    }
}

/// Returns the marker a line is: seven marker characters (git's default marker size) at the
/// start, then the end of the line or a space or tab before a label. A CR is ignored.
fn marker_of(line: &str) -> Option<Marker> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    [Marker::Start, Marker::Base, Marker::Middle, Marker::End].into_iter().find(|m| {
        line.strip_prefix(m.as_str()).is_some_and(|rest| {
            // `=======` carries no label; the others may.
            let label_ok = *m != Marker::Middle || rest.trim().is_empty();
            (rest.is_empty() || rest.starts_with([' ', '\t'])) && label_ok
        })
    })
}

/// Returns the conflict-marker lines of `text`, 1-based, in order.
///
/// `<<<<<<<` and `>>>>>>>` lines are markers wherever they are (nothing else writes them; a
/// leftover one of a half-resolved conflict counts). `=======` and `|||||||` lines count only
/// between a `<<<<<<<` line and the `>>>>>>>` line that closes it: elsewhere `=======` is a
/// markdown heading underline.
pub fn markers(text: &str) -> Vec<(usize, Marker)> {
    let mut out = Vec::new();
    let mut open = false;
    for (i, line) in text.split('\n').enumerate() {
        // A quick test first: most lines start with none of the four characters.
        if !line.starts_with(['<', '|', '=', '>']) {
            continue;
        }
        match marker_of(line) {
            Some(Marker::Start) => {
                open = true;
                out.push((i + 1, Marker::Start));
            }
            Some(Marker::End) => {
                open = false;
                out.push((i + 1, Marker::End));
            }
            Some(m) if open => out.push((i + 1, m)),
            _ => {}
        }
    }
    out
}

/// Returns whether `text` may hold a conflict marker: a cheap test before [`markers`] for text
/// that is usually clean (a memory's body).
pub fn may_have_markers(text: &str) -> bool {
    // Built once: the block of a long-running server checks every memory on each request.
    static OPEN: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"<<<<<<<"));
    static CLOSE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b">>>>>>>"));
    OPEN.find(text.as_bytes()).is_some() || CLOSE.find(text.as_bytes()).is_some()
}

/// Returns the highest id written on an `id: N` line of `text` (at the start of a line; the
/// number may be quoted), wherever the line is: the best guess at the ids of a memory or
/// decision file that does not parse, such as one a merge left with conflict markers, so that a
/// new id never reuses one of them.
pub fn written_id(text: &str) -> Option<u64> {
    text.split('\n')
        .filter_map(|line| {
            let value = line.strip_prefix("id:")?.trim();
            let value = value
                .strip_prefix('\'')
                .and_then(|v| v.strip_suffix('\''))
                .or_else(|| value.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
                .unwrap_or(value);
            if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            value.parse::<u64>().ok()
        })
        .max()
}

/// Returns the 1-based line of the frontmatter's `id:` entry, for reports of a duplicate id.
pub fn id_line(text: &str) -> Option<usize> {
    let split = super::frontmatter::split(text).ok()?;
    split.yaml.split('\n').position(|l| l.starts_with("id:")).map(|i| split.yaml_line + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_of_a_conflict_and_of_a_diff3_conflict() {
        let text = "a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> other\nd\n";
        assert_eq!(markers(text), [(2, Marker::Start), (4, Marker::Middle), (6, Marker::End)]);
        let text = "<<<<<<< ours\r\nx\r\n||||||| base\r\ny\r\n=======\r\nz\r\n>>>>>>> theirs\r\n";
        let found: Vec<usize> = markers(text).into_iter().map(|(l, _)| l).collect();
        assert_eq!(found, [1, 3, 5, 7]);
        assert_eq!(markers("<<<<<<<\n=======\n>>>>>>>")[2], (3, Marker::End));
    }

    #[test]
    fn look_alikes_are_not_markers() {
        // A heading underline, longer runs, a label without a space, a table row.
        let text = "Title\n=======\n<<<<<<<< eight\n>>>>>>>>\n<<<<<<<x\n|||||||\n";
        assert!(markers(text).is_empty(), "{:?}", markers(text));
        // `=======` with a label is not git's separator.
        assert_eq!(markers("<<<<<<< a\n======= b\n>>>>>>> c\n").len(), 2);
        // A leftover start or end marker counts on its own.
        assert_eq!(markers("text\n>>>>>>> feature\n"), [(2, Marker::End)]);
        assert_eq!(markers("<<<<<<< HEAD\ntext\n"), [(1, Marker::Start)]);
        assert!(may_have_markers("x\n<<<<<<< HEAD") && !may_have_markers("<<< >>>"));
    }

    #[test]
    fn the_highest_id_line_wins() {
        let text = "<<<<<<< HEAD\n---\nid: 4\n---\n=======\n---\nid: '12'\n---\n>>>>>>> b\n";
        assert_eq!(written_id(text), Some(12));
        assert_eq!(written_id("id: 3\r\nid: \"7\"\n"), Some(7));
        assert_eq!(written_id("  id: 9\nid: x\nid: -1\nid:\nmy id: 5\n"), None);
        assert_eq!(written_id("id: 99999999999999999999999\nid: 2"), Some(2));
    }

    #[test]
    fn the_id_line_of_the_frontmatter() {
        assert_eq!(id_line("---\ncreated: x\nid: 3\n---\n\nid: 4\n"), Some(3));
        assert_eq!(id_line("\u{feff}---\r\nid: 3\r\n---\r\n"), Some(2));
        assert_eq!(id_line("no frontmatter\nid: 3\n"), None);
    }
}
