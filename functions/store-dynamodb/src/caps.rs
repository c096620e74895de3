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
use crate::item::{get_n, n, s};

/// How often a write under a cap counts again after losing a race: every
/// lost race is another writer's success, so with a cap of 20 a writer
/// sees the set full long before.
pub(crate) const CAP_ATTEMPTS: u32 = 24;

const CAP_SK: &str = "cap";

/// The cap item's key of the set in partition `pk`.
pub(crate) fn cap_pk(pk: &str) -> String {
    format!("cap#{pk}")
}

impl DynamoStore {
    /// The cap's version now (0 while it has no item): read before the set
    /// is counted.
    pub(crate) async fn cap_version(&self, cap: &str) -> Result<u64, StoreError> {
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
    pub(crate) fn cap_step(
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
