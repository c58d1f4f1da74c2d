//! `kb config`: the effective settings and where each value came from; `kb config set` and
//! `kb config unset` edit a settings file without hand-editing JSON.

use super::{Report, View, abs};
use crate::error::KbError;
use crate::paths::Layout;
use crate::repo;
use crate::settings::{self, Settings, SettingsError};
use anyhow::Result;
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::io::{self, Write};
use std::path::PathBuf;

/// JSON: `{KEY: {"value":V, "source":"default"|PATH|"env:NAME"}...}`; a value that could not be
/// used adds `"invalid": MESSAGE` to its key (the value shown is the one in effect instead).
pub struct ConfigReport {
    entries: Vec<(&'static str, Value, String)>,
    errors: Vec<SettingsError>,
    layout: Layout,
}

/// Returns the effective settings of the repository at `layout`. An invalid value does not stop
/// the table: it is marked, and the command fails after printing it.
pub fn config(layout: &Layout) -> ConfigReport {
    let (settings, errors) = Settings::load_all(layout, &crate::settings::env);
    let entries = settings.entries().into_iter().map(|(k, v, src)| (k, v, src.to_string())).collect();
    ConfigReport { entries, errors, layout: layout.clone() }
}

impl ConfigReport {
    /// Returns why the value of `key` could not be used, if it could not.
    fn invalid(&self, key: &str) -> Option<&SettingsError> {
        self.errors.iter().find(|e| e.key == Some(key))
    }
}

impl Serialize for ConfigReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let map: Map<String, Value> = self
            .entries
            .iter()
            .map(|(k, v, src)| {
                let mut entry = json!({"value": v, "source": src});
                if let Some(e) = self.invalid(k) {
                    entry["invalid"] = Value::from(e.message.as_str());
                }
                (k.to_string(), entry)
            })
            .collect();
        map.serialize(s)
    }
}

impl Report for ConfigReport {
    fn render(&self, _: &View, w: &mut dyn Write) -> io::Result<()> {
        super::write_sources(&self.layout, w)?;
        writeln!(w)?;
        let width = self.entries.iter().map(|(k, _, _)| k.len()).max().unwrap_or(0);
        for (k, v, src) in &self.entries {
            write!(w, "{k:<width$} = {v}  ({src})")?;
            if self.invalid(k).is_some() {
                write!(w, "  ✗ invalid value ignored, see below")?;
            }
            writeln!(w)?;
        }
        Ok(())
    }

    fn errors(&self) -> Vec<String> {
        self.errors.iter().map(|e| e.message.clone()).collect()
    }

    fn succeeded(&self) -> bool {
        self.errors.is_empty()
    }
}

/// What `kb config set` or `kb config unset` did. JSON: `{"key":S, "value":V|null, "path":ABS,
/// "changed":B}` (`value` is null after an unset).
#[derive(Serialize)]
pub struct EditReport {
    key: String,
    value: Option<Value>,
    path: String,
    changed: bool,
    #[serde(skip)]
    file: PathBuf,
}

/// Returns the settings file a `set` or `unset` edits: the project's, or with `global` the
/// global one.
fn settings_file(layout: &Layout, global: bool) -> Result<PathBuf> {
    if global {
        return layout.global_settings().ok_or_else(|| {
            anyhow::anyhow!("no global settings folder: set HOME or XDG_CONFIG_HOME, or leave out --global")
        });
    }
    let path = layout.project_settings();
    repo::guard(layout, &path)?;
    Ok(path)
}

/// Sets `key` to `raw` (JSON, or plain text for a string) in the settings file, validated as
/// the settings are (docs/formats.md, Settings), atomically, other keys and their order kept. The
/// project's file is written under the repository lock.
pub fn set(layout: &Layout, key: &str, raw: &str, global: bool) -> Result<EditReport> {
    let file = settings_file(layout, global)?;
    let value =
        settings::parse_value(key, raw, &file).map_err(|e| KbError::rejected(e.key.unwrap_or("key"), e.detail))?;
    if key == "context_targets" {
        check_targets(layout, &value)?;
    }
    let _lock = if global { None } else { Some(repo::lock(layout)?) };
    // JSON as the user typed it (the keys of an object target stay in their order); a bare word
    // such as `cut` is written as the JSON string it stands for.
    let text =
        if serde_json::from_str::<serde_json::Value>(raw).is_ok() { raw.trim().to_string() } else { value.to_string() };
    let changed = settings::write_key(&file, key, &text)?;
    Ok(EditReport { key: key.to_string(), value: Some(value), path: abs(&file), changed, file })
}

/// Fails unless every target of a `context_targets` value is one `kb compile` can write: inside
/// the root, outside `.git/` and kb's own folders (checked when set, so the next compile does not
/// fail on it).
fn check_targets(layout: &Layout, value: &Value) -> Result<()> {
    for entry in value.as_array().map(Vec::as_slice).unwrap_or_default() {
        let Ok(spec) = settings::TargetSpec::from_json(entry) else { continue };
        if let Err(e) = crate::context::targets::resolve(layout, &spec.path) {
            let why = format!("context_targets: {}: {}", e.target, e.message);
            return Err(KbError::rejected("context_targets", why).into());
        }
    }
    Ok(())
}

/// Removes `key` from the settings file (a key that is not there is not an error).
pub fn unset(layout: &Layout, key: &str, global: bool) -> Result<EditReport> {
    let file = settings_file(layout, global)?;
    let _lock = if global { None } else { Some(repo::lock(layout)?) };
    let changed = settings::remove_key(&file, key)?;
    Ok(EditReport { key: key.to_string(), value: None, path: abs(&file), changed, file })
}

impl Report for EditReport {
    fn render(&self, v: &View, w: &mut dyn Write) -> io::Result<()> {
        let (key, file, mark) = (&self.key, v.rel(&self.file), v.style.ok("✓"));
        match (&self.value, self.changed) {
            (Some(value), true) => writeln!(w, "{mark} Set {key} = {value} in {file}"),
            (Some(value), false) => writeln!(w, "{key} is already {value} in {file}"),
            (None, true) => writeln!(w, "{mark} Unset {key} in {file}"),
            (None, false) => writeln!(w, "{key} is not set in {file}"),
        }
    }
}
