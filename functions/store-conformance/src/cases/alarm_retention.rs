//! Alarms and staff leave with the data they belong to: a purged call's
//! alarm and audit, an expired visitor's staff, duties and alarms. A store
//! with native expiry (DynamoDB TTL) may leave that to the database; then
//! only what must stay is checked.

use chrono::Duration;

use nurse_call_core::{AlarmWrite, Scope};

use crate::Harness;
use crate::alarm_support::*;
use crate::support::*;

/// `purge_closed_calls` takes a purged call's alarm and audit with it; an
/// open call's alarm stays, due.
pub async fn purge_closed_calls_removes_their_alarms(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let anna = staff(1, &scope, "Anna", &[]);
    let purged = open(store, &scope, &new_call("P-1", "WC", t(0))).await;
    let kept_open = open(store, &scope, &new_call("P-2", "WC", t(0))).await;
    let read = kept(store, &scope, purged.id).await;
    let alarm = alerting(1, &anna, t(1), Some(t(31)));
    let lines = [line("alert", 1, Some(&anna), t(1))];
    assert_eq!(
        write(store, &read, &alarm, &lines).await,
        AlarmWrite::Written
    );
    close(store, &scope, "P-1", &[&purged], t(10)).await;

    store
        .purge_closed_calls(t(1000))
        .await
        .expect("purge_closed_calls failed");

    assert_eq!(
        kept(store, &scope, kept_open.id).await.version,
        0,
        "an open call's alarm stays"
    );
    assert!(due_ids(store, t(1000)).await.contains(&kept_open.id));
    if !harness.purges_expired {
        return;
    }
    assert_eq!(store.alarm(&scope, purged.id).await.unwrap(), None);
    assert!(
        audit(store, &scope, purged.id).await.is_empty(),
        "a purged call's audit goes with it"
    );
    assert!(!due_ids(store, t(1000)).await.contains(&purged.id));
}

/// `purge_expired` takes an expired visitor's staff, duties and alarms with
/// the visitor; a live visitor's stay.
pub async fn purge_expired_removes_a_visitors_staff_and_alarms(harness: Harness) {
    let store = harness.store.as_ref();
    let now = now();
    let expired = consumer(
        "e0e0e0e0-0000-4000-8000-000000000001",
        Some(now - Duration::days(1)),
    );
    let live = consumer(
        "e0e0e0e0-0000-4000-8000-000000000002",
        Some(now + Duration::days(1)),
    );
    let mut ids = Vec::new();
    for (n, visitor) in [(1, &expired), (2, &live)] {
        store
            .create_consumer(visitor)
            .await
            .expect("create_consumer failed");
        let scope = sandbox(&visitor.id);
        let member = staff(n, &scope, "Anna", &[]);
        create(store, &member).await;
        store
            .put_duty(&duty(&member, &[], now, now + Duration::hours(8)))
            .await
            .unwrap();
        let call = open(store, &scope, &new_call("V-1", "Notruf", t(0))).await;
        let read = kept(store, &scope, call.id).await;
        let alarm = alerting(1, &member, t(1), Some(t(31)));
        let lines = [line("alert", 1, Some(&member), t(1))];
        assert_eq!(
            write(store, &read, &alarm, &lines).await,
            AlarmWrite::Written
        );
        ids.push((scope, member, call.id));
    }

    store
        .purge_expired(now)
        .await
        .expect("purge_expired failed");

    let (live_scope, live_member, live_call) = &ids[1];
    assert_eq!(
        store.staff_of(live_scope).await.unwrap(),
        vec![live_member.clone()]
    );
    assert_eq!(duties(store, live_scope, now).await.len(), 1);
    assert_eq!(kept(store, live_scope, *live_call).await.version, 1);
    assert_eq!(audit(store, live_scope, *live_call).await.len(), 1);
    if !harness.purges_expired {
        return;
    }
    let (gone_scope, gone_member, gone_call) = &ids[0];
    assert!(
        store.staff_of(gone_scope).await.unwrap().is_empty(),
        "staff go with the visitor"
    );
    assert_eq!(store.staff_member(&gone_member.id).await.unwrap(), None);
    assert!(duties(store, gone_scope, now).await.is_empty());
    assert_eq!(store.alarm(gone_scope, *gone_call).await.unwrap(), None);
    assert!(audit(store, gone_scope, *gone_call).await.is_empty());
    assert_eq!(due_ids(store, t(1000)).await, [*live_call]);
}
