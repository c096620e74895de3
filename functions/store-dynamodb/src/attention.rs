//! What `element.attention` last announced per element (docs/data-model.md
//! "Webhooks"): one item per element under `webhook#attention`, its sort key
//! the address, `reasons` the wire names joined by commas (none has one;
//! `""` once the element is fine again). A mark moves in one
//! transaction with the outbox item of the event that announces news,
//! conditional on the mark the sweep read (`domain::webhooks::attention`).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{Put, TransactWriteItem};

use nurse_call_core::{StoreError, webhooks::AttentionChange};

use crate::DynamoStore;
use crate::error::build_error;
use crate::item::{Item, get_s, required, s};
use crate::transaction::{Transaction, condition_failed_at};

/// The one partition of the marks.
pub(crate) const ATTENTION_PK: &str = "webhook#attention";

fn joined(reasons: &[String]) -> String {
    reasons.join(",")
}

fn split(reasons: &str) -> Vec<String> {
    reasons
        .split(',')
        .filter(|r| !r.is_empty())
        .map(str::to_string)
        .collect()
}

impl DynamoStore {
    /// Every mark: a consistent `Query` of the one partition.
    pub(crate) async fn read_attention_marks(
        &self,
    ) -> Result<HashMap<String, Vec<String>>, StoreError> {
        self.query_partition(ATTENTION_PK)
            .await?
            .iter()
            .map(|item| {
                let address = required(get_s(item, "sk"), "attention mark", "sk")?;
                let reasons = required(get_s(item, "reasons"), "attention mark", "reasons")?;
                Ok((address, split(&reasons)))
            })
            .collect()
    }

    /// One `TransactWriteItems`: the mark, on the condition that it is still
    /// what the sweep read, and the event's outbox item.
    pub(crate) async fn write_attention_mark(
        &self,
        change: &AttentionChange,
    ) -> Result<bool, StoreError> {
        let item = Item::from([
            ("pk".to_string(), s(ATTENTION_PK)),
            ("sk".to_string(), s(&change.address)),
            ("reasons".to_string(), s(joined(&change.after))),
        ]);
        let put = Put::builder()
            .table_name(&self.tables.data)
            .set_item(Some(item));
        let put = match &change.before {
            None => put.condition_expression("attribute_not_exists(pk)"),
            Some(before) => put
                .condition_expression("reasons = :before")
                .expression_attribute_values(":before", s(joined(before))),
        };
        let mut items = vec![
            TransactWriteItem::builder()
                .put(put.build().map_err(build_error)?)
                .build(),
        ];
        if let Some(event) = &change.event {
            items.extend(self.outbox_puts(std::slice::from_ref(event), self.outbox_stamp(), 0)?);
        }
        match self.transact(items).await? {
            Transaction::Committed => Ok(true),
            Transaction::Cancelled(reasons) if condition_failed_at(&reasons, 0) => Ok(false),
            Transaction::Cancelled(reasons) => Err(StoreError::Unavailable(format!(
                "moving the attention mark of {:?} was cancelled: {reasons:?}",
                change.address
            ))),
        }
    }
}
