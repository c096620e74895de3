//! The read side of displays (DECISIONS §11): every open call of a scope,
//! read consistently, and element versions. Displays themselves are admin
//! records: their contract is in [`crate::admin`].

use nurse_call_core::{ElementChange, ElementPolicy, Scope};

use crate::Harness;
use crate::support::*;

/// `open_calls` returns exactly the scope's open calls, at once after the
/// writes were acknowledged (a display must never miss one), and no closed
/// call and no call of another scope.
pub async fn open_calls_are_the_scopes_open_calls_at_once(harness: Harness) {
    let store = harness.store.as_ref();
    let home = Scope::installation();
    let visitor = Scope::consumer("0b9d8c6e-1a2b-4c3d-8e9f-0a1b2c3d4e5f");
    let a = open(store, &home, &new_call("a", "Notruf", t(1))).await;
    let b = open(store, &home, &new_call("b", "WC", t(2))).await;
    let c = open(store, &home, &new_call("c", "Normalruf", t(3))).await;
    open(store, &visitor, &new_call("a", "Notruf", t(1))).await;
    close(store, &home, "b", &[&b], t(4)).await;

    let mut ids: Vec<i64> = store
        .open_calls(&home)
        .await
        .expect("open_calls failed")
        .iter()
        .map(|call| call.id)
        .collect();
    ids.sort();
    let mut expected = vec![a.id, c.id];
    expected.sort();
    assert_eq!(
        ids, expected,
        "the installation's open calls, and only they"
    );
    let read = store.open_calls(&home).await.expect("open_calls failed");
    let read_a = read.iter().find(|call| call.id == a.id).expect("a is open");
    assert_eq!(read_a, &a, "an open call reads back as it was opened");
    assert_eq!(read_a.version(), 1);
    assert_eq!(
        store
            .open_calls(&visitor)
            .await
            .expect("open_calls failed")
            .len(),
        1,
        "the visitor's scope has its own call"
    );
}

/// Every change of an element is a new, larger version; an empty change is
/// none, and registering is one.
pub async fn element_versions_grow_with_every_change(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let registered = register(store, &scope, "v", t(0)).await;
    assert_eq!(registered.version, 1, "a new element is version 1");
    let battery = ElementChange {
        battery: Some(50.0),
        ..no_change("v", t(1))
    };
    let first = expect_updated(
        update(store, &scope, &[battery], ElementPolicy::MustExist).await,
        "battery",
    );
    assert_eq!(first[0].version, 2);
    let unchanged = expect_updated(
        update(
            store,
            &scope,
            &[no_change("v", t(2))],
            ElementPolicy::MustExist,
        )
        .await,
        "empty change",
    );
    assert_eq!(unchanged[0].version, 2, "an empty change is no new version");
    let again = store
        .register_element(&scope, "v", "new-code", "new name", t(3))
        .await
        .expect("re-register");
    assert_eq!(again.version, 3, "re-registering is a change");
    assert_eq!(
        store.elements(&scope).await.expect("elements")[0].version,
        3,
        "elements() shows the stored version"
    );
}
