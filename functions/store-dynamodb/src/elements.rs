//! Element writes: one builder for every update of an element item (a
//! request's status fields, a sandbox address seen first, an admin's
//! registration), sent alone or as an item of a transaction; the element
//! request's batches; and the consistent batch read that answers them.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{
    AttributeValue, KeysAndAttributes, ReturnValue, TransactWriteItem, Update,
};

use nurse_call_core::{
    Element, ElementBatch, ElementChange, ElementPolicy, ElementWrite, ElementsOutcome, Scope,
    StoreError, wire_time::to_stored,
};

use crate::DynamoStore;
use crate::error::{build_error, classify};
use crate::item::{
    ELEMENT_SK, Item, address_pk, element_from_item, expiry_for, list_pk, list_sk, n, s,
};
use crate::tables::TTL_ATTRIBUTE;
use crate::transaction::{CONDITIONAL_CHECK_FAILED, TRANSACTION_ATTEMPTS, Transaction, backoff};

impl DynamoStore {
    /// [`nurse_call_core::Store::update_elements`]: a single change is one
    /// conditional update returning the item; several are one transaction
    /// (all or nothing; an unregistered address fails its condition), then
    /// one consistent batch read for the response.
    pub(crate) async fn update(&self, batch: &ElementBatch) -> Result<ElementsOutcome, StoreError> {
        let (scope, changes, policy) = (&batch.scope, &batch.changes, batch.policy);
        if let [change] = changes.as_slice() {
            let update = ElementUpdate::of_change(scope, change, policy);
            return Ok(match self.update_element(update).await? {
                Some(element) => ElementsOutcome::Updated(vec![element]),
                None => ElementsOutcome::Unknown(vec![change.address.clone()]),
            });
        }
        for attempt in 1..=TRANSACTION_ATTEMPTS {
            let items = changes
                .iter()
                .map(|change| {
                    ElementUpdate::of_change(scope, change, policy)
                        .into_transact_item(&self.tables.data)
                })
                .collect::<Result<Vec<_>, _>>()?;
            match self.transact(items).await? {
                Transaction::Committed => {
                    let addresses: Vec<String> =
                        changes.iter().map(|c| c.address.clone()).collect();
                    let mut found = self.read_elements(scope, &addresses).await?;
                    let elements = addresses
                        .iter()
                        .map(|address| {
                            found.remove(address).ok_or_else(|| {
                                StoreError::Internal(format!(
                                    "element {address:?} vanished after its update"
                                ))
                            })
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    return Ok(ElementsOutcome::Updated(elements));
                }
                Transaction::Cancelled(reasons) => {
                    let unknown: Vec<String> = changes
                        .iter()
                        .zip(&reasons)
                        .filter(|(_, reason)| *reason == CONDITIONAL_CHECK_FAILED)
                        .map(|(change, _)| change.address.clone())
                        .collect();
                    if !unknown.is_empty() {
                        return Ok(ElementsOutcome::Unknown(unknown));
                    }
                    tracing::debug!(attempt, ?reasons, "element transaction cancelled, retrying");
                    backoff(attempt).await;
                }
            }
        }
        Err(StoreError::Unavailable(
            "updating the elements kept conflicting".into(),
        ))
    }

    /// Applies one element change outside a transaction; `Ok(None)` when the
    /// element must exist and does not.
    pub(crate) async fn update_element(
        &self,
        update: ElementUpdate,
    ) -> Result<Option<Element>, StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.tables.data)
            .key("pk", s(&update.pk))
            .key("sk", s(ELEMENT_SK))
            .update_expression(update.expression)
            .set_expression_attribute_names(Some(update.names))
            .set_expression_attribute_values(Some(update.values))
            .set_condition_expression(update.condition)
            .return_values(ReturnValue::AllNew)
            .send()
            .await;
        match result {
            Ok(output) => element_from_item(&output.attributes.unwrap_or_default()).map(Some),
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(None)
            }
            Err(error) => Err(classify(error)),
        }
    }

    /// Consistent reads of the elements of `addresses` that exist.
    async fn read_elements(
        &self,
        scope: &Scope,
        addresses: &[String],
    ) -> Result<HashMap<String, Element>, StoreError> {
        let mut found = HashMap::new();
        let mut keys: Vec<Item> = addresses
            .iter()
            .map(|address| {
                Item::from([
                    ("pk".to_string(), s(address_pk(scope, address))),
                    ("sk".to_string(), s(ELEMENT_SK)),
                ])
            })
            .collect();
        let mut attempts = 0;
        while !keys.is_empty() {
            attempts += 1;
            if attempts > TRANSACTION_ATTEMPTS {
                return Err(StoreError::Unavailable(
                    "batch read left keys unprocessed".into(),
                ));
            }
            let request = KeysAndAttributes::builder()
                .set_keys(Some(std::mem::take(&mut keys)))
                .consistent_read(true)
                .build()
                .map_err(build_error)?;
            let output = self
                .client
                .batch_get_item()
                .request_items(&self.tables.data, request)
                .send()
                .await
                .map_err(classify)?;
            for item in output
                .responses
                .and_then(|mut r| r.remove(&self.tables.data))
                .unwrap_or_default()
            {
                let element = element_from_item(&item)?;
                found.insert(element.address.clone(), element);
            }
            if let Some(unprocessed) = output
                .unprocessed_keys
                .and_then(|mut u| u.remove(&self.tables.data))
            {
                keys = unprocessed.keys;
                backoff(attempts).await;
            }
        }
        Ok(found)
    }
}

/// An update of an element item: only the fields sent, code and name kept
/// (set to "" when the sandbox creates the element).
pub(crate) struct ElementUpdate {
    pk: String,
    expression: String,
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
    condition: Option<String>,
}

impl ElementUpdate {
    /// A request's write of its element.
    pub(crate) fn new(write: &ElementWrite) -> Self {
        Self::of_change(&write.scope, &write.change, write.policy)
    }

    /// One change of an element batch (or of a request).
    pub(crate) fn of_change(scope: &Scope, change: &ElementChange, policy: ElementPolicy) -> Self {
        Self::build(scope, change, policy, None)
    }

    /// An admin's registration: sets code and name, keeps the status fields.
    pub(crate) fn registration(
        scope: &Scope,
        change: &ElementChange,
        code: &str,
        name: &str,
    ) -> Self {
        Self::build(
            scope,
            change,
            ElementPolicy::CreateMissing,
            Some((code, name)),
        )
    }

    fn build(
        scope: &Scope,
        change: &ElementChange,
        policy: ElementPolicy,
        registration: Option<(&str, &str)>,
    ) -> Self {
        let mut sets = vec![
            "#scope = :scope",
            "#address = :address",
            "#list_pk = :list_pk",
        ];
        let mut names: HashMap<String, String> = [
            "scope",
            "address",
            "code",
            "name",
            "list_pk",
            "list_sk",
            "updated_at",
        ]
        .into_iter()
        .map(|n| (format!("#{n}"), n.to_string()))
        .collect();
        let mut values = HashMap::from([
            (":scope".to_string(), s(scope.as_str())),
            (":address".to_string(), s(&change.address)),
            (":list_pk".to_string(), s(list_pk(scope, "element"))),
            (
                ":list_sk".to_string(),
                s(list_sk(change.at, &change.address)),
            ),
            (":now".to_string(), s(to_stored(change.at))),
        ]);
        match registration {
            Some((code, name)) => {
                sets.push("#code = :code");
                sets.push("#name = :name");
                values.insert(":code".into(), s(code));
                values.insert(":name".into(), s(name));
            }
            None => {
                sets.push("#code = if_not_exists(#code, :empty)");
                sets.push("#name = if_not_exists(#name, :empty)");
                values.insert(":empty".into(), s(""));
            }
        }
        if change.is_empty() {
            sets.push("#updated_at = if_not_exists(#updated_at, :now)");
            sets.push("#list_sk = if_not_exists(#list_sk, :list_sk)");
        } else {
            sets.push("#updated_at = :now");
            sets.push("#list_sk = :list_sk");
        }
        if let Some(battery) = change.battery {
            sets.push("#battery = :battery");
            names.insert("#battery".into(), "battery".into());
            values.insert(":battery".into(), n(battery));
        }
        if let Some(position) = &change.position {
            sets.push("#position = :position");
            names.insert("#position".into(), "position".into());
            values.insert(":position".into(), s(position));
        }
        if let Some(reachable) = change.reachable {
            sets.push("#reachable = :reachable");
            names.insert("#reachable".into(), "reachable".into());
            values.insert(":reachable".into(), AttributeValue::Bool(reachable));
        }
        if let Some(ttl) = expiry_for(scope, change.at) {
            sets.push("#ttl = :ttl");
            names.insert("#ttl".into(), TTL_ATTRIBUTE.into());
            values.insert(":ttl".into(), n(ttl));
        }
        // A change is a new version for displays (DECISIONS §11); ADD starts
        // a missing attribute at the value. An empty change (a sandbox
        // address seen first) creates version 1 and bumps nothing.
        names.insert("#version".into(), "version".into());
        values.insert(":one".into(), n(1));
        let version = if change.is_empty() && registration.is_none() {
            sets.push("#version = if_not_exists(#version, :one)");
            ""
        } else {
            " ADD #version :one"
        };
        ElementUpdate {
            pk: address_pk(scope, &change.address),
            expression: format!("SET {}{version}", sets.join(", ")),
            names,
            values,
            condition: (policy == ElementPolicy::MustExist)
                .then(|| "attribute_exists(pk)".to_string()),
        }
    }

    pub(crate) fn into_transact_item(self, table: &str) -> Result<TransactWriteItem, StoreError> {
        let update = Update::builder()
            .table_name(table)
            .key("pk", s(self.pk))
            .key("sk", s(ELEMENT_SK))
            .update_expression(self.expression)
            .set_expression_attribute_names(Some(self.names))
            .set_expression_attribute_values(Some(self.values))
            .set_condition_expression(self.condition)
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }
}
