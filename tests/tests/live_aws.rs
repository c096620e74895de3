//! The displays' live feed as it runs in AWS (issue 13, CONTRACT-13), end to
//! end on moto: the local server writes to DynamoDB (moto); the real
//! `live-connect` binary, run through a Lambda Runtime API, accepts and
//! refuses `$connect` events and records the connections; the data table's
//! stream, read from moto as Lambda's event source mapping reads it, goes
//! in batches to the real `broadcast` binary, which posts to a stand-in of
//! API Gateway's management API. Asserted: the §11 messages arrive per
//! connection in write order with growing versions, the same messages as
//! the local server's own live socket sends, the section filter, a gone
//! connection forgotten, a `$disconnect` forgetting its connection, and no
//! token in any log line.
//!
//! Runs with `BLACKBOX_STORE=dynamodb` (scripts/test runs the suite a second
//! time so); on SQLite there is no stream, and it says that it is skipped.

mod live_aws {
    pub(crate) mod management_api;
    pub(crate) mod moto_api;
    pub(crate) mod runtime_api;
}

use std::collections::HashMap;
use std::time::{Duration, Instant};

use blackbox_tests::*;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use live_aws::management_api::ManagementApi;
use live_aws::moto_api::{Moto, StreamReader};
use live_aws::runtime_api::Function;

const CONSUMER: &str = "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f";
const SECRET: &str = "live-aws-secret";
const WAIT: Duration = Duration::from_secs(20);

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

fn consumer() -> Consumer {
    Consumer::new(CONSUMER, SECRET)
}

/// The region the local server and the admin command resolve (moto keeps
/// tables per region): the environment's, else their default.
fn region() -> String {
    ["AWS_REGION", "AWS_DEFAULT_REGION"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|value| !value.is_empty()))
        .unwrap_or_else(|| "eu-central-1".to_string())
}

/// The stack's environment of both functions (CONTRACT-13), on moto.
fn function_env(prefix: &str, region: &str, management: &str) -> Vec<(String, String)> {
    [
        ("SERVICE_MODE", "production".to_string()),
        ("SERVICE_TIME_ZONE", "Europe/Berlin".to_string()),
        ("CALL_TYPES_TABLE", format!("{prefix}call-types")),
        ("CONSUMERS_TABLE", format!("{prefix}consumers")),
        ("DATA_TABLE", format!("{prefix}data")),
        ("CONNECTIONS_TABLE", format!("{prefix}connections")),
        ("LIVE_MANAGEMENT_ENDPOINT", management.to_string()),
        ("DYNAMODB_ENDPOINT", store_conformance::moto::endpoint()),
        // moto answers one request at a time: slower than DynamoDB.
        ("DYNAMODB_ATTEMPT_TIMEOUT_MS", "10000".to_string()),
        ("DYNAMODB_OPERATION_TIMEOUT_MS", "30000".to_string()),
        ("AWS_REGION", region.to_string()),
        ("AWS_DEFAULT_REGION", region.to_string()),
        ("RUST_LOG", "info".to_string()),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), value))
    .collect()
}

/// An API Gateway WebSocket `$connect` event as Lambda delivers it.
fn connect_event(connection_id: &str, query: &[(&str, &str)]) -> Value {
    let parameters: serde_json::Map<String, Value> = query
        .iter()
        .map(|(key, value)| (key.to_string(), json!(value)))
        .collect();
    let multi: serde_json::Map<String, Value> = query
        .iter()
        .map(|(key, value)| (key.to_string(), json!([value])))
        .collect();
    let mut event = websocket_event("$connect", "CONNECT", connection_id);
    event["headers"] = json!({
        "Host": "a1b2c3d4e5.execute-api.eu-central-1.amazonaws.com",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version": "13",
        "X-Forwarded-For": "203.0.113.7",
        "X-Forwarded-Proto": "https"
    });
    if !query.is_empty() {
        event["queryStringParameters"] = parameters.into();
        event["multiValueQueryStringParameters"] = multi.into();
    }
    event
}

fn disconnect_event(connection_id: &str) -> Value {
    let mut event = websocket_event("$disconnect", "DISCONNECT", connection_id);
    event["requestContext"]["disconnectStatusCode"] = json!(1001);
    event["requestContext"]["disconnectReason"] = json!("Going away");
    event
}

fn websocket_event(route: &str, kind: &str, connection_id: &str) -> Value {
    let now = chrono::Utc::now().timestamp_millis();
    json!({
        "headers": {"Host": "a1b2c3d4e5.execute-api.eu-central-1.amazonaws.com"},
        "requestContext": {
            "routeKey": route,
            "eventType": kind,
            "messageDirection": "IN",
            "stage": "live",
            "connectedAt": now,
            "requestTimeEpoch": now,
            "requestId": format!("req-{connection_id}"),
            "domainName": "a1b2c3d4e5.execute-api.eu-central-1.amazonaws.com",
            "connectionId": connection_id,
            "apiId": "a1b2c3d4e5",
            "identity": {"sourceIp": "203.0.113.7"}
        },
        "isBase64Encoded": false
    })
}

fn create_display(server: &Server, name: &str, sections: &[&str]) -> Value {
    let mut args = vec!["displays", "create", "--name", name, "--json"];
    for section in sections {
        args.extend(["--section", section]);
    }
    server.admin(&args).success().json()
}

fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key]
        .as_str()
        .unwrap_or_else(|| panic!("no {key} in {value}"))
}

/// The local server's own live socket (DECISIONS §11), for comparison.
async fn local_socket(server: &Server, token: &str) -> Socket {
    let url = format!(
        "{}/api/v1/display/live?token={token}",
        server.base_url().replacen("http://", "ws://", 1)
    );
    tokio_tungstenite::connect_async(url)
        .await
        .expect("the local live socket connects")
        .0
}

async fn local_messages(socket: &mut Socket, count: usize) -> Vec<Value> {
    let mut messages = Vec::new();
    let deadline = Instant::now() + WAIT;
    while messages.len() < count {
        let left = deadline.saturating_duration_since(Instant::now());
        let frame = tokio::time::timeout(left, socket.next())
            .await
            .unwrap_or_else(|_| panic!("{count} local messages, got {messages:?}"))
            .expect("socket open")
            .expect("a frame");
        if let Message::Text(text) = frame {
            messages.push(serde_json::from_str(text.as_str()).expect("JSON"));
        }
    }
    messages
}

/// Waits until the local server's alarm runner wrote call `id`'s first
/// alarm (the displays' read shows it), so that the stream has that write
/// before the test hands the stream's records to the broadcast.
async fn alarm_written(server: &Server, token: &str, id: i64) {
    let bearer = format!("Bearer {token}");
    let deadline = Instant::now() + WAIT;
    loop {
        let read = server
            .request(
                reqwest::Method::GET,
                "/api/v1/display/calls",
                None,
                &[("Authorization", bearer.as_str())],
                Vec::new(),
            )
            .await;
        read.expect_status(200);
        if call_by_id(&read.data()["calls"], id).is_some_and(|call| !call["alarm"].is_null()) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "call {id}'s alarm was never written"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What identifies a message's item: `call <id>` or `element <address>`.
fn item_of(message: &Value) -> String {
    match message["call"]["id"].as_i64() {
        Some(id) => format!("call {id}"),
        None => format!("element {}", str_of(&message["element"], "address")),
    }
}

/// A message without its `duration` (it grows while a call is open, so the
/// two transports' copies, built at different moments, differ in it).
fn without_duration(message: &Value) -> Value {
    let mut message = message.clone();
    if let Some(call) = message.get_mut("call").and_then(Value::as_object_mut) {
        call.remove("duration");
    }
    message
}

fn types(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|message| format!("{} {}", str_of(message, "type"), item_of(message)))
        .collect()
}

/// Every connection's messages have growing versions per item.
fn assert_versions_grow(connection: &str, messages: &[Value]) {
    let mut seen: HashMap<String, i64> = HashMap::new();
    for message in messages {
        let version = message["version"].as_i64().expect("an integer version");
        let item = item_of(message);
        if let Some(before) = seen.insert(item.clone(), version) {
            assert!(
                version > before,
                "{connection}: {item} version {before} then {version}"
            );
        }
    }
}

/// The connection ids recorded in the connections table.
async fn connection_ids(moto: &Moto, table: &str) -> Vec<String> {
    moto.items(table)
        .await
        .iter()
        .map(|item| str_of(&item["connection_id"], "S").to_string())
        .collect()
}

/// From `written` (a write sent) to the last post received.
fn last_post_after(api: &ManagementApi, written: Instant) -> Duration {
    let last = api.posts().last().expect("a post").at;
    last.duration_since(written)
}

/// A step of the scenario: the stream's new records to the broadcast
/// function, asserting Lambda is told nothing to retry.
async fn broadcast_new_records(
    stream: &mut StreamReader<'_>,
    broadcast: &mut Function,
    timings: &mut Vec<(usize, Duration)>,
) -> usize {
    // moto may hand a write's records to GetRecords a moment after the
    // write's answer (as DynamoDB Streams does): wait a while for them.
    let mut event = stream.next_event().await;
    let deadline = Instant::now() + WAIT;
    while event["Records"].as_array().is_none_or(Vec::is_empty) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        event = stream.next_event().await;
    }
    let records = event["Records"].as_array().map_or(0, Vec::len);
    assert!(records > 0, "the write is in the stream");
    let started = Instant::now();
    let answer = broadcast.invoke(event).await;
    timings.push((records, started.elapsed()));
    assert_eq!(answer, json!({"batchItemFailures": []}), "nothing to retry");
    records
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_reach_the_displays_through_the_stream_the_broadcast_and_the_websocket_api() {
    if !on_dynamodb() {
        eprintln!(
            "live_aws: skipped on SQLite: it reads the data table's DynamoDB stream on moto \
             (scripts/test runs the suite again with BLACKBOX_STORE=dynamodb)"
        );
        return;
    }
    let started = Instant::now();
    let region = region();
    let server = Server::production(
        Seed::new()
            .consumer(CONSUMER, &[SECRET], false)
            .element("Zimmer-1", "Z1", "Zimmer 1")
            .element("Zimmer-2", "Z2", "Zimmer 2")
            .element("Zimmer-3", "Z3", "Zimmer 3"),
    );
    let prefix = server.table_prefix();
    let moto = Moto::new(&store_conformance::moto::endpoint(), &region);
    let connections_table = format!("{prefix}connections");
    moto.create_connections_table(&connections_table).await;
    moto.enable_stream(&format!("{prefix}data")).await;
    let everything = create_display(&server, "Stationszimmer", &[]);
    let ward_2 = create_display(&server, "Flur Station 2", &["S2"]);
    let (everything_token, ward_2_token) = (str_of(&everything, "token"), str_of(&ward_2, "token"));

    let api = ManagementApi::start().await;
    let env = function_env(&prefix, &region, &api.endpoint());
    let mut connect =
        Function::start("live-connect", &workspace_binary("live-connect"), &env).await;
    let mut broadcast = Function::start("broadcast", &workspace_binary("broadcast"), &env).await;

    // --- $connect: two displays, a third connection that will be gone, and refusals.
    let connections = [
        ("all=", everything_token),
        ("ward-2=", ward_2_token),
        ("gone=", everything_token),
    ];
    for (id, token) in connections {
        let answer = connect.invoke(connect_event(id, &[("token", token)])).await;
        assert_eq!(answer["statusCode"], 200, "{id}: {answer}");
    }
    let unauthorized = error_body("unauthorized", 401, "Anmeldung erforderlich.");
    let wrong_token = "0f".repeat(32);
    for (case, query) in [
        ("wrong token", vec![("token", wrong_token.as_str())]),
        ("no token", vec![]),
        // Production: a sandbox proof counts for nothing.
        (
            "a sandbox proof",
            vec![("consumer", CONSUMER), ("hash", "00")],
        ),
    ] {
        let answer = connect.invoke(connect_event("refused=", &query)).await;
        assert_eq!(answer["statusCode"], 401, "{case}: {answer}");
        assert_eq!(answer["body"], unauthorized, "{case}");
    }
    let mut recorded: Vec<(String, Value, Value)> = moto
        .items(&connections_table)
        .await
        .iter()
        .map(|item| {
            (
                item["connection_id"]["S"].as_str().unwrap().to_string(),
                item["sections"].clone(),
                item["display_id"].clone(),
            )
        })
        .collect();
    recorded.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        recorded,
        [
            (
                "all=".into(),
                json!({"L": []}),
                json!({"S": everything["id"]})
            ),
            (
                "gone=".into(),
                json!({"L": []}),
                json!({"S": everything["id"]})
            ),
            (
                "ward-2=".into(),
                json!({"L": [{"S": "S2"}]}),
                json!({"S": ward_2["id"]})
            ),
        ],
        "the accepted connections with their sections, and no refused one"
    );

    // The local server's live socket of the same display, for comparison.
    let mut local = local_socket(&server, everything_token).await;
    let mut stream = StreamReader::latest(&moto, &format!("{prefix}data")).await;
    api.declare_gone("gone=");
    let mut timings = Vec::new();
    let mut write_to_post = Vec::new();

    // --- 1. A Notruf in section S1.
    let written = Instant::now();
    let opened = server
        .display(
            &consumer(),
            "Zimmer-1",
            r#"{"event":"Notruf","section":"S1"}"#,
        )
        .await;
    opened.expect_status(201);
    let call_id = opened.data()["id"].as_i64().expect("call id");
    alarm_written(&server, everything_token, call_id).await;
    broadcast_new_records(&mut stream, &mut broadcast, &mut timings).await;
    write_to_post.push(last_post_after(&api, written));
    let gone_posts: Vec<u16> = api
        .posts()
        .iter()
        .filter(|post| post.connection_id == "gone=")
        .map(|post| post.status)
        .collect();
    assert_eq!(gone_posts, [410], "one post found it gone");
    let left = connection_ids(&moto, &connections_table).await;
    assert!(
        !left.contains(&"gone=".to_string()),
        "its item is deleted: {left:?}"
    );

    // --- 2. The same Notruf again with a battery level (only the element changes),
    // --- 3. an element of its own, 4. a call in section S2: one batch.
    let written = Instant::now();
    let again = server
        .display(
            &consumer(),
            "Zimmer-1",
            r#"{"event":"Notruf","section":"S1","battery":55}"#,
        )
        .await;
    again.expect_status(200);
    server
        .element(
            &consumer(),
            "Zimmer-2",
            r#"{"battery":80,"reachable":true}"#,
        )
        .await
        .expect_status(200);
    let second = server
        .display(
            &consumer(),
            "Zimmer-3",
            r#"{"event":"Normalruf","section":"S2"}"#,
        )
        .await;
    second.expect_status(201);
    let second_id = second.data()["id"].as_i64().expect("call id");
    alarm_written(&server, everything_token, second_id).await;
    broadcast_new_records(&mut stream, &mut broadcast, &mut timings).await;
    write_to_post.push(last_post_after(&api, written));

    // --- 5. The Notruf closed.
    let written = Instant::now();
    server
        .display(&consumer(), "Zimmer-1", r#"{"closed":true}"#)
        .await
        .expect_status(200);
    broadcast_new_records(&mut stream, &mut broadcast, &mut timings).await;
    write_to_post.push(last_post_after(&api, written));

    // --- $disconnect of the S2 display, then 6. an element: only one display left.
    let answer = connect.invoke(disconnect_event("ward-2=")).await;
    assert_eq!(answer["statusCode"], 200);
    let left = connection_ids(&moto, &connections_table).await;
    assert_eq!(left, ["all="], "the disconnected item is deleted");
    let written = Instant::now();
    server
        .element(&consumer(), "Zimmer-3", r#"{"battery":12}"#)
        .await
        .expect_status(200);
    broadcast_new_records(&mut stream, &mut broadcast, &mut timings).await;
    write_to_post.push(last_post_after(&api, written));

    // --- What the displays got.
    let all = api.delivered_to("all=");
    assert_eq!(
        types(&all),
        [
            format!("call.opened call {call_id}"),
            format!("call.unattended call {call_id}"),
            "element.updated element Zimmer-1".to_string(),
            "element.updated element Zimmer-2".to_string(),
            format!("call.opened call {second_id}"),
            format!("call.unattended call {second_id}"),
            format!("call.closed call {call_id}"),
            "element.updated element Zimmer-3".to_string(),
        ],
        "every change, in write order"
    );
    assert_eq!(
        types(&api.delivered_to("ward-2=")),
        [
            "element.updated element Zimmer-1".to_string(),
            "element.updated element Zimmer-2".to_string(),
            format!("call.opened call {second_id}"),
            format!("call.unattended call {second_id}"),
        ],
        "its section S2 and the elements, nothing after its disconnect"
    );
    assert_versions_grow("all=", &all);
    let opened_message = &all[0];
    assert_eq!(opened_message["version"], 1);
    assert_eq!(opened_message["call"]["section"], "S1");
    assert_eq!(opened_message["call"]["element_name"], "Zimmer 1");
    assert_eq!(opened_message["call"]["type"]["name"], "Notruf");
    assert_eq!(opened_message["call"]["closed_at"], Value::Null);
    wire_time(str_of(&opened_message["call"], "opened_at"));
    // Nobody on duty: the open's alarm became unattended (version 2, every
    // level started at once), then the close (3).
    assert_eq!(all[1]["version"], 2);
    assert_eq!(all[1]["call"]["alarm"]["state"], "unattended");
    let closed_message = &all[6];
    assert_eq!(closed_message["version"], 3);
    wire_time(str_of(&closed_message["call"], "closed_at"));
    assert_eq!(all[2]["element"]["battery"], 55);
    assert!(
        all[2]["version"].as_i64().unwrap() >= 2,
        "the element's version grew"
    );
    assert!(
        api.posts()
            .iter()
            .all(|post| post.signed_for.as_deref() == Some("execute-api")),
        "every post is signed for execute-api (the IAM action of the contract)"
    );

    // The same messages as the local server's live socket sent (per item:
    // across items the two transports may order a transaction's changes
    // differently; a display orders by version per item).
    let mut from_local = local_messages(&mut local, all.len()).await;
    let mut through_aws: Vec<Value> = all.iter().map(without_duration).collect();
    from_local = from_local.iter().map(without_duration).collect();
    let key = |message: &Value| format!("{} {}", item_of(message), message["version"]);
    from_local.sort_by_key(key);
    through_aws.sort_by_key(key);
    assert_eq!(through_aws, from_local, "the same §11 messages as locally");

    // No token in any log line of either function.
    connect.stop();
    broadcast.stop();
    let logs = [connect.logs(), broadcast.logs()].concat().join("\n");
    for token in [everything_token, ward_2_token, wrong_token.as_str()] {
        assert!(!logs.contains(token), "a token in the functions' logs");
    }
    let batches = broadcast.log_entries("stream batch broadcast");
    assert_eq!(batches.len(), timings.len(), "one log line per batch");

    let records: usize = timings.iter().map(|(records, _)| records).sum();
    let handler_ms: u64 = batches
        .iter()
        .filter_map(|entry| entry["ms"].as_u64())
        .sum();
    let posts = api.posts().len();
    let sizes: Vec<usize> = api.posts().iter().map(|post| post.bytes).collect();
    assert!(
        sizes.iter().all(|bytes| *bytes < 32 * 1024),
        "each message fits one 32 KiB WebSocket billing unit: {sizes:?}"
    );
    eprintln!(
        "live_aws: {records} stream records in {} batches, {posts} posts of {}–{} bytes; \
         broadcast handler {handler_ms} ms in all ({:.1} ms per record, {:.1} ms per post, \
         moto included); \
         invocation round trips {:?} ms; write sent to its last post (the harness polling the \
         stream) {:?} ms; test {:.1} s",
        timings.len(),
        sizes.iter().min().unwrap_or(&0),
        sizes.iter().max().unwrap_or(&0),
        handler_ms as f64 / records as f64,
        handler_ms as f64 / posts as f64,
        timings
            .iter()
            .map(|(_, took)| took.as_millis())
            .collect::<Vec<_>>(),
        write_to_post
            .iter()
            .map(Duration::as_millis)
            .collect::<Vec<_>>(),
        started.elapsed().as_secs_f64()
    );
    moto.drop_table(&connections_table).await;
}
