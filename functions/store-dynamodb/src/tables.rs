//! Table names (DECISIONS §10) and, for local use, creating the tables with the
//! same definitions as the CDK stack (docs/data-model.md).

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, CreateGlobalSecondaryIndexAction, GlobalSecondaryIndex,
    GlobalSecondaryIndexUpdate, KeySchemaElement, KeyType, Projection, ProjectionType,
    ScalarAttributeType, TimeToLiveSpecification,
};

use nurse_call_core::StoreError;

use crate::error::{build_error, classify};

/// The global secondary index of the data table that lists a scope's items.
pub const BY_SCOPE_INDEX: &str = "by_scope";
/// The sparse global secondary index of the data table that lists the
/// alarms due, earliest first (`due_pk`, `due_sk`, keys only).
pub const BY_DUE_INDEX: &str = "by_due";
/// The TTL attribute of sandbox items (epoch seconds).
pub const TTL_ATTRIBUTE: &str = "ttl";
/// The global secondary index of the connections table that finds a
/// connection's scope by its id (`$disconnect` knows only the id).
pub const BY_CONNECTION_INDEX: &str = "by_connection";

/// The names of an installation's three tables (docs/data-model.md); the
/// stack sets them, each may be set on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableNames {
    /// Call types, by name; admins edit them in the console.
    pub call_types: String,
    /// Credentials: consumers (central systems), displays and staff.
    pub consumers: String,
    /// Elements, open-call locks and calls.
    pub data: String,
}

impl TableNames {
    /// `<prefix>call-types`, `<prefix>consumers`, `<prefix>data`.
    pub fn with_prefix(prefix: &str) -> Self {
        TableNames {
            call_types: format!("{prefix}call-types"),
            consumers: format!("{prefix}consumers"),
            data: format!("{prefix}data"),
        }
    }

    /// From `CALL_TYPES_TABLE`, `CONSUMERS_TABLE` and `DATA_TABLE`, each falling
    /// back to `TABLE_PREFIX` (default `nurse-call-`) plus the table's name.
    pub fn from_env() -> Self {
        let defaults = Self::with_prefix(&table_prefix_from_env());
        TableNames {
            call_types: name_from_env("CALL_TYPES_TABLE", defaults.call_types),
            consumers: name_from_env("CONSUMERS_TABLE", defaults.consumers),
            data: name_from_env("DATA_TABLE", defaults.data),
        }
    }
}

/// `TABLE_PREFIX`, default `nurse-call-`.
fn table_prefix_from_env() -> String {
    std::env::var("TABLE_PREFIX").unwrap_or_else(|_| "nurse-call-".to_string())
}

/// The table name in the variable `var` (the stack sets it), else `default`.
fn name_from_env(var: &str, default: String) -> String {
    std::env::var(var)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or(default)
}

fn key(name: &str, key_type: KeyType) -> Result<KeySchemaElement, StoreError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(key_type)
        .build()
        .map_err(build_error)
}

fn string_attribute(name: &str) -> Result<AttributeDefinition, StoreError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .map_err(build_error)
}

pub(crate) async fn exists(client: &Client, table: &str) -> Result<bool, StoreError> {
    match client.describe_table().table_name(table).send().await {
        Ok(_) => Ok(true),
        Err(error)
            if error
                .as_service_error()
                .is_some_and(|e| e.is_resource_not_found_exception()) =>
        {
            Ok(false)
        }
        Err(error) => Err(classify(error)),
    }
}

async fn enable_ttl(client: &Client, table: &str) -> Result<(), StoreError> {
    client
        .update_time_to_live()
        .table_name(table)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .enabled(true)
                .attribute_name(TTL_ATTRIBUTE)
                .build()
                .map_err(build_error)?,
        )
        .send()
        .await
        .map_err(classify)?;
    Ok(())
}

/// Creates the tables that do not exist yet (on-demand billing, TTL on).
/// Returns the names of the tables it created.
pub async fn create_missing(
    client: &Client,
    names: &TableNames,
) -> Result<Vec<String>, StoreError> {
    let mut created = Vec::new();
    if !exists(client, &names.call_types).await? {
        client
            .create_table()
            .table_name(&names.call_types)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(string_attribute("name")?)
            .key_schema(key("name", KeyType::Hash)?)
            .send()
            .await
            .map_err(classify)?;
        created.push(names.call_types.clone());
    }
    if !exists(client, &names.consumers).await? {
        client
            .create_table()
            .table_name(&names.consumers)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(string_attribute("id")?)
            .key_schema(key("id", KeyType::Hash)?)
            .send()
            .await
            .map_err(classify)?;
        enable_ttl(client, &names.consumers).await?;
        created.push(names.consumers.clone());
    }
    if !exists(client, &names.data).await? {
        client
            .create_table()
            .table_name(&names.data)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(string_attribute("pk")?)
            .attribute_definitions(string_attribute("sk")?)
            .attribute_definitions(string_attribute("list_pk")?)
            .attribute_definitions(string_attribute("list_sk")?)
            .attribute_definitions(string_attribute("due_pk")?)
            .attribute_definitions(string_attribute("due_sk")?)
            .key_schema(key("pk", KeyType::Hash)?)
            .key_schema(key("sk", KeyType::Range)?)
            .global_secondary_indexes(
                GlobalSecondaryIndex::builder()
                    .index_name(BY_SCOPE_INDEX)
                    .key_schema(key("list_pk", KeyType::Hash)?)
                    .key_schema(key("list_sk", KeyType::Range)?)
                    .projection(
                        Projection::builder()
                            .projection_type(ProjectionType::All)
                            .build(),
                    )
                    .build()
                    .map_err(build_error)?,
            )
            .global_secondary_indexes(
                GlobalSecondaryIndex::builder()
                    .index_name(BY_DUE_INDEX)
                    .key_schema(key("due_pk", KeyType::Hash)?)
                    .key_schema(key("due_sk", KeyType::Range)?)
                    .projection(keys_only())
                    .build()
                    .map_err(build_error)?,
            )
            .send()
            .await
            .map_err(classify)?;
        enable_ttl(client, &names.data).await?;
        created.push(names.data.clone());
    } else {
        add_due_index_if_missing(client, &names.data).await?;
    }
    Ok(created)
}

/// The index of alarms due came with alarm routing (issue 25): a data
/// table a local server created before gets it added (DynamoDB builds it
/// in the background; in AWS the stack adds it).
async fn add_due_index_if_missing(client: &Client, table: &str) -> Result<(), StoreError> {
    let described = client
        .describe_table()
        .table_name(table)
        .send()
        .await
        .map_err(classify)?;
    let has_index = described
        .table()
        .map(|t| t.global_secondary_indexes())
        .unwrap_or_default()
        .iter()
        .any(|index| index.index_name() == Some(BY_DUE_INDEX));
    if has_index {
        return Ok(());
    }
    let create = CreateGlobalSecondaryIndexAction::builder()
        .index_name(BY_DUE_INDEX)
        .key_schema(key("due_pk", KeyType::Hash)?)
        .key_schema(key("due_sk", KeyType::Range)?)
        .projection(keys_only())
        .build()
        .map_err(build_error)?;
    client
        .update_table()
        .table_name(table)
        .attribute_definitions(string_attribute("due_pk")?)
        .attribute_definitions(string_attribute("due_sk")?)
        .global_secondary_index_updates(
            GlobalSecondaryIndexUpdate::builder().create(create).build(),
        )
        .send()
        .await
        .map_err(classify)?;
    tracing::info!(table, index = BY_DUE_INDEX, "index added to the data table");
    Ok(())
}

fn keys_only() -> Projection {
    Projection::builder()
        .projection_type(ProjectionType::KeysOnly)
        .build()
}

/// The connections table of the WebSocket API (`CONNECTIONS_TABLE`, else
/// `TABLE_PREFIX` plus `connections`): who is connected to the live feed.
pub fn connections_table_from_env() -> String {
    name_from_env(
        "CONNECTIONS_TABLE",
        format!("{}connections", table_prefix_from_env()),
    )
}

/// Creates the connections table as the stack does (tests; in AWS the stack
/// owns it): partition key `scope`, sort key `connection_id`, the
/// `by_connection` index (keys only), TTL on `ttl`. Returns whether it
/// created it (`false`: it existed).
pub async fn create_connections_table(client: &Client, name: &str) -> Result<bool, StoreError> {
    if exists(client, name).await? {
        return Ok(false);
    }
    client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(string_attribute("scope")?)
        .attribute_definitions(string_attribute("connection_id")?)
        .key_schema(key("scope", KeyType::Hash)?)
        .key_schema(key("connection_id", KeyType::Range)?)
        .global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name(BY_CONNECTION_INDEX)
                .key_schema(key("connection_id", KeyType::Hash)?)
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::KeysOnly)
                        .build(),
                )
                .build()
                .map_err(build_error)?,
        )
        .send()
        .await
        .map_err(classify)?;
    enable_ttl(client, name).await?;
    Ok(true)
}
