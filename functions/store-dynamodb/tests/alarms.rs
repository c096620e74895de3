//! Alarms on DynamoDB (moto_server): the pending alarm of an open, the
//! conditional write (one winner, a close racing with it), the due index,
//! the audit, and every read of calls carrying the alarm.

mod alarm_support;

use std::sync::Arc;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{Duration, SubsecRound};

use nurse_call_core::{
    AdminStore, AlarmStore, AlarmWrite, DueAlarm, SandboxStore, Scope, Store,
    alarm::{Alarm, AlarmStatus},
};

use alarm_support::{at, close, duty, open, person, step_at, store};

#[tokio::test(flavor = "multi_thread")]
async fn an_open_stores_the_pending_alarm_due_at_once_on_every_copy_of_the_call() {
    let store = store().await;
    let scope = Scope::installation();
    let call = open(&store, &scope, "Zimmer.1", at(0)).await;
    assert_eq!(call.alarm, Some(Alarm::pending(at(0))), "the call opened");

    let kept = store.alarm(&scope, call.id).await.unwrap().expect("kept");
    assert_eq!(kept.version, 0);
    assert_eq!(kept.alarm, Alarm::pending(at(0)));
    assert_eq!(kept.call.id, call.id);
    assert_eq!(kept.call.alarm, Some(Alarm::pending(at(0))));

    assert_eq!(
        store.due_alarms(at(0), 10).await.unwrap(),
        [DueAlarm {
            scope: scope.clone(),
            call_id: call.id,
            next_at: at(0)
        }]
    );
    assert!(
        store
            .due_alarms(at(0) - Duration::milliseconds(1), 10)
            .await
            .unwrap()
            .is_empty(),
        "not due before its time"
    );
    let open_calls = store.open_calls(&scope).await.unwrap();
    assert_eq!(open_calls[0].alarm, Some(Alarm::pending(at(0))));
    let snapshot = store.snapshot(&scope, "Zimmer.1").await.unwrap();
    assert_eq!(snapshot.open_calls[0].alarm, Some(Alarm::pending(at(0))));
    assert!(
        store
            .alarm(&Scope::consumer("someone-else"), call.id)
            .await
            .unwrap()
            .is_none(),
        "another scope's call is none of this one's"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_lands_once_per_version_and_every_read_of_calls_shows_it() {
    let store = store().await;
    let scope = Scope::installation();
    let anna = person("anna", "Anna", &scope);
    let on_duty = [duty(&anna, &["S1"], at(3600))];
    let call = open(&store, &scope, "Zimmer.1", at(0)).await;
    let kept = store.alarm(&scope, call.id).await.unwrap().unwrap();

    let (stepped, audit) = step_at(&kept, std::slice::from_ref(&anna), &on_duty, at(1));
    assert_eq!(stepped.alarm.status, AlarmStatus::Alerting);
    assert_eq!(
        store
            .write_alarm(&kept, &stepped.alarm, &audit)
            .await
            .unwrap(),
        AlarmWrite::Written
    );
    // The same version again: somebody else's write came first.
    assert_eq!(
        store
            .write_alarm(&kept, &stepped.alarm, &audit)
            .await
            .unwrap(),
        AlarmWrite::Conflict
    );

    let now = store.alarm(&scope, call.id).await.unwrap().unwrap();
    assert_eq!(now.version, 1);
    assert_eq!(now.alarm, stepped.alarm);
    let shown = Some(stepped.alarm.clone());
    assert_eq!(store.open_calls(&scope).await.unwrap()[0].alarm, shown);
    assert_eq!(
        store.snapshot(&scope, "Zimmer.1").await.unwrap().open_calls[0].alarm,
        shown
    );
    assert_eq!(store.open_calls(&scope).await.unwrap()[0].version(), 2);

    // The due index follows next_at (the re-alert 15 s after the alert).
    let next_at = stepped.alarm.next_at.expect("a re-alert is due");
    assert_eq!(next_at, at(16));
    assert!(store.due_alarms(at(15), 10).await.unwrap().is_empty());
    assert_eq!(
        store.due_alarms(at(16), 10).await.unwrap()[0].next_at,
        next_at
    );

    assert_eq!(store.alarm_audit(&scope, call.id).await.unwrap(), audit);
    assert!(audit.iter().any(|e| e.kind == "alert"), "{audit:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_concurrent_writes_of_one_version_one_wins() {
    let store = Arc::new(store().await);
    let scope = Scope::installation();
    let call = open(&store, &scope, "Zimmer.1", at(0)).await;
    let kept = store.alarm(&scope, call.id).await.unwrap().unwrap();
    let mut writers = Vec::new();
    for n in 0..8 {
        let (store, kept) = (store.clone(), kept.clone());
        writers.push(tokio::spawn(async move {
            let mut alarm = kept.alarm.clone();
            alarm.changes = 1;
            alarm.level = n + 1;
            store.write_alarm(&kept, &alarm, &[]).await.unwrap()
        }));
    }
    let mut results = Vec::new();
    for writer in writers {
        results.push(writer.await.unwrap());
    }
    let written = results
        .iter()
        .filter(|r| **r == AlarmWrite::Written)
        .count();
    assert_eq!(written, 1, "{results:?}");
    let kept = store.alarm(&scope, call.id).await.unwrap().unwrap();
    assert_eq!(kept.version, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_close_between_read_and_write_is_a_conflict_then_the_record_alone_is_written() {
    let store = store().await;
    let scope = Scope::installation();
    let call = open(&store, &scope, "Zimmer.1", at(0)).await;
    let kept = store.alarm(&scope, call.id).await.unwrap().unwrap();
    let closed = close(&store, &scope, "Zimmer.1", at(5)).await;
    assert_eq!(closed.len(), 1);

    let mut ended = kept.alarm.clone();
    ended.status = AlarmStatus::Ended;
    ended.next_at = None;
    ended.changes = 1;
    assert_eq!(
        store.write_alarm(&kept, &ended, &[]).await.unwrap(),
        AlarmWrite::Conflict,
        "the lock and index entry are gone"
    );
    let kept = store.alarm(&scope, call.id).await.unwrap().unwrap();
    assert_eq!(kept.call.closed_at, Some(at(5).trunc_subsecs(0)));
    assert_eq!(
        store.write_alarm(&kept, &ended, &[]).await.unwrap(),
        AlarmWrite::Written
    );
    assert_eq!(
        store.alarm(&scope, call.id).await.unwrap().unwrap().alarm,
        ended
    );
    assert!(store.open_calls(&scope).await.unwrap().is_empty());
    assert!(
        store.due_alarms(at(100), 10).await.unwrap().is_empty(),
        "out of the due index"
    );
    // The report's and the test page's reads carry it.
    let listed = store
        .calls_opened_between(&scope, at(-10), at(10))
        .await
        .unwrap();
    assert_eq!(listed[0].alarm, Some(ended.clone()));
    assert_eq!(listed[0].version(), 3, "1 + one change + closed");
    let recent = store.recent_calls(&scope, 5).await.unwrap();
    assert_eq!(recent[0].alarm, Some(ended));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_close_after_an_unseen_alarm_write_reads_again_and_returns_the_newer_alarm() {
    let store = store().await;
    let scope = Scope::installation();
    let call = open(&store, &scope, "Zimmer.1", at(0)).await;
    let stale = store.snapshot(&scope, "Zimmer.1").await.unwrap();
    let kept = store.alarm(&scope, call.id).await.unwrap().unwrap();
    let mut escalated = kept.alarm.clone();
    escalated.level = 1;
    escalated.levels = 3;
    escalated.changes = 1;
    assert_eq!(
        store.write_alarm(&kept, &escalated, &[]).await.unwrap(),
        AlarmWrite::Written
    );
    // The close works on the snapshot read before the write.
    let change = nurse_call_core::ElementChange {
        address: "Zimmer.1".into(),
        battery: None,
        position: None,
        reachable: None,
        at: at(5),
    };
    let element = nurse_call_core::ElementWrite::new(
        &scope,
        &change,
        nurse_call_core::ElementPolicy::CreateMissing,
        &stale,
    );
    let closed = match store
        .close_calls(&stale, at(5), None, &element)
        .await
        .unwrap()
    {
        nurse_call_core::CloseOutcome::Closed(calls) => calls,
        other => panic!("{other:?}"),
    };
    assert_eq!(closed.len(), 1);
    assert_eq!(closed[0].alarm, Some(escalated));
    assert_eq!(closed[0].version(), 3, "above the escalation's 2");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_due_index_lists_every_scope_earliest_first_up_to_the_limit() {
    let store = store().await;
    let sandbox = Scope::consumer("0b6d2c1e-3f4a-4b5c-8d6e-7f8091a2b3c4");
    let first = open(&store, &sandbox, "Flur#2", at(2)).await;
    let second = open(&store, &Scope::installation(), "Zimmer.1", at(1)).await;
    let third = open(&store, &Scope::installation(), "Zimmer.2", at(3)).await;
    let due = store.due_alarms(at(10), 10).await.unwrap();
    let ids: Vec<i64> = due.iter().map(|d| d.call_id).collect();
    assert_eq!(ids, [second.id, first.id, third.id]);
    assert_eq!(due[1].scope, sandbox);
    assert_eq!(store.due_alarms(at(10), 2).await.unwrap().len(), 2);
    assert!(store.due_alarms(at(10), 0).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_audit_grows_in_write_order_and_goes_with_the_call() {
    let store = store().await;
    let scope = Scope::installation();
    let people: Vec<_> = (0..250)
        .map(|n| person(&format!("p{n:03}"), &format!("Person {n}"), &scope))
        .collect();
    let duties: Vec<_> = people.iter().map(|p| duty(p, &[], at(3600))).collect();
    let call = open(&store, &scope, "Zimmer.1", at(0)).await;
    let mut expected = Vec::new();
    for now in [at(1), at(17)] {
        let kept = store.alarm(&scope, call.id).await.unwrap().unwrap();
        let (stepped, audit) = step_at(&kept, &people, &duties, now);
        assert!(audit.len() >= 250, "one alert each: {}", audit.len());
        assert_eq!(
            store
                .write_alarm(&kept, &stepped.alarm, &audit)
                .await
                .unwrap(),
            AlarmWrite::Written
        );
        expected.extend(audit);
    }
    assert_eq!(store.alarm_audit(&scope, call.id).await.unwrap(), expected);
    assert!(
        store
            .alarm_audit(&Scope::consumer("other"), call.id)
            .await
            .unwrap()
            .is_empty(),
        "another scope sees none of it"
    );

    let erased = store.erase_address(&scope, "Zimmer.1").await.unwrap();
    assert_eq!(erased.calls, 1);
    assert!(store.alarm_audit(&scope, call.id).await.unwrap().is_empty());
    assert!(store.alarm(&scope, call.id).await.unwrap().is_none());
}

/// An alarm a hand edit left unreadable: the call still shows (without
/// it), the engine's read refuses it.
#[tokio::test(flavor = "multi_thread")]
async fn an_unreadable_alarm_is_left_out_of_reads_and_refused_to_the_engine() {
    let store = store().await;
    let scope = Scope::installation();
    let call = open(&store, &scope, "Zimmer.1", at(0)).await;
    for (pk, sk) in [
        (format!("call#{}", call.id), "call".to_string()),
        ("open#installation".to_string(), format!("{:016}", call.id)),
    ] {
        store
            .client()
            .update_item()
            .table_name(&store.tables().data)
            .key("pk", AttributeValue::S(pk))
            .key("sk", AttributeValue::S(sk))
            .update_expression("SET alarm = :broken")
            .expression_attribute_values(":broken", AttributeValue::S("not json".into()))
            .send()
            .await
            .unwrap();
    }
    let open_calls = store.open_calls(&scope).await.unwrap();
    assert_eq!(open_calls.len(), 1);
    assert_eq!(open_calls[0].alarm, None, "shown without its alarm");
    let refused = store.alarm(&scope, call.id).await.unwrap_err().to_string();
    assert!(refused.contains("unreadable"), "{refused}");
    assert!(
        !refused.contains("not json"),
        "no value in the error: {refused}"
    );
}
