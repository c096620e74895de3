//! The webhook dispatcher over time it is given (DECISIONS §16), on the
//! embedded store: a receiver down for an hour gets, once back, every event
//! still due (an alert still current, an accept and its cancel) and nothing
//! else; what was given up is in the delivery log, marked so; an event that
//! is not an alarm event is given up after 24 h. Time is made to pass by the
//! rounds' `now`, not waited for.

use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};

use nurse_call_core::{
    AttemptEnd, Backend, CallRetention, Dispatcher, Scope, Sender, Thresholds, WebhookStore,
    sealing::NoKey,
    secrets::new_webhook_secret,
    webhooks::{Endpoint, Outcome},
};
use nurse_call_wiring::StoreChoice;
use store_conformance::alarm_support::{accepted, alerting, kept, line, staff, write};
use store_conformance::support::{close, new_call, open};

fn berlin() -> chrono_tz::Tz {
    nurse_call_core::parse_time_zone("Europe/Berlin").expect("zone")
}

async fn open_store(dir: &Path) -> Arc<dyn Backend> {
    StoreChoice::local(dir.to_path_buf(), None)
        .expect("embedded store")
        .open_prepared(CallRetention::default())
        .await
        .expect("store opens")
}

/// A receiver that is down (no connection) or up (200), and what reached it
/// while up: (type, webhook-id).
#[derive(Default)]
struct Receiver {
    up: Mutex<bool>,
    got: Mutex<Vec<(String, String)>>,
    tried: Mutex<usize>,
}

#[async_trait]
impl Sender for Receiver {
    async fn send(
        &self,
        _endpoint: &Endpoint,
        headers: Vec<(&'static str, String)>,
        body: String,
    ) -> Outcome {
        *self.tried.lock().unwrap() += 1;
        if !*self.up.lock().unwrap() {
            return Outcome::NetworkError;
        }
        let id = headers
            .iter()
            .find(|(name, _)| *name == "webhook-id")
            .map(|(_, value)| value.clone())
            .expect("webhook-id");
        let kind = serde_json::from_str::<serde_json::Value>(&body).unwrap()["type"]
            .as_str()
            .unwrap()
            .to_string();
        self.got.lock().unwrap().push((kind, id));
        Outcome::Status(200)
    }
}

/// Rounds every 30 s of made-up time from `from` to `to`, each waited for.
async fn rounds(dispatcher: &Arc<Dispatcher>, from: DateTime<Utc>, to: DateTime<Utc>) {
    let mut now = from;
    while now <= to {
        dispatcher.round(now).await.expect("round");
        // The attempts run on tasks of their own; the fake answers at once.
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        now += Duration::seconds(30);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_down_for_an_hour_gets_what_is_still_due_and_the_rest_is_logged() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).await;
    let scope = Scope::installation();
    let t0 = Utc::now() - Duration::hours(2);
    store
        .create_endpoint(&Endpoint {
            id: "ep_test".into(),
            name: "alarm server".into(),
            url: "http://127.0.0.1:9/hook".into(),
            events: Vec::new(),
            sections: Vec::new(),
            secrets: vec![new_webhook_secret().unwrap()],
            disabled: false,
            created_at: t0,
            failing_since: None,
            confirms_delivery: false,
            private_network: false,
        })
        .await
        .unwrap();
    let anna = staff(1, &scope, "Anna", &[]);
    let ben = staff(2, &scope, "Ben", &[]);

    // A: alerting all along. B: alerted, then accepted (Ben's alert
    // cancelled). C: alerted, then closed.
    let a = open(store.as_ref(), &scope, &new_call("Zimmer.1", "Notruf", t0)).await;
    let b = open(store.as_ref(), &scope, &new_call("Zimmer.2", "Notruf", t0)).await;
    let c = open(store.as_ref(), &scope, &new_call("Zimmer.3", "Notruf", t0)).await;
    for call in [&a, &b, &c] {
        let alarm = alerting(1, &anna, t0, Some(t0 + Duration::hours(10)));
        let kept_now = kept(store.as_ref(), &scope, call.id).await;
        write(
            store.as_ref(),
            &kept_now,
            &alarm,
            &[line("alert", 1, Some(&anna), t0)],
        )
        .await;
    }
    let kept_b = kept(store.as_ref(), &scope, b.id).await;
    let audit = [
        line("accepted", 0, Some(&anna), t0),
        line("cancel", 0, Some(&ben), t0),
    ];
    write(
        store.as_ref(),
        &kept_b,
        &accepted(&kept_b.alarm, &anna, t0),
        &audit,
    )
    .await;
    let c_now = kept(store.as_ref(), &scope, c.id).await.call;
    close(store.as_ref(), &scope, "Zimmer.3", &[&c_now], t0).await;
    let written = store.outbox(100).await.unwrap();
    let kinds: Vec<_> = written.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "call.alert",
            "call.alert",
            "call.alert",
            "call.accepted",
            "call.cancelled",
            "call.closed"
        ]
    );

    let receiver = Arc::new(Receiver::default());
    let webhooks: Arc<dyn WebhookStore> = store.clone();
    let dispatcher = Dispatcher::new(
        webhooks,
        receiver.clone(),
        Arc::new(NoKey),
        berlin(),
        8,
        Thresholds::default(),
    );

    // Down for an hour.
    rounds(&dispatcher, t0, t0 + Duration::hours(1)).await;
    assert!(receiver.got.lock().unwrap().is_empty());
    let tried = *receiver.tried.lock().unwrap();
    assert!(tried > 20, "retried all hour long: {tried} attempts");

    // Back: what is still due arrives, in order per call.
    *receiver.up.lock().unwrap() = true;
    rounds(
        &dispatcher,
        t0 + Duration::hours(1),
        t0 + Duration::minutes(65),
    )
    .await;
    let got: Vec<(String, String)> = receiver.got.lock().unwrap().clone();
    let id_of = |kind: &str| {
        written
            .iter()
            .find(|e| e.kind.as_str() == kind)
            .unwrap()
            .id
            .clone()
    };
    let got_ids: Vec<&str> = got.iter().map(|(_, id)| id.as_str()).collect();
    let mut expected = vec![
        written[0].id.clone(),
        id_of("call.accepted"),
        id_of("call.cancelled"),
        id_of("call.closed"),
    ];
    let mut got_sorted: Vec<String> = got_ids.iter().map(|id| id.to_string()).collect();
    got_sorted.sort();
    expected.sort();
    assert_eq!(
        got_sorted, expected,
        "A's alert (still current), B's accept and cancel, C's close; not B's or C's alert: {got:?}"
    );
    // In order per call: B's accept before its cancel (across calls any order).
    let place = |kind: &str| got.iter().position(|(k, _)| k == kind).unwrap();
    assert!(place("call.accepted") < place("call.cancelled"), "{got:?}");
    assert!(
        store.outbox(100).await.unwrap().is_empty(),
        "the outbox is empty"
    );

    let log = store
        .deliveries(t0 - Duration::days(1), true, 1_000)
        .await
        .unwrap();
    let given_up: Vec<_> = log
        .iter()
        .filter_map(|a| match &a.end {
            AttemptEnd::GivenUp(reason) => {
                Some((a.call_id, a.event_type.as_str(), reason.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(given_up.len(), 2, "{given_up:?}");
    assert!(given_up.contains(&(Some(b.id), "call.alert", "alert_ended")));
    assert!(given_up.contains(&(Some(c.id), "call.alert", "alert_ended")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_not_delivered_within_24_hours_is_given_up_and_logged() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).await;
    let scope = Scope::installation();
    let t0 = Utc::now() - Duration::hours(30);
    store
        .create_endpoint(&Endpoint {
            id: "ep_test".into(),
            name: "pager gateway".into(),
            url: "http://127.0.0.1:9/hook".into(),
            events: vec![nurse_call_core::webhooks::EventType::CallClosed],
            sections: Vec::new(),
            secrets: vec![new_webhook_secret().unwrap()],
            disabled: false,
            created_at: t0,
            failing_since: None,
            confirms_delivery: false,
            private_network: false,
        })
        .await
        .unwrap();
    let anna = staff(1, &scope, "Anna", &[]);
    let call = open(store.as_ref(), &scope, &new_call("Zimmer.1", "Notruf", t0)).await;
    let kept_now = kept(store.as_ref(), &scope, call.id).await;
    write(
        store.as_ref(),
        &kept_now,
        &alerting(1, &anna, t0, None),
        &[],
    )
    .await;
    let now = kept(store.as_ref(), &scope, call.id).await.call;
    close(store.as_ref(), &scope, "Zimmer.1", &[&now], t0).await;

    let receiver = Arc::new(Receiver::default());
    let webhooks: Arc<dyn WebhookStore> = store.clone();
    let dispatcher = Dispatcher::new(
        webhooks,
        receiver.clone(),
        Arc::new(NoKey),
        berlin(),
        8,
        Thresholds::default(),
    );
    // Down for a day and a bit (rounds every 30 s of made-up time would be
    // 3,000 rounds: every 10 minutes is enough, the backoff is 30 s).
    let mut at = t0;
    while at <= t0 + Duration::hours(25) {
        dispatcher.round(at).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        at += Duration::minutes(10);
    }
    *receiver.up.lock().unwrap() = true;
    rounds(&dispatcher, at, at + Duration::minutes(2)).await;
    assert!(
        receiver.got.lock().unwrap().is_empty(),
        "nothing after 24 h"
    );
    assert!(store.outbox(10).await.unwrap().is_empty());
    let log = store
        .deliveries(t0 - Duration::days(1), true, 1_000)
        .await
        .unwrap();
    let last = log.first().expect("the log has the attempts");
    assert_eq!(last.event_type, "call.closed");
    assert_eq!(last.end, AttemptEnd::GivenUp("window_passed".into()));
}
