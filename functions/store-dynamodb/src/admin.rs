//! The admin operations ([`AdminStore`]) on DynamoDB, on the items of
//! docs/data-model.md: consumers and call types in their own tables, elements
//! as `<scope>#<address>` / `element` items of the data table, listed through
//! the `by_scope` index.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, TransactWriteItem};

use nurse_call_core::admin::{AdminStore, SecretsReplaced};
use nurse_call_core::model::{CallType, Consumer, Display, Scope};
use nurse_call_core::store::{Store, StoreError};

use crate::DynamoStore;
use crate::error::{build_error, classify};
use crate::item::*;

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
            .filter(|item| !is_display_item(item))
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

    async fn create_display(&self, display: &Display) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.tables.consumers)
            .set_item(Some(display_item(display)))
            .condition_expression("attribute_not_exists(id)")
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn displays(&self) -> Result<Vec<Display>, StoreError> {
        let mut displays = self
            .scan_table(&self.tables.consumers)
            .await?
            .iter()
            .filter(|item| is_display_item(item))
            .map(display_from_item)
            .collect::<Result<Vec<_>, _>>()?;
        displays.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(displays)
    }

    /// The item is keyed by the token's hash, so a new token is a new item:
    /// the old one is deleted in the same transaction (conditioned on still
    /// holding the old hash, so two admins rotating at once cannot leave two).
    async fn replace_display_token(&self, id: &str, token_hash: &str) -> Result<bool, StoreError> {
        let Some(old) = self.displays().await?.into_iter().find(|d| d.id == id) else {
            return Ok(false);
        };
        let new = Display {
            token_hash: token_hash.to_string(),
            ..old.clone()
        };
        let put = Put::builder()
            .table_name(&self.tables.consumers)
            .set_item(Some(display_item(&new)))
            .condition_expression("attribute_not_exists(id)")
            .build()
            .map_err(build_error)?;
        let delete = Delete::builder()
            .table_name(&self.tables.consumers)
            .key("id", s(display_key(&old.token_hash)))
            .condition_expression("attribute_exists(id)")
            .build()
            .map_err(build_error)?;
        self.client
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().put(put).build())
            .transact_items(TransactWriteItem::builder().delete(delete).build())
            .send()
            .await
            .map_err(classify)?;
        Ok(true)
    }

    async fn revoke_display(&self, id: &str) -> Result<bool, StoreError> {
        let Some(display) = self.displays().await?.into_iter().find(|d| d.id == id) else {
            return Ok(false);
        };
        let result = self
            .client
            .update_item()
            .table_name(&self.tables.consumers)
            .key("id", s(display_key(&display.token_hash)))
            .update_expression("SET revoked = :revoked")
            .expression_attribute_values(":revoked", AttributeValue::Bool(true))
            .condition_expression("attribute_exists(id)")
            .send()
            .await;
        existed!(result)
    }
}
