//! No alarm step is ever lost in AWS (DECISIONS §19), end to end on moto:
//! a call's only timer is lost on purpose (the harness deletes the timer
//! queue's messages unseen, as a lost message or a stream record that
//! ended in the failure queue leaves it), so its first level does not
//! start; the stack's minute wake-up (`{"minute":"wake"}` on the timer
//! queue, what the EventBridge schedule sends) makes the real `alarm`
//! binary find the alarm overdue by more than 5 s, step it (level 1
//! starts) and log the find as an error line (the stack's metric alarm
//! counts it), and pass a webhook wake-up on. A second wake-up finds
//! nothing overdue.

use std::time::{Duration, Instant};

use blackbox_tests::*;

use crate::alarms_aws::event_sources::MotoStack;
use crate::alarms_support::*;
use crate::level;

/// The error line of an overdue find (infra/lib/alarm-timers.ts
/// `OVERDUE_MESSAGES` counts it).
const OVERDUE: &str = "alarm step overdue: its timer was lost; stepped by the minute's wake-up";

/// The stack's minute wake-up (`MINUTE_WAKE` of functions/alarms-aws).
const MINUTE_WAKE: &str = r#"{"minute":"wake"}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_timer_s_step_is_taken_by_the_minute_s_wake_up() {
    let Some(stack) = MotoStack::start(Options::sandbox(), &[]).await else {
        return;
    };
    let server = &stack.server;
    set_escalation(server, "Notruf", r#"[{"after":0,"to":"section"}]"#);
    let queues = stack.queues().await;
    let visitor = server.new_consumer().await;
    let anna = staff(server, &visitor, "Anna", &[]).await;
    sign_on(server, &anna, &["1"]).await;
    let env = stack.env(&queues);
    let mut aws = stack.event_sources(&queues, &env).await;
    let visitor = &visitor;

    // --- The open's timer (from its stream record) is lost.
    aws.lose_timers = true;
    let call = open(server, visitor, "Z1", "Notruf", Some("1")).await;
    let opened = Instant::now();
    while aws.lost.is_empty() {
        assert!(opened.elapsed() < WAIT, "the open's timer was never sent");
        aws.round().await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(aws.lost[0]["call"], call, "the lost timer is the call's");
    // Past the 5 s after which a step counts as overdue: nothing started.
    aws.run_for(Duration::from_secs(6).saturating_sub(opened.elapsed()))
        .await;
    assert_eq!(level(server, visitor, call).await, 0, "no timer, no level");
    assert!(
        aws.alarm.log_entries(OVERDUE).is_empty(),
        "nothing is found overdue before a wake-up"
    );

    // --- The minute's wake-up steps it.
    aws.lose_timers = false;
    queues.timers.send(MINUTE_WAKE, 0).await;
    let woken = Instant::now();
    aws.until("level 1 after the minute's wake-up", WAIT, || async move {
        level(server, visitor, call).await >= 1
    })
    .await;
    eprintln!(
        "alarms_aws: the lost timer's level 1 started {:.2} s after the wake-up was sent, {:.1} s after the open",
        woken.elapsed().as_secs_f64(),
        opened.elapsed().as_secs_f64()
    );
    let found = aws.alarm.log_entries(OVERDUE);
    assert_eq!(found.len(), 1, "one overdue find, logged: {found:?}");
    assert_eq!(found[0]["level"], "ERROR", "an error line: {}", found[0]);
    assert_eq!(found[0]["call_id"], call);
    assert!(
        found[0]["late_s"].as_i64().is_some_and(|late| late >= 5),
        "more than 5 s late: {}",
        found[0]
    );
    // And the webhook wake-up passed on (the forward function's sweeps).
    let deadline = Instant::now() + WAIT;
    while aws.webhook_wakes == 0 {
        assert!(Instant::now() < deadline, "no webhook wake-up passed on");
        aws.round().await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // --- A second wake-up finds nothing left.
    queues.timers.send(MINUTE_WAKE, 0).await;
    let taken = aws.taken.len();
    let wakes = aws.webhook_wakes;
    let deadline = Instant::now() + WAIT;
    while aws.webhook_wakes == wakes && aws.taken.len() == taken {
        assert!(
            Instant::now() < deadline,
            "the second wake-up was not taken"
        );
        aws.round().await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    aws.run_for(Duration::from_secs(1)).await;
    assert_eq!(
        aws.alarm.log_entries(OVERDUE).len(),
        1,
        "nothing more overdue at the second wake-up"
    );
    assert_eq!(level(server, visitor, call).await, 1);
}
