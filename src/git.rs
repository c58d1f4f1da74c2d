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

/// Returns `user.email` as git would read it for the repository at `root`: the repository's
/// config (a worktree's shared one), else the global files (`$GIT_CONFIG_GLOBAL`, or
/// `~/.gitconfig` over `$XDG_CONFIG_HOME/git/config`). `None` when no file sets it.
pub fn user_email(root: &Path) -> Option<String> {
    let local = git_dir(root).map(|dir| {
        // A worktree's git folder names the shared one in `commondir`; its config is there.
        let common =
            read_small(&dir.join("commondir")).map(|b| dir.join(String::from_utf8_lossy(&b).trim())).unwrap_or(dir);
        common.join("config")
    });
    let env = crate::paths::env;
    let home = env("HOME").map(PathBuf::from);
    let global: Vec<PathBuf> = match env("GIT_CONFIG_GLOBAL") {
        Some(file) => vec![PathBuf::from(file)],
        None => {
            let xdg = env("XDG_CONFIG_HOME").map(PathBuf::from).or_else(|| home.as_ref().map(|h| h.join(".config")));
            let mut files = vec![];
            files.extend(home.map(|h| h.join(".gitconfig")));
            files.extend(xdg.map(|x| x.join("git").join("config")));
            files
        }
    };
    // The first file in precedence order that sets the key wins.
    local.into_iter().chain(global).find_map(|file| config_value(&String::from_utf8_lossy(&read_small(&file)?)))
}

/// Returns the last `email` of a `[user]` section of a git config file's text.
fn config_value(text: &str) -> Option<String> {
    let mut in_user = false;
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(section) = line.strip_prefix('[') {
            let name = section.split([']', ' ', '"']).next().unwrap_or("");
            in_user = name.eq_ignore_ascii_case("user") && !section.contains('"');
            continue;
        }
        if !in_user {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if key.trim().eq_ignore_ascii_case("email") {
            let value = strip_comment(value.trim());
            let value = value.trim().trim_matches('"').trim();
            found = (!value.is_empty()).then(|| value.to_string());
        }
    }
    found
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

    #[test]
    fn the_user_email_is_read_from_the_user_section() {
        let text = "[core]\n\temail = wrong@x\n[user]\n\tname = A\n\tEmail = \"a@example.com\" # work\n[user \"x\"]\nemail = no@x\n";
        assert_eq!(config_value(text).as_deref(), Some("a@example.com"));
        assert_eq!(config_value("[user]\nname = A\n"), None);
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
