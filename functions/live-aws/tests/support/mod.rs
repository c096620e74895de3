//! Mocked SDK clients (aws-smithy-mocks) and items for the handler tests.

#![allow(dead_code)] // Each test file uses a part.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_mocks::{Rule, RuleMode, mock_client};
use nurse_call_core::{AppState, DEFAULT_TTL, Mode, Settings, default_call_types};
use nurse_call_dynamodb::item::{Item, call_type_item};
use nurse_call_dynamodb::{DynamoStore, MAX_ATTEMPTS, RequestCounter, TableNames};

pub(crate) const CONNECTIONS_TABLE: &str = "t-connections";

/// The production retry mode (standard, [`MAX_ATTEMPTS`]) with a short
/// backoff, so that retries cost the tests no seconds.
fn retries() -> aws_sdk_dynamodb::config::retry::RetryConfig {
    aws_sdk_dynamodb::config::retry::RetryConfig::standard()
        .with_max_attempts(MAX_ATTEMPTS)
        .with_initial_backoff(Duration::from_millis(1))
        .with_max_backoff(Duration::from_millis(5))
}

pub(crate) fn dynamodb(rules: &[&Rule]) -> aws_sdk_dynamodb::Client {
    mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, rules, |config| {
        config.retry_config(retries())
    })
}

pub(crate) fn management(rules: &[&Rule]) -> aws_sdk_apigatewaymanagement::Client {
    mock_client!(
        aws_sdk_apigatewaymanagement,
        RuleMode::MatchAny,
        rules,
        |config| config.retry_config(retries())
    )
}

pub(crate) fn settings(mode: Mode) -> Settings {
    Settings {
        mode,
        time_zone: "Europe/Berlin".parse().unwrap(),
        call_retention: Default::default(),
        supervision: Default::default(),
        live_url: None,
        staff: Default::default(),
    }
}

/// The Lambda functions' store on `client`: tables `t-…`.
pub(crate) fn store(client: &aws_sdk_dynamodb::Client) -> Arc<DynamoStore> {
    Arc::new(DynamoStore::new(
        client.clone(),
        TableNames::with_prefix("t-"),
        RequestCounter::default(),
    ))
}

/// The Lambda functions' state on `client`: tables `t-…`, staff tokens
/// known, cached call types (as `nurse_call_wiring::lambda_state`).
pub(crate) fn state(client: &aws_sdk_dynamodb::Client, mode: Mode) -> AppState {
    let store = store(client);
    AppState::new(store.clone(), settings(mode))
        .with_alarms(store)
        .with_cache(DEFAULT_TTL)
}

pub(crate) fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_string())
}

/// The call types table as seeded.
pub(crate) fn call_type_items() -> Vec<Item> {
    default_call_types().iter().map(call_type_item).collect()
}

/// A connection item as `$connect` puts it.
pub(crate) fn connection_item(scope: &str, id: &str, sections: &[&str]) -> Item {
    Item::from([
        ("scope".to_string(), s(scope)),
        ("connection_id".to_string(), s(id)),
        (
            "sections".to_string(),
            AttributeValue::L(sections.iter().map(|section| s(section)).collect()),
        ),
        ("connected_at".to_string(), s("2026-01-05T08:59:00Z")),
        ("ttl".to_string(), AttributeValue::N("1767610140".into())),
    ])
}
