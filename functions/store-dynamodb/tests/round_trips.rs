//! The round-trip budget of issue "DynamoDB": sequential DynamoDB requests per
//! API request on a warm function (call types and consumers cached), counted by
//! the SDK interceptor of the store, against moto.
//!
//! | request | budget | this design |
//! |---|---|---|
//! | open | ≤ 2 | 2: snapshot query, transaction |
//! | re-open (event already open) | ≤ 2 | 1 + 1 if status fields were sent |
//! | close | ≤ 2 | 2: snapshot, transaction (the snapshot names the locks) |
//! | element single | ≤ 1 | 1: conditional update returning the item |
//! | element multi | ≤ 1 | 2: transaction, then a batch read for the response |
//! | display read of the open calls | ≤ 2 | 2: display token, open-call index |
//!
//! The multi form misses its budget: DynamoDB transactions return no item
//! values, and the documented response is the full elements, so one read is
//! needed after (or before) the write.

mod support;

use std::sync::Arc;

use chrono::Utc;
use nurse_call_core::domain::call_types::default_call_types;
use nurse_call_core::domain::model::{Consumer, Scope};
use nurse_call_core::store::SandboxStore;
use nurse_call_core::store::admin::AdminStore;
use nurse_call_core::store::cache::DEFAULT_TTL;
use nurse_call_core::{AppState, Mode, Settings, serve};
use nurse_call_dynamodb::{DynamoStore, TableNames, Timeouts};
use store_conformance::moto;
use support::{CONSUMER, SECRET, json, signed_post};

async fn warm_production_state() -> (AppState, Arc<DynamoStore>) {
    let store = DynamoStore::connect_with(
        Some(&moto::endpoint()),
        TableNames::with_prefix(&moto::unique_prefix()),
        Timeouts::SLOW_STAND_IN,
    )
    .await;
    store.create_missing_tables().await.unwrap();
    store.seed_call_types(&default_call_types()).await.unwrap();
    store
        .create_consumer(&Consumer {
            id: CONSUMER.into(),
            name: "central".into(),
            secrets: vec![SECRET.into()],
            allow_sha1: false,
            created_at: Utc::now(),
            expires_at: None,
            require_signed_time: false,
        })
        .await
        .unwrap();
    for n in 0..100 {
        store
            .register_element(
                &Scope::installation(),
                &format!("room-{n}"),
                &format!("R{n}"),
                "Room",
                Utc::now(),
            )
            .await
            .unwrap();
    }
    let store = Arc::new(store);
    let state = AppState::new(
        store.clone(),
        Settings {
            mode: Mode::Production,
            time_zone: "Europe/Berlin".parse().unwrap(),
            call_retention: Default::default(),
            supervision: nurse_call_core::domain::supervision::Thresholds::default(),
            live_url: None,
            staff: Default::default(),
        },
    )
    .with_cache(DEFAULT_TTL);
    // Warm up: the first requests fill the caches (call types, the consumer),
    // as a function's first invocations do.
    let types = http::Request::get("/api/v1/display/call-types")
        .body(bytes::Bytes::new())
        .unwrap();
    assert_eq!(serve(&state, types).await.status(), 200);
    let warm = serve(
        &state,
        signed_post("/api/v1/element", Some("room-99"), r#"{"battery":50}"#),
    )
    .await;
    assert_eq!(warm.status(), 200, "{}", warm.body());
    (state, store)
}

/// Serves `request` and returns the status and the DynamoDB requests it took.
async fn count(
    state: &AppState,
    store: &DynamoStore,
    request: http::Request<bytes::Bytes>,
) -> (u16, u64, serde_json::Value) {
    let before = store.requests_sent();
    let response = serve(state, request).await;
    let sent = store.requests_sent() - before;
    (response.status().as_u16(), sent, json(&response))
}

#[tokio::test(flavor = "multi_thread")]
async fn each_request_stays_within_its_round_trip_budget() {
    let (state, store) = warm_production_state().await;

    let (status, open, body) = count(
        &state,
        &store,
        signed_post("/api/v1/display", Some("room-1"), r#"{"event":"Notruf"}"#),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"]["element_code"], "R1");
    assert!(open <= 2, "open took {open} requests");

    let (status, reopen, _) = count(
        &state,
        &store,
        signed_post(
            "/api/v1/display",
            Some("room-1"),
            r#"{"event":"Notruf","battery":40}"#,
        ),
    )
    .await;
    assert_eq!(status, 200);
    assert!(reopen <= 2, "re-open took {reopen} requests");

    let (status, close, body) = count(
        &state,
        &store,
        signed_post("/api/v1/display", Some("room-1"), r#"{"closed":true}"#),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["data"].as_array().map(Vec::len), Some(1));
    assert!(close <= 2, "close took {close} requests");

    let (status, single, body) = count(
        &state,
        &store,
        signed_post("/api/v1/element", Some("room-2"), r#"{"battery":80}"#),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["battery"], 80);
    assert!(single <= 1, "element single took {single} requests");

    let items: Vec<String> = (0..100)
        .map(|n| format!(r#"{{"target":"room-{n}","reachable":true}}"#))
        .collect();
    let data = format!("[{}]", items.join(","));
    let (status, multi, body) =
        count(&state, &store, signed_post("/api/v1/element", None, &data)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"].as_array().map(Vec::len), Some(100));
    // Budget 1, missed by design (see the module comment): 2.
    assert!(multi <= 2, "element multi took {multi} requests");

    // A display reads the open calls: its token, then the open-call index,
    // consistently (the call opened just now is in it).
    let (display, token) =
        nurse_call_core::signing::tokens::new_display("Flur", &[], Utc::now()).unwrap();
    nurse_call_core::store::admin::AdminStore::create_display(store.as_ref(), &display)
        .await
        .unwrap();
    let (status, _, body) = count(
        &state,
        &store,
        signed_post("/api/v1/display", Some("room-3"), r#"{"event":"WC"}"#),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let read = http::Request::get("/api/v1/display/calls")
        .header("Authorization", format!("Bearer {token}"))
        .body(bytes::Bytes::new())
        .unwrap();
    let (status, display_read, body) = count(&state, &store, read).await;
    assert_eq!(status, 200, "{body}");
    let addresses: Vec<&str> = body["data"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["address"].as_str().unwrap())
        .collect();
    assert_eq!(addresses, ["room-3"]);
    assert!(
        display_read <= 2,
        "display read took {display_read} requests"
    );

    eprintln!(
        "round trips: open {open}, re-open {reopen}, close {close}, element single {single}, element multi (100) {multi}, display read {display_read}"
    );
}
