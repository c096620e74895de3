//! The outbox (DECISIONS §16 "Durable"): the events of an alarm write and
//! of a close kept with the write itself, none of a write that did not
//! land, in the order written, until finished. The embedded store keeps
//! events only while an endpoint is enabled, so each case creates one.

use std::sync::Arc;

use tokio::sync::Barrier;

use nurse_call_core::{
    AlarmWrite, Attempt, AttemptEnd, Call, Scope,
    alarm::{Alarm, Staff, StaffRef},
    clock,
    webhooks::{
        EventType,
        outbox::{CallFacts, OutboxEvent, events_of_write},
    },
};

use crate::Harness;
use crate::alarm_support::*;
use crate::support::*;
use crate::webhook_support::*;

/// An alarm write alerting two people keeps one `call.alert` naming both,
/// with the call and the alarm as written; the `read` line makes none. A
/// sandbox visitor's write keeps nothing (their calls never leave).
pub async fn outbox_keeps_the_events_of_an_alarm_write(harness: Harness) {
    let (store, hooks) = (harness.store.as_ref(), webhooks(&harness));
    an_endpoint_wants_events(hooks.as_ref()).await;
    let scope = Scope::installation();
    let (anna, ben) = (
        staff(1, &scope, "Anna", &[]),
        staff(2, &scope, "Ben", &["Leitung"]),
    );
    let call = open(store, &scope, &new_call("W-1", "Notruf", t(0))).await;
    assert!(
        outbox(hooks.as_ref()).await.is_empty(),
        "an open keeps no event"
    );
    let read = kept(store, &scope, call.id).await;
    let alarm = alerting(1, &anna, t(1), Some(t(31)));
    let lines = [
        line("alert", 1, Some(&anna), t(1)),
        line("alert", 1, Some(&ben), t(1)),
        line("read", 0, Some(&anna), t(1)),
    ];
    assert_eq!(
        write(store, &read, &alarm, &lines).await,
        AlarmWrite::Written
    );

    let kept_events = outbox(hooks.as_ref()).await;
    assert_eq!(kept_events.len(), 1, "one call.alert: {kept_events:#?}");
    let event = &kept_events[0];
    assert_eq!(event.kind, EventType::CallAlert);
    assert_eq!(event.scope, scope);
    assert_eq!(event.call_id, Some(call.id));
    assert_eq!(event.section.as_deref(), Some("Station 1"));
    assert_eq!(event.at, t(1));
    assert_eq!(event.facts.level, Some(1));
    assert_eq!(
        event.facts.staff,
        [staff_ref(&anna), staff_ref(&ben)],
        "both people alerted, in the order of the lines"
    );
    let written = Call {
        alarm: Some(alarm.clone()),
        ..read.call.clone()
    };
    assert_eq!(
        event.facts.call,
        Some(CallFacts::of(&written)),
        "the call with the alarm as written"
    );
    assert!(event.id.starts_with("msg_"), "the id events_of_write gave");
    let expected: Vec<OutboxEvent> = events_of_write(&scope, &written, &lines, clock::new_event_id)
        .iter()
        .map(without_id)
        .collect();
    assert_eq!(
        kept_events.iter().map(without_id).collect::<Vec<_>>(),
        expected
    );

    let visitor = sandbox("0badc0de-0000-4000-8000-0000000000aa");
    let theirs = open(store, &visitor, &new_call("W-1", "Notruf", t(0))).await;
    let their_read = kept(store, &visitor, theirs.id).await;
    let carla = staff(3, &visitor, "Carla", &[]);
    assert_eq!(
        write(
            store,
            &their_read,
            &alerting(1, &carla, t(2), None),
            &[line("alert", 1, Some(&carla), t(2))]
        )
        .await,
        AlarmWrite::Written
    );
    assert_eq!(
        outbox(hooks.as_ref()).await,
        kept_events,
        "a sandbox visitor's alarm keeps no event"
    );
}

/// A close keeps `call.closed` for a call whose alarm was stepped (with the
/// call closed and its alarm), none for a call never stepped.
pub async fn outbox_keeps_the_call_closed_of_a_close(harness: Harness) {
    let (store, hooks) = (harness.store.as_ref(), webhooks(&harness));
    an_endpoint_wants_events(hooks.as_ref()).await;
    let scope = Scope::installation();
    let anna = staff(1, &scope, "Anna", &[]);
    let call = open(store, &scope, &new_call("W-1", "Notruf", t(0))).await;
    let read = kept(store, &scope, call.id).await;
    // Anna's alert rings: the close leaves the alarm for a look to end.
    let alarm = alerting(1, &anna, t(1), Some(t(31)));
    let lines = [line("alert", 1, Some(&anna), t(1))];
    assert_eq!(
        write(store, &read, &alarm, &lines).await,
        AlarmWrite::Written
    );
    let stepped = kept(store, &scope, call.id).await.call;
    let closed_calls = close(store, &scope, "W-1", &[&stepped], t(50)).await;
    assert_eq!(ids(&closed_calls), [call.id]);

    let events = outbox(hooks.as_ref()).await;
    assert_eq!(
        kinds(&events),
        [
            (EventType::CallAlert, Some(call.id)),
            (EventType::CallClosed, Some(call.id))
        ],
        "the write's call.alert, then the close's call.closed"
    );
    let closed_event = &events[1];
    assert_eq!(closed_event.at, t(50), "dated the close");
    assert_eq!(closed_event.scope, scope);
    assert_eq!(closed_event.section.as_deref(), Some("Station 1"));
    let closed_call = closed_event.facts.call.as_ref().expect("the call");
    assert_eq!(closed_call.closed_at, Some(t(50)));
    assert_eq!(closed_call.alarm.as_ref(), Some(&alarm));
    assert!(closed_event.facts.staff.is_empty() && closed_event.facts.level.is_none());

    // A call closed before its alarm's first step was never sent anywhere.
    let quiet = open(store, &scope, &new_call("W-2", "Notruf", t(60))).await;
    assert_eq!(close(store, &scope, "W-2", &[&quiet], t(61)).await.len(), 1);
    assert_eq!(
        outbox(hooks.as_ref()).await,
        events,
        "no call.closed of a call whose alarm was never stepped"
    );
}

/// A write at a version no longer kept (`Conflict`) keeps no event.
pub async fn a_conflicting_alarm_write_keeps_no_event(harness: Harness) {
    let (store, hooks) = (harness.store.as_ref(), webhooks(&harness));
    an_endpoint_wants_events(hooks.as_ref()).await;
    let scope = Scope::installation();
    let (anna, ben) = (staff(1, &scope, "Anna", &[]), staff(2, &scope, "Ben", &[]));
    let call = open(store, &scope, &new_call("W-1", "Notruf", t(0))).await;
    let stale = kept(store, &scope, call.id).await;
    let alarm = alerting(1, &anna, t(1), Some(t(31)));
    assert_eq!(
        write(
            store,
            &stale,
            &alarm,
            &[line("alert", 1, Some(&anna), t(1))]
        )
        .await,
        AlarmWrite::Written
    );
    let before = outbox(hooks.as_ref()).await;
    assert_eq!(before.len(), 1);

    let late = [
        line("accepted", 0, Some(&ben), t(2)),
        line("cancel", 1, Some(&anna), t(2)),
    ];
    assert_eq!(
        write(store, &stale, &accepted(&alarm, &ben, t(2)), &late).await,
        AlarmWrite::Conflict
    );
    assert_eq!(
        outbox(hooks.as_ref()).await,
        before,
        "a conflicting write keeps no event"
    );
}

/// Events come back in the order written: across calls by write, whatever
/// the times they tell of, and the events of one write (which share its
/// time) in the order the write's lines gave them. `outbox(limit)` gives
/// the first `limit`.
pub async fn outbox_events_come_back_in_write_order(harness: Harness) {
    let (store, hooks) = (harness.store.as_ref(), webhooks(&harness));
    an_endpoint_wants_events(hooks.as_ref()).await;
    let scope = Scope::installation();
    let (anna, ben) = (staff(1, &scope, "Anna", &[]), staff(2, &scope, "Ben", &[]));
    let a = open(store, &scope, &new_call("W-1", "Notruf", t(0))).await;
    let b = open(store, &scope, &new_call("W-2", "WC", t(0))).await;

    let a_alert = alerting(1, &anna, t(10), Some(t(40)));
    write_or_panic(
        store,
        &scope,
        &a,
        &a_alert,
        &[line("alert", 1, Some(&anna), t(10))],
    )
    .await;
    // Written later, telling of an earlier time.
    let b_level_2 = alerting(2, &ben, t(5), Some(t(65)));
    write_or_panic(
        store,
        &scope,
        &b,
        &b_level_2,
        &[
            line("escalated", 2, None, t(5)),
            line("alert", 2, Some(&ben), t(5)),
            line("cancel", 1, Some(&anna), t(5)),
        ],
    )
    .await;
    write_or_panic(
        store,
        &scope,
        &a,
        &accepted(&a_alert, &anna, t(20)),
        &[
            line("accepted", 0, Some(&anna), t(20)),
            line("cancel", 1, Some(&ben), t(20)),
        ],
    )
    .await;
    let b_now = kept(store, &scope, b.id).await.call;
    close(store, &scope, "W-2", &[&b_now], t(30)).await;

    let expected = [
        (EventType::CallAlert, Some(a.id)),
        (EventType::CallEscalated, Some(b.id)),
        (EventType::CallAlert, Some(b.id)),
        (EventType::CallCancelled, Some(b.id)),
        (EventType::CallAccepted, Some(a.id)),
        (EventType::CallCancelled, Some(a.id)),
        (EventType::CallClosed, Some(b.id)),
    ];
    let events = outbox(hooks.as_ref()).await;
    assert_eq!(kinds(&events), expected, "in write order: {events:#?}");
    let first_three = hooks.outbox(3).await.expect("outbox(3)");
    assert_eq!(first_three, events[..3], "outbox(3): the first three");
    assert!(hooks.outbox(0).await.expect("outbox(0)").is_empty());
}

/// `finish_events` takes exactly the events at the given positions out; a
/// position not (or no longer) there is no error.
pub async fn finish_events_takes_events_out(harness: Harness) {
    let (store, hooks) = (harness.store.as_ref(), webhooks(&harness));
    let (scope, call, alarm) = a_call_alerting_anna(&harness).await;
    let (anna, ben) = (staff(1, &scope, "Anna", &[]), staff(2, &scope, "Ben", &[]));
    write_or_panic(
        store,
        &scope,
        &call,
        &accepted(&alarm, &ben, t(2)),
        &[
            line("accepted", 0, Some(&ben), t(2)),
            line("cancel", 1, Some(&anna), t(2)),
        ],
    )
    .await;
    let events = outbox(hooks.as_ref()).await;
    assert_eq!(events.len(), 3, "alert, accepted, cancelled: {events:#?}");

    hooks.finish_events(&[]).await.expect("finishing nothing");
    hooks
        .finish_events(&[events[1].position.clone(), "never-kept".to_string()])
        .await
        .expect("finish_events");
    assert_eq!(
        outbox(hooks.as_ref()).await,
        [events[0].clone(), events[2].clone()],
        "only the finished event left"
    );
    hooks
        .finish_events(&positions(&events))
        .await
        .expect("finishing them all, one of them again");
    assert!(outbox(hooks.as_ref()).await.is_empty());
}

/// Two workers write the alarm they stepped from the same version, 20
/// times: the outbox has exactly the winner's `call.alert` of each round.
pub async fn concurrent_alarm_writes_keep_only_the_winners_events(harness: Harness) {
    const ROUNDS: usize = 20;
    let (store, hooks) = (Arc::clone(&harness.store), webhooks(&harness));
    an_endpoint_wants_events(hooks.as_ref()).await;
    let scope = Scope::installation();
    let people: Vec<Staff> = (1..=2)
        .map(|n| staff(n, &scope, &format!("Person {n}"), &[]))
        .collect();
    let call = open(store.as_ref(), &scope, &new_call("W-1", "Notruf", t(0))).await;
    let mut winners: Vec<StaffRef> = Vec::new();
    for round in 0..ROUNDS {
        let read = kept(store.as_ref(), &scope, call.id).await;
        let at = t(round as i64 + 1);
        let barrier = Arc::new(Barrier::new(people.len()));
        let handles: Vec<_> = people
            .iter()
            .map(|person| {
                let (store, barrier, read) =
                    (Arc::clone(&store), Arc::clone(&barrier), read.clone());
                let alarm = alerting(1, person, at, None);
                let lines = vec![line("alert", 1, Some(person), at)];
                let who = staff_ref(person);
                tokio::spawn(async move {
                    barrier.wait().await;
                    let outcome = store
                        .write_alarm(&read, &alarm, &lines)
                        .await
                        .unwrap_or_else(|e| panic!("write_alarm failed: {e}"));
                    (outcome, who)
                })
            })
            .collect();
        let mut won = Vec::new();
        for handle in handles {
            let (outcome, who) = handle.await.expect("a racing writer panicked");
            if outcome == AlarmWrite::Written {
                won.push(who);
            }
        }
        assert_eq!(won.len(), 1, "round {round}: exactly one write lands");
        winners.extend(won);
    }
    let events = outbox(hooks.as_ref()).await;
    assert_eq!(
        events
            .iter()
            .map(|e| (e.kind, e.facts.staff.clone()))
            .collect::<Vec<_>>(),
        winners
            .into_iter()
            .map(|who| (EventType::CallAlert, vec![who]))
            .collect::<Vec<_>>(),
        "one call.alert per round, the winner's, in the rounds' order"
    );
}

/// Reads the call's alarm and writes `alarm` with `lines` over it.
async fn write_or_panic(
    store: &dyn nurse_call_core::Backend,
    scope: &Scope,
    call: &Call,
    alarm: &nurse_call_core::alarm::Alarm,
    lines: &[nurse_call_core::alarm::AuditEvent],
) {
    let read = kept(store, scope, call.id).await;
    assert_eq!(
        write(store, &read, alarm, lines).await,
        AlarmWrite::Written,
        "writing the alarm of call {}",
        call.id
    );
}

/// `log_and_finish` (the dispatcher's write of a round) logs the attempts
/// and takes the finished events out; nothing at all is no error; a round
/// larger than a store's jobs is written whole, and writing it again (as
/// the dispatcher does after a failure part way) changes nothing.
pub async fn log_and_finish_logs_then_takes_events_out(harness: Harness) {
    let hooks = webhooks(&harness);
    a_call_alerting_anna(&harness).await;
    let events = outbox(hooks.as_ref()).await;
    assert_eq!(events.len(), 1, "the alert: {events:#?}");
    let delivered = attempt(
        &events[0].id,
        "endpoint-a",
        1,
        t(2),
        Some(200),
        AttemptEnd::Delivered,
    );

    hooks
        .log_and_finish(&[], &[])
        .await
        .expect("writing nothing");
    hooks
        .log_and_finish(std::slice::from_ref(&delivered), &positions(&events))
        .await
        .expect("log_and_finish");
    assert!(outbox(hooks.as_ref()).await.is_empty(), "finished");
    assert_eq!(
        hooks
            .attempts_of(&event_ids(&events))
            .await
            .expect("attempts_of"),
        std::slice::from_ref(&delivered),
        "its attempt logged"
    );

    // A large round: 20 attempts at another endpoint, 25 events finished
    // (those already gone change nothing), written twice.
    let retried: Vec<Attempt> = (1..=20)
        .map(|number| {
            attempt(
                &events[0].id,
                "endpoint-b",
                number,
                t(2 + i64::from(number)),
                Some(503),
                AttemptEnd::RetryAt(t(3 + i64::from(number))),
            )
        })
        .collect();
    let mut finished = positions(&events);
    finished.extend((0..24).map(|i| format!("gone-{i}")));
    for _ in 0..2 {
        hooks
            .log_and_finish(&retried, &finished)
            .await
            .expect("a large round");
    }
    let mut logged = hooks
        .attempts_of(&event_ids(&events))
        .await
        .expect("attempts_of");
    logged.sort_by_key(|a| (a.endpoint_id.clone(), a.number));
    let mut expected = vec![delivered];
    expected.extend(retried);
    assert_eq!(logged, expected, "every attempt logged once");
    assert!(outbox(hooks.as_ref()).await.is_empty(), "still finished");
}

/// With an endpoint that wants every event: a Notruf (`W-1`) of the
/// installation whose level 1 alerts Anna (one `call.alert` in the outbox);
/// its scope, the call and the alarm written.
async fn a_call_alerting_anna(harness: &Harness) -> (Scope, Call, Alarm) {
    let (store, hooks) = (harness.store.as_ref(), webhooks(harness));
    an_endpoint_wants_events(hooks.as_ref()).await;
    let scope = Scope::installation();
    let anna = staff(1, &scope, "Anna", &[]);
    let call = open(store, &scope, &new_call("W-1", "Notruf", t(0))).await;
    let alarm = alerting(1, &anna, t(1), Some(t(31)));
    write_or_panic(
        store,
        &scope,
        &call,
        &alarm,
        &[line("alert", 1, Some(&anna), t(1))],
    )
    .await;
    (scope, call, alarm)
}
