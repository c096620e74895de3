//! How a write keeps its webhook events in the outbox (DECISIONS §16
//! "Durable"): in the write's own transaction, so that an alarm's audit, a
//! close or an element's attention mark and its events are stored together
//! or not at all. The outbox's reads and the deliveries are in
//! [`crate::webhooks`].

use rusqlite::{Connection, params};

use nurse_call_core::webhooks::outbox::OutboxEvent;

use crate::rows::to_precise;

/// Keeps `events` in the outbox, in the caller's transaction, when at
/// least one endpoint is enabled: without one nobody would ever take them
/// out, and the request path pays one indexed look instead of the inserts.
pub(crate) fn keep(c: &Connection, events: &[OutboxEvent]) -> rusqlite::Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let wanted: bool = c
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE disabled = 0)")?
        .query_row([], |row| row.get(0))?;
    if !wanted {
        return Ok(());
    }
    let mut insert = c.prepare_cached(
        "INSERT INTO webhook_outbox (id, scope, kind, at, call_id, section, facts)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for event in events {
        insert.execute(params![
            event.id,
            event.scope.as_str(),
            event.kind.as_str(),
            to_precise(event.at),
            event.call_id,
            event.section,
            event.facts.to_json()
        ])?;
    }
    Ok(())
}

#[async_trait::async_trait]
impl nurse_call_core::EventOutbox for crate::SqliteStore {
    /// One transaction of the group commit.
    async fn keep_events(&self, events: &[OutboxEvent]) -> Result<(), nurse_call_core::StoreError> {
        let events = events.to_vec();
        self.with(move |c| keep(c, &events)).await
    }
}
