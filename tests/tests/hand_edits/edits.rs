//! What the hand-edit suites share (tests/tests/call_type_edits.rs,
//! tests/tests/credential_edits.rs): a production server with one element per
//! call type, and edits of its store behind its back as an admin makes them,
//! the sqlite3 tool's statements on the SQLite file or the console's
//! `UpdateItem` on the tables in moto (`BLACKBOX_STORE=dynamodb`).

use blackbox_tests::*;
use serde_json::{Value, json};

use super::moto_api;

pub(crate) const CENTRAL: &str = "11111111-2222-4333-8444-555555555555";
pub(crate) const CENTRAL_SECRET: &str = "central-secret";
/// The displays' read of the open calls.
pub(crate) const CALLS: &str = "/api/v1/display/calls";

/// The call types the tests create, after the ten seeded ones.
pub(crate) const NEW_NAMES: [&str; 3] = ["Sonderruf", "Doppelt", "Riesig"];

pub(crate) fn central() -> Consumer {
    Consumer::new(CENTRAL, CENTRAL_SECRET)
}

/// Every name's own element, so that each call type has one open call.
pub(crate) fn address_of(name: &str) -> String {
    let index = CALL_TYPE_NAMES
        .iter()
        .chain(NEW_NAMES.iter())
        .position(|n| *n == name)
        .expect("a name of the tests");
    format!("room-{index}")
}

pub(crate) fn seed() -> Seed {
    CALL_TYPE_NAMES.iter().chain(NEW_NAMES.iter()).fold(
        Seed::new().consumer(CENTRAL, &[CENTRAL_SECRET], false),
        |seed, name| {
            let address = address_of(name);
            seed.element(&address, &address, &format!("Zimmer {address}"))
        },
    )
}

// ---------------------------------------------------------------------------
// Hand edits, as the sqlite3 tool or the DynamoDB console makes them
// ---------------------------------------------------------------------------

/// A value typed by hand.
#[derive(Debug, Clone, Copy)]
pub(crate) enum V {
    /// Text (DynamoDB `S`).
    S(&'static str),
    /// A number as typed (DynamoDB `N`; SQLite keeps what does not fit an
    /// integer as a real).
    N(&'static str),
    B(bool),
    /// No such attribute (DynamoDB only: every SQLite column has a value).
    Absent,
}

impl V {
    pub(crate) fn attribute(self) -> Value {
        match self {
            V::S(text) => json!({ "S": text }),
            V::N(number) => json!({ "N": number }),
            V::B(value) => json!({ "BOOL": value }),
            V::Absent => unreachable!("an absent attribute has no value"),
        }
    }

    pub(crate) fn sql(self) -> rusqlite::types::Value {
        use rusqlite::types::Value as Sql;
        match self {
            V::S(text) => Sql::Text(text.to_string()),
            V::N(number) => number
                .parse::<i64>()
                .map(Sql::Integer)
                .unwrap_or_else(|_| Sql::Real(number.parse().expect("a number"))),
            V::B(value) => Sql::Integer(i64::from(value)),
            V::Absent => panic!("SQLite has no absent column: a DynamoDB-only edit"),
        }
    }
}

pub(crate) fn moto() -> moto_api::Moto {
    let region = ["AWS_REGION", "AWS_DEFAULT_REGION"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|value| !value.is_empty()))
        .unwrap_or_else(|| "eu-central-1".to_string());
    moto_api::Moto::new(&store_conformance::moto::endpoint(), &region)
}

/// `SET` of `fields` on the item keyed `key` (created when missing).
pub(crate) async fn update_item(server: &Server, table: &str, key: Value, fields: &[(&str, V)]) {
    let mut names = serde_json::Map::new();
    let mut values = serde_json::Map::new();
    let mut sets = Vec::new();
    let mut removes = Vec::new();
    for (i, (field, value)) in fields.iter().enumerate() {
        names.insert(format!("#f{i}"), json!(field));
        match value {
            V::Absent => removes.push(format!("#f{i}")),
            value => {
                values.insert(format!(":v{i}"), value.attribute());
                sets.push(format!("#f{i} = :v{i}"));
            }
        }
    }
    let mut expression = String::new();
    if !sets.is_empty() {
        expression.push_str(&format!("SET {}", sets.join(", ")));
    }
    if !removes.is_empty() {
        expression.push_str(&format!(" REMOVE {}", removes.join(", ")));
    }
    let mut request = json!({
        "TableName": format!("{}{table}", server.table_prefix()),
        "Key": key,
        "UpdateExpression": expression.trim(),
        "ExpressionAttributeNames": names,
    });
    if !values.is_empty() {
        request["ExpressionAttributeValues"] = Value::Object(values);
    }
    moto().call("DynamoDB_20120810.UpdateItem", request).await;
}

/// `UPDATE table SET field = value, … WHERE key_column = key`.
pub(crate) fn update_row(
    server: &Server,
    table: &str,
    key_column: &str,
    key: &str,
    fields: &[(&str, V)],
) {
    let connection = open_store_file(server.data_dir());
    for (field, value) in fields {
        let changed = connection
            .execute(
                &format!("UPDATE {table} SET {field} = ?1 WHERE {key_column} = ?2"),
                rusqlite::params![value.sql(), key],
            )
            .expect("the sqlite3 tool's UPDATE");
        assert_eq!(changed, 1, "{table} {key}");
    }
}

/// The displays' read of open calls with the display token `token`.
pub(crate) async fn read_calls(server: &Server, token: &str) -> Response {
    let bearer = format!("Bearer {token}");
    server
        .request(
            reqwest::Method::GET,
            CALLS,
            None,
            &[("Authorization", bearer.as_str())],
            Vec::new(),
        )
        .await
}

/// The names of the calls in the displays' read, in its order.
pub(crate) async fn display_order(server: &Server, token: &str) -> Vec<String> {
    let response = read_calls(server, token).await;
    response.expect_status(200);
    response.data()["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|call| call["type"]["name"].as_str().expect("a type").to_string())
        .collect()
}
