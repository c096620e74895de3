//! Outbound webhooks in SQLite (DECISIONS §16): the endpoints, the outbox
//! and the delivery log (schema version 8; an endpoint's `confirms_delivery`:
//! 12, its `private_network`: 14). The writes that put events in
//! the outbox keep them with [`crate::outbox_write::keep`].

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, Row, params, params_from_iter};

use nurse_call_core::{
    Attempt, AttemptEnd, Scope, StoreError, WebhookStore,
    webhooks::{
        AttentionChange, Endpoint, EventType,
        outbox::{Facts, OutboxEvent},
    },
};

use crate::SqliteStore;
use crate::rows::{precise_at, texts_at, texts_json as json, to_precise};

/// Rows per job of the dispatcher's write of a round
/// ([`WebhookStore::log_and_finish`]): small enough that a request's write
/// never waits long behind one.
const ROUND_JOB_ROWS: usize = 8;

fn conversion(index: usize, problem: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, problem.into())
}

const ENDPOINT_COLUMNS: &str = "id, name, url, events, sections, secrets, disabled, created_at, \
     failing_since, confirms_delivery, private_network";

fn endpoint_from_row(row: &Row<'_>) -> rusqlite::Result<Endpoint> {
    let events = texts_at(row, 3)?
        .iter()
        .map(|name| {
            EventType::parse(name)
                .ok_or_else(|| conversion(3, format!("unknown event type {name:?}")))
        })
        .collect::<rusqlite::Result<_>>()?;
    let failing_since: Option<String> = row.get(8)?;
    Ok(Endpoint {
        id: row.get(0)?,
        name: row.get(1)?,
        url: row.get(2)?,
        events,
        sections: texts_at(row, 4)?,
        secrets: texts_at(row, 5)?,
        disabled: row.get(6)?,
        created_at: precise_at(row, 7)?,
        failing_since: match failing_since {
            Some(_) => Some(precise_at(row, 8)?),
            None => None,
        },
        confirms_delivery: row.get(9)?,
        private_network: row.get(10)?,
    })
}

const OUTBOX_COLUMNS: &str = "id, scope, kind, at, call_id, section, facts, seq";

/// A position is `seq`, zero-padded so that text order is its order.
fn position(seq: i64) -> String {
    format!("{seq:020}")
}

fn outbox_from_row(row: &Row<'_>) -> rusqlite::Result<OutboxEvent> {
    let kind: String = row.get(2)?;
    let facts: String = row.get(6)?;
    Ok(OutboxEvent {
        id: row.get(0)?,
        position: position(row.get(7)?),
        scope: Scope::from_key(&row.get::<_, String>(1)?),
        kind: EventType::parse(&kind)
            .ok_or_else(|| conversion(2, format!("unknown event type {kind:?}")))?,
        at: precise_at(row, 3)?,
        call_id: row.get(4)?,
        section: row.get(5)?,
        facts: Facts::from_json(&facts).map_err(|problem| conversion(6, problem))?,
    })
}

const ATTEMPT_COLUMNS: &str = "event_id, endpoint_id, number, event_type, call_id, at, status, \
                               outcome, end_kind, retry_at, reason";

fn attempt_from_row(row: &Row<'_>) -> rusqlite::Result<Attempt> {
    let end_kind: String = row.get(8)?;
    let end = match end_kind.as_str() {
        "delivered" => AttemptEnd::Delivered,
        "retry" => AttemptEnd::RetryAt(precise_at(row, 9)?),
        "given_up" => AttemptEnd::GivenUp(row.get::<_, Option<String>>(10)?.unwrap_or_default()),
        other => return Err(conversion(8, format!("unknown end {other:?}"))),
    };
    Ok(Attempt {
        event_id: row.get(0)?,
        endpoint_id: row.get(1)?,
        number: row.get(2)?,
        event_type: row.get(3)?,
        call_id: row.get(4)?,
        at: precise_at(row, 5)?,
        status: row.get(6)?,
        outcome: row.get(7)?,
        end,
    })
}

fn log(c: &Connection, attempts: &[Attempt]) -> rusqlite::Result<()> {
    let mut insert = c.prepare_cached(&format!(
        "INSERT OR REPLACE INTO webhook_deliveries ({ATTEMPT_COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
    ))?;
    for attempt in attempts {
        let (end_kind, retry_at, reason) = match &attempt.end {
            AttemptEnd::Delivered => ("delivered", None, None),
            AttemptEnd::RetryAt(at) => ("retry", Some(to_precise(*at)), None),
            AttemptEnd::GivenUp(reason) => ("given_up", None, Some(reason.as_str())),
        };
        insert.execute(params![
            attempt.event_id,
            attempt.endpoint_id,
            attempt.number,
            attempt.event_type,
            attempt.call_id,
            to_precise(attempt.at),
            attempt.status,
            attempt.outcome,
            end_kind,
            retry_at,
            reason
        ])?;
    }
    Ok(())
}

/// Deletes the events at these positions from the outbox, by `seq` (its
/// key: no index of the random ids to touch). A position not there, or not
/// one of this store's, is no error.
fn finish(c: &Connection, positions: &[String]) -> rusqlite::Result<()> {
    let mut delete = c.prepare_cached("DELETE FROM webhook_outbox WHERE seq = ?1")?;
    for seq in positions.iter().filter_map(|p| p.parse::<i64>().ok()) {
        delete.execute(params![seq])?;
    }
    Ok(())
}

/// `?, ?, …` for `n` parameters.
fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}

#[async_trait]
impl WebhookStore for SqliteStore {
    async fn create_endpoint(&self, endpoint: &Endpoint) -> Result<(), StoreError> {
        let endpoint = endpoint.clone();
        self.with(move |c| {
            c.execute(
                &format!(
                    "INSERT INTO webhook_endpoints ({ENDPOINT_COLUMNS})
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
                ),
                params![
                    endpoint.id,
                    endpoint.name,
                    endpoint.url,
                    json(&endpoint.event_names()),
                    json(&endpoint.sections),
                    json(&endpoint.secrets),
                    endpoint.disabled,
                    to_precise(endpoint.created_at),
                    endpoint.failing_since.map(to_precise),
                    endpoint.confirms_delivery,
                    endpoint.private_network
                ],
            )?;
            Ok(())
        })
        .await
    }

    async fn endpoints(&self) -> Result<Vec<Endpoint>, StoreError> {
        self.read(|c| {
            c.prepare_cached(&format!(
                "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints ORDER BY created_at, id"
            ))?
            .query_map([], endpoint_from_row)?
            .collect()
        })
        .await
    }

    async fn update_endpoint(&self, endpoint: &Endpoint) -> Result<bool, StoreError> {
        let endpoint = endpoint.clone();
        self.with(move |c| {
            Ok(c.execute(
                "UPDATE webhook_endpoints
                 SET name = ?2, url = ?3, events = ?4, sections = ?5, secrets = ?6, disabled = ?7,
                     confirms_delivery = ?8, private_network = ?9
                 WHERE id = ?1",
                params![
                    endpoint.id,
                    endpoint.name,
                    endpoint.url,
                    json(&endpoint.event_names()),
                    json(&endpoint.sections),
                    json(&endpoint.secrets),
                    endpoint.disabled,
                    endpoint.confirms_delivery,
                    endpoint.private_network
                ],
            )? == 1)
        })
        .await
    }

    async fn set_endpoint_failing(
        &self,
        id: &str,
        since: Option<DateTime<Utc>>,
    ) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.with(move |c| {
            Ok(c.execute(
                "UPDATE webhook_endpoints SET failing_since = ?2 WHERE id = ?1",
                params![id, since.map(to_precise)],
            )? == 1)
        })
        .await
    }

    async fn delete_endpoint(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.with(move |c| {
            Ok(c.execute("DELETE FROM webhook_endpoints WHERE id = ?1", params![id])? == 1)
        })
        .await
    }

    /// `seq` is given at the commit by the one writer, so positions never
    /// commit out of order: no event before `after` is given again.
    async fn outbox_after(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<OutboxEvent>, StoreError> {
        let after: i64 = after.and_then(|a| a.parse().ok()).unwrap_or(0);
        self.read(move |c| {
            c.prepare_cached(&format!(
                "SELECT {OUTBOX_COLUMNS} FROM webhook_outbox WHERE seq > ?1 ORDER BY seq LIMIT ?2"
            ))?
            .query_map(params![after, limit as i64], outbox_from_row)?
            .collect()
        })
        .await
    }

    async fn finish_events(&self, positions: &[String]) -> Result<(), StoreError> {
        if positions.is_empty() {
            return Ok(());
        }
        let positions = positions.to_vec();
        self.with(move |c| finish(c, &positions)).await
    }

    async fn log_attempts(&self, attempts: &[Attempt]) -> Result<(), StoreError> {
        if attempts.is_empty() {
            return Ok(());
        }
        let attempts = attempts.to_vec();
        self.with(move |c| log(c, &attempts)).await
    }

    /// The lines, then the deletes, in jobs of [`ROUND_JOB_ROWS`] rows,
    /// one after the other: a round's write as one job held the one writer
    /// for its whole length (hundreds of rows at saturation), and every
    /// request's write queued behind it (p99 40 ms against 6 without an
    /// endpoint; 13 ms in jobs of 8, docs/performance.md). Lines first: an
    /// event is never finished before its lines are kept; a failure part
    /// way leaves the rest for the dispatcher's next round, and doing a job
    /// again changes nothing (a line replaces itself, a deleted event is
    /// gone).
    async fn log_and_finish(
        &self,
        attempts: &[Attempt],
        finished: &[String],
    ) -> Result<(), StoreError> {
        for lines in attempts.chunks(ROUND_JOB_ROWS) {
            self.log_attempts(lines).await?;
        }
        for positions in finished.chunks(ROUND_JOB_ROWS) {
            self.finish_events(positions).await?;
        }
        Ok(())
    }

    async fn attempts_of(&self, event_ids: &[String]) -> Result<Vec<Attempt>, StoreError> {
        if event_ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = event_ids.to_vec();
        self.read(move |c| {
            let mut found = Vec::new();
            // SQLite's default limit of parameters is 32,766; stay far below.
            for chunk in ids.chunks(500) {
                let mut statement = c.prepare(&format!(
                    "SELECT {ATTEMPT_COLUMNS} FROM webhook_deliveries
                     WHERE event_id IN ({}) ORDER BY at, number",
                    placeholders(chunk.len())
                ))?;
                let rows = statement.query_map(params_from_iter(chunk.iter()), attempt_from_row)?;
                for row in rows {
                    found.push(row?);
                }
            }
            // Each chunk is in order; the whole answer must be too (the
            // contract), also for more than one chunk's ids.
            found.sort_by(|a: &Attempt, b: &Attempt| a.at.cmp(&b.at).then(a.number.cmp(&b.number)));
            Ok(found)
        })
        .await
    }

    async fn deliveries(
        &self,
        since: DateTime<Utc>,
        failed_only: bool,
        limit: usize,
    ) -> Result<Vec<Attempt>, StoreError> {
        self.read(move |c| {
            c.prepare_cached(&format!(
                "SELECT {ATTEMPT_COLUMNS} FROM webhook_deliveries
                 WHERE at >= ?1 AND (?2 = 0 OR end_kind <> 'delivered')
                 ORDER BY at DESC, number DESC LIMIT ?3"
            ))?
            .query_map(
                params![to_precise(since), failed_only, limit as i64],
                attempt_from_row,
            )?
            .collect()
        })
        .await
    }

    async fn prune_deliveries(&self, before: DateTime<Utc>) -> Result<usize, StoreError> {
        self.with(move |c| {
            c.execute(
                "DELETE FROM webhook_deliveries WHERE at < ?1",
                params![to_precise(before)],
            )
        })
        .await
    }

    async fn attention_marks(&self) -> Result<HashMap<String, Vec<String>>, StoreError> {
        self.read(crate::attention::marks).await
    }

    async fn mark_attention(&self, change: &AttentionChange) -> Result<bool, StoreError> {
        let change = change.clone();
        self.with(move |c| crate::attention::mark(c, &change)).await
    }
}
