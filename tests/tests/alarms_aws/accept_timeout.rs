//! An accept is not an arrival (DECISIONS §19) as it runs in AWS (§17), end
//! to end on moto: the accept's write is a stream record whose alarm is due
//! again at its timeout, the real `alarm` binary sends that timer through
//! the timer queue, takes it back and resumes the alarm: level 2 (the house,
//! due by time only after 60 s) starts at the timeout, `accepted_by` null,
//! Anna in `not_arrived`. Notruf's accept timeout is 2 s here (the admin
//! command); measured and printed: 2 s −1 s/+[`LATE`] after the accept (the
//! accept's time is kept in whole seconds, the timer's delay is rounded up
//! to whole seconds).

use std::time::{Duration, Instant};

use blackbox_tests::*;

use crate::alarms_aws::event_sources::MotoStack;
use crate::alarms_support::*;
use crate::{LATE, level};

/// The accept timeout of this test, in seconds.
const TIMEOUT: u64 = 2;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accept_without_an_arrival_resumes_the_alarm_through_the_timer_queue() {
    let Some(stack) = MotoStack::start(Options::sandbox(), &[]).await else {
        return;
    };
    let server = &stack.server;
    set_escalation(
        server,
        "Notruf",
        r#"[{"after":0,"to":"section"},{"after":60,"to":"house"}]"#,
    );
    server
        .admin(&[
            "call-types",
            "set",
            "Notruf",
            "--accept-timeout",
            &TIMEOUT.to_string(),
        ])
        .success();
    let queues = stack.queues().await;
    let visitor = server.new_consumer().await;
    let (anna, _ben) = anna_and_ben_on_duty(server, &visitor).await;
    let env = stack.env(&queues);
    let mut aws = stack.event_sources(&queues, &env).await;
    let visitor = &visitor;

    let id = open(server, visitor, "Z1", "Notruf", Some("1")).await;
    aws.until("level 1", WAIT, || async move {
        level(server, visitor, id).await >= 1
    })
    .await;
    let accepted = Instant::now();
    respond(server, &anna, id, "accepted")
        .await
        .expect_status(200);
    aws.until("the accept timed out", WAIT, || async move {
        displayed(server, visitor, id)
            .await
            .is_some_and(|call| call["alarm"]["not_arrived"] != json!([]))
    })
    .await;
    let after = accepted.elapsed();
    println!(
        "AWS: the accept timed out {:.2} s after it (accept timeout {TIMEOUT} s)",
        after.as_secs_f64()
    );
    let due = Duration::from_secs(TIMEOUT);
    assert!(
        after + Duration::from_secs(1) >= due && after <= due + LATE,
        "resumed {after:?} after the accept, expected {due:?} −1 s/+{LATE:?}"
    );
    let call = displayed(server, visitor, id).await.expect("open");
    let alarm = &call["alarm"];
    assert_eq!(alarm["state"], "alerting", "{alarm}");
    assert_eq!(alarm["accepted_by"], Value::Null);
    assert_eq!(alarm["level"], 2, "the house level at once: {alarm}");
    assert_eq!(
        alarm["not_arrived"],
        json!([{"id": anna.id, "name": "Anna"}])
    );
    // Ben (the house) and Anna again are among the alerted.
    let alerted: Vec<&str> = alarm["recipients"]
        .as_array()
        .expect("recipients")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(
        alerted.contains(&"Ben") && alerted.contains(&"Anna"),
        "{alarm}"
    );
}
