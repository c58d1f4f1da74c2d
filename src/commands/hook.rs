//! `kb hook VERB --agent AGENT`: read the hook's payload, answer within the agent's time, never
//! fail it. Every path out of here exits 0; each problem is one line of `.co-cli/state/hooks.log`
//! and one on stderr.

use crate::kinds::HookVerb;
use crate::ops::hook::{self as op, Answer, Call};
use crate::paths::Layout;
use crate::settings::{Agent, Environment};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

/// The most payload read from stdin; more is treated as `{}`.
const MAX_PAYLOAD: usize = 1 << 20;
/// How long kb waits for the agent to close stdin.
const STDIN_WAIT: Duration = Duration::from_secs(2);

/// The time a verb may take before kb gives up, prints nothing and exits: well within the
/// limits kb's hook entries ask for (docs/hooks.md).
fn deadline(verb: HookVerb) -> Duration {
    match verb {
        HookVerb::SessionStart => Duration::from_secs(5),
        HookVerb::Prompt => Duration::from_secs(3),
        _ => Duration::from_secs(1),
    }
}

/// Runs `kb hook` with the words after it; `root` is `--root` if given.
pub fn run(root: Option<&Path>, words: &[String], now: chrono::DateTime<chrono::Utc>) -> ExitCode {
    let mut problems: Vec<String> = Vec::new();
    let (verb, agent) = parse_words(words, &mut problems);
    let (payload, payload_problem) = read_payload();
    problems.extend(payload_problem);
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    // `--root` and `KB_ROOT` win (a pinned root); else the folder the agent says it works in.
    let start = match (root, crate::settings::env("KB_ROOT")) {
        (None, None) => op::payload_cwd(&payload).map(|p| cwd.join(p)).unwrap_or(cwd),
        _ => cwd,
    };
    let (layout, found) = Layout::locate(root, &crate::settings::env, &start);
    let agent_name = agent.map_or_else(|| words_agent(words), |a| a.as_str().to_string());
    let verb_name = verb.map_or("?", HookVerb::as_str);
    let at = now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let report = |layout: Option<&Layout>, problems: &[String]| {
        for p in problems {
            eprintln!("kb hook: {p}");
            if let Some(l) = layout {
                op::log(l, &at, &agent_name, verb_name, p);
            }
        }
    };
    let cline = agent == Some(Agent::Cline);
    let quiet = |out: Option<&str>| {
        if let Some(text) = out.or(cline.then_some("{\"cancel\":false}")) {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{text}");
            let _ = stdout.flush();
        }
        ExitCode::SUCCESS
    };
    if !found || !layout.root.is_dir() {
        report(None, &problems);
        return quiet(None);
    }
    let (Some(verb), Some(agent)) = (verb, agent) else {
        report(Some(&layout), &problems);
        return quiet(None);
    };
    let repo = match crate::repo::Repo::open(layout.clone(), now, Environment::from_process()) {
        Ok(r) => r,
        Err(e) => {
            problems.push(format!("settings: {e}"));
            report(Some(&layout), &problems);
            return quiet(None);
        }
    };
    // The work runs on its own thread; past the deadline kb prints nothing and exits, which
    // ends that thread too.
    let (tx, rx) = mpsc::channel::<Answer>();
    std::thread::spawn(move || {
        let answer = op::run(&repo, &Call { verb, agent, payload: &payload });
        let _ = tx.send(answer);
    });
    let answer = match rx.recv_timeout(deadline(verb)) {
        Ok(a) => a,
        Err(_) => {
            problems.push(format!("gave up after {} ms; printed nothing", deadline(verb).as_millis()));
            report(Some(&layout), &problems);
            return quiet(None);
        }
    };
    problems.extend(answer.problems);
    report(Some(&layout), &problems);
    if answer.start_digest {
        spawn_digest(&layout.root);
    }
    if !answer.sync_shared.is_empty() {
        spawn_sync(&layout.root, &answer.sync_shared);
    }
    quiet(answer.output.as_deref())
}

/// Reads the verb and `--agent AGENT` (or `--agent=AGENT`) from the words; what it cannot read
/// becomes a problem.
fn parse_words(words: &[String], problems: &mut Vec<String>) -> (Option<HookVerb>, Option<Agent>) {
    let verb = match words.first() {
        Some(w) => HookVerb::parse(w).or_else(|| {
            problems.push(format!("unknown hook verb {w:?} (session-start, prompt, pre-compact, session-end, stop)"));
            None
        }),
        None => {
            problems.push("no hook verb given".into());
            None
        }
    };
    let raw = words_agent(words);
    let agent = match (raw.as_str(), crate::settings::Agent::parse(&raw)) {
        ("", _) => {
            problems.push("no --agent given".into());
            None
        }
        (_, Some(a)) if op::hooked(a) => Some(a),
        (name, _) => {
            problems.push(format!("unknown --agent {name:?} (claude, codex, copilot, cursor, gemini, cline)"));
            None
        }
    };
    (verb, agent)
}

/// Returns the word after `--agent` (or of `--agent=`), empty when there is none.
fn words_agent(words: &[String]) -> String {
    let mut it = words.iter();
    while let Some(w) = it.next() {
        if w == "--agent" {
            return it.next().cloned().unwrap_or_default();
        }
        if let Some(v) = w.strip_prefix("--agent=") {
            return v.to_string();
        }
    }
    String::new()
}

/// Reads the payload: at most [`MAX_PAYLOAD`] bytes of JSON from stdin, waiting at most
/// [`STDIN_WAIT`] for the agent to close it. Anything else is `{}` with a problem.
fn read_payload() -> (Value, Option<String>) {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return (Value::Object(Default::default()), None);
    }
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let read = std::io::stdin().lock().take(MAX_PAYLOAD as u64 + 1).read_to_end(&mut buf);
        let _ = tx.send(read.map(|_| buf));
    });
    let empty = || Value::Object(Default::default());
    match rx.recv_timeout(STDIN_WAIT) {
        Err(_) => {
            (empty(), Some(format!("stdin was not closed within {} s; payload treated as {{}}", STDIN_WAIT.as_secs())))
        }
        Ok(Err(e)) => (empty(), Some(format!("cannot read stdin: {e}; payload treated as {{}}"))),
        Ok(Ok(buf)) if buf.len() > MAX_PAYLOAD => {
            (empty(), Some("payload larger than 1 MiB; treated as {}".to_string()))
        }
        Ok(Ok(buf)) if buf.iter().all(u8::is_ascii_whitespace) => {
            (empty(), Some("empty payload; treated as {}".into()))
        }
        Ok(Ok(buf)) => match serde_json::from_slice::<Value>(&buf) {
            Ok(v @ Value::Object(_)) => (v, None),
            Ok(_) => (empty(), Some("payload is JSON but not an object; treated as {}".into())),
            Err(e) => (
                empty(),
                Some(format!("payload is not JSON (line {}, column {}); treated as {{}}", e.line(), e.column())),
            ),
        },
    }
}

/// Starts `kb inbox digest` for the root as a detached process (its own process group, no
/// terminal, nothing inherited), and does not wait for it.
fn spawn_digest(root: &Path) {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let Ok(exe) = std::env::current_exe() else { return };
    let _ = Command::new(exe)
        .args(["inbox", "digest", "--quiet", "--root"])
        .arg(root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
}

/// Starts `kb shared sync --quiet NAME...` for the root as a detached process, like
/// [`spawn_digest`], and does not wait for it: the copies that are missing or too old come up to
/// date while the agent works.
fn spawn_sync(root: &Path, names: &[String]) {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let Ok(exe) = std::env::current_exe() else { return };
    let _ = Command::new(exe)
        .arg("--root")
        .arg(root)
        .args(["shared", "sync", "--quiet", "--"])
        .args(names)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
}
