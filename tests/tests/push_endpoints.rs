//! Where a phone's push subscription may point (DECISIONS §20,
//! `PUSH_SERVICES` of §10): only `https` to a listed push service, `http`
//! only to a listed loopback host (the tests list `localhost`,
//! `TEST_PUSH_SERVICES`). Anything else is a 422 keyed `endpoint` and
//! nothing is stored: private addresses, look-alike hosts, plain `http`,
//! an unlisted loopback address, a URL the push sender could not send to.
//! A subscription stored before the list changed is removed at its next
//! push, unsent, with a warning naming the person and the host.
//!
//! Runs on SQLite and on moto; the second test restarts the server
//! (skipped under cargo lambda watch, tests/lambda-watch-skips.txt).

mod alarms_support;
#[path = "push/stand_in.rs"]
#[allow(dead_code)]
mod stand_in;

use std::time::{Duration, Instant};

use alarms_support::*;
use blackbox_tests::*;
use reqwest::Method;
use serde_json::{Value, json};
use stand_in::{PushService, Recorder, SUBSCRIPTIONS, push_key, register_tested};

const REFUSED: &str = "endpoint muss zu einem Push-Dienst gehören.";

/// `member`'s devices as `GET /api/v1/staff/me` lists them.
async fn devices(server: &Server, member: &Member) -> Vec<Value> {
    let me = as_staff(server, Method::GET, STAFF_ME, &member.token, None).await;
    me.expect_status(200);
    me.data()["devices"]
        .as_array()
        .cloned()
        .expect("devices: a list")
}

#[tokio::test]
async fn only_a_listed_push_service_is_taken_and_a_refused_endpoint_stores_nothing() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let key = push_key(&server, &anna).await;
    let register = |endpoint: &str| {
        let body = json!({
            "endpoint": endpoint,
            "expirationTime": null,
            "keys": {"p256dh": key, "auth": "_ordMnz7uTCmrpBTeUV4Bw"},
        })
        .to_string();
        let (server, token) = (&server, anna.token.clone());
        async move { as_staff(server, Method::POST, SUBSCRIPTIONS, &token, Some(&body)).await }
    };

    for endpoint in [
        // Addresses of the home's network, and this machine's unlisted.
        "https://10.0.0.1/x",
        "https://192.168.1.1/x",
        "https://[::1]/x",
        "http://127.0.0.1:9/x",
        // Look-alikes of listed services.
        "https://push.apple.com.evil.net/x",
        "https://evilfcm.googleapis.com/x",
        "https://evilpush.apple.com/x",
        "https://fcm.googleapis.com./x",
        // A listed service, but plain http.
        "http://fcm.googleapis.com/x",
        // What `url` takes but the sender's `http::Uri` does not (line
        // breaks and NUL, JSON-escaped in the body).
        "https://fcm.googleapis.com/fcm/send/a\r\nb",
        "https://fcm.googleapis.com/fcm/send/a\u{0}b",
    ] {
        let response = register(endpoint).await;
        response.expect_status(422);
        assert_eq!(
            response.json()["messages"]["errors"],
            json!({ "endpoint": [REFUSED] }),
            "{endpoint:?}"
        );
    }
    assert_eq!(devices(&server, &anna).await, Vec::<Value>::new());

    for endpoint in [
        "https://fcm.googleapis.com/fcm/send/abc",
        "https://web.push.apple.com/x",
    ] {
        let response = register(endpoint).await;
        response.expect_status(201);
        assert_eq!(response.data()["endpoint"], endpoint);
    }
    assert_eq!(devices(&server, &anna).await.len(), 2);
}

#[tokio::test]
async fn a_subscription_of_a_service_no_longer_listed_is_removed_unsent_at_its_next_push() {
    let service = PushService::start().await;
    let recorder = Recorder::start(&service).await;
    let dir = tempfile::tempdir().expect("a data folder");
    let mut server = Server::start(Options::sandbox().data_dir(dir.path()));
    set_escalation(&server, "Notruf", r#"[{"after":0,"to":"section"}]"#);
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    sign_on(&server, &anna, &["1"]).await;
    // Registered while `localhost` (the stand-in) is listed.
    let phone = register_tested(&server, &service, &recorder, &anna).await;
    assert_eq!(devices(&server, &anna).await.len(), 1);
    server.terminate();

    // The installation no longer lists it.
    let server = Server::start(
        Options::sandbox()
            .data_dir(dir.path())
            .env("PUSH_SERVICES", "fcm.googleapis.com"),
    );
    let opened = Instant::now();
    open(&server, &visitor, "Z1", "Notruf", Some("1")).await;
    let removed = |line: &String| {
        line.contains("push subscription of no listed push service")
            && line.contains(r#""level":"WARN""#)
    };
    let logs = server.logs_once(|lines| lines.iter().any(removed));
    let warning = logs
        .iter()
        .find(|line| removed(line))
        .expect("a warning that the subscription was removed");
    println!("removed {:?} after the open: {warning}", opened.elapsed());
    assert!(warning.contains(&anna.id), "names the person: {warning}");
    assert!(
        warning.contains(r#""push_service":"localhost""#),
        "names the host: {warning}"
    );
    assert!(
        !warning.contains(&phone.client_hash) && !warning.contains("/notify/"),
        "never the endpoint's path: {warning}"
    );
    assert_eq!(devices(&server, &anna).await, Vec::<Value>::new());
    // Nothing was sent there (the sign-on test before the restart aside).
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        recorder.seen(&phone).is_empty(),
        "{:#?}",
        recorder.seen(&phone)
    );
    assert!(
        !logs.iter().any(|line| line.contains("push not delivered")),
        "no error line for it"
    );
}
