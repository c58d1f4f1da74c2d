//! Decay past the maximum count: which memories go (the oldest unprotected ones) and what
//! replaces them (a summary as co-cli, the Python tool whose file layout kb keeps, writes it, one per agent;
//! or nothing with `cut`).

use crate::error::KbError;
use crate::format::text::{self, MAX_TEXT_BYTES};
use crate::journal::Txn;
use crate::memories::file::MemoryType;
use crate::memories::file::{new_memory_file_with, next_id};
use crate::memories::index::{Index, MemoryRef, Pos};
use crate::settings::{DecayStrategy, Settings};
use chrono::{DateTime, Utc};
use serde_json::Value;

/// Returns the memories a create would decay: none unless the count then exceeds the maximum;
/// else the k oldest unprotected ones, k = max(1, floor(total × percentage)). A `core_context`
/// memory is never one of them, even without `decay_protected`.
pub fn decay_victims(index: &Index, settings: &Settings) -> Vec<Pos> {
    let total = index.len() + 1;
    if total as u64 <= settings.memory_max_count.value {
        return Vec::new();
    }
    let k = ((total as f64 * settings.memory_decay_percentage.value).floor() as usize).max(1);
    let mut candidates: Vec<Pos> =
        index.positions().filter(|&p| !index.protected_at(p) && index.type_at(p) != MemoryType::CoreContext).collect();
    if candidates.len() > k {
        candidates.select_nth_unstable_by_key(k - 1, |&p| index.age_key_at(p));
        candidates.truncate(k);
    }
    candidates.sort_by_key(|&p| index.age_key_at(p));
    candidates
}

/// Summarizes or cuts the decayed memories. The summary is written before the originals are
/// deleted, so a crash in between duplicates knowledge instead of losing it. A summary's
/// `created_by` is `author`, the author of the save that decayed them.
pub fn decay(
    txn: &mut Txn,
    index: &Index,
    victims: &[MemoryRef<'_>],
    strategy: DecayStrategy,
    new_id: u64,
    author: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(), KbError> {
    if strategy == DecayStrategy::Summarize {
        let tags = vec!["_consolidated".to_string(), "_auto_decay".to_string()];
        let mut last_id = index.max_id().unwrap_or(0).max(new_id);
        // One summary, unless the texts would not fit in one memory file; and one per agent, so
        // an agent's memories stay that agent's instead of becoming shared.
        for (agent, owned) in by_agent(victims) {
            let mut extra: Vec<(String, Value)> =
                agent.map(|a| ("agent".to_string(), Value::from(a))).into_iter().collect();
            extra.extend(author.map(|a| (crate::provenance::CREATED_BY.to_string(), Value::from(a))));
            for group in summary_groups(&owned) {
                let text = summary_text(group);
                let id = next_id(Some(last_id))?;
                last_id = id;
                let path = crate::paths::free_path(&index.dir, &text::file_name(id, &text));
                let file = new_memory_file_with(id, &tags, Some("auto_decay"), &text, &extra, now);
                txn.write(&path, file.as_bytes())?;
            }
        }
    }
    for m in victims {
        txn.remove(&index.dir.join(m.file_name))?;
    }
    Ok(())
}

/// Returns the decayed memories by the agent they name, each agent's in their order, the agents in
/// the order they first appear (memories naming no agent are one group, `None`).
fn by_agent<'a>(victims: &[MemoryRef<'a>]) -> Vec<(Option<&'a str>, Vec<MemoryRef<'a>>)> {
    let mut groups: Vec<(Option<&'a str>, Vec<MemoryRef<'a>>)> = Vec::new();
    let mut place: std::collections::HashMap<Option<&'a str>, usize> = std::collections::HashMap::new();
    for m in victims {
        let at = *place.entry(m.agent).or_insert_with(|| {
            groups.push((m.agent, Vec::new()));
            groups.len() - 1
        });
        groups[at].1.push(m.clone());
    }
    groups
}

/// Splits decayed memories into runs whose summary fits in one memory (usually one run).
fn summary_groups<'m, 'a>(victims: &'m [MemoryRef<'a>]) -> Vec<&'m [MemoryRef<'a>]> {
    let mut groups = Vec::new();
    let (mut start, mut size) = (0, 0);
    for (i, m) in victims.iter().enumerate() {
        let line = m.content.len() + m.tags.iter().map(|t| t.len() + 2).sum::<usize>() + 16;
        if i > start && size + line > MAX_TEXT_BYTES {
            groups.push(&victims[start..i]);
            (start, size) = (i, 0);
        }
        size += line;
    }
    if start < victims.len() {
        groups.push(&victims[start..]);
    }
    groups
}

/// Returns co-cli's decay summary: a count line, a blank line, then `- text [tags: a, b]` per
/// memory, oldest first.
pub fn summary_text(victims: &[MemoryRef<'_>]) -> String {
    let mut text = format!("Consolidated {} old memories:\n\n", victims.len());
    for m in victims {
        text.push_str("- ");
        text.push_str(m.content);
        if !m.tags.is_empty() {
            text.push_str(&format!(" [tags: {}]", m.tags.join(", ")));
        }
        text.push('\n');
    }
    text
}
