//! Token counts in OpenAI's `o200k_base` encoding, exactly as tiktoken counts them
//! (`encode_ordinary(text)`'s length), with no start-up work (the token budget of docs/behaviour.md, Budgets).
//!
//! tiktoken splits the text with a regex (the pre-tokeniser), then byte-pair-encodes each piece.
//! tiktoken-rs spends 130 ms per process parsing its ranks into a hash map and compiling that
//! regex, and compiling the regex with `regex` alone takes 5 ms; a `kb context` must answer in
//! 50 ms. So here both are static: `build.rs` turns `assets/o200k_base.tiktoken` into a hash table
//! embedded in the binary, and the pattern is matched by hand ([`Pieces`]) over Unicode classes
//! that `build.rs` takes from `regex-syntax`, the tables `regex` and tiktoken's `fancy-regex` use.
//! The tests check the pieces against the pattern run by `regex`, and the tokens against
//! tiktoken-rs.
//!
//! Special tokens such as `<|endoftext|>` are counted as ordinary text, as tiktoken's
//! `encode_ordinary` and `encode(text, disallowed_special=())` do: kb counts file text, never a
//! prompt with control tokens.
//!
//! Does not: return or decode token ids (only the count is needed).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use xxhash_rust::xxh3::xxh3_64;

// SLOT_BITS, RANK_BITS, MAX_TOKEN_LEN and CLASS_RUNS, written by build.rs.
include!(concat!(env!("OUT_DIR"), "/o200k.rs"));
/// The open-addressing table: u32 slots `tag << RANK_BITS | rank`, u32::MAX when empty.
static SLOTS: &[[u8; 4]] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_slots.bin")).as_chunks().0;
/// Where each token's bytes start in `BYTES`, by rank, and where the last one ends: u32s.
static OFFSETS: &[[u8; 4]] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_offsets.bin")).as_chunks().0;
static BYTES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_bytes.bin"));

/// No rank: a byte pair that is not a token.
const NONE: u32 = u32::MAX;
/// From this length a piece is merged with a heap, as tiktoken does from 100 bytes: the simple
/// merge is quadratic, and a piece can be a whole run of spaces.
const LARGE: usize = 100;

/// Returns the number of `o200k_base` tokens in `text`, as tiktoken's `encode_ordinary` counts.
pub fn count(text: &str) -> usize {
    let mut parts = Vec::new();
    Pieces::new(text).map(|piece| count_piece(piece.as_bytes(), &mut parts)).sum()
}

/// Returns the number of tokens of one pre-tokenised piece.
fn count_piece(piece: &[u8], parts: &mut Vec<(usize, u32)>) -> usize {
    if piece.len() <= 1 || rank(piece).is_some() {
        piece.len().min(1)
    } else if piece.len() < LARGE {
        merge(piece, parts);
        parts.len() - 1
    } else {
        merge_large(piece)
    }
}

/// Returns the rank of the token whose bytes are `bytes`, if there is one.
fn rank(bytes: &[u8]) -> Option<u32> {
    if bytes.len() > MAX_TOKEN_LEN {
        return None;
    }
    let hash = xxh3_64(bytes);
    let mask = (1 << SLOT_BITS) - 1;
    // The slot keeps the hash's top bits, so most misses never compare bytes.
    let tag = (hash >> (32 + RANK_BITS)) as u32;
    let mut i = hash as usize & mask;
    // build.rs leaves most slots empty, so the probe ends.
    loop {
        let slot = u32::from_le_bytes(*SLOTS.get(i)?);
        if slot == NONE {
            return None;
        }
        let rank = slot & ((1 << RANK_BITS) - 1);
        if slot >> RANK_BITS == tag && token(rank) == Some(bytes) {
            return Some(rank);
        }
        i = (i + 1) & mask;
    }
}

/// Returns the bytes of the token with this rank.
fn token(rank: u32) -> Option<&'static [u8]> {
    let start = u32::from_le_bytes(*OFFSETS.get(rank as usize)?);
    let end = u32::from_le_bytes(*OFFSETS.get(rank as usize + 1)?);
    BYTES.get(start as usize..end as usize)
}

/// The rank of `piece[start..end]` as a token, or NONE.
fn rank_or_none(piece: &[u8], start: usize, end: usize) -> u32 {
    piece.get(start..end).and_then(rank).unwrap_or(NONE)
}

/// Byte-pair-merges a piece of 2 or more bytes as tiktoken's `_byte_pair_merge` does: merge the
/// adjacent pair that is the lowest-ranked token, the leftmost on ties, until no pair is a token.
/// Leaves in `parts` each token's start, then the piece's length, each with the rank of the pair
/// that starts there.
fn merge(piece: &[u8], parts: &mut Vec<(usize, u32)>) {
    parts.clear();
    parts.extend((0..piece.len()).map(|i| (i, rank_or_none(piece, i, i + 2))));
    parts.push((piece.len(), NONE));
    // `min_by_key` returns the first of equal minima: the leftmost pair.
    while let Some((i, _)) =
        (parts.iter().enumerate()).filter(|(_, (_, rank))| *rank != NONE).min_by_key(|(_, (_, rank))| *rank)
    {
        parts.remove(i + 1);
        // The merged token and its left neighbour now form new pairs.
        for j in [i.checked_sub(1), Some(i)].into_iter().flatten() {
            parts[j].1 = match parts.get(j + 2) {
                Some(&(end, _)) => rank_or_none(piece, parts[j].0, end),
                None => NONE,
            };
        }
    }
}

/// Returns the number of tokens of `merge`, for long pieces: the same merges in O(n log n),
/// as tiktoken's `_byte_pair_merge_large`, with a heap of (rank, start) and a linked list.
fn merge_large(piece: &[u8]) -> usize {
    let n = piece.len();
    // For each live token's start: where it ends, where the previous one starts, and the rank of
    // it merged with the next (NONE when that is no token, or when `i` is no longer a start).
    let mut next: Vec<usize> = (1..=n).collect();
    let mut prev: Vec<usize> = (0..n).map(|i| i.saturating_sub(1)).collect();
    let mut pair: Vec<u32> = (0..n).map(|i| rank_or_none(piece, i, i + 2)).collect();
    let mut heap: BinaryHeap<_> = (0..n).filter(|&i| pair[i] != NONE).map(|i| Reverse((pair[i], i))).collect();
    let mut tokens = n;
    while let Some(Reverse((rank, i))) = heap.pop() {
        // A rank and a start fix the pair's bytes, so an entry is current iff its rank is.
        if pair[i] != rank {
            continue;
        }
        let gone = next[i];
        let end = next[gone];
        next[i] = end;
        if end < n {
            prev[end] = i;
        }
        pair[gone] = NONE;
        tokens -= 1;
        let left = (i > 0).then(|| prev[i]);
        for j in [Some(i), left].into_iter().flatten() {
            let pair_end = next.get(next[j]).copied().unwrap_or(usize::MAX);
            pair[j] = rank_or_none(piece, j, pair_end);
            if pair[j] != NONE {
                heap.push(Reverse((pair[j], j)));
            }
        }
    }
    tokens
}

/// The pre-tokeniser: the pieces of o200k's pattern, as tiktoken's `fancy-regex` finds them.
///
/// ```text
/// [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
/// |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
/// |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
/// ```
///
/// Every char starts some alternative, so the pieces tile the text. Each function below is one
/// alternative, with the match a backtracking engine picks (greedy, first alternative first).
pub struct Pieces<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Pieces<'a> {
    pub fn new(text: &'a str) -> Self {
        Pieces { text, pos: 0 }
    }
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let start = self.pos;
        let end = piece_end(self.text, start)?;
        self.pos = end;
        self.text.get(start..end)
    }
}

/// The classes the pattern tells apart (White_Space is `\s`); `\r`, `\n`, `'`, ` ` and `/` are
/// compared as chars.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    Other = 0,
    Space = 1,
    Number = 2,
    Mark = 3,
    /// Lu and Lt.
    Upper = 4,
    /// Ll.
    Lower = 5,
    /// Lm and Lo.
    Letter = 6,
}

/// ASCII's classes, by hand (a test checks them against `regex`).
const ASCII: [Class; 128] = {
    let mut classes = [Class::Other; 128];
    let mut b = 0;
    while b < 128 {
        classes[b] = match b as u8 {
            b'a'..=b'z' => Class::Lower,
            b'A'..=b'Z' => Class::Upper,
            b'0'..=b'9' => Class::Number,
            b'\t'..=b'\r' | b' ' => Class::Space,
            _ => Class::Other,
        };
        b += 1;
    }
    classes
};

/// Returns a char's class.
#[inline]
fn class(c: char) -> Class {
    match ASCII.get(c as usize) {
        Some(&class) => class,
        None => table_class(c),
    }
}

/// Returns a non-ASCII char's class from build.rs's runs.
fn table_class(c: char) -> Class {
    let run = CLASS_RUNS.partition_point(|&run| run >> 3 <= c as u32);
    match CLASS_RUNS.get(run.wrapping_sub(1)).map(|run| run & 7) {
        Some(1) => Class::Space,
        Some(2) => Class::Number,
        Some(3) => Class::Mark,
        Some(4) => Class::Upper,
        Some(5) => Class::Lower,
        Some(6) => Class::Letter,
        _ => Class::Other,
    }
}

/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`
fn upperish(class: Class) -> bool {
    matches!(class, Class::Upper | Class::Letter | Class::Mark)
}

/// `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`
fn lowerish(class: Class) -> bool {
    matches!(class, Class::Lower | Class::Letter | Class::Mark)
}

/// `\p{L}|\p{M}`: where a word can start.
fn wordish(class: Class) -> bool {
    upperish(class) || lowerish(class)
}

/// `[^\s\p{L}\p{N}]`
fn punct(class: Class) -> bool {
    matches!(class, Class::Other | Class::Mark)
}

/// Returns the char at byte `i`, its class, and the byte after it.
#[inline]
fn char_at(text: &str, i: usize) -> Option<(char, Class, usize)> {
    // Most text is ASCII: skip the UTF-8 decoding.
    let byte = *text.as_bytes().get(i)?;
    if let Some(&class) = ASCII.get(usize::from(byte)) {
        return Some((char::from(byte), class, i + 1));
    }
    let c = text.get(i..)?.chars().next()?;
    Some((c, class(c), i + c.len_utf8()))
}

/// Returns where the run of chars of these classes that starts at `i` ends.
fn run(text: &str, mut i: usize, when: impl Fn(Class) -> bool) -> usize {
    while let Some((_, class, next)) = char_at(text, i)
        && when(class)
    {
        i = next;
    }
    i
}

/// Returns the end of the piece that starts at `start`, or None at the end of the text.
fn piece_end(text: &str, start: usize) -> Option<usize> {
    let (c, class, after) = char_at(text, start)?;
    // `[^\r\n\p{L}\p{N}]?`: a backtracking engine tries the word with this char first, then
    // without. A word can only start at a letter or a mark, so the other cases skip both tries.
    let prefixed = c != '\r'
        && c != '\n'
        && matches!(class, Class::Other | Class::Space | Class::Mark)
        && char_at(text, after).is_some_and(|(_, next, _)| wordish(next));
    if prefixed || wordish(class) {
        let with_prefix = |word: fn(&str, usize) -> Option<usize>| {
            prefixed.then(|| word(text, after)).flatten().or_else(|| word(text, start))
        };
        if let Some(end) = with_prefix(word_lower).or_else(|| with_prefix(word_upper)) {
            return Some(end);
        }
    }
    // `\p{N}{1,3}`
    if class == Class::Number {
        let mut end = after;
        for _ in 0..2 {
            match char_at(text, end) {
                Some((_, Class::Number, next)) => end = next,
                _ => break,
            }
        }
        return Some(end);
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`: a space is a `\s`, so without it the `+` cannot start.
    let punct_start = if c == ' ' { after } else { start };
    let punct_end = run(text, punct_start, punct);
    if punct_end > punct_start {
        let tail = text.get(punct_end..).unwrap_or("");
        let slashes = tail.bytes().take_while(|b| matches!(b, b'\r' | b'\n' | b'/')).count();
        return Some(punct_end + slashes);
    }
    Some(spaces_end(text, start).unwrap_or(after))
}

/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+` and a contraction, from `i`.
fn word_lower(text: &str, i: usize) -> Option<usize> {
    // The `*` takes the whole upper run; if no lower char follows, it gives chars back until the
    // `+` can take one: the run's last lower char, which is then the `+`'s only char.
    let mut end = i;
    let mut last_lower_end = None;
    while let Some((_, class, next)) = char_at(text, end)
        && upperish(class)
    {
        if lowerish(class) {
            last_lower_end = Some(next);
        }
        end = next;
    }
    let end = match char_at(text, end) {
        Some((_, class, _)) if lowerish(class) => run(text, end, lowerish),
        _ => last_lower_end?,
    };
    Some(contraction(text, end))
}

/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*` and a contraction, from `i`.
fn word_upper(text: &str, i: usize) -> Option<usize> {
    let upper_end = run(text, i, upperish);
    (upper_end > i).then(|| contraction(text, run(text, upper_end, lowerish)))
}

/// Returns where `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` ends when it starts at `i`.
fn contraction(text: &str, i: usize) -> usize {
    let Some(rest) = text.get(i..).and_then(|rest| rest.strip_prefix('\'')) else {
        return i;
    };
    let mut chars = rest.chars();
    let (first, second) = (chars.next(), chars.next());
    let len = |c: Option<char>| c.map_or(0, char::len_utf8);
    match (first.map(fold), second.map(fold)) {
        (Some('s' | 't' | 'm' | 'd'), _) => i + 1 + len(first),
        (Some('r' | 'v'), Some('e')) | (Some('l'), Some('l')) => i + 1 + len(first) + len(second),
        _ => i,
    }
}

/// Returns a char case-folded as `(?i:..)` folds it for the contractions' letters: Unicode simple
/// case folding, where the only non-ASCII char that folds to one of `strevmld` is `ſ` (U+017F; a
/// test checks every char against `regex`).
fn fold(c: char) -> char {
    if c == 'ſ' { 's' } else { c.to_ascii_lowercase() }
}

/// `\s*[\r\n]+|\s+(?!\S)|\s+` from `i`: up to the last line break of the run of spaces; else the
/// run, minus its last char when that is followed by a non-space (the `(?!\S)`), unless it is the
/// only char. Returns None when no space starts at `i`.
fn spaces_end(text: &str, i: usize) -> Option<usize> {
    let (mut end, mut last_start, mut chars, mut last_break_end) = (i, i, 0, None);
    while let Some((c, Class::Space, next)) = char_at(text, end) {
        if c == '\r' || c == '\n' {
            last_break_end = Some(next);
        }
        (last_start, end, chars) = (end, next, chars + 1);
    }
    match last_break_end {
        _ if chars == 0 => None,
        Some(break_end) => Some(break_end),
        None if chars > 1 && end < text.len() => Some(last_start),
        None => Some(end),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use regex::Regex;
    use std::sync::LazyLock;

    /// tiktoken's own encoder: tiktoken-rs runs the pattern with `fancy-regex`, lookahead included.
    fn tiktoken(text: &str) -> Vec<u32> {
        tiktoken_rs::o200k_base_singleton().encode_ordinary(text)
    }

    /// Returns the ranks of `text`'s tokens: the splitter and `merge`, for token-by-token parity.
    fn encode(text: &str) -> Vec<u32> {
        let (mut out, mut parts) = (Vec::new(), Vec::new());
        for piece in Pieces::new(text).map(str::as_bytes) {
            if let Some(rank) = rank(piece) {
                out.push(rank);
                continue;
            }
            merge(piece, &mut parts);
            out.extend(parts.windows(2).map(|w| rank(&piece[w[0].0..w[1].0]).expect("a token")));
        }
        out
    }

    /// Returns tiktoken's pieces, found by `regex`: the pattern without `\s+(?!\S)`, which gives
    /// back its last char when a non-space follows, as that lookahead does.
    fn regex_pieces(text: &str) -> Vec<&str> {
        static RE: LazyLock<Regex> = LazyLock::new(|| {
            let pattern = tiktoken_rs::O200K_BASE_PAT_STR.replace(r"|\s+(?!\S)", "");
            assert!(!pattern.contains("(?!"), "the pattern changed: {pattern}");
            Regex::new(&pattern).unwrap()
        });
        let (mut pieces, mut pos) = (Vec::new(), 0);
        while let Some(m) = RE.find_at(text, pos) {
            let mut end = m.end();
            let s = m.as_str();
            // Only `\s+` matches spaces without a line break (`\s*[\r\n]+` comes first).
            if s.chars().all(char::is_whitespace)
                && !s.contains(['\r', '\n'])
                && s.chars().count() > 1
                && end < text.len()
            {
                end -= s.chars().last().map_or(0, char::len_utf8);
            }
            pieces.push(&text[pos..end]);
            pos = end;
        }
        pieces
    }

    /// Asserts that the splitter, the ranks and the count all agree with tiktoken.
    fn assert_parity(text: &str) {
        assert_eq!(Pieces::new(text).collect::<Vec<_>>(), regex_pieces(text), "pieces of {text:?}");
        let expected = tiktoken(text);
        assert_eq!(encode(text), expected, "tokens of {text:?}");
        assert_eq!(count(text), expected.len(), "count of {text:?}");
    }

    /// Hard cases for the pattern and the merges, one per line of thought.
    const FRAGMENTS: &[&str] = &[
        // Code, with indentation by spaces and tabs.
        "fn main() {\n    let x: Vec<u8> = vec![1, 2, 3];\n\tif x.len() > 1_000 {\n        println!(\"{x:?}\");\n    }\n}\n",
        "def f(a, b):\n    return a ** 2  # comment\n\n\nclass A(object):\n    pass\r\n",
        "    \t  return;\n",
        "x == y && z != w || !v",
        "#[derive(Debug)]",
        "a->b::c<'a>",
        "/* */ // ///",
        // CJK, Japanese, Korean and other scripts, with and without marks.
        "中文文本，包含标点。",
        "日本語のテキスト、カタカナ・ひらがな。",
        "한국어 텍스트입니다.",
        "สวัสดีครับ",
        "مرحبا بالعالم",
        "שָׁלוֹם",
        "क्षत्रिय",
        "Ελληνικά ΚΕΦΑΛΑΙΑ",
        "Привет, МИР",
        "ǅungla ǈ",
        "ʰʲ ª º",
        // Emoji: skin tones, ZWJ sequences, flags, variation selectors, keycaps.
        "👍🏽",
        "👨‍👩‍👧‍👦",
        "🇫🇷🇯🇵🇺🇸",
        "❤️‍🔥",
        "🏳️‍🌈",
        "1️⃣",
        "😀😃😄",
        "a😀b",
        // Combining marks, alone, at the start, stacked.
        "e\u{301}",
        "a\u{308}\u{304}",
        "\u{301}x",
        "\u{301}\u{302}",
        " \u{301}",
        "Z\u{335}\u{321}a\u{300}",
        "A\u{301}B",
        // Whitespace runs of every kind, at the end and before non-spaces.
        "    ",
        "\t\t\t",
        "\n\n\n",
        "\r\n\r\n",
        "\r\r\n",
        "  \n  ",
        " \n \t",
        " \u{3000} ",
        "\u{a0}\u{a0}x",
        "\u{2028}",
        "\u{85}",
        "\u{b}\u{c}",
        "x   ",
        "  1",
        "   .",
        "\t\tfoo",
        "  \u{301}",
        "        }",
        // Contractions in every case, and things that are not contractions.
        "'s",
        "'S",
        "'LL",
        "'ll",
        "'Ll",
        "'ve",
        "'VE",
        "'Re",
        "'d",
        "'M",
        "'t",
        "'ſ",
        "I'm",
        "DON'T",
        "we'LL",
        "they'rE",
        "'x",
        "''s",
        "s'",
        "O'Neil's",
        "'s's",
        "AB'Cd",
        "l'l",
        // Digits: runs of 1 to 7, other scripts' digits, other numbers.
        "1",
        "12",
        "123",
        "1234",
        "12345",
        "123456",
        "1234567",
        "3.14159",
        "1,000,000",
        "٣٤٥٦",
        "½¼",
        "ⅫⅣ",
        "x²",
        // URLs, paths, markdown.
        "https://example.com/path/to?q=1&x=y#frag",
        "http://a.b/c//d/",
        "C:\\Users\\x",
        "./src/main.rs",
        "# Heading\n\n- item\n- [link](http://x.y)\n\n```rust\ncode\n```\n",
        "**bold** _it_ `code`",
        "| a | b |\n|---|---|\n",
        "> quote\n>\n",
        "<!-- kb -->",
        "***\n",
        "1. one\n2. two",
        // Special tokens are plain text here.
        "<|endoftext|>",
        "<|endofprompt|>",
        // Cases and oddities.
        "HTTPServer",
        "camelCaseWord",
        "ALLCAPS",
        "snake_case",
        "\u{0}",
        "\u{7f}",
        "\u{feff}x",
        "\u{200b}",
        "\u{10ffff}",
        "\u{e000}",
        "\u{378}",
        "ǅ",
        "ÀÉÎõü",
        "ﬁ ﬀ",
    ];

    /// Chars that meet at the pattern's edges: dense mixes of these hit every alternative.
    const ALPHABET: &[char] = &[
        ' ', ' ', '\t', '\n', '\r', 'a', 'A', 'ǅ', 'ª', '\'', 's', 'L', 'l', 'ſ', '1', '٣', '.', '/', '\u{3000}',
        '\u{301}', '中', '😀', '\u{200d}', '_', '\u{85}',
    ];

    #[test]
    fn fragments_parity() {
        for fragment in FRAGMENTS {
            for text in [fragment.to_string(), format!(" {fragment}"), format!("{fragment} "), format!("x{fragment}\n")]
            {
                assert_parity(&text);
            }
        }
    }

    #[test]
    fn long_runs_parity() {
        for unit in [" ", "\t", "\n", "\r\n", " \n", "a", "A", "-", "=", "1", "中", "👍", "\u{301}", "ab ", "'s"] {
            for n in [7, 50, 99, 100, 101, 257, 1000] {
                let run = unit.repeat(n);
                assert_parity(&run);
                assert_parity(&format!("{run}x"));
                assert_parity(&format!("x{run}."));
            }
        }
    }

    /// A 20 KiB markdown block of the kind `kb context` counts.
    fn block() -> String {
        let mut text = String::new();
        while text.len() < 20 * 1024 {
            for (i, fragment) in FRAGMENTS.iter().enumerate() {
                text.push_str(&format!("\n## Section {i}\n\nThe memory says: {fragment} and it's fine.\n"));
            }
        }
        text
    }

    #[test]
    fn block_parity() {
        assert_parity(&block());
    }

    #[test]
    fn every_token_is_found() {
        let tokens = OFFSETS.len() - 1;
        assert_eq!(tokens, 199_998);
        for rank in 0..tokens as u32 {
            assert_eq!(super::rank(token(rank).unwrap()), Some(rank));
        }
        assert_eq!(super::rank(b"not a token at all"), None);
    }

    #[test]
    fn classes_match_regex() {
        // Every char, in one string, checked against `regex`'s classes.
        let all: String = (0..=0x10_ffff).filter_map(char::from_u32).collect();
        let mut expected = vec![Class::Other; 0x11_0000];
        for (pattern, class) in [
            (r"\s+", Class::Space),
            (r"\p{N}+", Class::Number),
            (r"\p{M}+", Class::Mark),
            (r"[\p{Lu}\p{Lt}]+", Class::Upper),
            (r"\p{Ll}+", Class::Lower),
            (r"[\p{Lm}\p{Lo}]+", Class::Letter),
        ] {
            for c in Regex::new(pattern).unwrap().find_iter(&all).flat_map(|m| m.as_str().chars()) {
                expected[c as usize] = class;
            }
        }
        for c in all.chars() {
            assert_eq!(class(c), expected[c as usize], "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn contraction_folding_matches_regex() {
        let all: String = (0..=0x10_ffff).filter_map(char::from_u32).collect();
        let by_regex: String = Regex::new("(?i)[strevmld]").unwrap().find_iter(&all).map(|m| m.as_str()).collect();
        let mine: String = all.chars().filter(|&c| "strevmld".contains(fold(c))).collect();
        assert_eq!(mine, by_regex);
    }

    #[test]
    fn merge_large_matches_merge() {
        let mut parts = Vec::new();
        for (i, unit) in ["  ", "ab", "a b", "=-", "\u{301}", "1a", "中文", "\n\t"].iter().enumerate() {
            let piece = unit.repeat(60 + 17 * i);
            merge(piece.as_bytes(), &mut parts);
            assert_eq!(merge_large(piece.as_bytes()), parts.len() - 1, "{piece:?}");
        }
    }

    #[test]
    fn empty_and_plain_text() {
        assert_eq!(count(""), 0);
        assert_eq!(count("hello world"), 2);
    }

    fn mixes() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::collection::vec(prop::sample::select(FRAGMENTS), 0..8).prop_map(|v| v.concat()),
            prop::collection::vec(prop::sample::select(ALPHABET), 0..40).prop_map(String::from_iter),
            prop::collection::vec(any::<char>(), 0..40).prop_map(String::from_iter),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn random_mixes_parity(text in mixes()) {
            assert_parity(&text);
        }

        #[test]
        fn random_long_pieces(bytes in prop::collection::vec(prop::sample::select(b" aeinst\n=\xe4\xb8\xad".as_slice()), 100..300)) {
            let mut parts = Vec::new();
            merge(&bytes, &mut parts);
            prop_assert_eq!(merge_large(&bytes), parts.len() - 1);
        }
    }
}
