//! An alarm server's receipts (DECISIONS §16 `--confirms-delivery`, §18):
//! an endpoint registered without the flag promises no `received`, so its
//! 2xx to a `call.alert` is the receipt of each recipient with a device
//! named in it (shown in the staff read's `alarm.recipients[].received_at`,
//! in the audit and in the log, and it keeps the next level at its time);
//! a recipient without a device gets none. With the flag the 2xx is only a
//! delivery (the not reached start the next level at the receipt deadline),
//! and the server's later `received` is the receipt. Runs on SQLite and on
//! moto, with `RECEIPT_SECONDS` 2 and Notruf's section at once, the house
//! after 60 s.

mod webhooks_support;

use std::time::{Duration, Instant};

use blackbox_tests::*;
use webhooks_support::*;

/// Section at once, the house after 60 s; re-alerts only after an hour.
const SECTION_THEN_HOUSE: &str = r#"[{"after":0,"to":"section"},{"after":60,"to":"house"}]"#;

/// A production server whose alerts are not received after 2 s, with
/// Notruf's [`SECTION_THEN_HOUSE`], a receiver (answering 200) behind an
/// endpoint made with `extra`, and on duty for section 1 Anna with the
/// handset DECT-101 and Ben without a device: the server, the receiver,
/// Anna's id and token, Ben's id.
async fn setting(extra: &[&str]) -> (Server, Receiver, (String, String), String) {
    let server = Server::start(production_options(1).env("RECEIPT_SECONDS", "2"));
    server
        .admin(&[
            "call-types",
            "set",
            "Notruf",
            "--escalation",
            SECTION_THEN_HOUSE,
            "--notification-interval",
            "3600",
        ])
        .success();
    let receiver = Receiver::start(None);
    endpoint(&server, &receiver, extra).await;
    let anna = staff_member(&server, "Anna", "DECT-101");
    let ben = server
        .admin(&["staff", "create", "--name", "Ben", "--json"])
        .success()
        .json();
    let ben_token = ben["token"].as_str().expect("token");
    sign_on(&server, &anna.1, &["1"]).await;
    sign_on(&server, ben_token, &["1"]).await;
    let ben_id = ben["id"].as_str().expect("id").to_string();
    (server, receiver, anna, ben_id)
}

/// Call `id`'s `alarm` as Anna's staff read shows it.
async fn alarm_of(server: &Server, token: &str, id: i64) -> Value {
    let bearer = format!("Bearer {token}");
    let read = server
        .request(
            reqwest::Method::GET,
            "/api/v1/staff/calls",
            None,
            &[("Authorization", bearer.as_str())],
            Vec::new(),
        )
        .await;
    read.expect_status(200);
    read.data()["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .find(|call| call["id"] == id)
        .unwrap_or_else(|| panic!("call {id} in the staff read"))["alarm"]
        .clone()
}

/// `staff_id`'s `received_at` in `alarm`'s recipients.
fn received_at(alarm: &Value, staff_id: &str) -> Value {
    alarm["recipients"]
        .as_array()
        .expect("recipients")
        .iter()
        .find(|r| r["id"] == staff_id)
        .unwrap_or_else(|| panic!("{staff_id} among the recipients: {alarm}"))["received_at"]
        .clone()
}

/// The first `call.alert` of call `id` the receiver answered 200.
async fn delivered_alert(receiver: &Receiver, id: i64) -> Delivery {
    let alert = |all: &[Delivery]| {
        all.iter()
            .find(|d| d.kind.as_deref() == Some("call.alert") && d.call_id() == Some(id))
            .cloned()
    };
    let all = receiver
        .received_until(Duration::from_secs(10), |all| alert(all).is_some())
        .await;
    let delivered = alert(&all).expect("a call.alert");
    assert!(delivered.verified, "{delivered:?}");
    assert_eq!(delivered.status, 200);
    delivered
}

/// The alarm server's signed `received` for `staff` (a device or an id).
async fn received(server: &Server, id: i64, staff: &str) -> Response {
    let data = json!({"call": id, "response": "received", "staff": staff}).to_string();
    server
        .post("/api/v1/response", central().body(&room(1), &data))
        .await
}

#[tokio::test]
async fn without_confirms_delivery_a_2xx_is_the_receipt_of_the_recipients_with_a_device() {
    let _serial = SERIAL.lock().await;
    let (server, receiver, (anna, anna_token), ben) = setting(&[]).await;
    let listed = server.admin(&["webhooks", "list", "--json"]).json();
    assert_eq!(listed[0]["confirms_delivery"], false, "{listed}");

    let opened = Instant::now();
    let id = open_notruf(&server, &room(1), "1").await;
    let alert = delivered_alert(&receiver, id).await;
    let mut recipients = alert.body["data"]["recipients"]
        .as_array()
        .expect("recipients")
        .clone();
    recipients.sort_by_key(|r| r["name"].as_str().map(str::to_string));
    assert_eq!(
        Value::Array(recipients),
        json!([
            {"id": anna, "name": "Anna", "device": "DECT-101", "alert": 1},
            {"id": ben, "name": "Ben", "device": null, "alert": 1}
        ])
    );

    // Anna's handset got it: received, soon after the 2xx.
    let deadline = Instant::now() + Duration::from_secs(5);
    let alarm = loop {
        let alarm = alarm_of(&server, &anna_token, id).await;
        if received_at(&alarm, &anna).is_string() || Instant::now() > deadline {
            break alarm;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let at = received_at(&alarm, &anna);
    assert_now_in(at.as_str().expect("Anna received it"), "Europe/Berlin");
    assert_eq!(received_at(&alarm, &ben), Value::Null, "Ben has no device");

    // Past the receipt deadline (2 s): Ben is not reached, Anna is, so the
    // house keeps its time (60 s).
    tokio::time::sleep(Duration::from_millis(3500).saturating_sub(opened.elapsed())).await;
    let alarm = alarm_of(&server, &anna_token, id).await;
    assert_eq!(alarm["level"], 1, "{alarm}");
    assert_eq!(alarm["state"], "alerting");
    assert_eq!(received_at(&alarm, &anna), at, "the first receipt kept");

    // The audit has Anna's receipt, and only hers; the log says by which path.
    let audit = server
        .admin(&["audit", &id.to_string(), "--json"])
        .success()
        .json();
    let receipts: Vec<&Value> = audit["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["kind"] == "received")
        .collect();
    assert_eq!(receipts.len(), 1, "{audit}");
    assert_eq!(receipts[0]["staff_id"], anna.as_str());
    let logs = server.logs_once(|lines| lines.iter().any(|l| l.contains("\"receipt\"")));
    let line = logs
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["message"] == "receipt")
        .unwrap_or_else(|| panic!("a receipt line: {logs:#?}"));
    assert_eq!(line["path"], "webhook", "{line}");
    assert_eq!(line["staff_id"], anna.as_str());
    assert_eq!(line["call_id"], id);
    assert_eq!(line["alert"], 1);
}

#[tokio::test]
async fn with_confirms_delivery_the_2xx_is_no_receipt_and_the_servers_received_is() {
    let _serial = SERIAL.lock().await;
    let (server, receiver, (anna, anna_token), ben) = setting(&["--confirms-delivery"]).await;
    let listed = server.admin(&["webhooks", "list", "--json"]).json();
    assert_eq!(listed[0]["confirms_delivery"], true, "{listed}");
    let table = server.admin(&["webhooks", "list"]).success().stdout;
    assert!(
        table.contains("RECEIPTS") && table.contains("received"),
        "{table}"
    );

    let opened = Instant::now();
    let id = open_notruf(&server, &room(1), "1").await;
    let alert = delivered_alert(&receiver, id).await;
    assert_eq!(
        alert.body["data"]["recipients"].as_array().map(Vec::len),
        Some(2)
    );

    // Past the receipt deadline: the 2xx confirmed nobody, so both are not
    // reached and the house starts at once, not at 60 s.
    tokio::time::sleep(Duration::from_millis(3500).saturating_sub(opened.elapsed())).await;
    let alarm = alarm_of(&server, &anna_token, id).await;
    assert_eq!(received_at(&alarm, &anna), Value::Null, "{alarm}");
    assert_eq!(received_at(&alarm, &ben), Value::Null);
    assert_eq!(alarm["level"], 2, "{alarm}");

    // The server's `received` for Anna's handset is her receipt.
    let answer = received(&server, id, "DECT-101").await;
    answer.expect_status(200);
    let alarm = &answer.data()["alarm"];
    assert_now_in(
        received_at(alarm, &anna)
            .as_str()
            .expect("Anna received it"),
        "Europe/Berlin",
    );
    assert_eq!(received_at(alarm, &ben), Value::Null);
    let logs = server.logs();
    assert!(
        !logs.iter().any(|l| l.contains("\"path\":\"webhook\"")),
        "no receipt by a 2xx: {logs:#?}"
    );
}
