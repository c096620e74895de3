//! Hash mismatches of sandbox consumers (the test page's explanations), as
//! items of the data table (docs/data-model.md):
//!
//! | `pk` | `sk` | attributes |
//! |---|---|---|
//! | `mismatch#<scope>` | `<at>#<recorded, ns since 1970, 20 digits>` | `scope`, `at`, `string`, `expected`, `provided`, `ttl` (a day after `at`) |
//!
//! The partition key starts with `mismatch#`, which no scope does, so it can
//! never meet an address partition (`<scope>#<address>`, any address) or a
//! call (`call#<id>`). Recording puts the item, then reads the partition's keys
//! and deletes all but the newest [`HashMismatch::KEPT`]: 2 requests, 3 once
//! the partition is full. Reading is one consistent `Query`.

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Duration, Utc};

use nurse_call_core::{
    HashMismatch, Scope, StoreError,
    wire_time::{from_stored, to_stored},
};

use crate::DynamoStore;
use crate::error::classify;
use crate::item::{Item, get_s, n, s};
use crate::tables::TTL_ATTRIBUTE;

pub(crate) fn partition(scope: &Scope) -> String {
    format!("mismatch#{}", scope.as_str())
}

/// Newest last in text order: the time of the request, then when it was
/// recorded (so that mismatches within one second keep their order).
fn sort_key(at: DateTime<Utc>) -> String {
    let recorded = Utc::now().timestamp_nanos_opt().unwrap_or(0).max(0);
    format!("{}#{recorded:020}", to_stored(at))
}

fn expiry(at: DateTime<Utc>) -> i64 {
    (at + Duration::hours(HashMismatch::LIFETIME_HOURS)).timestamp()
}

pub(crate) fn mismatch_from_item(item: &Item) -> Result<HashMismatch, StoreError> {
    let field = |key: &str| {
        get_s(item, key)
            .ok_or_else(|| StoreError::Internal(format!("stored mismatch has no usable {key:?}")))
    };
    Ok(HashMismatch {
        string: field("string")?,
        expected: field("expected")?,
        provided: field("provided")?,
        at: from_stored(&field("at")?)
            .ok_or_else(|| StoreError::Internal("stored mismatch has no usable \"at\"".into()))?,
    })
}

impl DynamoStore {
    pub(crate) async fn put_hash_mismatch(
        &self,
        scope: &Scope,
        mismatch: &HashMismatch,
    ) -> Result<(), StoreError> {
        let pk = partition(scope);
        let item = Item::from([
            ("pk".to_string(), s(&pk)),
            ("sk".to_string(), s(sort_key(mismatch.at))),
            ("scope".to_string(), s(scope.as_str())),
            ("at".to_string(), s(to_stored(mismatch.at))),
            ("string".to_string(), s(&mismatch.string)),
            ("expected".to_string(), s(&mismatch.expected)),
            ("provided".to_string(), s(&mismatch.provided)),
            (TTL_ATTRIBUTE.to_string(), n(expiry(mismatch.at))),
        ]);
        self.client
            .put_item()
            .table_name(&self.tables.data)
            .set_item(Some(item))
            .send()
            .await
            .map_err(classify)?;
        // Keep the newest: every key past them goes (a concurrent recorder may
        // delete the same ones; a delete of a missing item is no error).
        for stale in self
            .mismatch_keys(&pk)
            .await?
            .into_iter()
            .skip(HashMismatch::KEPT)
        {
            self.client
                .delete_item()
                .table_name(&self.tables.data)
                .key("pk", s(&pk))
                .key("sk", stale)
                .send()
                .await
                .map_err(classify)?;
        }
        Ok(())
    }

    /// The sort keys of a mismatch partition, newest first.
    async fn mismatch_keys(&self, pk: &str) -> Result<Vec<AttributeValue>, StoreError> {
        let mut items = self.query_partition(pk).await?;
        items.reverse();
        Ok(items
            .into_iter()
            .filter_map(|mut item| item.remove("sk"))
            .collect())
    }

    pub(crate) async fn query_hash_mismatches(
        &self,
        scope: &Scope,
        limit: usize,
    ) -> Result<Vec<HashMismatch>, StoreError> {
        let limit = limit.min(HashMismatch::KEPT);
        // DynamoDB rejects `Limit = 0`.
        if limit == 0 {
            return Ok(Vec::new());
        }
        let page = self
            .client
            .query()
            .table_name(&self.tables.data)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(partition(scope)))
            .scan_index_forward(false)
            .consistent_read(true)
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(classify)?;
        page.items
            .unwrap_or_default()
            .iter()
            .map(mismatch_from_item)
            .collect()
    }
}
