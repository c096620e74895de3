//! The read side (DECISIONS §11, §12) over HTTP and WebSocket: the open calls
//! of a display's scope and sections, the live feed, and who may read.
//! Runs on SQLite and, with `BLACKBOX_STORE=dynamodb`, on moto.

use std::time::{Duration, Instant};

use blackbox_tests::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

const CONSUMER: &str = "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f";
const SECRET: &str = "display-secret";
const CALLS: &str = "/api/v1/display/calls";
const ELEMENTS: &str = "/api/v1/display/elements";
const LIVE: &str = "/api/v1/display/live";

/// How long a live message may take in these tests (the contract says 1 s
/// after the acknowledgement; moto and a busy CI machine get some slack).
const LIVE_WAIT: Duration = Duration::from_secs(10);

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

fn consumer() -> Consumer {
    Consumer::new(CONSUMER, SECRET)
}

/// A production server with one consumer and `addresses` registered.
fn production(addresses: &[&str]) -> Server {
    let mut seed = Seed::new().consumer(CONSUMER, &[SECRET], false);
    for address in addresses {
        seed = seed.element(
            address,
            &format!("code-{address}"),
            &format!("Zimmer {address}"),
        );
    }
    Server::production(seed)
}

/// `nurse-call-admin displays create …`: the display's JSON (with its token).
fn create_display(server: &Server, name: &str, sections: &[&str]) -> Value {
    let mut args = vec!["displays", "create", "--name", name, "--json"];
    for section in sections {
        args.extend(["--section", section]);
    }
    server.admin(&args).success().json()
}

fn token_of(display: &Value) -> String {
    display["token"].as_str().expect("token").to_string()
}

async fn read(server: &Server, path: &str, token: &str) -> Response {
    let bearer = format!("Bearer {token}");
    server
        .request(
            reqwest::Method::GET,
            path,
            None,
            &[("Authorization", bearer.as_str())],
            Vec::new(),
        )
        .await
}

/// The snapshot's `data`, asserting 200.
async fn snapshot(server: &Server, token: &str) -> Value {
    let response = read(server, CALLS, token).await;
    response.expect_status(200);
    response.data()
}

fn addresses(snapshot: &Value) -> Vec<String> {
    snapshot["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|call| call["address"].as_str().expect("address").to_string())
        .collect()
}

async fn open(server: &Server, target: &str, data: &str) -> Value {
    let response = server.display(&consumer(), target, data).await;
    assert!(
        [200, 201].contains(&response.status),
        "open {target}: {response:?}"
    );
    response.data()
}

async fn connect(server: &Server, token: &str) -> Socket {
    let url = format!("{}{LIVE}?token={token}", ws_base(server));
    let (socket, _) = tokio_tungstenite::connect_async(url)
        .await
        .expect("live socket connects");
    socket
}

fn ws_base(server: &Server) -> String {
    server.base_url().replacen("http://", "ws://", 1)
}

/// The alarm's messages (DECISIONS §14): every open starts an alarm, which
/// tests/tests/alarms*.rs follow; the tests here follow the calls and
/// elements themselves.
const ALARM_MESSAGES: [&str; 4] = [
    "call.escalated",
    "call.accepted",
    "call.declined",
    "call.unattended",
];

fn is_alarm_message(message: &Value) -> bool {
    ALARM_MESSAGES.iter().any(|kind| message["type"] == *kind)
}

/// The next text message that is neither a pong nor an alarm's, within
/// [`LIVE_WAIT`].
async fn next_message(socket: &mut Socket) -> Value {
    let deadline = Instant::now() + LIVE_WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let frame = tokio::time::timeout(left, socket.next())
            .await
            .expect("a live message in time")
            .expect("socket open")
            .expect("a frame");
        if let Message::Text(text) = frame {
            let message: Value = serde_json::from_str(text.as_str()).expect("JSON message");
            if message["type"] != "pong" && !is_alarm_message(&message) {
                return message;
            }
        }
    }
}

fn unauthorized() -> String {
    error_body("unauthorized", 401, "Anmeldung erforderlich.")
}

#[tokio::test]
async fn snapshot_orders_most_urgent_first_then_oldest_first() {
    let server = production(&["A", "B", "C", "D", "E"]);
    let token = token_of(&create_display(&server, "Flur", &[]));
    // Opened in this order, with times that make "older" unambiguous, within
    // the last week (DECISIONS §5): "10:00" is an hour ago.
    let clock = WireClock::berlin();
    for (address, event, minutes) in [
        ("A", "Normalruf", 0),
        ("B", "WC", 1),
        ("C", "Notruf", 2),
        ("D", "Normalruf", -1),
        ("E", "WC", 3),
    ] {
        let created_at = clock.at(-3600 + minutes * 60);
        let data = format!(r#"{{"event":"{event}","created_at":"{created_at}"}}"#);
        open(&server, address, &data).await;
    }

    let data = snapshot(&server, &token).await;
    assert_eq!(addresses(&data), ["C", "B", "E", "D", "A"]);
    let first = &data["calls"][0];
    assert_eq!(first["type"]["name"], "Notruf");
    assert_eq!(first["type"]["color"], "#e74c3c");
    // 1 when opened, more once its alarm (nobody on duty: unattended) was
    // written; the snapshot's is the largest.
    assert!(first["version"].as_i64() >= Some(1), "{first}");
    assert_eq!(first["element_name"], "Zimmer C");
    assert_eq!(first["closed_at"], Value::Null);
    let largest = data["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter_map(|call| call["version"].as_i64())
        .max();
    assert_eq!(data["version"].as_i64(), largest);
    assert_now_in(data["at"].as_str().expect("at"), "Europe/Berlin");
    assert_eq!(data["display"], json!({"name": "Flur", "sections": []}));

    // A closed call leaves the snapshot.
    server
        .display(&consumer(), "C", r#"{"closed":true}"#)
        .await
        .expect_status(200);
    assert_eq!(
        addresses(&snapshot(&server, &token).await),
        ["B", "E", "D", "A"]
    );
}

#[tokio::test]
async fn a_display_sees_its_sections_and_calls_without_a_section() {
    let server = production(&["A", "B", "C"]);
    let station_1 = token_of(&create_display(&server, "Station 1", &["S1"]));
    let everything = token_of(&create_display(&server, "Stationszimmer", &[]));
    open(&server, "A", r#"{"event":"Normalruf","section":"S1"}"#).await;
    open(&server, "B", r#"{"event":"Normalruf","section":"S2"}"#).await;
    open(&server, "C", r#"{"event":"Normalruf"}"#).await;

    let mut seen = addresses(&snapshot(&server, &station_1).await);
    seen.sort();
    assert_eq!(seen, ["A", "C"]);
    let mut all = addresses(&snapshot(&server, &everything).await);
    all.sort();
    assert_eq!(all, ["A", "B", "C"]);
    let only_s2 = read(&server, &format!("{CALLS}?section=S2"), &everything).await;
    only_s2.expect_status(200);
    assert_eq!(addresses(&only_s2.data()), ["B"]);
    // A section filter cannot widen a display's own sections.
    let outside = read(&server, &format!("{CALLS}?section=S2"), &station_1).await;
    assert_eq!(addresses(&outside.data()), Vec::<String>::new());
}

#[tokio::test]
async fn presence_is_a_call_of_type_presence_in_the_snapshot() {
    let server = production(&["A"]);
    let token = token_of(&create_display(&server, "Flur", &[]));
    open(&server, "A", r#"{"event":"Normalruf"}"#).await;
    open(&server, "A", r#"{"event":"Anwesenheit"}"#).await;
    let data = snapshot(&server, &token).await;
    let kinds: Vec<&str> = data["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|call| call["type"]["type"].as_str().expect("type.type"))
        .collect();
    // Normalruf (priority 3) before Anwesenheit (priority 9).
    assert_eq!(kinds, ["CALL", "PRESENCE"]);
}

#[tokio::test]
async fn reads_without_a_valid_token_are_401() {
    let server = production(&["A"]);
    let display = create_display(&server, "Flur", &[]);
    let id = display["id"].as_str().expect("id").to_string();
    let token = token_of(&display);

    let none = server.get(CALLS).await;
    none.expect_status(401);
    assert_eq!(none.text, unauthorized());
    let wrong = read(&server, CALLS, &"0".repeat(64)).await;
    wrong.expect_status(401);
    assert_eq!(wrong.text, unauthorized());
    read(&server, CALLS, &token).await.expect_status(200);
    read(&server, ELEMENTS, &token).await.expect_status(200);

    // Rotation: the new token works, the old one at once no longer.
    let rotated = server
        .admin(&["displays", "rotate", &id, "--json"])
        .success()
        .json();
    let new_token = token_of(&rotated);
    assert_ne!(new_token, token);
    assert_eq!(read(&server, CALLS, &token).await.text, unauthorized());
    read(&server, CALLS, &new_token).await.expect_status(200);

    // Revocation: refused over HTTP and on the live socket.
    server.admin(&["displays", "revoke", &id]).success();
    let revoked = read(&server, CALLS, &new_token).await;
    revoked.expect_status(401);
    assert_eq!(revoked.text, unauthorized());
    assert_eq!(read(&server, ELEMENTS, &new_token).await.status, 401);
    let url = format!("{}{LIVE}?token={new_token}", ws_base(&server));
    match tokio_tungstenite::connect_async(url).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 401);
        }
        other => panic!("a revoked token must not open the live feed: {other:?}"),
    }
    let listed = server
        .admin(&["displays", "list", "--json"])
        .success()
        .json();
    assert_eq!(listed[0]["revoked"], true);
    assert!(
        !listed.to_string().contains(&new_token),
        "list shows no token"
    );
}

#[tokio::test]
async fn live_feed_carries_opens_closes_and_element_changes_with_growing_versions() {
    let server = production(&["A"]);
    let token = token_of(&create_display(&server, "Flur", &[]));
    let mut socket = connect(&server, &token).await;

    let opened = open(&server, "A", r#"{"event":"Notruf","battery":80}"#).await;
    let message = next_message(&mut socket).await;
    assert_eq!(message["type"], "call.opened");
    assert_eq!(message["version"], 1);
    assert_eq!(message["call"]["id"], opened["id"]);
    assert_eq!(message["call"]["type"]["name"], "Notruf");
    assert_eq!(message["call"]["version"], 1);
    let element = next_message(&mut socket).await;
    assert_eq!(element["type"], "element.updated");
    assert_eq!(element["element"]["battery"], 80);
    let first_version = element["version"].as_i64().expect("version");

    server
        .display(&consumer(), "A", r#"{"closed":true,"battery":70}"#)
        .await
        .expect_status(200);
    let closed = next_message(&mut socket).await;
    assert_eq!(closed["type"], "call.closed");
    // Newer than the open (and than any change of its alarm meanwhile).
    assert!(
        closed["version"].as_i64() > message["version"].as_i64(),
        "{closed}"
    );
    assert_eq!(closed["call"]["id"], opened["id"]);
    assert!(closed["call"]["closed_at"].is_string());
    let element = next_message(&mut socket).await;
    assert_eq!(element["element"]["battery"], 70);
    assert!(element["version"].as_i64().expect("version") > first_version);

    server
        .element(&consumer(), "A", r#"{"reachable":false}"#)
        .await
        .expect_status(200);
    let third = next_message(&mut socket).await;
    assert_eq!(third["type"], "element.updated");
    assert_eq!(third["element"]["reachable"], false);
    assert!(third["version"].as_i64() > element["version"].as_i64());

    // The ping of DECISIONS §11.
    socket
        .send(Message::Text(r#"{"action":"ping"}"#.into()))
        .await
        .expect("ping sent");
    let deadline = Instant::now() + LIVE_WAIT;
    loop {
        let frame = tokio::time::timeout(deadline - Instant::now(), socket.next())
            .await
            .expect("pong in time")
            .expect("open")
            .expect("frame");
        if let Message::Text(text) = frame {
            assert_eq!(text.as_str(), r#"{"type":"pong"}"#);
            break;
        }
    }
    let output = server.all_output();
    assert!(
        !output.contains(&token),
        "the token must not reach the logs"
    );
}

#[tokio::test]
async fn a_display_of_other_sections_gets_no_live_message_for_a_call() {
    let server = production(&["A", "B"]);
    let token = token_of(&create_display(&server, "Station 1", &["S1"]));
    let mut socket = connect(&server, &token).await;
    open(&server, "B", r#"{"event":"Normalruf","section":"S2"}"#).await;
    open(&server, "A", r#"{"event":"Normalruf","section":"S1"}"#).await;
    let message = next_message(&mut socket).await;
    assert_eq!(message["call"]["address"], "A", "the S2 call is not sent");
}

#[tokio::test]
async fn a_client_that_reconnects_and_rereads_misses_nothing() {
    let server = production(&["A", "B"]);
    let token = token_of(&create_display(&server, "Flur", &[]));
    let mut socket = connect(&server, &token).await;
    open(&server, "A", r#"{"event":"Normalruf"}"#).await;
    assert_eq!(next_message(&mut socket).await["call"]["address"], "A");
    socket.close(None).await.expect("closed");

    // While it is away: B opens, A closes.
    open(&server, "B", r#"{"event":"WC"}"#).await;
    server
        .display(&consumer(), "A", r#"{"closed":true}"#)
        .await
        .expect_status(200);

    // Connect first, then read the snapshot (DECISIONS §11), then apply news.
    let mut socket = connect(&server, &token).await;
    let data = snapshot(&server, &token).await;
    assert_eq!(addresses(&data), ["B"]);
    open(&server, "A", r#"{"event":"Notruf"}"#).await;
    let message = next_message(&mut socket).await;
    assert_eq!(message["type"], "call.opened");
    assert_eq!(message["call"]["address"], "A");
}

#[tokio::test]
async fn elements_that_need_attention_are_listed_with_their_reasons() {
    let server = production(&["A", "B", "C"]);
    let token = token_of(&create_display(&server, "Flur", &[]));
    server
        .element(&consumer(), "A", r#"{"battery":15}"#)
        .await
        .expect_status(200);
    server
        .element(&consumer(), "B", r#"{"battery":90,"reachable":false}"#)
        .await
        .expect_status(200);
    server
        .element(&consumer(), "C", r#"{"battery":90,"reachable":true}"#)
        .await
        .expect_status(200);

    let response = read(&server, &format!("{ELEMENTS}?attention=true"), &token).await;
    response.expect_status(200);
    let data = response.data();
    let listed: Vec<(String, Value)> = data["elements"]
        .as_array()
        .expect("elements")
        .iter()
        .map(|e| {
            (
                e["address"].as_str().expect("address").to_string(),
                e["reasons"].clone(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("A".to_string(), json!(["battery_low"])),
            ("B".to_string(), json!(["unreachable"])),
        ]
    );
    assert_eq!(data["elements"][0]["name"], "Zimmer A");
    assert!(data["elements"][0]["version"].as_i64() >= Some(1));

    let all = read(&server, ELEMENTS, &token).await.data();
    assert_eq!(all["elements"].as_array().expect("elements").len(), 3);
    let wrong = read(&server, &format!("{ELEMENTS}?attention=maybe"), &token).await;
    wrong.expect_status(422);
}

#[tokio::test]
async fn the_sandbox_page_cookie_reads_its_own_scope_only() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let other = server.new_consumer().await;
    server
        .display(&visitor, "Zimmer-1", r#"{"event":"Normalruf"}"#)
        .await
        .expect_status(201);
    server
        .display(&other, "Zimmer-2", r#"{"event":"Notruf"}"#)
        .await
        .expect_status(201);
    let cookie = visitor.cookie();
    let response = server
        .request(
            reqwest::Method::GET,
            CALLS,
            None,
            &[("Cookie", cookie.as_str())],
            Vec::new(),
        )
        .await;
    response.expect_status(200);
    assert_eq!(addresses(&response.data()), ["Zimmer-1"]);
    // Without the cookie: 401, as in production.
    server.get(CALLS).await.expect_status(401);
}

/// 100 displays connected at once all receive every one of 200 changes
/// (100 opens and 100 closes), in order per call.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_live_clients_receive_every_one_of_200_changes() {
    const CLIENTS: usize = 100;
    const CALLS_OPENED: usize = 100;
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let cookie = visitor.cookie();
    let mut sockets = Vec::new();
    for _ in 0..CLIENTS {
        let mut request = format!("{}{LIVE}", ws_base(&server))
            .into_client_request()
            .expect("request");
        request
            .headers_mut()
            .insert("Cookie", cookie.parse().expect("cookie header"));
        let (socket, _) = tokio_tungstenite::connect_async(request)
            .await
            .expect("connects");
        sockets.push(socket);
    }
    let readers: Vec<_> = sockets
        .into_iter()
        .map(|mut socket| {
            tokio::spawn(async move {
                let mut received = Vec::new();
                while received.len() < 2 * CALLS_OPENED {
                    let message = tokio::time::timeout(Duration::from_secs(120), socket.next())
                        .await
                        .expect("messages keep coming")
                        .expect("open")
                        .expect("frame");
                    if let Message::Text(text) = message {
                        let value: Value = serde_json::from_str(text.as_str()).expect("JSON");
                        if value["type"]
                            .as_str()
                            .is_some_and(|t| t.starts_with("call."))
                            && !is_alarm_message(&value)
                        {
                            received
                                .push((value["type"].clone(), value["call"]["address"].clone()));
                        }
                    }
                }
                received
            })
        })
        .collect();
    for i in 0..CALLS_OPENED {
        let target = format!("Zimmer-{i}");
        server
            .display(&visitor, &target, r#"{"event":"Normalruf"}"#)
            .await
            .expect_status(201);
        server
            .display(&visitor, &target, r#"{"closed":true}"#)
            .await
            .expect_status(200);
    }
    let expected: Vec<(Value, Value)> = (0..CALLS_OPENED)
        .flat_map(|i| {
            let address = json!(format!("Zimmer-{i}"));
            [
                (json!("call.opened"), address.clone()),
                (json!("call.closed"), address),
            ]
        })
        .collect();
    for reader in readers {
        assert_eq!(reader.await.expect("reader"), expected);
    }
}

/// A display that never reads must not slow down the writers: the same
/// element updates are timed without and with a stalled live client (that
/// the server drops one that falls behind is `LiveHub`'s unit test). SQLite only: the property is the
/// live feed's, and moto's own latency would drown the measurement.
#[tokio::test]
async fn a_stalled_live_client_does_not_slow_writes() {
    if skip_unless_sqlite("a_stalled_live_client_does_not_slow_writes") {
        return;
    }
    const WRITES: usize = 1_500;
    let server = production(&["A"]);
    let token = token_of(&create_display(&server, "Flur", &[]));
    let battery = |i: usize| format!(r#"{{"battery":{}}}"#, i % 100);

    let mut without = Vec::with_capacity(WRITES);
    for i in 0..WRITES {
        let started = Instant::now();
        server
            .element(&consumer(), "A", &battery(i))
            .await
            .expect_status(200);
        without.push(started.elapsed());
    }

    // Connected, never read: its socket buffers fill, then the ring overflows.
    let stalled = connect(&server, &token).await;
    let mut with = Vec::with_capacity(WRITES);
    for i in 0..WRITES {
        let started = Instant::now();
        server
            .element(&consumer(), "A", &battery(i))
            .await
            .expect_status(200);
        with.push(started.elapsed());
    }
    let (median_without, p99_without) = percentiles(&mut without);
    let (median_with, p99_with) = percentiles(&mut with);
    println!(
        "write latency without a stalled client: median {median_without:?}, p99 {p99_without:?}; \
         with one: median {median_with:?}, p99 {p99_with:?}"
    );
    assert!(
        median_with <= median_without * 3 + Duration::from_millis(2),
        "a stalled client slowed the writes: {median_without:?} → {median_with:?}"
    );
    // Everyone else is still served at once.
    let mut reading = connect(&server, &token).await;
    server
        .element(&consumer(), "A", r#"{"battery":42}"#)
        .await
        .expect_status(200);
    assert_eq!(next_message(&mut reading).await["element"]["battery"], 42);
    drop(stalled);
}

fn percentiles(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99))
}
