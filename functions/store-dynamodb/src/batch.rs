//! `BatchWriteItem` on the data table: 25 requests at a time, in order,
//! what DynamoDB leaves unprocessed sent again (with the transactions'
//! backoff). Not atomic: for erasures, the outbox's finished events and
//! the delivery log, each safe to repeat.

use aws_sdk_dynamodb::types::{DeleteRequest, PutRequest, WriteRequest};

use nurse_call_core::StoreError;

use crate::DynamoStore;
use crate::error::{build_error, classify};
use crate::item::{Item, s};
use crate::transaction::{TRANSACTION_ATTEMPTS, backoff};

/// Most requests one `BatchWriteItem` takes.
const BATCH_WRITE_LIMIT: usize = 25;

impl DynamoStore {
    /// Deletes the data-table items of `keys` (`pk`, `sk`).
    pub(crate) async fn delete_keys(
        &self,
        keys: Vec<(String, String)>,
        repeat_hint: &str,
    ) -> Result<(), StoreError> {
        let requests = keys
            .iter()
            .map(|(pk, sk)| {
                let delete = DeleteRequest::builder()
                    .key("pk", s(pk))
                    .key("sk", s(sk))
                    .build()
                    .map_err(build_error)?;
                Ok(WriteRequest::builder().delete_request(delete).build())
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        self.write_batches(requests, repeat_hint).await
    }

    /// Puts `items` into the data table (whole items, replacing any of the
    /// same key; one request may not hold two of one key).
    pub(crate) async fn put_items(
        &self,
        items: Vec<Item>,
        repeat_hint: &str,
    ) -> Result<(), StoreError> {
        let requests = items
            .into_iter()
            .map(|item| {
                let put = PutRequest::builder()
                    .set_item(Some(item))
                    .build()
                    .map_err(build_error)?;
                Ok(WriteRequest::builder().put_request(put).build())
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        self.write_batches(requests, repeat_hint).await
    }

    /// `requests`, 25 per `BatchWriteItem`; `repeat_hint` tells the caller
    /// what to do when DynamoDB keeps leaving some unprocessed.
    async fn write_batches(
        &self,
        requests: Vec<WriteRequest>,
        repeat_hint: &str,
    ) -> Result<(), StoreError> {
        for chunk in requests.chunks(BATCH_WRITE_LIMIT) {
            let mut pending = chunk.to_vec();
            let mut attempts = 0;
            while !pending.is_empty() {
                attempts += 1;
                if attempts > TRANSACTION_ATTEMPTS {
                    return Err(StoreError::Unavailable(format!(
                        "a batch write left items unprocessed ({repeat_hint})"
                    )));
                }
                let output = self
                    .client
                    .batch_write_item()
                    .request_items(&self.tables.data, std::mem::take(&mut pending))
                    .send()
                    .await
                    .map_err(classify)?;
                if let Some(unprocessed) = output
                    .unprocessed_items
                    .and_then(|mut u| u.remove(&self.tables.data))
                    .filter(|u| !u.is_empty())
                {
                    pending = unprocessed;
                    backoff(attempts).await;
                }
            }
        }
        Ok(())
    }
}
