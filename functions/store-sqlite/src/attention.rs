//! What `element.attention` last announced per element (schema version 9),
//! moved in one transaction with the event that announces news
//! (`domain::webhooks::attention`).

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

use nurse_call_core::webhooks::AttentionChange;

use crate::outbox_write::keep;
use crate::rows::{texts_at, texts_json};

/// Every element's mark: address → reasons.
pub(crate) fn marks(c: &Connection) -> rusqlite::Result<HashMap<String, Vec<String>>> {
    c.prepare_cached("SELECT address, reasons FROM element_attention")?
        .query_map([], |row| Ok((row.get(0)?, texts_at(row, 1)?)))?
        .collect()
}

/// Moves one mark and keeps its event, when the mark is still what the
/// sweep read (`false` and nothing written otherwise). The caller's job is
/// one transaction.
pub(crate) fn mark(c: &Connection, change: &AttentionChange) -> rusqlite::Result<bool> {
    let stored: Option<String> = c
        .prepare_cached("SELECT reasons FROM element_attention WHERE address = ?1")?
        .query_row(params![change.address], |row| row.get(0))
        .optional()?;
    let expected = change.before.as_deref().map(texts_json);
    if stored != expected {
        return Ok(false);
    }
    c.prepare_cached(
        "INSERT INTO element_attention (address, reasons) VALUES (?1, ?2)
         ON CONFLICT (address) DO UPDATE SET reasons = excluded.reasons",
    )?
    .execute(params![change.address, texts_json(&change.after)])?;
    if let Some(event) = &change.event {
        keep(c, std::slice::from_ref(event))?;
    }
    Ok(true)
}
