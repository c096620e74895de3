//! The test server's bookkeeping ([`SandboxStore`], DECISIONS §8) on
//! DynamoDB: visitors in the consumers table, their recent calls and
//! elements from the `by_scope` index, their hash mismatches
//! (`mismatches`). DynamoDB's TTL expires it all by itself.

use async_trait::async_trait;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;
use chrono::{DateTime, Utc};

use nurse_call_core::{Call, Consumer, Element, HashMismatch, SandboxStore, Scope, StoreError};

use crate::DynamoStore;
use crate::error::classify;
use crate::item::{call_from_item, consumer_from_item, consumer_item, element_from_item, list_pk};

#[async_trait]
impl SandboxStore for DynamoStore {
    async fn create_consumer(&self, consumer: &Consumer) -> Result<(), StoreError> {
        let put = self
            .client
            .put_item()
            .table_name(&self.tables.consumers)
            .set_item(Some(consumer_item(consumer)))
            .condition_expression("attribute_not_exists(id)")
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match put {
            Ok(_) => Ok(()),
            // The SDK retries an attempt that timed out; when DynamoDB had
            // applied it after all, the retry finds the item. The same
            // secrets mean it is this consumer (ids and secrets are random:
            // anything else is a collision, which must not be overwritten).
            Err(error)
                if error
                    .as_service_error()
                    .and_then(|e| match e {
                        PutItemError::ConditionalCheckFailedException(failed) => failed.item(),
                        _ => None,
                    })
                    .and_then(|existing| consumer_from_item(existing).usable())
                    .is_some_and(|existing| existing.secrets == consumer.secrets) =>
            {
                tracing::info!(consumer = %consumer.id, "consumer already stored by a retried attempt");
                Ok(())
            }
            Err(error) => Err(classify(error)),
        }
    }

    async fn recent_calls(&self, scope: &Scope, limit: usize) -> Result<Vec<Call>, StoreError> {
        let open = self.query_listing(&list_pk(scope, "open"), limit).await?;
        let all = self.query_listing(&list_pk(scope, "call"), limit).await?;
        let mut calls: Vec<Call> = open.iter().map(call_from_item).collect::<Result<_, _>>()?;
        for item in &all {
            let call = call_from_item(item)?;
            // The index lags a moment behind; the lock list is the open truth.
            if call.closed_at.is_some() && !calls.iter().any(|c| c.id == call.id) {
                calls.push(call);
            }
        }
        calls.sort_by(|a, b| {
            a.closed_at
                .is_some()
                .cmp(&b.closed_at.is_some())
                .then(b.opened_at.cmp(&a.opened_at))
                .then(b.id.cmp(&a.id))
        });
        calls.truncate(limit);
        Ok(calls)
    }

    async fn recent_elements(
        &self,
        scope: &Scope,
        limit: usize,
    ) -> Result<Vec<Element>, StoreError> {
        self.query_listing(&list_pk(scope, "element"), limit)
            .await?
            .iter()
            .map(element_from_item)
            .collect()
    }

    /// DynamoDB's TTL removes expired sandbox items by itself (and the handlers
    /// ignore an expired consumer until it does).
    async fn purge_expired(&self, _now: DateTime<Utc>) -> Result<u64, StoreError> {
        Ok(0)
    }

    async fn record_hash_mismatch(
        &self,
        scope: &Scope,
        mismatch: &HashMismatch,
    ) -> Result<(), StoreError> {
        self.put_hash_mismatch(scope, mismatch).await
    }

    async fn recent_hash_mismatches(
        &self,
        scope: &Scope,
        limit: usize,
    ) -> Result<Vec<HashMismatch>, StoreError> {
        self.query_hash_mismatches(scope, limit).await
    }
}
