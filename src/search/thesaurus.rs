//! Related words (docs/behaviour.md, Recall): a small thesaurus of general software-development
//! vocabulary, one group a line in `thesaurus.txt`, compared by English Snowball stem. A query
//! word also matches the other words of each group it is in, at half weight.

use super::tokens::Stems;
use rustc_hash::FxHashMap as HashMap;
use std::sync::OnceLock;

/// The groups, as written (see the file's head for the rules).
pub const TEXT: &str = include_str!("thesaurus.txt");

/// A match through the thesaurus counts this much of a direct one.
pub const RELATED_WEIGHT: f64 = 0.5;

/// Each stem that some group holds, and the stems of the other words of its groups (sorted, each
/// once, never the stem itself).
#[derive(Debug, Default)]
pub struct Thesaurus {
    related: HashMap<String, Vec<String>>,
}

impl Thesaurus {
    /// Parses `text` (one group a line, words separated by white space, `#` comments).
    pub fn parse(text: &str) -> Thesaurus {
        let mut stems = Stems::default();
        let mut related: HashMap<String, Vec<String>> = HashMap::default();
        for line in groups(text) {
            let mut group: Vec<String> = line.split_whitespace().map(|w| stems.stem(w).to_string()).collect();
            group.sort();
            group.dedup();
            for s in &group {
                let list = related.entry(s.clone()).or_default();
                list.extend(group.iter().filter(|o| *o != s).cloned());
            }
        }
        for list in related.values_mut() {
            list.sort();
            list.dedup();
        }
        Thesaurus { related }
    }

    /// Returns the stems related to `stem` (empty when no group holds it).
    pub fn related(&self, stem: &str) -> &[String] {
        self.related.get(stem).map_or(&[], Vec::as_slice)
    }
}

/// The lines of `text` that are groups.
fn groups(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// The thesaurus kb ships, parsed once per process.
pub fn shipped() -> &'static Thesaurus {
    static SHIPPED: OnceLock<Thesaurus> = OnceLock::new();
    SHIPPED.get_or_init(|| Thesaurus::parse(TEXT))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::tokens;

    #[test]
    fn every_group_is_two_stems_or_more_of_lower_case_words_and_no_stop_word() {
        let mut stems = Stems::default();
        let mut count = 0;
        for line in groups(TEXT) {
            count += 1;
            let words: Vec<&str> = line.split_whitespace().collect();
            let distinct: std::collections::BTreeSet<String> =
                words.iter().map(|w| stems.stem(w).to_string()).collect();
            assert!(distinct.len() >= 2, "a group of one stem: {line:?}");
            for w in words {
                let whole = tokens::tokens(w).into_iter().next();
                assert_eq!(whole.as_deref(), Some(w), "{w:?} in {line:?} is not a lower-case word");
                assert!(!tokens::is_stop_word(w), "{w:?} in {line:?} is a stop word");
            }
        }
        assert!((100..=220).contains(&count), "{count} groups: keep the thesaurus small");
    }

    #[test]
    fn words_are_related_by_stem_in_both_directions_and_never_to_themselves() {
        let t = shipped();
        assert!(t.related("test").iter().any(|s| s == "verifi"), "{:?}", t.related("test"));
        assert!(t.related("verifi").iter().any(|s| s == "test"));
        assert!(t.related("compil").iter().any(|s| s == "build"));
        assert!(t.related("test").iter().all(|s| s != "test"));
        assert!(t.related("nextest").is_empty());
        let mine = Thesaurus::parse("# a comment\n\ndeploy deploys ship\nship publish\n");
        assert_eq!(mine.related("deploy"), ["ship"], "deploys is deploy's stem");
        assert_eq!(mine.related("ship"), ["deploy", "publish"]);
        assert_eq!(mine.related("publish"), ["ship"], "groups are not joined through a shared word");
    }
}
