//! `element.attention`'s marks (DECISIONS §12, §16): a mark moves with the
//! event that announces news in one atomic step, only from the mark the
//! sweep read, so news is kept once even when two processes sweep at once.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::Duration;
use tokio::sync::Barrier;

use nurse_call_core::{
    Element, Thresholds, WebhookStore, clock,
    webhooks::{AttentionChange, EventType, attention_changes},
};

use crate::Harness;
use crate::support::*;
use crate::webhook_support::*;

fn element(battery: f64, reachable: bool) -> Element {
    Element {
        address: "Zimmer.1".into(),
        code: "Z1".into(),
        name: "Zimmer 1".into(),
        battery: Some(battery),
        position: None,
        reachable: Some(reachable),
        updated_at: t(0),
        version: 2,
    }
}

/// The one change the sweep makes for `element` at `t(60)` over `marks`.
fn change_of(element: &Element, marks: &HashMap<String, Vec<String>>) -> AttentionChange {
    let mut changes = attention_changes(
        std::slice::from_ref(element),
        marks,
        t(0) + Duration::seconds(60),
        &Thresholds::default(),
        clock::new_event_id,
    );
    assert_eq!(changes.len(), 1, "{changes:#?}");
    changes.remove(0)
}

async fn marks(hooks: &dyn WebhookStore) -> HashMap<String, Vec<String>> {
    hooks.attention_marks().await.expect("attention_marks")
}

async fn mark(hooks: &dyn WebhookStore, change: &AttentionChange) -> bool {
    hooks.mark_attention(change).await.expect("mark_attention")
}

fn texts(reasons: &[&str]) -> Vec<String> {
    reasons.iter().map(|r| r.to_string()).collect()
}

/// News is kept with its mark; the same news again (from the mark read
/// before) writes nothing; two processes announcing the same further news
/// at once keep it once; a reason gone moves the mark without an event.
pub async fn attention_marks_move_with_their_event_once(harness: Harness) {
    let hooks = webhooks(&harness);
    an_endpoint_wants_events(hooks.as_ref()).await;
    assert!(marks(hooks.as_ref()).await.is_empty(), "no mark at first");

    let low = change_of(&element(12.0, true), &HashMap::new());
    assert!(mark(hooks.as_ref(), &low).await, "the first news is kept");
    assert_eq!(
        marks(hooks.as_ref()).await,
        HashMap::from([("Zimmer.1".to_string(), texts(&["battery_low"]))])
    );
    let events = outbox(hooks.as_ref()).await;
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0].kind, EventType::ElementAttention);
    assert_eq!(events[0].id, low.event.as_ref().unwrap().id);
    assert_eq!(
        (events[0].call_id, events[0].section.as_deref()),
        (None, None)
    );
    let kept = events[0].facts.element.as_ref().expect("the element kept");
    assert_eq!(kept.reasons, ["battery_low"]);
    assert_eq!(kept.to_element(), element(12.0, true));

    assert!(
        !mark(hooks.as_ref(), &low).await,
        "the same news from the mark read before: another process kept it"
    );
    assert_eq!(outbox(hooks.as_ref()).await.len(), 1, "not kept twice");

    // Two sweeps find the same further news at once.
    let read = marks(hooks.as_ref()).await;
    let both = change_of(&element(12.0, false), &read);
    let barrier = Arc::new(Barrier::new(2));
    let racers = (0..2).map(|n| {
        let (hooks, barrier) = (Arc::clone(&hooks), Arc::clone(&barrier));
        let mut change = both.clone();
        change.event.as_mut().unwrap().id = format!("msg_racer{n}");
        tokio::spawn(async move {
            barrier.wait().await;
            hooks.mark_attention(&change).await.expect("mark_attention")
        })
    });
    let mut won = 0;
    for racer in racers.collect::<Vec<_>>() {
        won += usize::from(racer.await.expect("racer"));
    }
    assert_eq!(won, 1, "exactly one of two sweeps keeps the news");
    let events = outbox(hooks.as_ref()).await;
    assert_eq!(events.len(), 2, "{events:#?}");
    assert_eq!(
        events[1].facts.element.as_ref().unwrap().reasons,
        ["battery_low", "unreachable"]
    );

    let fixed = change_of(&element(95.0, true), &marks(hooks.as_ref()).await);
    assert_eq!(fixed.event, None);
    assert!(mark(hooks.as_ref(), &fixed).await);
    assert_eq!(
        marks(hooks.as_ref()).await,
        HashMap::from([("Zimmer.1".to_string(), Vec::new())]),
        "fine again: the mark is empty, so a low battery is news again"
    );
    assert_eq!(outbox(hooks.as_ref()).await.len(), 2, "no event for that");
}
