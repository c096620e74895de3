//! A central system's heartbeat (DECISIONS §19): `nurse-call-admin
//! consumers set ID --heartbeat SECONDS` supervises its link, `POST
//! /api/v1/heartbeat` (signed, not token-based) answers when the next
//! request is due, and every signed request is a sign of life, written at
//! most once per third of the interval per process.

use std::time::Duration;

use blackbox_tests::*;
use serde_json::Value;

const CENTRAL: &str = "5117e000-0000-4000-8000-000000000001";
const GATEWAY: &str = "5117e000-0000-4000-8000-000000000002";
const ROOM_101: &str = "00:11:22:33:44:55";
const HEARTBEAT: &str = "/api/v1/heartbeat";
const ZONE: &str = "Europe/Berlin";

fn central() -> Consumer {
    Consumer::new(CENTRAL, "central-secret")
}

fn gateway() -> Consumer {
    Consumer::new(GATEWAY, "gateway-secret")
}

fn production() -> Server {
    Server::production(
        Seed::new()
            .consumer(CENTRAL, &["central-secret"], false)
            .consumer(GATEWAY, &["gateway-secret"], false)
            .element(ROOM_101, "Z101", "Zimmer 101"),
    )
}

async fn heartbeat(server: &Server, consumer: &Consumer) -> Response {
    server
        .post(HEARTBEAT, consumer.body(&consumer.id, "{}"))
        .await
}

/// `consumers set ID --heartbeat VALUE --json`.
fn set_heartbeat(server: &Server, id: &str, value: &str) -> AdminRun {
    server.admin(&["consumers", "set", id, "--heartbeat", value, "--json"])
}

/// The consumer's row of `consumers list --json`.
fn listed(server: &Server, id: &str) -> Value {
    let list = server
        .admin(&["consumers", "list", "--json"])
        .success()
        .json();
    list.as_array()
        .expect("a list")
        .iter()
        .find(|row| row["id"] == id)
        .unwrap_or_else(|| panic!("{id} not listed: {list}"))
        .clone()
}

fn last_seen(server: &Server, id: &str) -> String {
    listed(server, id)["last_seen_at"]
        .as_str()
        .unwrap_or_else(|| panic!("no last_seen_at: {}", listed(server, id)))
        .to_string()
}

/// The number of whole seconds from now (in the installation's zone) to
/// the wire time `text`.
fn seconds_from_now(text: &str) -> i64 {
    (wire_time(text) - now_in(ZONE)).num_seconds()
}

#[tokio::test]
async fn a_supervised_consumer_is_told_when_its_next_request_is_due() {
    let server = production();
    set_heartbeat(&server, CENTRAL, "60").success();

    let response = heartbeat(&server, &central()).await;
    response.expect_status(200);
    let body = response.json();
    assert_eq!(body["success"], true, "{body}");
    assert_eq!(body["data"]["consumer"], CENTRAL, "{body}");
    // 2 × 60 s + 10 s from now.
    let due = seconds_from_now(body["data"]["next_before"].as_str().expect("a wire time"));
    assert!((125..=131).contains(&due), "next_before {due} s from now");
}

/// The answers on the sandbox, as the Lambda functions under `cargo
/// lambda watch` give them too (a visitor's consumer has no heartbeat).
#[tokio::test]
async fn the_heartbeats_answers_200_422_address_and_400_hash() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let response = heartbeat(&server, &visitor).await;
    response.expect_status(200);
    assert_eq!(response.data()["consumer"], visitor.id.as_str());
    assert_eq!(response.data()["next_before"], Value::Null);

    let response = server
        .post(HEARTBEAT, visitor.body("Zimmer-101", "{}"))
        .await;
    response.expect_status(422);
    assert_eq!(
        response.text,
        validation_body(&[("address", &["Der gewählte Wert für address ist ungültig."])]),
    );

    let forged = Consumer::new(&visitor.id, "not-the-secret");
    let response = heartbeat(&server, &forged).await;
    response.expect_status(400);
    assert_eq!(response.json()["messages"][0]["code"], "invalid_hash");
}

#[tokio::test]
async fn a_consumer_without_a_heartbeat_may_post_one_and_is_told_nothing_is_due() {
    let server = production();
    let response = heartbeat(&server, &gateway()).await;
    response.expect_status(200);
    assert_eq!(
        response.json(),
        serde_json::json!({"success": true, "data": {"consumer": GATEWAY, "next_before": null}})
    );
}

#[tokio::test]
async fn a_target_other_than_its_own_id_is_an_address_error() {
    let server = production();
    set_heartbeat(&server, CENTRAL, "60").success();
    // Signed correctly, but addressed to another consumer (or an element).
    for target in [GATEWAY, ROOM_101] {
        let response = server.post(HEARTBEAT, central().body(target, "{}")).await;
        response.expect_status(422);
        assert_eq!(
            response.text,
            validation_body(&[("address", &["Der gewählte Wert für address ist ungültig."])]),
        );
    }
}

#[tokio::test]
async fn a_heartbeat_is_signed_a_wrong_hash_is_400() {
    let server = production();
    set_heartbeat(&server, CENTRAL, "60").success();
    let forged = Consumer::new(CENTRAL, "not-the-secret");
    let response = heartbeat(&server, &forged).await;
    response.expect_status(400);
    assert_eq!(response.text, invalid_hash_body());
    // No token stands in for a signature.
    let response = server
        .request(
            reqwest::Method::POST,
            HEARTBEAT,
            Some("application/json"),
            &[("Authorization", "Bearer some-token")],
            format!(r#"{{"target":"{CENTRAL}","consumer":"{CENTRAL}","data":{{}}}}"#),
        )
        .await;
    response.expect_status(422);
    // And a failed signature is no sign of life.
    let before = last_seen(&server, CENTRAL);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    heartbeat(&server, &forged).await.expect_status(400);
    assert_eq!(last_seen(&server, CENTRAL), before);
}

#[tokio::test]
async fn the_admin_sets_lists_and_removes_a_heartbeat() {
    let server = production();
    let set = set_heartbeat(&server, CENTRAL, "300").success().json();
    assert_eq!(set["heartbeat_seconds"], 300, "{set}");
    let row = listed(&server, CENTRAL);
    assert_eq!(row["heartbeat_seconds"], 300, "{row}");
    assert!(row["last_seen_at"].is_string(), "seen from now on: {row}");
    assert_eq!(listed(&server, GATEWAY)["heartbeat_seconds"], Value::Null);

    // The table names it too.
    let table = server.admin(&["consumers", "list"]).success().stdout;
    assert!(
        table.contains("HEARTBEAT") && table.contains("300 s"),
        "{table}"
    );

    for refused in ["29", "3601", "often", "-5"] {
        let run = set_heartbeat(&server, CENTRAL, refused);
        assert_ne!(run.code, Some(0), "{refused} accepted: {run:#?}");
    }
    let unknown = set_heartbeat(&server, "5117e000-0000-4000-8000-0000000000ff", "60");
    assert_ne!(unknown.code, Some(0), "{unknown:#?}");
    assert_eq!(listed(&server, CENTRAL)["heartbeat_seconds"], 300);

    let removed = set_heartbeat(&server, CENTRAL, "none").success().json();
    assert_eq!(removed["heartbeat_seconds"], Value::Null, "{removed}");
    let row = listed(&server, CENTRAL);
    assert_eq!(row["heartbeat_seconds"], Value::Null, "{row}");
    assert!(row.get("last_seen_at").is_none(), "{row}");
    let response = heartbeat(&server, &central()).await;
    response.expect_status(200);
    assert_eq!(response.data()["next_before"], Value::Null);
}

#[tokio::test]
async fn any_signed_request_is_a_sign_of_life_written_once_per_third_of_the_interval() {
    let server = production();
    // An hour: a third is 20 minutes, longer than this test.
    set_heartbeat(&server, CENTRAL, "3600").success();
    let set_at = last_seen(&server, CENTRAL);

    // A display request is a sign of life (stored times have whole seconds).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    server
        .display(&central(), ROOM_101, r#"{"event":"Notruf"}"#)
        .await
        .expect_status(201);
    let seen = last_seen(&server, CENTRAL);
    assert!(seen > set_at, "{seen} after {set_at}");

    // More requests within the third write nothing more: the kept sign of
    // life stays, and the heartbeat's answer is counted from it.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let mut next = Vec::new();
    for _ in 0..5 {
        server
            .element(&central(), ROOM_101, r#"{"battery":80}"#)
            .await
            .expect_status(200);
        let response = heartbeat(&server, &central()).await;
        response.expect_status(200);
        next.push(response.data()["next_before"].clone());
    }
    assert_eq!(last_seen(&server, CENTRAL), seen, "one write");
    assert!(next.windows(2).all(|pair| pair[0] == pair[1]), "{next:?}");
    let due = seconds_from_now(next[0].as_str().unwrap());
    assert!(
        (7200..=7209).contains(&due),
        "counted from the first request, 2 s and more ago: {due}"
    );

    // A request that fails its signature is none; another consumer's
    // requests are not this one's.
    server
        .element(&gateway(), ROOM_101, r#"{"battery":70}"#)
        .await
        .expect_status(200);
    assert_eq!(listed(&server, GATEWAY).get("last_seen_at"), None);
}
