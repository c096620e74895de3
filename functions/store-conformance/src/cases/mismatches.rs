//! Hash mismatches kept for the test page: the newest few per scope, newest
//! first, never shown to another scope, gone after a day.

use chrono::Duration;

use nurse_call_core::{Backend, HashMismatch, Scope};

use crate::Harness;
use crate::support::*;

/// A mismatch whose texts name `label`, so that lists read clearly in a failure.
fn mismatch(label: &str, at: chrono::DateTime<chrono::Utc>) -> HashMismatch {
    HashMismatch {
        string: format!(r#"{label}.aaaaaaaa-0000-4000-8000-00000000000a.{{"event":"Notruf"}}"#),
        expected: format!("{:0>64}", hex_of(label)),
        provided: format!("{:f>64}", hex_of(label)),
        at,
    }
}

fn hex_of(label: &str) -> String {
    label.bytes().map(|b| format!("{b:02x}")).collect()
}

async fn record(store: &dyn Backend, scope: &Scope, mismatch: &HashMismatch) {
    store
        .record_hash_mismatch(scope, mismatch)
        .await
        .unwrap_or_else(|e| panic!("record_hash_mismatch({}) failed: {e}", scope.as_str()));
}

async fn kept(store: &dyn Backend, scope: &Scope, limit: usize) -> Vec<HashMismatch> {
    store
        .recent_hash_mismatches(scope, limit)
        .await
        .unwrap_or_else(|e| panic!("recent_hash_mismatches({}) failed: {e}", scope.as_str()))
}

fn labels(mismatches: &[HashMismatch]) -> Vec<String> {
    mismatches
        .iter()
        .map(|m| m.string.split('.').next().unwrap_or_default().to_string())
        .collect()
}

/// Newest first (by time, then the later recorded first); only the newest
/// [`HashMismatch::KEPT`] are kept; `limit` applies; texts round-trip exactly.
pub async fn hash_mismatches_keep_the_newest_first(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = sandbox("c0ffee00-1234-4abc-8def-0123456789ab");
    assert!(
        kept(store, &scope, ALL).await.is_empty(),
        "a fresh scope has no mismatches"
    );

    let count = HashMismatch::KEPT + 3;
    let mut recorded = Vec::new();
    for i in 0..count {
        let m = mismatch(&format!("m{i:02}"), t(i as i64 * 10));
        record(store, &scope, &m).await;
        recorded.push(m);
    }
    // Two in the same second: the later recorded is the newer.
    let same_second = t(1000);
    for label in ["same-1", "same-2"] {
        let m = mismatch(label, same_second);
        record(store, &scope, &m).await;
        recorded.push(m);
    }
    // A late one (an earlier time recorded last) sorts by its time.
    let late = mismatch("late", t(5));
    record(store, &scope, &late).await;

    let mut newest: Vec<HashMismatch> = recorded.iter().rev().cloned().collect();
    newest.truncate(HashMismatch::KEPT);
    assert_eq!(
        labels(&kept(store, &scope, ALL).await),
        labels(&newest),
        "recent_hash_mismatches must list the newest {} first",
        HashMismatch::KEPT
    );
    assert_eq!(
        kept(store, &scope, ALL).await,
        newest,
        "mismatches must round-trip exactly"
    );
    for limit in [0, 1, 3] {
        assert_eq!(
            kept(store, &scope, limit).await,
            newest[..limit].to_vec(),
            "recent_hash_mismatches(limit = {limit})"
        );
    }

    // Long texts with quotes, escapes and non-ASCII come back byte for byte.
    let long = HashMismatch {
        string: format!(
            "Zimmer \"ä\".{}.{}",
            "c0ffee00-1234-4abc-8def-0123456789ab",
            r#"{"position":"Flur \/ Süd \u00e4","x":"#.to_string() + &"9".repeat(16 * 1024) + "}"
        ),
        expected: "e".repeat(64),
        provided: "ZZ nicht hex ✓".to_string(),
        at: t(2000),
    };
    record(store, &scope, &long).await;
    assert_eq!(
        kept(store, &scope, 1).await,
        vec![long],
        "a long mismatch with special characters must round-trip"
    );
}

/// A scope sees only its own mismatches; the installation has none of them.
pub async fn hash_mismatches_are_scoped(harness: Harness) {
    let store = harness.store.as_ref();
    let a = sandbox("aaaaaaaa-0000-4000-8000-00000000000a");
    let b = sandbox("bbbbbbbb-0000-4000-8000-00000000000b");
    record(store, &a, &mismatch("a1", t(1))).await;
    record(store, &b, &mismatch("b1", t(2))).await;
    record(store, &a, &mismatch("a2", t(3))).await;
    // Many of b's do not push out a's.
    for i in 0..HashMismatch::KEPT {
        record(
            store,
            &b,
            &mismatch(&format!("b-more-{i}"), t(10 + i as i64)),
        )
        .await;
    }

    assert_eq!(labels(&kept(store, &a, ALL).await), ["a2", "a1"], "scope a");
    let of_b = labels(&kept(store, &b, ALL).await);
    assert_eq!(of_b.len(), HashMismatch::KEPT, "scope b: {of_b:?}");
    assert!(
        of_b.iter().all(|label| label.starts_with('b')),
        "scope b sees only its own: {of_b:?}"
    );
    assert!(
        kept(store, &Scope::installation(), ALL).await.is_empty(),
        "the installation sees no sandbox mismatch"
    );
}

/// A mismatch lives a day, and goes with its expired consumer. Stores with
/// native expiry may leave both to the database; nothing live is lost.
pub async fn purge_expired_removes_old_hash_mismatches(harness: Harness) {
    let store = harness.store.as_ref();
    let live_id = "11111111-2222-4333-8444-555555555555";
    let gone_id = "66666666-7777-4888-8999-aaaaaaaaaaaa";
    store
        .create_consumer(&consumer(live_id, Some(now() + Duration::days(30))))
        .await
        .expect("create_consumer failed");
    store
        .create_consumer(&consumer(gone_id, Some(now() - Duration::seconds(1))))
        .await
        .expect("create_consumer failed");
    let live = sandbox(live_id);
    let gone = sandbox(gone_id);
    let old = mismatch(
        "old",
        now() - Duration::hours(HashMismatch::LIFETIME_HOURS) - Duration::minutes(1),
    );
    let fresh = mismatch("fresh", now() - Duration::minutes(1));
    record(store, &live, &old).await;
    record(store, &live, &fresh).await;
    record(store, &gone, &mismatch("of-an-expired-consumer", now())).await;

    store
        .purge_expired(now())
        .await
        .expect("purge_expired failed");

    let of_live = kept(store, &live, ALL).await;
    assert!(
        of_live.contains(&fresh),
        "purge_expired must keep a fresh mismatch of a live consumer: {of_live:?}"
    );
    if harness.purges_expired {
        assert_eq!(
            of_live,
            vec![fresh],
            "purge_expired must remove mismatches older than a day"
        );
        assert!(
            kept(store, &gone, ALL).await.is_empty(),
            "purge_expired must remove the mismatches of an expired consumer"
        );
    }
}
