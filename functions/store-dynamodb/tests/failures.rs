//! Failure behaviour with the SDK mocked (aws-smithy-mocks): throttling and an
//! unreachable store become 503 with Retry-After after the SDK's retries; a
//! conditional failure and a transaction conflict are resolved, not passed on.

mod support;

use std::collections::HashMap;
use std::sync::Arc;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::error::ErrorMetadata;
use aws_sdk_dynamodb::operation::get_item::GetItemOutput;
use aws_sdk_dynamodb::operation::query::{QueryError, QueryOutput};
use aws_sdk_dynamodb::operation::scan::ScanOutput;
use aws_sdk_dynamodb::operation::transact_write_items::{
    TransactWriteItemsError, TransactWriteItemsOutput,
};
use aws_sdk_dynamodb::types::error::{
    ProvisionedThroughputExceededException, TransactionCanceledException,
};
use aws_sdk_dynamodb::types::{AttributeValue, CancellationReason};
use aws_smithy_mocks::{Rule, RuleMode, mock, mock_client};
use nurse_call_core::{AppState, Mode, Settings, serve};
use nurse_call_dynamodb::{DynamoStore, MAX_ATTEMPTS, RequestCounter, TableNames};
use support::{CONSUMER, SECRET, json, signed_post};

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn consumer_rule() -> Rule {
    mock!(Client::get_item)
        .match_requests(|r| r.table_name() == Some("t-consumers"))
        .then_output(|| {
            GetItemOutput::builder()
                .set_item(Some(HashMap::from([
                    ("id".into(), s(CONSUMER)),
                    ("name".into(), s("central")),
                    ("secrets".into(), AttributeValue::L(vec![s(SECRET)])),
                    ("allow_sha1".into(), AttributeValue::Bool(false)),
                    ("created_at".into(), s("2026-01-01T00:00:00Z")),
                ])))
                .build()
        })
}

fn call_types_rule() -> Rule {
    mock!(Client::scan).then_output(|| {
        ScanOutput::builder()
            .items(HashMap::from([
                ("name".into(), s("Notruf")),
                ("id".into(), AttributeValue::N("7".into())),
            ]))
            .build()
    })
}

fn empty_address_rule() -> Rule {
    mock!(Client::query).then_output(|| QueryOutput::builder().set_items(Some(vec![])).build())
}

fn state(rules: &[&Rule]) -> AppState {
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, rules, |config| {
        config.retry_config(RetryConfig::standard().with_max_attempts(MAX_ATTEMPTS))
    });
    let store = DynamoStore::new(
        client,
        TableNames::with_prefix("t-"),
        RequestCounter::default(),
    );
    AppState::new(
        Arc::new(store),
        Settings {
            mode: Mode::Sandbox,
            time_zone: "Europe/Berlin".parse().unwrap(),
            call_retention: Default::default(),
            supervision: nurse_call_core::Thresholds::default(),
            live_url: None,
            staff: Default::default(),
        },
    )
}

fn canceled(codes: &[&str]) -> TransactWriteItemsError {
    TransactWriteItemsError::TransactionCanceledException(
        TransactionCanceledException::builder()
            .set_cancellation_reasons(Some(
                codes
                    .iter()
                    .map(|code| CancellationReason::builder().code(*code).build())
                    .collect(),
            ))
            .build(),
    )
}

fn assert_unavailable(response: &http::Response<String>) {
    assert_eq!(response.status(), 503, "{}", response.body());
    assert_eq!(response.headers()["retry-after"], "1");
    assert_eq!(
        json(response),
        serde_json::json!({"success": false, "messages": [{
            "code": "service_unavailable",
            "status_code": 503,
            "errors": "Der Dienst ist vorübergehend nicht verfügbar. Bitte später erneut versuchen."
        }]})
    );
}

#[tokio::test]
async fn throttling_after_retries_is_503_with_retry_after() {
    let throttled = mock!(Client::query)
        .sequence()
        .error(|| {
            QueryError::ProvisionedThroughputExceededException(
                // As DynamoDB sends it: the code in the error's metadata.
                ProvisionedThroughputExceededException::builder()
                    .message("slow down")
                    .meta(
                        ErrorMetadata::builder()
                            .code("ProvisionedThroughputExceededException")
                            .message("slow down")
                            .build(),
                    )
                    .build(),
            )
        })
        .times(10)
        .build();
    let transaction = mock!(Client::transact_write_items)
        .then_output(|| TransactWriteItemsOutput::builder().build());
    let consumer = consumer_rule();
    let state = state(&[&consumer, &throttled, &transaction]);
    let response = serve(
        &state,
        signed_post("/api/v1/display", Some("A1"), r#"{"event":"Notruf"}"#),
    )
    .await;
    assert_unavailable(&response);
    assert_eq!(
        throttled.num_calls(),
        MAX_ATTEMPTS as usize,
        "the SDK retried"
    );
    assert_eq!(transaction.num_calls(), 0, "nothing was written");
}

#[tokio::test]
async fn an_unreachable_store_is_503() {
    let down = mock!(Client::get_item)
        .sequence()
        .http_status(503, None)
        .times(10)
        .build();
    let state = state(&[&down]);
    let response = serve(
        &state,
        signed_post("/api/v1/element", Some("A1"), r#"{"battery":5}"#),
    )
    .await;
    assert_unavailable(&response);
    assert_eq!(down.num_calls(), MAX_ATTEMPTS as usize);
}

#[tokio::test]
async fn a_conflicting_transaction_is_tried_again() {
    let consumer = consumer_rule();
    let types = call_types_rule();
    let address = empty_address_rule();
    let transaction = mock!(Client::transact_write_items)
        .sequence()
        .error(|| canceled(&["None", "TransactionConflict", "None"]))
        .output(|| TransactWriteItemsOutput::builder().build())
        .build();
    let state = state(&[&consumer, &types, &address, &transaction]);
    let response = serve(
        &state,
        signed_post("/api/v1/display", Some("A1"), r#"{"event":"Notruf"}"#),
    )
    .await;
    assert_eq!(response.status(), 201, "{}", response.body());
    assert_eq!(transaction.num_calls(), 2);
}

#[tokio::test]
async fn an_open_lost_to_a_concurrent_open_answers_with_that_call() {
    let consumer = consumer_rule();
    let types = call_types_rule();
    let address = empty_address_rule();
    // The lock's condition fails: another request opened Notruf meanwhile.
    let transaction = mock!(Client::transact_write_items)
        .then_error(|| canceled(&["ConditionalCheckFailed", "None", "None"]));
    let lock = mock!(Client::get_item)
        .match_requests(|r| r.table_name() == Some("t-data"))
        .then_output(|| {
            GetItemOutput::builder()
                .set_item(Some(HashMap::from([
                    ("id".into(), AttributeValue::N("4242".into())),
                    ("address".into(), s("A1")),
                    ("event".into(), s("Notruf")),
                    ("opened_at".into(), s("2026-05-01T10:00:00Z")),
                ])))
                .build()
        });
    let update = mock!(Client::update_item).then_output(|| {
        aws_sdk_dynamodb::operation::update_item::UpdateItemOutput::builder()
            .set_attributes(Some(HashMap::from([
                ("address".into(), s("A1")),
                ("updated_at".into(), s("2026-05-01T10:00:00Z")),
            ])))
            .build()
    });
    let state = state(&[&consumer, &types, &address, &transaction, &lock, &update]);
    let response = serve(
        &state,
        signed_post("/api/v1/display", Some("A1"), r#"{"event":"Notruf"}"#),
    )
    .await;
    assert_eq!(response.status(), 200, "{}", response.body());
    let body = json(&response);
    assert_eq!(body["data"]["id"], 4242);
    assert_eq!(body["data"]["opened_at"], "2026-05-01 12:00:00");
    assert_eq!(transaction.num_calls(), 1, "no second call was written");
}

#[tokio::test]
async fn a_transaction_that_keeps_conflicting_is_503() {
    let consumer = consumer_rule();
    let types = call_types_rule();
    let address = empty_address_rule();
    let transaction = mock!(Client::transact_write_items)
        .sequence()
        .error(|| canceled(&["TransactionConflict", "None", "None"]))
        .times(20)
        .build();
    let state = state(&[&consumer, &types, &address, &transaction]);
    let response = serve(
        &state,
        signed_post("/api/v1/display", Some("A1"), r#"{"event":"Notruf"}"#),
    )
    .await;
    assert_unavailable(&response);
}

/// A consumer put whose first attempt timed out but was applied: the SDK's
/// retry finds the item. The same secrets mean it is this consumer, stored
/// once (the test page would otherwise answer 500 to a visitor's first visit);
/// another consumer under the same id is never taken for it.
#[tokio::test]
async fn a_consumer_put_that_finds_its_own_earlier_attempt_succeeds() {
    use aws_sdk_dynamodb::operation::put_item::PutItemError;
    use aws_sdk_dynamodb::types::error::ConditionalCheckFailedException;
    use nurse_call_core::Consumer;
    use nurse_call_core::SandboxStore;

    let consumer = Consumer {
        id: CONSUMER.into(),
        name: "Sandbox".into(),
        secrets: vec![SECRET.into()],
        allow_sha1: false,
        require_signed_time: false,
        created_at: "2026-01-01T00:00:00Z".parse().unwrap(),
        expires_at: None,
        heartbeat_seconds: None,
    };
    let stored_with = |secret: &'static str| {
        mock!(Client::put_item).then_error(move || {
            PutItemError::ConditionalCheckFailedException(
                ConditionalCheckFailedException::builder()
                    .message("The conditional request failed")
                    .set_item(Some(HashMap::from([
                        ("id".into(), s(CONSUMER)),
                        ("name".into(), s("Sandbox")),
                        ("secrets".into(), AttributeValue::L(vec![s(secret)])),
                        ("allow_sha1".into(), AttributeValue::Bool(false)),
                        ("created_at".into(), s("2026-01-01T00:00:00Z")),
                    ])))
                    .build(),
            )
        })
    };
    let store = |rule: &Rule| {
        let client = mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, [rule]);
        DynamoStore::new(
            client,
            TableNames::with_prefix("t-"),
            RequestCounter::default(),
        )
    };

    let own = stored_with(SECRET);
    store(&own)
        .create_consumer(&consumer)
        .await
        .expect("the consumer the earlier attempt stored is this one");

    let other = stored_with("another secret");
    let error = store(&other)
        .create_consumer(&consumer)
        .await
        .expect_err("another consumer under the same id is not this one");
    assert!(
        error.to_string().contains("ConditionalCheckFailed"),
        "{error}"
    );
}
