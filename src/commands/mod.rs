//! The command line: parse the arguments, run one operation from `ops`, print its report. This
//! module builds the context, dispatches, prints reports (`emit`) and errors (`main`: the one
//! error printer), and maps the outcome to kb's exit codes (docs/behaviour.md, Output and exit
//! status). Commands with work of their own at the command line live in their own files (`save`
//! reads stdin, `watch` loops, `mcp` serves); no command file imports another.

mod decision;
mod edit;
mod hook;
mod mcp;
mod save;
mod session;
mod shared;
mod watch;

use crate::cli::{self, Cli, Command, ConfigAction, ListArgs, Store};
use crate::error::{self, KbError};
use crate::kinds::{Narrow, Sources};
use crate::ops::{self, Knowledge, Report, View};
use crate::output::{self, Style};
use crate::paths::{Layout, NO_ROOT};
use crate::repo::Repo;
use crate::settings::Environment;
use anyhow::{Context as _, Result};
use chrono::{DateTime, Utc};
use clap::Parser;
use std::process::ExitCode;

/// Everything a command needs, resolved once.
pub struct Ctx {
    pub layout: Layout,
    pub json: bool,
    pub style: Style,
    /// The clock: now, or `KB_NOW` (RFC 3339) when tests pin it.
    pub now: DateTime<Utc>,
    /// Whether the root was given or found (else it is the working directory); `kb mcp` refuses
    /// writes without one.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub found: bool,
    /// The process environment kb reads besides its settings, read once at start.
    pub env: Environment,
    /// The repository a read command opened first (for the shared sources' warnings), reused by
    /// the command so its settings are read once. Write commands open theirs afresh.
    pub opened: std::cell::OnceCell<Repo>,
}

/// Returns whether a command writes knowledge files (and so needs a real root). `kb init` is the
/// one that may create `.co-cli/` where there is none; a dry run writes nothing.
fn writes(command: &Command) -> bool {
    match command {
        Command::Save(a) => !a.dry_run,
        Command::Decision(a) => decision::writes(a),
        Command::Export(a) => !a.dry_run,
        Command::Import(a) => !a.dry_run,
        Command::Forget(_)
        | Command::Update(_)
        | Command::Edit(_)
        | Command::Protect(_)
        | Command::Unprotect(_)
        | Command::Vote(_)
        | Command::Compile(crate::cli::CompileArgs { check: false })
        | Command::Promote(_)
        | Command::Watch(_) => true,
        Command::Consolidate(a) => !a.dry_run,
        Command::Undo(a) => !a.list,
        Command::Session(a) => {
            !matches!(a.action, crate::cli::SessionAction::Show | crate::cli::SessionAction::Log { .. })
        }
        Command::Check(a) => a.fix,
        Command::Board(a) => a.action.is_some(),
        Command::Inbox(a) => {
            matches!(
                a.action,
                Some(
                    crate::cli::InboxAction::Accept { .. }
                        | crate::cli::InboxAction::Reject { .. }
                        | crate::cli::InboxAction::Digest { .. }
                )
            )
        }
        Command::Hooks(a) => matches!(
            a.action,
            Some(crate::cli::HooksAction::Install { check: false, .. } | crate::cli::HooksAction::Remove { .. })
        ),
        // The global settings file is the user's, not the repository's.
        Command::Config(a) => matches!(
            a.action,
            Some(ConfigAction::Set { global: false, .. } | ConfigAction::Unset { global: false, .. })
        ),
        Command::Shared(a) => {
            matches!(a.action, Some(crate::cli::SharedAction::Add { .. } | crate::cli::SharedAction::Remove { .. }))
        }
        _ => false,
    }
}

impl Ctx {
    /// Opens the repository with its settings; an invalid value is an error naming where it came
    /// from.
    pub fn repo(&self) -> Result<Repo> {
        if let Some(repo) = self.opened.get() {
            return Ok(repo.clone());
        }
        Ok(Repo::open(self.layout.clone(), self.now, self.env.clone())?)
    }

    /// Returns how reports are rendered on this terminal.
    pub fn view(&self) -> View {
        View { style: self.style, root: self.layout.root.clone(), agent: false }
    }

    /// Prints a report: its diagnostics and failed parts on stderr, then its JSON or text on
    /// stdout. Returns the exit status it calls for.
    pub fn emit(&self, report: &impl Report) -> Result<ExitCode> {
        let view = self.view();
        for d in report.diagnostics() {
            self.style.diagnostic(d, |p| view.rel(p).into_owned());
        }
        for e in report.errors() {
            self.style.error(&e);
        }
        if self.json {
            output::print_json(report)?;
        } else {
            output::stream(|w| report.render(&view, w))?;
        }
        Ok(if report.succeeded() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
    }
}

/// Runs kb and returns its exit status: 0 success, 1 error, 2 usage (from clap).
pub fn main() -> ExitCode {
    crate::heap::keep_large_allocations_apart();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // A hook must never fail its agent, not even on words kb cannot parse.
        Err(_) if hook_asked() => return ExitCode::SUCCESS,
        Err(e) => {
            let _ = e.print();
            if !e.use_stderr() {
                return ExitCode::SUCCESS;
            }
            if json_asked() {
                output::print_json_error(&usage_message(&e), "usage");
            }
            return ExitCode::from(2);
        }
    };
    let json = cli.json;
    let style = Style::detect(crate::settings::env("NO_COLOR").is_some());
    match run(cli, style) {
        Ok(code) => code,
        Err(e) => {
            // A read that failed still names the files it skipped on the way.
            if let Some(shown) = e.downcast_ref::<ops::read::Shown>() {
                for d in &shown.diagnostics {
                    style.diagnostic(d, |p| p.display().to_string());
                }
            }
            let message = error::message(&e);
            style.error(&message);
            if json {
                output::print_json_error(&message, error::kind_of(&e));
            }
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli, style: Style) -> Result<ExitCode> {
    if let Command::Hook(a) = &cli.command {
        // Inside an agent's loop: its own root finding, and never an error.
        let now = crate::settings::env("KB_NOW")
            .and_then(|v| crate::format::time::parse(&v).ok())
            .map_or_else(crate::format::time::now, |t| t.with_timezone(&Utc));
        return Ok(hook::run(cli.root.as_deref(), &a.words, now));
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let (layout, found) = Layout::locate(cli.root.as_deref(), &crate::settings::env, &cwd);
    if (cli.root.is_some() || crate::settings::env("KB_ROOT").is_some()) && !layout.root.is_dir() {
        let from = if cli.root.is_some() { "--root" } else { "KB_ROOT" };
        return Err(KbError::rejected("--root", format!("{from} {}: no such folder", layout.root.display())).into());
    }
    let now = match crate::settings::env("KB_NOW") {
        Some(v) => {
            crate::format::time::parse(&v).map_err(|e| anyhow::anyhow!("invalid KB_NOW: {e}"))?.with_timezone(&Utc)
        }
        None => crate::format::time::now(),
    };
    if !found {
        // Outside any repository: reading the working directory is harmless, creating `.co-cli/`
        // in a random folder is not.
        if writes(&cli.command) {
            anyhow::bail!("{NO_ROOT}; run `kb init` or pass --root");
        }
        if !matches!(cli.command, Command::Init(_) | Command::Completions(_) | Command::Manpage(_)) {
            style.warn(&format!("{NO_ROOT}; reading {}", layout.root.display()));
        }
    }
    let ctx =
        Ctx { layout, json: cli.json, style, now, found, env: Environment::from_process(), opened: Default::default() };
    dispatch(&ctx, cli.command)
}

/// Returns whether the command line is `kb [FLAGS] hook ...`.
fn hook_asked() -> bool {
    std::env::args().skip(1).find(|a| !a.starts_with('-')).is_some_and(|a| a == "hook")
}

/// Returns whether the command line asks for `--json` (before any `--`), for a line clap
/// refused: its error is then JSON too.
fn json_asked() -> bool {
    std::env::args_os().skip(1).take_while(|a| a != "--").any(|a| a == "--json")
}

/// Returns clap's error as one line: its first, without the `error: ` label.
fn usage_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).trim().to_string()
}

/// Writes kb's one manual page: clap_mangen's sections, but the commands listed by name and
/// purpose (its own list refers to a page per command, `kb-init(1)`..., which only
/// `kb manpage --dir` writes).
fn manpage(mut cli: clap::Command, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    cli.build();
    let man = clap_mangen::Man::new(cli.clone());
    man.render_title(w)?;
    man.render_name_section(w)?;
    man.render_synopsis_section(w)?;
    man.render_description_section(w)?;
    man.render_options_section(w)?;
    writeln!(w, ".SH COMMANDS")?;
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        writeln!(w, ".TP\n\\fBkb {}\\fR\n{}", roff_text(sub.get_name()), roff_text(&about))?;
    }
    writeln!(
        w,
        ".PP\nEach command's options: \\fBkb COMMAND \\-\\-help\\fR, or a page per command with \\fBkb manpage \\-\\-dir DIR\\fR."
    )?;
    man.render_version_section(w)
}

/// Escapes text for a roff line: backslashes and hyphens, and a leading `.` or `'`.
fn roff_text(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) { format!("\\&{escaped}") } else { escaped }
}

/// Reads all of stdin as UTF-8 text (the `-` argument of save, decision, session and board).
fn read_stdin() -> Result<String> {
    let mut buf = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf).context("cannot read stdin")?;
    String::from_utf8(buf)
        .map_err(|e| anyhow::anyhow!("stdin is not valid UTF-8 (at byte {})", e.utf8_error().valid_up_to()))
}

/// Prints a usage error of subcommand `sub` as clap prints its own (`kind`: a bad value, flags
/// that do not go together...) and returns exit status 2.
fn usage_error(ctx: &Ctx, sub: &str, kind: clap::error::ErrorKind, msg: &str) -> ExitCode {
    let mut root = <Cli as clap::CommandFactory>::command();
    root.build();
    let err = match root.find_subcommand_mut(sub) {
        Some(sub) => sub.error(kind, msg),
        None => root.error(kind, msg),
    };
    let _ = err.print();
    if ctx.json {
        output::print_json_error(&usage_message(&err), "usage");
    }
    ExitCode::from(2)
}

/// Returns the `--for` paths of subcommand `sub` relative to the root; one outside it is a usage
/// error (exit 2).
fn for_paths(ctx: &Ctx, sub: &str, paths: &[std::path::PathBuf]) -> std::result::Result<Vec<String>, ExitCode> {
    ops::instructions::for_paths(&ctx.layout, paths).map_err(|msg| {
        let msg = format!("--for {msg}: give a path inside the repository");
        usage_error(ctx, sub, clap::error::ErrorKind::ValueValidation, &msg)
    })
}

/// `kb recall`: a `--store` naming a shared source that the settings do not have, or shared
/// sources with `--exact` (which reads this repository only), is a usage error.
fn recall(ctx: &Ctx, a: cli::RecallArgs) -> Result<ExitCode> {
    let repo = ctx.repo()?;
    let (sources, origins) = Narrow::split(&a.store);
    if let Some(why) = ops::recall::unknown_source(&repo, &origins) {
        let msg = format!("--store {why}");
        return Ok(usage_error(ctx, "recall", clap::error::ErrorKind::InvalidValue, &msg));
    }
    if a.exact && !origins.project() {
        let msg = "--exact reads this repository only: it cannot take --store shared or a shared source";
        return Ok(usage_error(ctx, "recall", clap::error::ErrorKind::ArgumentConflict, msg));
    }
    let req = ops::recall::Request {
        query: a.query.join(" "),
        max_results: usize::try_from(a.max_results).unwrap_or(usize::MAX),
        exact: a.exact,
        sources,
        origins,
        heat: true,
    };
    // The memory index cache a first run writes is written while the recall index is (or here).
    let knowledge = Knowledge::deferring(&repo);
    let report = ops::recall::recall(&knowledge, &req)?;
    knowledge.write_pending_cache();
    if a.verify {
        return ctx.emit(&ops::audit::verified(&repo.layout.root, &report)?);
    }
    ctx.emit(&report)
}

/// `kb list`: a `--type`, `--importance` or `--agent` filter narrows the list to the markdown
/// store (Copilot records have none of them); with `--store copilot` it is a usage error.
fn list(ctx: &Ctx, a: ListArgs) -> Result<ExitCode> {
    let filtered = a.memory_type.is_some() || a.importance.is_some() || a.agent.is_some();
    let scope = match (Sources::memory(a.store), filtered) {
        (s, true) if !s.has(Store::Md) => {
            let msg = "--type, --importance and --agent filter the markdown memories; Copilot records have none";
            return Ok(usage_error(ctx, "list", clap::error::ErrorKind::ArgumentConflict, msg));
        }
        (_, true) => Sources::only(Store::Md),
        (any, false) => any,
    };
    let filter = ops::read::ListFilter::new(a.memory_type, a.importance, a.agent)?.by(a.by);
    let repo = ctx.repo()?;
    let k = Knowledge::deferring(&repo);
    let report = ops::read::list(&k, scope, &filter, None)?;
    // The memory index cache a first run writes (28 MB at 100,000 memories) is written on a
    // thread of its own while the list prints.
    std::thread::scope(|s| {
        s.spawn(|| k.write_pending_cache());
        ctx.emit(&report)
    })
}

/// Prints, once, the warnings about the shared sources' copies (too old, missing) for the
/// commands that read them: `stat` calls only, no git (docs/shared.md). Settings that do not load
/// are left to the command to report.
fn warn_shared(ctx: &Ctx, command: &Command) {
    let reads = matches!(
        command,
        Command::Recall(_)
            | Command::List(_)
            | Command::Show(_)
            | Command::Context(_)
            | Command::Compile(_)
            | Command::Check(_)
            | Command::Agents
    );
    if let (true, Ok(repo)) = (reads, ctx.repo()) {
        for w in ops::shared::warnings(&repo) {
            ctx.style.warn(&w);
        }
        let _ = ctx.opened.set(repo);
    }
}

/// Runs one command.
fn dispatch(ctx: &Ctx, command: Command) -> Result<ExitCode> {
    warn_shared(ctx, &command);
    match command {
        Command::Init(a) => ctx.emit(&ops::init::init(
            &ctx.layout,
            ctx.now,
            &ctx.env,
            a.agents_md,
            a.agents.as_ref().map(|l| l.0.as_slice()),
        )?),
        Command::Save(a) => save::run(ctx, a),
        Command::Recall(a) => recall(ctx, a),
        Command::Audit(a) => {
            let req = ops::audit::Request { ids: a.ids, stores: a.store };
            ctx.emit(&ops::audit::audit(&Knowledge::read(&ctx.repo()?), &req)?)
        }
        Command::List(a) => list(ctx, a),
        Command::Show(a) => {
            ctx.emit(&ops::read::show(&Knowledge::read(&ctx.repo()?), &a.id, Sources::memory(a.store))?)
        }
        Command::Update(a) => {
            let text = save::read_text(&a.text)?;
            ctx.emit(&ops::update::update(&ctx.repo()?, &a.id, &text, a.redact)?)
        }
        Command::Edit(a) => edit::run(ctx, &a.id),
        Command::Forget(a) => ctx.emit(&ops::forget::forget(&ctx.repo()?, &a.id, Sources::memory(a.store))?),
        Command::Protect(a) => ctx.emit(&ops::protect::protect(&ctx.repo()?, &a.id, true)?),
        Command::Unprotect(a) => ctx.emit(&ops::protect::protect(&ctx.repo()?, &a.id, false)?),
        Command::Check(a) if a.fix => ctx.emit(&ops::check::check_and_fix(&ctx.layout, ctx.now, &ctx.env)?),
        Command::Check(_) => ctx.emit(&ops::check::check(&ctx.layout, ctx.now, &ctx.env)?),
        Command::Config(a) => match a.action {
            None => ctx.emit(&ops::config::config(&ctx.layout)),
            Some(ConfigAction::Set { key, value, global }) => {
                ctx.emit(&ops::config::set(&ctx.layout, &key, &value, global)?)
            }
            Some(ConfigAction::Unset { key, global }) => ctx.emit(&ops::config::unset(&ctx.layout, &key, global)?),
        },
        Command::Vote(a) => ctx.emit(&ops::vote::vote(&ctx.repo()?, &a.id, a.direction, &a.reason)?),
        Command::Export(a) => {
            // `--to` takes only the stores of `Store::EXPORT`: the Copilot records.
            debug_assert_eq!(a.to, crate::kinds::Store::Copilot);
            ctx.emit(&ops::convert::export_to_copilot(&ctx.repo()?, a.dry_run)?)
        }
        Command::Import(a) => {
            use crate::cli::ImportSource;
            use ops::learned::Tool;
            let tool = match a.from {
                ImportSource::Copilot if a.path.is_some() || a.personal || a.redact => {
                    let flag = if a.path.is_some() {
                        "--path"
                    } else if a.personal {
                        "--personal"
                    } else {
                        "--redact"
                    };
                    let msg = format!("{flag} goes with --from claude, codex or gemini");
                    return Ok(usage_error(ctx, "import", clap::error::ErrorKind::ArgumentConflict, &msg));
                }
                ImportSource::Copilot => return ctx.emit(&ops::convert::import_from_copilot(&ctx.repo()?, a.dry_run)?),
                ImportSource::Claude => Tool::Claude,
                ImportSource::Codex => Tool::Codex,
                ImportSource::Gemini => Tool::Gemini,
            };
            let req = ops::learned::Request {
                tool,
                path: a.path,
                dry_run: a.dry_run,
                personal: a.personal,
                redact: a.redact,
            };
            ctx.emit(&ops::learned::import(&ctx.repo()?, &req)?)
        }
        Command::Context(a) => {
            let for_paths = match for_paths(ctx, "context", &a.for_paths) {
                Ok(p) => p,
                Err(code) => return Ok(code),
            };
            let req = crate::settings::BlockRequest {
                agent: a.agent,
                for_paths,
                decisions_only: a.decisions_only,
                board: a.board,
                hot: !a.no_hot,
                global: true,
                session: true,
                max_tokens: a.max_tokens,
                wrap: a.wrap,
                count_tokens: ctx.json,
            };
            let req = ops::context::check(req, &ctx.layout.root, ops::context::Outside::Refuse)?;
            ctx.emit(&ops::context::context(&Knowledge::read(&ctx.repo()?), &req))
        }
        Command::Compile(a) if a.check => ctx.emit(&ops::compile::check(&ctx.repo()?)?),
        Command::Compile(_) => ctx.emit(&ops::compile::compile(&ctx.repo()?)?),
        Command::Agents => ctx.emit(&ops::agents::agents(&ctx.repo()?)),
        Command::Watch(a) => watch::run(ctx, a),
        Command::Instructions(a) => match for_paths(ctx, "instructions", &a.for_paths) {
            Ok(paths) => ctx.emit(&ops::instructions::instructions(&ctx.layout, &paths)),
            Err(code) => Ok(code),
        },
        Command::Session(a) => session::run(ctx, a),
        Command::Decision(a) => decision::run(ctx, a),
        Command::Board(a) => {
            use crate::cli::BoardAction;
            let repo = ctx.repo()?;
            let branch = ops::board::branch(&repo, a.branch.as_deref())?;
            match a.action {
                None => ctx.emit(&ops::board::list(&repo, &branch)),
                Some(BoardAction::Get { name, src: s }) => ctx.emit(&ops::board::get(&repo, &branch, &name, s)?),
                Some(BoardAction::Add { name, description, content, redact }) => {
                    let content = if content == "-" { read_stdin()? } else { content };
                    let description = description.unwrap_or_else(|| ops::board::first_line(&content));
                    let user = crate::kinds::Src::User;
                    ctx.emit(&ops::board::add(&repo, &branch, user, &name, &description, &content, redact)?)
                }
                Some(BoardAction::Remove { name, src: s }) => {
                    ctx.emit(&ops::board::remove(&repo, &branch, &name, s, None)?)
                }
            }
        }
        Command::Heat(a) => ctx.emit(&ops::heat::heat(&ctx.repo()?, a.all)?),
        Command::Promote(a) => {
            ctx.emit(&ops::heat::promote(&ctx.repo()?, &a.id, &a.apply_to, a.name.as_deref(), a.redact)?)
        }
        Command::Consolidate(a) => {
            let req = ops::consolidate::Request { dry_run: a.dry_run, summarizer: a.summarizer };
            ctx.emit(&ops::consolidate::consolidate(&ctx.repo()?, &req)?)
        }
        Command::Undo(a) if a.list => ctx.emit(&ops::undo::list(&ctx.repo()?)?),
        Command::Undo(a) if a.drop => ctx.emit(&ops::undo::drop_last(&ctx.repo()?)?),
        Command::Undo(_) => ctx.emit(&ops::undo::undo(&ctx.repo()?)?),
        Command::Inbox(a) => {
            use crate::cli::InboxAction;
            match a.action {
                None => ctx.emit(&ops::inbox::list(&ctx.layout)?),
                Some(InboxAction::Show { id }) => ctx.emit(&ops::inbox::show(&ctx.layout, &id)?),
                Some(InboxAction::Accept { ids, all }) => ctx.emit(&ops::inbox::accept(&ctx.repo()?, &ids, all)?),
                Some(InboxAction::Reject { ids, all }) => ctx.emit(&ops::inbox::reject(&ctx.repo()?, &ids, all)?),
                Some(InboxAction::Digest { session, agent, summarizer, quiet }) => {
                    let req = ops::digest::Request { session, agent, summarizer };
                    let report = ops::digest::digest(&ctx.repo()?, &req)?;
                    if quiet {
                        return Ok(ExitCode::SUCCESS);
                    }
                    for p in report.problems() {
                        ctx.style.warn(p);
                    }
                    ctx.emit(&report)
                }
            }
        }
        Command::Mcp => mcp::run(ctx),
        Command::Hook(a) => Ok(hook::run(Some(&ctx.layout.root), &a.words, ctx.now)),
        Command::Hooks(a) => {
            use crate::cli::HooksAction;
            let repo = ctx.repo()?;
            match a.action {
                None => ctx.emit(&ops::hooks::status(&repo)),
                Some(HooksAction::Install { agents, kb, check }) => {
                    let agents = if agents.is_empty() { ops::hooks::default_agents(&repo) } else { agents };
                    if check {
                        ctx.emit(&ops::hooks::check(&repo, &agents, kb.as_deref())?)
                    } else {
                        ctx.emit(&ops::hooks::install(&repo, &agents, kb.as_deref())?)
                    }
                }
                Some(HooksAction::Remove { agents }) => ctx.emit(&ops::hooks::remove(&repo, &agents)?),
            }
        }
        Command::Shared(a) => shared::run(ctx, a),
        Command::Diff(a) => {
            // A working tree's settings that kb will not take are a problem of that side, not
            // an error: two revisions do not read them at all.
            let (repo, settings_problems) = Repo::open_lenient(ctx.layout.clone(), ctx.now, ctx.env.clone());
            let req = ops::diff::Request {
                base: a.base,
                head: a.head,
                markdown: a.markdown,
                exit_code: a.exit_code,
                settings_problems,
            };
            ctx.emit(&ops::diff::diff(&repo, &req)?)
        }
        Command::Completions(a) => {
            let mut cli = <Cli as clap::CommandFactory>::command();
            output::stream(|w| {
                clap_complete::generate(a.shell, &mut cli, "kb", w);
                Ok(())
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Manpage(a) => {
            let cli = <Cli as clap::CommandFactory>::command();
            match a.dir {
                Some(dir) => {
                    clap_mangen::generate_to(cli, &dir).with_context(|| format!("cannot write to {}", dir.display()))?
                }
                None => output::stream(|w| manpage(cli, w))?,
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
