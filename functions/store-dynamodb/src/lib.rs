//! The DynamoDB store: what the Lambda functions persist to in AWS.
//!
//! Three tables (docs/data-model.md): call types and consumers, which admins
//! edit, and one data table holding per address an `element` item and one
//! `open#<event>` lock item per open call, plus one `call#<id>` item per call.
//! The open-call rule and id uniqueness are conditional writes inside one
//! transaction, so concurrent requests can neither duplicate nor half-write.
//!
//! Round trips per API request (warm function, call types and consumers cached
//! by the caller): open 2 (snapshot query, transaction), close 3 (snapshot
//! query, the store's own query of the locks, transaction), element single 1
//! (conditional update returning the item), element multi 2 (transaction,
//! then a consistent batch read for the response).

mod admin;
mod client;
mod error;
pub mod item;
mod mismatches;
pub mod tables;

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, Delete, KeysAndAttributes, Put, ReturnValue,
    ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use chrono::{DateTime, TimeZone, Utc};

use nurse_call_core::config::CallRetention;
use nurse_call_core::domain::model::{
    Call, CallType, Consumer, Display, Element, ElementChange, ElementPolicy, HashMismatch,
    NewCall, Scope,
};
use nurse_call_core::domain::wire_time::to_stored;
use nurse_call_core::store::{
    AddressSnapshot, CloseOutcome, ElementsOutcome, OpenOutcome, SandboxStore, Store, StoreError,
};

pub use client::{MAX_ATTEMPTS, RequestCounter, Timeouts, sdk_config};
use error::build_error;
pub use error::classify;
use item::*;
pub use tables::TableNames;

/// How often a transaction that lost a race (conflict, id collision, a call
/// closed meanwhile) is tried again before the request gets a 503.
const TRANSACTION_ATTEMPTS: u32 = 6;
const CONDITIONAL_CHECK_FAILED: &str = "ConditionalCheckFailed";

#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    tables: TableNames,
    requests: RequestCounter,
    /// A closed call's item expires (TTL) this long after its close.
    call_retention: CallRetention,
}

impl DynamoStore {
    /// A store on `client`; `requests` must be the counter installed in it
    /// (see [`DynamoStore::connect`]).
    pub fn new(client: Client, tables: TableNames, requests: RequestCounter) -> Self {
        DynamoStore {
            client,
            tables,
            requests,
            call_retention: CallRetention::default(),
        }
    }

    /// Closed calls expire (DynamoDB TTL) `call_retention` after their close
    /// (default [`CallRetention::DEFAULT_DAYS`] days).
    pub fn with_call_retention(mut self, call_retention: CallRetention) -> Self {
        self.call_retention = call_retention;
        self
    }

    /// Connects to DynamoDB (or to `endpoint`, e.g. moto) with the project's
    /// retry settings and the timeouts of [`Timeouts::from_env`].
    pub async fn connect(endpoint: Option<&str>, tables: TableNames) -> Self {
        Self::connect_with(endpoint, tables, Timeouts::from_env()).await
    }

    /// [`DynamoStore::connect`] with explicit timeouts.
    pub async fn connect_with(
        endpoint: Option<&str>,
        tables: TableNames,
        timeouts: Timeouts,
    ) -> Self {
        Self::from_sdk_config(&sdk_config(endpoint, timeouts).await, tables)
    }

    /// A store on a configuration made by [`sdk_config`], which other
    /// clients of the same process (another service's) share.
    pub fn from_sdk_config(config: &aws_config::SdkConfig, tables: TableNames) -> Self {
        let requests = RequestCounter::default();
        let client = client::client(config, &requests);
        DynamoStore::new(client, tables, requests)
    }

    /// Operations sent so far (for the round-trip budget).
    pub fn requests_sent(&self) -> u64 {
        self.requests.get()
    }

    pub fn tables(&self) -> &TableNames {
        &self.tables
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Creates missing tables (local endpoints; in AWS the stack owns them).
    pub async fn create_missing_tables(&self) -> Result<Vec<String>, StoreError> {
        tables::create_missing(&self.client, &self.tables).await
    }

    async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<Transaction, StoreError> {
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

    /// Every item of `table` (the small admin tables: call types, consumers).
    async fn scan_table(&self, table: &str) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .scan()
                .table_name(table)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            items.extend(page.items.unwrap_or_default());
            start = page.last_evaluated_key;
            if start.is_none() {
                return Ok(items);
            }
        }
    }

    /// The element and the open calls of an address, oldest first, in one
    /// consistent `Query`.
    async fn read_address(
        &self,
        scope: &Scope,
        address: &str,
    ) -> Result<AddressSnapshot, StoreError> {
        let mut snapshot = AddressSnapshot::default();
        for item in self.query_partition(&address_pk(scope, address)).await? {
            match get_s(&item, "sk").as_deref() {
                Some(ELEMENT_SK) => snapshot.element = Some(element_from_item(&item)?),
                Some(sk) if sk.starts_with(OPEN_PREFIX) => {
                    snapshot.open_calls.push(call_from_item(&item)?);
                }
                _ => {}
            }
        }
        snapshot
            .open_calls
            .sort_by(|a, b| a.opened_at.cmp(&b.opened_at).then(a.id.cmp(&b.id)));
        Ok(snapshot)
    }

    /// Epoch seconds at which a call opened at `opened_at` and closed at
    /// `closed_at` expires: the installation's retention, or a sandbox
    /// item's own expiry (30 days after the open) when that comes first.
    fn closed_call_expiry(
        &self,
        scope: &Scope,
        closed_at: DateTime<Utc>,
        opened_at: DateTime<Utc>,
    ) -> i64 {
        let retention = self.call_retention.expires_at(closed_at).timestamp();
        expiry_for(scope, opened_at).map_or(retention, |ttl| ttl.min(retention))
    }

    /// Every item of a data-table partition, in sort-key order (consistent).
    pub(crate) async fn query_partition(&self, pk: &str) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.tables.data)
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(":pk", s(pk))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            items.extend(page.items.unwrap_or_default());
            start = page.last_evaluated_key;
            if start.is_none() {
                return Ok(items);
            }
        }
    }

    /// Newest first, from the `by_scope` index.
    async fn query_listing(&self, list_pk: &str, limit: usize) -> Result<Vec<Item>, StoreError> {
        // DynamoDB rejects `Limit = 0`.
        if limit == 0 {
            return Ok(Vec::new());
        }
        let page = self
            .client
            .query()
            .table_name(&self.tables.data)
            .index_name(tables::BY_SCOPE_INDEX)
            .key_condition_expression("list_pk = :list_pk")
            .expression_attribute_values(":list_pk", s(list_pk))
            .scan_index_forward(false)
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(classify)?;
        Ok(page.items.unwrap_or_default())
    }

    /// The element change as one update; `None` when nothing is to be written.
    fn element_update(
        &self,
        scope: &Scope,
        change: &ElementChange,
        policy: ElementPolicy,
    ) -> Option<ElementUpdate> {
        // A registered element with nothing sent needs no write; in the sandbox
        // the update also creates a missing element.
        if change.is_empty() && policy == ElementPolicy::MustExist {
            return None;
        }
        Some(ElementUpdate::new(scope, change, policy))
    }

    /// Applies one element change outside a transaction; `Ok(None)` when the
    /// element must exist and does not.
    async fn update_element(&self, update: ElementUpdate) -> Result<Option<Element>, StoreError> {
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

    async fn open_lock(
        &self,
        scope: &Scope,
        address: &str,
        event: &str,
    ) -> Result<Option<Call>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.tables.data)
            .key("pk", s(address_pk(scope, address)))
            .key("sk", s(open_sk(event)))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        output.item.as_ref().map(call_from_item).transpose()
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

enum Transaction {
    Committed,
    /// One reason code per item, in order (`None` for items that were fine).
    Cancelled(Vec<String>),
}

/// An update of an element item: only the fields sent, code and name kept
/// (set to "" when the sandbox creates the element).
struct ElementUpdate {
    pk: String,
    expression: String,
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
    condition: Option<String>,
}

impl ElementUpdate {
    fn new(scope: &Scope, change: &ElementChange, policy: ElementPolicy) -> Self {
        Self::build(scope, change, policy, None)
    }

    /// An admin's registration: sets code and name, keeps the status fields.
    fn registration(scope: &Scope, change: &ElementChange, code: &str, name: &str) -> Self {
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
            names.insert("#ttl".into(), tables::TTL_ATTRIBUTE.into());
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

    fn into_transact_item(self, table: &str) -> Result<TransactWriteItem, StoreError> {
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

/// A call id: milliseconds since 2024 in the high bits, 12 random bits below.
/// Fits 2^53 - 1 until 2093; uniqueness is enforced by a conditional write.
fn new_call_id(now: DateTime<Utc>) -> Result<i64, StoreError> {
    let epoch = Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap();
    let millis = (now - epoch).num_milliseconds().max(0);
    let mut random = [0u8; 2];
    getrandom::fill(&mut random).map_err(|e| StoreError::Internal(e.to_string()))?;
    let low = i64::from(u16::from_le_bytes(random) & 0x0fff);
    let id = (millis << 12) | low;
    if id > (1 << 53) - 1 {
        return Err(StoreError::Internal("call id space exhausted".into()));
    }
    Ok(id.max(1))
}

/// A pause before trying a lost race again: exponential with full jitter
/// (10 ms doubling up to 320 ms), so that racers spread out instead of
/// colliding again.
async fn backoff(attempt: u32) {
    let cap_ms = 10u64 << attempt.saturating_sub(1).min(5);
    let mut random = [0u8; 2];
    let _ = getrandom::fill(&mut random);
    let millis = u64::from(u16::from_le_bytes(random)) % (cap_ms + 1);
    tokio::time::sleep(Duration::from_millis(millis)).await;
}

fn put(table: &str, item: Item) -> Result<TransactWriteItem, StoreError> {
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .condition_expression("attribute_not_exists(pk)")
        .build()
        .map_err(build_error)?;
    Ok(TransactWriteItem::builder().put(put).build())
}

#[async_trait]
impl Store for DynamoStore {
    async fn consumer(&self, id: &str) -> Result<Option<Consumer>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.tables.consumers)
            .key("id", s(id))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        output.item.as_ref().map(consumer_from_item).transpose()
    }

    async fn call_types(&self) -> Result<Vec<CallType>, StoreError> {
        let mut types = self
            .scan_table(&self.tables.call_types)
            .await?
            .iter()
            .map(call_type_from_item)
            .collect::<Result<Vec<_>, _>>()?;
        types.sort_by(|a, b| a.id.cmp(&b.id).then_with(|| a.name.cmp(&b.name)));
        Ok(types)
    }

    async fn snapshot(&self, scope: &Scope, address: &str) -> Result<AddressSnapshot, StoreError> {
        self.read_address(scope, address).await
    }

    async fn open_call(
        &self,
        scope: &Scope,
        call: &NewCall,
        snapshot: &AddressSnapshot,
        element: &ElementChange,
        policy: ElementPolicy,
    ) -> Result<OpenOutcome, StoreError> {
        if let Some(existing) = snapshot.open_call_of(&call.event) {
            // Open at the snapshot: no transaction, only the element (if the
            // request changes it).
            if snapshot.changes_element(element, policy)
                && let Some(update) = self.element_update(scope, element, policy)
                && self.update_element(update).await?.is_none()
            {
                return Ok(OpenOutcome::UnknownElement);
            }
            return Ok(OpenOutcome::AlreadyOpen(existing.clone()));
        }
        for attempt in 1..=TRANSACTION_ATTEMPTS {
            let id = new_call_id(element.at)?;
            let attributes = call_attributes(scope, id, call, element.at);
            let mut lock = attributes.clone();
            lock.insert("pk".into(), s(address_pk(scope, &call.address)));
            lock.insert("sk".into(), s(open_sk(&call.event)));
            lock.insert("list_pk".into(), s(list_pk(scope, "open")));
            let mut index = attributes.clone();
            index.insert("pk".into(), s(open_index_pk(scope)));
            index.insert("sk".into(), s(id_key(id)));
            let mut record = attributes;
            record.insert("pk".into(), s(call_pk(id)));
            record.insert("sk".into(), s(CALL_SK));
            record.insert("list_pk".into(), s(list_pk(scope, "call")));

            // The element update stays third: a failed condition there means
            // the element vanished (see below).
            let mut items = vec![
                put(&self.tables.data, lock)?,
                put(&self.tables.data, record)?,
            ];
            if let Some(update) = self.element_update(scope, element, policy) {
                items.push(update.into_transact_item(&self.tables.data)?);
            }
            items.push(put(&self.tables.data, index)?);
            match self.transact(items).await? {
                Transaction::Committed => {
                    return Ok(OpenOutcome::Opened(call.opened(id)));
                }
                Transaction::Cancelled(reasons) => {
                    let failed = |i: usize| {
                        reasons
                            .get(i)
                            .is_some_and(|r| r == CONDITIONAL_CHECK_FAILED)
                    };
                    if failed(0) {
                        // The event is open already: answer with that call.
                        if let Some(existing) =
                            self.open_lock(scope, &call.address, &call.event).await?
                        {
                            if let Some(update) = self.element_update(scope, element, policy)
                                && self.update_element(update).await?.is_none()
                            {
                                return Ok(OpenOutcome::UnknownElement);
                            }
                            return Ok(OpenOutcome::AlreadyOpen(existing));
                        }
                        // Closed in between: open it again.
                    } else if failed(2) {
                        // The element vanished after the snapshot.
                        return Ok(OpenOutcome::UnknownElement);
                    }
                    // An id collision or a conflicting transaction: try again.
                    tracing::debug!(attempt, ?reasons, "open transaction cancelled, retrying");
                    backoff(attempt).await;
                }
            }
        }
        Err(StoreError::Unavailable(
            "opening the call kept conflicting".into(),
        ))
    }

    async fn close_calls(
        &self,
        scope: &Scope,
        address: &str,
        snapshot: &AddressSnapshot,
        closed_at: DateTime<Utc>,
        closed_by: Option<&str>,
        element: &ElementChange,
        policy: ElementPolicy,
    ) -> Result<CloseOutcome, StoreError> {
        let (close_expression, closed_by_value) = match closed_by {
            Some(consumer) => (
                "SET closed_at = :closed_at, closed_by = :closed_by, #ttl = :ttl",
                Some(s(consumer)),
            ),
            None => ("SET closed_at = :closed_at, #ttl = :ttl", None),
        };
        // The snapshot's calls name each lock's event and record, so the
        // first attempt needs no read of its own (2 round trips in all). A
        // snapshot that is not one address's (two calls of one event) is
        // read again instead: a transaction may touch each lock only once.
        let requested: Vec<i64> = snapshot.closable(closed_at).map(|call| call.id).collect();
        let mut closing: Vec<Call> = snapshot.closable(closed_at).cloned().collect();
        let events: std::collections::HashSet<&str> =
            closing.iter().map(|call| call.event.as_str()).collect();
        let read_first = events.len() != closing.len();
        for attempt in 1..=TRANSACTION_ATTEMPTS {
            if attempt > 1 || read_first {
                // Another close got some of them first: read again, close the rest.
                closing = self
                    .read_address(scope, address)
                    .await?
                    .open_calls
                    .into_iter()
                    .filter(|call| requested.contains(&call.id))
                    .collect();
            }
            let element_update = self.element_update(scope, element, policy);
            if closing.is_empty() {
                if let Some(update) = element_update
                    && self.update_element(update).await?.is_none()
                {
                    return Ok(CloseOutcome::UnknownElement);
                }
                return Ok(CloseOutcome::Closed(Vec::new()));
            }
            let element_index = closing.len() * 3;
            let mut items = Vec::with_capacity(closing.len() * 3 + 1);
            for call in &closing {
                // From its close on, the call counts down to its deletion
                // (TTL): the installation's retention (docs/security.md).
                let mut close = Update::builder()
                    .table_name(&self.tables.data)
                    .key("pk", s(call_pk(call.id)))
                    .key("sk", s(CALL_SK))
                    .update_expression(close_expression)
                    .condition_expression(
                        "attribute_exists(pk) AND attribute_not_exists(closed_at)",
                    )
                    .expression_attribute_names("#ttl", tables::TTL_ATTRIBUTE)
                    .expression_attribute_values(":closed_at", s(to_stored(closed_at)))
                    .expression_attribute_values(
                        ":ttl",
                        n(self.closed_call_expiry(scope, closed_at, call.opened_at)),
                    );
                if let Some(value) = &closed_by_value {
                    close = close.expression_attribute_values(":closed_by", value.clone());
                }
                let close = close.build().map_err(build_error)?;
                items.push(TransactWriteItem::builder().update(close).build());
                let unlock = Delete::builder()
                    .table_name(&self.tables.data)
                    .key("pk", s(address_pk(scope, address)))
                    .key("sk", s(open_sk(&call.event)))
                    .condition_expression("id = :id")
                    .expression_attribute_values(":id", n(call.id))
                    .build()
                    .map_err(build_error)?;
                items.push(TransactWriteItem::builder().delete(unlock).build());
                let unindex = Delete::builder()
                    .table_name(&self.tables.data)
                    .key("pk", s(open_index_pk(scope)))
                    .key("sk", s(id_key(call.id)))
                    .build()
                    .map_err(build_error)?;
                items.push(TransactWriteItem::builder().delete(unindex).build());
            }
            if let Some(update) = element_update {
                items.push(update.into_transact_item(&self.tables.data)?);
            }
            match self.transact(items).await? {
                Transaction::Committed => {
                    return Ok(CloseOutcome::Closed(
                        closing
                            .into_iter()
                            .map(|call| Call {
                                closed_at: Some(closed_at),
                                closed_by: closed_by.map(str::to_string),
                                ..call
                            })
                            .collect(),
                    ));
                }
                Transaction::Cancelled(reasons) => {
                    if reasons
                        .get(element_index)
                        .is_some_and(|r| r == CONDITIONAL_CHECK_FAILED)
                    {
                        // The element vanished after the snapshot.
                        return Ok(CloseOutcome::UnknownElement);
                    }
                    tracing::debug!(attempt, ?reasons, "close transaction cancelled, retrying");
                    backoff(attempt).await;
                }
            }
        }
        Err(StoreError::Unavailable(
            "closing the calls kept conflicting".into(),
        ))
    }

    async fn update_elements(
        &self,
        scope: &Scope,
        changes: &[ElementChange],
        policy: ElementPolicy,
    ) -> Result<ElementsOutcome, StoreError> {
        if let [change] = changes {
            let update = ElementUpdate::new(scope, change, policy);
            return Ok(match self.update_element(update).await? {
                Some(element) => ElementsOutcome::Updated(vec![element]),
                None => ElementsOutcome::Unknown(vec![change.address.clone()]),
            });
        }
        // The multi form writes every change in one transaction (all or
        // nothing; an unregistered address fails its condition), then reads
        // the elements back for the response.
        for attempt in 1..=TRANSACTION_ATTEMPTS {
            let items = changes
                .iter()
                .map(|change| {
                    ElementUpdate::new(scope, change, policy).into_transact_item(&self.tables.data)
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

    /// One consistent Query of the scope's open-call index (paged at 1 MB,
    /// some 2,000 open calls).
    async fn open_calls(&self, scope: &Scope) -> Result<Vec<Call>, StoreError> {
        self.query_partition(&open_index_pk(scope))
            .await?
            .iter()
            .map(call_from_item)
            .collect()
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
                .index_name(tables::BY_SCOPE_INDEX)
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

    /// One consistent `GetItem`: the item is keyed by the token's hash.
    async fn display_by_token_hash(&self, token_hash: &str) -> Result<Option<Display>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.tables.consumers)
            .key("id", s(display_key(token_hash)))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        output.item.as_ref().map(display_from_item).transpose()
    }
}

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
                    .and_then(|existing| consumer_from_item(existing).ok())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_ids_fit_javascript_numbers_until_2093() {
        let late = Utc.with_ymd_and_hms(2093, 1, 1, 0, 0, 0).unwrap();
        let id = new_call_id(late).unwrap();
        assert!(id > 0 && id < (1 << 53));
        let now = new_call_id(Utc::now()).unwrap();
        assert!(now < id);
    }
}
