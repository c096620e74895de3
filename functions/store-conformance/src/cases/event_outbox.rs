//! Events kept on their own ([`EventOutbox`](nurse_call_core::EventOutbox),
//! DECISIONS §16 "Durable", §19): a silent central system's
//! `consumer.silent` and `consumer.back`, which belong to no call's or
//! element's write. Kept as given (id, time, facts), in the order of the
//! writes, and taken out as a write's events are.

use nurse_call_core::{
    Scope, clock,
    webhooks::{
        EventType,
        outbox::{Facts, LinkFacts, OutboxEvent},
    },
};

use crate::Harness;
use crate::support::*;
use crate::webhook_support::*;

/// `consumer.silent` (or `consumer.back` with `back`) of the central system
/// `consumer`, last heard at `since`, at `at`.
fn link_event(consumer: &str, since: i64, at: i64, back: bool) -> OutboxEvent {
    OutboxEvent {
        id: clock::new_event_id(),
        position: String::new(),
        scope: Scope::installation(),
        kind: if back {
            EventType::ConsumerBack
        } else {
            EventType::ConsumerSilent
        },
        at: t(at),
        call_id: None,
        section: None,
        facts: Facts::of_link(LinkFacts {
            consumer: consumer.to_string(),
            name: format!("Rufanlage {consumer}"),
            since: t(since),
        }),
    }
}

/// `event` without the position the store gave it.
fn without_position(event: &OutboxEvent) -> OutboxEvent {
    OutboxEvent {
        position: String::new(),
        ..event.clone()
    }
}

/// Nothing at all is no error. With an endpoint enabled, the events of one
/// `keep_events` come back as given (the id, the time, the central system's
/// facts) in their order, and a later call's after them whatever time it
/// tells of; `finish_events` takes them out by position.
pub async fn events_kept_on_their_own_come_back_as_given(harness: Harness) {
    let (store, hooks) = (harness.store.as_ref(), webhooks(&harness));
    store.keep_events(&[]).await.expect("nothing at all");
    an_endpoint_wants_events(hooks.as_ref()).await;

    let silent = link_event("north", 0, 70, false);
    let back = link_event("north", 0, 200, true);
    store
        .keep_events(&[silent.clone(), back.clone()])
        .await
        .expect("keep_events");
    // Kept later, telling of an earlier time.
    let other = link_event("south", 10, 100, false);
    store
        .keep_events(std::slice::from_ref(&other))
        .await
        .expect("keep_events");

    let events = outbox(hooks.as_ref()).await;
    assert_eq!(
        events.iter().map(without_position).collect::<Vec<_>>(),
        [silent, back, other],
        "as given, in the order of the writes: {events:#?}"
    );
    assert!(
        events.iter().all(|event| !event.position.is_empty()),
        "each has its place: {events:#?}"
    );

    let first_two = positions(&events[..2]);
    hooks
        .finish_events(&first_two)
        .await
        .expect("finish_events");
    let left = outbox(hooks.as_ref()).await;
    assert_eq!(event_ids(&left), event_ids(&events[2..]), "{left:#?}");
}
