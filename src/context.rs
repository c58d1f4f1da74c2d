//! The always-loaded context files (`context.md`, global and project): their frontmatter rules.
//!
//! A context file has optional-but-expected frontmatter with `version` (an integer) and
//! `updated` (an ISO 8601 timestamp). Problems are warnings for `kb context` and problems for
//! `kb check`; the body is used either way, without the YAML block.

use crate::frontmatter::{self, SplitError};
use crate::memory::Problem;
use crate::time;
use serde_json::Value;

/// Returns the body of a context file (after its frontmatter, when it has one) and the problems
/// of its frontmatter.
pub fn read(text: &str) -> (&str, Vec<Problem>) {
    let split = match frontmatter::split(text) {
        Ok(s) => s,
        Err(SplitError::Missing) => {
            let body = text.strip_prefix('\u{feff}').unwrap_or(text);
            return (body, vec![Problem::new(Some(1), "no frontmatter: 'version' and 'updated' are required")]);
        }
        Err(SplitError::Unclosed) => {
            return (
                text,
                vec![Problem::new(Some(1), "frontmatter is not closed: no '---' line after the opening one")],
            );
        }
    };
    let fields = match frontmatter::parse(split.yaml) {
        Ok(f) => f,
        Err(e) => {
            return (split.body, vec![Problem::new(e.line.map(|l| l + split.yaml_line - 1).or(Some(1)), e.message)]);
        }
    };
    let line_of = |key: &str| {
        frontmatter::raw_entries(split.yaml, &fields)
            .and_then(|es| es.into_iter().find(|e| e.key == key))
            .map_or(Some(1), |e| Some(e.line + split.yaml_line - 1))
    };
    let mut problems = Vec::new();
    match fields.get("version") {
        None => problems.push(Problem::new(Some(1), "missing required field: version")),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => {}
        Some(_) => problems.push(Problem::new(line_of("version"), "'version' must be an integer")),
    }
    match fields.get("updated") {
        None => problems.push(Problem::new(Some(1), "missing required field: updated")),
        Some(Value::String(s)) => {
            if let Err(e) = time::parse(s) {
                problems
                    .push(Problem::new(line_of("updated"), format!("'updated' must be ISO 8601 with an offset: {e}")));
            }
        }
        Some(_) => problems.push(Problem::new(line_of("updated"), "'updated' must be an ISO 8601 timestamp string")),
    }
    (split.body, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_frontmatter_rules() {
        let (body, p) = read("---\nversion: 1\nupdated: 2026-02-09T14:30:00Z\n---\n\n# Body\n");
        assert_eq!((body, p.len()), ("\n# Body\n", 0));
        let (_, p) = read("---\nversion: '1'\nupdated: 2026-02-09T14:30:00Z\n---\nx");
        assert_eq!(p[0].line, Some(2));
        assert!(p[0].message.contains("integer"));
        let (_, p) = read("---\nversion: 1\n---\nx");
        assert!(p[0].message.contains("updated"));
        let (_, p) = read("---\nversion: 1\nupdated: not-a-timestamp\n---\nx");
        assert!(p[0].message.contains("ISO 8601"));
        let (body, p) = read("---\ninvalid: [unclosed\n---\nBody");
        assert_eq!(body, "Body");
        assert!(p[0].message.contains("malformed"));
    }
}
