//! Retention: closed calls past the installation's retention are deleted;
//! open calls never are (docs/security.md, "Retention and erasure").

use crate::Harness;
use crate::support::*;

/// `purge_closed_calls(cutoff)` deletes, in every scope, exactly the calls
/// closed before `cutoff`, and returns how many. A call closed at the cutoff,
/// a call closed after it and an open call opened long before it all stay.
/// A store with native expiry (DynamoDB TTL) may return 0 and keep them.
pub async fn purge_closed_calls_removes_only_calls_closed_before_the_cutoff(harness: Harness) {
    let store = harness.store.as_ref();
    let cutoff = t(1000);
    let scopes = [
        nurse_call_core::Scope::installation(),
        sandbox("55555555-5555-4555-8555-555555555555"),
    ];
    let mut expired = Vec::new();
    let mut kept = Vec::new();
    for scope in &scopes {
        // Open since long before the cutoff: never deleted.
        let open_call = open(store, scope, &new_call("R-1", "Notruf", t(0))).await;
        kept.push((scope.clone(), open_call.id));
        for (address, closed_at, stays) in [
            ("R-2", cutoff - chrono::Duration::seconds(1), false),
            ("R-3", cutoff, true),
            ("R-4", cutoff + chrono::Duration::days(1), true),
        ] {
            let call = open(store, scope, &new_call(address, "WC", t(10))).await;
            close(store, scope, address, &[&call], closed_at).await;
            if stays {
                kept.push((scope.clone(), call.id));
            } else {
                expired.push((scope.clone(), call.id));
            }
        }
    }

    let purged = store
        .purge_closed_calls(cutoff)
        .await
        .expect("purge_closed_calls failed");

    for (scope, id) in &kept {
        let calls = all_calls(store, scope).await;
        assert!(
            calls.iter().any(|c| c.id == *id),
            "purge_closed_calls({cutoff}) removed call {id} of scope {}, which is open or \
             closed at or after the cutoff: {calls:?}",
            scope.as_str()
        );
    }
    assert_eq!(
        open_calls(store, &scopes[0], "R-1").await.len(),
        1,
        "the old open call is still open"
    );
    if !harness.purges_expired {
        assert!(
            purged <= 2,
            "only two calls were past retention, {purged} reported"
        );
        return;
    }
    assert_eq!(purged, 2, "one call per scope was closed before the cutoff");
    for (scope, id) in &expired {
        let calls = all_calls(store, scope).await;
        assert!(
            calls.iter().all(|c| c.id != *id),
            "call {id} of scope {} was closed before the cutoff and survived: {calls:?}",
            scope.as_str()
        );
    }
    let again = store
        .purge_closed_calls(cutoff)
        .await
        .expect("second purge_closed_calls failed");
    assert_eq!(again, 0, "a second purge finds nothing");
}
