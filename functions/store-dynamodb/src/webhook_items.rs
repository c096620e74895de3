//! The items of outbound webhooks (DECISIONS §16; docs/data-model.md
//! "Webhooks"): endpoints, the outbox's events and the delivery log's
//! attempts, all in the data table under partitions starting with
//! `webhook#`, which no scope does (so they never meet an address).

use std::sync::atomic::{AtomicI64, Ordering};

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};

use nurse_call_core::{
    Attempt, AttemptEnd, Scope, StoreError,
    webhooks::{
        Endpoint, EventType,
        outbox::{Facts, OutboxEvent},
    },
};

use crate::alarm_items::{get_precise, get_texts, precise, texts};
use crate::item::{Item, get_bool, get_n, get_s, n, required, s};

/// The one partition of every endpoint (an installation has a handful).
pub const ENDPOINTS_PK: &str = "webhook#endpoints";
/// The one partition of the outbox, ordered by [`outbox_sk`].
pub const OUTBOX_PK: &str = "webhook#outbox";
/// The `by_scope` listing of the delivery log, newest last by `list_sk`.
pub const DELIVERIES_LIST: &str = "webhook#deliveries";
/// How long an attempt stays in the delivery log (DECISIONS §16).
pub const DELIVERY_LOG_DAYS: i64 = 30;
/// How long an event stays in the outbox when nobody takes it out: the
/// dispatcher gives every event up within 24 h of its write (an alarm event
/// sooner, with its alert), so this only bounds an outbox nobody reads
/// (a store without a dispatcher).
pub const OUTBOX_DAYS: i64 = 7;

/// The partition of one event's attempts (consistent `Query` per event).
pub fn attempts_pk(event_id: &str) -> String {
    format!("webhook#attempts#{event_id}")
}

/// The instant a write keeps its events at: the clock, but always later
/// than the last one this process took, so that two writes of one call
/// (the second built after the first committed, their conditions see to
/// that) sort in the order they were made even if the clock steps back,
/// and no two writes of this process share a stamp.
pub fn write_stamp(now: DateTime<Utc>) -> DateTime<Utc> {
    static LAST: AtomicI64 = AtomicI64::new(i64::MIN);
    let wanted = now.timestamp_nanos_opt().unwrap_or(i64::MAX);
    let mut last = LAST.load(Ordering::SeqCst);
    loop {
        let next = wanted.max(last.saturating_add(1));
        match LAST.compare_exchange(last, next, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return DateTime::from_timestamp_nanos(next),
            Err(actual) => last = actual,
        }
    }
}

/// Sort key of an outbox event: the write's stamp, the event's place in
/// that write (its events share the stamp), and its id (unique even when
/// two processes stamp alike).
pub fn outbox_sk(stamp: DateTime<Utc>, index: usize, id: &str) -> String {
    format!("{}#{index:03}#{id}", precise(stamp))
}

fn epoch_seconds(at: DateTime<Utc>, days: i64) -> i64 {
    (at + chrono::Duration::days(days)).timestamp()
}

/// The attributes an update replaces (`update_endpoint`), by name.
pub fn endpoint_settings(endpoint: &Endpoint) -> [(&'static str, AttributeValue); 8] {
    [
        ("name", s(&endpoint.name)),
        ("url", s(&endpoint.url)),
        ("events", texts(&endpoint.event_names())),
        ("sections", texts(&endpoint.sections)),
        ("secrets", texts(&endpoint.secrets)),
        ("disabled", AttributeValue::Bool(endpoint.disabled)),
        (
            "confirms_delivery",
            AttributeValue::Bool(endpoint.confirms_delivery),
        ),
        (
            "private_network",
            AttributeValue::Bool(endpoint.private_network),
        ),
    ]
}

/// An endpoint's item in the endpoints partition, keyed by its id.
pub fn endpoint_item(endpoint: &Endpoint) -> Item {
    let mut item = Item::from([
        ("pk".to_string(), s(ENDPOINTS_PK)),
        ("sk".to_string(), s(&endpoint.id)),
        ("id".to_string(), s(&endpoint.id)),
        ("created_at".to_string(), s(precise(endpoint.created_at))),
    ]);
    for (name, value) in endpoint_settings(endpoint) {
        item.insert(name.to_string(), value);
    }
    if let Some(since) = endpoint.failing_since {
        item.insert("failing_since".into(), s(precise(since)));
    }
    item
}

/// An endpoint from its item; an unreadable `disabled` counts as disabled,
/// an unknown event name is an error.
pub fn endpoint_from_item(item: &Item) -> Result<Endpoint, StoreError> {
    let events = required(get_texts(item, "events"), "endpoint", "events")?
        .iter()
        .map(|name| required(EventType::parse(name), "endpoint", "events"))
        .collect::<Result<_, _>>()?;
    Ok(Endpoint {
        id: required(get_s(item, "id"), "endpoint", "id")?,
        name: get_s(item, "name").unwrap_or_default(),
        url: required(get_s(item, "url"), "endpoint", "url")?,
        events,
        sections: required(get_texts(item, "sections"), "endpoint", "sections")?,
        secrets: required(get_texts(item, "secrets"), "endpoint", "secrets")?,
        // Unreadable counts as disabled: a hand edit never sends anywhere.
        disabled: get_bool(item, "disabled").unwrap_or(true),
        created_at: required(get_precise(item, "created_at"), "endpoint", "created_at")?,
        failing_since: get_precise(item, "failing_since"),
        // An item written before the flag existed: its 2xx is a receipt,
        // as it was.
        confirms_delivery: get_bool(item, "confirms_delivery").unwrap_or(false),
        // Likewise: an inside address is refused until the admin creates
        // it again with `--private-network`.
        private_network: get_bool(item, "private_network").unwrap_or(false),
    })
}

/// An event of a write stamped `stamp`, `index`th of that write.
pub fn outbox_item(event: &OutboxEvent, stamp: DateTime<Utc>, index: usize) -> Item {
    let mut item = Item::from([
        ("pk".to_string(), s(OUTBOX_PK)),
        ("sk".to_string(), s(outbox_sk(stamp, index, &event.id))),
        ("id".to_string(), s(&event.id)),
        ("scope".to_string(), s(event.scope.as_str())),
        ("kind".to_string(), s(event.kind.as_str())),
        ("at".to_string(), s(precise(event.at))),
        ("facts".to_string(), s(event.facts.to_json())),
        ("ttl".to_string(), n(epoch_seconds(stamp, OUTBOX_DAYS))),
    ]);
    if let Some(call_id) = event.call_id {
        item.insert("call_id".into(), n(call_id));
    }
    if let Some(section) = &event.section {
        item.insert("section".into(), s(section));
    }
    item
}

/// An outbox event from its item, its sort key as its position (where the
/// dispatcher goes on from).
pub fn outbox_from_item(item: &Item) -> Result<OutboxEvent, StoreError> {
    let kind = required(get_s(item, "kind"), "outbox event", "kind")?;
    let facts = required(get_s(item, "facts"), "outbox event", "facts")?;
    Ok(OutboxEvent {
        id: required(get_s(item, "id"), "outbox event", "id")?,
        position: required(get_s(item, "sk"), "outbox event", "sk")?,
        scope: Scope::from_key(&required(get_s(item, "scope"), "outbox event", "scope")?),
        kind: required(EventType::parse(&kind), "outbox event", "kind")?,
        at: required(get_precise(item, "at"), "outbox event", "at")?,
        call_id: get_n(item, "call_id"),
        section: get_s(item, "section"),
        facts: Facts::from_json(&facts)
            .map_err(|problem| StoreError::Internal(format!("stored outbox facts: {problem}")))?,
    })
}

/// Sort key of an attempt in its event's partition.
pub fn attempt_sk(endpoint_id: &str, number: u32) -> String {
    format!("{endpoint_id}#{number:010}")
}

/// Sort key of an attempt in the delivery log's listing: when, then the
/// attempt's number (the embedded store's order), then whose.
pub fn delivery_list_sk(attempt: &Attempt) -> String {
    format!(
        "{}#{:010}#{}#{}",
        precise(attempt.at),
        attempt.number,
        attempt.event_id,
        attempt.endpoint_id
    )
}

/// The lower bound of a listing from `since` on (`#` sorts before every
/// digit, so an attempt at exactly `since` is in it).
pub fn delivery_list_from(since: DateTime<Utc>) -> String {
    precise(since)
}

/// A delivery attempt's item: in its event's partition, listed in the
/// delivery log, removed by TTL [`DELIVERY_LOG_DAYS`] days after it.
pub fn attempt_item(attempt: &Attempt) -> Item {
    let mut item = Item::from([
        ("pk".to_string(), s(attempts_pk(&attempt.event_id))),
        (
            "sk".to_string(),
            s(attempt_sk(&attempt.endpoint_id, attempt.number)),
        ),
        ("list_pk".to_string(), s(DELIVERIES_LIST)),
        ("list_sk".to_string(), s(delivery_list_sk(attempt))),
        ("event_id".to_string(), s(&attempt.event_id)),
        ("endpoint_id".to_string(), s(&attempt.endpoint_id)),
        ("number".to_string(), n(attempt.number)),
        ("event_type".to_string(), s(&attempt.event_type)),
        ("at".to_string(), s(precise(attempt.at))),
        ("outcome".to_string(), s(&attempt.outcome)),
        (
            "ttl".to_string(),
            n(epoch_seconds(attempt.at, DELIVERY_LOG_DAYS)),
        ),
    ]);
    if let Some(call_id) = attempt.call_id {
        item.insert("call_id".into(), n(call_id));
    }
    if let Some(status) = attempt.status {
        item.insert("status".into(), n(status));
    }
    let end_kind = match &attempt.end {
        AttemptEnd::Delivered => "delivered",
        AttemptEnd::RetryAt(at) => {
            item.insert("retry_at".into(), s(precise(*at)));
            "retry"
        }
        AttemptEnd::GivenUp(reason) => {
            item.insert("reason".into(), s(reason));
            "given_up"
        }
    };
    item.insert("end_kind".into(), s(end_kind));
    item
}

/// An attempt from its item; an error when an attribute it needs is missing
/// or its `end_kind` is unknown.
pub fn attempt_from_item(item: &Item) -> Result<Attempt, StoreError> {
    let end = match required(get_s(item, "end_kind"), "attempt", "end_kind")?.as_str() {
        "delivered" => AttemptEnd::Delivered,
        "retry" => AttemptEnd::RetryAt(required(
            get_precise(item, "retry_at"),
            "attempt",
            "retry_at",
        )?),
        "given_up" => AttemptEnd::GivenUp(get_s(item, "reason").unwrap_or_default()),
        other => {
            return Err(StoreError::Internal(format!(
                "stored attempt has an unknown \"end_kind\" {other:?}"
            )));
        }
    };
    Ok(Attempt {
        event_id: required(get_s(item, "event_id"), "attempt", "event_id")?,
        endpoint_id: required(get_s(item, "endpoint_id"), "attempt", "endpoint_id")?,
        event_type: required(get_s(item, "event_type"), "attempt", "event_type")?,
        call_id: get_n(item, "call_id"),
        number: required(get_n(item, "number"), "attempt", "number")?,
        at: required(get_precise(item, "at"), "attempt", "at")?,
        status: get_n(item, "status"),
        outcome: get_s(item, "outcome").unwrap_or_default(),
        end,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_grow_even_when_the_clock_steps_back() {
        let now: DateTime<Utc> = "2026-05-01T10:00:00Z".parse().unwrap();
        let first = write_stamp(now);
        let second = write_stamp(now - chrono::Duration::seconds(5));
        assert!(second > first);
        assert!(outbox_sk(second, 0, "msg_a") > outbox_sk(first, 1, "msg_b"));
        assert!(outbox_sk(first, 1, "msg_a") > outbox_sk(first, 0, "msg_b"));
    }

    #[test]
    fn attempts_read_back_and_list_by_time_then_number() {
        let at: DateTime<Utc> = "2026-05-01T10:00:00.25Z".parse().unwrap();
        for end in [
            AttemptEnd::Delivered,
            AttemptEnd::RetryAt(at + chrono::Duration::seconds(2)),
            AttemptEnd::GivenUp("refused".into()),
        ] {
            let attempt = Attempt {
                event_id: "msg_1".into(),
                endpoint_id: "e-1".into(),
                event_type: "call.alert".into(),
                call_id: Some(7),
                number: 2,
                at,
                status: Some(503),
                outcome: "status 503".into(),
                end,
            };
            assert_eq!(attempt_from_item(&attempt_item(&attempt)).unwrap(), attempt);
            assert!(delivery_list_sk(&attempt) >= delivery_list_from(at));
            assert!(
                delivery_list_sk(&attempt)
                    < delivery_list_from(at + chrono::Duration::nanoseconds(1))
            );
        }
    }

    #[test]
    fn an_endpoint_stored_before_the_flag_does_not_confirm_delivery() {
        let endpoint = Endpoint {
            id: "ep_1".into(),
            name: "alarm.example".into(),
            url: "https://alarm.example/hook".into(),
            events: Vec::new(),
            sections: Vec::new(),
            secrets: vec!["whsec_x".into()],
            disabled: false,
            created_at: "2026-05-01T10:00:00.25Z".parse().unwrap(),
            failing_since: None,
            confirms_delivery: true,
            private_network: true,
        };
        let mut item = endpoint_item(&endpoint);
        assert_eq!(endpoint_from_item(&item).unwrap(), endpoint);
        item.remove("confirms_delivery");
        item.remove("private_network");
        let old = endpoint_from_item(&item).unwrap();
        assert!(!old.confirms_delivery);
        assert!(!old.private_network);
    }
}
