//! The init's warm-up (issue 30) against a stand-in DynamoDB that counts
//! connections: the first request uses the connection the warm-up opened,
//! and a warm-up that fails or stalls never fails or holds up init.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lambda_http::{Body, Request};
use nurse_call_core::{Mode, Settings, routes};
use nurse_call_wiring::warm_up::{WARM_UP_LIMIT, WarmUp};
use nurse_call_wiring::{StoreChoice, TableNames};
use store_conformance::counting_server::CountingServer;

const SCAN: &str = "DynamoDB_20120810.Scan";
const GET_ITEM: &str = "DynamoDB_20120810.GetItem";

/// DynamoDB with no call types and no consumers; with `scan_fails`, the
/// call-types scan is refused (400, which the SDK does not retry).
fn dynamodb(scan_fails: bool) -> store_conformance::counting_server::Answer {
    Arc::new(move |operation: &str| match operation {
        SCAN if scan_fails => (
            400,
            r#"{"__type":"com.amazon.coral.validate#ValidationException","message":"stand-in"}"#
                .to_string(),
        ),
        SCAN => (
            200,
            r#"{"Count":0,"Items":[],"ScannedCount":0}"#.to_string(),
        ),
        _ => (200, "{}".to_string()),
    })
}

fn choice(endpoint: String) -> StoreChoice {
    StoreChoice::DynamoDb {
        endpoint: Some(endpoint),
        tables: TableNames::with_prefix("warm-up-"),
    }
}

/// The defaults of a production function, whatever this process's
/// environment holds (a `SERVICE_MODE=sandbox` would add `debug`).
fn settings() -> Settings {
    Settings::from_vars(Mode::Production, |_| None).expect("the default settings")
}

/// A signed element update of a consumer the store does not know: the
/// handler reads the consumer (one `GetItem`) and answers as the contract
/// says for an unknown consumer, 400 `invalid_hash` (spec 7.2), which a
/// handler can only say after reading the store.
fn element_request() -> Request {
    let body = r#"{"target":"Zimmer-1","consumer":"6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f","hash":"00","data":{"battery":50}}"#;
    http::Request::builder()
        .method("POST")
        .uri("/api/v1/element")
        .header("content-type", "application/json")
        .body(Body::Text(body.to_string()))
        .unwrap()
}

/// The first request's answer: status and the first message's code.
async fn first_request(state: &nurse_call_core::AppState) -> (u16, String) {
    let response = lambda_support::handle(state, &[routes::ELEMENT], element_request()).await;
    let body = match response.body() {
        Body::Text(text) => text.clone(),
        other => panic!("a JSON answer, not {other:?}"),
    };
    let code = body
        .split_once(r#""code":""#)
        .and_then(|(_, rest)| rest.split_once('"'))
        .map_or_else(|| body.clone(), |(code, _)| code.to_string());
    (response.status().as_u16(), code)
}

fn unknown_consumer() -> (u16, String) {
    (400, "invalid_hash".to_string())
}

#[tokio::test]
async fn the_first_request_uses_the_connection_the_warm_up_opened() {
    let server = CountingServer::start(dynamodb(false), false).await;
    let (state, warmed) = lambda_support::ready_state(settings(), choice(server.endpoint()))
        .await
        .expect("init");
    assert_eq!(warmed, WarmUp::Warmed);
    assert_eq!(server.requests(), [SCAN], "init read the call types");
    assert_eq!(server.connections(), 1);

    assert_eq!(first_request(&state).await, unknown_consumer());
    assert_eq!(server.requests(), [SCAN, GET_ITEM]);
    assert_eq!(
        server.connections(),
        1,
        "the handler's request went over the warmed connection"
    );
}

#[tokio::test]
async fn init_succeeds_when_the_warm_up_request_fails() {
    let server = CountingServer::start(dynamodb(true), false).await;
    let (state, warmed) = lambda_support::ready_state(settings(), choice(server.endpoint()))
        .await
        .expect("init despite the failed warm-up");
    assert_eq!(warmed, WarmUp::Failed);
    assert_eq!(first_request(&state).await, unknown_consumer());
    assert_eq!(server.requests(), [SCAN, GET_ITEM]);

    // Nothing listening at all: init still succeeds, within the limit.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let started = Instant::now();
    let (_, warmed) = lambda_support::ready_state(settings(), choice(closed))
        .await
        .expect("init without DynamoDB");
    assert_ne!(warmed, WarmUp::Warmed);
    assert!(started.elapsed() < WARM_UP_LIMIT + Duration::from_secs(2));
}

#[tokio::test]
async fn init_goes_on_at_the_limit_when_the_warm_up_stalls() {
    // The first connection is never answered; later ones are.
    let server = CountingServer::start(dynamodb(false), true).await;
    let started = Instant::now();
    let (state, warmed) = lambda_support::ready_state(settings(), choice(server.endpoint()))
        .await
        .expect("init despite the stalled warm-up");
    let took = started.elapsed();
    assert_eq!(warmed, WarmUp::Pending);
    assert!(
        (WARM_UP_LIMIT..WARM_UP_LIMIT + Duration::from_secs(2)).contains(&took),
        "init waited {took:?}"
    );
    // The first request connects as it would without a warm-up.
    assert_eq!(first_request(&state).await, unknown_consumer());
    assert!(server.requests().contains(&GET_ITEM.to_string()));
    assert!(server.connections() >= 2, "a connection of its own");
}
