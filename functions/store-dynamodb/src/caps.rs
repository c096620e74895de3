//! Caps counted inside the write (DECISIONS §20: 10 devices a person, 20
//! staff a sandbox visitor): DynamoDB has no count in a condition, so each
//! capped set has a *cap item* (`cap#<set's partition>` / `cap`) whose
//! `version` grows by one with every write that adds to the set. A writer
//! reads the version, then counts the set (a consistent `Query`), and adds
//! only in a transaction that moves the version on from what it read: a
//! writer that added meanwhile makes that condition fail, and the loser
//! counts again. Removals leave the version alone (a removal never takes a
//! set past its cap), so nothing that deletes a subscription or a staff
//! member (a push service's 410, revoke, rotate, TTL) needs to know of it,
//! and no counter can drift from what is stored.

use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

use nurse_call_core::StoreError;

use crate::DynamoStore;
use crate::error::{build_error, classify};
use crate::item::{Item, get_n, n, s};
use crate::transaction::{Transaction, backoff};

/// How often a write under a cap counts again after losing a race: every
/// lost race is another writer's success, so with a cap of 20 a writer
/// sees the set full long before.
const CAP_ATTEMPTS: u32 = 24;

const CAP_SK: &str = "cap";

/// The cap item's key of the set in partition `pk`.
fn cap_pk(pk: &str) -> String {
    format!("cap#{pk}")
}

/// What a writer under a cap found when it counted the set: how many it
/// holds, and whether the item to write is one of them already (a
/// renewal: written without stepping the cap).
pub(crate) struct Counted {
    pub(crate) count: usize,
    pub(crate) renewal: bool,
}

impl DynamoStore {
    /// Writes `items(renewal)` unless the set in partition `set` holds
    /// `limit` and the write is no renewal: reads the cap's version, counts
    /// the set's items with `count` (one consistent `Query`), then sends the
    /// items in one transaction, with the cap stepped on from the version
    /// read for a new item (`ttl` the set's). A cancelled transaction (a
    /// writer that added meanwhile, or a renewal whose item went) counts
    /// again. `None`: full, nothing written; else whether it was a renewal.
    /// One function for both caps (each monomorphised copy costs the
    /// Lambda zips' budget).
    pub(crate) async fn write_under_cap(
        &self,
        set: &str,
        limit: usize,
        ttl: Option<i64>,
        count: &(dyn Fn(&[Item]) -> Counted + Send + Sync),
        items: &(dyn Fn(bool) -> Result<Vec<TransactWriteItem>, StoreError> + Send + Sync),
    ) -> Result<Option<bool>, StoreError> {
        let cap = cap_pk(set);
        for attempt in 1..=CAP_ATTEMPTS {
            let seen = self.cap_version(&cap).await?;
            let counted = count(&self.query_partition(set).await?);
            if !counted.renewal && counted.count >= limit {
                return Ok(None);
            }
            let mut writes = items(counted.renewal)?;
            if !counted.renewal {
                writes.push(self.cap_step(&cap, seen, ttl)?);
            }
            match self.transact(writes).await? {
                Transaction::Committed => return Ok(Some(counted.renewal)),
                Transaction::Cancelled(reasons) => {
                    tracing::debug!(
                        attempt,
                        set,
                        ?reasons,
                        "a write under a cap lost a race; counting again"
                    );
                    backoff(attempt).await;
                }
            }
        }
        Err(StoreError::Unavailable(format!(
            "not written under the cap of {set}: too many writers at once"
        )))
    }

    /// The cap's version now (0 while it has no item): read before the set
    /// is counted.
    async fn cap_version(&self, cap: &str) -> Result<u64, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.tables.data)
            .key("pk", s(cap))
            .key("sk", s(CAP_SK))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        Ok(output
            .item
            .as_ref()
            .and_then(|item| get_n(item, "version"))
            .unwrap_or(0))
    }

    /// The transaction item that moves the cap on from `seen`, only where
    /// it still is at `seen`; `ttl` as the set's items (sandbox).
    fn cap_step(
        &self,
        cap: &str,
        seen: u64,
        ttl: Option<i64>,
    ) -> Result<TransactWriteItem, StoreError> {
        let update = Update::builder()
            .table_name(&self.tables.data)
            .key("pk", s(cap))
            .key("sk", s(CAP_SK))
            .expression_attribute_names("#v", "version")
            .expression_attribute_values(":next", n(seen + 1))
            .condition_expression(if seen == 0 {
                "attribute_not_exists(#v)"
            } else {
                "#v = :seen"
            });
        let update = if seen == 0 {
            update
        } else {
            update.expression_attribute_values(":seen", n(seen))
        };
        let update = match ttl {
            Some(ttl) => update
                .update_expression("SET #v = :next, #t = :ttl")
                .expression_attribute_names("#t", "ttl")
                .expression_attribute_values(":ttl", n(ttl)),
            None => update.update_expression("SET #v = :next"),
        };
        Ok(TransactWriteItem::builder()
            .update(update.build().map_err(build_error)?)
            .build())
    }
}
