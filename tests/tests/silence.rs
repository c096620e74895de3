//! A silent central system (DECISIONS §19) over HTTP: a consumer with a
//! heartbeat and no request for 2 × its interval + 10 s is silent, found
//! within the local server's sweep of 5 s (the time printed, asserted
//! ± 10 s): the displays' and staff pages' reads list it in `silent`, their
//! live sockets get `consumer.silent`, Technik's member gets a live alert
//! and a push with a receipt id (decrypted at `web-push-testing`), which
//! `POST /api/v1/staff/receipts` answers with `"call": null`, a webhook
//! receiver verifies `consumer.silent`; its next signed request ends it
//! (`consumer.back` live and by webhook, the reads' `silent` empty). A
//! consumer without a heartbeat never becomes silent. The silence lives in
//! the store: a restarted server still shows it, without announcing it
//! again.
//!
//! The interval is set by the seed file (`heartbeat_seconds`,
//! functions/local/src/seed.rs) to the shortest an admin may set, 30 s (the
//! stores read a shorter one as 30 s), and the wait shortened through the
//! store: the seed's `heartbeat_last_seen` puts the last sign of life
//! [`HEARD_AGO`] before the server's start, so the link is due silent
//! 2 × 30 s + 10 s after that, seconds after the start, not 70.
//! Runs on SQLite and on moto.

mod alarms_support;
// Only the phone's registration and its decrypted pushes are used here.
#[allow(dead_code)]
#[path = "push/stand_in.rs"]
mod stand_in;
mod webhooks_support;

use std::time::{Duration, Instant};

use alarms_support::{Member, Socket, as_staff, connect_staff_token, documented};
use blackbox_tests::*;
use futures_util::StreamExt;
use stand_in::{PushService, Recorder, register_tested};
use tokio_tungstenite::tungstenite::Message;
use webhooks_support::{CENTRAL, CENTRAL_SECRET, Receiver, central, endpoint, room};

/// The seeded heartbeat (s): silent [`SILENT_AFTER`] after the last request.
const HEARTBEAT: u64 = 30;
const SILENT_AFTER: Duration = Duration::from_secs(2 * HEARTBEAT + 10);
/// How long before the server's start the seeded consumer was last heard:
/// silent 30 s after the start, time enough to connect the pages, the
/// phone and the webhook receiver first, even on moto.
const HEARD_AGO: Duration = Duration::from_secs(40);
/// §19's bound on the detection, locally.
const WITHIN: Duration = Duration::from_secs(10);

/// A second central system, without a heartbeat: never silent.
const QUIET: &str = "7b1f8f1e-3c2d-4e4f-9a5b-6c7d8e9fa0b2";

/// The seed: [`CENTRAL`] supervised and last heard `heard_ago` before now.
fn options(heard_ago: Duration) -> Options {
    let last_seen = chrono::Utc::now() - chrono::Duration::from_std(heard_ago).expect("a duration");
    Options::production(
        Seed::new()
            .consumer(CENTRAL, &[CENTRAL_SECRET], false)
            .heartbeat_last_seen(CENTRAL, HEARTBEAT as i64, last_seen)
            .consumer(QUIET, &["quiet-secret"], false)
            .element(&room(1), "Z1", "Zimmer 1"),
    )
}

/// The next live message of `kind` within `within`, skipping the others.
async fn next_of(socket: &mut Socket, kind: &str, within: Duration) -> Option<Value> {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let frame = match tokio::time::timeout(left, socket.next()).await {
            Err(_) => return None,
            Ok(frame) => frame.expect("socket open").expect("a frame"),
        };
        if let Message::Text(text) = frame {
            let message = documented(text.as_str());
            if message["type"] == kind {
                return Some(message);
            }
        }
    }
}

/// The `silent` list of an authorised read of `path`.
async fn silent_of(server: &Server, path: &str, token: &str) -> Value {
    let bearer = format!("Bearer {token}");
    let read = server
        .request(
            reqwest::Method::GET,
            path,
            None,
            &[("Authorization", bearer.as_str())],
            Vec::new(),
        )
        .await;
    read.expect_status(200);
    read.data()["silent"].clone()
}

/// A display made by the admin command: its token.
fn display_token(server: &Server) -> String {
    server
        .admin(&["displays", "create", "--name", "Flur", "--json"])
        .success()
        .json()["token"]
        .as_str()
        .expect("token")
        .to_string()
}

/// A staff member made by the admin command, in `groups`.
fn member(server: &Server, name: &str, groups: &[&str]) -> Member {
    let mut args = vec!["staff", "create", "--name", name, "--json"];
    for group in groups {
        args.extend_from_slice(&["--group", group]);
    }
    let created = server.admin(&args).success().json();
    Member {
        id: created["id"].as_str().expect("id").to_string(),
        name: name.to_string(),
        token: created["token"].as_str().expect("token").to_string(),
    }
}

#[tokio::test]
async fn a_silent_central_system_is_shown_alerted_and_announced_until_its_next_request() {
    let _serial = webhooks_support::SERIAL.lock().await;
    let service = PushService::start().await;
    let recorder = Recorder::start(&service).await;
    let started = Instant::now();
    let server = Server::start(options(HEARD_AGO));
    // Silent 2 × 30 s + 10 s after the last sign of life.
    let due = SILENT_AFTER - HEARD_AGO;
    let receiver = Receiver::start(None);
    endpoint(
        &server,
        &receiver,
        &["--event", "consumer.silent", "--event", "consumer.back"],
    )
    .await;
    let display = display_token(&server);
    let tessa = member(&server, "Tessa", &["Technik"]);
    let anna = member(&server, "Anna", &[]);
    let phone = register_tested(&server, &service, &recorder, &tessa).await;
    let mut display_page = connect_staff_token(&server, &display).await;
    let mut tessa_page = connect_staff_token(&server, &tessa.token).await;
    let mut anna_page = connect_staff_token(&server, &anna.token).await;
    assert_eq!(
        silent_of(&server, "/api/v1/display/calls", &display).await,
        json!([]),
        "alive at first"
    );
    let ready = started.elapsed();
    assert!(
        ready < due,
        "the setup took {ready:?}: the link was due silent at {due:?}, before the pages listened"
    );

    let wait = due - ready + WITHIN + Duration::from_secs(5);
    let shown = next_of(&mut display_page, "consumer.silent", wait)
        .await
        .expect("consumer.silent on the display's socket");
    let found_after = started.elapsed();
    println!(
        "silent {:.1} s after the start, {:.1} s after the last sign of life (due at {} s, ± {} s)",
        found_after.as_secs_f64(),
        (found_after + HEARD_AGO).as_secs_f64(),
        SILENT_AFTER.as_secs(),
        WITHIN.as_secs()
    );
    // The seed's time is whole seconds in the store: up to 1 s earlier.
    assert!(
        found_after + Duration::from_millis(1500) >= due && found_after <= due + WITHIN,
        "found {found_after:?} after the start, due at {due:?}"
    );
    assert_eq!(shown["consumer"], CENTRAL);
    assert_eq!(shown["name"], format!("consumer {CENTRAL}"));
    assert!(
        shown.get("receipt").is_none(),
        "the banner's message: {shown}"
    );
    let since = shown["since"].as_str().expect("since").to_string();

    // The reads list it (and not the consumer without a heartbeat).
    let listed =
        json!([{"consumer": CENTRAL, "name": format!("consumer {CENTRAL}"), "since": since}]);
    assert_eq!(
        silent_of(&server, "/api/v1/display/calls", &display).await,
        listed
    );
    assert_eq!(
        silent_of(&server, "/api/v1/staff/calls", &anna.token).await,
        listed
    );

    // Anna's page shows the banner; Technik's member gets the alert too,
    // with a receipt, on the page and on the phone.
    let banner = next_of(&mut anna_page, "consumer.silent", WITHIN)
        .await
        .expect("Anna's page hears of it");
    assert!(banner.get("receipt").is_none());
    let mut alert = None;
    for _ in 0..2 {
        let message = next_of(&mut tessa_page, "consumer.silent", WITHIN)
            .await
            .expect("Tessa's page hears of it");
        if message.get("receipt").is_some() {
            alert = Some(message);
            break;
        }
    }
    let alert = alert.expect("Tessa's alert with its receipt");
    let receipt = alert["receipt"].as_str().expect("receipt").to_string();
    let pushed = service.wait_for(&phone, 1, WITHIN).await;
    assert_eq!(pushed.len(), 1, "{pushed:#?}");
    assert_eq!(pushed[0]["type"], "consumer.silent");
    assert_eq!(pushed[0]["consumer"], CENTRAL);
    assert_eq!(pushed[0]["since"], since.as_str());
    assert_eq!(pushed[0]["receipt"], receipt.as_str());
    let receipts = "/api/v1/staff/receipts";
    let body = json!({ "receipt": receipt }).to_string();
    let taken = as_staff(
        &server,
        reqwest::Method::POST,
        receipts,
        &tessa.token,
        Some(&body),
    )
    .await;
    taken.expect_status(200);
    assert_eq!(taken.data()["call"], Value::Null);
    as_staff(
        &server,
        reqwest::Method::POST,
        receipts,
        &anna.token,
        Some(&body),
    )
    .await
    .expect_status(404);

    // The webhook receiver verified consumer.silent.
    let silent = receiver
        .received_until(WITHIN, |all| {
            all.iter()
                .any(|d| d.kind.as_deref() == Some("consumer.silent"))
        })
        .await;
    let event = silent
        .iter()
        .find(|d| d.kind.as_deref() == Some("consumer.silent"))
        .expect("consumer.silent");
    assert!(event.verified, "{event:?}");
    assert_eq!(event.body["data"]["consumer"], CENTRAL);
    assert_eq!(event.body["data"]["since"], since.as_str());

    // Any signed request ends it.
    server
        .element(&central(), &room(1), r#"{"battery":90}"#)
        .await
        .expect_status(200);
    let back = next_of(&mut display_page, "consumer.back", WITHIN)
        .await
        .expect("consumer.back on the display's socket");
    assert_eq!(back["consumer"], CENTRAL);
    assert_eq!(back["since"], since.as_str());
    assert_eq!(
        silent_of(&server, "/api/v1/display/calls", &display).await,
        json!([])
    );
    assert_eq!(
        silent_of(&server, "/api/v1/staff/calls", &tessa.token).await,
        json!([])
    );
    let all = receiver
        .received_until(WITHIN, |all| {
            all.iter()
                .any(|d| d.kind.as_deref() == Some("consumer.back"))
        })
        .await;
    let event = all
        .iter()
        .find(|d| d.kind.as_deref() == Some("consumer.back"))
        .expect("consumer.back");
    assert!(event.verified, "{event:?}");
    assert_eq!(event.body["data"]["consumer"], CENTRAL);
    // The consumer without a heartbeat was never silent.
    assert!(
        all.iter().all(|d| d.body["data"]["consumer"] != QUIET),
        "{all:?}"
    );
    let logs = server.logs().join("\n");
    assert!(!logs.contains(&format!("\"consumer\":\"{QUIET}\",\"name\"")));
}

#[tokio::test]
async fn a_silence_outlives_a_restart_of_the_server() {
    let dir = tempfile::tempdir().expect("temp folder");
    // Due silent 15 s after the start: time for a display and its socket.
    let heard_ago = SILENT_AFTER - Duration::from_secs(15);
    let options = options(heard_ago).data_dir(dir.path());
    let mut server = Server::start(options.clone());
    let display = display_token(&server);
    let mut page = connect_staff_token(&server, &display).await;
    let shown = next_of(
        &mut page,
        "consumer.silent",
        Duration::from_secs(15) + WITHIN * 2,
    )
    .await
    .expect("consumer.silent");
    drop(page);
    server.terminate();

    let server = Server::start(options);
    let mut page = connect_staff_token(&server, &display).await;
    let listed = silent_of(&server, "/api/v1/display/calls", &display).await;
    assert_eq!(listed[0]["consumer"], CENTRAL, "{listed}");
    assert_eq!(listed[0]["since"], shown["since"]);
    // Kept, not found again: no second announcement after the restart.
    let again = next_of(&mut page, "consumer.silent", Duration::from_secs(5)).await;
    assert!(again.is_none(), "announced again: {again:?}");
    assert_eq!(
        silent_of(&server, "/api/v1/display/calls", &display).await,
        listed
    );
}
