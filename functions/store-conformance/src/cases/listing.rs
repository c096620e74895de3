//! The sandbox page's lists: recent calls and recent elements of a scope.

use nurse_call_core::{AddressSnapshot, ElementPolicy, ElementWrite, Scope};

use crate::Harness;
use crate::support::*;

/// Open calls first, then closed ones; within each, the newest opened first
/// (by opened_at, not by id); at most `limit`; only the scope's own calls.
pub async fn recent_calls_orders_open_first_then_newest(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let other = sandbox("6d5c4b3a-2918-4765-a432-10fedcba9876");

    let c1 = open(store, &scope, &new_call("r.1", "Notruf", t(10))).await;
    let c2 = open(store, &scope, &new_call("r.2", "Notruf", t(20))).await;
    let c3 = open(store, &scope, &new_call("r.3", "Notruf", t(30))).await;
    let c4 = open(store, &scope, &new_call("r.4", "Notruf", t(40))).await;
    // Created last, opened earliest (a late-delivered call with created_at).
    let c5 = open(store, &scope, &new_call("r.5", "Notruf", t(5))).await;
    let c1 = close(store, &scope, "r.1", &[&c1], t(100)).await.remove(0);
    let c3 = close(store, &scope, "r.3", &[&c3], t(50)).await.remove(0);
    open(store, &other, &new_call("r.1", "Notruf", t(60))).await;

    let expected = vec![c4, c2, c5, c3, c1];
    assert_eq!(
        all_calls(store, &scope).await,
        expected,
        "recent_calls must list open calls first, then closed, each newest opened first"
    );
    for limit in [0, 1, 2, 3, 4, 5, 6] {
        let listed = store
            .recent_calls(&scope, limit)
            .await
            .expect("recent_calls failed");
        assert_eq!(
            ids(&listed),
            ids(&expected[..limit.min(expected.len())]),
            "recent_calls(limit = {limit}) must return the first {limit} of the order"
        );
    }
    assert_eq!(
        all_calls(store, &other).await.len(),
        1,
        "the other scope has its own single call"
    );
}

/// Most recently updated first, at most `limit`, only the scope's own.
pub async fn recent_elements_orders_most_recently_updated_first(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let other = sandbox("0f1e2d3c-4b5a-4697-8877-665544332211");

    register(store, &scope, "e.a", t(10)).await;
    expect_updated(
        update(
            store,
            &scope,
            &[battery("e.b", 1.0, t(30))],
            ElementPolicy::CreateMissing,
        )
        .await,
        "creating e.b",
    );
    store
        .open_call(
            &new_call("e.c", "WC", t(20)),
            &AddressSnapshot::default(),
            &ElementWrite::new(
                &scope,
                &battery("e.c", 2.0, t(20)),
                ElementPolicy::CreateMissing,
                &AddressSnapshot::default(),
            ),
        )
        .await
        .expect("open_call failed");
    register(store, &other, "e.z", t(99)).await;

    let order = |elements: Vec<nurse_call_core::Element>| -> Vec<String> {
        elements.into_iter().map(|e| e.address).collect()
    };
    assert_eq!(
        order(all_elements(store, &scope).await),
        ["e.b", "e.c", "e.a"],
        "recent_elements must list the most recently updated first"
    );

    expect_updated(
        update(
            store,
            &scope,
            &[battery("e.a", 3.0, t(40))],
            ElementPolicy::MustExist,
        )
        .await,
        "updating e.a",
    );
    // An empty change does not make an element recent.
    expect_updated(
        update(
            store,
            &scope,
            &[no_change("e.c", t(50))],
            ElementPolicy::MustExist,
        )
        .await,
        "an empty change",
    );
    assert_eq!(
        order(all_elements(store, &scope).await),
        ["e.a", "e.b", "e.c"],
        "an update must move an element to the front, an empty change must not"
    );
    for (limit, expected) in [(0, &[][..]), (1, &["e.a"][..]), (2, &["e.a", "e.b"][..])] {
        let listed = store
            .recent_elements(&scope, limit)
            .await
            .expect("recent_elements failed");
        assert_eq!(order(listed), expected, "recent_elements(limit = {limit})");
    }
    assert_eq!(
        order(all_elements(store, &other).await),
        ["e.z"],
        "the other scope's elements"
    );
}
