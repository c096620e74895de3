//! The admin operations ([`AdminStore`]) on DynamoDB, on the items of
//! docs/data-model.md: consumers and call types in their own tables, elements
//! as `<scope>#<address>` / `element` items of the data table, listed through
//! the `by_scope` index.

use std::collections::BTreeSet;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, TransactWriteItem, Update};
use chrono::{DateTime, Utc};

use nurse_call_core::{
    AdminStore, Call, CallType, Consumer, Display, Element, ElementChange, Erased, Scope,
    SecretsReplaced, Store, StoreError, listed, wire_time::to_stored,
};

use crate::alarm_items::is_staff_item;
use crate::credentials_gone::{CredentialGone, Holder};
use crate::elements::ElementUpdate;
use crate::error::{build_error, classify, condition_failed, existed};
use crate::item::{
    CALL_SK, ELEMENT_SK, Item, OPEN_PREFIX, address_pk, call_from_item, call_pk, call_type_item,
    consumer_from_item, display_from_item, display_item, display_key, get_n, get_s, id_key,
    is_display_item, list_pk, n, open_index_pk, s,
};
use crate::tables::BY_SCOPE_INDEX;
use crate::transaction::{Transaction, condition_failed_at};
use crate::{DynamoStore, mismatches};

#[async_trait]
impl AdminStore for DynamoStore {
    async fn seed_call_types(&self, call_types: &[CallType]) -> Result<(), StoreError> {
        for call_type in call_types {
            let result = self
                .client
                .put_item()
                .table_name(&self.tables.call_types)
                .set_item(Some(call_type_item(call_type)))
                .condition_expression("attribute_not_exists(#name)")
                .expression_attribute_names("#name", "name")
                .send()
                .await;
            match result {
                Ok(_) => {}
                // Already there, maybe edited by an admin: keep it.
                Err(error)
                    if error
                        .as_service_error()
                        .is_some_and(|e| e.is_conditional_check_failed_exception()) => {}
                Err(error) => return Err(classify(error)),
            }
        }
        Ok(())
    }

    async fn register_element(
        &self,
        scope: &Scope,
        address: &str,
        code: &str,
        name: &str,
        at: DateTime<Utc>,
    ) -> Result<Element, StoreError> {
        let change = ElementChange {
            address: address.to_string(),
            battery: None,
            position: None,
            reachable: None,
            at,
        };
        self.update_element(ElementUpdate::registration(scope, &change, code, name))
            .await?
            .ok_or_else(|| StoreError::Internal("registering an element failed".into()))
    }

    /// A closed call's item carries `ttl` = its close plus the retention
    /// (set by `close_calls`); DynamoDB deletes it after that, by itself.
    async fn purge_closed_calls(&self, _closed_before: DateTime<Utc>) -> Result<u64, StoreError> {
        Ok(0)
    }

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
            .filter(|item| !is_display_item(item) && !is_staff_item(item))
            .map(|item| listed(consumer_from_item(item)))
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
            Err(error) if condition_failed!(error) => Ok(match self.stored_consumer(id).await? {
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

    async fn set_heartbeat(
        &self,
        id: &str,
        seconds: Option<i64>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.set_link_heartbeat(id, seconds, now).await
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

    /// Finds the address's items, then deletes them in batches of 25:
    /// - its partition `<scope>#<address>` (element, open-call locks), one
    ///   consistent `Query`;
    /// - its call items `call#<id>`: the ids of the locks, and the scope's
    ///   calls in `by_scope` (`<scope>#call`) filtered on `address`. That
    ///   `Query` reads (and is billed for) every call of the scope, and the
    ///   index lags a moment: a call closed within the last second may be
    ///   missed, which a second run finds;
    /// - each call's alarm audit (`call#<id>` / `audit#…`): one consistent
    ///   `Query` of keys per call;
    /// - its hash mismatches: the scope's `mismatch#<scope>` partition (at
    ///   most 10 items), filtered by [`HashMismatch::names_address`].
    ///
    /// The element goes first, so that in production requests for the
    /// address are refused from then on and no new call appears meanwhile.
    ///
    /// [`HashMismatch::names_address`]: nurse_call_core::HashMismatch::names_address
    async fn erase_address(&self, scope: &Scope, address: &str) -> Result<Erased, StoreError> {
        let pk = address_pk(scope, address);
        let mut erased = Erased::default();
        let mut address_keys = Vec::new();
        let mut call_ids = BTreeSet::new();
        for item in self.query_partition(&pk).await? {
            let Some(sk) = get_s(&item, "sk") else {
                continue;
            };
            if sk == ELEMENT_SK {
                erased.element = true;
            } else if sk.starts_with(OPEN_PREFIX) {
                erased.open_calls += 1;
                if let Some(id) = get_n::<i64>(&item, "id") {
                    call_ids.insert(id);
                    // The call's entry in the displays' open-call index.
                    address_keys.push((open_index_pk(scope), id_key(id)));
                }
            }
            address_keys.push((pk.clone(), sk));
        }
        call_ids.extend(self.call_ids_of_address(scope, address).await?);
        erased.calls = call_ids.len() as u64;

        let mismatch_pk = mismatches::partition(scope);
        let mut mismatch_keys = Vec::new();
        for item in self.query_partition(&mismatch_pk).await? {
            if mismatches::mismatch_from_item(&item)?.names_address(scope.as_str(), address)
                && let Some(sk) = get_s(&item, "sk")
            {
                mismatch_keys.push((mismatch_pk.clone(), sk));
            }
        }
        erased.mismatches = mismatch_keys.len() as u64;

        // The element first (its sort key already sorts before `open#…`;
        // this keeps it so whatever the keys are called).
        address_keys.sort_by_key(|(_, sk)| sk.as_str() != ELEMENT_SK);
        // Each call with its alarm's audit (one `Query` of its partition).
        let mut call_keys = Vec::new();
        for id in &call_ids {
            call_keys.push((call_pk(*id), CALL_SK.to_string()));
            call_keys.extend(self.audit_keys(*id).await?);
        }
        let keys: Vec<(String, String)> = address_keys
            .into_iter()
            .chain(call_keys)
            .chain(mismatch_keys)
            .collect();
        self.delete_keys(keys, "running the erase again is safe")
            .await?;
        Ok(erased)
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
            .map(|item| listed(display_from_item(item)))
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
        // Its open live connections are closed (§20).
        let gone = self.credential_gone_put(CredentialGone {
            scope: Scope::installation(),
            holder: Holder::Display(old.id.clone()),
        })?;
        self.client
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().put(put).build())
            .transact_items(TransactWriteItem::builder().delete(delete).build())
            .transact_items(gone)
            .send()
            .await
            .map_err(classify)?;
        Ok(true)
    }

    async fn revoke_display(&self, id: &str) -> Result<bool, StoreError> {
        let Some(display) = self.displays().await?.into_iter().find(|d| d.id == id) else {
            return Ok(false);
        };
        let revoke = Update::builder()
            .table_name(&self.tables.consumers)
            .key("id", s(display_key(&display.token_hash)))
            .update_expression("SET revoked = :revoked")
            .expression_attribute_values(":revoked", AttributeValue::Bool(true))
            .condition_expression("attribute_exists(id)")
            .build()
            .map_err(build_error)?;
        // Its open live connections are closed (§20), in the same write.
        let gone = self.credential_gone_put(CredentialGone {
            scope: Scope::installation(),
            holder: Holder::Display(display.id.clone()),
        })?;
        let items = vec![TransactWriteItem::builder().update(revoke).build(), gone];
        match self.transact(items).await? {
            Transaction::Committed => Ok(true),
            // Rotated away meanwhile: no display holds that token now.
            Transaction::Cancelled(reasons) if condition_failed_at(&reasons, 0) => Ok(false),
            Transaction::Cancelled(reasons) => Err(StoreError::Unavailable(format!(
                "revoking the display was cancelled: {reasons:?}"
            ))),
        }
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
        if from >= to {
            return Ok(Vec::new());
        }
        let mut calls = self
            .client
            .query()
            .table_name(&self.tables.data)
            .index_name(BY_SCOPE_INDEX)
            .key_condition_expression("list_pk = :list_pk AND list_sk BETWEEN :from AND :to")
            .expression_attribute_values(":list_pk", s(list_pk(scope, "call")))
            .expression_attribute_values(":from", s(to_stored(from)))
            .expression_attribute_values(":to", s(to_stored(to)))
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(classify)?
            .iter()
            .map(call_from_item)
            .collect::<Result<Vec<_>, _>>()?;
        // The index orders by opened_at, then the id's 16 digits; sorting
        // again costs nothing and does not rely on the key's spelling.
        calls.sort_by(|a, b| a.opened_at.cmp(&b.opened_at).then(a.id.cmp(&b.id)));
        Ok(calls)
    }
}

impl DynamoStore {
    /// The ids of the scope's call items on `address`, from the `by_scope`
    /// index (every call of the scope is read; see `erase_address`).
    async fn call_ids_of_address(
        &self,
        scope: &Scope,
        address: &str,
    ) -> Result<Vec<i64>, StoreError> {
        let items: Vec<Item> = self
            .client
            .query()
            .table_name(&self.tables.data)
            .index_name(BY_SCOPE_INDEX)
            .key_condition_expression("list_pk = :list_pk")
            .filter_expression("#address = :address")
            .expression_attribute_names("#address", "address")
            .expression_attribute_values(":list_pk", s(list_pk(scope, "call")))
            .expression_attribute_values(":address", s(address))
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(classify)?;
        Ok(items
            .iter()
            .filter_map(|item| get_n::<i64>(item, "id"))
            .collect())
    }
}
