//! Escalation in time (DECISIONS §14), with Notruf's policy shortened by the
//! admin command to the issue's: section at once, the house after 2 s, the
//! group Leitung after 4 s. Measured over the live socket of staff pages
//! and printed: level 2 starts 2 s ± 1 s and level 3 4 s ± 1 s after the
//! open; an accept, a presence and the close stop the escalation and cancel
//! the alerts still ringing within 1 s; declines by everyone start the next
//! level at once; someone who signs off and on again while a call alerts is
//! alerted within 1 s of the sign-on, as a newcomer is; after a kill -9
//! every pending level starts within 1 s of the restart. Needs the local
//! server's timers (skipped under cargo lambda watch,
//! tests/lambda-watch-skips.txt); runs on SQLite and on moto.

mod alarms_support;

use std::time::{Duration, Instant};

use alarms_support::*;
use blackbox_tests::*;

/// Where the contract says 1 s.
const WITHIN: Duration = Duration::from_secs(1);

/// A sandbox server whose Notruf escalates by `policy`, a visitor, Anna on
/// duty for section 1, Ben for section 2, and Cem of the group Leitung off
/// duty.
async fn setting(policy: &str) -> (Server, Consumer, [Member; 3]) {
    let server = Server::sandbox();
    set_escalation(&server, "Notruf", policy);
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let ben = staff(&server, &visitor, "Ben", &[]).await;
    let cem = staff(&server, &visitor, "Cem", &["Leitung"]).await;
    sign_on(&server, &anna, &["1"]).await;
    sign_on(&server, &ben, &["2"]).await;
    (server, visitor, [anna, ben, cem])
}

/// Asserts `at` (seconds after the open) is `expected` ± 1 s.
fn on_time(what: &str, at: f64, expected: f64) {
    println!("{what}: {at:.2} s after the open (due at {expected} s)");
    assert!(
        (expected - 1.0..=expected + 1.0).contains(&at),
        "{what} {at:.2} s after the open, expected {expected} s ± 1 s"
    );
}

#[tokio::test]
async fn levels_start_on_time_and_an_accept_stops_them_and_cancels_the_others() {
    let (server, visitor, [anna, ben, cem]) = setting(SHORT_POLICY).await;
    let mut anna_page = connect_staff(&server, &anna).await;
    let mut ben_page = connect_staff(&server, &ben).await;
    let mut cem_page = connect_staff(&server, &cem).await;
    let mut display = connect_display(&server, &visitor).await;

    let opened = Instant::now();
    let id = open(&server, &visitor, "Z1", "Notruf", Some("1")).await;
    let first = message(&mut anna_page, "call.alert", id).await;
    on_time("level 1 (section) alerts Anna", seconds(opened), 0.0);
    assert_eq!(
        (first["level"].as_i64(), first["repeat"].as_bool()),
        (Some(1), Some(false))
    );

    let second = message(&mut ben_page, "call.alert", id).await;
    on_time("level 2 (house) alerts Ben", seconds(opened), 2.0);
    assert_eq!(second["level"], 2);
    assert_eq!(second["call"]["alarm"]["level"], 2);
    // Displays: level 1's start, then level 2's, each a newer version.
    let started = message(&mut display, "call.escalated", id).await;
    assert_eq!(started["call"]["alarm"]["level"], 1);
    let escalated = message(&mut display, "call.escalated", id).await;
    assert_eq!(escalated["call"]["alarm"]["level"], 2);
    assert!(escalated["version"].as_i64() > started["version"].as_i64());
    assert_eq!(escalated["version"], second["version"]);

    let third = message(&mut cem_page, "call.alert", id).await;
    on_time(
        "level 3 (group Leitung) alerts Cem, off duty",
        seconds(opened),
        4.0,
    );
    assert_eq!(third["level"], 3);
    assert_eq!(
        third["call"]["alarm"]["next_at"],
        Value::Null,
        "no level left"
    );

    // Ben accepts: Anna and Cem, still alerted, get a cancel naming him.
    let accepted_at = Instant::now();
    respond(&server, &ben, id, "accepted")
        .await
        .expect_status(200);
    for (name, page) in [("Anna", &mut anna_page), ("Cem", &mut cem_page)] {
        let cancel = message(page, "call.cancelled", id).await;
        let after = accepted_at.elapsed();
        println!(
            "{name}'s cancel: {:.2} s after the accept",
            after.as_secs_f64()
        );
        assert!(
            after <= WITHIN,
            "{name}'s cancel came {after:?} after the accept"
        );
        assert_eq!(cancel["reason"], "accepted");
        assert_eq!(cancel["accepted_by"], json!({"id": ben.id, "name": "Ben"}));
    }
    let news = message(&mut display, "call.accepted", id).await;
    assert_eq!(news["call"]["alarm"]["accepted_by"]["name"], "Ben");
    let shown = displayed(&server, &visitor, id).await.expect("still open");
    assert_eq!(shown["alarm"]["state"], "accepted");
}

#[tokio::test]
async fn a_presence_in_the_room_stops_the_escalation_and_cancels_the_alerts() {
    let (server, visitor, [anna, ben, _]) = setting(SHORT_POLICY).await;
    let mut anna_page = connect_staff(&server, &anna).await;
    let mut ben_page = connect_staff(&server, &ben).await;
    let id = open(&server, &visitor, "Z1", "Notruf", Some("1")).await;
    message(&mut anna_page, "call.alert", id).await;

    let arrived = Instant::now();
    open(&server, &visitor, "Z1", "Anwesenheit", Some("1")).await;
    let cancel = message(&mut anna_page, "call.cancelled", id).await;
    let after = arrived.elapsed();
    println!("cancel after the presence: {:.2} s", after.as_secs_f64());
    assert!(after <= WITHIN, "cancel {after:?} after the presence");
    assert_eq!(cancel["reason"], "present");
    assert_eq!(cancel["call"]["alarm"]["state"], "present");
    // Level 2 would have been due 2 s after the open: it never comes.
    assert_eq!(
        message_within(&mut ben_page, "call.alert", id, Duration::from_millis(2600)).await,
        None,
        "a stopped call alerted Ben"
    );
    assert_eq!(
        displayed(&server, &visitor, id).await.expect("open")["alarm"]["level"],
        1
    );
}

#[tokio::test]
async fn the_close_stops_the_escalation_and_cancels_the_alerts() {
    let (server, visitor, [anna, ben, _]) = setting(SHORT_POLICY).await;
    let mut anna_page = connect_staff(&server, &anna).await;
    let mut ben_page = connect_staff(&server, &ben).await;
    let id = open(&server, &visitor, "Z1", "Notruf", Some("1")).await;
    message(&mut anna_page, "call.alert", id).await;

    let closed = Instant::now();
    close(&server, &visitor, "Z1").await;
    let cancel = message(&mut anna_page, "call.cancelled", id).await;
    let after = closed.elapsed();
    println!("cancel after the close: {:.2} s", after.as_secs_f64());
    assert!(after <= WITHIN, "cancel {after:?} after the close");
    assert_eq!(cancel["reason"], "ended");
    assert_eq!(
        message_within(&mut ben_page, "call.alert", id, Duration::from_millis(2600)).await,
        None,
        "a closed call alerted Ben"
    );
}

#[tokio::test]
async fn declines_by_everyone_alerted_start_the_next_level_at_once() {
    // The house only after 30 s: an alert before that is the decline's.
    let (server, visitor, [anna, ben, _]) =
        setting(r#"[{"after":0,"to":"section"},{"after":30,"to":"house"}]"#).await;
    let mut anna_page = connect_staff(&server, &anna).await;
    let mut ben_page = connect_staff(&server, &ben).await;
    let id = open(&server, &visitor, "Z1", "Notruf", Some("1")).await;
    message(&mut anna_page, "call.alert", id).await;

    let declined = Instant::now();
    let answer = respond(&server, &anna, id, "declined").await;
    answer.expect_status(200);
    // Staff pages hear of the decline (published before the alerts it
    // causes); then the next level alerts Ben. Anna is not alerted again.
    message(&mut ben_page, "call.declined", id).await;
    let alert = message(&mut ben_page, "call.alert", id).await;
    let after = declined.elapsed();
    println!(
        "level 2 after the only recipient declined: {:.2} s",
        after.as_secs_f64()
    );
    assert!(
        after <= WITHIN,
        "the next level came {after:?} after the decline"
    );
    assert_eq!(alert["level"], 2);
    assert_eq!(
        message_within(&mut anna_page, "call.alert", id, Duration::from_millis(500)).await,
        None
    );
}

/// The alert's number for its person, from its receipt (`<call>.<alert>.…`).
fn alert_number(alert: &Value) -> i64 {
    let receipt = alert["receipt"].as_str().expect("receipt");
    receipt
        .split('.')
        .nth(1)
        .expect("alert number")
        .parse()
        .expect("a number")
}

#[tokio::test]
async fn someone_who_signs_off_and_on_again_is_alerted_at_once_as_a_newcomer_is() {
    // A Hotelruf re-alerts after 120 s and reaches the house after 300 s:
    // an alert within a second of a sign-on is the sign-on's.
    let (server, visitor, [anna, ben, _]) = setting(SHORT_POLICY).await;
    let mut anna_page = connect_staff(&server, &anna).await;
    let mut ben_page = connect_staff(&server, &ben).await;
    let id = open(&server, &visitor, "Z1", "Hotelruf", Some("1")).await;
    let first = message(&mut anna_page, "call.alert", id).await;
    assert_eq!(alert_number(&first), 1);

    as_staff(
        &server,
        reqwest::Method::DELETE,
        STAFF_DUTY,
        &anna.token,
        None,
    )
    .await
    .expect_status(200);
    let cancel = message(&mut anna_page, "call.cancelled", id).await;
    assert_eq!(cancel["reason"], "off_duty");

    let back = Instant::now();
    sign_on(&server, &anna, &["1"]).await;
    let again = message(&mut anna_page, "call.alert", id).await;
    let after = back.elapsed();
    println!(
        "Anna, back on duty within a Hotelruf's 120 s re-alert interval: alerted {} ms after her sign-on",
        after.as_millis()
    );
    assert!(after <= WITHIN, "alerted {after:?} after signing on again");
    assert_eq!(
        (again["repeat"].as_bool(), alert_number(&again)),
        (Some(true), 2),
        "a re-alert of hers, her second"
    );

    // As a newcomer to the section is.
    let joined = Instant::now();
    sign_on(&server, &ben, &["1", "2"]).await;
    message(&mut ben_page, "call.alert", id).await;
    let after = joined.elapsed();
    println!(
        "Ben, new to the section: alerted {} ms after his sign-on",
        after.as_millis()
    );
    assert!(after <= WITHIN, "alerted {after:?} after signing on");
}

#[tokio::test]
async fn after_a_kill_every_pending_level_starts_within_a_second_of_the_restart() {
    let dir = tempfile::tempdir().expect("temp folder");
    let options = Options::sandbox().data_dir(dir.path());
    let mut server = Server::start(options.clone());
    set_escalation(
        &server,
        "Notruf",
        r#"[{"after":0,"to":"section"},{"after":3,"to":"house"}]"#,
    );
    let visitor = server.new_consumer().await;
    let (anna, ben) = anna_and_ben_on_duty(&server, &visitor).await;
    // Their pages open: a channel each (§18).
    let anna_page = connect_staff(&server, &anna).await;
    let ben_page = connect_staff(&server, &ben).await;
    let mut ids = Vec::new();
    for room in 0..5 {
        ids.push(open(&server, &visitor, &format!("Z{room}"), "Notruf", Some("1")).await);
    }
    // Level 1 started for each; level 2 is pending when the server dies.
    for id in &ids {
        let deadline = Instant::now() + WAIT;
        while displayed(&server, &visitor, *id).await.expect("open")["alarm"]["level"] != 1 {
            assert!(
                Instant::now() < deadline,
                "level 1 of call {id} never started"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    server.kill();
    drop((anna_page, ben_page));
    // Down past every level 2's time.
    tokio::time::sleep(Duration::from_millis(3500)).await;

    let server = Server::start(options);
    let restarted = Instant::now();
    // Ben's page comes back as the server does (it reconnects by itself).
    let _ben_page = connect_staff(&server, &ben).await;
    let deadline = restarted + WAIT;
    loop {
        let calls = staff_calls(&server, &ben).await;
        if ids.iter().all(|id| {
            calls
                .iter()
                .any(|c| c["id"] == *id && c["alarm"]["level"] == 2)
        }) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "level 2 never started after the restart: {calls:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let after = restarted.elapsed();
    println!(
        "kill -9 with {} levels pending: all started {:.2} s after the restart",
        ids.len(),
        after.as_secs_f64()
    );
    assert!(
        after <= WITHIN,
        "the pending levels started {after:?} after the restart"
    );
}
