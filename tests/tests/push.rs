//! Web Push to the staff's phones (DECISIONS §15), end to end against a
//! real push service stand-in nobody here wrote (`web-push-testing`,
//! push/stand_in.rs): a subscription it made is registered through
//! `POST /api/v1/staff/push-subscriptions` with the key of
//! `GET /api/v1/staff/push-key`; every alert, re-alert and cancel is
//! received and **decrypted** by it, in order, each with `TTL: 60`,
//! `Urgency: high` and the call as `Topic`; a 429 is retried (after 1 s ±
//! 20 %); its 410 removes the subscription, which is not pushed to again.
//! And the registration's own answers: 401 without a token, the 422s.
//!
//! Needs the local server's push sender (skipped under cargo lambda watch,
//! tests/lambda-watch-skips.txt); runs on SQLite and on moto.

mod alarms_support;
#[path = "push/stand_in.rs"]
mod stand_in;

use std::time::{Duration, Instant};

use alarms_support::*;
use blackbox_tests::*;
use stand_in::{PUSH_KEY, PushService, Recorder, SUBSCRIPTIONS, push_key, register_tested};

/// A server whose Notruf alerts the section at once and re-alerts every
/// 2 s, a visitor, Anna on duty for section 1 and Ben off duty.
async fn setting() -> (Server, Consumer, Member, Member) {
    let server = Server::sandbox();
    set_escalation(&server, "Notruf", r#"[{"after":0,"to":"section"}]"#);
    server
        .admin(&[
            "call-types",
            "set",
            "Notruf",
            "--notification-interval",
            "2",
        ])
        .success();
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let ben = staff(&server, &visitor, "Ben", &[]).await;
    sign_on(&server, &anna, &["1"]).await;
    (server, visitor, anna, ben)
}

#[tokio::test]
async fn every_alert_realert_and_cancel_reaches_the_phone_decrypted_in_order() {
    let service = PushService::start().await;
    let recorder = Recorder::start(&service).await;
    let (server, visitor, anna, ben) = setting().await;
    let phone = register_tested(&server, &service, &recorder, &anna).await;
    // The push service is busy at first: the alert's first attempt gets 429.
    recorder.throttle(1);

    let opened = Instant::now();
    let id = open(&server, &visitor, "Z1", "Notruf", Some("1")).await;
    let first = service.wait_for(&phone, 1, WAIT).await;
    let alerted = opened.elapsed();
    assert_eq!(first.len(), 1, "the alert arrived: {first:#?}");
    println!("alert decrypted by the stand-in {alerted:?} after the open (one 429 first)");

    // The re-alert 2 s after the alert; then Ben accepts: Anna's alert stops.
    let second = service.wait_for(&phone, 2, WAIT).await;
    assert_eq!(second.len(), 2, "the re-alert arrived: {second:#?}");
    sign_on(&server, &ben, &[]).await;
    respond(&server, &ben, id, "accepted")
        .await
        .expect_status(200);
    let all = service.wait_for(&phone, 3, WAIT).await;

    let summary: Vec<_> = all
        .iter()
        .map(|push| {
            (
                push["type"].as_str().unwrap_or_default().to_string(),
                push["call"]["id"].as_i64(),
                push["level"].as_i64(),
                push["repeat"].as_bool(),
                push["reason"].as_str().map(str::to_string),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("call.alert".into(), Some(id), Some(1), Some(false), None),
            ("call.alert".into(), Some(id), Some(1), Some(true), None),
            (
                "call.cancelled".into(),
                Some(id),
                None,
                None,
                Some("accepted".into())
            ),
        ],
        "alert, re-alert and cancel, decrypted, in order: {all:#?}"
    );
    assert_eq!(
        all[2]["accepted_by"]["name"], "Ben",
        "the cancel names who comes"
    );
    assert_eq!(all[0]["call"]["address"], "Z1");
    assert_eq!(all[0]["call"]["alarm"]["state"], "alerting");
    // Every push carries a receipt (§15, §18): the alert's and the
    // re-alert's differ (one per alert), the cancel repeats the latest.
    let receipts: Vec<&str> = all
        .iter()
        .map(|push| {
            push["receipt"]
                .as_str()
                .expect("every push carries a receipt")
        })
        .collect();
    assert_ne!(receipts[0], receipts[1], "one receipt per alert");
    assert_eq!(
        receipts[1], receipts[2],
        "the cancel's is the latest alert's"
    );
    assert!(receipts.iter().all(|r| r.len() <= 64), "{receipts:?}");

    let seen = recorder.seen(&phone);
    assert_eq!(
        seen.iter().map(|s| s.status).collect::<Vec<_>>(),
        [429, 201, 201, 201],
        "the 429 retried once, then each push taken: {seen:#?}"
    );
    for push in &seen {
        assert_eq!(push.ttl.as_deref(), Some("60"), "TTL: {push:?}");
        assert_eq!(push.urgency.as_deref(), Some("high"), "Urgency: {push:?}");
        let topic = format!("call-{id}");
        assert_eq!(
            push.topic.as_deref(),
            Some(topic.as_str()),
            "Topic: {push:?}"
        );
    }
    println!(
        "first attempt at the push service {:?} after the open",
        seen[0].at - opened
    );
    let retried_after = seen[1].at - seen[0].at;
    println!("429 retried after {retried_after:?} (backoff 1 s)");
    assert!(
        (Duration::from_millis(800)..=Duration::from_millis(1200)).contains(&retried_after),
        "the retry after a 429 comes 1 s ± 20 % later, came after {retried_after:?}"
    );
    println!(
        "re-alert pushed {:?} after the alert's first attempt (interval 2 s)",
        seen[2].at - seen[0].at
    );
}

#[tokio::test]
async fn a_gone_subscription_is_removed_and_the_persons_other_phone_still_rings() {
    let service = PushService::start().await;
    let recorder = Recorder::start(&service).await;
    let (server, visitor, anna, _) = setting().await;
    let old_phone = register_tested(&server, &service, &recorder, &anna).await;
    let new_phone = register_tested(&server, &service, &recorder, &anna).await;
    // The old phone's browser unsubscribed: its push service answers 410.
    service.expire(&old_phone).await;

    let id = open(&server, &visitor, "Z2", "Notruf", Some("1")).await;
    let alerts = service.wait_for(&new_phone, 1, WAIT).await;
    assert_eq!(alerts.len(), 1, "the other phone rings: {alerts:#?}");
    close(&server, &visitor, "Z2").await;
    let both = service.wait_for(&new_phone, 2, WAIT).await;
    assert_eq!(
        both.iter()
            .map(|p| (p["type"].as_str(), p["reason"].as_str()))
            .collect::<Vec<_>>(),
        [
            (Some("call.alert"), None),
            (Some("call.cancelled"), Some("ended"))
        ],
        "{both:#?}"
    );
    assert_eq!(both[1]["call"]["id"].as_i64(), Some(id));

    // The alert went to the gone one once (410), the cancel did not: it
    // was removed at the 410.
    let to_old = recorder.seen(&old_phone);
    assert_eq!(
        to_old.iter().map(|s| s.status).collect::<Vec<_>>(),
        [410],
        "one push to the gone subscription, none after it: {to_old:#?}"
    );
    // Decrypted there: only its sign-on test, before it was gone (§18).
    let decrypted = service.decrypted(&old_phone).await;
    assert!(
        decrypted
            .iter()
            .all(|message| message["type"] == "staff.test"),
        "{decrypted:#?}"
    );
}

#[tokio::test]
async fn registration_needs_a_staff_token_and_a_browsers_subscription() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let bearer = |token: &str| format!("Bearer {token}");

    // No token, a wrong one: 401 for all three.
    for (method, path) in [
        (reqwest::Method::GET, PUSH_KEY),
        (reqwest::Method::POST, SUBSCRIPTIONS),
        (reqwest::Method::DELETE, SUBSCRIPTIONS),
    ] {
        let anonymous = server
            .request(method.clone(), path, Some("application/json"), &[], "{}")
            .await;
        anonymous.expect_status(401);
        let wrong = bearer(&"0".repeat(64));
        let forged = server
            .request(
                method,
                path,
                Some("application/json"),
                &[("Authorization", wrong.as_str())],
                "{}",
            )
            .await;
        forged.expect_status(401);
    }

    // One key per installation, the same for everybody, an uncompressed
    // P-256 point in base64url.
    let ben = staff(&server, &visitor, "Ben", &[]).await;
    let key = push_key(&server, &anna).await;
    assert_eq!(key, push_key(&server, &ben).await);
    assert_eq!(
        key.len(),
        87,
        "65 bytes in base64url without padding: {key}"
    );
    assert!(key.starts_with('B'), "0x04 first: {key}");

    let post = |body: serde_json::Value| {
        let (server, token) = (&server, anna.token.clone());
        async move {
            as_staff(
                server,
                reqwest::Method::POST,
                SUBSCRIPTIONS,
                &token,
                Some(&body.to_string()),
            )
            .await
        }
    };
    // Sorted: whether the JSON object keeps its order depends on the
    // features serde_json is built with in that build.
    let fields = |response: &Response| -> Vec<String> {
        let mut keys: Vec<String> = response.json()["messages"]["errors"]
            .as_object()
            .expect("the 422's messages")
            .keys()
            .cloned()
            .collect();
        keys.sort();
        keys
    };
    let missing = post(json!({})).await;
    missing.expect_status(422);
    assert_eq!(fields(&missing), ["endpoint", "keys.auth", "keys.p256dh"]);
    let bad_expiry = post(json!({
        "endpoint": "https://fcm.googleapis.com/fcm/send/1",
        "expirationTime": "tomorrow",
        "keys": {"p256dh": key, "auth": "_ordMnz7uTCmrpBTeUV4Bw"}
    }))
    .await;
    bad_expiry.expect_status(422);
    assert_eq!(fields(&bad_expiry), ["expirationTime"]);
    let plain_http = post(json!({
        "endpoint": "http://fcm.googleapis.com/fcm/send/1",
        "keys": {"p256dh": "AAAA", "auth": "c2hvcnQ"}
    }))
    .await;
    plain_http.expect_status(422);
    assert_eq!(
        fields(&plain_http),
        ["endpoint", "keys.auth", "keys.p256dh"]
    );
    assert_eq!(
        plain_http.json()["messages"]["errors"]["endpoint"][0],
        "endpoint muss zu einem Push-Dienst gehören."
    );

    // A browser's subscription is taken; removing it twice: true, then false.
    let p256dh = key.clone(); // any P-256 point will do as a browser's key
    let endpoint = "https://fcm.googleapis.com/fcm/send/abc:def";
    let subscription = json!({"endpoint": endpoint, "expirationTime": null, "keys": {"p256dh": p256dh, "auth": "_ordMnz7uTCmrpBTeUV4Bw"}});
    post(subscription.clone()).await.expect_status(201);
    post(subscription).await.expect_status(201);
    let delete = |token: String| {
        let server = &server;
        async move {
            as_staff(
                server,
                reqwest::Method::DELETE,
                SUBSCRIPTIONS,
                &token,
                Some(&json!({"endpoint": endpoint}).to_string()),
            )
            .await
        }
    };
    let removed = delete(anna.token.clone()).await;
    removed.expect_status(200);
    assert_eq!(removed.data()["removed"], true);
    assert_eq!(delete(anna.token.clone()).await.data()["removed"], false);
    let put = as_staff(
        &server,
        reqwest::Method::PUT,
        SUBSCRIPTIONS,
        &anna.token,
        Some("{}"),
    )
    .await;
    put.expect_status(405);
    assert_eq!(put.header("allow"), Some("POST, DELETE"));
}
