//! `$connect` and `$disconnect` on recorded API Gateway WebSocket events
//! (tests/fixtures/connect-event.json, disconnect-event.json), DynamoDB
//! mocked: who is let in, what is recorded, what is answered.

mod support;

use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::operation::delete_item::DeleteItemOutput;
use aws_sdk_dynamodb::operation::get_item::GetItemOutput;
use aws_sdk_dynamodb::operation::put_item::PutItemOutput;
use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_mocks::{Rule, mock};
use chrono::Utc;
use serde_json::{Value, json};

use nurse_call_core::{Consumer, Display, Mode, Scope, alarm::Staff, proof, tokens::token_hash};
use nurse_call_dynamodb::alarm_items::{staff_credential, staff_key};
use nurse_call_dynamodb::item::{Item, consumer_item, display_item, display_key};
use nurse_call_live_aws::connect::ConnectHandler;
use nurse_call_live_aws::connections::Connections;
use support::*;

type Db = aws_sdk_dynamodb::Client;

const TOKEN: &str = "5f0c0a3c1d2e4b6a8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d";
const CONNECTION: &str = "D8Gz1cUjliACG5Q=";
const VISITOR: &str = "0b6d2c1e-3f4a-4b5c-8d6e-7f8091a2b3c4";

fn connect_event(query: &[(&str, &str)]) -> Value {
    let mut event: Value =
        serde_json::from_str(include_str!("fixtures/connect-event.json")).unwrap();
    let single: serde_json::Map<String, Value> = query
        .iter()
        .map(|(key, value)| (key.to_string(), json!(value)))
        .collect();
    let multi: serde_json::Map<String, Value> = query
        .iter()
        .map(|(key, value)| (key.to_string(), json!([value])))
        .collect();
    event["queryStringParameters"] = if query.is_empty() {
        Value::Null
    } else {
        single.into()
    };
    event["multiValueQueryStringParameters"] = if query.is_empty() {
        Value::Null
    } else {
        multi.into()
    };
    event
}

fn disconnect_event() -> Value {
    serde_json::from_str(include_str!("fixtures/disconnect-event.json")).unwrap()
}

fn display(revoked: bool) -> Display {
    Display {
        id: "7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6".into(),
        name: "Flur Station 2".into(),
        sections: vec!["S2".into(), "S3".into()],
        scope: Scope::installation(),
        token_hash: token_hash(TOKEN),
        created_at: "2026-01-01T08:00:00Z".parse().unwrap(),
        revoked,
    }
}

fn visitor() -> Consumer {
    Consumer {
        id: VISITOR.into(),
        name: "sandbox visitor".into(),
        secrets: vec!["visitor-secret".into()],
        allow_sha1: false,
        created_at: Utc::now(),
        expires_at: Some(Utc::now() + chrono::Duration::days(30)),
        require_signed_time: false,
        heartbeat_seconds: None,
    }
}

/// The credentials table answers `key` with `item` (or nothing).
fn credentials(key: String, item: Option<Item>) -> Rule {
    mock!(Db::get_item)
        .match_requests(move |get| {
            get.table_name() == Some("t-consumers")
                && get.key().and_then(|k| k.get("id")) == Some(&s(&key))
        })
        .then_output(move || GetItemOutput::builder().set_item(item.clone()).build())
}

/// Every other credential is unknown.
fn nobody() -> Rule {
    mock!(Db::get_item).then_output(|| GetItemOutput::builder().build())
}

/// Records the connection items put.
#[derive(Clone, Default)]
struct Puts(Arc<Mutex<Vec<Item>>>);

fn recording(puts: &Puts) -> Rule {
    let puts = puts.clone();
    mock!(Db::put_item)
        .match_requests(|put| put.table_name() == Some(CONNECTIONS_TABLE))
        .then_compute_output(move |put| {
            puts.0
                .lock()
                .unwrap()
                .push(put.item().cloned().unwrap_or_default());
            PutItemOutput::builder().build()
        })
}

fn handler(db: &Db, mode: Mode) -> ConnectHandler {
    ConnectHandler::new(
        state(db, mode),
        Connections::new(db.clone(), CONNECTIONS_TABLE),
        store(db),
    )
}

fn body(response: &aws_lambda_events::apigw::ApiGatewayProxyResponse) -> String {
    match &response.body {
        Some(aws_lambda_events::encodings::Body::Text(text)) => text.clone(),
        other => panic!("no text body: {other:?}"),
    }
}

const UNAUTHORIZED: &str = r#"{"success":false,"messages":[{"code":"unauthorized","status_code":401,"errors":"Anmeldung erforderlich."}]}"#;

#[tokio::test]
async fn a_display_token_connects_and_its_scope_sections_and_expiry_are_recorded() {
    let puts = Puts::default();
    let known = credentials(
        display_key(&token_hash(TOKEN)),
        Some(display_item(&display(false))),
    );
    let put = recording(&puts);
    let db = dynamodb(&[&known, &put]);

    let before = Utc::now().timestamp();
    let response = handler(&db, Mode::Production)
        .handle(connect_event(&[("token", TOKEN)]))
        .await;

    assert_eq!(response.status_code, 200);
    let items = puts.0.lock().unwrap().clone();
    assert_eq!(items.len(), 1, "one connection item");
    let item = &items[0];
    assert_eq!(item["scope"], s("installation"));
    assert_eq!(item["connection_id"], s(CONNECTION));
    assert_eq!(item["sections"], AttributeValue::L(vec![s("S2"), s("S3")]));
    assert_eq!(
        item["display_id"],
        s("7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6")
    );
    let ttl: i64 = item["ttl"].as_n().unwrap().parse().unwrap();
    let lifetime = 2 * 3600 + 10 * 60;
    assert!(
        (before + lifetime..=Utc::now().timestamp() + lifetime).contains(&ttl),
        "expires 2 h 10 min after the connect: {ttl}"
    );
    assert!(item["connected_at"].as_s().unwrap().ends_with('Z'));
    assert!(!item.contains_key("token"), "no credential is kept");
}

#[tokio::test]
async fn a_staff_page_connects_and_is_recorded_as_its_persons_channel_until_the_connection_limit() {
    let staff = Staff {
        id: "3c2b1a09-8f7e-4d6c-9b5a-493827161504".into(),
        scope: Scope::installation(),
        name: "Anna".into(),
        groups: Vec::new(),
        device: None,
        token_hash: token_hash(TOKEN),
        created_at: Utc::now(),
        revoked: false,
    };
    let known = credentials(
        staff_key(&token_hash(TOKEN)),
        Some(staff_credential(&staff, None)),
    );
    let puts = Puts::default();
    let put = recording(&puts);
    let channels = Puts::default();
    let channel = {
        let channels = channels.clone();
        mock!(Db::put_item)
            .match_requests(|put| put.table_name() == Some("t-data"))
            .then_compute_output(move |put| {
                channels
                    .0
                    .lock()
                    .unwrap()
                    .push(put.item().cloned().unwrap_or_default());
                PutItemOutput::builder().build()
            })
    };
    // The token is no display's: the staff credential is looked up next.
    let display_unknown = credentials(display_key(&token_hash(TOKEN)), None);
    let db = dynamodb(&[&display_unknown, &known, &put, &channel]);

    let before = Utc::now().timestamp();
    let response = handler(&db, Mode::Production)
        .handle(connect_event(&[("token", TOKEN)]))
        .await;

    assert_eq!(response.status_code, 200);
    assert_eq!(puts.0.lock().unwrap().len(), 1, "one connection item");
    let items = channels.0.lock().unwrap().clone();
    assert_eq!(items.len(), 1, "one channel item: {items:?}");
    let item = &items[0];
    assert_eq!(item["pk"], s("staff#installation"));
    assert_eq!(item["sk"], s(&format!("channel#page#{CONNECTION}")));
    assert_eq!(item["staff_id"], s(&staff.id));
    let ttl: i64 = item["ttl"].as_n().unwrap().parse().unwrap();
    let lifetime = 2 * 3600 + 10 * 60;
    assert!(
        (before + lifetime..=Utc::now().timestamp() + lifetime).contains(&ttl),
        "counted open until 2 h 10 min after the connect: {ttl}"
    );
}

#[tokio::test]
async fn an_unknown_revoked_or_missing_token_is_refused_with_401_and_nothing_recorded() {
    for (case, query, revoked) in [
        ("unknown", vec![("token", "0123")], false),
        ("revoked", vec![("token", TOKEN)], true),
        ("missing", vec![], false),
        ("empty", vec![("token", "")], false),
    ] {
        let puts = Puts::default();
        let known = credentials(
            display_key(&token_hash(TOKEN)),
            Some(display_item(&display(revoked))),
        );
        let unknown = nobody();
        let put = recording(&puts);
        let db = dynamodb(&[&known, &unknown, &put]);

        let response = handler(&db, Mode::Production)
            .handle(connect_event(&query))
            .await;

        assert_eq!(response.status_code, 401, "{case}");
        assert_eq!(body(&response), UNAUTHORIZED, "{case}");
        assert!(
            puts.0.lock().unwrap().is_empty(),
            "{case}: nothing recorded"
        );
    }
}

#[tokio::test]
async fn the_sandbox_visitor_connects_with_its_proof_in_sandbox_mode_only() {
    let consumer = visitor();
    let proof = proof(&consumer);
    let query = [("consumer", VISITOR), ("hash", proof.as_str())];

    let puts = Puts::default();
    let known = credentials(VISITOR.to_string(), Some(consumer_item(&consumer)));
    let put = recording(&puts);
    let db = dynamodb(&[&known, &put]);
    let response = handler(&db, Mode::Sandbox)
        .handle(connect_event(&query))
        .await;
    assert_eq!(response.status_code, 200);
    let item = puts.0.lock().unwrap()[0].clone();
    assert_eq!(item["scope"], s(VISITOR), "the visitor's own scope");
    assert_eq!(item["sections"], AttributeValue::L(vec![]));
    assert!(!item.contains_key("display_id"));

    // A wrong proof, and any proof in production, are refused.
    let wrong = [("consumer", VISITOR), ("hash", "00ff")];
    let response = handler(&db, Mode::Sandbox)
        .handle(connect_event(&wrong))
        .await;
    assert_eq!(response.status_code, 401);
    let response = handler(&db, Mode::Production)
        .handle(connect_event(&query))
        .await;
    assert_eq!(response.status_code, 401);
    assert_eq!(
        puts.0.lock().unwrap().len(),
        1,
        "only the first was recorded"
    );
}

#[tokio::test]
async fn an_unavailable_store_refuses_the_connection_with_503() {
    let down = mock!(Db::get_item)
        .sequence()
        .http_status(503, None)
        .times(10)
        .build();
    let db = dynamodb(&[&down]);
    let response = handler(&db, Mode::Production)
        .handle(connect_event(&[("token", TOKEN)]))
        .await;
    assert_eq!(response.status_code, 503);
    assert!(body(&response).contains("service_unavailable"));
}

#[tokio::test]
async fn disconnect_deletes_the_connection_found_through_its_index() {
    let lookup = mock!(Db::query)
        .match_requests(|query| {
            query.table_name() == Some(CONNECTIONS_TABLE)
                && query.index_name() == Some("by_connection")
                && query
                    .expression_attribute_values()
                    .and_then(|values| values.get(":id"))
                    == Some(&s(CONNECTION))
        })
        .then_output(|| {
            QueryOutput::builder()
                .items(Item::from([
                    ("scope".to_string(), s("installation")),
                    ("connection_id".to_string(), s(CONNECTION)),
                ]))
                .build()
        });
    let delete = mock!(Db::delete_item)
        .match_requests(|delete| {
            delete.table_name() == Some(CONNECTIONS_TABLE)
                && delete.key().and_then(|key| key.get("scope")) == Some(&s("installation"))
                && delete.key().and_then(|key| key.get("connection_id")) == Some(&s(CONNECTION))
        })
        .then_output(|| DeleteItemOutput::builder().build());
    // A staff page's channel item in the roster goes too (§18); a
    // display's connection has none, and deleting nothing is no error.
    let page = mock!(Db::delete_item)
        .match_requests(|delete| {
            delete.table_name() == Some("t-data")
                && delete.key().and_then(|key| key.get("pk")) == Some(&s("staff#installation"))
                && delete.key().and_then(|key| key.get("sk"))
                    == Some(&s(&format!("channel#page#{CONNECTION}")))
        })
        .then_output(|| DeleteItemOutput::builder().build());
    let db = dynamodb(&[&lookup, &delete, &page]);

    let response = handler(&db, Mode::Production)
        .handle(disconnect_event())
        .await;

    assert_eq!(response.status_code, 200);
    assert_eq!(delete.num_calls(), 1);
    assert_eq!(page.num_calls(), 1);
}

#[tokio::test]
async fn something_else_than_a_websocket_event_is_400() {
    let db = dynamodb(&[]);
    let response = handler(&db, Mode::Production)
        .handle(json!({"Records": []}))
        .await;
    assert_eq!(response.status_code, 400);
}
