//! The test server's staff (DECISIONS §8, §14): a visitor creates staff of
//! their own scope (`POST /api/v1/sandbox/staff`, at most 20), and with the
//! token they get once tries the whole path an integrator cares about: sign
//! on, a call alerts them, the display shows it, they accept it, the display
//! says who comes. Another visitor sees none of it; the token is in no log
//! line. Runs on SQLite and, with `BLACKBOX_STORE=dynamodb`, on moto.

mod alarms_support;

use std::time::{Duration, Instant};

use alarms_support::connect_staff_token;
use blackbox_tests::*;
use reqwest::Method;

const SANDBOX_STAFF: &str = "/api/v1/sandbox/staff";
/// How long the alarm of a new call may take to show (the contract: at once
/// after the commit; moto and a busy machine get some slack).
const ALARM_WAIT: Duration = Duration::from_secs(10);

async fn create_staff(server: &Server, visitor: &Consumer, body: &str) -> Response {
    server
        .request(
            Method::POST,
            SANDBOX_STAFF,
            Some("application/json"),
            &[("Cookie", &visitor.cookie())],
            body,
        )
        .await
}

async fn as_staff(
    server: &Server,
    method: Method,
    path: &str,
    token: &str,
    body: &str,
) -> Response {
    let bearer = format!("Bearer {token}");
    let content_type = (!body.is_empty()).then_some("application/json");
    server
        .request(
            method,
            path,
            content_type,
            &[("Authorization", &bearer)],
            body,
        )
        .await
}

/// The visitor's open calls as their display reads them (the page's cookie).
async fn display_calls(server: &Server, visitor: &Consumer) -> Value {
    let response = server
        .request(
            Method::GET,
            "/api/v1/display/calls",
            None,
            &[("Cookie", &visitor.cookie())],
            Vec::new(),
        )
        .await;
    response.expect_status(200);
    response.data()["calls"].clone()
}

/// Polls the visitor's display until call `id`'s alarm satisfies `check`.
async fn alarm_of(
    server: &Server,
    visitor: &Consumer,
    id: i64,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let started = Instant::now();
    loop {
        let calls = display_calls(server, visitor).await;
        let alarm = call_by_id(&calls, id)
            .map(|call| call["alarm"].clone())
            .unwrap_or_default();
        if check(&alarm) {
            return alarm;
        }
        assert!(
            started.elapsed() < ALARM_WAIT,
            "call {id}: alarm {alarm} after {ALARM_WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_visitor_s_staff_member_is_alerted_and_accepts_on_the_whole_path() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let created = create_staff(
        &server,
        &visitor,
        r#"{"name":" Anna ","groups":["Leitung"]}"#,
    )
    .await;
    created.expect_status(201);
    let anna = created.data();
    let token = anna["token"].as_str().expect("token").to_string();
    assert!(
        token.len() == 64 && token.bytes().all(|b| b.is_ascii_hexdigit()),
        "{anna}"
    );
    assert!(
        is_uuid_v4(anna["id"].as_str().unwrap_or_default()),
        "{anna}"
    );
    assert_eq!(
        (
            anna["name"].clone(),
            anna["groups"].clone(),
            anna["page"].clone()
        ),
        (
            json!("Anna"),
            json!(["Leitung"]),
            json!(format!("/staff#token={token}"))
        )
    );

    // The token is the staff API's: who they are, then on duty.
    let me = as_staff(&server, Method::GET, "/api/v1/staff/me", &token, "").await;
    me.expect_status(200);
    assert_eq!(me.data()["name"], "Anna");
    as_staff(
        &server,
        Method::PUT,
        "/api/v1/staff/duty",
        &token,
        r#"{"sections":[]}"#,
    )
    .await
    .expect_status(200);
    let state = server.state(&visitor).await;
    assert_eq!(state["staff"].as_array().map(Vec::len), Some(1), "{state}");
    assert_eq!(state["staff"][0]["name"], "Anna");
    assert_eq!(state["staff"][0]["duty"]["sections"], json!([]));
    assert!(
        !state.to_string().contains(&token),
        "the state never shows a token"
    );

    // Her staff page open (a channel to her, §18): a call of the visitor
    // alerts Anna; their display shows it.
    let _anna_page = connect_staff_token(&server, &token).await;
    let opened = server
        .display_query(
            "include=type",
            &visitor,
            "Zimmer-12",
            r#"{"event":"Notruf","section":"A"}"#,
        )
        .await;
    opened.expect_status(201);
    let id = opened.data()["id"].as_i64().expect("id");
    let alerting = alarm_of(&server, &visitor, id, |a| a["state"] == "alerting").await;
    assert_eq!(alerting["level"], 1, "{alerting}");
    let mine = as_staff(&server, Method::GET, "/api/v1/staff/calls", &token, "").await;
    mine.expect_status(200);
    let call = call_by_id(&mine.data()["calls"], id).expect("the call is Anna's");
    assert_eq!(call["alerting"], true, "{call}");

    // "Ich komme": the display says who comes.
    let path = format!("/api/v1/staff/calls/{id}/responses");
    as_staff(
        &server,
        Method::POST,
        &path,
        &token,
        r#"{"response":"accepted"}"#,
    )
    .await
    .expect_status(200);
    let accepted = alarm_of(&server, &visitor, id, |a| a["state"] == "accepted").await;
    assert_eq!(accepted["accepted_by"]["name"], "Anna", "{accepted}");

    // Another visitor sees none of it, and their staff cannot answer it.
    let other = server.new_consumer().await;
    assert_eq!(server.state(&other).await["staff"], json!([]));
    assert!(call_by_id(&display_calls(&server, &other).await, id).is_none());
    let stranger = create_staff(&server, &other, r#"{"name":"Ben"}"#)
        .await
        .data();
    let stranger_token = stranger["token"].as_str().expect("token");
    as_staff(
        &server,
        Method::POST,
        &path,
        stranger_token,
        r#"{"response":"accepted"}"#,
    )
    .await
    .expect_status(404);

    for line in server.logs() {
        assert!(
            !line.contains(&token) && !line.contains(stranger_token),
            "a token in a log line: {line}"
        );
    }
}

#[tokio::test]
async fn at_most_twenty_staff_per_visitor() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    for n in 1..=20 {
        create_staff(&server, &visitor, &format!(r#"{{"name":"Pflege {n}"}}"#))
            .await
            .expect_status(201);
    }
    let refused = create_staff(&server, &visitor, r#"{"name":"Pflege 21"}"#).await;
    refused.expect_status(422);
    assert_eq!(
        refused.text,
        validation_body(&[(
            "staff",
            &["Es können höchstens 20 Mitarbeitende je Testzugang angelegt werden."]
        )])
    );
    assert_eq!(
        server.state(&visitor).await["staff"]
            .as_array()
            .map(Vec::len),
        Some(20)
    );
    // The limit is each visitor's own.
    let other = server.new_consumer().await;
    create_staff(&server, &other, r#"{"name":"Pflege 1"}"#)
        .await
        .expect_status(201);
}

#[tokio::test]
async fn creating_staff_needs_the_visitor_and_a_name() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let anonymous = server
        .request(
            Method::POST,
            SANDBOX_STAFF,
            Some("application/json"),
            &[],
            r#"{"name":"Anna"}"#,
        )
        .await;
    anonymous.expect_status(422);
    assert_eq!(
        anonymous.text,
        validation_body(&[
            ("consumer", &["consumer muss ausgefüllt werden."]),
            ("hash", &["hash muss ausgefüllt werden."]),
        ])
    );
    let wrong_proof = server
        .request(
            Method::POST,
            &format!(
                "{SANDBOX_STAFF}?consumer={}&hash={}",
                visitor.id,
                "0".repeat(64)
            ),
            Some("application/json"),
            &[],
            r#"{"name":"Anna"}"#,
        )
        .await;
    wrong_proof.expect_status(400);
    assert_eq!(wrong_proof.text, invalid_hash_body());
    let by_query = server
        .request(
            Method::POST,
            &format!(
                "{SANDBOX_STAFF}?consumer={}&hash={}",
                visitor.id,
                visitor.proof()
            ),
            Some("application/json"),
            &[],
            r#"{"name":"Anna"}"#,
        )
        .await;
    by_query.expect_status(201);

    let refused = create_staff(&server, &visitor, r#"{"name":" ","groups":"Leitung"}"#).await;
    refused.expect_status(422);
    assert_eq!(
        refused.text,
        validation_body(&[
            ("name", &["name muss ausgefüllt werden."]),
            ("groups", &["groups muss ein Array sein."]),
        ])
    );
    create_staff(&server, &visitor, "not json")
        .await
        .expect_status(400);
    assert_eq!(
        server.state(&visitor).await["staff"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[tokio::test]
async fn production_has_no_sandbox_staff() {
    let server = Server::production(Seed::new());
    let response = server
        .request(
            Method::POST,
            SANDBOX_STAFF,
            Some("application/json"),
            &[],
            r#"{"name":"Anna"}"#,
        )
        .await;
    response.expect_status(404);
}
