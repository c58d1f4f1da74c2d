//! Turns `assets/o200k_base.tiktoken` into the static tables that `src/format/tokens.rs` embeds,
//! so that counting tokens does no work at start-up (tiktoken-rs parses this file into a hash map
//! in every process: 130 ms). Also writes the Unicode classes of o200k's pre-tokeniser, taken from
//! `regex-syntax`: the tables that `regex` and tiktoken's `fancy-regex` match `\p{..}` and `\s` with.
//!
//! Output in OUT_DIR, all deterministic:
//! - `o200k_slots.bin`: 2^SLOT_BITS little-endian u32 slots of an open-addressing table (linear
//!   probing, indexed by the low bits of the token's xxh3). A slot holds `tag << 18 | rank`, the tag
//!   being the hash's top 14 bits, or u32::MAX when empty.
//! - `o200k_offsets.bin`: N+1 u32 offsets into `o200k_bytes.bin`, indexed by rank.
//! - `o200k_bytes.bin`: every token's bytes, in rank order.
//! - `o200k.rs`: the constants and the Unicode class runs.

use std::{env, fs, path::Path};

use regex_syntax::hir::{Class, HirKind};
use xxhash_rust::xxh3::xxh3_64;

/// 2^18 slots for 199,998 tokens: a 1 MiB table at load 0.76; a probe reads adjacent u32s.
const SLOT_BITS: u32 = 18;
const RANK_BITS: u32 = 18;

fn main() {
    let asset = "assets/o200k_base.tiktoken";
    println!("cargo::rerun-if-changed={asset}");
    let text = fs::read_to_string(asset).expect("read assets/o200k_base.tiktoken");

    let (mut offsets, mut bytes, mut slots) = (vec![0u32], Vec::new(), vec![u32::MAX; 1 << SLOT_BITS]);
    for (rank, line) in text.lines().enumerate() {
        // The file lists ranks 0, 1, 2, ... in order, so a token's rank is its line number.
        let (token, r) = line.split_once(' ').expect("a `token rank` line");
        assert_eq!(r.parse::<usize>().ok(), Some(rank), "ranks must be 0, 1, 2, ...");
        assert!(rank < (1 << RANK_BITS) - 1, "a rank must fit in RANK_BITS, below the empty slot's");
        assert!(rank * 5 < (1 << SLOT_BITS) * 4, "the table must stay under 80% full, for short probes");
        let token = base64(token);
        let hash = xxh3_64(&token);
        let mut slot = hash as usize & ((1 << SLOT_BITS) - 1);
        while slots[slot] != u32::MAX {
            slot = (slot + 1) & ((1 << SLOT_BITS) - 1);
        }
        slots[slot] = ((hash >> (32 + RANK_BITS)) as u32) << RANK_BITS | rank as u32;
        bytes.extend_from_slice(&token);
        offsets.push(bytes.len() as u32);
    }
    let max_len = offsets.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);

    // Every char gets one class; the classes must not overlap (they do not in Unicode).
    let mut class = vec![0u8; 0x11_0000];
    let sets = [r"\s", r"\p{N}", r"\p{M}", r"[\p{Lu}\p{Lt}]", r"\p{Ll}", r"[\p{Lm}\p{Lo}]"];
    for (id, pattern) in (1..).zip(sets) {
        let HirKind::Class(Class::Unicode(set)) = regex_syntax::parse(pattern).unwrap().into_kind() else {
            panic!("{pattern} is not a class")
        };
        for c in set.ranges().iter().flat_map(|r| r.start() as usize..=r.end() as usize) {
            assert_eq!(class[c], 0, "{pattern} overlaps another class at U+{c:04X}");
            class[c] = id;
        }
    }
    // Runs of one class, each `first_char << 3 | class`, for a binary search.
    let runs: Vec<u32> = (0..class.len())
        .filter(|&c| c == 0 || class[c] != class[c - 1])
        .map(|c| (c as u32) << 3 | u32::from(class[c]))
        .collect();

    let out = env::var_os("OUT_DIR").expect("OUT_DIR");
    let out = Path::new(&out);
    let le = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    fs::write(out.join("o200k_slots.bin"), le(&slots)).unwrap();
    fs::write(out.join("o200k_offsets.bin"), le(&offsets)).unwrap();
    fs::write(out.join("o200k_bytes.bin"), &bytes).unwrap();
    let consts = format!(
        "const SLOT_BITS: u32 = {SLOT_BITS};\nconst RANK_BITS: u32 = {RANK_BITS};\n\
         const MAX_TOKEN_LEN: usize = {max_len};\n\
         static CLASS_RUNS: [u32; {}] = {runs:?};\n",
        runs.len()
    );
    fs::write(out.join("o200k.rs"), consts).unwrap();
}

/// Returns the bytes of standard, padded base64 (the tiktoken file's encoding).
fn base64(s: &str) -> Vec<u8> {
    let (mut out, mut acc, mut bits) = (Vec::new(), 0u32, 0);
    for c in s.bytes().take_while(|&c| c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("bad base64 {s:?}"),
        };
        acc = (acc << 6 | u32::from(v)) & 0xFF_FFFF;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}
