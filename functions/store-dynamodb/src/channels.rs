//! Who of a scope can be reached at all (DECISIONS §18: a person without a
//! push subscription, an open staff page or a device is not reached at
//! once). Each channel is an item in the scope's roster partition
//! (`staff#<scope>`, beside the staff's roster entries), so the one
//! consistent `Query` that reads the roster reads the channels too:
//!
//! - `channel#push#<staff id>#<endpoint hash>`: a push subscription (written
//!   and deleted with it, [`crate::push`]);
//! - `channel#page#<connection id>`: a staff page connected to the
//!   WebSocket API (written by `$connect`, deleted by `$disconnect`, and
//!   ignored from its `ttl` on, API Gateway's 2 h connection limit and a
//!   margin: a `$disconnect` that never came leaves a page counted open for
//!   at most that long, and then the person's receipt deadline still tells
//!   whether an alert reached them).
//!
//! Staff ids are UUIDs: no roster entry's sort key starts with `channel#`.

use chrono::{DateTime, Utc};

use nurse_call_core::{Scope, StoreError};

use crate::DynamoStore;
use crate::alarm_items::roster_pk;
use crate::error::classify;
use crate::item::{Item, get_s, n, s};

/// What every channel item's sort key starts with.
const CHANNEL_PREFIX: &str = "channel#";

/// The sort key of a push subscription's channel item.
pub(crate) fn push_channel_sk(staff_id: &str, endpoint_hash: &str) -> String {
    format!("{CHANNEL_PREFIX}push#{staff_id}#{endpoint_hash}")
}

/// The sort key of an open staff page's channel item.
fn page_channel_sk(connection_id: &str) -> String {
    format!("{CHANNEL_PREFIX}page#{connection_id}")
}

/// A channel item of `staff_id` in `scope`'s roster partition, ignored and
/// expired from `ttl` on (Unix seconds; `None`: kept until deleted).
pub(crate) fn channel_item(scope: &Scope, sk: &str, staff_id: &str, ttl: Option<i64>) -> Item {
    let mut item = Item::from([
        ("pk".to_string(), s(roster_pk(scope))),
        ("sk".to_string(), s(sk)),
        ("staff_id".to_string(), s(staff_id)),
    ]);
    if let Some(ttl) = ttl {
        item.insert("ttl".to_string(), n(ttl));
    }
    item
}

/// Whether an item of a roster partition is a channel item (not a staff
/// member's roster entry).
pub(crate) fn is_channel(item: &Item) -> bool {
    get_s(item, "sk").is_some_and(|sk| sk.starts_with(CHANNEL_PREFIX))
}

/// The staff (ids) with a channel item of `items` still valid at `now`
/// (DynamoDB's TTL deletes late), each once, sorted.
pub(crate) fn staff_with_channel(items: &[Item], now: DateTime<Utc>) -> Vec<String> {
    let mut ids: Vec<String> = items
        .iter()
        .filter(|item| is_channel(item))
        .filter(|item| {
            item.get("ttl")
                .and_then(|ttl| ttl.as_n().ok())
                .and_then(|ttl| ttl.parse::<i64>().ok())
                .is_none_or(|ttl| ttl > now.timestamp())
        })
        .filter_map(|item| get_s(item, "staff_id"))
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

impl DynamoStore {
    /// Records that `staff_id`'s staff page is connected to the WebSocket
    /// API as `connection_id` until `until` at the latest (the `$connect`
    /// route): a channel to them (§18).
    pub async fn page_opened(
        &self,
        scope: &Scope,
        staff_id: &str,
        connection_id: &str,
        until: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let item = channel_item(
            scope,
            &page_channel_sk(connection_id),
            staff_id,
            Some(until.timestamp()),
        );
        self.client
            .put_item()
            .table_name(&self.tables.data)
            .set_item(Some(item))
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }

    /// Forgets the page of `connection_id` (the `$disconnect` route);
    /// nothing if it was no staff page.
    pub async fn page_closed(&self, scope: &Scope, connection_id: &str) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.tables.data)
            .key("pk", s(roster_pk(scope)))
            .key("sk", s(page_channel_sk(connection_id)))
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }
}
