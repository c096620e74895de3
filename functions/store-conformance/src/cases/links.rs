//! The supervised links (DECISIONS §19, [`LinkStore`]): a consumer's
//! heartbeat, its signs of life (the later one kept), its silence marked
//! only while no request came in between, ended by the next request or by
//! the heartbeat's removal, its Technik alerts counted once each, and the
//! history of silences for the report.

use std::sync::Arc;

use nurse_call_core::{
    LinkStore,
    links::{Link, Silence, SilenceRecord},
};

use crate::Harness;
use crate::support::*;

const CENTRAL: &str = "5117e000-0000-4000-8000-000000000001";
const GATEWAY: &str = "5117e000-0000-4000-8000-000000000002";
const UNKNOWN: &str = "5117e000-0000-4000-8000-0000000000ff";

fn links(harness: &Harness) -> Arc<dyn LinkStore> {
    harness.store.clone()
}

/// [`CENTRAL`] (and [`GATEWAY`], without a heartbeat) stored, CENTRAL
/// supervised every 60 s from [`t`]`(0)`.
async fn supervised(harness: &Harness) {
    for id in [CENTRAL, GATEWAY] {
        harness
            .store
            .create_consumer(&consumer(id, None))
            .await
            .unwrap();
    }
    assert!(
        harness
            .store
            .set_heartbeat(CENTRAL, Some(60), t(0))
            .await
            .unwrap()
    );
}

fn silence_since(seconds: i64) -> Silence {
    Silence {
        since: t(seconds),
        detected_at: t(seconds + 131),
        alerts: 0,
        last_alert_at: None,
    }
}

async fn only_link(harness: &Harness) -> Link {
    let mut all = links(harness).links().await.unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    all.remove(0)
}

/// `links` lists the consumers with a heartbeat; `set_heartbeat` sets,
/// changes (keeping the last sign of life) and removes it.
pub async fn links_are_the_consumers_with_a_heartbeat(harness: Harness) {
    supervised(&harness).await;
    assert_eq!(
        only_link(&harness).await,
        Link {
            consumer: CENTRAL.into(),
            name: format!("consumer {CENTRAL}"),
            heartbeat_seconds: 60,
            last_seen_at: t(0),
            silence: None,
        }
    );
    let consumer = harness.store.consumer(CENTRAL).await.unwrap().unwrap();
    assert_eq!(consumer.heartbeat_seconds, Some(60));
    let other = harness.store.consumer(GATEWAY).await.unwrap().unwrap();
    assert_eq!(other.heartbeat_seconds, None);

    // A new interval keeps the last sign of life.
    assert!(
        harness
            .store
            .set_heartbeat(CENTRAL, Some(120), t(50))
            .await
            .unwrap()
    );
    let link = only_link(&harness).await;
    assert_eq!((link.heartbeat_seconds, link.last_seen_at), (120, t(0)));

    assert!(
        !harness
            .store
            .set_heartbeat(UNKNOWN, Some(60), t(0))
            .await
            .unwrap()
    );
    assert!(harness.store.consumer(UNKNOWN).await.unwrap().is_none());

    assert!(
        harness
            .store
            .set_heartbeat(CENTRAL, None, t(60))
            .await
            .unwrap()
    );
    assert!(links(&harness).links().await.unwrap().is_empty());
    let consumer = harness.store.consumer(CENTRAL).await.unwrap().unwrap();
    assert_eq!(consumer.heartbeat_seconds, None);
}

/// A sign of life keeps the later time; none is kept without a heartbeat.
pub async fn sign_of_life_keeps_the_later_time(harness: Harness) {
    supervised(&harness).await;
    let links = links(&harness);
    assert_eq!(links.sign_of_life(CENTRAL, t(10)).await.unwrap(), None);
    assert_eq!(only_link(&harness).await.last_seen_at, t(10));
    // A request answered late by another process: the later one stays.
    assert_eq!(links.sign_of_life(CENTRAL, t(5)).await.unwrap(), None);
    assert_eq!(only_link(&harness).await.last_seen_at, t(10));

    // No heartbeat, or no consumer: nothing kept.
    assert_eq!(links.sign_of_life(GATEWAY, t(20)).await.unwrap(), None);
    assert_eq!(links.sign_of_life(UNKNOWN, t(20)).await.unwrap(), None);
    assert_eq!(links.links().await.unwrap().len(), 1);
    assert!(harness.store.consumer(UNKNOWN).await.unwrap().is_none());
}

/// A silence is marked once, only while the link was last seen when the
/// watcher thought, and opens its history entry.
pub async fn mark_silent_only_while_no_request_came(harness: Harness) {
    supervised(&harness).await;
    let links = links(&harness);
    // Seen later than the watcher thought: a request in between wins.
    assert!(
        !links
            .mark_silent(CENTRAL, t(-5), &silence_since(-5))
            .await
            .unwrap()
    );
    // Not supervised, or unknown.
    assert!(
        !links
            .mark_silent(GATEWAY, t(0), &silence_since(0))
            .await
            .unwrap()
    );
    assert!(
        !links
            .mark_silent(UNKNOWN, t(0), &silence_since(0))
            .await
            .unwrap()
    );
    assert!(
        links
            .mark_silent(CENTRAL, t(0), &silence_since(0))
            .await
            .unwrap()
    );
    assert_eq!(only_link(&harness).await.silence, Some(silence_since(0)));
    // Once only.
    assert!(
        !links
            .mark_silent(CENTRAL, t(0), &silence_since(0))
            .await
            .unwrap()
    );
    assert_eq!(
        links.silences(t(0), t(1000)).await.unwrap(),
        [SilenceRecord {
            consumer: CENTRAL.into(),
            name: format!("consumer {CENTRAL}"),
            since: t(0),
            ended_at: None,
        }]
    );
}

/// The next request ends a silence in the same write and returns it.
pub async fn sign_of_life_ends_a_silence(harness: Harness) {
    supervised(&harness).await;
    let links = links(&harness);
    assert!(
        links
            .mark_silent(CENTRAL, t(0), &silence_since(0))
            .await
            .unwrap()
    );
    assert!(
        links
            .mark_silence_alerted(CENTRAL, 1, t(140))
            .await
            .unwrap()
    );
    let ended = links.sign_of_life(CENTRAL, t(300)).await.unwrap();
    assert_eq!(
        ended,
        Some(Silence {
            alerts: 1,
            last_alert_at: Some(t(140)),
            ..silence_since(0)
        }),
        "the ended silence, as kept"
    );
    let link = only_link(&harness).await;
    assert_eq!((link.last_seen_at, link.silence), (t(300), None));
    assert_eq!(
        links.silences(t(0), t(1000)).await.unwrap()[0].ended_at,
        Some(t(300))
    );
    // The next request ends nothing.
    assert_eq!(links.sign_of_life(CENTRAL, t(301)).await.unwrap(), None);
    // And a later silence marks again.
    assert!(
        links
            .mark_silent(CENTRAL, t(301), &silence_since(301))
            .await
            .unwrap()
    );
    assert_eq!(links.silences(t(0), t(1000)).await.unwrap().len(), 2);
}

/// Each Technik alert of a silence is counted once, in order.
pub async fn silence_alerts_are_counted_once_each(harness: Harness) {
    supervised(&harness).await;
    let links = links(&harness);
    assert!(
        !links
            .mark_silence_alerted(CENTRAL, 1, t(131))
            .await
            .unwrap(),
        "not silent"
    );
    assert!(
        links
            .mark_silent(CENTRAL, t(0), &silence_since(0))
            .await
            .unwrap()
    );
    assert!(
        links
            .mark_silence_alerted(CENTRAL, 1, t(131))
            .await
            .unwrap()
    );
    assert!(
        !links
            .mark_silence_alerted(CENTRAL, 1, t(132))
            .await
            .unwrap(),
        "a second watcher's same alert"
    );
    assert!(
        !links
            .mark_silence_alerted(CENTRAL, 3, t(431))
            .await
            .unwrap()
    );
    assert!(
        links
            .mark_silence_alerted(CENTRAL, 2, t(431))
            .await
            .unwrap()
    );
    let silence = only_link(&harness).await.silence.unwrap();
    assert_eq!((silence.alerts, silence.last_alert_at), (2, Some(t(431))));
}

/// Removing the heartbeat ends its silence in the history.
pub async fn removing_a_heartbeat_ends_its_silence(harness: Harness) {
    supervised(&harness).await;
    let links = links(&harness);
    assert!(
        links
            .mark_silent(CENTRAL, t(0), &silence_since(0))
            .await
            .unwrap()
    );
    assert!(
        harness
            .store
            .set_heartbeat(CENTRAL, None, t(400))
            .await
            .unwrap()
    );
    assert!(links.links().await.unwrap().is_empty());
    assert_eq!(
        links.silences(t(0), t(1000)).await.unwrap()[0].ended_at,
        Some(t(400))
    );
    assert_eq!(links.sign_of_life(CENTRAL, t(500)).await.unwrap(), None);
    // Supervised again: seen from then on, not silent.
    assert!(
        harness
            .store
            .set_heartbeat(CENTRAL, Some(30), t(600))
            .await
            .unwrap()
    );
    let link = only_link(&harness).await;
    assert_eq!((link.last_seen_at, link.silence), (t(600), None));
}

/// The report reads the silences that overlap its span, oldest first.
pub async fn silences_are_those_overlapping_the_span(harness: Harness) {
    supervised(&harness).await;
    let links = links(&harness);
    // Silent from 0 to 300, then from 400 on.
    assert!(
        links
            .mark_silent(CENTRAL, t(0), &silence_since(0))
            .await
            .unwrap()
    );
    links.sign_of_life(CENTRAL, t(300)).await.unwrap();
    links.sign_of_life(CENTRAL, t(400)).await.unwrap();
    assert!(
        links
            .mark_silent(CENTRAL, t(400), &silence_since(400))
            .await
            .unwrap()
    );
    let sinces = |records: Vec<SilenceRecord>| -> Vec<_> {
        records.into_iter().map(|record| record.since).collect()
    };
    assert_eq!(
        sinces(links.silences(t(-100), t(1000)).await.unwrap()),
        [t(0), t(400)],
        "oldest first"
    );
    assert_eq!(
        sinces(links.silences(t(100), t(200)).await.unwrap()),
        [t(0)]
    );
    assert_eq!(
        sinces(links.silences(t(300), t(400)).await.unwrap()),
        Vec::<chrono::DateTime<chrono::Utc>>::new(),
        "ended at the span's start, began at its end"
    );
    assert_eq!(
        sinces(links.silences(t(5000), t(6000)).await.unwrap()),
        [t(400)],
        "a silence that lasts"
    );
    assert!(links.silences(t(-200), t(0)).await.unwrap().is_empty());
}
