//! The DynamoDB store: what the Lambda functions persist to in AWS.
//!
//! Three tables (docs/data-model.md): call types and consumers, which admins
//! edit, and one data table holding per address an `element` item and one
//! `open#<event>` lock item per open call, plus one `call#<id>` item per call
//! with its alarm (and its audit), the staff and duties of alarm routing,
//! and the webhook endpoints, outbox and delivery log.
//! The open-call rule, id uniqueness and the alarm's version are conditional
//! writes inside one transaction, so concurrent requests can neither
//! duplicate nor half-write.
//!
//! Round trips per API request (warm function, call types and consumers cached
//! by the caller): open 2 (snapshot query, transaction), close 2 (snapshot
//! query, transaction), element single 1 (conditional update returning the
//! item), element multi 2 (transaction, then a consistent batch read for the
//! response); each alarm operation 1 (`alarms`).
//!
//! One file per concern: this one maps the [`Store`] trait onto them;
//! `reads` (tables, partitions, snapshots, listings), `calls` (open and
//! close), `elements` (every element update, batches), `transaction` (one
//! transaction, its cancellation reasons, the backoff), `sandbox` and
//! `mismatches` (the test server), `admin` (the admin command), `alarms`
//! (each call's alarm, its audit, the due index), `staff` (staff members and
//! duties), `item` and `alarm_items` (the items' keys and attributes),
//! `tables` (their names and creation),
//! `webhooks` and `webhook_items` (outbound webhooks: endpoints, the outbox
//! that `alarms` and `calls` write in their transactions, the delivery
//! log), `push`, `devices` and `device_tests` (Web Push: the subscriptions,
//! what their pushes and receipts tell, the sign-on tests handed to the
//! `alarm` function), `batch` (`BatchWriteItem`),
//! `client` and `error` (the SDK's setup and its failures).

mod admin;
pub mod alarm_items;
mod alarms;
mod attention;
mod batch;
mod calls;
mod caps;
mod channels;
mod client;
pub mod credentials_gone;
pub mod device_tests;
mod devices;
mod elements;
mod error;
mod event_outbox;
pub mod item;
mod links;
/// The silences' history items (DECISIONS §19), as the AWS broadcast reads them from the stream.
pub use links::{SILENCE_PK, silence_from_item};
mod mismatches;
mod push;
mod reads;
mod sandbox;
mod staff;
pub mod tables;
mod transaction;
mod webhook_gate;
pub mod webhook_items;
pub mod webhook_wakes;
mod webhooks;

pub use webhook_gate::SEEN_WITHIN as WEBHOOK_ENDPOINTS_SEEN_WITHIN;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;

use chrono::{DateTime, Utc};
use nurse_call_core::{
    AddressSnapshot, Call, CallRetention, CallTypeItem, CloseOutcome, Consumer, Display, Element,
    ElementBatch, ElementWrite, ElementsOutcome, NewCall, OpenOutcome, Scope, Store, StoreError,
    credentials::Stored, env_value,
};

pub use client::{INITIAL_BACKOFF, MAX_ATTEMPTS, RequestCounter, Timeouts, sdk_config};
pub use error::classify;
use item::{
    call_from_item, call_type_from_item, consumer_from_item, display_from_item, display_key,
    element_from_item, list_pk, open_index_pk, s,
};
pub use tables::TableNames;

/// The store on DynamoDB: every store trait of core (the request path's, the
/// sandbox's, alarms', pushes', webhooks', the admin command's) on the three
/// tables, through one SDK client.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    tables: TableNames,
    requests: RequestCounter,
    /// A closed call's item expires (TTL) this long after its close.
    call_retention: CallRetention,
    /// Whether writes keep webhook events now (`webhook_gate`).
    webhook_gate: std::sync::Arc<webhook_gate::WebhookGate>,
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
            webhook_gate: std::sync::Arc::default(),
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

    /// What a Lambda function builds at its cold start from the stack's
    /// environment: the SDK configuration (`DYNAMODB_ENDPOINT`, moto in
    /// tests; the timeouts' variables), which its other clients (SQS, KMS)
    /// share, and the store on the table variables' tables; logged.
    pub async fn from_env() -> (aws_config::SdkConfig, Self) {
        let endpoint = env_value("DYNAMODB_ENDPOINT");
        let config = sdk_config(endpoint.as_deref(), Timeouts::from_env()).await;
        let store = Self::from_sdk_config(&config, TableNames::from_env());
        tracing::info!(endpoint = ?endpoint, tables = ?store.tables(), "using DynamoDB");
        (config, store)
    }

    /// Operations sent so far (for the round-trip budget).
    pub fn requests_sent(&self) -> u64 {
        self.requests.get()
    }

    /// The names of its tables (logged at start; tests and benches reach the
    /// items with them).
    pub fn tables(&self) -> &TableNames {
        &self.tables
    }

    /// Its SDK client, for the process's other DynamoDB work (the live feed's
    /// connections table) on the same connection pool.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The tables that do not exist, by name, creating none: the admin
    /// command refuses to work on a store that is not there.
    pub async fn missing_tables(&self) -> Result<Vec<String>, StoreError> {
        let mut missing = Vec::new();
        for table in [
            &self.tables.call_types,
            &self.tables.consumers,
            &self.tables.data,
        ] {
            if !tables::exists(&self.client, table).await? {
                missing.push(table.clone());
            }
        }
        Ok(missing)
    }

    /// Creates missing tables (local endpoints; in AWS the stack owns them).
    pub async fn create_missing_tables(&self) -> Result<Vec<String>, StoreError> {
        tables::create_missing(&self.client, &self.tables).await
    }
}

#[async_trait]
impl Store for DynamoStore {
    /// One consistent `GetItem`.
    async fn stored_consumer(&self, id: &str) -> Result<Option<Stored<Consumer>>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.tables.consumers)
            .key("id", s(id))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        Ok(output.item.as_ref().map(consumer_from_item))
    }

    /// A consistent `Scan` of the call-types table.
    async fn call_type_items(&self) -> Result<Vec<CallTypeItem>, StoreError> {
        Ok(self
            .scan_table(&self.tables.call_types)
            .await?
            .iter()
            .map(call_type_from_item)
            .collect())
    }

    async fn snapshot(&self, scope: &Scope, address: &str) -> Result<AddressSnapshot, StoreError> {
        self.read_address(scope, address).await
    }

    async fn open_call(
        &self,
        call: &NewCall,
        snapshot: &AddressSnapshot,
        element: &ElementWrite,
    ) -> Result<OpenOutcome, StoreError> {
        self.open(call, snapshot, element).await
    }

    async fn close_calls(
        &self,
        snapshot: &AddressSnapshot,
        closed_at: DateTime<Utc>,
        closed_by: Option<&str>,
        element: &ElementWrite,
    ) -> Result<CloseOutcome, StoreError> {
        self.close(snapshot, closed_at, closed_by, element).await
    }

    async fn update_elements(&self, batch: &ElementBatch) -> Result<ElementsOutcome, StoreError> {
        self.update(batch).await
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
        let mut elements = self
            .query_list(&list_pk(scope, "element"))
            .await?
            .iter()
            .map(element_from_item)
            .collect::<Result<Vec<_>, _>>()?;
        elements.sort_by(|a, b| a.address.cmp(&b.address));
        Ok(elements)
    }

    /// One consistent `GetItem`: the item is keyed by the token's hash.
    async fn stored_display(
        &self,
        token_hash: &str,
    ) -> Result<Option<Stored<Display>>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.tables.consumers)
            .key("id", s(display_key(token_hash)))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        Ok(output.item.as_ref().map(display_from_item))
    }
}
