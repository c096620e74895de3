//! Each call's alarm (DECISIONS §14): stored pending with the open, written
//! only at the version read, its audit appended in the same write, listed
//! in the due index by `next_at`, and carried by every read of calls.

use chrono::Duration;

use nurse_call_core::{
    AddressSnapshot, AlarmWrite, DueAlarm, ElementWrite, KeptAlarm, OpenOutcome, Scope,
    alarm::{Alarm, AlarmStatus},
};

use crate::Harness;
use crate::alarm_support::*;
use crate::support::*;

/// A new call's alarm is [`Alarm::pending`] at its opening, version 0, due
/// at once, with no audit; the open answers the call with it, and an open
/// of the same event again answers the same.
pub async fn open_call_keeps_a_pending_alarm_due_at_once(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let opened = open(store, &scope, &new_call("A-1", "Notruf", t(100))).await;
    let pending = Alarm::pending(t(100));
    assert_eq!(
        opened.alarm.as_ref(),
        Some(&pending),
        "Opened carries the pending alarm"
    );

    let kept = kept(store, &scope, opened.id).await;
    assert_eq!(
        kept,
        KeptAlarm {
            scope: scope.clone(),
            call: opened.clone(),
            alarm: pending,
            version: 0,
        },
        "alarm() of a new call: the call as opened, its pending alarm, version 0"
    );
    assert_eq!(
        due(store, t(100), ALL).await,
        [DueAlarm {
            scope: scope.clone(),
            call_id: opened.id,
            next_at: t(100),
        }],
        "a new call's alarm is due at its opening"
    );
    assert!(
        due(store, t(99), ALL).await.is_empty(),
        "not before its opening"
    );
    assert!(audit(store, &scope, opened.id).await.is_empty());
    assert_eq!(store.alarm(&scope, opened.id + 1_000).await.unwrap(), None);

    let change = no_change("A-1", t(101));
    let again = store
        .open_call(
            &new_call("A-1", "Notruf", t(101)),
            &AddressSnapshot::default(),
            &ElementWrite::new(
                &scope,
                &change,
                nurse_call_core::ElementPolicy::CreateMissing,
                &AddressSnapshot::default(),
            ),
        )
        .await
        .unwrap();
    match again {
        OpenOutcome::AlreadyOpen(existing) => assert_eq!(existing, opened),
        other => panic!("opening an open event again must answer AlreadyOpen, got {other:?}"),
    }
}

/// A write at the kept version lands: the alarm, version + 1, the call's
/// alarm, the due index, and the audit appended in order across writes.
pub async fn write_alarm_at_the_kept_version_writes_alarm_and_audit(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let anna = staff(1, &scope, "Anna", &[]);
    let call = open(store, &scope, &new_call("A-1", "Notruf", t(0))).await;
    let first = kept(store, &scope, call.id).await;

    let alerting = alerting(1, &anna, t(1), Some(t(31)));
    let first_lines = [
        line("alert", 1, Some(&anna), t(1)),
        line("read", 0, Some(&anna), t(1)),
    ];
    assert_eq!(
        write(store, &first, &alerting, &first_lines).await,
        AlarmWrite::Written
    );
    let second = kept(store, &scope, call.id).await;
    assert_eq!(second.version, 1, "one write: version 1");
    assert_eq!(second.alarm, alerting, "the alarm reads back as written");
    assert_eq!(
        second.call.alarm.as_ref(),
        Some(&alerting),
        "and on its call"
    );
    assert_eq!(
        second.call.version(),
        2,
        "a call's version grows with its alarm's changes"
    );
    assert_eq!(audit(store, &scope, call.id).await, first_lines);
    assert!(
        due(store, t(30), ALL).await.is_empty(),
        "next_at moved to t(31)"
    );
    assert_eq!(due_ids(store, t(31)).await, [call.id]);

    let done = accepted(&alerting, &anna, t(40));
    let second_lines = [line("accepted", 0, Some(&anna), t(40))];
    assert_eq!(
        write(store, &second, &done, &second_lines).await,
        AlarmWrite::Written
    );
    let third = kept(store, &scope, call.id).await;
    assert_eq!((third.version, &third.alarm), (2, &done));
    assert_eq!(
        audit(store, &scope, call.id).await,
        [first_lines.as_slice(), second_lines.as_slice()].concat(),
        "the audit keeps every line in the order written"
    );
    assert!(
        !due_ids(store, t(1_000_000)).await.contains(&call.id),
        "next_at None: out of the due index"
    );

    // A write without audit lines is a write too.
    assert_eq!(write(store, &third, &done, &[]).await, AlarmWrite::Written);
    assert_eq!(kept(store, &scope, call.id).await.version, 3);
    assert_eq!(audit(store, &scope, call.id).await.len(), 3);
}

/// A write at a version that is no longer the kept one is a conflict and
/// writes nothing: neither the alarm nor a line of audit. So is a write of
/// a call that is gone.
pub async fn write_alarm_at_a_stale_version_writes_nothing(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let anna = staff(1, &scope, "Anna", &[]);
    let ben = staff(2, &scope, "Ben", &[]);
    let call = open(store, &scope, &new_call("A-1", "Notruf", t(0))).await;
    let read_by_both = kept(store, &scope, call.id).await;
    let winner = alerting(1, &anna, t(1), Some(t(31)));
    let winner_lines = [line("alert", 1, Some(&anna), t(1))];
    assert_eq!(
        write(store, &read_by_both, &winner, &winner_lines).await,
        AlarmWrite::Written
    );

    let loser = alerting(1, &ben, t(2), Some(t(5)));
    let stale = write(
        store,
        &read_by_both,
        &loser,
        &[line("alert", 1, Some(&ben), t(2))],
    )
    .await;
    assert_eq!(
        stale,
        AlarmWrite::Conflict,
        "version 0 was written meanwhile"
    );
    let from_the_future = KeptAlarm {
        version: 7,
        ..kept(store, &scope, call.id).await
    };
    assert_eq!(
        write(store, &from_the_future, &loser, &[]).await,
        AlarmWrite::Conflict
    );
    let now_kept = kept(store, &scope, call.id).await;
    assert_eq!(
        (now_kept.version, &now_kept.alarm),
        (1, &winner),
        "the refused writes wrote nothing"
    );
    assert_eq!(
        audit(store, &scope, call.id).await,
        winner_lines,
        "nor audit"
    );
    assert!(due(store, t(30), ALL).await.is_empty(), "nor the due index");

    // Gone (erased): nothing to write.
    store.erase_address(&scope, "A-1").await.unwrap();
    assert_eq!(store.alarm(&scope, call.id).await.unwrap(), None);
    assert_eq!(
        write(
            store,
            &now_kept,
            &loser,
            &[line("alert", 1, Some(&ben), t(3))]
        )
        .await,
        AlarmWrite::Conflict,
        "a write of an erased call"
    );
    assert_eq!(
        store.alarm(&scope, call.id).await.unwrap(),
        None,
        "creates nothing"
    );
    assert!(audit(store, &scope, call.id).await.is_empty());
    assert!(due_ids(store, t(1_000_000)).await.is_empty());
}

/// `due_alarms(now, limit)`: the alarms whose `next_at` is at or before
/// `now`, of every scope, earliest first, at most `limit`; `next_at` keeps
/// its fraction of a second.
pub async fn due_alarms_are_the_earliest_first_in_every_scope(harness: Harness) {
    let store = harness.store.as_ref();
    let installation = Scope::installation();
    let visitor = sandbox("d0e0d0e0-0000-4000-8000-000000000001");
    let anna = staff(1, &installation, "Anna", &[]);
    let half = Duration::milliseconds(500);
    // (scope, address, opened, next_at written; None: left pending)
    let plan = [
        (&installation, "D-1", 0, Some(Some(t(50)))),
        (&visitor, "D-1", 1, Some(Some(t(20) + half))),
        (&installation, "D-2", 2, Some(None)),
        (&visitor, "D-2", 3, None),
        (&installation, "D-3", 4, Some(Some(t(40)))),
    ];
    let mut calls = Vec::new();
    for (scope, address, opened, next_at) in plan {
        let call = open(store, scope, &new_call(address, "WC", t(opened))).await;
        if let Some(next_at) = next_at {
            let kept = kept(store, scope, call.id).await;
            let alarm = alerting(1, &anna, t(opened), next_at);
            assert_eq!(write(store, &kept, &alarm, &[]).await, AlarmWrite::Written);
        }
        calls.push(call);
    }
    let entry = |i: usize, next_at| DueAlarm {
        scope: plan[i].0.clone(),
        call_id: calls[i].id,
        next_at,
    };

    assert_eq!(
        due(store, t(1000), ALL).await,
        [
            entry(3, t(3)),
            entry(1, t(20) + half),
            entry(4, t(40)),
            entry(0, t(50)),
        ],
        "earliest first, every scope, none without next_at"
    );
    assert_eq!(
        due(store, t(1000), 2).await,
        [entry(3, t(3)), entry(1, t(20) + half)],
        "limit"
    );
    assert_eq!(
        due(store, t(20), ALL).await,
        [entry(3, t(3))],
        "t(20) is before t(20) + 0.5 s"
    );
    assert_eq!(
        due(store, t(40), ALL).await,
        [entry(3, t(3)), entry(1, t(20) + half), entry(4, t(40))],
        "next_at at now is due"
    );
    assert!(due(store, t(2), ALL).await.is_empty());
}

/// Every read of calls carries each call's alarm as kept: the snapshot, the
/// displays' open calls, the recent calls and the report's calls; the close
/// answers closed calls with theirs.
pub async fn every_read_of_calls_carries_their_alarm(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let anna = staff(1, &scope, "Anna", &[]);
    let written = open(store, &scope, &new_call("R-1", "Notruf", t(0))).await;
    let pending = open(store, &scope, &new_call("R-1", "WC", t(1))).await;
    let kept_alarm = kept(store, &scope, written.id).await;
    let alarm = alerting(2, &anna, t(2), Some(t(60)));
    assert_eq!(
        write(store, &kept_alarm, &alarm, &[]).await,
        AlarmWrite::Written
    );
    let written = nurse_call_core::Call {
        alarm: Some(alarm.clone()),
        ..written
    };
    let both = vec![written.clone(), pending.clone()];

    assert_eq!(open_calls(store, &scope, "R-1").await, both, "snapshot");
    let mut displayed = store.open_calls(&scope).await.unwrap();
    displayed.sort_by_key(|c| c.id);
    assert_eq!(displayed, both, "open_calls (the displays' read)");
    let mut recent = all_calls(store, &scope).await;
    recent.sort_by_key(|c| c.id);
    assert_eq!(recent, both, "recent_calls");
    assert_eq!(
        store
            .calls_opened_between(&scope, t(0), t(10))
            .await
            .unwrap(),
        both,
        "calls_opened_between (the report)"
    );
    assert_eq!(written.version(), 1 + alarm.changes);

    let closed_calls = close(store, &scope, "R-1", &[&written, &pending], t(5)).await;
    let closed_written = closed(&written, t(5));
    let closed_pending = closed(&pending, t(5));
    assert_eq!(closed_written.alarm, Some(alarm), "a close keeps the alarm");
    let mut sorted_closed = closed_calls;
    sorted_closed.sort_by_key(|c| c.id);
    assert_eq!(
        sorted_closed,
        [closed_written.clone(), closed_pending.clone()],
        "close_calls answers the closed calls with their alarms"
    );
    let mut recent = all_calls(store, &scope).await;
    recent.sort_by_key(|c| c.id);
    assert_eq!(recent, [closed_written.clone(), closed_pending.clone()]);
    assert_eq!(
        store
            .calls_opened_between(&scope, t(0), t(10))
            .await
            .unwrap(),
        [closed_written, closed_pending]
    );
}

/// A closed call's alarm stays readable (the report needs it) and can still
/// be written (the engine ends it), in the order of its versions.
pub async fn a_closed_calls_alarm_stays_readable_and_writable(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let anna = staff(1, &scope, "Anna", &[]);
    let call = open(store, &scope, &new_call("C-1", "Notruf", t(0))).await;
    let first = kept(store, &scope, call.id).await;
    let alarm = alerting(1, &anna, t(1), Some(t(31)));
    assert_eq!(
        write(
            store,
            &first,
            &alarm,
            &[line("alert", 1, Some(&anna), t(1))]
        )
        .await,
        AlarmWrite::Written
    );
    close(store, &scope, "C-1", &[&call], t(10)).await;

    let after_close = kept(store, &scope, call.id).await;
    assert_eq!(
        after_close.call.closed_at,
        Some(t(10)),
        "the call as kept: closed"
    );
    assert_eq!(
        (after_close.version, &after_close.alarm),
        (1, &alarm),
        "the close leaves the alarm to the engine"
    );
    let mut ended = alarm.clone();
    ended.status = AlarmStatus::Ended;
    ended.next_at = None;
    ended.next_level_at = None;
    ended.recipients[0].ringing = false;
    ended.changes += 1;
    let lines = [
        line("cancel", 0, Some(&anna), t(10)),
        line("ended", 0, None, t(10)),
    ];
    assert_eq!(
        write(store, &after_close, &ended, &lines).await,
        AlarmWrite::Written
    );
    let kept_ended = kept(store, &scope, call.id).await;
    assert_eq!((kept_ended.version, &kept_ended.alarm), (2, &ended));
    assert_eq!(kept_ended.call.version(), 1 + ended.changes + 1);
    assert_eq!(audit(store, &scope, call.id).await.len(), 3);
    assert!(due_ids(store, t(1_000_000)).await.is_empty());
}

/// Another scope cannot read, audit or write a call's alarm.
pub async fn alarms_are_scoped(harness: Harness) {
    let store = harness.store.as_ref();
    let a = sandbox("a1a1a1a1-0000-4000-8000-00000000000a");
    let b = sandbox("b1b1b1b1-0000-4000-8000-00000000000b");
    let anna = staff(1, &a, "Anna", &[]);
    let call = open(store, &a, &new_call("S-1", "Notruf", t(0))).await;
    let kept_a = kept(store, &a, call.id).await;
    let alarm = alerting(1, &anna, t(1), Some(t(31)));
    let lines = [line("alert", 1, Some(&anna), t(1))];
    assert_eq!(
        write(store, &kept_a, &alarm, &lines).await,
        AlarmWrite::Written
    );

    assert_eq!(store.alarm(&b, call.id).await.unwrap(), None);
    assert!(audit(store, &b, call.id).await.is_empty());
    let forged = KeptAlarm {
        scope: b.clone(),
        ..kept(store, &a, call.id).await
    };
    assert_eq!(
        write(store, &forged, &Alarm::pending(t(0)), &lines).await,
        AlarmWrite::Conflict,
        "a write in another scope finds no alarm"
    );
    let still = kept(store, &a, call.id).await;
    assert_eq!((still.version, &still.alarm), (1, &alarm));
    assert_eq!(audit(store, &a, call.id).await, lines);
}
