//! Who may answer (DECISIONS §20): a response counts only from a person
//! alerted for the call or on duty for its section (or the whole house);
//! anyone else gets 403 `not_responsible` and nothing changes: a lost or
//! misused phone cannot stop the escalation of every call by looping over
//! the call ids. The same for an alarm server's answer naming such a person.
//! Both stores; the sandbox test also under cargo lambda watch.

use crate::alarms::alarm_server::{ROOM_1, answer, central, production, with_device};
use crate::alarms_support::*;
use blackbox_tests::*;
use reqwest::Method;

/// The 403 of §20, exactly (DECISIONS §3's catalogue).
fn assert_not_responsible(response: &Response) {
    response.expect_status(403);
    assert_eq!(
        response.json(),
        json!({"success": false, "messages": [{
            "code": "not_responsible",
            "status_code": 403,
            "errors": "Diese Person ist für diesen Ruf nicht zuständig.",
        }]})
    );
}

#[tokio::test]
async fn only_the_alerted_and_those_on_duty_for_the_section_may_answer() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let ben = staff(&server, &visitor, "Ben", &[]).await;
    let carl = staff(&server, &visitor, "Carl", &[]).await;
    let dora = staff(&server, &visitor, "Dora", &[]).await;
    sign_on(&server, &anna, &["1"]).await;
    // Dora is on duty, but for section 2; Ben and Carl are off duty.
    sign_on(&server, &dora, &["2"]).await;
    // Anna's page is open: she is reached, and the house level (Dora) is
    // a minute away.
    let _annas_page = connect_staff(&server, &anna).await;
    let id = open(&server, &visitor, "Z1", "Notruf", Some("1")).await;
    let before = displayed_in_state(&server, &visitor, id, "alerting").await;

    // Off duty and never alerted, on duty elsewhere: every response 403,
    // in any order, and the call's alarm exactly as it was.
    for who in [&ben, &dora] {
        for response in ["accepted", "declined", "read"] {
            let refused = respond(&server, who, id, response).await;
            assert_not_responsible(&refused);
        }
    }
    let after = displayed(&server, &visitor, id).await.expect("still open");
    assert_eq!(after["version"], before["version"], "{after}");
    assert_eq!(after["alarm"], before["alarm"], "{after}");
    // Also refused for a call id that is not this person's concern at all:
    // an unknown id stays the 404 it was.
    respond(&server, &ben, id + 1000, "accepted")
        .await
        .expect_status(404);

    // Carl signs on for section 1: now he may answer (read, then decline).
    sign_on(&server, &carl, &["1"]).await;
    respond(&server, &carl, id, "read").await.expect_status(200);
    // Anna, alerted, accepts: 200, "Ich komme".
    let accepted = respond(&server, &anna, id, "accepted").await;
    accepted.expect_status(200);
    assert_eq!(accepted.data()["alarm"]["state"], "accepted");
    // After the accept Ben is still refused, without learning who comes.
    assert_not_responsible(&respond(&server, &ben, id, "accepted").await);
    // Ben on duty for the whole house may: his late accept is the 409
    // naming Anna.
    sign_on(&server, &ben, &[]).await;
    let late = respond(&server, &ben, id, "accepted").await;
    late.expect_status(409);
    assert_eq!(late.json()["messages"][0]["code"], "already_accepted");
}

#[tokio::test]
async fn an_alarm_servers_answer_for_someone_not_responsible_is_refused_the_same_way() {
    let server = production();
    let anna = with_device(&server, "Anna", "DECT-101", &[]);
    let ben = with_device(&server, "Ben", "DECT-102", &[]);
    sign_on(&server, &anna, &["1"]).await;
    let data = r#"{"event":"Notruf","section":"1"}"#;
    let opened = server.display(&central(), ROOM_1, data).await;
    opened.expect_status(201);
    let id = opened.data()["id"].as_i64().expect("id");

    // Ben's handset (off duty, never alerted), by device and by id: 403.
    for named in ["DECT-102", ben.id.as_str()] {
        let refused = answer(&server, &central(), ROOM_1, id, "accepted", named).await;
        assert_not_responsible(&refused);
    }
    // Nothing changed: Anna's handset still accepts first.
    let accepted = answer(&server, &central(), ROOM_1, id, "accepted", "DECT-101").await;
    accepted.expect_status(200);
    assert_eq!(
        accepted.data()["alarm"]["accepted_by"],
        json!({"id": anna.id, "name": "Anna"})
    );
}

#[tokio::test]
async fn call_ids_are_canonical_and_sections_trimmed_and_free_of_hidden_characters() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    // " 1 " is section 1, for a duty as for a call.
    let on = sign_on(&server, &anna, &[" 1 ", "1"]).await;
    assert_eq!(on["duty"]["sections"], json!(["1"]), "{on}");
    let _annas_page = connect_staff(&server, &anna).await;
    let id = open(&server, &visitor, "Z1", "Notruf", Some(" 1")).await;
    let shown = displayed_in_state(&server, &visitor, id, "alerting").await;
    assert_eq!(shown["section"], "1", "{shown}");
    assert_eq!(shown["alarm"]["recipients"][0]["id"], anna.id.as_str());

    // `+1` and `01` name no call: 404, and nothing is accepted.
    for path in [format!("+{id}"), format!("0{id}"), format!("{id}.0")] {
        let response = as_staff(
            &server,
            Method::POST,
            &format!("/api/v1/staff/calls/{path}/responses"),
            &anna.token,
            Some(r#"{"response":"accepted"}"#),
        )
        .await;
        response.expect_status(404);
    }
    let still = displayed(&server, &visitor, id).await.expect("open");
    assert_eq!(still["alarm"]["state"], "alerting");

    // A right-to-left override or a zero-width space in a section or a
    // name: 422, as a control character is.
    let hidden = as_staff(
        &server,
        Method::PUT,
        STAFF_DUTY,
        &anna.token,
        Some(r#"{"sections":["1\u200b"]}"#),
    )
    .await;
    hidden.expect_status(422);
    assert_eq!(
        hidden.text,
        validation_body(&[(
            "sections.0",
            &["sections.0 darf keine Steuerzeichen enthalten."]
        )])
    );
    let call = server
        .display(&visitor, "Z2", r#"{"event":"Notruf","section":"\u202e1"}"#)
        .await;
    call.expect_status(422);
    let path = format!(
        "{SANDBOX_STAFF}?consumer={}&hash={}",
        visitor.id,
        visitor.proof()
    );
    let named = server
        .post(
            &path,
            json!({"name": "\u{202e}annA", "groups": []}).to_string(),
        )
        .await;
    named.expect_status(422);
}
