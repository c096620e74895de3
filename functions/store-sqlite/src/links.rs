//! The supervised links (DECISIONS §19, [`LinkStore`]) in SQLite (schema
//! version 15): the interval on the consumer's row, its last sign of life
//! and silence in `consumer_links`, the silences' history in `silences`.
//! Times are whole seconds (`to_stored`), as the wire shows them.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use nurse_call_core::{
    LinkStore, StoreError, credentials,
    links::{Link, Silence, SilenceRecord},
    wire_time::{from_stored, to_stored},
};

use crate::SqliteStore;
use crate::rows::raw;

/// A consumer's link as kept: its name, interval (`None`: not
/// supervised), last sign of life and silence.
struct Kept {
    name: String,
    heartbeat_seconds: Option<i64>,
    last_seen_at: DateTime<Utc>,
    silence: Option<Silence>,
}

/// The columns [`kept_from_row`] reads; a consumer whose link row is
/// missing (an interval set by hand) was last seen when it was created:
/// when in doubt, it is silent.
const KEPT: &str = "c.name, c.heartbeat_seconds,
     COALESCE(l.last_seen_at, c.created_at), l.silence_since, l.silence_detected_at,
     l.silence_alerts, l.silence_last_alert_at
     FROM consumers c LEFT JOIN consumer_links l ON l.consumer = c.id";

fn time_at(row: &Row<'_>, index: usize) -> rusqlite::Result<DateTime<Utc>> {
    let text: String = row.get(index)?;
    from_stored(&text).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            index,
            rusqlite::types::Type::Text,
            format!("not an RFC 3339 instant: {text:?}").into(),
        )
    })
}

fn optional_time_at(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<DateTime<Utc>>> {
    match row.get::<_, Option<String>>(index)? {
        None => Ok(None),
        Some(_) => time_at(row, index).map(Some),
    }
}

/// The [`KEPT`] columns of `row`, from column `first` on.
fn kept_from_row(row: &Row<'_>, first: usize) -> rusqlite::Result<Kept> {
    let silence = match optional_time_at(row, first + 3)? {
        None => None,
        Some(since) => Some(Silence {
            since,
            detected_at: optional_time_at(row, first + 4)?.unwrap_or(since),
            alerts: row.get::<_, Option<i64>>(first + 5)?.unwrap_or(0),
            last_alert_at: optional_time_at(row, first + 6)?,
        }),
    };
    Ok(Kept {
        name: row.get(first)?,
        heartbeat_seconds: credentials::heartbeat(&raw(row.get_ref(first + 1)?)),
        last_seen_at: time_at(row, first + 2)?,
        silence,
    })
}

fn kept(c: &Connection, consumer: &str) -> rusqlite::Result<Option<Kept>> {
    c.prepare_cached(&format!("SELECT {KEPT} WHERE c.id = ?1"))?
        .query_row(params![consumer], |row| kept_from_row(row, 0))
        .optional()
}

/// Ends `consumer`'s silence since `since` in the history at `at`.
fn end_silence(
    c: &Connection,
    consumer: &str,
    since: DateTime<Utc>,
    at: DateTime<Utc>,
) -> rusqlite::Result<()> {
    c.prepare_cached(
        "UPDATE silences SET ended_at = ?3
         WHERE consumer = ?1 AND since = ?2 AND ended_at IS NULL",
    )?
    .execute(params![consumer, to_stored(since), to_stored(at)])?;
    Ok(())
}

/// Sets the interval of consumer `id` (see `AdminStore::set_heartbeat`).
pub(crate) fn set_heartbeat(
    c: &Connection,
    id: &str,
    seconds: Option<i64>,
    now: DateTime<Utc>,
) -> rusqlite::Result<bool> {
    let Some(before) = kept(c, id)? else {
        return Ok(false);
    };
    c.execute(
        "UPDATE consumers SET heartbeat_seconds = ?2 WHERE id = ?1",
        params![id, seconds],
    )?;
    match seconds {
        Some(_) => {
            c.execute(
                "INSERT INTO consumer_links (consumer, last_seen_at) VALUES (?1, ?2)
                 ON CONFLICT (consumer) DO NOTHING",
                params![id, to_stored(now)],
            )?;
        }
        None => {
            if let Some(silence) = before.silence {
                end_silence(c, id, silence.since, now)?;
            }
            c.execute(
                "DELETE FROM consumer_links WHERE consumer = ?1",
                params![id],
            )?;
        }
    }
    Ok(true)
}

#[async_trait]
impl LinkStore for SqliteStore {
    async fn links(&self) -> Result<Vec<Link>, StoreError> {
        self.read(|c| {
            let mut statement = c.prepare_cached(&format!(
                "SELECT c.id, {KEPT} WHERE c.heartbeat_seconds IS NOT NULL ORDER BY c.id"
            ))?;
            let rows = statement.query_map([], |row| {
                Ok((row.get::<_, String>(0)?, kept_from_row(row, 1)?))
            })?;
            let mut links = Vec::new();
            for row in rows {
                let (consumer, kept) = row?;
                if let Some(heartbeat_seconds) = kept.heartbeat_seconds {
                    links.push(Link {
                        consumer,
                        name: kept.name,
                        heartbeat_seconds,
                        last_seen_at: kept.last_seen_at,
                        silence: kept.silence,
                    });
                }
            }
            Ok(links)
        })
        .await
    }

    async fn sign_of_life(
        &self,
        consumer: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<Silence>, StoreError> {
        let consumer = consumer.to_string();
        self.with(move |c| {
            let Some(kept) = kept(c, &consumer)? else {
                return Ok(None);
            };
            if kept.heartbeat_seconds.is_none() {
                return Ok(None);
            }
            c.prepare_cached(
                "INSERT INTO consumer_links (consumer, last_seen_at) VALUES (?1, ?2)
                 ON CONFLICT (consumer) DO UPDATE SET
                     last_seen_at = max(last_seen_at, excluded.last_seen_at),
                     silence_since = NULL, silence_detected_at = NULL,
                     silence_alerts = NULL, silence_last_alert_at = NULL",
            )?
            .execute(params![consumer, to_stored(at)])?;
            if let Some(silence) = &kept.silence {
                end_silence(c, &consumer, silence.since, at)?;
            }
            Ok(kept.silence)
        })
        .await
    }

    async fn mark_silent(
        &self,
        consumer: &str,
        seen: DateTime<Utc>,
        silence: &Silence,
    ) -> Result<bool, StoreError> {
        let consumer = consumer.to_string();
        let silence = silence.clone();
        self.with(move |c| {
            let Some(kept) = kept(c, &consumer)? else {
                return Ok(false);
            };
            if kept.heartbeat_seconds.is_none()
                || kept.silence.is_some()
                || kept.last_seen_at != seen
            {
                return Ok(false);
            }
            c.execute(
                "INSERT INTO consumer_links (consumer, last_seen_at, silence_since,
                     silence_detected_at, silence_alerts, silence_last_alert_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (consumer) DO UPDATE SET
                     silence_since = excluded.silence_since,
                     silence_detected_at = excluded.silence_detected_at,
                     silence_alerts = excluded.silence_alerts,
                     silence_last_alert_at = excluded.silence_last_alert_at",
                params![
                    consumer,
                    to_stored(seen),
                    to_stored(silence.since),
                    to_stored(silence.detected_at),
                    silence.alerts,
                    silence.last_alert_at.map(to_stored),
                ],
            )?;
            c.execute(
                "INSERT INTO silences (consumer, name, since, ended_at) VALUES (?1, ?2, ?3, NULL)
                 ON CONFLICT (consumer, since) DO UPDATE SET ended_at = NULL, name = excluded.name",
                params![consumer, kept.name, to_stored(silence.since)],
            )?;
            Ok(true)
        })
        .await
    }

    async fn mark_silence_alerted(
        &self,
        consumer: &str,
        alerts: i64,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let consumer = consumer.to_string();
        self.with(move |c| {
            let changed = c.execute(
                "UPDATE consumer_links SET silence_alerts = ?2, silence_last_alert_at = ?3
                 WHERE consumer = ?1 AND silence_since IS NOT NULL
                   AND COALESCE(silence_alerts, 0) = ?2 - 1",
                params![consumer, alerts, to_stored(at)],
            )?;
            Ok(changed > 0)
        })
        .await
    }

    async fn silences(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<SilenceRecord>, StoreError> {
        self.read(move |c| {
            let mut statement = c.prepare_cached(
                "SELECT consumer, name, since, ended_at FROM silences
                 WHERE since < ?2 AND (ended_at IS NULL OR ended_at > ?1)
                 ORDER BY since, consumer",
            )?;
            statement
                .query_map(params![to_stored(from), to_stored(to)], |row| {
                    Ok(SilenceRecord {
                        consumer: row.get(0)?,
                        name: row.get(1)?,
                        since: time_at(row, 2)?,
                        ended_at: optional_time_at(row, 3)?,
                    })
                })?
                .collect()
        })
        .await
    }
}
