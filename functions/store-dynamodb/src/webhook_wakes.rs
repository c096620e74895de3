//! Webhook wake-ups in AWS (DECISIONS §17): where no process polls, the
//! `forward` function that must try a webhook delivery again later puts a
//! wake-up item due then; its stream record reaches the `alarm` function,
//! which keeps every timer (an SQS message delayed to the item's `due`).
//! So the function that delivers needs no queue client of its own.
//!
//! One item per wake-up (`webhook#wake` / `<due, to the nanosecond>#<random>`,
//! an `INSERT` each, never overwritten), gone by TTL a day after it was due.

use chrono::{DateTime, Duration, Utc};

use nurse_call_core::StoreError;

use crate::DynamoStore;
use crate::alarm_items::{from_precise, precise};
use crate::error::classify;
use crate::item::{Item, get_s, n, s};

/// The wake-ups' partition.
pub const WAKE_PK: &str = "webhook#wake";

/// How long a wake-up item is kept after its time (its stream record is
/// what counts; the item itself is read by nobody).
const KEPT_AFTER_DUE: Duration = Duration::days(1);

impl DynamoStore {
    /// Puts a webhook wake-up due at `due` (one `PutItem`).
    pub async fn schedule_webhook_wake(&self, due: DateTime<Utc>) -> Result<(), StoreError> {
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).map_err(|e| StoreError::Internal(e.to_string()))?;
        let tie_breaker: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let item = Item::from([
            ("pk".to_string(), s(WAKE_PK)),
            (
                "sk".to_string(),
                s(format!("{}#{tie_breaker}", precise(due))),
            ),
            ("due".to_string(), s(precise(due))),
            ("ttl".to_string(), n((due + KEPT_AFTER_DUE).timestamp())),
        ]);
        self.client
            .put_item()
            .table_name(&self.tables.data)
            .set_item(Some(item))
            .send()
            .await
            .map(|_| ())
            .map_err(classify)
    }
}

/// When a wake-up item is due (`None` for an item that is none).
pub fn wake_due(item: &Item) -> Option<DateTime<Utc>> {
    get_s(item, "due").and_then(|due| from_precise(&due))
}
