//! Builders and checks of the webhook cases: endpoints, the outbox read
//! whole, attempts of the delivery log.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use nurse_call_core::{
    Attempt, AttemptEnd, WebhookStore,
    webhooks::{Endpoint, EventType, outbox::OutboxEvent},
};

use crate::Harness;

/// The store as a [`WebhookStore`]; a harness without it is a mistake of
/// the implementing crate's test, not a store that may skip the cases.
pub(crate) fn webhooks(harness: &Harness) -> Arc<dyn WebhookStore> {
    harness
        .webhooks
        .clone()
        .expect("the webhook cases need the store as a WebhookStore: Harness::with_webhooks(store)")
}

/// Endpoint `n`, enabled, every event of every section, one secret.
pub(crate) fn endpoint(n: u32, created_at: DateTime<Utc>) -> Endpoint {
    Endpoint {
        id: format!("{n:08x}-0e0e-4000-8000-000000000000"),
        name: format!("gateway {n}"),
        url: format!("https://gateway-{n}.example/hook"),
        events: Vec::new(),
        sections: Vec::new(),
        secrets: vec![format!("whsec_the-secret-of-endpoint-{n}")],
        disabled: false,
        created_at,
        failing_since: None,
        confirms_delivery: false,
        private_network: false,
    }
}

pub(crate) async fn create_endpoint(store: &dyn WebhookStore, endpoint: &Endpoint) {
    store
        .create_endpoint(endpoint)
        .await
        .unwrap_or_else(|e| panic!("create_endpoint({}) failed: {e}", endpoint.id));
}

/// An enabled endpoint, so that the embedded store keeps events at all.
pub(crate) async fn an_endpoint_wants_events(store: &dyn WebhookStore) {
    create_endpoint(store, &endpoint(1, crate::support::t(0))).await;
}

pub(crate) async fn endpoints(store: &dyn WebhookStore) -> Vec<Endpoint> {
    store
        .endpoints()
        .await
        .unwrap_or_else(|e| panic!("endpoints() failed: {e}"))
}

/// Every event in the outbox, in its order.
pub(crate) async fn outbox(store: &dyn WebhookStore) -> Vec<OutboxEvent> {
    store
        .outbox(crate::support::ALL)
        .await
        .unwrap_or_else(|e| panic!("outbox() failed: {e}"))
}

/// What tells events apart in an order: their type and call.
pub(crate) fn kinds(events: &[OutboxEvent]) -> Vec<(EventType, Option<i64>)> {
    events.iter().map(|e| (e.kind, e.call_id)).collect()
}

pub(crate) fn event_ids(events: &[OutboxEvent]) -> Vec<String> {
    events.iter().map(|e| e.id.clone()).collect()
}

/// The events' positions: what `finish_events` takes them out by.
pub(crate) fn positions(events: &[OutboxEvent]) -> Vec<String> {
    events.iter().map(|e| e.position.clone()).collect()
}

/// `event` without its id, which the store's write made up: to compare
/// with what `events_of_write` gives for the same write.
pub(crate) fn without_id(event: &OutboxEvent) -> OutboxEvent {
    OutboxEvent {
        id: String::new(),
        position: String::new(),
        ..event.clone()
    }
}

pub(crate) fn attempt(
    event: &str,
    endpoint: &str,
    number: u32,
    at: DateTime<Utc>,
    status: Option<u16>,
    end: AttemptEnd,
) -> Attempt {
    Attempt {
        event_id: event.to_string(),
        endpoint_id: endpoint.to_string(),
        event_type: "call.alert".to_string(),
        call_id: Some(42),
        number,
        at,
        status,
        outcome: match status {
            Some(200) => "delivered".to_string(),
            Some(status) => format!("status {status}"),
            None => "network error: connection refused".to_string(),
        },
        end,
    }
}

pub(crate) async fn attempts_of(store: &dyn WebhookStore, ids: &[&str]) -> Vec<Attempt> {
    let ids: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
    store
        .attempts_of(&ids)
        .await
        .unwrap_or_else(|e| panic!("attempts_of({ids:?}) failed: {e}"))
}

pub(crate) async fn deliveries(
    store: &dyn WebhookStore,
    since: DateTime<Utc>,
    failed_only: bool,
    limit: usize,
) -> Vec<Attempt> {
    store
        .deliveries(since, failed_only, limit)
        .await
        .unwrap_or_else(|e| panic!("deliveries({since}, {failed_only}, {limit}) failed: {e}"))
}
