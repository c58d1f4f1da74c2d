//! Retrieval quality of `kb recall`, judged from the outside: the labelled questions of
//! `bench/recall/questions.jsonl` are asked of the kb binary, on a copy of the fixture repository
//! `bench/recall/repo/`, and the results are scored against the labels. What the fixture and the
//! questions are is in `bench/recall/README.md`.
//!
//! Modes (all by default, or the ones named as arguments):
//!
//! - `exact`: `kb recall --exact` (co-cli's rule: every word is a substring);
//! - `bm25`: the default command with `KB_RECALL_RANKING=bm25` (the plain BM25 baseline);
//! - `ranked`: the default command.
//!
//! Each question runs as `kb --root DIR --json recall -n 10 [MODE ARGS] -- WORDS...`, in a clean
//! environment (`PATH`, a temporary `HOME`, `KB_NOW` pinned after the fixture's dates, the mode's
//! variables). Every mode gets a fresh copy of the fixture, and the access log is deleted after
//! every question, so neither an earlier mode nor an earlier question changes a ranking through
//! heat.
//!
//! Metrics, per mode, over all questions and split by question kind and by the store of the
//! relevant items:
//!
//! - **R@5**: the fraction of questions with at least one relevant item in the top 5;
//! - **items@5**: the fraction of a question's relevant items in the top 5, averaged;
//! - **MRR@10**: the mean of 1/rank of the first relevant item in the top 10 (0 when none);
//! - **empty**: the fraction of questions with no result at all;
//! - the median wall time of one `kb recall` process.
//!
//! By store, a question counts only its relevant items of that store, and only questions with such
//! an item are counted. A result is identified by its `store` and `id`; one without them takes its
//! place in the ranking and matches nothing, and a store the binary does not search simply never
//! matches.
//!
//! A mode whose first question the binary refuses as a usage error (status 2, an older binary
//! without `--exact`) is reported as not available. The process exits with status 1 on a harness
//! error (no binary, an unreadable fixture, a kb run that fails or prints no JSON), never because
//! of the scores.
//!
//! `--paraphrase` asks the questions of `bench/recall/paraphrase.jsonl` instead: questions that
//! share no stem with their answer (a markdown memory or a Copilot record), which the harness
//! checks with kb's own tokens and stemmer before it asks anything (stop words aside): a question
//! that shares a stem with its answer is refused, and the run stops.
//!
//! Run: `cargo build --release --bin kb --example recall_quality &&
//! target/release/examples/recall_quality [--misses] [--paraphrase] [MODE...]`. `KB` names the binary (default:
//! `kb` next to the `examples/` folder of this program, else `target/release/kb`). `--misses`
//! also lists, per mode, the questions with no relevant item in the top 5 and what came first.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::Value;

/// `KB_NOW` of every run: after the newest item of the fixture.
const NOW: &str = "2026-12-01T00:00:00+00:00";
/// How many results each question asks for.
const DEPTH: usize = 10;
/// The cut-off of R@5 and items@5.
const TOP: usize = 5;

/// A mode: its name, the arguments it adds to `kb recall`, the variables it sets.
struct Mode {
    name: &'static str,
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
}

const MODES: [Mode; 3] = [
    Mode { name: "exact", args: &["--exact"], env: &[] },
    Mode { name: "bm25", args: &[], env: &[("KB_RECALL_RANKING", "bm25")] },
    Mode { name: "ranked", args: &[], env: &[] },
];

/// An item of the fixture: its store and its id as text (an integer id in decimal).
type Key = (String, String);

struct Question {
    q: String,
    kind: String,
    relevant: Vec<Key>,
}

/// What one question returned in one mode.
struct Answer {
    /// The results in order; `None` for a result without a usable store or id.
    ranked: Vec<Option<Key>>,
    ms: f64,
}

/// What a mode produced: its answers (in question order), or why it did not run.
struct Run {
    mode: &'static Mode,
    outcome: Result<Vec<Answer>, String>,
    /// Whether any result carried a `score`.
    scored: bool,
    /// The stores seen among the results.
    stores: BTreeMap<String, usize>,
}

type Fallible<T> = Result<T, String>;

fn main() {
    if let Err(e) = run() {
        eprintln!("recall_quality: {e}");
        std::process::exit(1);
    }
}

fn run() -> Fallible<()> {
    let mut misses = false;
    let mut paraphrase = false;
    let mut chosen = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--misses" => misses = true,
            "--paraphrase" => paraphrase = true,
            "-h" | "--help" => {
                println!(
                    "usage: recall_quality [--misses] [--paraphrase] [exact|bm25|ranked...]   (KB: the kb binary)"
                );
                return Ok(());
            }
            name => match MODES.iter().find(|m| m.name == name) {
                Some(mode) => chosen.push(mode),
                None => return Err(format!("unknown mode {name:?}: exact, bm25 or ranked")),
            },
        }
    }
    if chosen.is_empty() {
        chosen = MODES.iter().collect();
    }

    let package = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let fixture = package.join("bench/recall/repo");
    let set = if paraphrase { "bench/recall/paraphrase.jsonl" } else { "bench/recall/questions.jsonl" };
    let questions = read_questions(&package.join(set))?;
    if paraphrase {
        refuse_shared_stems(&fixture, &questions)?;
    }
    let kb = binary(&package)?;
    let counts = fixture_counts(&fixture)?;

    let tmp = TempDir::new()?;
    let home = tmp.path.join("home");
    std::fs::create_dir_all(&home).map_err(|e| format!("create {}: {e}", home.display()))?;

    let mut runs = Vec::new();
    for mode in chosen {
        eprintln!("recall_quality: {} questions, mode {}", questions.len(), mode.name);
        let repo = tmp.path.join(mode.name).join("repo");
        copy_tree(&fixture, &repo)?;
        runs.push(run_mode(&kb, &repo, &home, mode, &questions)?);
    }

    print!("{}", report(&kb, &counts, set, &questions, &runs, misses));
    Ok(())
}

/// The stems of the content words of `text` (kb's tokens, stop words left out).
fn content_stems(text: &str, stems: &mut kb::recall_tokens::Stems) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    kb::recall_tokens::each_token(text, |t| {
        if !kb::recall_tokens::is_stop_word(t) {
            out.insert(stems.stem(t).to_string());
        }
    });
    out
}

/// The text kb ranks of each markdown memory (body and tags) and Copilot record (every string
/// of it), by (store, id).
fn answer_texts(fixture: &Path) -> Fallible<BTreeMap<Key, String>> {
    let mut out = BTreeMap::new();
    let dir = fixture.join(".co-cli/knowledge/memories");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("read {}: {e}", dir.display()))?;
    for entry in entries.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "md")) {
        let path = entry.path();
        let text = std::fs::read_to_string(&path).map_err(|e| format!("read {}: {e}", path.display()))?;
        let (front, body) = text
            .strip_prefix("---\n")
            .and_then(|t| t.split_once("\n---\n"))
            .ok_or(format!("{}: no frontmatter", path.display()))?;
        let id = front
            .lines()
            .find_map(|l| l.strip_prefix("id: "))
            .ok_or(format!("{}: no id", path.display()))?
            .trim()
            .to_string();
        let mut tags = String::new();
        let mut in_tags = false;
        for line in front.lines() {
            if line.starts_with("tags:") {
                in_tags = true;
            } else if let Some(tag) = line.strip_prefix("- ").filter(|_| in_tags) {
                tags.push_str(tag);
                tags.push(' ');
            } else {
                in_tags = false;
            }
        }
        out.insert(("md".to_string(), id), format!("{body}\n{tags}"));
    }
    let records = fixture.join(".github/copilot-memories.jsonl");
    let records = std::fs::read_to_string(&records).map_err(|e| format!("read {}: {e}", records.display()))?;
    for line in records.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).map_err(|e| format!("a Copilot record: {e}"))?;
        let Some(id) = v.get("id").and_then(Value::as_str) else { continue };
        out.insert(("copilot".to_string(), id.to_string()), v.to_string());
    }
    Ok(out)
}

/// Refuses the set when a question shares a stem with one of its answers, or names an answer
/// the fixture does not hold (only markdown memories and Copilot records can be checked).
fn refuse_shared_stems(fixture: &Path, questions: &[Question]) -> Fallible<()> {
    let texts = answer_texts(fixture)?;
    let mut stems = kb::recall_tokens::Stems::default();
    let mut refused = Vec::new();
    for q in questions {
        let asked = content_stems(&q.q, &mut stems);
        for key in &q.relevant {
            let Some(text) = texts.get(key) else {
                refused.push(format!("{:?}: no {} item {} to check against", q.q, key.0, key.1));
                continue;
            };
            let shared: Vec<String> = content_stems(text, &mut stems).intersection(&asked).cloned().collect();
            if !shared.is_empty() {
                refused.push(format!("{:?} shares {} with {} {}", q.q, shared.join(", "), key.0, key.1));
            }
        }
    }
    match refused.is_empty() {
        true => Ok(()),
        false => Err(format!("paraphrase questions refused:\n  {}", refused.join("\n  "))),
    }
}

/// Reads the labelled questions.
fn read_questions(path: &Path) -> Fallible<Vec<Question>> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let mut questions = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let where_ = format!("{}:{}", path.display(), i + 1);
        let v: Value = serde_json::from_str(line).map_err(|e| format!("{where_}: {e}"))?;
        let field = |name: &str| v.get(name).and_then(Value::as_str).map(str::to_string);
        let q = field("q").ok_or(format!("{where_}: no string \"q\""))?;
        let kind = field("kind").ok_or(format!("{where_}: no string \"kind\""))?;
        let relevant: Vec<Key> = v
            .get("relevant")
            .and_then(Value::as_array)
            .ok_or(format!("{where_}: no list \"relevant\""))?
            .iter()
            .map(|item| key_of(item).ok_or(format!("{where_}: a relevant item needs a store and an id")))
            .collect::<Fallible<_>>()?;
        if relevant.is_empty() {
            return Err(format!("{where_}: no relevant item"));
        }
        questions.push(Question { q, kind, relevant });
    }
    if questions.is_empty() {
        return Err(format!("{}: no questions", path.display()));
    }
    Ok(questions)
}

/// The store and id of a question's label or of a result: `None` when either is missing or of
/// another type.
fn key_of(item: &Value) -> Option<Key> {
    let store = item.get("store")?.as_str()?.to_string();
    let id = match item.get("id")? {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    Some((store, id))
}

/// The kb binary: `KB`, else `kb` beside this program's folder (`target/release/kb` for
/// `target/release/examples/recall_quality`, whatever the target folder), else
/// `target/release/kb` of the package.
fn binary(package: &Path) -> Fallible<PathBuf> {
    let candidate = match std::env::var_os("KB") {
        Some(kb) => PathBuf::from(kb),
        None => std::env::current_exe()
            .ok()
            .and_then(|me| Some(me.parent()?.parent()?.join("kb")))
            .filter(|p| p.is_file())
            .unwrap_or_else(|| package.join("target/release/kb")),
    };
    std::fs::canonicalize(&candidate)
        .map_err(|_| format!("no kb binary at {}: cargo build --release --bin kb, or set KB", candidate.display()))
}

/// How many items of each kind the fixture holds (for the report's header).
fn fixture_counts(fixture: &Path) -> Fallible<BTreeMap<&'static str, usize>> {
    let files = |dir: &str| -> Fallible<usize> {
        let dir = fixture.join(dir);
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("read {}: {e}", dir.display()))?;
        Ok(entries.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "md")).count())
    };
    let records = fixture.join(".github/copilot-memories.jsonl");
    let records = std::fs::read_to_string(&records)
        .map_err(|e| format!("read {}: {e}", records.display()))?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    let open = usize::from(fixture.join(".co-cli/knowledge/session.md").is_file());
    Ok(BTreeMap::from([
        ("md", files(".co-cli/knowledge/memories")?),
        ("copilot", records),
        ("decision", files(".co-cli/knowledge/decisions")?),
        ("session", files(".co-cli/knowledge/sessions")? + open),
    ]))
}

/// Copies the fixture, leaving out kb's derived and local state should someone have run kb in it.
fn copy_tree(from: &Path, to: &Path) -> Fallible<()> {
    std::fs::create_dir_all(to).map_err(|e| format!("create {}: {e}", to.display()))?;
    let entries = std::fs::read_dir(from).map_err(|e| format!("read {}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("read {}: {e}", from.display()))?;
        let (path, target) = (entry.path(), to.join(entry.file_name()));
        let local = path.ends_with(".co-cli/cache") || path.ends_with(".co-cli/state");
        if path.is_dir() {
            if !local {
                copy_tree(&path, &target)?;
            }
        } else {
            std::fs::copy(&path, &target).map_err(|e| format!("copy {}: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// Asks every question in one mode.
fn run_mode(kb: &Path, repo: &Path, home: &Path, mode: &'static Mode, questions: &[Question]) -> Fallible<Run> {
    let mut run = Run { mode, outcome: Ok(Vec::new()), scored: false, stores: BTreeMap::new() };
    let mut answers = Vec::with_capacity(questions.len());
    let access_log = repo.join(".co-cli/state/access.jsonl");
    for (i, question) in questions.iter().enumerate() {
        let depth = DEPTH.to_string();
        let mut cmd = Command::new(kb);
        cmd.arg("--root").arg(repo).args(["--json", "recall", "-n", &depth]).args(mode.args).arg("--");
        cmd.args(question.q.split_whitespace());
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("KB_NOW", NOW)
            .envs(mode.env.iter().copied())
            .current_dir(repo)
            .stdin(Stdio::null());
        let start = Instant::now();
        let out = cmd.output().map_err(|e| format!("run {}: {e}", kb.display()))?;
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if i == 0 && out.status.code() == Some(2) {
            // A usage error on the first question: this binary does not have the mode.
            let why = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("usage error").trim();
            run.outcome = Err(format!("not available in this binary ({why})"));
            return Ok(run);
        }
        if !out.status.success() {
            return Err(format!("mode {}: `{}` failed ({}): {}", mode.name, question.q, out.status, stderr.trim()));
        }
        let json: Value = serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("mode {}: `{}`: the output is not JSON: {e}", mode.name, question.q))?;
        let results = json.get("results").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let mut ranked = Vec::with_capacity(results.len());
        for item in results.iter().take(DEPTH) {
            run.scored |= item.get("score").is_some_and(Value::is_number);
            let key = key_of(item);
            if let Some((store, _)) = &key {
                *run.stores.entry(store.clone()).or_default() += 1;
            }
            ranked.push(key);
        }
        answers.push(Answer { ranked, ms });
        // Heat from this question must not rank the next one.
        match std::fs::remove_file(&access_log) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("remove {}: {e}", access_log.display())),
        }
    }
    run.outcome = Ok(answers);
    Ok(run)
}

/// The scores of a set of (question, relevant items) pairs.
#[derive(Default)]
struct Scores {
    n: usize,
    hit5: f64,
    items5: f64,
    rr10: f64,
    empty: usize,
}

impl Scores {
    fn add(&mut self, relevant: &[&Key], answer: &Answer) {
        let rank = |key: &Key| answer.ranked.iter().position(|r| r.as_ref() == Some(key));
        let ranks: Vec<Option<usize>> = relevant.iter().map(|k| rank(k)).collect();
        let in_top = ranks.iter().filter(|r| r.is_some_and(|r| r < TOP)).count();
        self.n += 1;
        self.hit5 += f64::from(u8::from(in_top > 0));
        self.items5 += in_top as f64 / relevant.len() as f64;
        self.rr10 += ranks.iter().flatten().min().map_or(0.0, |&r| 1.0 / (r + 1) as f64);
        self.empty += usize::from(answer.ranked.is_empty());
    }

    fn mean(&self, sum: f64) -> String {
        if self.n == 0 { "-".into() } else { format!("{:.3}", sum / self.n as f64) }
    }
}

/// Scores of the questions that `keep` selects, with the relevant items `items` keeps of each.
fn score(
    questions: &[Question],
    answers: &[Answer],
    keep: impl Fn(&Question) -> bool,
    items: impl Fn(&Key) -> bool,
) -> Scores {
    let mut scores = Scores::default();
    for (q, a) in questions.iter().zip(answers) {
        let relevant: Vec<&Key> = q.relevant.iter().filter(|k| items(k)).collect();
        if keep(q) && !relevant.is_empty() {
            scores.add(&relevant, a);
        }
    }
    scores
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 { v[mid] } else { (v[mid - 1] + v[mid]) / 2.0 }
}

/// The markdown report.
fn report(
    kb: &Path,
    counts: &BTreeMap<&str, usize>,
    set: &str,
    questions: &[Question],
    runs: &[Run],
    misses: bool,
) -> String {
    let mut out = String::new();
    let sizes: Vec<String> = counts.iter().map(|(store, n)| format!("{n} {store}")).collect();
    let _ = writeln!(out, "# kb recall quality\n");
    let _ = writeln!(out, "- binary: `{}`", kb.display());
    let _ = writeln!(out, "- fixture: bench/recall/repo ({})", sizes.join(", "));
    let _ = writeln!(out, "- questions: {} ({set}), `-n {DEPTH}`, KB_NOW={NOW}\n", questions.len());

    let _ = writeln!(out, "| mode | R@5 | items@5 | MRR@10 | empty | median ms | notes |");
    let _ = writeln!(out, "| --- | ---: | ---: | ---: | ---: | ---: | --- |");
    for run in runs {
        match &run.outcome {
            Err(why) => {
                let _ = writeln!(out, "| {} | - | - | - | - | - | {why} |", run.mode.name);
            }
            Ok(answers) => {
                let s = score(questions, answers, |_| true, |_| true);
                let ms = median(answers.iter().map(|a| a.ms).collect());
                let mut notes = Vec::new();
                if !run.scored {
                    notes.push("results carry no score".to_string());
                }
                let stores: Vec<String> = run.stores.iter().map(|(s, n)| format!("{s} {n}")).collect();
                notes.push(format!(
                    "stores returned: {}",
                    if stores.is_empty() { "none".into() } else { stores.join(", ") }
                ));
                let empty = format!("{:.3}", s.empty as f64 / s.n as f64);
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {empty} | {ms:.1} | {} |",
                    run.mode.name,
                    s.mean(s.hit5),
                    s.mean(s.items5),
                    s.mean(s.rr10),
                    notes.join("; ")
                );
            }
        }
    }

    let done: Vec<(&Run, &Vec<Answer>)> = runs.iter().filter_map(|r| r.outcome.as_ref().ok().map(|a| (r, a))).collect();
    if done.is_empty() {
        return out;
    }
    let header = |first: &str| {
        let mut h = format!("| {first} | questions |");
        let mut rule = "| --- | ---: |".to_string();
        for (run, _) in &done {
            let _ = write!(h, " {0} R@5 | {0} items@5 | {0} MRR@10 |", run.mode.name);
            rule.push_str(" ---: | ---: | ---: |");
        }
        format!("{h}\n{rule}\n")
    };
    let row = |label: &str, per_mode: Vec<Scores>| {
        let mut line = format!("| {label} | {} |", per_mode.first().map_or(0, |s| s.n));
        for s in &per_mode {
            let _ = write!(line, " {} | {} | {} |", s.mean(s.hit5), s.mean(s.items5), s.mean(s.rr10));
        }
        line + "\n"
    };

    let mut kinds: Vec<&str> = questions.iter().map(|q| q.kind.as_str()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let _ = writeln!(out, "\n## By kind of question\n");
    out.push_str(&header("kind"));
    for kind in kinds {
        let per_mode = done.iter().map(|(_, a)| score(questions, a, |q| q.kind == kind, |_| true)).collect();
        out.push_str(&row(kind, per_mode));
    }

    let _ = writeln!(out, "\n## By store of the relevant item\n");
    let _ = writeln!(out, "A question counts here with its relevant items of that store only.\n");
    out.push_str(&header("store"));
    for store in ["md", "copilot", "decision", "session"] {
        let per_mode = done.iter().map(|(_, a)| score(questions, a, |_| true, |k| k.0 == store)).collect();
        out.push_str(&row(store, per_mode));
    }

    if misses {
        for (run, answers) in &done {
            let _ = writeln!(out, "\n## Misses of {} (no relevant item in the top {TOP})\n", run.mode.name);
            for (q, a) in questions.iter().zip(answers.iter()) {
                let found = a.ranked.iter().take(TOP).flatten().any(|k| q.relevant.contains(k));
                if !found {
                    let first: Vec<String> = a
                        .ranked
                        .iter()
                        .take(3)
                        .map(|k| k.as_ref().map_or("?".into(), |(s, id)| format!("{s}:{id}")))
                        .collect();
                    let wanted: Vec<String> = q.relevant.iter().map(|(s, id)| format!("{s}:{id}")).collect();
                    let _ = writeln!(
                        out,
                        "- [{}] `{}`: wanted {}; got {}",
                        q.kind,
                        q.q,
                        wanted.join(" "),
                        if first.is_empty() { "nothing".into() } else { first.join(" ") }
                    );
                }
            }
        }
    }
    out
}

/// A temporary folder, removed on drop (std only).
struct TempDir {
    path: PathBuf,
}

impl TempDir {
    fn new() -> Fallible<TempDir> {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let path = std::env::temp_dir().join(format!("kb-recall-quality-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).map_err(|e| format!("create {}: {e}", path.display()))?;
        Ok(TempDir { path })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
