//! Plausible times (DECISIONS §5, issue 29): `created_at` and `closed_at`
//! lie at most 7 days before and 5 minutes after the service's clock, else
//! 422 keyed `data.created_at` / `data.closed_at`. A central system whose
//! clock was reset dates its calls 1970 or 2099; a call dated 2099 could never
//! be closed and would swallow every later call of its kind on the room.

use blackbox_tests::*;

const DAY: i64 = 24 * 3600;

#[tokio::test]
async fn a_call_dated_1970_or_2099_is_refused_and_nothing_is_stored() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    for created_at in ["1970-01-01 00:00:00", "2099-01-01 00:00:00"] {
        let clock = WireClock::berlin();
        let response = server
            .display(
                &c,
                "Zimmer-1",
                &format!(r#"{{"event":"WC","created_at":"{created_at}"}}"#),
            )
            .await;
        clock.assert_out_of_range(&response, &["data.created_at"]);
    }
    let state = server.state(&c).await;
    assert_eq!(state["calls"], json!([]), "{state}");
    assert_eq!(state["elements"], json!([]), "{state}");
    // So the room's next WC is a new call, not "already open" on a stuck one.
    let response = server.display(&c, "Zimmer-1", r#"{"event":"WC"}"#).await;
    response.expect_status(201);
    let close = server.display(&c, "Zimmer-1", r#"{"closed":true}"#).await;
    close.expect_status(200);
    assert_eq!(close.data().as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn a_close_dated_8_days_ago_is_refused_6_days_ago_it_closes() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let clock = WireClock::berlin();
    let opened_at = clock.at(-7 * DAY + 3600);
    let opened = server
        .display(
            &c,
            "Zimmer-2",
            &format!(r#"{{"event":"Notruf","created_at":"{opened_at}"}}"#),
        )
        .await;
    opened.expect_status(201);
    assert_eq!(opened.data()["opened_at"], opened_at.as_str());

    // The same clock as the open's: a second one, taken a second later
    // (on moto the open can take that long), made the duration 1 s longer.
    let response = server
        .display(
            &c,
            "Zimmer-2",
            &format!(r#"{{"closed":true,"closed_at":"{}"}}"#, clock.at(-8 * DAY)),
        )
        .await;
    clock.assert_out_of_range(&response, &["data.closed_at"]);
    let state = server.state(&c).await;
    assert_eq!(state["calls"][0]["closed_at"], Value::Null, "{state}");

    let closed_at = clock.at(-6 * DAY);
    let response = server
        .display(
            &c,
            "Zimmer-2",
            &format!(r#"{{"closed":true,"closed_at":"{closed_at}"}}"#),
        )
        .await;
    response.expect_status(200);
    let closed = &response.data()[0];
    assert_eq!(closed["id"], opened.data()["id"]);
    assert_eq!(closed["closed_at"], closed_at.as_str());
    assert_eq!(closed["duration"], DAY - 3600);
}

#[tokio::test]
async fn a_clock_a_few_minutes_ahead_is_accepted() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let clock = WireClock::berlin();
    let ahead = clock.at(4 * 60);
    let response = server
        .display(
            &c,
            "Zimmer-3",
            &format!(r#"{{"event":"WC","created_at":"{ahead}"}}"#),
        )
        .await;
    response.expect_status(201);
    assert_eq!(response.data()["opened_at"], ahead.as_str());
    let response = server
        .display(
            &c,
            "Zimmer-3",
            &format!(r#"{{"closed":true,"closed_at":"{}"}}"#, clock.at(10 * 60)),
        )
        .await;
    clock.assert_out_of_range(&response, &["data.closed_at"]);
}

/// The range is a structure check (DECISIONS §3 step 2): reported with the
/// request's other field errors at once, before the signature is looked at.
#[tokio::test]
async fn the_range_is_reported_with_the_other_field_errors_before_the_signature() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let data = r#"{"event":"WC","battery":101,"created_at":"1970-01-01 00:00:00","closed_at":"2099-01-01 00:00:00"}"#;
    let body = format!(
        r#"{{"target":"Zimmer-4","consumer":"{}","hash":"{}","data":{data}}}"#,
        c.id,
        "0".repeat(64)
    );
    let clock = WireClock::berlin();
    let response = server.post(DISPLAY, body).await;
    response.expect_status(422);
    // In the order of the spec's table, as the body sends them.
    let keys = object_keys(&raw_member(
        &raw_member(&response.text, "messages"),
        "errors",
    ));
    assert_eq!(
        keys,
        ["data.battery", "data.created_at", "data.closed_at"],
        "{}",
        response.text
    );
    let errors = &response.json()["messages"]["errors"];
    let messages: Vec<String> = ["data.created_at", "data.closed_at"]
        .iter()
        .map(|key| errors[key][0].as_str().expect("message").to_string())
        .collect();
    assert!(
        (0..=5).any(|at| messages
            == [
                clock.range_message("data.created_at", at),
                clock.range_message("data.closed_at", at)
            ]),
        "{messages:?}"
    );
}

/// Element requests carry no call times (spec 2.4): a `created_at` in their
/// `data` is an unknown key, ignored like any other (DECISIONS §6).
#[tokio::test]
async fn element_requests_have_no_times_to_check() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let response = server
        .element(
            &c,
            "E1",
            r#"{"battery":50,"created_at":"1970-01-01 00:00:00"}"#,
        )
        .await;
    response.expect_status(200);
    assert_eq!(response.data()["battery"], 50);
    let response = server
        .element_multi(
            &c,
            r#"[{"target":"E2","reachable":true,"closed_at":"2099-01-01 00:00:00"}]"#,
        )
        .await;
    response.expect_status(200);
    assert_eq!(response.data()[0]["reachable"], true);
}
