//! What the alarm tests share (tests/tests/alarms.rs, alarms_timing.rs):
//! a sandbox visitor with staff of their own (`POST /api/v1/sandbox/staff`),
//! duties, calls, responses, the staff and display reads, and the live
//! socket of staff pages and displays.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use blackbox_tests::*;
use futures_util::StreamExt;
use tokio_tungstenite::tungstenite::Message;

pub(crate) const STAFF_ME: &str = "/api/v1/staff/me";
pub(crate) const STAFF_DUTY: &str = "/api/v1/staff/duty";
pub(crate) const STAFF_CALLS: &str = "/api/v1/staff/calls";
pub(crate) const SANDBOX_STAFF: &str = "/api/v1/sandbox/staff";
pub(crate) const DISPLAY_CALLS: &str = "/api/v1/display/calls";
pub(crate) const LIVE: &str = "/api/v1/display/live";

/// The shortened policy of the issue: section at once, house after 2 s,
/// group Leitung after 4 s.
pub(crate) const SHORT_POLICY: &str =
    r#"[{"after":0,"to":"section"},{"after":2,"to":"house"},{"after":4,"to":"group:Leitung"}]"#;

/// How long a message may take where the contract says 1 s: the tests
/// assert the 1 s themselves where they measure it, and wait this long for
/// anything (moto on a busy machine is slow).
pub(crate) const WAIT: Duration = Duration::from_secs(10);

pub(crate) type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A staff member of a sandbox visitor, with their token.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub id: String,
    pub name: String,
    pub token: String,
}

/// `nurse-call-admin call-types set NAME --escalation JSON` on the
/// server's store (the local server sees it at once).
pub(crate) fn set_escalation(server: &Server, call_type: &str, policy: &str) {
    server
        .admin(&["call-types", "set", call_type, "--escalation", policy])
        .success();
}

/// A staff member of `visitor`'s scope (`POST /api/v1/sandbox/staff`).
pub(crate) async fn staff(
    server: &Server,
    visitor: &Consumer,
    name: &str,
    groups: &[&str],
) -> Member {
    let path = format!(
        "{SANDBOX_STAFF}?consumer={}&hash={}",
        visitor.id,
        visitor.proof()
    );
    let response = server
        .post(&path, json!({"name": name, "groups": groups}).to_string())
        .await;
    response.expect_status(201);
    let data = response.data();
    Member {
        id: data["id"].as_str().expect("id").to_string(),
        name: name.to_string(),
        token: data["token"].as_str().expect("token").to_string(),
    }
}

/// A request with `token` as Bearer; `body` as JSON when given.
pub(crate) async fn as_staff(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<&str>,
) -> Response {
    let bearer = format!("Bearer {token}");
    let headers = [("Authorization", bearer.as_str())];
    match body {
        Some(body) => {
            server
                .request(method, path, Some("application/json"), &headers, body)
                .await
        }
        None => {
            server
                .request(method, path, None, &headers, Vec::new())
                .await
        }
    }
}

/// The visitor's Anna on duty for section 1 and Ben for section 2, as most
/// alarm tests start.
pub(crate) async fn anna_and_ben_on_duty(server: &Server, visitor: &Consumer) -> (Member, Member) {
    let anna = staff(server, visitor, "Anna", &[]).await;
    let ben = staff(server, visitor, "Ben", &[]).await;
    sign_on(server, &anna, &["1"]).await;
    sign_on(server, &ben, &["2"]).await;
    (anna, ben)
}

/// Signs `member` on for `sections` (empty = the whole house), asserting 200.
pub(crate) async fn sign_on(server: &Server, member: &Member, sections: &[&str]) -> Value {
    let body = json!({ "sections": sections }).to_string();
    let response = as_staff(
        server,
        reqwest::Method::PUT,
        STAFF_DUTY,
        &member.token,
        Some(&body),
    )
    .await;
    response.expect_status(200);
    response.data()
}

/// `member`'s response to call `id`.
pub(crate) async fn respond(server: &Server, member: &Member, id: i64, response: &str) -> Response {
    let body = json!({ "response": response }).to_string();
    as_staff(
        server,
        reqwest::Method::POST,
        &format!("/api/v1/staff/calls/{id}/responses"),
        &member.token,
        Some(&body),
    )
    .await
}

/// `GET /api/v1/staff/calls`'s `calls`, asserting 200.
pub(crate) async fn staff_calls(server: &Server, member: &Member) -> Vec<Value> {
    let response = as_staff(
        server,
        reqwest::Method::GET,
        STAFF_CALLS,
        &member.token,
        None,
    )
    .await;
    response.expect_status(200);
    response.data()["calls"].as_array().expect("calls").clone()
}

/// Opens `event` on `address` in `section` (if any); the call's id.
pub(crate) async fn open(
    server: &Server,
    visitor: &Consumer,
    address: &str,
    event: &str,
    section: Option<&str>,
) -> i64 {
    let mut data = json!({ "event": event });
    if let Some(section) = section {
        data["section"] = json!(section);
    }
    let response = server.display(visitor, address, &data.to_string()).await;
    response.expect_status(201);
    response.data()["id"].as_i64().expect("id")
}

pub(crate) async fn close(server: &Server, visitor: &Consumer, address: &str) {
    server
        .display(visitor, address, r#"{"closed":true}"#)
        .await
        .expect_status(200);
}

/// The visitor's displays' read (the test page's cookie): its `data`.
pub(crate) async fn display_read(server: &Server, visitor: &Consumer) -> Value {
    let cookie = visitor.cookie();
    let response = server
        .request(
            reqwest::Method::GET,
            DISPLAY_CALLS,
            None,
            &[("Cookie", cookie.as_str())],
            Vec::new(),
        )
        .await;
    response.expect_status(200);
    response.data()
}

/// The visitor's displays' read (the test page's cookie): the call `id`.
pub(crate) async fn displayed(server: &Server, visitor: &Consumer, id: i64) -> Option<Value> {
    call_by_id(&display_read(server, visitor).await["calls"], id)
}

/// Polls the displays' read until call `id`'s alarm is in `state`; its record.
pub(crate) async fn displayed_in_state(
    server: &Server,
    visitor: &Consumer,
    id: i64,
    state: &str,
) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let call = displayed(server, visitor, id).await;
        if let Some(call) = call.as_ref().filter(|c| c["alarm"]["state"] == state) {
            return call.clone();
        }
        assert!(
            Instant::now() < deadline,
            "call {id} never showed alarm state {state}: {call:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A staff page's live socket.
pub(crate) async fn connect_staff(server: &Server, member: &Member) -> Socket {
    connect_staff_token(server, &member.token).await
}

/// The staff page of the person of `token` on the live socket: while it is
/// open, a channel to them (§18).
pub(crate) async fn connect_staff_token(server: &Server, token: &str) -> Socket {
    connect(server, &format!("token={token}")).await
}

/// A display of the visitor's scope on the live socket (their proof).
pub(crate) async fn connect_display(server: &Server, visitor: &Consumer) -> Socket {
    connect(
        server,
        &format!("consumer={}&hash={}", visitor.id, visitor.proof()),
    )
    .await
}

async fn connect(server: &Server, query: &str) -> Socket {
    let url = format!(
        "{}{LIVE}?{query}",
        server.base_url().replacen("http://", "ws://", 1)
    );
    tokio_tungstenite::connect_async(url)
        .await
        .expect("live socket connects")
        .0
}

/// The next message of `kind` about call `id` within `within`, skipping the
/// others (pongs, other calls, other kinds); `None` when none came.
pub(crate) async fn message_within(
    socket: &mut Socket,
    kind: &str,
    id: i64,
    within: Duration,
) -> Option<Value> {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let frame = match tokio::time::timeout(left, socket.next()).await {
            Err(_) => return None,
            Ok(frame) => frame.expect("socket open").expect("a frame"),
        };
        if let Message::Text(text) = frame {
            let message = documented(text.as_str());
            if message["type"] == kind && message["call"]["id"] == id {
                return Some(message);
            }
        }
    }
}

/// A live message, checked against docs/openapi.yaml's `LiveMessage` (or
/// `LivePong`).
pub(crate) fn documented(text: &str) -> Value {
    let message: Value = serde_json::from_str(text).expect("JSON message");
    let schema = if message["type"] == "pong" {
        "/components/schemas/LivePong"
    } else {
        "/components/schemas/LiveMessage"
    };
    let errors = openapi::document().schema_errors(schema, &message);
    assert!(
        errors.is_empty(),
        "live message {text} does not match {schema}: {errors:#?}"
    );
    message
}

/// [`message_within`] [`WAIT`], panicking when none came.
pub(crate) async fn message(socket: &mut Socket, kind: &str, id: i64) -> Value {
    message_within(socket, kind, id, WAIT)
        .await
        .unwrap_or_else(|| panic!("no {kind} for call {id} within {WAIT:?}"))
}

/// Every text message that arrives within `within`.
pub(crate) async fn messages_for(socket: &mut Socket, within: Duration) -> Vec<Value> {
    let deadline = Instant::now() + within;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, socket.next()).await {
            Err(_) => return seen,
            Ok(frame) => {
                if let Message::Text(text) = frame.expect("socket open").expect("a frame") {
                    seen.push(documented(text.as_str()));
                }
            }
        }
    }
}

/// Seconds since `since`, for the printed figures.
pub(crate) fn seconds(since: Instant) -> f64 {
    since.elapsed().as_secs_f64()
}
