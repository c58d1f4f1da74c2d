//! `kb shared`: the shared sources of a repository (docs/shared.md). `add` and `remove` edit the
//! project's setting `shared`; the list reads each source's files (no git); `sync` clones or
//! fetches each copy with git (`shared::sync`); `propose` saves a project memory or record into a
//! source, on a branch of its own, for a pull request. The read commands' age warnings are
//! [`warnings`]. Only `sync` and `propose` run git.

use super::{Report, View, abs};
use crate::copilot::{RecordRequest, RecordStore, Records};
use crate::error::{Diagnostic, KbError};
use crate::kinds::ItemId;
use crate::memories::store::{MemoryStore, SaveRequest};
use crate::paths::Layout;
use crate::repo::Repo;
use crate::settings::{self, Settings, SharedSpec};
use crate::shared::sync::{self as git, Checkout, Synced};
use crate::shared::{self, Source};
use anyhow::Result;
use serde::Serialize;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The sources of the repository's setting `shared`, located on this machine.
pub fn sources(repo: &Repo) -> Vec<Source> {
    shared::sources(&repo.layout, &repo.settings.shared.value, repo.env.cache_home.as_deref())
}

/// The warnings a read command prints once about the shared sources: a copy older than
/// `shared_ttl_hours`, or missing. `stat` calls only: no git, no network. Ages are measured on
/// the real clock (the stamps' mtimes are real times, whatever `KB_NOW` pins).
pub fn warnings(repo: &Repo) -> Vec<String> {
    if repo.settings.shared.value.is_empty() {
        return Vec::new();
    }
    shared::warnings(&sources(repo), repo.settings.shared_ttl_hours.value, SystemTime::now())
}

/// The names of the sources whose copy is missing or older than `shared_ttl_hours` (what
/// `kb hook session-start` syncs in the background).
pub fn due(repo: &Repo) -> Vec<String> {
    if repo.settings.shared.value.is_empty() {
        return Vec::new();
    }
    shared::due(&sources(repo), repo.settings.shared_ttl_hours.value, SystemTime::now())
}

/// How long one git process may run.
fn timeout(repo: &Repo) -> Duration {
    repo.env.shared_timeout.unwrap_or(git::TIMEOUT)
}

/// Returns the source named `name`, or an error listing the names there are.
fn named<'s>(all: &'s [Source], name: &str) -> Result<&'s Source, KbError> {
    all.iter().find(|s| s.spec.name == name).ok_or_else(|| {
        let there = no_source(all.iter().map(|s| s.spec.name.as_str()), name);
        KbError::rejected("name", format!("{there}: kb shared add NAME URL"))
    })
}

/// Says that no source has `name`, naming the sources `names` there are.
pub fn no_source<'n>(names: impl Iterator<Item = &'n str>, name: &str) -> String {
    let names: Vec<&str> = names.collect();
    let there =
        if names.is_empty() { "none is set".to_string() } else { format!("the sources are {}", names.join(", ")) };
    format!("no shared source named {name:?} ({there})")
}

/// What `kb shared add` or `kb shared remove` did. JSON `{"action":"added"|"removed",
/// "name", "url", "ref":S|null, "path":ABS (the settings file), "copy":ABS|null (where the local
/// copy lives; null when read in place)}`.
#[derive(Serialize)]
pub struct EditReport {
    action: &'static str,
    name: String,
    url: String,
    #[serde(rename = "ref")]
    reference: Option<String>,
    path: String,
    copy: Option<String>,
    #[serde(skip)]
    file: PathBuf,
    #[serde(skip)]
    copy_present: bool,
}

/// Writes the project's `shared` list (removing the key when it is empty), under the lock.
fn write_list(file: &Path, list: &[SharedSpec]) -> Result<()> {
    if list.is_empty() {
        settings::remove_key(file, "shared")?;
        return Ok(());
    }
    let entries: Vec<String> = list.iter().map(|s| s.to_json().to_string()).collect();
    let text = format!("[{}]", entries.join(", "));
    settings::parse_value("shared", &text, file).map_err(|e| KbError::rejected("shared", e.detail))?;
    settings::write_key(file, "shared", &text)?;
    Ok(())
}

/// Adds a source to the project's setting `shared`: its name, URL and ref checked as the
/// setting checks them (a transport kb refuses is refused here, before anything runs), a name
/// already taken refused. Nothing is fetched: `kb shared sync` does that.
pub fn add(
    layout: &Layout,
    env: &settings::Environment,
    name: &str,
    url: &str,
    reference: Option<&str>,
) -> Result<EditReport> {
    SharedSpec::check_name(name).map_err(|why| KbError::rejected("name", why))?;
    SharedSpec::check_url(url).map_err(|why| KbError::rejected("url", why))?;
    if let Some(r) = reference {
        SharedSpec::check_ref(r).map_err(|why| KbError::rejected("--ref", why))?;
    }
    let file = layout.project_settings();
    crate::repo::guard(layout, &file)?;
    let _lock = crate::repo::lock(layout)?;
    // Read under the lock: two adds at once lose neither.
    let current = Settings::load(layout, &settings::env)?;
    let mut list = current.shared.value;
    if let Some(taken) = list.iter().find(|s| s.name == name) {
        let why =
            format!("the name {name:?} is taken by the shared source at {}: kb shared remove {name} first", taken.url);
        return Err(KbError::rejected("name", why).into());
    }
    let spec = SharedSpec { name: name.to_string(), url: url.to_string(), reference: reference.map(str::to_string) };
    list.push(spec.clone());
    write_list(&file, &list)?;
    let source = shared::sources(layout, std::slice::from_ref(&spec), env.cache_home.as_deref()).pop();
    Ok(edit_report("added", spec, file, source.as_ref()))
}

/// Removes a source from the project's setting `shared`. Its local copy stays (another
/// repository of the user may read it); the report says where it is.
pub fn remove(layout: &Layout, env: &settings::Environment, name: &str) -> Result<EditReport> {
    let file = layout.project_settings();
    crate::repo::guard(layout, &file)?;
    let _lock = crate::repo::lock(layout)?;
    let current = Settings::load(layout, &settings::env)?;
    let mut list = current.shared.value;
    let all = shared::sources(layout, &list, env.cache_home.as_deref());
    let source = named(&all, name)?.clone();
    list.retain(|s| s.name != name);
    write_list(&file, &list)?;
    Ok(edit_report("removed", source.spec.clone(), file, Some(&source)))
}

fn edit_report(action: &'static str, spec: SharedSpec, file: PathBuf, source: Option<&Source>) -> EditReport {
    let copy = source.filter(|s| !s.in_place);
    EditReport {
        action,
        name: spec.name,
        url: spec.url,
        reference: spec.reference,
        path: abs(&file),
        copy: copy.map(|s| abs(&s.root)),
        copy_present: copy.is_some_and(Source::present),
        file,
    }
}

impl Report for EditReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let (mark, name, url, file) = (v.style.ok("✓"), &self.name, v.clean(&self.url), v.rel(&self.file));
        if self.action == "added" {
            let at = self.reference.as_deref().map(|r| format!(" at {}", v.clean(r))).unwrap_or_default();
            writeln!(w, "{mark} Added shared source {name}: {url}{at} (in {file})")?;
            match &self.copy {
                Some(_) => writeln!(w, "Fetch it with: kb shared sync {name}"),
                None => writeln!(w, "It is read in place: nothing to sync."),
            }
        } else {
            writeln!(w, "{mark} Removed shared source {name} (from {file})")?;
            match (&self.copy, self.copy_present) {
                (Some(copy), true) => {
                    writeln!(w, "Its local copy stays in {copy}; delete that folder if no repository uses it.")
                }
                _ => Ok(()),
            }
        }
    }
}

/// One source as `kb shared` lists it.
#[derive(Serialize)]
struct Listed {
    name: String,
    url: String,
    #[serde(rename = "ref")]
    reference: Option<String>,
    /// The folder kb reads: the local copy, or the plain path.
    path: String,
    in_place: bool,
    present: bool,
    commit: Option<String>,
    /// Seconds since the last successful sync; null when never synced or read in place.
    age_seconds: Option<u64>,
    /// Whether the copy is older than `shared_ttl_hours` (or missing).
    stale: bool,
    counts: Counts,
}

/// How much knowledge a source holds, read as every command reads it: valid memories, records
/// and decisions, and the files (or records' lines) kb skips there (`kb check` names them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
struct Counts {
    memories: usize,
    records: usize,
    decisions: usize,
    problems: usize,
}

impl Counts {
    /// Counts what a source's view reads (zero for what is not there).
    fn of(k: &crate::knowledge::Knowledge<'_>) -> Counts {
        let mut c = Counts::default();
        match k.memories() {
            Ok(index) => (c.memories, c.problems) = (index.len(), index.problems().len()),
            Err(_) => c.problems += 1,
        }
        match k.records() {
            Ok(file) => {
                let records = Records::parse(file);
                c.records = records.len();
                c.problems += records.problems.iter().filter(|d| d.severity == crate::error::Severity::Error).count();
            }
            Err(_) => c.problems += 1,
        }
        match k.decisions() {
            Ok(scan) => (c.decisions, c.problems) = (scan.decisions.len(), c.problems + scan.problems.len()),
            Err(_) => c.problems += 1,
        }
        c
    }
}

/// `kb shared`: every source, read from its files (no git). JSON `{"ttl_hours":N,
/// "sources":[{"name","url","ref","path","in_place","present","commit","age_seconds","stale",
/// "counts":{"memories","records","decisions","problems"}}]}`.
#[derive(Serialize)]
pub struct ListReport {
    ttl_hours: u64,
    sources: Vec<Listed>,
}

/// Lists the repository's shared sources.
pub fn list(repo: &Repo) -> ListReport {
    let now = SystemTime::now();
    let ttl = repo.settings.shared_ttl_hours.value;
    let knowledge = crate::knowledge::Knowledge::read(repo);
    let sources = sources(repo)
        .into_iter()
        .map(|s| {
            let counts = knowledge.shared_named(&s.spec.name).map(|v| Counts::of(&v.knowledge)).unwrap_or_default();
            let age = s.age(now);
            Listed {
                stale: !s.in_place && age.is_none_or(|a| a.as_secs() > ttl * 3600),
                name: s.spec.name.clone(),
                url: s.spec.url.clone(),
                reference: s.spec.reference.clone(),
                path: abs(&s.root),
                in_place: s.in_place,
                present: s.present(),
                commit: s.commit(),
                age_seconds: age.map(|a| a.as_secs()),
                counts,
            }
        })
        .collect();
    ListReport { ttl_hours: ttl, sources }
}

impl Report for ListReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        if self.sources.is_empty() {
            return writeln!(w, "No shared sources: add one with kb shared add NAME URL");
        }
        for s in &self.sources {
            let at = s.reference.as_deref().map(|r| format!(" ({})", v.clean(r))).unwrap_or_default();
            writeln!(w, "{}  {}{at}", s.name, v.clean(&s.url))?;
            let state = match (s.in_place, s.present, s.age_seconds) {
                (true, true, _) => "in place".to_string(),
                (true, false, _) => "missing: the folder does not exist".to_string(),
                (_, false, _) => "missing: kb shared sync".to_string(),
                (false, true, None) => "never synced: kb shared sync".to_string(),
                (false, true, Some(secs)) if secs < 60 => "synced just now".to_string(),
                (false, true, Some(secs)) => {
                    let old = format!("synced {} ago", shared::age_text(Duration::from_secs(secs)));
                    if s.stale { format!("{old}, older than {} hours: kb shared sync", self.ttl_hours) } else { old }
                }
            };
            let commit = s.commit.as_deref().map(|c| format!("commit {}, ", &c[..c.len().min(12)])).unwrap_or_default();
            let c = &s.counts;
            writeln!(
                w,
                "  {commit}{state}; {}, {}, {}",
                super::plural(c.memories, "memory").replace("memorys", "memories"),
                super::plural(c.records, "record"),
                super::plural(c.decisions, "decision")
            )?;
            if c.problems > 0 {
                let files = if c.problems == 1 { "file or line" } else { "files or lines" };
                writeln!(w, "  {} {files} kb cannot read there: kb check", c.problems)?;
            }
            writeln!(w, "  {}", s.path)?;
        }
        Ok(())
    }
}

/// One source's sync.
#[derive(Serialize)]
struct SyncedJson {
    name: String,
    /// `cloned`, `fetched`, `unchanged`, `in_place` or `failed`.
    action: &'static str,
    commit: Option<String>,
    /// The commit before a fetch.
    from: Option<String>,
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// What `kb shared sync` did. JSON `{"sources":[{"name","action","commit","from","path",
/// "error"?}]}`; exit 1 when a source failed (its warning names it, its old copy stays).
#[derive(Serialize)]
pub struct SyncReport {
    sources: Vec<SyncedJson>,
    #[serde(skip)]
    diagnostics: Vec<Diagnostic>,
}

/// Syncs the named sources (none: every source), one after the other; a failure is a warning
/// naming the source and the others still sync.
pub fn sync(repo: &Repo, names: &[String]) -> Result<SyncReport> {
    let all = sources(repo);
    let chosen: Vec<&Source> = if names.is_empty() {
        all.iter().collect()
    } else {
        names.iter().map(|n| named(&all, n)).collect::<Result<_, _>>()?
    };
    let mut report = SyncReport { sources: Vec::new(), diagnostics: Vec::new() };
    for s in chosen {
        let name = s.spec.name.clone();
        let path = abs(&s.root);
        let synced = match &repo.env.cache_home {
            None if !s.in_place => Err("no cache folder for the local copy: set XDG_CACHE_HOME or HOME".to_string()),
            _ if s.in_place && !s.present() => {
                Err(format!("it is read in place from {}, which is not a folder", s.root.display()))
            }
            _ => git::sync(s, timeout(repo)),
        };
        let entry = match synced {
            Ok(Synced::InPlace) => {
                SyncedJson { name, action: "in_place", commit: s.commit(), from: None, path, error: None }
            }
            Ok(Synced::Cloned { commit }) => {
                SyncedJson { name, action: "cloned", commit: Some(commit), from: None, path, error: None }
            }
            Ok(Synced::Fetched { from, to }) => {
                let action = if from.as_deref() == Some(to.as_str()) { "unchanged" } else { "fetched" };
                SyncedJson { name, action, commit: Some(to), from, path, error: None }
            }
            Err(why) => {
                let kept = if s.present() { "the old copy stays" } else { "there is no local copy" };
                let msg = format!("shared source {name} did not sync: {why} ({kept})");
                report.diagnostics.push(Diagnostic::warning(None, msg));
                SyncedJson { name, action: "failed", commit: s.commit(), from: None, path, error: Some(why) }
            }
        };
        if entry.action != "failed" && !git::is_kb_repository(&s.root) {
            let msg = format!(
                "shared source {} is not a kb repository (no .co-cli/knowledge/ and no .github/copilot-memories.jsonl): it adds nothing",
                entry.name
            );
            report.diagnostics.push(Diagnostic::warning(None, msg));
        }
        report.sources.push(entry);
    }
    Ok(report)
}

impl Report for SyncReport {
    fn render(&self, _: &View, w: &mut dyn Write) -> io::Result<()> {
        if self.sources.is_empty() {
            return writeln!(w, "No shared sources: add one with kb shared add NAME URL");
        }
        let short = |c: &Option<String>| c.as_deref().map_or("?".to_string(), |c| c[..c.len().min(12)].to_string());
        for s in &self.sources {
            let name = &s.name;
            match s.action {
                "cloned" => writeln!(w, "✓ {name}: cloned at {} into {}", short(&s.commit), s.path)?,
                "fetched" => writeln!(w, "✓ {name}: {} → {}", short(&s.from), short(&s.commit))?,
                "unchanged" => writeln!(w, "✓ {name}: up to date at {}", short(&s.commit))?,
                "in_place" => writeln!(w, "{name}: used in place ({}), nothing to sync", s.path)?,
                _ => writeln!(w, "✗ {name}: not synced")?,
            }
        }
        Ok(())
    }

    fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    fn succeeded(&self) -> bool {
        self.sources.iter().all(|s| s.action != "failed")
    }
}

/// What `kb shared propose` did. JSON `{"id", "store":"md"|"copilot", "source", "action":"proposed"|"exists",
/// "branch":S|null, "commit":S|null, "saved_as":ID (the id in the source), "saved":"saved"|
/// "consolidated"|"exists" (what the source's save did), "replaced":S (a consolidation: the
/// source's text it rewrites), "similar_to":{…} (the source's near miss, as `kb save` gives it),
/// "path":ABS (the source's folder), "push":S|null (the command to run)}`.
#[derive(Serialize)]
pub struct ProposeReport {
    id: String,
    store: &'static str,
    source: String,
    action: &'static str,
    branch: Option<String>,
    commit: Option<String>,
    saved_as: serde_json::Value,
    saved: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    replaced: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    similar_to: Option<serde_json::Value>,
    path: String,
    push: Option<String>,
}

/// What the source's own save did with a proposal.
struct Saved {
    /// `saved`, `consolidated` or `exists`.
    action: &'static str,
    id: serde_json::Value,
    replaced: Option<String>,
    similar_to: Option<serde_json::Value>,
}

/// The project item a proposal copies.
enum Item {
    Memory(SaveRequest),
    Record(RecordRequest),
}

impl Item {
    fn text(&self) -> &str {
        match self {
            Item::Memory(r) => &r.content,
            Item::Record(r) => &r.fact,
        }
    }
}

/// Reads the project memory or record `raw_id` as a save request for another store.
fn item(repo: &Repo, raw_id: &str) -> Result<(String, Item)> {
    if let Some((name, _)) = super::read::shared_id(repo, raw_id) {
        let why = format!(
            "{} is an item of the shared source {name}: kb shared propose takes a memory or record of this project",
            raw_id.trim()
        );
        return Err(KbError::rejected("id", why).into());
    }
    super::read::unknown_source(repo, raw_id)?;
    match ItemId::parse(raw_id)? {
        ItemId::Memory(id) => {
            let index = MemoryStore::new(repo).scan()?;
            let found = index.by_id(id);
            let [m] = found.as_slice() else {
                return Err(match found.len() {
                    0 => KbError::not_found("memory", id),
                    _ => KbError::duplicate_id("memory", id, found.iter().map(|m| m.file_name.to_string()).collect()),
                }
                .into());
            };
            let req = SaveRequest {
                content: m.content.to_string(),
                tags: m.tags.iter().map(|t| t.to_string()).collect(),
                memory_type: m.memory_type,
                importance: m.importance,
                agent: m.agent.map(str::to_string),
                ..Default::default()
            };
            Ok((id.to_string(), Item::Memory(req)))
        }
        ItemId::Record(id) => {
            let file = RecordStore::new(repo).read()?;
            let records = Records::parse(&file);
            let r = records.one(id)?;
            let f = records.fields(&r);
            let req = RecordRequest {
                subject: f.subject.to_string(),
                fact: f.fact.to_string(),
                citations: f.citations.iter().map(|c| c.to_string()).collect(),
                reason: f.reason.as_deref().unwrap_or_default().to_string(),
                category: f.category.as_deref().map(str::to_string),
                dry_run: false,
                redact: false,
                no_dedup: false,
            };
            Ok((id.to_string(), Item::Record(req)))
        }
        ItemId::Decision(n) => Err(KbError::rejected(
            "id",
            format!("decision:{n} is a decision: kb shared propose takes a memory or a Copilot record"),
        )
        .into()),
    }
}

/// The project's name (its folder) and its `origin` URL without any credentials in it.
fn project(repo: &Repo, timeout: Duration) -> (String, Option<String>) {
    let root = &repo.layout.root;
    let name = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
    let name = name.file_name().map_or_else(|| "project".to_string(), |n| n.to_string_lossy().into_owned());
    let origin =
        project_config(repo, "remote.origin.url", timeout).map(|u| without_credentials(&u)).filter(|u| !u.is_empty());
    (name, origin)
}

/// A value of the project repository's own git config file (not the global one), when set.
fn project_config(repo: &Repo, key: &str, timeout: Duration) -> Option<String> {
    let root = &repo.layout.root;
    let config = crate::git::config_file(root).filter(|c| c.is_file())?;
    let args = [std::ffi::OsStr::new("config"), "--file".as_ref(), config.as_os_str(), "--get".as_ref(), key.as_ref()];
    git::git(root, &[], &args, timeout).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
}

/// A URL with any `user:password@` of an `scheme://` URL dropped, and its query and fragment
/// (`?private_token=…`): a token must not travel in a commit message.
fn without_credentials(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if path.is_empty() && !rest.contains('/') {
        format!("{scheme}://{host}")
    } else {
        format!("{scheme}://{host}/{path}")
    }
}

/// The `-c` options that give the commit the person's git identity: the project repository's own
/// `user.name` and `user.email` (a work address set there) when it has them; else git's own
/// (the source's config, the global one, `GIT_AUTHOR_NAME` and the like), never guessed from
/// the host name. Fails as `git commit` would when no identity is set, before anything is made.
/// Returns the options and the author's e-mail.
fn committer(repo: &Repo, source_root: &Path, timeout: Duration) -> Result<(Vec<String>, Option<String>), String> {
    let mut config = vec!["user.useConfigOnly=true".to_string()];
    for key in ["user.name", "user.email"] {
        if let Some(value) = project_config(repo, key, timeout) {
            config.push(format!("{key}={value}"));
        }
    }
    let mut email = None;
    for ident in ["GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"] {
        let said = git::git(source_root, &config, &["var", ident], timeout).map_err(|why| {
            format!(
                "git has no identity to commit with ({why}): set yours with git config --global user.name \"Your Name\" and git config --global user.email you@example.com"
            )
        })?;
        // `Name <e-mail> time zone`.
        email = email.or_else(|| {
            let (_, rest) = said.split_once('<')?;
            rest.split_once('>').map(|(e, _)| e.trim().to_string()).filter(|e| !e.is_empty())
        });
    }
    Ok((config, email))
}

/// Copies project memory (or record) `raw_id` into source `name` through that repository's own
/// save (its dedup holds), on a new branch `kb/propose-<id>-<slug>` of the source's checkout,
/// committed as the person with a message naming the project; then puts the checkout back where
/// it was (for a copy: the synced commit), so no reader sees the unmerged proposal. kb never
/// pushes: the report gives the command.
pub fn propose(repo: &Repo, raw_id: &str, name: &str) -> Result<ProposeReport> {
    let all = sources(repo);
    let source = named(&all, name)?;
    let root = source.root.clone();
    if !source.present() {
        return Err(KbError::refused(
            "shared propose",
            format!("shared source {name} has no local copy: kb shared sync {name}"),
        )
        .into());
    }
    if source.git_dir().is_none() {
        return Err(KbError::refused(
            "shared propose",
            format!("shared source {name} ({}) is not a git repository", root.display()),
        )
        .into());
    }
    let (id, item) = item(repo, raw_id)?;
    let t = timeout(repo);
    let refused = |why: String| KbError::refused("shared propose", format!("shared source {name}: {why}"));
    git::repository(&root, t).map_err(refused)?;
    let (identity, email) = committer(repo, &root, t).map_err(refused)?;
    git::check_clean(&root, t).map_err(refused)?;
    let back = Checkout::of(&root, t).map_err(refused)?;
    let slug: String = crate::format::text::slugify(item.text()).chars().take(40).collect();
    let branch = format!("kb/propose-{}-{}", crate::format::text::slugify(&id), slug.trim_end_matches('-'));
    git::git(&root, &[], &["checkout", "--quiet", "-b", &branch], t).map_err(refused)?;
    // From here on the checkout is on the new branch: every way out puts it back.
    let undo = |delete: bool| {
        let restored = back.restore(&root, t);
        if delete {
            let _ = git::git(&root, &[], &["branch", "--quiet", "-D", &branch], t);
        }
        restored
    };
    let saved = match save_into(repo, source, item, email) {
        Ok(v) => v,
        Err(e) => {
            let _ = undo(true);
            return Err(e);
        }
    };
    let store = if raw_id.trim().parse::<u64>().is_ok() { "md" } else { "copilot" };
    let mut report = ProposeReport {
        id,
        store,
        source: name.into(),
        action: "exists",
        branch: None,
        commit: None,
        saved_as: saved.id,
        saved: saved.action,
        replaced: saved.replaced,
        similar_to: saved.similar_to,
        path: abs(&root),
        push: None,
    };
    if saved.action == "exists" {
        // A consolidation into the same words touched the file's dates: nothing to propose.
        let _ = git::git(&root, &[], &["reset", "--quiet", "--hard"], t);
        undo(true).map_err(refused)?;
        return Ok(report);
    }
    let id = &report.id;
    let (project, origin) = project(repo, t);
    let what = if store == "md" { format!("memory {id}") } else { format!("Copilot record {id}") };
    let from = origin.map_or(project.clone(), |o| format!("{project} ({o})"));
    let message = format!("Propose {what} from {project}\n\nProposed with kb shared propose from {from}.\n");
    let committed = git::git(&root, &[], &["add", "-A", "--", "."], t)
        .and_then(|_| git::git(&root, &identity, &["commit", "--quiet", "--no-verify", "-m", &message], t))
        .and_then(|_| git::git(&root, &[], &["rev-parse", "HEAD"], t));
    let commit = match committed {
        Ok(c) => c.trim().to_string(),
        Err(why) => {
            let _ = git::git(&root, &[], &["reset", "--quiet", "--hard"], t);
            let _ = undo(true);
            return Err(refused(format!("the commit failed: {why}")).into());
        }
    };
    undo(false).map_err(refused)?;
    report.push = Some(format!("git -C {} push origin {branch}", shell_word(&report.path)));
    report.action = "proposed";
    report.branch = Some(branch);
    report.commit = Some(commit);
    Ok(report)
}

/// Saves `item` into the source's repository through its normal save, written by the person
/// (`KB_AUTHOR`, else the e-mail of the commit's identity). A consolidation that leaves the
/// source's text as it was (the same words) is what the source already holds.
fn save_into(repo: &Repo, source: &Source, item: Item, email: Option<String>) -> Result<Saved> {
    let mut env = repo.env.clone();
    env.kb_author = env.kb_author.or(email);
    let text = item.text().to_string();
    let target = Repo::open(source.layout(), repo.now, env)?;
    let mut json = match item {
        Item::Memory(req) => serde_json::to_value(super::save::save(&target, req)?)?,
        Item::Record(req) => serde_json::to_value(super::save::save_record(&target, req)?)?,
    };
    let replaced = json.get("replaced").and_then(|r| r.as_str()).map(str::to_string);
    let same = |old: &str| crate::format::salient::same_words(old, &text);
    let action = match json.get("action").and_then(|a| a.as_str()) {
        Some("exists") => "exists",
        Some("consolidated") if replaced.as_deref().is_some_and(same) => "exists",
        Some("consolidated") => "consolidated",
        _ => "saved",
    };
    Ok(Saved {
        action,
        id: json.get("memory_id").cloned().unwrap_or_default(),
        replaced,
        similar_to: json.get_mut("similar_to").map(serde_json::Value::take),
    })
}

/// A path as one shell word: quoted when it holds anything but safe characters.
fn shell_word(s: &str) -> String {
    if s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

impl Report for ProposeReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let (id, source) = (&self.id, &self.source);
        let noun = if self.store == "md" { "memory" } else { "Copilot record" };
        let there = match &self.saved_as {
            serde_json::Value::String(s) => v.clean(s).into_owned(),
            other => other.to_string(),
        };
        let (Some(branch), Some(push)) = (&self.branch, &self.push) else {
            return writeln!(w, "Nothing proposed: {source} already holds {noun} {id} (as its {noun} {there})");
        };
        let into = match self.saved {
            "consolidated" => format!("consolidated into its {noun} {there}"),
            _ => format!("its {noun} {there}"),
        };
        writeln!(w, "{} Proposed {noun} {id} to {source} ({into}) on branch {branch}", v.style.ok("✓"))?;
        if let Some(old) = &self.replaced {
            writeln!(w, "It rewrites {source}'s {noun} {there}, which said: {}", v.clean(old))?;
        }
        if let Some(miss) = &self.similar_to {
            let similar = miss.get("id").map(|i| i.as_str().map_or(i.to_string(), str::to_string)).unwrap_or_default();
            let score = miss.get("similarity").and_then(|s| s.as_f64()).unwrap_or_default();
            let why = match miss.get("why").and_then(|w| w.as_str()) {
                Some("protected") => ", but it is protected there, so the proposal adds a new one",
                Some("core context") => ", but it is core context there, so the proposal adds a new one",
                Some("written by a person") => ", but a person wrote it, so the proposal adds a new one",
                _ => ", with different facts",
            };
            writeln!(
                w,
                "Similar: {source}'s {noun} {} looks similar (similarity {score:.1}){why}: say in the pull request how they differ",
                v.clean(&similar)
            )?;
        }
        writeln!(w, "Push it and open a pull request:\n  {}", v.clean(push))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_travel_in_a_commit_message() {
        assert_eq!(without_credentials("https://u:tok@github.com/a/b.git"), "https://github.com/a/b.git");
        assert_eq!(without_credentials("git@github.com:a/b.git"), "git@github.com:a/b.git");
        assert_eq!(without_credentials("ssh://git@host/x"), "ssh://host/x");
        assert_eq!(without_credentials("https://h/a/p.git?private_token=glpat-S#x"), "https://h/a/p.git");
        assert_eq!(shell_word("/tmp/a b"), "'/tmp/a b'");
        assert_eq!(shell_word("/c/kb/shared/org-1"), "/c/kb/shared/org-1");
    }
}
