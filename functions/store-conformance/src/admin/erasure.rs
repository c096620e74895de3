//! `erase_address` (the admin's erasure of an address, docs/security.md):
//! everything of the address goes, its calls' alarms and audit included,
//! and nothing else.

use nurse_call_core::{AlarmWrite, Backend, Call, Erased, HashMismatch, Scope, alarm::AuditEvent};

use crate::support::{close, new_call, open, t};

/// `erase_address`: everything of one address goes (element, open and closed
/// calls, the hash mismatches naming it), in that scope only; every other
/// address, and the same address in another scope, stays whole. A second run
/// finds nothing. Run on a fresh store with the default call types seeded.
pub async fn erasure(store: &dyn Backend) {
    let installation = Scope::installation();
    let visitor = "0b7c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e";
    let sandbox = Scope::consumer(visitor);
    let (erased, kept) = ("E-1", "E-10");
    for scope in [&installation, &sandbox] {
        for address in [erased, kept] {
            store
                .register_element(scope, address, "Z", "Zimmer", t(0))
                .await
                .unwrap();
            open(store, scope, &new_call(address, "Notruf", t(1))).await;
            let done = open(store, scope, &new_call(address, "WC", t(2))).await;
            close(store, scope, address, &[&done], t(3)).await;
        }
    }
    let mismatch = |string: String| HashMismatch::new(&string, &"e".repeat(64), "0", t(4));
    let naming_erased = [
        mismatch(format!("{erased}.{visitor}.{{\"event\":\"WC\"}}")),
        mismatch(format!(
            ".{visitor}.[{{\"target\":\"{kept}\"}},{{\"target\":\"{erased}\"}}]"
        )),
    ];
    let not_naming_erased = [
        mismatch(format!("{kept}.{visitor}.{{\"event\":\"{erased}\"}}")),
        mismatch(format!("{erased}.x.{visitor}.{{}}")),
    ];
    for m in naming_erased.iter().chain(&not_naming_erased) {
        store.record_hash_mismatch(&sandbox, m).await.unwrap();
    }
    let before_kept = everything(store, &installation, kept).await;
    let before_sandbox = everything(store, &sandbox, erased).await;
    // The erased calls' alarms and audit go with them (DECISIONS §14).
    let erased_calls = everything(store, &installation, erased).await.1;
    let with_audit = alarm_with_audit(store, &installation, erased_calls[0].id).await;

    assert_eq!(
        store.erase_address(&installation, erased).await.unwrap(),
        Erased {
            element: true,
            calls: 2,
            open_calls: 1,
            mismatches: 0
        }
    );
    assert_eq!(
        everything(store, &installation, erased).await,
        (None, vec![], vec![]),
        "nothing of the erased address is left"
    );
    for call in &erased_calls {
        assert_eq!(store.alarm(&installation, call.id).await.unwrap(), None);
        assert!(
            store
                .alarm_audit(&installation, call.id)
                .await
                .unwrap()
                .is_empty(),
            "an erased call's audit goes with it"
        );
    }
    let due: Vec<i64> = store
        .due_alarms(t(1_000_000), 10_000)
        .await
        .unwrap()
        .iter()
        .map(|d| d.call_id)
        .collect();
    assert!(
        erased_calls.iter().all(|c| !due.contains(&c.id)),
        "an erased call is out of the due index ({with_audit:?})"
    );
    assert_eq!(everything(store, &installation, kept).await, before_kept);
    assert_eq!(
        everything(store, &sandbox, erased).await,
        before_sandbox,
        "the same address in another scope stays"
    );
    assert!(
        store
            .erase_address(&installation, erased)
            .await
            .unwrap()
            .is_nothing(),
        "a second run finds nothing"
    );

    // In the sandbox scope, the mismatches naming the address go too.
    assert_eq!(
        store.erase_address(&sandbox, erased).await.unwrap(),
        Erased {
            element: true,
            calls: 2,
            open_calls: 1,
            mismatches: 2
        }
    );
    assert_eq!(
        everything(store, &sandbox, erased).await,
        (None, vec![], vec![])
    );
    let mut left = store.recent_hash_mismatches(&sandbox, 10).await.unwrap();
    left.sort_by(|a, b| a.string.cmp(&b.string));
    let mut expected = not_naming_erased.to_vec();
    expected.sort_by(|a, b| a.string.cmp(&b.string));
    assert_eq!(left, expected, "mismatches that do not name it stay");
    assert_eq!(
        everything(store, &sandbox, kept).await.1.len(),
        2,
        "the other address's calls stay"
    );
    assert!(
        store
            .erase_address(&installation, "never-seen")
            .await
            .unwrap()
            .is_nothing()
    );
}

/// Writes an alarm with one audit line to call `id` (read back to be sure).
async fn alarm_with_audit(store: &dyn Backend, scope: &Scope, id: i64) -> AuditEvent {
    let kept = store
        .alarm(scope, id)
        .await
        .unwrap()
        .expect("a new call's alarm");
    let mut alarm = kept.alarm.clone();
    alarm.next_at = Some(t(100));
    let line = AuditEvent {
        at: t(5),
        kind: "escalated".into(),
        level: 2,
        staff: None,
        detail: None,
    };
    assert_eq!(
        store
            .write_alarm(&kept, &alarm, std::slice::from_ref(&line))
            .await
            .unwrap(),
        AlarmWrite::Written
    );
    assert_eq!(
        store.alarm_audit(scope, id).await.unwrap(),
        vec![line.clone()]
    );
    line
}

/// The element, the calls (by id) and the open calls of `address`.
async fn everything(
    store: &dyn Backend,
    scope: &Scope,
    address: &str,
) -> (Option<nurse_call_core::Element>, Vec<Call>, Vec<Call>) {
    let snapshot = store.snapshot(scope, address).await.unwrap();
    let mut calls: Vec<Call> = store
        .recent_calls(scope, 10_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|c| c.address == address)
        .collect();
    calls.sort_by_key(|c| c.id);
    (snapshot.element, calls, snapshot.open_calls)
}
