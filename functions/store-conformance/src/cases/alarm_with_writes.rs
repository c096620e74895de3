//! An alarm's first step written with the open, and its quiet end with the
//! close (`Store::open_call_with_alarm`, `Store::close_calls`): a store
//! that declares it ([`Harness::alarms_with_writes`]) writes both in the
//! same atomic step as the call; one that does not writes the pending
//! alarm and leaves the end to a look. Either way the call returned says
//! which alarm was written, and nothing half of it is kept.

use nurse_call_core::{
    AddressSnapshot, Call, DueAlarm, ElementPolicy, ElementWrite, FirstAlarm, NewCall, OpenOutcome,
    Scope,
    alarm::{Alarm, AlarmStatus, quiet_end},
};

use crate::Harness;
use crate::alarm_support::*;
use crate::support::*;

/// Opens `call` with `first` as its alarm.
async fn open_with(harness: &Harness, scope: &Scope, call: &NewCall, first: &FirstAlarm) -> Call {
    let change = no_change(&call.address, call.opened_at);
    let element = ElementWrite::new(
        scope,
        &change,
        ElementPolicy::CreateMissing,
        &AddressSnapshot::default(),
    );
    match harness
        .store
        .open_call_with_alarm(call, &AddressSnapshot::default(), &element, first)
        .await
        .unwrap_or_else(|e| panic!("open_call_with_alarm({}) failed: {e}", call.address))
    {
        OpenOutcome::Opened(opened) => opened,
        other => panic!("a first open must be Opened, got {other:?}"),
    }
}

/// Nobody reachable: level 1 of 2 started, unattended, looked at again at
/// `t(30)`; nobody's alert rings.
fn unattended_at(at: i64) -> FirstAlarm {
    let mut alarm = Alarm::pending(t(at));
    alarm.status = AlarmStatus::Unattended;
    alarm.level = 2;
    alarm.levels = 2;
    alarm.level_started_at = vec![t(at), t(at)];
    alarm.was_unattended = true;
    alarm.next_at = Some(t(at + 30));
    alarm.changes = 1;
    FirstAlarm {
        alarm,
        audit: vec![
            line("escalated", 2, None, t(at)),
            line("unattended", 0, None, t(at)),
        ],
    }
}

/// The open writes the first step with the call (the alarm, version 0,
/// its audit, the due index at its `next_at`), or, in a store that does
/// not, the pending alarm and nothing of the step.
pub async fn open_call_with_alarm_writes_the_step_or_the_pending_alarm(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let anna = staff(1, &scope, "Anna", &[]);
    let first = FirstAlarm {
        alarm: alerting(1, &anna, t(0), Some(t(30))),
        audit: vec![line("alert", 1, Some(&anna), t(0))],
    };
    let opened = open_with(&harness, &scope, &new_call("W-1", "Notruf", t(0)), &first).await;
    let kept = kept(store, &scope, opened.id).await;
    assert_eq!(kept.version, 0, "the open writes version 0");
    assert_eq!(
        kept.call, opened,
        "the call returned is the call kept, its alarm with it"
    );
    let written = if harness.alarms_with_writes {
        first.clone()
    } else {
        FirstAlarm::pending(t(0))
    };
    assert_eq!(
        (opened.alarm.as_ref(), &kept.alarm),
        (Some(&written.alarm), &written.alarm),
        "alarms_with_writes = {}: the alarm written",
        harness.alarms_with_writes
    );
    assert_eq!(audit(store, &scope, opened.id).await, written.audit);
    let due_at = written.alarm.next_at.expect("due");
    assert_eq!(
        due(store, due_at, ALL).await,
        [DueAlarm {
            scope: scope.clone(),
            call_id: opened.id,
            next_at: due_at,
        }],
        "in the due index at its next_at"
    );
    if harness.alarms_with_writes {
        assert!(due(store, t(29), ALL).await.is_empty(), "not before");
    }
}

/// A close ends an alarm that rings for nobody in its own write (the end
/// the engine's look would write, audit included, out of the due index)
/// where the store declares it, and never one whose alert still rings.
pub async fn close_ends_an_alarm_that_rings_for_nobody(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let quiet = open_with(
        &harness,
        &scope,
        &new_call("W-2", "Notruf", t(0)),
        &unattended_at(0),
    )
    .await;
    let prior = kept(store, &scope, quiet.id).await;

    let closed = close(store, &scope, "W-2", &[&quiet], t(10)).await;
    let kept_after = kept(store, &scope, quiet.id).await;
    assert_eq!(closed.len(), 1);
    assert_eq!(
        closed[0], kept_after.call,
        "the call returned is the call kept"
    );
    if harness.alarms_with_writes {
        let end = quiet_end(&prior.alarm, &kept_after.call, t(10)).expect("a quiet end");
        assert_eq!(kept_after.alarm.status, AlarmStatus::Ended);
        assert_eq!(kept_after.alarm, end.alarm, "the engine's end");
        assert_eq!(kept_after.version, prior.version + 1);
        let lines = audit(store, &scope, quiet.id).await;
        assert_eq!(
            lines.iter().map(|l| l.kind.as_str()).collect::<Vec<_>>(),
            ["escalated", "unattended", "ended"],
            "the end's audit line after the open's"
        );
        assert!(
            !due_ids(store, t(1_000_000)).await.contains(&quiet.id),
            "an ended alarm is due never again"
        );
    } else {
        assert_eq!(
            (kept_after.version, &kept_after.alarm),
            (prior.version, &prior.alarm)
        );
    }

    // Anna's alert rings: the close leaves the alarm to a look, which
    // sends her the cancel.
    let anna = staff(1, &scope, "Anna", &[]);
    let ringing = FirstAlarm {
        alarm: alerting(1, &anna, t(0), Some(t(30))),
        audit: vec![line("alert", 1, Some(&anna), t(0))],
    };
    let call = open_with(&harness, &scope, &new_call("W-3", "Notruf", t(0)), &ringing).await;
    let before = kept(store, &scope, call.id).await;
    let closed = close(store, &scope, "W-3", &[&call], t(10)).await;
    let after = kept(store, &scope, call.id).await;
    assert_eq!(
        (after.version, &after.alarm),
        (before.version, &before.alarm),
        "a ringing alarm is not ended by the close"
    );
    assert_eq!(closed[0].alarm, before.call.alarm);
    assert_ne!(
        closed[0].alarm.as_ref().map(|a| a.status),
        Some(AlarmStatus::Ended),
        "returned not ended: the caller looks"
    );
}
