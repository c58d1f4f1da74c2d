//! What kb reads of git without running it: where the repository's git folder is (the board is
//! per branch) and the user's e-mail from git's config files (the author of a change made on the
//! command line). Only regular files are read: a FIFO named `.git` must not block kb.

use std::path::{Path, PathBuf};

/// Returns the git folder of the repository at `root`: `.git` itself, or the folder a `.git`
/// file names (a worktree or a submodule). `None` outside git.
pub fn git_dir(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    match std::fs::metadata(&dot_git) {
        Ok(m) if m.is_dir() => Some(dot_git),
        Ok(m) if m.is_file() => {
            let bytes = read_small(&dot_git)?;
            let dir = String::from_utf8_lossy(&bytes).trim().strip_prefix("gitdir:")?.trim().to_string();
            Some(root.join(dir))
        }
        _ => None,
    }
}

/// Returns the repository's own config file (not the global one) for the repository at `root`:
/// a worktree's is the shared one. `None` outside git.
pub fn config_file(root: &Path) -> Option<PathBuf> {
    git_dir(root).as_deref().map(config_of)
}

/// The config file of the git folder `dir`: a worktree's git folder names the shared one in
/// `commondir`, and its config is there.
fn config_of(dir: &Path) -> PathBuf {
    let common = read_small(&dir.join("commondir"))
        .map_or_else(|| dir.to_path_buf(), |b| dir.join(String::from_utf8_lossy(&b).trim()));
    common.join("config")
}

/// Returns `user.email` as git would read it for the repository at `root`: the repository's
/// config (a worktree's shared one), else the global files (`$GIT_CONFIG_GLOBAL`, or
/// `~/.gitconfig` over `$XDG_CONFIG_HOME/git/config`), each with the files its `[include]` and
/// matching `[includeIf "gitdir:…"]` sections name, at the place they are named (a later value
/// wins, as in git). `None` when no file sets it.
pub fn user_email(root: &Path) -> Option<String> {
    let dir = git_dir(root);
    let local = dir.as_deref().map(config_of);
    let env = crate::paths::env;
    let home = env("HOME").map(PathBuf::from);
    let global: Vec<PathBuf> = match env("GIT_CONFIG_GLOBAL") {
        Some(file) => vec![PathBuf::from(file)],
        None => {
            let xdg = env("XDG_CONFIG_HOME").map(PathBuf::from).or_else(|| home.as_ref().map(|h| h.join(".config")));
            let mut files = vec![];
            files.extend(home.clone().map(|h| h.join(".gitconfig")));
            files.extend(xdg.map(|x| x.join("git").join("config")));
            files
        }
    };
    let git_dir = dir.map(|d| std::fs::canonicalize(&d).unwrap_or(d));
    let reading = Reading { home, git_dir };
    // The first file in precedence order that sets the key wins.
    local.into_iter().chain(global).find_map(|file| reading.email_in(&file, 0))
}

/// How deep includes nest before kb stops following them (git's own limit).
const MAX_INCLUDE_DEPTH: u8 = 10;

/// What following a config file's includes needs: the home folder (`~/`) and the repository's
/// git folder (`includeIf "gitdir:…"`).
struct Reading {
    home: Option<PathBuf>,
    git_dir: Option<PathBuf>,
}

impl Reading {
    /// Returns the last `user.email` that the config file at `file` and the files it includes
    /// set, in order.
    fn email_in(&self, file: &Path, depth: u8) -> Option<String> {
        if depth > MAX_INCLUDE_DEPTH {
            return None;
        }
        let text = String::from_utf8_lossy(&read_small(file)?).into_owned();
        let mut section = Section::Other;
        let mut found = None;
        for line in text.lines() {
            let line = line.trim();
            if let Some(header) = line.strip_prefix('[') {
                section = Section::of(header, |condition| self.holds(condition, file));
                continue;
            }
            let Some((key, value)) = line.split_once('=') else { continue };
            let value = strip_comment(value.trim()).trim().trim_matches('"').trim();
            match section {
                Section::User if key.trim().eq_ignore_ascii_case("email") => {
                    found = (!value.is_empty()).then(|| value.to_string());
                }
                Section::Include if key.trim().eq_ignore_ascii_case("path") && !value.is_empty() => {
                    let included = self.path(value, file);
                    if let Some(email) = self.email_in(&included, depth + 1) {
                        found = Some(email);
                    }
                }
                _ => {}
            }
        }
        found
    }

    /// Returns an include's `path` as git resolves it: `~/` from the home folder, a relative
    /// path from the including file's folder.
    fn path(&self, value: &str, from: &Path) -> PathBuf {
        match (value.strip_prefix("~/"), &self.home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => from.parent().unwrap_or(Path::new("/")).join(value),
        }
    }

    /// Returns whether an `includeIf` condition holds: `gitdir:` and `gitdir/i:` against the
    /// repository's git folder; any other condition (`onbranch:`, `hasconfig:`) is not followed.
    fn holds(&self, condition: &str, from: &Path) -> bool {
        let (pattern, fold) = match (condition.strip_prefix("gitdir:"), condition.strip_prefix("gitdir/i:")) {
            (Some(p), _) => (p, false),
            (_, Some(p)) => (p, true),
            _ => return false,
        };
        let Some(git_dir) = &self.git_dir else { return false };
        let mut pattern = match (pattern.strip_prefix("~/"), pattern.strip_prefix("./"), &self.home) {
            (Some(rest), _, Some(home)) => format!("{}/{rest}", home.display()),
            (_, Some(rest), _) => format!("{}/{rest}", from.parent().unwrap_or(Path::new("/")).display()),
            _ if pattern.starts_with('/') => pattern.to_string(),
            _ => format!("**/{pattern}"),
        };
        if pattern.ends_with('/') {
            pattern.push_str("**");
        }
        let glob = globset::GlobBuilder::new(&pattern).literal_separator(true).case_insensitive(fold).build();
        glob.is_ok_and(|g| g.compile_matcher().is_match(git_dir))
    }
}

/// The section of a config file a line belongs to, as far as `user.email` goes.
#[derive(Clone, Copy)]
enum Section {
    User,
    Include,
    Other,
}

impl Section {
    /// Returns the section a header (after its `[`) opens; `includeIf` counts when `holds` says
    /// its condition does.
    fn of(header: &str, holds: impl Fn(&str) -> bool) -> Section {
        let header = header.split(']').next().unwrap_or("").trim();
        let (name, sub) = match header.split_once(char::is_whitespace) {
            Some((name, sub)) => (name, Some(sub.trim().trim_matches('"'))),
            None => (header, None),
        };
        match (name.to_ascii_lowercase().as_str(), sub) {
            ("user", None) => Section::User,
            ("include", None) => Section::Include,
            ("includeif", Some(condition)) if holds(condition) => Section::Include,
            _ => Section::Other,
        }
    }
}

/// Returns a config value without a trailing `#` or `;` comment outside quotes.
fn strip_comment(value: &str) -> &str {
    let mut quoted = false;
    for (i, c) in value.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '#' | ';' if !quoted => return &value[..i],
            _ => {}
        }
    }
    value
}

/// Reads a small regular file (a git pointer or config file); `None` when it is missing, not a
/// regular file or unreadable.
fn read_small(path: &Path) -> Option<Vec<u8>> {
    crate::fsio::read_input(path, Path::new("/")).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Returns the e-mail the config text `text` sets, read as a file of its own.
    fn config_value(text: &str) -> Option<String> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config");
        std::fs::write(&file, text).unwrap();
        Reading { home: None, git_dir: None }.email_in(&file, 0)
    }

    #[test]
    fn the_user_email_is_read_from_the_user_section() {
        let text = "[core]\n\temail = wrong@x\n[user]\n\tname = A\n\tEmail = \"a@example.com\" # work\n[user \"x\"]\nemail = no@x\n";
        assert_eq!(config_value(text).as_deref(), Some("a@example.com"));
        assert_eq!(config_value("[user]\nname = A\n"), None);
    }

    #[test]
    fn includes_and_matching_include_ifs_are_followed_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let repo = home.join("work/repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::write(home.join("base.inc"), "[user]\n\temail = base@example.com\n").unwrap();
        std::fs::write(home.join("work.inc"), "[user]\n\temail = work@example.com\n").unwrap();
        std::fs::write(home.join("other.inc"), "[user]\n\temail = other@example.com\n").unwrap();
        std::fs::write(home.join("loop.inc"), "[include]\n\tpath = loop.inc\n").unwrap();
        let gitconfig = home.join(".gitconfig");
        let reading =
            Reading { home: Some(home.clone()), git_dir: Some(std::fs::canonicalize(repo.join(".git")).unwrap()) };
        let write = |text: &str| std::fs::write(&gitconfig, text).unwrap();
        write("[include]\n\tpath = ~/base.inc\n");
        assert_eq!(reading.email_in(&gitconfig, 0).as_deref(), Some("base@example.com"));
        let home_glob = format!("{}/work/", std::fs::canonicalize(&home).unwrap().display());
        write(&format!("[user]\nemail = me@x\n[includeIf \"gitdir:{home_glob}\"]\n\tpath = work.inc\n"));
        assert_eq!(reading.email_in(&gitconfig, 0).as_deref(), Some("work@example.com"), "an include later wins");
        write("[includeIf \"gitdir:/elsewhere/\"]\n\tpath = other.inc\n[user]\nemail = me@x\n");
        assert_eq!(reading.email_in(&gitconfig, 0).as_deref(), Some("me@x"), "a gitdir that does not match");
        write("[includeIf \"gitdir/i:**/WORK/REPO/.git\"]\n\tpath = work.inc\n");
        assert_eq!(reading.email_in(&gitconfig, 0).as_deref(), Some("work@example.com"), "case folded");
        write("[includeIf \"gitdir:repo/.git\"]\n\tpath = work.inc\n[include]\npath = loop.inc\n");
        assert_eq!(reading.email_in(&gitconfig, 0).as_deref(), Some("work@example.com"), "a loop ends");
    }

    #[test]
    fn a_repository_config_and_a_worktree_are_followed() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        std::fs::create_dir_all(main.join(".git/worktrees/wt")).unwrap();
        std::fs::write(main.join(".git/config"), "[user]\nemail = local@example.com\n").unwrap();
        assert_eq!(user_email(&main).as_deref(), Some("local@example.com"));
        let wt = dir.path().join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", main.join(".git/worktrees/wt").display())).unwrap();
        std::fs::write(main.join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
        assert_eq!(user_email(&wt).as_deref(), Some("local@example.com"));
    }
}
