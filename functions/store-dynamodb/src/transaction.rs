//! Transactions and the races they lose: one `TransactWriteItems`, its
//! cancellation reasons read item by item, and the pause before trying again.

use std::time::Duration;

use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{Put, TransactWriteItem};

use nurse_call_core::StoreError;

use crate::DynamoStore;
use crate::error::{build_error, classify};
use crate::item::Item;

/// How often a transaction that lost a race (conflict, id collision, a call
/// closed meanwhile) is tried again before the request gets a 503.
pub(crate) const TRANSACTION_ATTEMPTS: u32 = 6;

/// The cancellation reason of an item whose condition did not hold.
pub(crate) const CONDITIONAL_CHECK_FAILED: &str = "ConditionalCheckFailed";

pub(crate) enum Transaction {
    Committed,
    /// One reason code per item, in order (`None` for items that were fine).
    Cancelled(Vec<String>),
}

/// Whether the item at `index` of a cancelled transaction failed its condition.
pub(crate) fn condition_failed_at(reasons: &[String], index: usize) -> bool {
    reasons
        .get(index)
        .is_some_and(|reason| reason == CONDITIONAL_CHECK_FAILED)
}

impl DynamoStore {
    /// Sends `items` as one transaction. A cancellation is an answer (the
    /// caller reads its reasons), not an error; anything else is classified.
    pub(crate) async fn transact(
        &self,
        items: Vec<TransactWriteItem>,
    ) -> Result<Transaction, StoreError> {
        match self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await
        {
            Ok(_) => Ok(Transaction::Committed),
            Err(error) => {
                if let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) =
                    error.as_service_error()
                {
                    let reasons = cancelled
                        .cancellation_reasons()
                        .iter()
                        .map(|reason| reason.code().unwrap_or("None").to_string())
                        .collect();
                    return Ok(Transaction::Cancelled(reasons));
                }
                Err(classify(error))
            }
        }
    }
}

/// A transaction item that puts `item` into `table` only where no item has
/// its key yet.
pub(crate) fn put_new(table: &str, item: Item) -> Result<TransactWriteItem, StoreError> {
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .condition_expression("attribute_not_exists(pk)")
        .build()
        .map_err(build_error)?;
    Ok(TransactWriteItem::builder().put(put).build())
}

/// A pause before trying a lost race again: exponential with full jitter
/// (10 ms doubling up to 320 ms), so that racers spread out instead of
/// colliding again.
pub(crate) async fn backoff(attempt: u32) {
    let cap_ms = 10u64 << attempt.saturating_sub(1).min(5);
    let mut random = [0u8; 2];
    let _ = getrandom::fill(&mut random);
    let millis = u64::from(u16::from_le_bytes(random)) % (cap_ms + 1);
    tokio::time::sleep(Duration::from_millis(millis)).await;
}
