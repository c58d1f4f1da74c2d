//! Compatibility with co-cli's own reader and scorer (co-cli is the Python tool whose file layout
//! kb keeps): every file kb writes loads in Python PyYAML `safe_load` with co-cli's splitter and
//! validator, with the same values; hand-written YAML 1.1 is read as co-cli reads it; similarity
//! equals Python RapidFuzz.
//!
//! These tests need python3 with pyyaml==6.0.3 and rapidfuzz==3.14.3 (`.ci/run` installs them).

use crate::common::*;
use serde_json::{Value, json};

/// co-cli's reader (its loader and validator at commit 336e9647), as a Python prelude: `load(path)`
/// returns `(frontmatter, content, problem)` exactly as co-cli's `_load_all_memories` would see it.
const CO_CLI_READER: &str = r#"
import json, re, sys, glob, os, datetime, yaml

def parse_frontmatter(text):
    m = re.match(r"^---\s*\n(.*?)\n---\s*\n?(.*)", text, re.DOTALL)
    if not m:
        return {}, text
    try:
        fm = yaml.safe_load(m.group(1))
    except yaml.YAMLError as e:
        return {}, text
    if not fm or not isinstance(fm, dict):
        return {}, text
    for k, v in list(fm.items()):
        if hasattr(v, "isoformat"):
            fm[k] = v.isoformat().replace("+00:00", "Z")
    return fm, m.group(2)

TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")

def validate(fm):
    if "id" not in fm: return "missing required field: id"
    if not isinstance(fm["id"], int): return "id must be an integer"
    if "created" not in fm: return "missing required field: created"
    if not isinstance(fm["created"], str) or not TS.match(fm["created"]): return "created must be ISO8601"
    if "tags" in fm:
        if not isinstance(fm["tags"], list): return "tags must be a list"
        if not all(isinstance(t, str) for t in fm["tags"]): return "tags must contain only strings"
    for k in ("source", "auto_category", "consolidation_reason"):
        if k in fm and fm[k] is not None and not isinstance(fm[k], str): return k + " must be a string"
    if "updated" in fm:
        if not isinstance(fm["updated"], str) or not TS.match(fm["updated"]): return "updated must be ISO8601"
    if "decay_protected" in fm and not isinstance(fm["decay_protected"], bool): return "decay_protected must be a bool"
    return None

def load(path):
    with open(path, encoding="utf-8") as f:   # co-cli: Path.read_text()
        text = f.read()
    fm, body = parse_frontmatter(text)
    problem = validate(fm) if fm else "no frontmatter"
    return fm, body.strip(), problem

def typed(v):
    """A value with its Python type, so that a bool or a date read back from a string shows."""
    if isinstance(v, list): return [typed(x) for x in v]
    if isinstance(v, dict): return {str(k): typed(x) for k, x in v.items()}
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))): return ["float", str(v)]
    return [type(v).__name__, v if isinstance(v, (int, float, str, bool)) or v is None else str(v)]
"#;

/// Loads every memory file with co-cli's reader; returns `{file name: {fm, content, problem}}`.
fn co_cli_load(t: &TestEnv) -> serde_json::Map<String, Value> {
    let script = format!(
        "{CO_CLI_READER}\nout = {{}}\nfor p in sorted(glob.glob(os.path.join(sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read().strip(), '*.md'))):\n    fm, content, problem = load(p)\n    out[os.path.basename(p)] = {{'fm': typed(fm), 'content': content, 'problem': problem}}\nprint(json.dumps(out))\n"
    );
    let out = python(&script, t.memories().to_str().unwrap());
    match serde_json::from_str(&out).unwrap() {
        Value::Object(m) => m,
        other => panic!("{other}"),
    }
}

/// A string value as `typed` shows it.
fn s(v: &str) -> Value {
    json!(["str", v])
}

/// Strings that YAML 1.1 reads as another type, or that need quoting or escaping.
fn tricky() -> Vec<String> {
    let mut v: Vec<String> = [
        "yes",
        "no",
        "on",
        "off",
        "Yes",
        "NO",
        "On",
        "OFF",
        "y",
        "n",
        "Y",
        "N",
        "true",
        "False",
        "TRUE",
        "null",
        "Null",
        "NULL",
        "~",
        "1_000",
        "12:30:00",
        "1:20",
        "190:20:30",
        "2026-01-01",
        "2026-01-01T10:00:00Z",
        "2026-01-01 10:00:00",
        "=",
        "<<",
        "  lead",
        "trail  ",
        "#",
        "#hash",
        "a #b",
        "a# b",
        ": ",
        "a: b",
        "key:",
        "-",
        "- dash",
        "--- dashes",
        "...",
        "?",
        "? q",
        "[a]",
        "{a: 1}",
        "a, b",
        "!tag",
        "!!str",
        "&anchor",
        "*alias",
        "%pct",
        "@at",
        "`tick",
        "|",
        "|-",
        ">",
        "'",
        "\"",
        "it's",
        "say \"hi\"",
        "''",
        "emoji 🎉",
        "🎉",
        "日本語",
        "日本語 テキスト",
        "multi\nline",
        "trailing newline\n",
        "back\\slash",
        "\\n literal",
        "tab\there",
        ".inf",
        "-.inf",
        ".nan",
        ".NaN",
        "0x1F",
        "0o17",
        "017",
        "0b101",
        "1e3",
        "1.0e+3",
        "+1",
        "-1",
        "3.14",
        "0",
        "nbsp\u{a0}inside",
        "nel\u{85}inside",
        "ls\u{2028}inside",
        "zero\u{200b}width",
        "bell\u{7}",
        "esc\u{1b}[0m",
        "del\u{7f}",
        "c1\u{80}",
        "bom\u{feff}inside",
        "nonchar\u{fffe}",
        "max\u{10ffff}",
        "ÿ latin1",
        "Straße",
        "web dev",
        "python",
        "_consolidated",
        "/path/to",
        "a/b",
        "C++",
        "c#",
        "x=1",
        "a\"b'c",
        "%",
        "@",
        "`",
        "{",
        "}",
        "[",
        "]",
        ",",
        "&",
        "*",
        "!",
        "|x",
        ">x",
        "'quoted'",
        "\"dq\"",
        " ",
        "1",
        "-0",
        "+.inf",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push("x".repeat(200));
    v.push(format!("long words {}", "lorem ipsum ".repeat(20)));
    v
}

/// Python `str.strip()` (what co-cli does to content) and Rust `trim()` (what kb does to tags)
/// agree on every string in [`tricky`].
fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

#[test]
fn every_written_tag_and_body_loads_unchanged_in_pyyaml() {
    if !python_ready() {
        return;
    }
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_DEDUP_THRESHOLD", "100").env("CO_CLI_MEMORY_MAX_COUNT", "100000");
    let mut seen = std::collections::HashSet::new();
    // (content, tags) per saved id.
    let mut saved: Vec<(String, Vec<String>)> = Vec::new();
    let all = tricky();
    for (i, value) in all.iter().enumerate() {
        let content = py_strip(value);
        let tag = value.trim();
        // A content with the same sorted tokens (after lower+strip) as an earlier one scores 100 and
        // would consolidate: give it an index.
        let mut key: Vec<String> = content.to_lowercase().split_whitespace().map(String::from).collect();
        key.sort();
        let content = if content.is_empty() || !seen.insert(key) {
            py_strip(&format!("{content} #{i}")).to_string()
        } else {
            content.to_string()
        };
        let mut tags = vec![format!("t{i}")];
        if !tag.is_empty() {
            tags.push(tag.to_string());
        }
        let mut args = vec!["--json".to_string(), "save".to_string(), "-".to_string()];
        for tg in &tags {
            args.push(format!("--tag={tg}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = t.kb_stdin(&args, Some(&content)).ok().json();
        assert_eq!(out["action"], "saved", "{value:?}: {out}");
        assert_eq!(out["memory_id"].as_u64(), Some(saved.len() as u64 + 1));
        saved.push((content, tags));
    }
    let loaded = co_cli_load(&t);
    assert_eq!(loaded.len(), saved.len());
    let mut failures = Vec::new();
    for (name, v) in &loaded {
        let fm = &v["fm"];
        let id = fm["id"][1].as_u64().unwrap_or_else(|| panic!("{name}: id {fm}"));
        let (content, tags) = &saved[id as usize - 1];
        let want_tags: Vec<Value> = tags.iter().map(|t| s(t)).collect();
        if v["problem"] != Value::Null {
            failures.push(format!("{name}: co-cli rejects it: {}", v["problem"]));
        }
        if fm["tags"] != Value::Array(want_tags.clone()) {
            failures.push(format!("{name}: tags {} != {}", fm["tags"], Value::Array(want_tags)));
        }
        if v["content"] != content.as_str() {
            failures.push(format!("{name}: content {} != {content:?}", v["content"]));
        }
        if fm["created"] != s("2026-11-22T12:00:00+00:00") {
            failures.push(format!("{name}: created {}", fm["created"]));
        }
        // kb reads back what it wrote, too.
        let m = t.show(id);
        if m["tags"] != json!(tags) || m["content"] != content.as_str() {
            failures.push(format!("{name}: kb reads back {m}"));
        }
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(t.kb(&["check"]).code, 0);
}

#[test]
fn consolidated_and_protected_files_load_unchanged_in_pyyaml() {
    if !python_ready() {
        return;
    }
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_DEDUP_THRESHOLD", "100");
    // Hand-written keys of every shape; kb must keep them as PyYAML reads them.
    t.mem_file(
        "001-base.md",
        &format!(
            "---\ncreated: '{}'\ncustom: {{a: 1, b: [x, 'yes']}}\nflag: yes\nid: 1\nlist:\n  - one\n  - 2\n\
             note: \"multi\\nline\"\nplain_date: 2026-01-01\nsource: user-told\ntags:\n- keep\nwhen: 2026-01-01T10:00:00Z\n---\n\n\
             the base memory text\n",
            days_ago(1.0)
        ),
    );
    let before = co_cli_load(&t);
    let tags = tricky().into_iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect::<Vec<_>>();
    let tag_args: Vec<String> = tags.iter().map(|tg| format!("--tag={tg}")).collect();
    let mut args = vec!["--json", "save", "the base memory text"];
    args.extend(tag_args.iter().map(String::as_str));
    assert_eq!(t.kb(&args).ok().json()["action"], "consolidated");
    t.kb(&["protect", "1"]).ok();
    let after = co_cli_load(&t);
    let (b, a) = (&before["001-base.md"]["fm"], &after["001-base.md"]["fm"]);
    assert_eq!(after["001-base.md"]["problem"], Value::Null, "{after:?}");
    for key in ["created", "custom", "flag", "id", "list", "note", "plain_date", "when"] {
        assert_eq!(a[key], b[key], "{key} changed");
    }
    let mut want: Vec<Value> = vec![s("keep")];
    for tg in &tags {
        if !want.contains(&s(tg)) {
            want.push(s(tg));
        }
    }
    assert_eq!(a["tags"], Value::Array(want));
    assert_eq!(a["decay_protected"], json!(["bool", true]));
    assert_eq!(a["updated"], s("2026-11-22T12:00:00+00:00"));
    assert_eq!(after["001-base.md"]["content"], "the base memory text");
}

/// The memory-layer keys load in co-cli's reader with the values kb saved: `type`, `importance`,
/// `agent` (every string of [`tricky`] that is a valid agent name is tried as one) and
/// `decay_protected` for a `core_context` memory; a memory saved without them has none.
#[test]
fn type_importance_and_agent_load_unchanged_in_pyyaml() {
    if !python_ready() {
        return;
    }
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_DEDUP_THRESHOLD", "100").env("CO_CLI_MEMORY_MAX_COUNT", "100000");
    let types = ["core_context", "learning", "pattern", "update"];
    let levels = ["high", "medium", "low"];
    let valid =
        |a: &str| !a.trim().is_empty() && a.trim() == a && !a.contains(['/', '\\']) && !a.chars().any(char::is_control);
    let agents: Vec<String> = tricky().into_iter().filter(|a| valid(a)).collect();
    assert!(agents.len() > 50, "{agents:?}");
    // (type, importance, agent) per saved id; the first memory has none of them.
    let mut saved: Vec<Option<(&str, &str, String)>> = vec![None];
    t.kb(&["save", "a memory without layer keys"]).ok();
    for (i, agent) in agents.iter().enumerate() {
        let (kind, level) = (types[i % types.len()], levels[i % levels.len()]);
        let content = format!("layered memory number {i}");
        let agent_arg = format!("--agent={agent}");
        let out = t.kb(&["--json", "save", &content, "--type", kind, "--importance", level, &agent_arg]).ok().json();
        assert_eq!(out["memory_id"].as_u64(), Some(saved.len() as u64 + 1), "{agent:?}: {out}");
        saved.push(Some((kind, level, agent.clone())));
    }
    let loaded = co_cli_load(&t);
    assert_eq!(loaded.len(), saved.len());
    let mut failures = Vec::new();
    for (name, v) in &loaded {
        let fm = &v["fm"];
        let id = fm["id"][1].as_u64().unwrap_or_else(|| panic!("{name}: id {fm}"));
        if v["problem"] != Value::Null {
            failures.push(format!("{name}: co-cli rejects it: {}", v["problem"]));
        }
        let (want, protected) = match &saved[id as usize - 1] {
            None => ([Value::Null, Value::Null, Value::Null], Value::Null),
            Some((kind, level, agent)) => {
                let protected = if *kind == "core_context" { json!(["bool", true]) } else { Value::Null };
                ([s(kind), s(level), s(agent)], protected)
            }
        };
        let got = [fm["type"].clone(), fm["importance"].clone(), fm["agent"].clone()];
        if got != want || fm["decay_protected"] != protected {
            failures
                .push(format!("{name}: PyYAML reads {got:?} (protected {}), kb saved {want:?}", fm["decay_protected"]));
        }
        // kb reads back what it wrote, too.
        let m = t.show(id);
        let back = [m["type"].clone(), m["importance"].clone(), m["agent"].clone()];
        let want_back = match &saved[id as usize - 1] {
            None => [json!("learning"), json!("medium"), Value::Null],
            Some((kind, level, agent)) => [json!(kind), json!(level), json!(agent)],
        };
        if back != want_back {
            failures.push(format!("{name}: kb reads back {back:?}"));
        }
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(t.kb(&["check"]).code, 0);
}

#[test]
fn random_tags_and_texts_load_unchanged_in_pyyaml() {
    if !python_ready() {
        return;
    }
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_DEDUP_THRESHOLD", "100");
    let pieces = [
        "a",
        "Z",
        "0",
        "9",
        " ",
        "  ",
        "\t",
        "#",
        ":",
        ": ",
        "-",
        "- ",
        "'",
        "\"",
        "\\",
        ",",
        "[",
        "]",
        "{",
        "}",
        "&",
        "*",
        "!",
        "|",
        ">",
        "%",
        "@",
        "`",
        "?",
        "=",
        "<<",
        "~",
        "yes",
        "no",
        "on",
        "null",
        "true",
        "1_0",
        "12:30",
        "2026-01-01",
        ".inf",
        "0x",
        "e3",
        "\u{a0}",
        "\u{85}",
        "\u{2028}",
        "\u{feff}",
        "\u{7}",
        "\u{1b}",
        "日本",
        "🎉",
        "é",
        "ß",
        "\n",
        "\r\n",
        "...",
        "---",
    ];
    let mut rng = Rng::new(2026);
    let mut saved: Vec<(String, Vec<String>)> = Vec::new();
    for n in 0..40 {
        let mut tags = vec![format!("n{n}")];
        for _ in 0..8 {
            let len = 1 + rng.below(6);
            let tag: String = (0..len).map(|_| *rng.pick(&pieces)).collect();
            let tag = tag.trim().to_string();
            if !tag.is_empty() && !tags.contains(&tag) {
                tags.push(tag);
            }
        }
        let len = 1 + rng.below(12);
        let body: String = (0..len).map(|_| *rng.pick(&pieces)).collect::<String>().replace('\r', "");
        let content = format!("{} {n}", py_strip(&body));
        let mut args: Vec<String> = vec!["--json".into(), "save".into(), "-".into()];
        for tg in &tags {
            args.push(format!("--tag={tg}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = t.kb_stdin(&args, Some(&content)).ok().json();
        assert_eq!(out["memory_id"].as_u64(), Some(n + 1), "{out}");
        saved.push((py_strip(&content).to_string(), tags));
    }
    let loaded = co_cli_load(&t);
    let mut failures = Vec::new();
    for (name, v) in &loaded {
        let id = v["fm"]["id"][1].as_u64().unwrap();
        let (content, tags) = &saved[id as usize - 1];
        let want: Vec<Value> = tags.iter().map(|t| s(t)).collect();
        if v["problem"] != Value::Null || v["fm"]["tags"] != Value::Array(want) || v["content"] != content.as_str() {
            failures.push(format!("{name}: {v} vs {content:?} {tags:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Hand-written values that co-cli accepts must be read by kb with the same meaning. (Where
/// co-cli rejects a value, kb may accept it; the deliberate differences, `id: true` and
/// timestamps without an offset, are not in this table.)
#[test]
fn hand_written_yaml_11_values_are_read_like_co_cli() {
    if !python_ready() {
        return;
    }
    let t = TestEnv::pinned();
    let tag_values = [
        "y",
        "n",
        "Y",
        "N",
        "yes",
        "No",
        "on",
        "OFF",
        "True",
        "null",
        "~",
        "1_000",
        "12:30:00",
        "2026-01-01",
        "0o17",
        "1e3",
        "0x1F",
        "017",
        "+1",
        ".inf",
        "'yes'",
        "\"on\"",
        "!!str yes",
        "plain words",
        "C++",
        "日本",
    ];
    let flag_values = ["yes", "no", "on", "off", "Yes", "NO", "True", "false", "y", "n"];
    let mut names = Vec::new();
    for (i, v) in tag_values.iter().enumerate() {
        let name = format!("{:03}-tag.md", i + 1);
        t.mem_file(
            &name,
            &format!("---\ncreated: '2026-11-01T10:00:00+00:00'\nid: {}\ntags:\n- {v}\n---\n\nt {i}\n", i + 1),
        );
        names.push(name);
    }
    for (j, v) in flag_values.iter().enumerate() {
        let id = 100 + j;
        let name = format!("{id:03}-flag.md");
        t.mem_file(
            &name,
            &format!(
                "---\ncreated: '2026-11-01T10:00:00+00:00'\ndecay_protected: {v}\nid: {id}\nsource: {v}\n---\n\nf {j}\n"
            ),
        );
        names.push(name);
    }
    let loaded = co_cli_load(&t);
    let list = t.list_json();
    let kb_by_name: std::collections::HashMap<String, &Value> = list["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["path"].as_str().unwrap().rsplit('/').next().unwrap().to_string(), m))
        .collect();
    let mut failures = Vec::new();
    for name in &names {
        let co = &loaded[name];
        if co["problem"] != Value::Null {
            continue;
        }
        let Some(m) = kb_by_name.get(name) else {
            failures.push(format!("{name}: co-cli reads {} but kb skips it", co["fm"]));
            continue;
        };
        let co_tags: Vec<Value> =
            co["fm"]["tags"].as_array().map_or(vec![], |a| a.iter().map(|t| t[1].clone()).collect());
        if m["tags"] != Value::Array(co_tags.clone()) {
            failures.push(format!("{name}: tags kb {} co-cli {co_tags:?}", m["tags"]));
        }
        let co_flag = co["fm"]["decay_protected"][1].as_bool().unwrap_or(false);
        if m["decay_protected"] != co_flag {
            failures.push(format!("{name}: decay_protected kb {} co-cli {co_flag}", m["decay_protected"]));
        }
        let co_id = co["fm"]["id"][1].as_u64();
        if m["id"].as_u64() != co_id {
            failures.push(format!("{name}: id kb {} co-cli {co_id:?}", m["id"]));
        }
    }
    assert!(failures.is_empty(), "{} differences:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn zero_padded_id_like_the_file_name_is_read() {
    if !python_ready() {
        return;
    }
    // co-cli reads `id: 007` as 7 (it is the same number in octal and decimal).
    let t = TestEnv::pinned();
    t.mem_file("007-padded.md", "---\ncreated: '2026-11-01T10:00:00+00:00'\nid: 007\ntags: []\n---\n\npadded id\n");
    let co = co_cli_load(&t);
    assert_eq!(co["007-padded.md"]["fm"]["id"], json!(["int", 7]));
    assert_eq!(t.ids(), [7], "{:?}", t.kb(&["check"]));
}

#[test]
fn reference_similarity_pairs_match_python() {
    if !python_ready() {
        return;
    }
    let pairs: &[(&str, &str, f64)] = &[
        ("I prefer TypeScript for web development", "I prefer typescript for web dev", 88.571_428_571_428_57),
        (
            "User prefers Python for data science projects",
            "User prefers Python for data science work",
            83.720_930_232_558_13,
        ),
        ("I prefer typescript", "typescript i prefer", 100.0),
        ("Memory 4", "Memory 5", 87.5),
        ("Memory 10", "Memory 11", 88.888_888_888_888_89),
        ("I prefer typescript", "I use postgresql database", 31.818_181_818_181_824),
        ("Hello, World!", "world hello", 91.666_666_666_666_67),
        ("user PREFERS pytest over UNITTEST!", "User prefers pytest over unittest", 98.507_462_686_567_17),
        ("emoji 🎉 party 🎉", "party emoji 🎉", 92.857_142_857_142_86),
        ("ΟΔΟΣ σοφίας", "σοφίας οδος", 100.0),
        ("", "", 100.0),
        ("abc", "", 0.0),
    ];
    for &(a, b, want) in pairs {
        let got = kb::similarity::similarity(a, b);
        assert!((got - want).abs() < 1e-9, "{a:?} / {b:?}: {got} != {want}");
    }
}

#[test]
fn similarity_equals_python_rapidfuzz_on_random_pairs() {
    if !python_ready() {
        return;
    }
    let words = [
        "user",
        "prefers",
        "pytest",
        "over",
        "unittest",
        "TypeScript",
        "web",
        "dev",
        "Straße",
        "ß",
        "ΟΔΟΣ",
        "σοφίας",
        "日本語",
        "テキスト",
        "🎉",
        "👍🏽",
        "naïve",
        "café",
        "user_name",
        "a",
        "I",
        "İstanbul",
        "ǅ",
        "Ⅻ",
        "ﬁ",
        "x1",
        "1_000",
        "hello,",
        "world!",
        "(x)",
        "\"q\"",
        "'s",
        "ŉ",
        "ΣΑΣ",
        "ᾼ",
        "Ω",
        "K",
        "é",
        "e\u{301}",
    ];
    let seps = [
        " ", "  ", "\t", "\n", "\u{a0}", "\u{3000}", "\u{85}", "\u{1f}", "\u{2028}", "\u{200b}", ", ", "-", "\r\n",
        "\u{b}", "\u{c}",
    ];
    let mut rng = Rng::new(0x5eed);
    let make = |rng: &mut Rng| -> String {
        if rng.below(20) == 0 {
            return String::new();
        }
        let n = rng.below(9);
        let mut s = String::new();
        if rng.below(4) == 0 {
            s.push_str(rng.pick_str(&seps));
        }
        for i in 0..n {
            if i > 0 {
                s.push_str(rng.pick_str(&seps));
            }
            s.push_str(rng.pick_str(&words));
        }
        if rng.below(4) == 0 {
            s.push_str(rng.pick_str(&seps));
        }
        s
    };
    let mut pairs: Vec<(String, String)> = Vec::new();
    for _ in 0..600 {
        let a = make(&mut rng);
        // Half the pairs are near-duplicates: a shuffled or edited copy.
        let b = if rng.below(2) == 0 {
            let mut toks: Vec<&str> = a.split(' ').collect();
            let k = toks.len();
            if k > 1 {
                toks.swap(rng.below(k), rng.below(k));
            }
            let mut b = toks.join(" ");
            if rng.below(2) == 0 {
                b.push_str(rng.pick_str(&words));
            }
            b.to_uppercase()
        } else {
            make(&mut rng)
        };
        pairs.push((a, b));
    }
    let input = serde_json::to_string(&pairs).unwrap();
    let out = python(
        "import json, sys\nfrom rapidfuzz import fuzz\npairs = json.load(sys.stdin)\n\
         print(json.dumps([fuzz.token_sort_ratio(a.lower().strip(), b.lower().strip()) for a, b in pairs]))",
        &input,
    );
    let want: Vec<f64> = serde_json::from_str(&out).unwrap();
    let mut failures = Vec::new();
    for ((a, b), w) in pairs.iter().zip(&want) {
        let got = kb::similarity::similarity(a, b);
        if (got - w).abs() > 1e-9 {
            failures.push(format!("{a:?} / {b:?}: kb {got} python {w}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} differ:\n{}", failures.len(), pairs.len(), failures.join("\n"));
}

#[test]
fn similarity_reported_by_save_equals_python() {
    if !python_ready() {
        return;
    }
    let t = TestEnv::pinned().env("CO_CLI_MEMORY_DEDUP_THRESHOLD", "0");
    t.memory(1, "Über die Straße gehen wir täglich", &days_ago(1.0), &[]);
    let new = "ÜBER DIE STRASSE gehen  wir\ttäglich!";
    let out = t.kb(&["--json", "save", "--dry-run", new]).ok().json();
    let py = python(
        "import sys, json\nfrom rapidfuzz import fuzz\na, b = json.load(sys.stdin)\nprint(fuzz.token_sort_ratio(a.lower().strip(), b.lower().strip()))",
        &serde_json::to_string(&(new, "Über die Straße gehen wir täglich")).unwrap(),
    );
    let want: f64 = py.trim().parse().unwrap();
    assert!((out["similarity"].as_f64().unwrap() - want).abs() < 1e-9, "{out} vs {want}");
}

/// `kb protect` and `kb unprotect` on hand-written frontmatter of every shape: co-cli must read
/// every other value exactly as before, and kb must still read the memory.
#[test]
fn protect_refuses_frontmatter_it_cannot_edit_exactly() {
    let t = TestEnv::pinned();
    let text = "---\n{id: 4, created: '2026-11-20T00:00:00+00:00', tags: [x]}\n---\n\nflow\n";
    let path = t.mem_file("004-flow.md", text);
    let run = t.kb(&["protect", "4"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("004-flow.md") && run.stderr.contains("edit the file by hand"), "{run:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "a refused rewrite changes nothing");
    assert_eq!(t.ids(), [4]);
}

#[test]
fn protect_keeps_every_other_value_as_pyyaml_reads_it() {
    if !python_ready() {
        return;
    }
    let created = "created: '2026-11-20T00:00:00+00:00'\n";
    let shapes = [
        format!("id: 1\n{created}zz_defaults: &d {{lang: en}}\naa_settings: *d\n"),
        format!("\"id\": 2\n{created}custom: {{when: 2026-01-01, n: 0o17, flag: yes}}\n"),
        // (The block scalar is not last: co-cli's splitter eats the newline before the closing fence.)
        format!("id: 3\n# a comment between keys\n{created}note: |\n  line one\n  line two\ntags: [b, a]\n"),
        // (A top-level flow mapping is refused instead: see the test below.)
        format!("id: 4\n{created}'quoted key': 'it''s'\n"),
        format!("id: 5\n{created}note: this is a long\n  wrapped plain note\nwhen: 2026-01-01\n"),
        format!("id: 6\n{created}list:\n- {{a: 1}}\n- [1, 2]\n- ~\n- 12:30:00\n"),
    ];
    let t = TestEnv::pinned();
    for (i, yaml) in shapes.iter().enumerate() {
        t.mem_file(&format!("{:03}-shape.md", i + 1), &format!("---\n{yaml}---\n\nshape {}\n", i + 1));
    }
    let before = co_cli_load(&t);
    assert_eq!(t.ids(), [1, 2, 3, 4, 5, 6], "kb must read every shape before the test starts");
    for id in 1..=6 {
        t.kb(&["protect", &id.to_string()]).ok();
    }
    let protected = co_cli_load(&t);
    let kb_ids = t.ids();
    let mut failures = Vec::new();
    for id in 1..=6 {
        let run = t.kb(&["unprotect", &id.to_string()]);
        if run.code != 0 {
            failures.push(format!("unprotect {id}: {}", run.stderr.trim()));
        }
    }
    let unprotected = co_cli_load(&t);
    for (name, b) in &before {
        for (stage, after) in [("protect", &protected), ("unprotect", &unprotected)] {
            let mut a = after[name]["fm"].clone();
            let flag = a.as_object_mut().unwrap().remove("decay_protected");
            if stage == "protect" && flag != Some(json!(["bool", true])) {
                failures.push(format!("{name}: {stage}: decay_protected is {flag:?}"));
            }
            if a != b["fm"] {
                failures.push(format!("{name}: {stage}: {} became {a}", b["fm"]));
            }
            if after[name]["content"] != b["content"] {
                failures.push(format!("{name}: {stage}: body changed"));
            }
        }
    }
    if kb_ids != [1, 2, 3, 4, 5, 6] {
        failures.push(format!("after protect kb reads only {kb_ids:?}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
