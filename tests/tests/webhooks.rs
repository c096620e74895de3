//! Outbound webhooks (DECISIONS §16) end to end: the local server sends the
//! events of its writes to endpoints the admin command registered; receivers
//! verify every delivery with the Standard Webhooks library from PyPI
//! (tests/receivers/webhook_receiver.py). Order per call, the first attempt
//! within 1 s, the retry schedule, alarm events given up when their alert
//! ends, rotation, disabled endpoints, section filters, and no event lost to
//! a kill -9. Production mode (webhooks carry the installation's calls);
//! runs on SQLite and, with `BLACKBOX_STORE=dynamodb`, on moto.

mod webhooks_support;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use blackbox_tests::*;
use futures_util::StreamExt;
use webhooks_support::*;

const WAIT: Duration = Duration::from_secs(15);

/// Section at once, the house after 2 s.
const TWO_LEVELS: &str = r#"[{"after":0,"to":"section"},{"after":2,"to":"house"}]"#;
/// Only the section: no escalation events in between.
const ONE_LEVEL: &str = r#"[{"after":0,"to":"section"}]"#;

/// Notruf with `levels`, re-alerts only after an hour: no repeat among
/// the events a test counts (moto can make a test last past 15 s).
fn policy(server: &Server, levels: &str) {
    server
        .admin(&[
            "call-types",
            "set",
            "Notruf",
            "--escalation",
            levels,
            "--notification-interval",
            "3600",
        ])
        .success();
}

fn kinds(deliveries: &[Delivery]) -> Vec<&str> {
    deliveries
        .iter()
        .map(|d| d.kind.as_deref().unwrap_or("(unverified)"))
        .collect()
}

fn names(people: &Value) -> Vec<&str> {
    people
        .as_array()
        .expect("a list of people")
        .iter()
        .map(|p| p["name"].as_str().expect("name"))
        .collect()
}

#[tokio::test]
async fn every_event_of_a_call_arrives_verified_in_order_the_first_within_a_second() {
    let _serial = SERIAL.lock().await;
    let server = Server::start(production_options(2));
    policy(&server, TWO_LEVELS);
    let receiver = Receiver::start(None);
    endpoint(&server, &receiver, &[]).await;
    let (_, anna) = staff_member(&server, "Anna", "DECT-101");
    let (ben_id, ben) = staff_member(&server, "Ben", "DECT-102");
    sign_on(&server, &anna, &["1"]).await;
    sign_on(&server, &ben, &["2"]).await;

    let opened = now_seconds();
    let id = open_notruf(&server, &room(1), "1").await;
    let first = receiver.received_until(WAIT, |all| !all.is_empty()).await;
    let latency = first[0].received_at - opened;
    println!("open → first webhook attempt received: {latency:.3} s");
    assert!(
        latency < 1.0,
        "the first attempt came {latency:.3} s after the open"
    );

    // Level 2 after 2 s alerts Ben; he accepts; then the call closes.
    receiver.received_until(WAIT, |all| all.len() >= 3).await;
    respond(&server, &ben, id, "accepted")
        .await
        .expect_status(200);
    receiver.received_until(WAIT, |all| all.len() >= 5).await;
    close(&server, &room(1)).await;
    let all = receiver.received_until(WAIT, |all| all.len() >= 6).await;

    assert_eq!(
        kinds(&all),
        [
            "call.alert",
            "call.escalated",
            "call.alert",
            "call.accepted",
            "call.cancelled",
            "call.closed"
        ]
    );
    for delivery in &all {
        assert!(delivery.verified, "{delivery:?}");
        assert_eq!(delivery.status, 200);
        assert_eq!(delivery.call_id(), Some(id));
        assert_eq!(delivery.content_type.as_deref(), Some("application/json"));
        assert!(delivery.id.starts_with("msg_"));
        assert_eq!(delivery.body["type"], delivery.kind.as_deref().unwrap());
        assert_eq!(delivery.body["data"]["call"]["address"], room(1));
        assert_eq!(delivery.body["data"]["call"]["section"], "1");
        assert_eq!(delivery.body["data"]["call"]["type"]["name"], "Notruf");
    }
    let ids: HashSet<_> = all.iter().map(|d| &d.id).collect();
    assert_eq!(ids.len(), 6, "one webhook-id per event");

    let data = |n: usize| &all[n].body["data"];
    assert_eq!(data(0)["level"], 1);
    assert_eq!(
        data(0)["recipients"],
        json!([{"id": data(0)["recipients"][0]["id"], "name": "Anna", "device": "DECT-101", "alert": 1}])
    );
    assert_eq!(data(1)["level"], 2);
    assert_eq!(data(2)["level"], 2);
    assert_eq!(names(&data(2)["recipients"]), ["Ben"]);
    assert_eq!(data(3)["staff"]["id"], ben_id);
    assert_eq!(data(3)["staff"]["device"], "DECT-102");
    assert_eq!(data(3)["alarm"]["state"], "accepted");
    assert_eq!(names(&data(4)["recipients"]), ["Anna"]);
    assert_eq!(data(4)["reason"], format!("accepted by {ben_id}"));
    assert!(data(5)["call"]["closed_at"].is_string());

    // The log is written at the dispatcher's next round (a fraction of a
    // second after the last attempt).
    let deadline = Instant::now() + WAIT;
    let log = loop {
        let log = server
            .admin(&["webhooks", "deliveries", "--json"])
            .success()
            .json();
        if log.as_array().is_some_and(|a| a.len() >= 6) || Instant::now() > deadline {
            break log;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let log = log.as_array().expect("attempts");
    assert_eq!(log.len(), 6, "{log:#?}");
    assert!(log.iter().all(|a| a["end"] == "delivered"));
}

#[tokio::test]
async fn the_receiver_refuses_a_tampered_body_and_a_stale_timestamp() {
    let _serial = SERIAL.lock().await;
    let server = Server::start(production_options(1));
    policy(&server, ONE_LEVEL);
    let receiver = Receiver::start(None);
    let (_, secret) = endpoint(&server, &receiver, &[]).await;
    let (_, anna) = staff_member(&server, "Anna", "DECT-101");
    sign_on(&server, &anna, &[]).await;
    open_notruf(&server, &room(1), "1").await;
    let genuine = receiver.received_until(WAIT, |all| !all.is_empty()).await[0].clone();
    assert!(genuine.verified);

    let client = reqwest::Client::new();
    let post = |body: String, id: String, timestamp: i64, signature: String| {
        client
            .post(receiver.url())
            .header("content-type", "application/json")
            .header("webhook-id", id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(body)
            .send()
    };
    // The genuine delivery again: accepted (so the refusals below are the
    // library's, not a receiver that refuses everything).
    let again = post(
        genuine.raw_body.clone(),
        genuine.id.clone(),
        genuine.timestamp,
        genuine.signature.clone(),
    )
    .await
    .expect("receiver answers");
    assert_eq!(again.status(), 200);

    let tampered = genuine.raw_body.replace("Zimmer.1", "Zimmer.9");
    assert_ne!(tampered, genuine.raw_body);
    let refused = post(
        tampered,
        genuine.id.clone(),
        genuine.timestamp,
        genuine.signature.clone(),
    )
    .await
    .expect("receiver answers");
    assert_eq!(refused.status(), 400, "a tampered body is refused");

    // Signed correctly with the endpoint's secret, but ten minutes old.
    let stale_at = genuine.timestamp - 600;
    let signature = standardwebhooks::Webhook::new(&secret)
        .expect("secret")
        .sign(&genuine.id, stale_at, genuine.raw_body.as_bytes())
        .expect("signed");
    let stale = post(
        genuine.raw_body.clone(),
        genuine.id.clone(),
        stale_at,
        signature,
    )
    .await
    .expect("receiver answers");
    assert_eq!(stale.status(), 400, "a stale timestamp is refused");
}

#[tokio::test]
async fn three_503s_then_200_is_four_attempts_after_1_2_and_4_seconds_with_one_id() {
    let _serial = SERIAL.lock().await;
    let server = Server::start(production_options(1));
    policy(&server, ONE_LEVEL);
    let receiver = Receiver::start(None);
    endpoint(&server, &receiver, &[]).await;
    receiver.answers(&[503, 503, 503]).await;
    let (_, anna) = staff_member(&server, "Anna", "DECT-101");
    sign_on(&server, &anna, &[]).await;
    open_notruf(&server, &room(1), "1").await;

    let all = receiver
        .received_until(Duration::from_secs(20), |all| {
            all.iter().any(|d| d.status == 200)
        })
        .await;
    assert_eq!(
        all.iter().map(|d| d.status).collect::<Vec<_>>(),
        [503, 503, 503, 200]
    );
    assert!(all.iter().all(|d| d.id == all[0].id && d.verified));
    let gaps: Vec<f64> = all
        .windows(2)
        .map(|w| w[1].received_at - w[0].received_at)
        .collect();
    println!("retry intervals after 503: {gaps:.2?} s (expected 1, 2, 4 ± 20 %)");
    for (gap, expected) in gaps.iter().zip([1.0, 2.0, 4.0]) {
        assert!(
            (gap - expected).abs() <= 0.2 * expected,
            "interval {gap:.2} s, expected {expected} s ± 20 %: {gaps:?}"
        );
    }
    let log = server
        .admin(&["webhooks", "deliveries", "--failed", "--json"])
        .success()
        .json();
    assert_eq!(log.as_array().expect("attempts").len(), 3, "{log:#?}");
}

#[tokio::test]
async fn an_alert_is_no_longer_retried_once_accepted_but_the_accept_and_cancel_are() {
    let _serial = SERIAL.lock().await;
    let server = Server::start(production_options(1));
    policy(&server, ONE_LEVEL);
    let receiver = Receiver::start(None);
    endpoint(&server, &receiver, &[]).await;
    receiver.answers(&[503; 6]).await;
    let (_, anna) = staff_member(&server, "Anna", "DECT-101");
    let (_, ben) = staff_member(&server, "Ben", "DECT-102");
    sign_on(&server, &anna, &[]).await;
    sign_on(&server, &ben, &[]).await;
    let id = open_notruf(&server, &room(1), "1").await;
    receiver.received_until(WAIT, |all| all.len() >= 2).await;
    respond(&server, &anna, id, "accepted")
        .await
        .expect_status(200);

    // The alert's next retry finds it ended; the accept and the cancel for
    // Ben go out after it (in order) and are retried until they land.
    let all = receiver
        .received_until(Duration::from_secs(40), |all| {
            all.iter()
                .filter(|d| d.status == 200)
                .map(|d| d.kind.clone())
                .collect::<HashSet<_>>()
                .len()
                >= 2
        })
        .await;
    let delivered: Vec<_> = all
        .iter()
        .filter(|d| d.status == 200)
        .map(|d| d.kind.as_deref().unwrap())
        .collect();
    assert_eq!(
        delivered,
        ["call.accepted", "call.cancelled"],
        "{:?}",
        kinds(&all)
    );
    let log = server
        .admin(&["webhooks", "deliveries", "--failed", "--json"])
        .success()
        .json();
    let given_up: Vec<_> = log
        .as_array()
        .expect("attempts")
        .iter()
        .filter(|a| a["end"] == "given_up")
        .collect();
    assert_eq!(given_up.len(), 1, "{log:#?}");
    assert_eq!(given_up[0]["event_type"], "call.alert");
    assert_eq!(given_up[0]["reason"], "alert_ended");
}

#[tokio::test]
async fn rotation_filters_and_disabled_endpoints() {
    let _serial = SERIAL.lock().await;
    let server = Server::start(production_options(2));
    policy(&server, ONE_LEVEL);
    let (_, anna) = staff_member(&server, "Anna", "DECT-101");
    sign_on(&server, &anna, &[]).await;
    // Section 1 only; alerts only; disabled; rotated (the receiver knows
    // only the old secret, a second one only the new).
    let section_1 = Receiver::start(None);
    endpoint(&server, &section_1, &["--section", "1"]).await;
    let alerts_only = Receiver::start(None);
    endpoint(&server, &alerts_only, &["--event", "call.alert"]).await;
    let disabled = Receiver::start(None);
    let (disabled_id, _) = endpoint(&server, &disabled, &[]).await;
    server
        .admin(&["webhooks", "disable", &disabled_id])
        .success();
    let old_secret_only = Receiver::start(None);
    let (rotated_id, _) = endpoint(&server, &old_secret_only, &[]).await;
    let rotated = server
        .admin(&["webhooks", "rotate", &rotated_id, "--json"])
        .success()
        .json();
    assert_eq!(rotated["secrets"], 2);
    let new_secret = rotated["secret"].as_str().expect("secret").to_string();
    // The dispatcher reads the endpoints once a second (docs/webhooks.md).
    tokio::time::sleep(ENDPOINT_SEEN_WITHIN).await;

    open_notruf(&server, &room(1), "1").await;
    open_notruf(&server, &room(2), "2").await;
    let old = old_secret_only
        .received_until(WAIT, |all| all.len() >= 2)
        .await;
    assert!(old.iter().all(|d| d.verified), "the old secret verifies");
    assert_eq!(old[0].signature.split(' ').count(), 2, "two signatures");
    // The same deliveries checked with the new secret only.
    old_secret_only.secrets(&[&new_secret]).await;
    close(&server, &room(1)).await;
    let with_new = old_secret_only
        .received_until(WAIT, |all| all.len() >= 3)
        .await;
    assert!(with_new[2].verified, "the new secret verifies");

    let only_1 = section_1.received_until(WAIT, |all| all.len() >= 2).await;
    let sections: HashSet<_> = only_1
        .iter()
        .map(|d| d.body["data"]["call"]["section"].clone())
        .collect();
    assert_eq!(
        sections,
        HashSet::from([json!("1")]),
        "{:?}",
        kinds(&only_1)
    );
    let alerts = alerts_only.received_until(WAIT, |all| all.len() >= 2).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let alerts_now = alerts_only.received().await;
    assert_eq!(
        kinds(&alerts_now),
        ["call.alert", "call.alert"],
        "{alerts:?}"
    );
    assert!(
        disabled.received().await.is_empty(),
        "a disabled endpoint gets nothing"
    );
}

#[tokio::test]
async fn a_kill_9_with_500_undelivered_events_loses_none() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let calls = 500;
    let options = production_options(calls).data_dir(dir.path());
    let mut server = Server::start(options.clone());
    policy(&server, ONE_LEVEL);
    let receiver = Receiver::start(None);
    endpoint(&server, &receiver, &[]).await;
    // Every attempt fails until the restart.
    receiver.answers(&[503; 100_000]).await;
    let (_, anna) = staff_member(&server, "Anna", "DECT-101");
    sign_on(&server, &anna, &[]).await;
    let opening = Instant::now();
    // Eight at a time, as several central systems would.
    let ids: HashSet<i64> = futures_util::stream::iter(1..=calls)
        .map(|n| {
            let server = &server;
            async move { open_notruf(server, &room(n), "1").await }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    assert_eq!(ids.len(), calls);
    println!(
        "{calls} calls opened in {:.1} s",
        opening.elapsed().as_secs_f64()
    );
    server.kill();
    let tried_before = receiver.received().await.len();

    receiver.answers(&[]).await;
    let restarted = Instant::now();
    let server = Server::start(options);
    // Nothing may be lost; how soon is printed (58 s alone on moto, each
    // 2xx to an alert also its handset's receipt: a look at the alarm).
    // The wait is generous for a machine busy with the arm64 build beside.
    let delivered = receiver
        .received_until(Duration::from_secs(300), |all| {
            all.iter()
                .filter(|d| d.status == 200)
                .filter_map(Delivery::call_id)
                .collect::<HashSet<_>>()
                .len()
                >= calls
        })
        .await;
    let alerts: HashMap<i64, usize> = delivered
        .iter()
        .filter(|d| d.status == 200 && d.kind.as_deref() == Some("call.alert"))
        .filter_map(Delivery::call_id)
        .fold(HashMap::new(), |mut count, id| {
            *count.entry(id).or_default() += 1;
            count
        });
    println!(
        "kill -9 with {calls} events undelivered ({tried_before} failed attempts before): \
         all delivered {:.1} s after the restart",
        restarted.elapsed().as_secs_f64()
    );
    assert_eq!(alerts.keys().copied().collect::<HashSet<_>>(), ids);
    assert!(delivered.iter().all(|d| d.verified));
    drop(server);
}

#[tokio::test]
async fn displays_and_staff_pages_say_weiterleitung_gestoert_after_a_minute_of_failing_until_it_works()
 {
    let _serial = SERIAL.lock().await;
    if skip_unless_sqlite("the failing minute is made to pass by a hand edit of the SQLite file") {
        return;
    }
    let server = Server::start(production_options(1));
    policy(&server, ONE_LEVEL);
    let display = server
        .admin(&["displays", "create", "--name", "Flur", "--json"])
        .success()
        .json();
    let token = display["token"].as_str().expect("token");
    let forwarding = || forwarding_of(&server, "/api/v1/display/calls", token);
    // An endpoint nobody listens at (the receiver's port, freed).
    let receiver = Receiver::start(None);
    let port = receiver.port;
    let (_, secret) = endpoint(&server, &receiver, &["--name", "DECT Haus A"]).await;
    drop(receiver);
    let (_, anna) = staff_member(&server, "Anna", "DECT-101");
    sign_on(&server, &anna, &[]).await;
    open_notruf(&server, &room(1), "1").await;

    let deadline = Instant::now() + WAIT;
    while server.admin(&["webhooks", "list", "--json"]).json()[0]["failing_since"].is_null() {
        assert!(
            Instant::now() < deadline,
            "the endpoint never counted as failing"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        forwarding().await,
        json!([]),
        "not before a minute of failing"
    );

    // A minute and more passes (by hand: the first failure moved back).
    let two_minutes_ago = (chrono::Utc::now() - chrono::Duration::minutes(2))
        .format("%Y-%m-%dT%H:%M:%S%.9fZ")
        .to_string();
    open_store_file(server.data_dir())
        .execute(
            "UPDATE webhook_endpoints SET failing_since = ?1",
            [&two_minutes_ago],
        )
        .expect("hand edit");
    let deadline = Instant::now() + WAIT;
    let shown = loop {
        let shown = forwarding().await;
        if shown != json!([]) {
            break shown;
        }
        assert!(Instant::now() < deadline, "never shown");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(shown[0]["name"], "DECT Haus A");
    assert_eq!(shown.as_array().map(Vec::len), Some(1));
    // The staff pages read the same line with their calls.
    assert_eq!(
        forwarding_of(&server, "/api/v1/staff/calls", &anna).await,
        shown,
        "staff pages say it too"
    );

    // The receiver is back: the next retry lands and the line goes.
    let receiver = Receiver::start(Some(port));
    receiver.secrets(&[&secret]).await;
    receiver
        .received_until(Duration::from_secs(20), |all| {
            all.iter().any(|d| d.status == 200)
        })
        .await;
    let deadline = Instant::now() + WAIT;
    while forwarding().await != json!([]) {
        assert!(Instant::now() < deadline, "still shown after a delivery");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        server.admin(&["webhooks", "list", "--json"]).json()[0]["failing_since"].is_null(),
        "the store says it works again"
    );
}

#[tokio::test]
async fn an_element_needing_attention_is_announced_with_every_new_reason() {
    let _serial = SERIAL.lock().await;
    let server = Server::start(production_options(2));
    let receiver = Receiver::start(None);
    endpoint(&server, &receiver, &["--event", "element.attention"]).await;
    let report = |data: &'static str| {
        let server = &server;
        async move {
            server
                .element(&central(), &room(1), data)
                .await
                .expect_status(200);
        }
    };
    let reasons = |delivery: &Delivery| delivery.body["data"]["element"]["reasons"].clone();
    // Fine: nothing to announce. Then the battery runs low.
    report(r#"{"battery":80,"reachable":true}"#).await;
    report(r#"{"battery":12}"#).await;
    // The sweep runs every 10 s.
    let within = Duration::from_secs(25);
    let first = receiver.received_until(within, |all| !all.is_empty()).await;
    assert_eq!(first.len(), 1, "{first:#?}");
    assert!(first[0].verified, "signed as every event");
    assert_eq!(first[0].kind.as_deref(), Some("element.attention"));
    let element = &first[0].body["data"]["element"];
    assert_eq!(element["address"], room(1));
    assert_eq!(element["code"], "Z1");
    assert_eq!(element["battery"], 12);
    assert_eq!(reasons(&first[0]), serde_json::json!(["battery_low"]));

    // Still low: no news. Then it is not reachable either: news, with both.
    report(r#"{"battery":11}"#).await;
    report(r#"{"reachable":false}"#).await;
    let both = receiver.received_until(within, |all| all.len() >= 2).await;
    assert_eq!(
        both.iter().map(reasons).collect::<Vec<_>>(),
        [
            serde_json::json!(["battery_low"]),
            serde_json::json!(["battery_low", "unreachable"])
        ],
        "{both:#?}"
    );
    assert_ne!(both[0].id, both[1].id);
    // Fine again, then low again: news again.
    report(r#"{"battery":95,"reachable":true}"#).await;
    tokio::time::sleep(Duration::from_secs(11)).await;
    report(r#"{"battery":5}"#).await;
    let again = receiver.received_until(within, |all| all.len() >= 3).await;
    assert_eq!(again.len(), 3, "{again:#?}");
    assert_eq!(reasons(&again[2]), serde_json::json!(["battery_low"]));
}
