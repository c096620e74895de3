//! Staff, duty and responses over HTTP (DECISIONS §14): who a staff token
//! is, signing on and off, the calls alerting a person, accept / decline /
//! read with their 404s and 409s, every 401, the fall-through to the house,
//! `unattended` on the displays, a duty that ends by itself, and no token in
//! any log line (two accepts racing: tests/tests/alarms_races.rs); and the
//! same responses from alarm servers (alarms/alarm_server.rs), who may
//! answer at all (alarms/who_may_answer.rs), and an accept that is no
//! arrival (alarms/accept_timeout.rs, DECISIONS §19). Runs on SQLite and, with
//! `BLACKBOX_STORE=dynamodb`, on moto; the tests that need no timer and no
//! server of their own also through the Lambda functions
//! (scripts/test-lambda-watch). The seeded policies apply here (Notruf:
//! section at once, the house after 60 s); tests/tests/alarms_timing.rs
//! shortens them.

mod alarms_support;

mod alarms {
    pub(crate) mod accept_timeout;
    pub(crate) mod alarm_server;
    pub(crate) mod who_may_answer;
}

use std::time::{Duration, Instant};

use alarms_support::*;
use blackbox_tests::*;
use reqwest::Method;

/// Polls `member`'s list until call `id` is in it with `alerting`; the call.
async fn listed(server: &Server, member: &Member, id: i64, alerting: bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let calls = staff_calls(server, member).await;
        if let Some(call) = calls
            .iter()
            .find(|c| c["id"] == id && c["alerting"] == alerting)
        {
            return call.clone();
        }
        assert!(
            Instant::now() < deadline,
            "call {id} never listed for {} with alerting {alerting}: {calls:?}",
            member.name
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn ids(calls: &[Value]) -> Vec<(i64, bool)> {
    calls
        .iter()
        .map(|c| (c["id"].as_i64().expect("id"), c["alerting"] == true))
        .collect()
}

#[tokio::test]
async fn a_staff_member_signs_on_for_sections_or_the_house_and_off() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &["Leitung"]).await;

    let me = as_staff(&server, Method::GET, STAFF_ME, &anna.token, None).await;
    me.expect_status(200);
    assert_eq!(
        me.data(),
        json!({"id": anna.id, "name": "Anna", "groups": ["Leitung"], "duty": null, "devices": [],
            "silent_colleagues": []})
    );

    let on = sign_on(&server, &anna, &["1", "2", "1"]).await;
    assert_eq!(
        on["duty"]["sections"],
        json!(["1", "2"]),
        "duplicates dropped"
    );
    let since = wire_time(on["duty"]["since"].as_str().expect("since"));
    let until = wire_time(on["duty"]["until"].as_str().expect("until"));
    assert_eq!((until - since).num_hours(), 12, "DUTY_HOURS' default");
    assert_now_in(
        on["duty"]["since"].as_str().expect("since"),
        "Europe/Berlin",
    );
    let me = as_staff(&server, Method::GET, STAFF_ME, &anna.token, None).await;
    assert_eq!(me.data()["duty"], on["duty"]);

    // Absent sections: the whole house, replacing the duty before.
    let house = as_staff(&server, Method::PUT, STAFF_DUTY, &anna.token, Some("{}")).await;
    house.expect_status(200);
    assert_eq!(house.data()["duty"]["sections"], json!([]));

    let off = as_staff(&server, Method::DELETE, STAFF_DUTY, &anna.token, None).await;
    off.expect_status(200);
    assert_eq!(off.data()["duty"], Value::Null);
    let me = as_staff(&server, Method::GET, STAFF_ME, &anna.token, None).await;
    assert_eq!(me.data()["duty"], Value::Null);
    // Signing off again is no error.
    as_staff(&server, Method::DELETE, STAFF_DUTY, &anna.token, None)
        .await
        .expect_status(200);
}

#[tokio::test]
async fn the_calls_alerting_a_person_come_first_then_the_others_of_their_sections() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let (anna, ben) = anna_and_ben_on_duty(&server, &visitor).await;
    // Their pages open: a channel each (§18).
    let _anna_page = connect_staff(&server, &anna).await;
    let _ben_page = connect_staff(&server, &ben).await;

    let mine = open(&server, &visitor, "Z1", "Notruf", Some("1")).await;
    let bens = open(&server, &visitor, "Z2", "Notruf", Some("2")).await;
    let nobodys_section = open(&server, &visitor, "Z3", "Normalruf", None).await;
    let declined = open(&server, &visitor, "Z4", "Normalruf", Some("1")).await;
    listed(&server, &anna, declined, true).await;
    respond(&server, &anna, declined, "declined")
        .await
        .expect_status(200);
    listed(&server, &anna, declined, false).await;
    listed(&server, &anna, nobodys_section, true).await;

    // Alerting Anna: the Notruf, then the Normalruf without section (in
    // every section: everyone on duty is alerted), most urgent first. Then
    // the Normalruf of her section she declined. Ben's section's call is
    // not hers.
    let calls = staff_calls(&server, &anna).await;
    assert_eq!(
        ids(&calls),
        [(mine, true), (nobodys_section, true), (declined, false)]
    );
    assert_eq!(calls[0]["alarm"]["state"], "alerting");
    assert_eq!(calls[0]["alarm"]["level"], 1);
    assert_eq!(calls[0]["type"]["name"], "Notruf");
    listed(&server, &ben, bens, true).await;
    assert!(
        !ids(&staff_calls(&server, &ben).await).contains(&(mine, false)),
        "another section's call is not in Ben's list"
    );

    // Off duty: only what still alerts them.
    as_staff(&server, Method::DELETE, STAFF_DUTY, &anna.token, None)
        .await
        .expect_status(200);
    let deadline = Instant::now() + WAIT;
    while !staff_calls(&server, &anna).await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "off duty, Anna's alerts were never cancelled"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn accept_decline_and_read_answer_the_call_and_a_second_accept_is_409_naming_who() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let ben = staff(&server, &visitor, "Ben", &[]).await;
    sign_on(&server, &anna, &[]).await;
    sign_on(&server, &ben, &[]).await;
    let id = open(&server, &visitor, "Z1", "Notruf", None).await;

    let read = respond(&server, &ben, id, "read").await;
    read.expect_status(200);
    assert_eq!(read.data()["id"], id);

    let accepted = respond(&server, &anna, id, "accepted").await;
    accepted.expect_status(200);
    let call = accepted.data();
    assert_eq!(call["alarm"]["state"], "accepted");
    assert_eq!(
        call["alarm"]["accepted_by"],
        json!({"id": anna.id, "name": "Anna"})
    );
    assert_now_in(
        call["alarm"]["accepted_at"].as_str().expect("accepted_at"),
        "Europe/Berlin",
    );
    assert_eq!(call["alarm"]["next_at"], Value::Null);
    assert_eq!(call["type"]["name"], "Notruf");

    // The same response again: 200, nothing new.
    let again = respond(&server, &anna, id, "accepted").await;
    again.expect_status(200);
    assert_eq!(again.data()["version"], call["version"]);

    let second = respond(&server, &ben, id, "accepted").await;
    second.expect_status(409);
    assert_eq!(
        second.json(),
        json!({
            "success": false,
            "messages": [{
                "code": "already_accepted",
                "status_code": 409,
                "errors": "Der Ruf wurde bereits von Anna angenommen."
            }],
            "accepted_by": {"id": anna.id, "name": "Anna"}
        })
    );
    // Declining what somebody accepted takes nothing back.
    let declined = respond(&server, &ben, id, "declined").await;
    declined.expect_status(200);
    assert_eq!(declined.data()["alarm"], call["alarm"]);

    close(&server, &visitor, "Z1").await;
    for (member, response) in [(&anna, "accepted"), (&ben, "read")] {
        let closed = respond(&server, member, id, response).await;
        closed.expect_status(409);
        assert_eq!(
            closed.text,
            error_body("call_closed", 409, "Der Ruf ist bereits beendet.")
        );
    }
}

#[tokio::test]
async fn refusals_are_401_404_422_and_405_as_documented() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let stranger = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let id = open(&server, &visitor, "Z1", "Notruf", None).await;
    let presence = open(&server, &visitor, "Z2", "Anwesenheit", None).await;
    let strangers = open(&server, &stranger, "Z1", "Notruf", None).await;
    let unauthorized = error_body("unauthorized", 401, "Anmeldung erforderlich.");
    let not_found = error_body(
        "not_found",
        404,
        "Die angeforderte Ressource wurde nicht gefunden.",
    );
    let responses = format!("/api/v1/staff/calls/{id}/responses");

    // 401: no token, an unknown one, a display's proof is no staff token.
    for (method, path, body) in [
        (Method::GET, STAFF_ME, None),
        (Method::PUT, STAFF_DUTY, Some(r#"{"sections":[]}"#)),
        (Method::DELETE, STAFF_DUTY, None),
        (Method::GET, STAFF_CALLS, None),
        (
            Method::POST,
            responses.as_str(),
            Some(r#"{"response":"read"}"#),
        ),
    ] {
        let content_type = body.map(|_| "application/json");
        let none = server
            .request(method.clone(), path, content_type, &[], body.unwrap_or(""))
            .await;
        assert_eq!(
            (none.status, none.text),
            (401, unauthorized.clone()),
            "{method} {path}"
        );
        let unknown = as_staff(&server, method.clone(), path, &"0".repeat(64), body).await;
        assert_eq!(unknown.status, 401, "{method} {path}");
        let proof = as_staff(&server, method.clone(), path, &visitor.proof(), body).await;
        assert_eq!(proof.status, 401, "{method} {path}");
    }

    // 404: no such call, no number, another visitor's call, a presence.
    for call in [
        "999999".to_string(),
        "abc".to_string(),
        "0".to_string(),
        "9007199254740992".to_string(),
        strangers.to_string(),
        presence.to_string(),
    ] {
        let path = format!("/api/v1/staff/calls/{call}/responses");
        let response = as_staff(
            &server,
            Method::POST,
            &path,
            &anna.token,
            Some(r#"{"response":"accepted"}"#),
        )
        .await;
        assert_eq!(
            (response.status, response.text),
            (404, not_found.clone()),
            "{path}"
        );
    }

    // 422: a response that is none of the three, missing, not a string;
    // sections that are no list of codes.
    for (body, message) in [
        (
            r#"{"response":"yes"}"#,
            "Der gewählte Wert für response ist ungültig.",
        ),
        (r#"{}"#, "response muss ausgefüllt werden."),
        (r#"{"response":1}"#, "response muss eine Zeichenkette sein."),
    ] {
        let refused = as_staff(&server, Method::POST, &responses, &anna.token, Some(body)).await;
        refused.expect_status(422);
        assert_eq!(
            refused.text,
            validation_body(&[("response", &[message])]),
            "{body}"
        );
    }
    let refused = as_staff(
        &server,
        Method::PUT,
        STAFF_DUTY,
        &anna.token,
        Some(r#"{"sections":["1",2," "]}"#),
    )
    .await;
    refused.expect_status(422);
    assert_eq!(
        refused.text,
        validation_body(&[
            ("sections.1", &["sections.1 muss eine Zeichenkette sein."]),
            ("sections.2", &["sections.2 muss ausgefüllt werden."]),
        ])
    );
    let refused = as_staff(
        &server,
        Method::PUT,
        STAFF_DUTY,
        &anna.token,
        Some(r#"{"sections":"1"}"#),
    )
    .await;
    assert_eq!(
        refused.text,
        validation_body(&[("sections", &["sections muss ein Array sein."])])
    );
    // 400 and 415: the body's first checks.
    let malformed = as_staff(&server, Method::PUT, STAFF_DUTY, &anna.token, Some("[1]")).await;
    malformed.expect_status(400);
    let untyped = server
        .request(
            Method::POST,
            &responses,
            Some("text/plain"),
            &[("Authorization", &format!("Bearer {}", anna.token))],
            r#"{"response":"read"}"#,
        )
        .await;
    untyped.expect_status(415);

    // 405 with Allow.
    let wrong = as_staff(&server, Method::GET, STAFF_DUTY, &anna.token, None).await;
    wrong.expect_status(405);
    assert_eq!(wrong.header("allow"), Some("PUT, DELETE"));
    let wrong = as_staff(&server, Method::GET, &responses, &anna.token, None).await;
    wrong.expect_status(405);
    assert_eq!(wrong.header("allow"), Some("POST"));
}

#[tokio::test]
async fn nobody_on_duty_in_the_section_falls_through_to_the_house_at_once() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let ben = staff(&server, &visitor, "Ben", &[]).await;
    sign_on(&server, &ben, &["2"]).await;
    let _ben_page = connect_staff(&server, &ben).await;
    // Notruf: section at once, the house after 60 s; nobody is on duty
    // for section 1, so the house level starts at once.
    let id = open(&server, &visitor, "Z1", "Notruf", Some("1")).await;
    let call = listed(&server, &ben, id, true).await;
    assert_eq!(call["alarm"]["state"], "alerting");
    assert_eq!(call["alarm"]["level"], 2);
    assert_eq!(call["alarm"]["levels"], 3);
}

#[tokio::test]
async fn nobody_at_all_is_unattended_on_the_displays_and_a_sign_on_ends_it() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let id = open(&server, &visitor, "Z1", "Notruf", Some("1")).await;
    let call = displayed_in_state(&server, &visitor, id, "unattended").await;
    assert_eq!(call["alarm"]["level"], 3, "every level started");
    assert_eq!(call["alarm"]["accepted_by"], Value::Null);
    assert!(call["version"].as_i64().expect("version") > 1);

    // Somebody signs on for the house: they are alerted at once.
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let _anna_page = connect_staff(&server, &anna).await;
    sign_on(&server, &anna, &[]).await;
    let listed = listed(&server, &anna, id, true).await;
    assert_eq!(listed["alarm"]["state"], "alerting");
    displayed_in_state(&server, &visitor, id, "alerting").await;
}

#[tokio::test]
async fn a_duty_ends_by_itself_after_duty_hours() {
    // DUTY_HOURS may be fractional: 0.001 h is 3.6 s.
    let server = Server::start(Options::sandbox().env("DUTY_HOURS", "0.001"));
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let on = sign_on(&server, &anna, &[]).await;
    let since = wire_time(on["duty"]["since"].as_str().expect("since"));
    let until = wire_time(on["duty"]["until"].as_str().expect("until"));
    assert!((3..=4).contains(&(until - since).num_seconds()), "{on}");

    tokio::time::sleep(Duration::from_millis(4200)).await;
    let me = as_staff(&server, Method::GET, STAFF_ME, &anna.token, None).await;
    assert_eq!(me.data()["duty"], Value::Null, "the duty ended by itself");
    // A call now finds nobody on duty.
    let id = open(&server, &visitor, "Z1", "Notruf", None).await;
    displayed_in_state(&server, &visitor, id, "unattended").await;
    assert!(staff_calls(&server, &anna).await.is_empty());
}

#[tokio::test]
async fn staff_tokens_are_in_no_log_line_and_a_revoked_one_is_401() {
    let mut server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    sign_on(&server, &anna, &["1"]).await;
    let id = open(&server, &visitor, "Z1", "Notruf", Some("1")).await;
    let mut socket = connect_staff(&server, &anna).await;
    listed_or_alerted(&server, &anna, id).await;
    respond(&server, &anna, id, "accepted")
        .await
        .expect_status(200);
    message(&mut socket, "call.accepted", id).await;
    drop(socket);

    server.admin(&["staff", "revoke", &anna.id]).success();
    for (method, path) in [(Method::GET, STAFF_ME), (Method::GET, STAFF_CALLS)] {
        as_staff(&server, method, path, &anna.token, None)
            .await
            .expect_status(401);
    }
    let url = format!(
        "{}{LIVE}?token={}",
        server.base_url().replacen("http://", "ws://", 1),
        anna.token
    );
    match tokio_tungstenite::connect_async(url).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 401);
        }
        other => panic!("a revoked staff token must not open the live socket: {other:?}"),
    }

    server.terminate();
    let output = server.all_output();
    assert!(
        output.contains("staff response"),
        "the server logged the work"
    );
    assert!(
        !output.contains(&anna.token),
        "the staff token is in a log line: {}",
        output
            .lines()
            .filter(|line| line.contains(&anna.token))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Waits until call `id` alerts `member` (their list says so).
async fn listed_or_alerted(server: &Server, member: &Member, id: i64) {
    listed(server, member, id, true).await;
}
