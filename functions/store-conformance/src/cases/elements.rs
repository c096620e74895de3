//! Elements: registration, status changes, all-or-nothing batches.

use nurse_call_core::{
    AddressSnapshot, Element, ElementChange, ElementPolicy, ElementWrite, ElementsOutcome,
    OpenOutcome, Scope,
};

use crate::Harness;
use crate::support::*;

/// Registering an unknown address creates the element with its code and name
/// and no status; the snapshot shows it.
pub async fn register_element_creates_an_element(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let registered = store
        .register_element(&scope, "1.2.3", "Z-101", "Zimmer 101, Bett 1", t(5))
        .await
        .expect("register_element failed");
    let expected = Element {
        address: "1.2.3".to_string(),
        code: "Z-101".to_string(),
        name: "Zimmer 101, Bett 1".to_string(),
        battery: None,
        position: None,
        reachable: None,
        updated_at: t(5),
        version: 1,
    };
    assert_eq!(
        registered, expected,
        "register_element must return the new element"
    );
    assert_eq!(
        element(store, &scope, "1.2.3").await,
        Some(expected),
        "the snapshot must show the registered element"
    );
}

/// Re-registering sets code and name and keeps the status fields, also for an
/// element the sandbox created.
pub async fn register_element_keeps_status_fields(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    register(store, &scope, "el-1", t(0)).await;
    let status = ElementChange {
        address: "el-1".to_string(),
        battery: Some(42.5),
        position: Some("Flur".to_string()),
        reachable: Some(false),
        at: t(10),
    };
    expect_updated(
        update(store, &scope, &[status], ElementPolicy::MustExist).await,
        "status change of a registered element",
    );
    let again = store
        .register_element(&scope, "el-1", "NEW-CODE", "New name", t(20))
        .await
        .expect("re-registering failed");
    assert_eq!(again.code, "NEW-CODE", "re-registering must set the code");
    assert_eq!(again.name, "New name", "re-registering must set the name");
    assert_eq!(
        (again.battery, again.position.as_deref(), again.reachable),
        (Some(42.5), Some("Flur"), Some(false)),
        "re-registering must keep battery, position and reachable"
    );
    assert!(
        again.updated_at == t(10) || again.updated_at == t(20),
        "re-registering must keep updated_at or set it to the registration time, got {}",
        again.updated_at
    );
    assert_eq!(
        element(store, &scope, "el-1").await,
        Some(again),
        "the snapshot must show what register_element returned"
    );

    // An element the sandbox created (no code or name yet).
    expect_updated(
        update(
            store,
            &scope,
            &[battery("el-2", 7.0, t(30))],
            ElementPolicy::CreateMissing,
        )
        .await,
        "creating an element",
    );
    let registered = store
        .register_element(&scope, "el-2", "C-2", "Two", t(40))
        .await
        .expect("registering a created element failed");
    assert_eq!(
        (
            registered.code.as_str(),
            registered.name.as_str(),
            registered.battery
        ),
        ("C-2", "Two", Some(7.0)),
        "registering an element the sandbox created must set code and name and keep battery"
    );
}

/// An address nobody used has neither element nor open calls.
pub async fn snapshot_of_unknown_address_is_empty(harness: Harness) {
    let snapshot = harness
        .store
        .snapshot(&Scope::installation(), "nowhere")
        .await
        .expect("snapshot failed");
    assert!(
        snapshot.element.is_none() && snapshot.open_calls.is_empty(),
        "a fresh store must have nothing at an unused address, got {snapshot:?}"
    );
}

/// Only the fields a change sends move; `updated_at` becomes the change's time;
/// results come in the order of the changes.
pub async fn update_elements_changes_only_sent_fields(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let a = register(store, &scope, "a", t(0)).await;
    let b = register(store, &scope, "b", t(0)).await;

    let full = ElementChange {
        address: "a".to_string(),
        battery: Some(80.0),
        position: Some("Zimmer 1".to_string()),
        reachable: Some(true),
        at: t(10),
    };
    let updated = expect_updated(
        update(store, &scope, &[full], ElementPolicy::MustExist).await,
        "setting every status field",
    );
    let a_full = Element {
        battery: Some(80.0),
        position: Some("Zimmer 1".to_string()),
        reachable: Some(true),
        updated_at: t(10),
        version: a.version + 1,
        ..a
    };
    assert_eq!(
        updated,
        vec![a_full.clone()],
        "update_elements must return the element as written"
    );

    let b_position = ElementChange {
        position: Some("Zimmer 2".to_string()),
        ..no_change("b", t(20))
    };
    let a_change = ElementChange {
        battery: Some(0.0),
        reachable: Some(false),
        ..no_change("a", t(20))
    };
    let updated = expect_updated(
        update(
            store,
            &scope,
            &[b_position, a_change],
            ElementPolicy::MustExist,
        )
        .await,
        "changing some fields of two elements",
    );
    let a_expected = Element {
        battery: Some(0.0),
        reachable: Some(false),
        updated_at: t(20),
        version: a_full.version + 1,
        ..a_full
    };
    let b_expected = Element {
        position: Some("Zimmer 2".to_string()),
        updated_at: t(20),
        version: b.version + 1,
        ..b
    };
    assert_eq!(
        updated,
        vec![b_expected.clone(), a_expected.clone()],
        "update_elements must change only the sent fields and answer in the order given"
    );
    assert_eq!(
        element(store, &scope, "a").await,
        Some(a_expected),
        "stored element a"
    );
    assert_eq!(
        element(store, &scope, "b").await,
        Some(b_expected),
        "stored element b"
    );
}

/// With `MustExist`, one unknown address rejects the whole batch: the unknown
/// addresses are reported and nothing is written, not even to known elements.
pub async fn update_elements_must_exist_is_all_or_nothing(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let a = register(store, &scope, "a", t(0)).await;
    let b = register(store, &scope, "b", t(0)).await;

    let outcome = update(
        store,
        &scope,
        &[
            battery("a", 10.0, t(5)),
            battery("ghost-1", 10.0, t(5)),
            battery("b", 10.0, t(5)),
            battery("ghost-2", 10.0, t(5)),
        ],
        ElementPolicy::MustExist,
    )
    .await;
    match outcome {
        ElementsOutcome::Unknown(unknown) => assert_eq!(
            sorted(&unknown),
            vec!["ghost-1".to_string(), "ghost-2".to_string()],
            "Unknown must list exactly the unregistered addresses"
        ),
        ElementsOutcome::Updated(elements) => {
            panic!(
                "MustExist with unknown addresses must not update anything, got Updated({elements:?})"
            )
        }
    }
    assert_eq!(
        element(store, &scope, "a").await,
        Some(a.clone()),
        "a rejected batch changed element a"
    );
    assert_eq!(
        element(store, &scope, "b").await,
        Some(b),
        "a rejected batch changed element b"
    );
    for ghost in ["ghost-1", "ghost-2"] {
        assert_eq!(
            element(store, &scope, ghost).await,
            None,
            "a rejected batch created element {ghost}"
        );
    }
    assert_eq!(
        all_elements(store, &scope).await.len(),
        2,
        "a rejected batch must not create elements"
    );

    // A single unknown address alone is rejected too.
    let outcome = update(
        store,
        &scope,
        &[battery("ghost-3", 1.0, t(6))],
        ElementPolicy::MustExist,
    )
    .await;
    assert!(
        matches!(&outcome, ElementsOutcome::Unknown(u) if u == &["ghost-3".to_string()]),
        "MustExist with one unknown address must answer Unknown([ghost-3]), got {outcome:?}"
    );

    let updated = expect_updated(
        update(
            store,
            &scope,
            &[battery("a", 20.0, t(7))],
            ElementPolicy::MustExist,
        )
        .await,
        "a batch of registered elements",
    );
    assert_eq!(updated.len(), 1);
    assert_eq!(
        updated[0].battery,
        Some(20.0),
        "a valid batch must be written"
    );
}

/// With `CreateMissing`, unknown addresses become elements without code or name.
pub async fn update_elements_create_missing_creates(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let a = register(store, &scope, "a", t(0)).await;
    let new_change = ElementChange {
        position: Some("Garten".to_string()),
        reachable: Some(true),
        ..no_change("new", t(9))
    };
    let updated = expect_updated(
        update(
            store,
            &scope,
            &[battery("a", 55.0, t(9)), new_change],
            ElementPolicy::CreateMissing,
        )
        .await,
        "CreateMissing",
    );
    let created = Element {
        address: "new".to_string(),
        code: String::new(),
        name: String::new(),
        battery: None,
        position: Some("Garten".to_string()),
        reachable: Some(true),
        updated_at: t(9),
        version: 1,
    };
    let a_expected = Element {
        battery: Some(55.0),
        updated_at: t(9),
        version: a.version + 1,
        ..a
    };
    assert_eq!(
        updated,
        vec![a_expected.clone(), created.clone()],
        "CreateMissing must update known elements and create unknown ones with empty code and name"
    );
    assert_eq!(
        element(store, &scope, "new").await,
        Some(created),
        "the created element must be stored"
    );
    assert_eq!(
        element(store, &scope, "a").await,
        Some(a_expected),
        "the updated element must be stored"
    );
}

/// A change that sends no status field does not move `updated_at` (nor
/// anything else), whether it comes from update_elements, open_call or
/// close_calls.
pub async fn empty_change_keeps_updated_at(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let registered = register(store, &scope, "quiet", t(0)).await;

    for policy in [ElementPolicy::MustExist, ElementPolicy::CreateMissing] {
        let updated = expect_updated(
            update(store, &scope, &[no_change("quiet", t(5))], policy).await,
            "an empty change",
        );
        assert_eq!(
            updated,
            vec![registered.clone()],
            "an empty change ({policy:?}) must return the element unchanged"
        );
    }
    assert_eq!(
        element(store, &scope, "quiet").await,
        Some(registered.clone()),
        "after update_elements"
    );

    let outcome = store
        .open_call(
            &new_call("quiet", "Notruf", t(6)),
            &AddressSnapshot::default(),
            &ElementWrite::new(
                &scope,
                &no_change("quiet", t(6)),
                ElementPolicy::MustExist,
                &AddressSnapshot::default(),
            ),
        )
        .await
        .expect("open_call failed");
    let call = match outcome {
        OpenOutcome::Opened(call) => call,
        OpenOutcome::AlreadyOpen(call) => panic!("nothing was open, got AlreadyOpen({call:?})"),
        OpenOutcome::UnknownElement => panic!("the registered element was not found"),
    };
    assert_eq!(
        element(store, &scope, "quiet").await,
        Some(registered.clone()),
        "after open_call"
    );

    let closing = open_at(&[&call]);
    let closed = store
        .close_calls(
            &closing,
            t(7),
            Some(CLOSER),
            &ElementWrite::new(
                &scope,
                &no_change("quiet", t(7)),
                ElementPolicy::MustExist,
                &closing,
            ),
        )
        .await
        .expect("close_calls failed")
        .calls();
    assert_eq!(ids(&closed), vec![call.id]);
    assert_eq!(
        element(store, &scope, "quiet").await,
        Some(registered.clone()),
        "after close_calls"
    );

    // A change with a field does move it.
    let updated = expect_updated(
        update(
            store,
            &scope,
            &[battery("quiet", 3.0, t(8))],
            ElementPolicy::MustExist,
        )
        .await,
        "a change with a field",
    );
    assert_eq!(
        updated[0].updated_at,
        t(8),
        "a change with a field must set updated_at"
    );
}
