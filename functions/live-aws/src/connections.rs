//! Who is connected to the WebSocket API: one item per connection in the
//! connections table (CONTRACT: partition key `scope`, sort key
//! `connection_id`, `sections`, `display_id`, `staff_id`, `connected_at`, `ttl`; index
//! `by_connection`). `$connect` puts it, `$disconnect` deletes it, the
//! broadcast reads a scope's connections and deletes those API Gateway
//! reports gone.
//!
//! The items are throwaway: a display that reconnects makes a new one, and
//! one whose `$disconnect` never came expires by TTL a little after API
//! Gateway's 2 h connection limit.
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Duration, Utc};

use nurse_call_core::{Scope, StoreError, wire_time::to_stored};
use nurse_call_dynamodb::classify;
use nurse_call_dynamodb::item::{Item, get_s, n, required, s};
use nurse_call_dynamodb::tables::BY_CONNECTION_INDEX;

/// How long a connection item lives: API Gateway closes every WebSocket
/// connection after 2 h; the margin covers a late `$disconnect`.
pub const LIFETIME: Duration = Duration::minutes(2 * 60 + 10);

/// One display's (or sandbox visitor's) open WebSocket connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// API Gateway's id of the connection (what `PostToConnection` takes).
    pub id: String,
    /// Whose messages the reader gets: the installation, or a sandbox visitor
    /// (the item's partition key).
    pub scope: Scope,
    /// The sections the reader sees; empty = every section.
    pub sections: Vec<String>,
    /// `None` for the sandbox visitor (no display record) and staff pages.
    pub display_id: Option<String>,
    /// The person of a staff page; `None` for displays. With `display_id`,
    /// what a rotated or revoked credential's connections are found by
    /// (DECISIONS §20).
    pub staff_id: Option<String>,
}

/// The connections table.
#[derive(Debug, Clone)]
pub struct Connections {
    client: Client,
    table: String,
}

impl Connections {
    /// The connections table named `table`, through `client` (the store's, so
    /// they share one connection pool).
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Connections {
            client,
            table: table.into(),
        }
    }

    /// The table's name (logged at cold start).
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Records a connection accepted at `now`; it expires [`LIFETIME`] later.
    pub async fn put(&self, connection: &Connection, now: DateTime<Utc>) -> Result<(), StoreError> {
        let mut item = Item::from([
            ("scope".to_string(), s(connection.scope.as_str())),
            ("connection_id".to_string(), s(&connection.id)),
            (
                "sections".to_string(),
                AttributeValue::L(connection.sections.iter().map(s).collect()),
            ),
            ("connected_at".to_string(), s(to_stored(now))),
            ("ttl".to_string(), n((now + LIFETIME).timestamp())),
        ]);
        if let Some(display_id) = &connection.display_id {
            item.insert("display_id".into(), s(display_id));
        }
        if let Some(staff_id) = &connection.staff_id {
            item.insert("staff_id".into(), s(staff_id));
        }
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }

    /// Forgets a connection (gone, or disconnected); nothing if unknown.
    pub async fn delete(&self, scope: &Scope, id: &str) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .key("scope", s(scope.as_str()))
            .key("connection_id", s(id))
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }

    /// Every connection of `scope`: one consistent `Query` (a care home has
    /// dozens of displays, far below a 1 MB page; more are paged), so a
    /// connection accepted before the read is in it.
    pub async fn of_scope(&self, scope: &Scope) -> Result<Vec<Connection>, StoreError> {
        self.client
            .query()
            .table_name(&self.table)
            .key_condition_expression("#scope = :scope")
            .expression_attribute_names("#scope", "scope")
            .expression_attribute_values(":scope", s(scope.as_str()))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(classify)?
            .iter()
            .map(connection_from_item)
            .collect()
    }

    /// The scopes a connection id is recorded under (normally one), through
    /// the `by_connection` index: `$disconnect` knows the id only. The index
    /// is eventually consistent: a connection dropped within a moment of its
    /// `$connect` may not be found; its item then goes with the first post
    /// that finds it gone, or by TTL.
    pub async fn scopes_of(&self, id: &str) -> Result<Vec<Scope>, StoreError> {
        let page = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(BY_CONNECTION_INDEX)
            .key_condition_expression("#id = :id")
            .expression_attribute_names("#id", "connection_id")
            .expression_attribute_values(":id", s(id))
            .send()
            .await
            .map_err(classify)?;
        Ok(page
            .items()
            .iter()
            .filter_map(|item| get_s(item, "scope"))
            .map(|scope| Scope::from_key(&scope))
            .collect())
    }
}

fn connection_from_item(item: &Item) -> Result<Connection, StoreError> {
    let required = |key: &str| required(get_s(item, key), "connection", key);
    let sections = match item.get("sections") {
        Some(AttributeValue::L(list)) => list
            .iter()
            .filter_map(|value| value.as_s().ok().cloned())
            .collect(),
        _ => Vec::new(),
    };
    Ok(Connection {
        id: required("connection_id")?,
        scope: Scope::from_key(&required("scope")?),
        sections,
        display_id: get_s(item, "display_id"),
        staff_id: get_s(item, "staff_id"),
    })
}
