//! `kb config`: the effective settings and where each value came from.

use super::{Report, View};
use crate::repo::Repo;
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::io::{self, Write};

/// JSON: `{KEY: {"value":V, "source":"default"|PATH|"env:NAME"}...}`.
pub struct ConfigReport {
    entries: Vec<(&'static str, Value, String)>,
    layout: crate::paths::Layout,
}

/// Returns the effective settings of `repo`.
pub fn config(repo: &Repo) -> ConfigReport {
    let entries = repo.settings.entries().into_iter().map(|(k, v, src)| (k, v, src.to_string())).collect();
    ConfigReport { entries, layout: repo.layout.clone() }
}

impl Serialize for ConfigReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let map: Map<String, Value> =
            self.entries.iter().map(|(k, v, src)| (k.to_string(), json!({"value": v, "source": src}))).collect();
        map.serialize(s)
    }
}

impl Report for ConfigReport {
    fn render(&self, _: &View, w: &mut dyn Write) -> io::Result<()> {
        super::write_sources(&self.layout, w)?;
        writeln!(w)?;
        let width = self.entries.iter().map(|(k, _, _)| k.len()).max().unwrap_or(0);
        for (k, v, src) in &self.entries {
            writeln!(w, "{k:<width$} = {v}  ({src})")?;
        }
        Ok(())
    }
}
