//! Floods at one server (DECISIONS §20): requests at once never pass the
//! caps (10 devices a person, 20 staff a sandbox visitor: counting first
//! and writing after stored 36, 12 and 11 of 50 registrations at once), and
//! a flood of requests nobody authenticates gets 429 `too_many_requests`
//! with `Retry-After` while a central system's signed Notruf from the same
//! address is answered 201 in its usual time.
//!
//! The rate tests set the server's `RATE_PER_SECOND` and `RATE_BURST`
//! (the harness turns the rate off for every other test): skipped under
//! cargo lambda watch (tests/lambda-watch-skips.txt), which has API
//! Gateway's throttles in AWS instead (infra/test). Runs on SQLite and on
//! moto.

mod alarms_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use alarms_support::*;
use blackbox_tests::*;
use reqwest::Method;
use serde_json::{Value, json};

const PUSH_KEY: &str = "/api/v1/staff/push-key";
const SUBSCRIPTIONS: &str = "/api/v1/staff/push-subscriptions";
/// The longest a flood goes on waiting for its first 429 (a slow store).
const FLOOD_LIMIT: Duration = Duration::from_secs(20);

/// A browser's `PushSubscription.toJSON()` with an endpoint at FCM (any
/// P-256 point will do as the browser's key: the server's own).
fn subscription(n: usize, p256dh: &str) -> String {
    json!({
        "endpoint": format!("https://fcm.googleapis.com/fcm/send/flood-{n}"),
        "expirationTime": null,
        "keys": {"p256dh": p256dh, "auth": "_ordMnz7uTCmrpBTeUV4Bw"},
    })
    .to_string()
}

#[tokio::test]
async fn fifty_registrations_at_once_leave_exactly_ten_devices() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let key = as_staff(&server, Method::GET, PUSH_KEY, &anna.token, None).await;
    key.expect_status(200);
    let key = key.data()["public_key"].as_str().expect("key").to_string();

    let url = format!("{}{SUBSCRIPTIONS}", server.base_url());
    // Fifty at once queue at moto (one Python process): on a fresh
    // machine's busy run the last waited over the usual 30 s. The caps are
    // what this test asserts, not the queue's time.
    let patient_client = http_client_waiting(Duration::from_secs(120));
    let tasks: Vec<_> = (0..50)
        .map(|n| {
            let (client, url, body) = (patient_client.clone(), url.clone(), subscription(n, &key));
            let bearer = format!("Bearer {}", anna.token);
            tokio::spawn(async move {
                let response = client
                    .post(url)
                    .header("Content-Type", "application/json")
                    .header("Authorization", bearer)
                    .body(body)
                    .send()
                    .await
                    .expect("answered");
                (
                    response.status().as_u16(),
                    response.text().await.unwrap_or_default(),
                )
            })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.expect("task"));
    }
    let created = answers.iter().filter(|(status, _)| *status == 201).count();
    let refused: Vec<&String> = answers
        .iter()
        .filter(|(status, _)| *status == 422)
        .map(|(_, body)| body)
        .collect();
    assert_eq!((created, refused.len()), (10, 40), "answers: {answers:?}");
    let full = validation_body(&[(
        "endpoint",
        &["Es sind höchstens 10 Geräte je Person möglich; bitte ein altes abmelden."],
    )]);
    assert!(refused.iter().all(|body| **body == full), "{refused:?}");

    let me = as_staff(&server, Method::GET, STAFF_ME, &anna.token, None).await;
    me.expect_status(200);
    let devices = me.data()["devices"].as_array().expect("devices").len();
    assert_eq!(devices, 10, "GET /api/v1/staff/me lists ten devices");
}

#[tokio::test]
async fn thirty_sandbox_staff_at_once_leave_exactly_twenty() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let url = format!(
        "{}{SANDBOX_STAFF}?consumer={}&hash={}",
        server.base_url(),
        visitor.id,
        visitor.proof()
    );
    let tasks: Vec<_> = (0..30)
        .map(|n| {
            let (client, url) = (server.client().clone(), url.clone());
            tokio::spawn(async move {
                client
                    .post(url)
                    .header("Content-Type", "application/json")
                    .body(json!({ "name": format!("Pflege {n}") }).to_string())
                    .send()
                    .await
                    .expect("answered")
                    .status()
                    .as_u16()
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.expect("task"));
    }
    let created = statuses.iter().filter(|s| **s == 201).count();
    let refused = statuses.iter().filter(|s| **s == 422).count();
    assert_eq!((created, refused), (20, 10), "{statuses:?}");
    let listed = server.state(&visitor).await["staff"]
        .as_array()
        .map(Vec::len);
    assert_eq!(listed, Some(20));
}

/// A display request of `visitor` with a wrong hash (an element of the
/// seed: the request is refused for its hash alone).
fn badly_signed(visitor: &Consumer, n: usize) -> String {
    envelope(
        Some(["U0", "U1", "U2", "U3", "U4"][n % 5]),
        &visitor.id,
        &"0".repeat(64),
        r#"{"event":"Notruf"}"#,
    )
}

/// A 429 as DECISIONS §3 has it: the code, the message, `Retry-After`.
fn assert_too_many(response: &Response) {
    response.expect_status(429);
    let seconds: u64 = response
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("whole seconds");
    assert!(seconds >= 1, "Retry-After {seconds}");
    let message = &response.json()["messages"][0];
    assert_eq!(message["code"], "too_many_requests", "{}", response.text);
    assert_eq!(message["status_code"], 429);
    assert_eq!(message["errors"], "Zu viele Anfragen.");
}

/// How long a signed Notruf on `address` takes to be answered 201.
async fn notruf(server: &Server, visitor: &Consumer, address: &str) -> Duration {
    let started = Instant::now();
    let response = server
        .display(visitor, address, r#"{"event":"Notruf"}"#)
        .await;
    let took = started.elapsed();
    response.expect_status(201);
    took
}

/// The installation's central system (production: a failed signature
/// writes nothing, as it is in the care home).
const CENTRAL: &str = "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f";
const CENTRAL_SECRET: &str = "the central system's secret";

#[tokio::test]
async fn a_flood_of_failed_signatures_gets_429_and_a_signed_notruf_is_answered_in_its_usual_time() {
    let mut seed = Seed::new().consumer(CENTRAL, &[CENTRAL_SECRET], false);
    for address in ["U0", "U1", "U2", "U3", "U4", "N1"] {
        seed = seed.element(address, address, &format!("Zimmer {address}"));
    }
    // A budget of 5 a second (bursts of 10): a flood from this machine
    // passes it within the 2 s also while moto answers slowly (other tests
    // beside this one), as it passes the default 20 on any real server.
    let server = Server::start(
        Options::production(seed)
            .env("RATE_PER_SECOND", "5")
            .env("RATE_BURST", "10"),
    );
    let visitor = Consumer::new(CENTRAL, CENTRAL_SECRET);
    let mut usual = Duration::ZERO;
    for n in 0..5 {
        usual = usual.max(notruf(&server, &visitor, &format!("U{n}")).await);
    }

    // 8 clients send failed signatures for 2 s, as fast as they are answered.
    let flood_for = Duration::from_secs(2);
    let url = format!("{}{DISPLAY}", server.base_url());
    // They go on (at least `flood_for`) until the Notruf below was sent
    // while the budget is spent: on a slow store (moto beside other suites)
    // a failed signature takes long enough that 2 s may not spend it.
    let limited_seen = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..8)
        .map(|client_no| {
            let (client, url, visitor) = (server.client().clone(), url.clone(), visitor.clone());
            let (limited_seen, stop) = (Arc::clone(&limited_seen), Arc::clone(&stop));
            tokio::spawn(async move {
                let (started, mut answers) = (Instant::now(), Vec::new());
                let mut n = 0;
                while started.elapsed() < flood_for
                    || (!stop.load(Ordering::Relaxed) && started.elapsed() < FLOOD_LIMIT)
                {
                    let response = client
                        .post(&url)
                        .header("Content-Type", "application/json")
                        .body(badly_signed(&visitor, client_no * 100_000 + n))
                        .send()
                        .await
                        .expect("answered");
                    let status = response.status().as_u16();
                    if status == 429 {
                        limited_seen.store(true, Ordering::Relaxed);
                    }
                    answers.push(status);
                    n += 1;
                }
                answers
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(700)).await;
    let waited = Instant::now();
    while !limited_seen.load(Ordering::Relaxed) && waited.elapsed() < FLOOD_LIMIT {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let during = notruf(&server, &visitor, "N1").await;
    // One of the flood's 429s through the harness (checked against
    // docs/openapi.yaml), while the flood is still on.
    let mut sample = server.post(DISPLAY, badly_signed(&visitor, 999_999)).await;
    for _ in 0..20 {
        if sample.status == 429 {
            break;
        }
        sample = server.post(DISPLAY, badly_signed(&visitor, 999_999)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let mut statuses = Vec::new();
    for client in clients {
        statuses.extend(client.await.expect("client"));
    }
    let limited = statuses.iter().filter(|s| **s == 429).count();
    let refused = statuses.iter().filter(|s| **s == 400).count();
    println!(
        "flood: {} requests (at least {flood_for:?}), {refused} answered 400 invalid_hash, {limited} 429; \
         a signed Notruf took {:.1} ms before the flood (slowest of 5), {:.1} ms during it",
        statuses.len(),
        usual.as_secs_f64() * 1000.0,
        during.as_secs_f64() * 1000.0
    );
    let mut by_status = std::collections::BTreeMap::new();
    for status in &statuses {
        *by_status.entry(*status).or_insert(0) += 1;
    }
    assert!(
        limited > 0 && refused > 0,
        "answers by status: {by_status:?}"
    );
    assert_eq!(
        limited + refused,
        statuses.len(),
        "nothing but 400 and 429: {by_status:?}"
    );
    assert_too_many(&sample);
    // Its usual time and a second more, or twice its usual time where that
    // is longer: on moto a Notruf takes its 2 s of store requests on a
    // machine that the flood's clients and the rest of the run keep busy
    // (1.85 s before and 3.05 s during a flood in a warm run beside the
    // side checks); a route that the flood took would take far longer.
    let tolerance = Duration::from_secs(1).max(usual);
    assert!(
        during < usual + tolerance,
        "the Notruf took {during:?} during the flood, {usual:?} before (+{tolerance:?} allowed)"
    );
}

#[tokio::test]
async fn pages_get_429_after_the_burst_and_tokens_and_signatures_still_pass() {
    // Bursts of 40 as by default, refilled at 1 a second: the store's time
    // (moto's, beside other tests) gives a wrong token's lookup no budget back.
    let server = Server::start(
        Options::sandbox()
            .env("RATE_PER_SECOND", "1")
            .env("RATE_BURST", "40"),
    );
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let mut statuses = Vec::new();
    for _ in 0..60 {
        statuses.push(server.get("/display").await.status);
    }
    assert!(
        statuses[..35].iter().all(|s| *s == 200),
        "the burst is served: {statuses:?}"
    );
    assert!(statuses.contains(&429), "then 429: {statuses:?}");
    let page = server.get("/staff").await;
    assert_too_many(&page);

    // From the same address, at the same time: a wrong token is 429 too
    // (first: moto's slower answers give the budget time to fill again), a
    // good token and a good signature are served.
    let url = format!("{}{STAFF_ME}", server.base_url());
    let strangers: Vec<_> = (0..5)
        .map(|_| {
            let (client, url) = (server.client().clone(), url.clone());
            tokio::spawn(async move {
                let response = client
                    .get(url)
                    .header("Authorization", "Bearer no-such-token")
                    .send()
                    .await
                    .expect("answered");
                response.status().as_u16()
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for stranger in strangers {
        statuses.push(stranger.await.expect("task"));
    }
    assert!(
        statuses.contains(&429) && statuses.iter().all(|s| *s == 429 || *s == 401),
        "wrong tokens: {statuses:?}"
    );
    let me = as_staff(&server, Method::GET, STAFF_ME, &anna.token, None).await;
    me.expect_status(200);
    let body: Value = me.json();
    assert_eq!(body["success"], true);
    notruf(&server, &visitor, "P1").await;
}
