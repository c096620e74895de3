//! A silent central system found in AWS (DECISIONS §19), end to end on
//! moto: the sandbox visitor's consumer gets a heartbeat (`consumers set
//! --heartbeat 30`), its last sign of life is moved back by hand (the 70 s
//! are not waited for), and the stack's minute wake-up makes the real
//! `alarm` binary sweep the links: the silence is kept (the displays' read
//! lists it in `silent`), announced (its webhook event in the outbox, for
//! `forward`), and Technik's member gets the alert as a push job, put on
//! the delivery queue and taken by the real `deliver` binary. The
//! consumer's next signed request ends it (the read's `silent` empty).
//! The broadcast's `consumer.silent`/`consumer.back` from the silence's
//! history item: functions/live-aws/tests/silence_change.rs.

use std::time::Duration;

use blackbox_tests::*;

use crate::alarms_aws::event_sources::MotoStack;
use crate::alarms_support::*;

/// The stack's minute wake-up (`MINUTE_WAKE` of functions/alarms-aws).
const MINUTE_WAKE: &str = r#"{"minute":"wake"}"#;

/// The displays' read's `silent` list of the visitor's scope.
async fn silent(server: &Server, visitor: &Consumer) -> Value {
    display_read(server, visitor).await["silent"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_central_system_is_found_at_the_minute_s_wake_up() {
    let Some(stack) = MotoStack::start(Options::sandbox(), &[]).await else {
        return;
    };
    let MotoStack {
        server,
        moto,
        prefix,
        ..
    } = &stack;
    let queues = stack.queues().await;
    let visitor = server.new_consumer().await;
    let tom = staff(server, &visitor, "Tom", &["Technik"]).await;
    server
        .admin(&["consumers", "set", &visitor.id, "--heartbeat", "30"])
        .success();
    let env = stack.env(&queues);
    let mut aws = stack.event_sources(&queues, &env).await;
    let visitor = &visitor;
    assert_eq!(silent(server, visitor).await, json!([]), "alive");

    // --- Its last sign of life 100 s ago: past 2 × 30 s + 10 s.
    let seen = chrono::Utc::now() - chrono::Duration::seconds(100);
    moto.call(
        "DynamoDB_20120810.UpdateItem",
        json!({
            "TableName": format!("{prefix}consumers"),
            "Key": {"id": {"S": visitor.id}},
            "UpdateExpression": "SET last_seen_at = :seen",
            "ExpressionAttributeValues": {":seen": {"S": seen.format("%Y-%m-%dT%H:%M:%SZ").to_string()}}
        }),
    )
    .await;
    aws.run_for(Duration::from_secs(1)).await;
    assert_eq!(
        silent(server, visitor).await,
        json!([]),
        "nothing is found before a wake-up"
    );

    // --- The minute's wake-up finds it; a read shows another process's
    // silence within 10 s (it reads the links at most every 10 s:
    // functions/core/src/app/links_read.rs).
    queues.timers.send(MINUTE_WAKE, 0).await;
    let found = std::time::Instant::now();
    aws.until(
        "silent after the wake-up",
        WAIT + Duration::from_secs(10),
        || async move { silent(server, visitor).await != json!([]) },
    )
    .await;
    println!(
        "the display read lists it {:.1} s after the wake-up was sent",
        found.elapsed().as_secs_f64()
    );
    let listed = silent(server, visitor).await;
    assert_eq!(listed[0]["consumer"], visitor.id.as_str(), "{listed}");
    let swept = aws.alarm.log_entries("links swept");
    assert_eq!(swept.len(), 1, "{swept:?}");
    assert_eq!(swept[0]["silent"], 1);
    assert_eq!(swept[0]["alerts"], 1, "Technik's first alert");
    assert_eq!(swept[0]["pushes"], 1, "one push job: Tom's");
    let alerted = aws
        .alarm
        .log_entries("Technik alerted: central system silent");
    assert_eq!(alerted.len(), 1);
    assert_eq!(alerted[0]["staff"], format!("[\"{}\"]", tom.id));
    // Its push job reached `deliver` (Tom has no phone: nothing to send).
    let deadline = std::time::Instant::now() + WAIT;
    while aws.push_jobs == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no push job taken by deliver"
        );
        aws.round().await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // --- A second wake-up neither finds it again nor alerts again yet.
    queues.timers.send(MINUTE_WAKE, 0).await;
    aws.run_for(Duration::from_secs(3)).await;
    assert_eq!(aws.alarm.log_entries("links swept").len(), 1);

    // --- Its next signed request ends it.
    server
        .element(visitor, "Zimmer-1", r#"{"battery":80}"#)
        .await
        .expect_status(200);
    assert_eq!(silent(server, visitor).await, json!([]), "back");
}
