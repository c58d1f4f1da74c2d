//! The symbol verdicts of the last full `kb audit`, for the checks that cannot afford a symbol
//! search (the compiled context, docs/behaviour.md, What reaches an agent): for each audited text
//! that cites a symbol, keyed by a hash of that text, the symbols it cites that occurred in no
//! tracked file (a text whose symbols were all found has no entry). They are kept in the audit's cache, `.co-cli/cache/audit.json` (key `symbols`),
//! beside its pair scores.
//!
//! Derived state, trusted only as far as the content: an entry is found by the hash of the text
//! being checked, so an edited text has no verdict until the next audit, and an entry's symbols
//! count only when the text itself cites them (a hand-edited cache cannot make a text stale
//! by a symbol it does not name).

use super::refs::{self, Ref};
use super::{Kind, Problem};
use std::collections::HashMap;
use std::path::Path;

/// The largest cache file read.
const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// Text hash → the symbols (as written) that the audit found nowhere, for each text that cites
/// one.
pub type Verdicts = HashMap<u64, Vec<String>>;

/// Returns the key of a text's verdict.
pub fn key(text: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(text.as_bytes())
}

/// Returns the check the audit cache keeps beside `verdicts` (their hash, in key order), so a
/// verdict edited by hand is not trusted.
pub fn digest(verdicts: &Verdicts) -> u64 {
    let sorted: std::collections::BTreeMap<&u64, &Vec<String>> = verdicts.iter().collect();
    let bytes = serde_json::to_vec(&sorted).unwrap_or_default();
    xxhash_rust::xxh3::xxh3_64_with_seed(&bytes, 0x5eed)
}

/// Reads the verdicts from the audit cache at `path`; an absent, unreadable or foreign file, or
/// one whose verdicts do not match their check, has none.
pub fn load(path: Option<&Path>) -> Verdicts {
    #[derive(serde::Deserialize)]
    struct File {
        #[serde(default)]
        symbols: Verdicts,
        #[serde(default)]
        symbols_check: u64,
    }
    let Some(path) = path else { return Verdicts::new() };
    let file: Option<File> = std::fs::metadata(path)
        .ok()
        .filter(|m| m.is_file() && m.len() < MAX_BYTES)
        .and_then(|_| std::fs::read(path).ok())
        .and_then(|b| serde_json::from_slice(&b).ok());
    file.filter(|f| f.symbols_check == digest(&f.symbols)).map(|f| f.symbols).unwrap_or_default()
}

/// Returns the symbol problems the audit found for the text whose [`key`] is `key` and whose
/// references are `refs`: none when it has no verdict for this text.
pub fn problems(verdicts: &Verdicts, key: u64, refs: &[Ref]) -> Vec<Problem> {
    let Some(missing) = verdicts.get(&key) else { return Vec::new() };
    let mut out: Vec<Problem> = Vec::new();
    for raw in missing {
        let cited = refs.iter().find_map(|r| match r {
            Ref::Symbol { raw: r, name } if r == raw => Some(name.clone()),
            Ref::Path { raw: r, .. } if r == raw => refs::symbol_ref(raw).map(|s| match s {
                Ref::Symbol { name, .. } => name,
                _ => raw.clone(),
            }),
            _ => None,
        });
        if let Some(name) = cited
            && !out.iter().any(|p| &p.reference == raw)
        {
            out.push(Problem {
                kind: Kind::Symbol,
                reference: raw.clone(),
                message: format!("`{name}` occurs in no tracked file (as of the last `kb audit`)"),
                hint: None,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_counts_only_for_its_text_and_the_symbols_it_cites() {
        let text = "Errors are `ApiError` values, see `user.email`";
        let refs = refs::extract(text, &[]);
        let mut v = Verdicts::new();
        v.insert(key(text), vec!["ApiError".into(), "NotCited".into(), "user.email".into()]);
        let p = problems(&v, key(text), &refs);
        let names: Vec<&str> = p.iter().map(|p| p.reference.as_str()).collect();
        assert_eq!(names, ["ApiError", "user.email"], "a symbol the text does not cite is ignored");
        assert!(p[0].message.contains("`ApiError` occurs in no tracked file"));
        // Another text (an edit) has no verdict.
        assert!(problems(&v, key("Errors are `ApiError` values."), &refs).is_empty());
    }

    #[test]
    fn the_cache_file_is_read_tolerantly() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("audit.json");
        assert!(load(Some(&p)).is_empty());
        let verdicts: Verdicts = [(7, vec!["X_y".to_string()])].into_iter().collect();
        let check = digest(&verdicts);
        std::fs::write(
            &p,
            format!(r#"{{"version":1,"groups":{{}},"symbols":{{"7":["X_y"]}},"symbols_check":{check}}}"#),
        )
        .unwrap();
        assert_eq!(load(Some(&p)).get(&7).map(Vec::len), Some(1));
        std::fs::write(
            &p,
            format!(r#"{{"version":1,"groups":{{}},"symbols":{{"7":["Y_z"]}},"symbols_check":{check}}}"#),
        )
        .unwrap();
        assert!(load(Some(&p)).is_empty(), "a verdict edited by hand does not match its check");
        std::fs::write(&p, r#"{"version":1,"groups":{}}"#).unwrap();
        assert!(load(Some(&p)).is_empty(), "an older cache has no verdicts");
        std::fs::write(&p, "not json").unwrap();
        assert!(load(Some(&p)).is_empty());
    }
}
