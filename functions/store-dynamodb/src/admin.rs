//! The admin operations ([`AdminStore`]) on DynamoDB, on the items of
//! docs/data-model.md: consumers and call types in their own tables, elements
//! as `<scope>#<address>` / `element` items of the data table, listed through
//! the `by_scope` index.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};

use nurse_call_core::admin::{AdminStore, SecretsReplaced};
use nurse_call_core::model::{Call, CallType, Consumer, Element, Scope};
use nurse_call_core::store::{Store, StoreError};
use nurse_call_core::wire_time::to_stored;

use crate::DynamoStore;
use crate::error::classify;
use crate::item::*;
use crate::tables::BY_SCOPE_INDEX;

/// Whether an SDK error is a failed condition (the item was not as expected).
macro_rules! condition_failed {
    ($error:expr) => {
        $error
            .as_service_error()
            .is_some_and(|e| e.is_conditional_check_failed_exception())
    };
}

/// The answer of a write conditioned on `attribute_exists(…)`: whether the
/// item was there (and so written), or the store's failure. A macro because
/// each operation has its own error type, each with its own
/// `is_conditional_check_failed_exception`.
macro_rules! existed {
    ($result:expr) => {
        match $result {
            Ok(_) => Ok(true),
            Err(error) if condition_failed!(error) => Ok(false),
            Err(error) => Err(classify(error)),
        }
    };
}

#[async_trait]
impl AdminStore for DynamoStore {
    async fn check(&self) -> Result<(), StoreError> {
        let tables = self.tables();
        for table in [&tables.call_types, &tables.consumers, &tables.data] {
            match self.client.describe_table().table_name(table).send().await {
                Ok(_) => {}
                Err(error)
                    if error
                        .as_service_error()
                        .is_some_and(|e| e.is_resource_not_found_exception()) =>
                {
                    return Err(StoreError::Internal(format!(
                        "table {table:?} does not exist (check TABLE_PREFIX or \
                         CALL_TYPES_TABLE / CONSUMERS_TABLE / DATA_TABLE)"
                    )));
                }
                Err(error) => return Err(classify(error)),
            }
        }
        Ok(())
    }

    async fn consumers(&self) -> Result<Vec<Consumer>, StoreError> {
        let mut consumers = self
            .scan_table(&self.tables.consumers)
            .await?
            .iter()
            .map(consumer_from_item)
            .collect::<Result<Vec<_>, _>>()?;
        consumers.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(consumers)
    }

    async fn replace_secrets(
        &self,
        id: &str,
        expected: &[String],
        secrets: &[String],
    ) -> Result<SecretsReplaced, StoreError> {
        // "Still the expected secrets": the same number, each of them present.
        // `contains` and `size` work on a list and on a string set alike (an
        // admin may have typed a set in the console).
        let mut condition = "attribute_exists(id) AND size(secrets) = :count".to_string();
        let mut update = self
            .client
            .update_item()
            .table_name(&self.tables.consumers)
            .key("id", s(id))
            .update_expression("SET secrets = :secrets")
            .expression_attribute_values(
                ":secrets",
                AttributeValue::L(secrets.iter().map(s).collect()),
            )
            .expression_attribute_values(":count", n(expected.len()));
        for (i, secret) in expected.iter().enumerate() {
            condition.push_str(&format!(" AND contains(secrets, :expected{i})"));
            update = update.expression_attribute_values(format!(":expected{i}"), s(secret));
        }
        match update.condition_expression(condition).send().await {
            Ok(_) => Ok(SecretsReplaced::Replaced),
            Err(error) if condition_failed!(error) => Ok(match self.consumer(id).await? {
                None => SecretsReplaced::UnknownConsumer,
                Some(_) => SecretsReplaced::Changed,
            }),
            Err(error) => Err(classify(error)),
        }
    }

    async fn set_require_signed_time(&self, id: &str, required: bool) -> Result<bool, StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.tables.consumers)
            .key("id", s(id))
            .update_expression("SET require_signed_time = :required")
            .expression_attribute_values(":required", AttributeValue::Bool(required))
            .condition_expression("attribute_exists(id)")
            .send()
            .await;
        existed!(result)
    }

    async fn delete_consumer(&self, id: &str) -> Result<bool, StoreError> {
        // A sandbox consumer's data expires by TTL; nothing else to remove.
        let result = self
            .client
            .delete_item()
            .table_name(&self.tables.consumers)
            .key("id", s(id))
            .condition_expression("attribute_exists(id)")
            .send()
            .await;
        existed!(result)
    }

    /// From the `by_scope` index, which is eventually consistent: an element
    /// registered a moment ago may be missing for a second in AWS.
    async fn elements(&self, scope: &Scope) -> Result<Vec<Element>, StoreError> {
        let mut elements = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.tables.data)
                .index_name(BY_SCOPE_INDEX)
                .key_condition_expression("list_pk = :list_pk")
                .expression_attribute_values(":list_pk", s(list_pk(scope, "element")))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            for item in page.items.unwrap_or_default() {
                elements.push(element_from_item(&item)?);
            }
            start = page.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        elements.sort_by(|a, b| a.address.cmp(&b.address));
        Ok(elements)
    }

    async fn remove_element(&self, scope: &Scope, address: &str) -> Result<bool, StoreError> {
        let result = self
            .client
            .delete_item()
            .table_name(&self.tables.data)
            .key("pk", s(address_pk(scope, address)))
            .key("sk", s(ELEMENT_SK))
            .condition_expression("attribute_exists(pk)")
            .send()
            .await;
        existed!(result)
    }

    async fn put_call_type(&self, call_type: &CallType) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.tables.call_types)
            .set_item(Some(call_type_item(call_type)))
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }

    /// One `Query` per page (up to 1 MB, some 2,500 calls) on the `by_scope`
    /// index: `list_pk = <scope>#call`, `list_sk` from `<from>` to `<to>`. A
    /// call's `list_sk` is `<opened_at>#<id>`, so `BETWEEN <from> AND <to>`
    /// takes a call opened at `from` and leaves out one opened at `to`. The
    /// index is eventually consistent: a call closed a moment ago may still
    /// show open for a second in AWS, which a report of past days does not mind.
    async fn calls_opened_between(
        &self,
        scope: &Scope,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<Call>, StoreError> {
        let mut calls = Vec::new();
        if from >= to {
            return Ok(calls);
        }
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.tables.data)
                .index_name(BY_SCOPE_INDEX)
                .key_condition_expression("list_pk = :list_pk AND list_sk BETWEEN :from AND :to")
                .expression_attribute_values(":list_pk", s(list_pk(scope, "call")))
                .expression_attribute_values(":from", s(to_stored(from)))
                .expression_attribute_values(":to", s(to_stored(to)))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            for item in page.items.unwrap_or_default() {
                calls.push(call_from_item(&item)?);
            }
            start = page.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        // The index orders by opened_at, then the id's 16 digits; sorting
        // again costs nothing and does not rely on the key's spelling.
        calls.sort_by(|a, b| a.opened_at.cmp(&b.opened_at).then(a.id.cmp(&b.id)));
        Ok(calls)
    }
}
