//! The process: graceful shutdown on SIGTERM, data that survives a restart,
//! and the time zone setting (DECISIONS §5, §9, §10).

use std::process::{Command, Stdio};

use blackbox_tests::*;

#[tokio::test]
async fn sigterm_exits_0_after_logging_the_shutdown() {
    let mut server = Server::sandbox();
    server.get(CALL_TYPES).await.expect_status(200);
    let status = server.terminate();
    assert_eq!(status.code(), Some(0), "exit status {status:?}");
    let logs = server.logs();
    assert!(
        logs.iter()
            .any(|line| line.contains(r#""message":"shut down""#)),
        "no shutdown log line: {logs:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_the_request_in_flight() {
    if skip_unless_sqlite("sigterm_finishes_the_request_in_flight") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp folder");
    let options = Options::sandbox().data_dir(dir.path());
    let mut server = Server::start(options.clone());
    let c = server.new_consumer().await;

    // Hold the store's write lock so that the next open is still in flight
    // when SIGTERM arrives.
    let lock = StoreLock::take(dir.path());
    let client = server.client().clone();
    let url = format!("{}{DISPLAY}", server.base_url());
    let body = c.body("A1", r#"{"event":"Notruf"}"#);
    let in_flight = tokio::spawn(async move {
        let response = client
            .post(url)
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .expect("the request in flight is answered");
        let status = response.status().as_u16();
        (status, response.text().await.expect("body"))
    });
    // Well within the store's 5 s busy timeout, so the request waits.
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    server.send_sigterm();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        !server.has_exited(),
        "the server waits for the request in flight"
    );
    drop(lock);

    let (status, text) = in_flight.await.expect("request task");
    assert_eq!(status, 201, "{text}");
    let id = serde_json::from_str::<Value>(&text).unwrap()["data"]["id"].clone();
    assert_eq!(server.wait_exit().code(), Some(0));

    // What it answered is stored.
    let server = Server::start(options);
    let state = server.state(&c).await;
    assert_eq!(state["calls"].as_array().unwrap().len(), 1);
    assert_eq!(state["calls"][0]["id"], id);
}

#[tokio::test]
async fn sandbox_data_survives_a_restart() {
    let dir = tempfile::tempdir().expect("temp folder");
    let options = Options::sandbox().data_dir(dir.path());

    let mut first = Server::start(options.clone());
    let c = first.new_consumer().await;
    let open = first
        .display(&c, "A1", r#"{"event":"Notruf","position":"Bett 1"}"#)
        .await;
    open.expect_status(201);
    let id = open.data()["id"].as_i64().unwrap();
    first
        .element(&c, "A1", r#"{"battery":77}"#)
        .await
        .expect_status(200);
    let before = first.state(&c).await;
    assert_eq!(first.terminate().code(), Some(0));

    let second = Server::start(options);
    assert_ne!(second.base_url(), "", "listening again");
    // The consumer still verifies; calls and elements are all there.
    let after = second.state(&c).await;
    assert_eq!(after["elements"], before["elements"]);
    let call = call_by_id(&after["calls"], id).expect("call survived");
    assert_eq!(call["closed_at"], Value::Null);
    assert_eq!(call["position"], "Bett 1");
    assert_eq!(call["opened_at"], before["calls"][0]["opened_at"]);
    // Re-open is still idempotent across the restart; ids stay unique.
    let again = second.display(&c, "A1", r#"{"event":"Notruf"}"#).await;
    again.expect_status(200);
    assert_eq!(again.data()["id"], id);
    let other = second.display(&c, "A1", r#"{"event":"WC"}"#).await;
    other.expect_status(201);
    assert_ne!(other.data()["id"], id);
}

#[tokio::test]
async fn production_data_survives_a_restart_with_the_same_seed() {
    let dir = tempfile::tempdir().expect("temp folder");
    let id = "11111111-2222-4333-8444-555555555555";
    let seed = Seed::new()
        .consumer(id, &["first-secret"], false)
        .element("R1", "C1", "Raum 1");
    let consumer = Consumer::new(id, "first-secret");

    let mut first = Server::start(Options::production(seed.clone()).data_dir(dir.path()));
    first
        .element(&consumer, "R1", r#"{"battery":70,"position":"Tür"}"#)
        .await
        .expect_status(200);
    let open = first.display(&consumer, "R1", r#"{"event":"WC"}"#).await;
    open.expect_status(201);
    assert_eq!(first.terminate().code(), Some(0));

    // The seed is applied again: existing consumers and element status stay.
    let second = Server::start(Options::production(seed).data_dir(dir.path()));
    let element = second.element(&consumer, "R1", "{}").await;
    element.expect_status(200);
    let element = element.data();
    assert_eq!(element["battery"], 70);
    assert_eq!(element["position"], "Tür");
    assert_eq!(element["code"], "C1");
    assert_eq!(element["name"], "Raum 1");
    let close = second.display(&consumer, "R1", r#"{"closed":true}"#).await;
    close.expect_status(200);
    assert_eq!(close.data()[0]["id"], open.data()["id"]);
}

#[test]
fn an_unknown_time_zone_stops_the_server_with_an_error() {
    let dir = tempfile::tempdir().expect("temp folder");
    let output = Command::new(server_binary())
        .args(["--listen", "127.0.0.1:0", "--mode", "sandbox"])
        .arg("--data-dir")
        .arg(dir.path())
        .args(["--time-zone", "Mars/Olympus_Mons"])
        .env_remove("SERVICE_TIME_ZONE")
        .stdin(Stdio::null())
        .output()
        .expect("server runs");
    assert!(!output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("Mars/Olympus_Mons"), "{stderr}");
}

#[tokio::test]
async fn wire_times_are_berlin_time_by_default() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let response = server.display(&c, "A1", r#"{"event":"Notruf"}"#).await;
    response.expect_status(201);
    assert_now_in(
        response.data()["opened_at"].as_str().unwrap(),
        "Europe/Berlin",
    );
    // Sent times are read in Berlin time too: the range a time must lie in
    // is shown in it (DECISIONS §5). Durations across the clock changes are
    // core's unit tests (`wire_time`): a sent time must lie within the last
    // week, which has no clock change on most days.
    let clock = WireClock::berlin();
    let response = server
        .display(
            &c,
            "D1",
            r#"{"event":"WC","created_at":"1970-01-01 00:00:00"}"#,
        )
        .await;
    clock.assert_out_of_range(&response, &["data.created_at"]);
}

#[tokio::test]
async fn the_time_zone_flag_changes_wire_times() {
    let server = Server::start(Options::sandbox().time_zone("UTC"));
    let c = server.new_consumer().await;
    let response = server.display(&c, "A1", r#"{"event":"Notruf"}"#).await;
    response.expect_status(201);
    assert_now_in(response.data()["opened_at"].as_str().unwrap(), "UTC");
    // Sent times are read in UTC: the UTC wall time of an hour ago is an
    // hour ago, and the range of DECISIONS §5 is shown in UTC.
    let clock = WireClock::in_zone("UTC");
    let hour_ago = clock.at(-3600);
    server
        .display(
            &c,
            "D1",
            &format!(r#"{{"event":"WC","created_at":"{hour_ago}"}}"#),
        )
        .await
        .expect_status(201);
    let close = server
        .display(
            &c,
            "D1",
            &format!(r#"{{"closed":true,"closed_at":"{}"}}"#, clock.at(0)),
        )
        .await;
    close.expect_status(200);
    assert_eq!(close.data()[0]["opened_at"], hour_ago.as_str());
    assert_eq!(close.data()[0]["duration"], 3600);
    let response = server
        .display(
            &c,
            "D1",
            r#"{"closed":true,"closed_at":"2099-01-01 00:00:00"}"#,
        )
        .await;
    clock.assert_out_of_range(&response, &["data.closed_at"]);

    let server = Server::start(Options::sandbox().time_zone("Asia/Kolkata"));
    let c = server.new_consumer().await;
    let element = server.element(&c, "E1", r#"{"battery":1}"#).await;
    element.expect_status(200);
    assert_now_in(
        element.data()["updated_at"].as_str().unwrap(),
        "Asia/Kolkata",
    );
}

#[tokio::test]
async fn service_time_zone_variable_changes_wire_times() {
    let server = Server::start(Options::sandbox().env("SERVICE_TIME_ZONE", "America/New_York"));
    let c = server.new_consumer().await;
    let response = server.display(&c, "A1", r#"{"event":"Notruf"}"#).await;
    response.expect_status(201);
    assert_now_in(
        response.data()["opened_at"].as_str().unwrap(),
        "America/New_York",
    );
}
