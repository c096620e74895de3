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
//! Alarm routing (issue 25), per store operation: the alarm's read, its
//! conditional write (with audit), the due index, the audit, a staff
//! token, a scope's staff and duties: 1 each; the displays' read still 2,
//! with every call's alarm.
//!
//! The multi form misses its budget: DynamoDB transactions return no item
//! values, and the documented response is the full elements, so one read is
//! needed after (or before) the write.

mod support;

use std::sync::Arc;

use chrono::Utc;
use nurse_call_core::{
    AdminStore, AlarmStore, AlarmWrite, AppState, Consumer, DEFAULT_TTL, Mode, SandboxStore, Scope,
    Settings, WebhookStore,
    alarm::{AlarmStatus, Duty, Staff},
    default_call_types, serve,
};
use nurse_call_dynamodb::{DynamoStore, TableNames, Timeouts};
use store_conformance::{alarm_support, moto};
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
            heartbeat_seconds: None,
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
            supervision: nurse_call_core::Thresholds::default(),
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
/// The writes' knowledge of the webhook endpoints read just now, as it is
/// on a busy server (read at most once a second, docs/data-model.md): the
/// budgets are per request; that read is counted on its own below.
async fn fresh_webhook_gate(store: &DynamoStore) {
    WebhookStore::endpoints(store).await.unwrap();
}

async fn count(
    state: &AppState,
    store: &DynamoStore,
    request: http::Request<bytes::Bytes>,
) -> (u16, u64, serde_json::Value) {
    fresh_webhook_gate(store).await;
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
    let (display, token) = nurse_call_core::tokens::new_display("Flur", &[], Utc::now()).unwrap();
    nurse_call_core::AdminStore::create_display(store.as_ref(), &display)
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

/// Requests `operation` sent to the store.
async fn sent<T>(store: &DynamoStore, operation: impl std::future::Future<Output = T>) -> (T, u64) {
    fresh_webhook_gate(store).await;
    let before = store.requests_sent();
    let output = operation.await;
    (output, store.requests_sent() - before)
}

#[tokio::test(flavor = "multi_thread")]
async fn alarm_operations_take_one_request_and_the_displays_read_stays_at_two() {
    let (state, store) = warm_production_state().await;
    let scope = Scope::installation();
    let (display, token) = nurse_call_core::tokens::new_display("Flur", &[], Utc::now()).unwrap();
    AdminStore::create_display(store.as_ref(), &display)
        .await
        .unwrap();
    let (status, open, body) = count(
        &state,
        &store,
        signed_post("/api/v1/display", Some("room-4"), r#"{"event":"Notruf"}"#),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert!(
        open <= 2,
        "open with its pending alarm took {open} requests"
    );
    let id = body["data"]["id"].as_i64().expect("the call's id");

    let anna = Staff {
        id: "5b1f3c2a-0000-4000-8000-000000000001".into(),
        scope: scope.clone(),
        name: "Anna".into(),
        groups: vec![],
        device: None,
        token_hash: "a".repeat(64),
        created_at: Utc::now(),
        revoked: false,
    };
    store.create_staff(&anna).await.unwrap();
    store
        .put_duty(&Duty {
            staff_id: anna.id.clone(),
            scope: scope.clone(),
            sections: vec![],
            since: Utc::now(),
            until: Utc::now() + chrono::Duration::hours(8),
        })
        .await
        .unwrap();

    let (kept, alarm_read) = sent(&store, store.alarm(&scope, id)).await;
    let kept = kept.unwrap().expect("the open kept a pending alarm");
    let mut alarm = kept.alarm.clone();
    alarm.level = 1;
    alarm.levels = 3;
    alarm.changes = 1;
    let (written, write) = sent(&store, store.write_alarm(&kept, &alarm, &[])).await;
    assert_eq!(written.unwrap(), AlarmWrite::Written);
    // A second later a write with a webhook event to keep (an alert) reads
    // the endpoints once more first.
    let kept = store.alarm(&scope, id).await.unwrap().expect("the alarm");
    tokio::time::sleep(nurse_call_dynamodb::WEBHOOK_ENDPOINTS_SEEN_WITHIN).await;
    let before = store.requests_sent();
    let alert = alarm_support::line("alert", 1, Some(&anna), Utc::now());
    let written = store
        .write_alarm(&kept, &kept.alarm, std::slice::from_ref(&alert))
        .await
        .unwrap();
    assert_eq!(written, AlarmWrite::Written);
    assert_eq!(
        store.requests_sent() - before,
        2,
        "a write after a second without a read of the endpoints"
    );
    let (due, due_read) = sent(&store, store.due_alarms(Utc::now(), 100)).await;
    assert!(due.unwrap().iter().any(|d| d.call_id == id));
    let (_, audit) = sent(&store, store.alarm_audit(&scope, id)).await;
    let (member, by_token) = sent(&store, store.staff_by_token_hash(&anna.token_hash)).await;
    assert_eq!(member.unwrap(), Some(anna.clone()));
    let (_, roster) = sent(&store, store.staff_of(&scope)).await;
    let (_, duties) = sent(&store, store.duties(&scope, Utc::now())).await;
    for (operation, requests) in [
        ("alarm", alarm_read),
        ("write_alarm", write),
        ("due_alarms", due_read),
        ("alarm_audit", audit),
        ("staff_by_token_hash", by_token),
        ("staff_of", roster),
        ("duties", duties),
    ] {
        assert_eq!(requests, 1, "{operation} took {requests} requests");
    }

    let read = http::Request::get("/api/v1/display/calls")
        .header("Authorization", format!("Bearer {token}"))
        .body(bytes::Bytes::new())
        .unwrap();
    let (status, display_read, body) = count(&state, &store, read).await;
    assert_eq!(status, 200, "{body}");
    let call = &body["data"]["calls"][0];
    assert_eq!(call["id"], id);
    assert_eq!(call["version"], 2, "one alarm change");
    assert_eq!(call["alarm"]["state"], AlarmStatus::Alerting.as_str());
    assert_eq!(call["alarm"]["level"], 1);
    assert!(
        display_read <= 2,
        "display read with alarms took {display_read} requests"
    );
    eprintln!(
        "round trips: open {open}, alarm {alarm_read}, write_alarm {write}, due_alarms {due_read}, alarm_audit {audit}, staff by token {by_token}, staff_of {roster}, duties {duties}, display read with alarms {display_read}"
    );
}
