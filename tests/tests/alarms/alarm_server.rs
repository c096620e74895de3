//! Answers from an alarm server (DECISIONS §16): `POST /api/v1/response`,
//! signed like a display request, `target` the call's address, the person
//! named by their staff id or their device. The same rules and answers as
//! the staff page's responses (§14): an accept by a handset stops the
//! escalation and cancels the others' alerts, a repeat changes nothing, a
//! second accept is the 409 naming who came first; and the refusals of §3 in
//! their order (structure 422, signature 400, state 422).
//!
//! The tests with staff that have a device need the admin command and so a
//! production server of their own (skipped under cargo lambda watch,
//! tests/lambda-watch-skips.txt); the sandbox tests run there too.

use std::time::{Duration, Instant};

use crate::alarms_support::*;
use blackbox_tests::*;
use reqwest::Method;

const RESPONSE: &str = "/api/v1/response";

const CENTRAL: &str = "11111111-2222-4333-8444-555555555555";
pub(crate) const ROOM_1: &str = "00:11:22:33:44:55";
const ROOM_2: &str = "00:11:22:33:44:66";

pub(crate) fn central() -> Consumer {
    Consumer::new(CENTRAL, "central-secret")
}

/// A production server with the central system's consumer and two rooms.
pub(crate) fn production() -> Server {
    Server::production(
        Seed::new()
            .consumer(CENTRAL, &["central-secret"], false)
            .element(ROOM_1, "Z1", "Zimmer 1")
            .element(ROOM_2, "Z2", "Zimmer 2"),
    )
}

/// `nurse-call-admin staff create --name NAME --device DEVICE [--group G]…`
/// on the server's store: a member of the installation with a handset.
pub(crate) fn with_device(server: &Server, name: &str, device: &str, groups: &[&str]) -> Member {
    let mut args = vec!["staff", "create", "--name", name, "--device", device];
    for group in groups {
        args.extend(["--group", *group]);
    }
    args.push("--json");
    let issued = server.admin(&args).success().json();
    Member {
        id: issued["id"].as_str().expect("id").to_string(),
        name: name.to_string(),
        token: issued["token"].as_str().expect("token").to_string(),
    }
}

/// An alarm server's signed answer: `staff` answers call `call` on `target`.
pub(crate) async fn answer(
    server: &Server,
    consumer: &Consumer,
    target: &str,
    call: i64,
    response: &str,
    staff: &str,
) -> Response {
    let data = json!({"call": call, "response": response, "staff": staff}).to_string();
    server.post(RESPONSE, consumer.body(target, &data)).await
}

/// The 422 of unknown values: `Der gewählte Wert für <key> ist ungültig.`
/// for each of `keys`, in that order.
fn unknown(keys: &[&str]) -> String {
    let texts: Vec<String> = keys
        .iter()
        .map(|key| format!("Der gewählte Wert für {key} ist ungültig."))
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let errors: Vec<(&str, &[&str])> = keys
        .iter()
        .zip(&texts)
        .map(|(key, text)| (*key, std::slice::from_ref(text)))
        .collect();
    validation_body(&errors)
}

#[tokio::test]
async fn an_accept_from_a_handset_stops_the_escalation_and_cancels_the_others() {
    let server = production();
    set_escalation(&server, "Notruf", SHORT_POLICY);
    let anna = with_device(&server, "Anna", "DECT-101", &[]);
    let ben = with_device(&server, "Ben", "DECT-102", &[]);
    let dora = with_device(&server, "Dora", "DECT-104", &[]);
    sign_on(&server, &anna, &["1"]).await;
    sign_on(&server, &ben, &["1"]).await;
    // Dora is on duty for another section: the house level (after 2 s)
    // would alert her.
    sign_on(&server, &dora, &["2"]).await;
    let mut anna_page = connect_staff(&server, &anna).await;
    let mut ben_page = connect_staff(&server, &ben).await;
    let mut dora_page = connect_staff(&server, &dora).await;

    let opened = Instant::now();
    let data = r#"{"event":"Notruf","section":"1"}"#;
    let open = server.display(&central(), ROOM_1, data).await;
    open.expect_status(201);
    let id = open.data()["id"].as_i64().expect("id");
    message(&mut anna_page, "call.alert", id).await;
    message(&mut ben_page, "call.alert", id).await;

    // Anna's handset says "Ich komme".
    let accepted = answer(&server, &central(), ROOM_1, id, "accepted", "DECT-101").await;
    accepted.expect_status(200);
    let call = accepted.data();
    assert_eq!(call["id"], id);
    assert_eq!(call["address"], ROOM_1);
    assert_eq!(call["type"]["name"], "Notruf");
    assert_eq!(call["alarm"]["state"], "accepted");
    assert_eq!(call["alarm"]["level"], 1);
    assert_eq!(call["alarm"]["next_at"], Value::Null, "no level to come");
    assert_eq!(
        call["alarm"]["accepted_by"],
        json!({"id": anna.id, "name": "Anna"})
    );

    // Ben, alerted too, gets a cancel naming Anna.
    let cancel = message(&mut ben_page, "call.cancelled", id).await;
    assert_eq!(cancel["reason"], "accepted");
    assert_eq!(
        cancel["accepted_by"],
        json!({"id": anna.id, "name": "Anna"})
    );

    // Level 2 (due 2 s after the open) never starts: Dora is not alerted.
    let past_level_2 = Duration::from_millis(3500).saturating_sub(opened.elapsed());
    assert_eq!(
        message_within(&mut dora_page, "call.alert", id, past_level_2).await,
        None,
        "the house level started after the accept"
    );
    let listed = staff_calls(&server, &anna).await;
    let shown = listed
        .iter()
        .find(|c| c["id"] == id)
        .expect("the call is in Anna's list");
    assert_eq!(shown["alarm"], call["alarm"], "nothing changed since");
    assert!(
        !staff_calls(&server, &dora)
            .await
            .iter()
            .any(|c| c["id"] == id),
        "Dora's section is another"
    );
}

#[tokio::test]
async fn a_revoked_member_s_device_and_id_are_unknown_and_a_shared_device_is_ambiguous() {
    let server = production();
    let anna = with_device(&server, "Anna", "DECT-201", &[]);
    let ben = with_device(&server, "Ben", "DECT-201", &[]);
    let cem = with_device(&server, "Cem", "DECT-203", &[]);
    // Anna is on duty: she may answer (§20).
    sign_on(&server, &anna, &[]).await;
    let open = server
        .display(&central(), ROOM_1, r#"{"event":"Notruf"}"#)
        .await;
    open.expect_status(201);
    let id = open.data()["id"].as_i64().expect("id");

    server.admin(&["staff", "revoke", &cem.id]).success();
    for revoked in ["DECT-203", cem.id.as_str()] {
        let refused = answer(&server, &central(), ROOM_1, id, "accepted", revoked).await;
        refused.expect_status(422);
        assert_eq!(refused.text, unknown(&["data.staff"]), "{revoked}");
    }

    // Two handsets of one number: neither person is guessed.
    let shared = answer(&server, &central(), ROOM_1, id, "accepted", "DECT-201").await;
    shared.expect_status(422);
    assert_eq!(
        shared.text,
        validation_body(&[(
            "data.staff",
            &["Der gewählte Wert für data.staff ist nicht eindeutig."]
        )])
    );
    // Once Ben is revoked, the number is Anna's alone.
    server.admin(&["staff", "revoke", &ben.id]).success();
    let accepted = answer(&server, &central(), ROOM_1, id, "accepted", "DECT-201").await;
    accepted.expect_status(200);
    assert_eq!(
        accepted.data()["alarm"]["accepted_by"],
        json!({"id": anna.id, "name": "Anna"})
    );
}

#[tokio::test]
async fn an_alarm_server_answers_for_a_member_named_by_id_as_the_staff_page_would() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let stranger = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let ben = staff(&server, &visitor, "Ben", &[]).await;
    sign_on(&server, &anna, &[]).await;
    sign_on(&server, &ben, &[]).await;
    let id = open(&server, &visitor, "Z1", "Notruf", None).await;

    let read = answer(&server, &visitor, "Z1", id, "read", &ben.id).await;
    read.expect_status(200);
    assert_eq!(read.data()["id"], id);
    assert_eq!(read.data()["alarm"]["state"], "alerting");

    let accepted = answer(&server, &visitor, "Z1", id, "accepted", &anna.id).await;
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
    let shown = displayed(&server, &visitor, id).await.expect("still open");
    assert_eq!(
        shown["alarm"], call["alarm"],
        "the displays show the accept"
    );

    // The same response again (the id in capitals, as UUIDs are written
    // too): 200, nothing new.
    for again in [anna.id.clone(), anna.id.to_uppercase()] {
        let repeated = answer(&server, &visitor, "Z1", id, "accepted", &again).await;
        repeated.expect_status(200);
        assert_eq!(repeated.data()["version"], call["version"], "{again}");
        assert_eq!(repeated.data()["alarm"], call["alarm"], "{again}");
    }

    // Ben's handset accepts too late: the 409 of the staff page, naming Anna.
    let second = answer(&server, &visitor, "Z1", id, "accepted", &ben.id).await;
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
    assert_eq!(
        respond(&server, &ben, id, "accepted").await.text,
        second.text,
        "the staff page gets the same answer"
    );
    let declined = answer(&server, &visitor, "Z1", id, "declined", &ben.id).await;
    declined.expect_status(200);
    assert_eq!(declined.data()["alarm"], call["alarm"]);

    // Another visitor's consumer works on its own scope: neither Anna nor
    // this call is known there.
    let foreign = answer(&server, &stranger, "Z1", id, "accepted", &anna.id).await;
    foreign.expect_status(422);
    assert_eq!(foreign.text, unknown(&["data.staff", "data.call"]));

    close(&server, &visitor, "Z1").await;
    for (member, response) in [(&anna, "accepted"), (&ben, "read")] {
        let closed = answer(&server, &visitor, "Z1", id, response, &member.id).await;
        assert_eq!(
            (closed.status, closed.text),
            (
                409,
                error_body("call_closed", 409, "Der Ruf ist bereits beendet.")
            ),
            "{}",
            member.name
        );
    }
}

#[tokio::test]
async fn an_alarm_server_s_mistakes_are_refused_in_the_documented_order() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let stranger = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    sign_on(&server, &anna, &[]).await;
    // Her page open: a channel, so that her alarm waits for her (§18).
    let _anna_page = connect_staff(&server, &anna).await;
    let id = open(&server, &visitor, "Z1", "Notruf", None).await;
    let presence = open(&server, &visitor, "Z2", "Anwesenheit", None).await;
    let strangers = open(&server, &stranger, "Z1", "Notruf", None).await;

    // Structure: every field error at once, before the signature (the
    // hash here is wrong too).
    let body = json!({"consumer": visitor.id, "hash": "00",
        "data": {"call": "17", "response": "yes", "staff": 5}})
    .to_string();
    let refused = server.post(RESPONSE, body).await;
    refused.expect_status(422);
    assert_eq!(
        refused.text,
        validation_body(&[
            ("address", &["address muss ausgefüllt werden."]),
            ("data.call", &["data.call muss eine ganze Zahl sein."]),
            (
                "data.response",
                &["Der gewählte Wert für data.response ist ungültig."]
            ),
            ("data.staff", &["data.staff muss eine Zeichenkette sein."]),
        ])
    );
    let empty = envelope(Some("Z1"), &visitor.id, "00", "{}");
    let refused = server.post(RESPONSE, empty).await;
    assert_eq!(
        refused.text,
        validation_body(&[
            ("data.call", &["data.call muss ausgefüllt werden."]),
            ("data.response", &["data.response muss ausgefüllt werden."]),
            ("data.staff", &["data.staff muss ausgefüllt werden."]),
        ])
    );

    // The signature before the state: a wrong hash over an unknown staff
    // member is the 400 of DECISIONS §2; so is an unknown consumer.
    let data = json!({"call": id, "response": "accepted", "staff": "DECT-9"}).to_string();
    let wrong = envelope(Some("Z1"), &visitor.id, &"0".repeat(64), &data);
    let refused = server.post(RESPONSE, wrong).await;
    refused.expect_status(400);
    assert_eq!(refused.json()["messages"][0]["code"], "invalid_hash");
    let nobody = Consumer::new("99999999-2222-4333-8444-555555555555", "guess");
    let refused = server.post(RESPONSE, nobody.body("Z1", &data)).await;
    assert_eq!((refused.status, refused.text), (400, invalid_hash_body()));

    // State: nobody of that device or id; no such call, one on another
    // address, a presence (it alarms nobody), another visitor's call.
    for staff in ["DECT-9", "0b5e3f0a-8c1d-4e2f-9a3b-5c6d7e8f9a0b"] {
        let refused = answer(&server, &visitor, "Z1", id, "accepted", staff).await;
        assert_eq!(
            (refused.status, refused.text),
            (422, unknown(&["data.staff"])),
            "{staff}"
        );
    }
    for (target, call) in [
        ("Z1", 999_999),
        ("Z2", id),
        ("Z2", presence),
        ("Z1", strangers),
    ] {
        let refused = answer(&server, &visitor, target, call, "accepted", &anna.id).await;
        assert_eq!(
            (refused.status, refused.text),
            (422, unknown(&["data.call"])),
            "call {call} on {target}"
        );
    }
    let refused = answer(&server, &visitor, "Z1", 999_999, "read", "DECT-9").await;
    assert_eq!(refused.text, unknown(&["data.staff", "data.call"]));
    // None of it answered the call.
    let shown = displayed(&server, &visitor, id).await.expect("open");
    assert_eq!(shown["alarm"]["state"], "alerting");
    assert_eq!(shown["alarm"]["accepted_by"], Value::Null);

    // The body's first checks and the method.
    let signed = visitor.body("Z1", &data);
    let untyped = server
        .request(Method::POST, RESPONSE, Some("text/plain"), &[], signed)
        .await;
    untyped.expect_status(415);
    let malformed = server.post(RESPONSE, "[1]").await;
    malformed.expect_status(400);
    assert_eq!(malformed.json()["messages"][0]["code"], "malformed_request");
    let wrong_method = server.get(RESPONSE).await;
    wrong_method.expect_status(405);
    assert_eq!(wrong_method.header("allow"), Some("POST"));
}

/// A handset's `received` (DECISIONS §16, §18) is its person's receipt of
/// the call's alert: 200 with the call, its recipient `received_at`, a
/// repeat changing nothing; for a person the call never alerted, or a call
/// on another address, the call is unknown (422 `data.call`).
#[tokio::test]
async fn a_handset_s_received_is_its_person_s_receipt() {
    let server = production();
    let anna = with_device(&server, "Anna", "DECT-101", &[]);
    let ben = with_device(&server, "Ben", "DECT-102", &[]);
    sign_on(&server, &anna, &["1"]).await;
    sign_on(&server, &ben, &["2"]).await;
    let mut anna_page = connect_staff(&server, &anna).await;
    let data = r#"{"event":"Notruf","section":"1"}"#;
    // (Ben's handset is DECT-102.)
    let open = server.display(&central(), ROOM_1, data).await;
    open.expect_status(201);
    let id = open.data()["id"].as_i64().expect("id");
    message(&mut anna_page, "call.alert", id).await;

    let received = answer(&server, &central(), ROOM_1, id, "received", "DECT-101").await;
    received.expect_status(200);
    let recipients = received.data()["alarm"]["recipients"].clone();
    assert_eq!(recipients[0]["id"], anna.id.as_str(), "{recipients}");
    let at = recipients[0]["received_at"]
        .as_str()
        .expect("received_at")
        .to_string();
    // By id as well; a repeat keeps the first time.
    let again = answer(&server, &central(), ROOM_1, id, "received", &anna.id).await;
    again.expect_status(200);
    assert_eq!(
        again.data()["alarm"]["recipients"][0]["received_at"],
        at.as_str()
    );
    // Ben (section 2) was never alerted for it; the call is not on room 2.
    for (target, device) in [(ROOM_1, "DECT-102"), (ROOM_2, "DECT-101")] {
        let refused = answer(&server, &central(), target, id, "received", device).await;
        refused.expect_status(422);
        assert_eq!(
            refused.text,
            unknown(&["data.call"]),
            "{device} on {target}"
        );
    }
}
