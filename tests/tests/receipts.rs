//! Receipts and reachability over HTTP (DECISIONS §18): every alert on a
//! staff page's live socket carries a `receipt` id; `POST
//! /api/v1/staff/receipts` takes it (200, a repeat 200 without effect),
//! refuses another person's or an unknown id (404) and a missing token
//! (401); reads show each recipient's `alerted_at`, `received_at` and
//! `response`; a recipient who confirms keeps the next level at its time,
//! recipients who do not start it `RECEIPT_SECONDS` ± 1 s after the open
//! (printed); a late receipt and a later accept still count. Runs on
//! SQLite and on moto, with `RECEIPT_SECONDS` 2 and the seeded Notruf
//! (section at once, the house after 60 s).

mod alarms_support;

use std::time::{Duration, Instant};

use alarms_support::*;
use blackbox_tests::*;
use reqwest::Method;

const RECEIPTS: &str = "/api/v1/staff/receipts";

/// A sandbox server whose alerts are not received after 2 s, a visitor,
/// Anna on duty for section 1 and Ben for section 2.
async fn setting() -> (Server, Consumer, Member, Member) {
    let server = Server::start(Options::sandbox().env("RECEIPT_SECONDS", "2"));
    let visitor = server.new_consumer().await;
    let (anna, ben) = anna_and_ben_on_duty(&server, &visitor).await;
    (server, visitor, anna, ben)
}

/// `member` posts `receipt`.
async fn post_receipt(server: &Server, member: &Member, receipt: &str) -> Response {
    let body = json!({ "receipt": receipt }).to_string();
    as_staff(server, Method::POST, RECEIPTS, &member.token, Some(&body)).await
}

/// The call's `alarm` as the display reads it.
async fn alarm_of(server: &Server, visitor: &Consumer, id: i64) -> Value {
    displayed(server, visitor, id)
        .await
        .unwrap_or_else(|| panic!("call {id} displayed"))["alarm"]
        .clone()
}

#[tokio::test]
async fn a_receipt_is_taken_once_and_refused_for_anyone_else() {
    let (server, visitor, anna, ben) = setting().await;
    let mut anna_page = connect_staff(&server, &anna).await;
    let id = open(&server, &visitor, "Z1", "Notruf", Some("1")).await;
    let alert = message(&mut anna_page, "call.alert", id).await;
    let receipt = alert["receipt"]
        .as_str()
        .expect("every alert carries a receipt");
    assert!(receipt.len() <= 64, "{receipt}");

    let taken = post_receipt(&server, &anna, receipt).await;
    taken.expect_status(200);
    let data = taken.data();
    assert_eq!(data["receipt"], receipt);
    assert_eq!(data["call"], id);
    let received_at = data["received_at"]
        .as_str()
        .expect("received_at")
        .to_string();
    assert_now_in(&received_at, "Europe/Berlin");

    // Again: 200, the first time kept.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let again = post_receipt(&server, &anna, receipt).await;
    again.expect_status(200);
    assert_eq!(again.data()["received_at"], received_at.as_str());

    // The display and the staff list tell who got it.
    let recipients = alarm_of(&server, &visitor, id).await["recipients"].clone();
    assert_eq!(recipients.as_array().map(Vec::len), Some(1), "{recipients}");
    assert_eq!(recipients[0]["id"], anna.id.as_str());
    assert_eq!(recipients[0]["name"], "Anna");
    assert_eq!(recipients[0]["level"], 1);
    assert_eq!(recipients[0]["received_at"], received_at.as_str());
    assert_eq!(recipients[0]["response"], Value::Null);

    // Ben holds Anna's id: another person's is unknown to him.
    post_receipt(&server, &ben, receipt)
        .await
        .expect_status(404);
    // Ids never sent: a later alert, another call, nonsense.
    let later = receipt.replacen(".1.", ".9.", 1);
    post_receipt(&server, &anna, &later)
        .await
        .expect_status(404);
    let other_call = receipt.replacen(&format!("{id}."), &format!("{}.", id + 1), 1);
    post_receipt(&server, &anna, &other_call)
        .await
        .expect_status(404);
    post_receipt(&server, &anna, "nonsense")
        .await
        .expect_status(404);
    // No receipt: 422; no token: 401.
    as_staff(&server, Method::POST, RECEIPTS, &anna.token, Some("{}"))
        .await
        .expect_status(422);
    let body = json!({ "receipt": receipt }).to_string();
    let anonymous = server
        .request(Method::POST, RECEIPTS, Some("application/json"), &[], body)
        .await;
    anonymous.expect_status(401);
}

#[tokio::test]
async fn a_recipient_who_confirms_keeps_the_next_level_at_its_time() {
    let (server, visitor, anna, _ben) = setting().await;
    let mut anna_page = connect_staff(&server, &anna).await;
    let id = open(&server, &visitor, "Z1", "Notruf", Some("1")).await;
    let alert = message(&mut anna_page, "call.alert", id).await;
    post_receipt(&server, &anna, alert["receipt"].as_str().expect("receipt"))
        .await
        .expect_status(200);
    // Past the receipt deadline (2 s): still level 1, the house at 60 s.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let alarm = alarm_of(&server, &visitor, id).await;
    assert_eq!(alarm["level"], 1, "{alarm}");
    assert_eq!(alarm["state"], "alerting");
}

#[tokio::test]
async fn recipients_who_do_not_confirm_start_the_next_level_at_the_deadline() {
    let (server, visitor, anna, ben) = setting().await;
    let mut anna_page = connect_staff(&server, &anna).await;
    let mut ben_page = connect_staff(&server, &ben).await;
    let opened = Instant::now();
    let id = open(&server, &visitor, "Z1", "Notruf", Some("1")).await;
    let first = message(&mut anna_page, "call.alert", id).await;

    let house = message(&mut ben_page, "call.alert", id).await;
    let at = seconds(opened);
    println!("level 2 (house) without a receipt: {at:.2} s after the open (due at 2 s)");
    assert!((1.0..=3.0).contains(&at), "{at:.2} s, expected 2 s ± 1 s");
    assert_eq!(house["level"], 2);
    let alarm = house["call"]["alarm"].clone();
    let anna_entry = &alarm["recipients"][0];
    assert_eq!(anna_entry["id"], anna.id.as_str());
    assert_eq!(anna_entry["received_at"], Value::Null);

    // A late receipt of Anna's first alert and then her accept still count.
    let late = post_receipt(&server, &anna, first["receipt"].as_str().expect("receipt")).await;
    late.expect_status(200);
    respond(&server, &anna, id, "accepted")
        .await
        .expect_status(200);
    let alarm = alarm_of(&server, &visitor, id).await;
    assert_eq!(alarm["state"], "accepted");
    let anna_entry = recipient(&alarm, &anna);
    assert!(anna_entry["received_at"].is_string(), "{anna_entry}");
    assert_eq!(anna_entry["response"], "accepted");
    assert_eq!(recipient(&alarm, &ben)["level"], 2);
}

#[tokio::test]
async fn a_person_without_any_channel_is_not_reached_at_once() {
    // Deadlines of 30 s: "at once" cannot be the deadline.
    let server = Server::start(Options::sandbox().env("RECEIPT_SECONDS", "30"));
    let visitor = server.new_consumer().await;
    // Anna has no phone subscribed, no page open and no device.
    let (anna, ben) = anna_and_ben_on_duty(&server, &visitor).await;
    let mut ben_page = connect_staff(&server, &ben).await;
    let opened = Instant::now();
    let id = open(&server, &visitor, "Z1", "Notruf", Some("1")).await;

    let house = message(&mut ben_page, "call.alert", id).await;
    let at = seconds(opened);
    println!("level 2 (house) with nobody reachable at level 1: {at:.2} s after the open");
    assert!(at < 1.0, "{at:.2} s: the next level starts at once");
    assert_eq!(house["level"], 2);
    // Anna is still alerted (a page she opens later shows it) and listed,
    // not reached.
    let alarm = alarm_of(&server, &visitor, id).await;
    let anna_entry = recipient(&alarm, &anna);
    assert_eq!(anna_entry["level"], 1);
    assert_eq!(anna_entry["received_at"], Value::Null);
    assert_eq!(recipient(&alarm, &ben)["level"], 2);

    // Once her page is open, she has a channel: a call then waits for her
    // receipt, and level 1 holds.
    let _anna_page = connect_staff(&server, &anna).await;
    let second = open(&server, &visitor, "Z2", "Notruf", Some("1")).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let alarm = alarm_of(&server, &visitor, second).await;
    assert_eq!(alarm["level"], 1, "{alarm}");
}

/// `member`'s entry in `alarm`'s `recipients`.
fn recipient(alarm: &Value, member: &Member) -> Value {
    alarm["recipients"]
        .as_array()
        .expect("recipients")
        .iter()
        .find(|r| r["id"] == member.id.as_str())
        .unwrap_or_else(|| panic!("{} listed: {alarm}", member.name))
        .clone()
}
