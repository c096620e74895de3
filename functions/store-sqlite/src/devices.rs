//! What each push subscription's pushes and receipts tell (DECISIONS §18,
//! schema version 13): four columns of `push_subscriptions`, written only
//! here, so a subscription's row and its device's facts go together (a
//! deleted subscription takes its facts along) while the writes stay apart
//! from registration.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, Row, params};

use nurse_call_core::{StoreError, push::Device};

use crate::SqliteStore;
use crate::rows::{precise_at, to_precise};

fn optional_precise(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<DateTime<Utc>>> {
    match row.get::<_, Option<String>>(index)? {
        None => Ok(None),
        Some(_) => precise_at(row, index).map(Some),
    }
}

fn device_from_row(row: &Row<'_>) -> rusqlite::Result<Device> {
    Ok(Device {
        endpoint: row.get(0)?,
        created_at: precise_at(row, 1)?,
        pushed_at: optional_precise(row, 2)?,
        tested_at: optional_precise(row, 3)?,
        received_at: optional_precise(row, 4)?,
        unanswered: row.get(5)?,
    })
}

impl SqliteStore {
    pub(crate) async fn devices_of(&self, staff_id: &str) -> Result<Vec<Device>, StoreError> {
        let staff_id = staff_id.to_string();
        self.read(move |c: &Connection| {
            c.prepare_cached(
                "SELECT endpoint, created_at, pushed_at, tested_at, received_at, unanswered
                 FROM push_subscriptions WHERE staff_id = ?1 ORDER BY created_at, endpoint",
            )?
            .query_map(params![staff_id], device_from_row)?
            .collect()
        })
        .await
    }

    pub(crate) async fn device_pushed(
        &self,
        staff_id: &str,
        endpoint: &str,
        at: DateTime<Utc>,
        test: bool,
    ) -> Result<bool, StoreError> {
        let (staff_id, endpoint) = (staff_id.to_string(), endpoint.to_string());
        self.with(move |c| {
            Ok(c.execute(
                "UPDATE push_subscriptions SET pushed_at = ?3,
                   tested_at = CASE WHEN ?4 THEN ?3 ELSE tested_at END,
                   unanswered = unanswered + 1
                 WHERE staff_id = ?1 AND endpoint = ?2",
                params![staff_id, endpoint, to_precise(at), test],
            )? > 0)
        })
        .await
    }

    pub(crate) async fn device_received(
        &self,
        staff_id: &str,
        endpoint: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let (staff_id, endpoint) = (staff_id.to_string(), endpoint.to_string());
        self.with(move |c| {
            Ok(c.execute(
                "UPDATE push_subscriptions SET received_at = ?3, unanswered = 0
                 WHERE staff_id = ?1 AND endpoint = ?2
                   AND (unanswered > 0 OR received_at IS NULL)",
                params![staff_id, endpoint, to_precise(at)],
            )? > 0)
        })
        .await
    }
}
