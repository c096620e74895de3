//! Calls: opened once per (scope, address, event), closed by id.

use nurse_call_core::{
    AddressSnapshot, Call, CloseOutcome, Element, ElementChange, ElementPolicy, ElementWrite,
    OpenOutcome, Scope, alarm::Alarm,
};

use crate::Harness;
use crate::support::*;

/// A new call is stored with a valid id and exactly the fields given, open;
/// the element change is applied with it.
pub async fn open_call_opens_a_call(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let call = new_call("1.1", "Notruf", t(100));
    let outcome = store
        .open_call(
            &call,
            &AddressSnapshot::default(),
            &ElementWrite::new(
                &scope,
                &battery("1.1", 64.0, t(101)),
                ElementPolicy::CreateMissing,
                &AddressSnapshot::default(),
            ),
        )
        .await
        .expect("open_call failed");
    let opened = match outcome {
        OpenOutcome::Opened(opened) => opened,
        OpenOutcome::AlreadyOpen(existing) => {
            panic!("open_call on an empty store returned AlreadyOpen({existing:?})")
        }
        OpenOutcome::UnknownElement => panic!("open_call (CreateMissing) returned UnknownElement"),
    };
    assert_id_valid(opened.id, "open_call");
    let expected = Call {
        id: opened.id,
        address: call.address.clone(),
        event: call.event.clone(),
        position: call.position.clone(),
        section: call.section.clone(),
        attribute: call.attribute.clone(),
        element_code: call.element_code.clone(),
        element_name: call.element_name.clone(),
        opened_at: call.opened_at,
        closed_at: None,
        opened_by: call.opened_by.clone(),
        closed_by: None,
        alarm: Some(Alarm::pending(call.opened_at)),
    };
    assert_eq!(
        opened, expected,
        "Opened must carry the call as given, open, with its pending alarm (DECISIONS §14)"
    );

    let snapshot = store
        .snapshot(&scope, "1.1")
        .await
        .expect("snapshot failed");
    assert_eq!(
        snapshot.open_calls,
        vec![expected.clone()],
        "the snapshot must show the open call"
    );
    let element = snapshot
        .element
        .expect("open_call with CreateMissing must create the element");
    assert_eq!(
        element.battery,
        Some(64.0),
        "open_call must apply the element change"
    );
    assert_eq!(element.updated_at, t(101), "the element change's time");
    assert_eq!(
        all_calls(store, &scope).await,
        vec![expected],
        "recent_calls must list the call"
    );

    // Every optional field round-trips when set, and when unset.
    let mut full = new_call("1.1", "WC", t(102));
    full.attribute = Some("Bad".to_string());
    full.position = None;
    full.section = None;
    full.element_name = String::new();
    let opened = open(store, &scope, &full).await;
    assert_eq!(
        (
            opened.attribute.as_deref(),
            opened.position.as_deref(),
            opened.section.as_deref(),
            opened.element_name.as_str()
        ),
        (Some("Bad"), None, None, ""),
        "optional call fields must round-trip"
    );
    let stored = open_calls(store, &scope, "1.1").await;
    assert!(
        stored.contains(&opened),
        "the stored call must equal the one returned: {stored:?}"
    );
}

/// Opening an event that is already open on the address stores nothing and
/// returns the open call as stored, but still applies the element change.
pub async fn open_call_on_open_event_returns_existing(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let first = open(store, &scope, &new_call("2.1", "Notruf", t(10))).await;

    let mut repeat = new_call("2.1", "Notruf", t(20));
    repeat.position = Some("elsewhere".to_string());
    repeat.element_code = "other".to_string();
    let outcome = store
        .open_call(
            &repeat,
            &AddressSnapshot::default(),
            &ElementWrite::new(
                &scope,
                &battery("2.1", 12.0, t(21)),
                ElementPolicy::CreateMissing,
                &AddressSnapshot::default(),
            ),
        )
        .await
        .expect("second open_call failed");
    match outcome {
        OpenOutcome::AlreadyOpen(existing) => assert_eq!(
            existing, first,
            "AlreadyOpen must return the call already open, unchanged"
        ),
        OpenOutcome::Opened(call) => panic!("a second open of an open event opened {call:?}"),
        OpenOutcome::UnknownElement => panic!("open_call (CreateMissing) returned UnknownElement"),
    }
    let snapshot = store
        .snapshot(&scope, "2.1")
        .await
        .expect("snapshot failed");
    assert_eq!(
        snapshot.open_calls,
        vec![first.clone()],
        "exactly the first call stays open"
    );
    let element = snapshot.element.expect("element");
    assert_eq!(
        (element.battery, element.updated_at),
        (Some(12.0), t(21)),
        "AlreadyOpen must still apply the element change"
    );
    assert_eq!(
        all_calls(store, &scope).await,
        vec![first],
        "AlreadyOpen must not store a call"
    );
}

/// Different events on one address, and one event on different addresses,
/// are separate calls; a snapshot lists its open calls oldest first.
pub async fn open_call_events_are_independent(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let notruf = open(store, &scope, &new_call("3.1", "Notruf", t(30))).await;
    let wc = open(store, &scope, &new_call("3.1", "WC", t(10))).await;
    let hotel = open(store, &scope, &new_call("3.1", "Hotelruf", t(20))).await;
    let other_address = open(store, &scope, &new_call("3.2", "Notruf", t(5))).await;
    let all = [&notruf, &wc, &hotel, &other_address];
    let mut seen: Vec<i64> = all.iter().map(|c| c.id).collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(
        seen.len(),
        4,
        "separate calls must have separate ids: {all:?}"
    );

    assert_eq!(
        open_calls(store, &scope, "3.1").await,
        vec![wc, hotel, notruf],
        "a snapshot lists the open calls of its address only, oldest first"
    );
    assert_eq!(open_calls(store, &scope, "3.2").await, vec![other_address]);
}

/// Once closed, the same event opens a new call with a new id.
pub async fn open_call_after_close_opens_a_new_call(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let first = open(store, &scope, &new_call("4.1", "Notruf", t(0))).await;
    let closed_calls = close(store, &scope, "4.1", &[&first], t(5)).await;
    assert_eq!(
        closed_calls,
        vec![closed(&first, t(5))],
        "close_calls must close the open call"
    );
    let second = open(store, &scope, &new_call("4.1", "Notruf", t(10))).await;
    assert_ne!(second.id, first.id, "a re-opened event must get a new id");
    assert_eq!(open_calls(store, &scope, "4.1").await, vec![second.clone()]);
    assert_eq!(
        all_calls(store, &scope).await,
        vec![second, closed(&first, t(5))],
        "the closed call stays stored, closed"
    );
}

/// `MustExist` applies the change to a registered element and never creates
/// one; `CreateMissing` creates an unknown element without code or name.
pub async fn open_call_element_policies(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let registered = register(store, &scope, "5.1", t(0)).await;
    let change = ElementChange {
        battery: Some(90.0),
        position: Some("Zimmer 5".to_string()),
        ..no_change("5.1", t(10))
    };
    let outcome = store
        .open_call(
            &new_call("5.1", "Notruf", t(10)),
            &AddressSnapshot::default(),
            &ElementWrite::new(
                &scope,
                &change,
                ElementPolicy::MustExist,
                &AddressSnapshot::default(),
            ),
        )
        .await
        .expect("open_call failed");
    assert!(matches!(outcome, OpenOutcome::Opened(_)), "got {outcome:?}");
    assert_eq!(
        element(store, &scope, "5.1").await,
        Some(Element {
            battery: Some(90.0),
            position: Some("Zimmer 5".to_string()),
            updated_at: t(10),
            version: registered.version + 1,
            ..registered
        }),
        "open_call (MustExist) must apply the change to the registered element"
    );

    let outcome = store
        .open_call(
            &new_call("5.2", "Notruf", t(20)),
            &AddressSnapshot::default(),
            &ElementWrite::new(
                &scope,
                &battery("5.2", 30.0, t(20)),
                ElementPolicy::CreateMissing,
                &AddressSnapshot::default(),
            ),
        )
        .await
        .expect("open_call failed");
    assert!(matches!(outcome, OpenOutcome::Opened(_)), "got {outcome:?}");
    assert_eq!(
        element(store, &scope, "5.2").await,
        Some(Element {
            battery: Some(30.0),
            version: 1,
            ..Element::unregistered("5.2", t(20))
        }),
        "open_call (CreateMissing) must create the unknown element"
    );

    // What open_call does with the call itself is the handler's business (it
    // checks the element first): a store may open the call or refuse with an
    // error, but it must not invent an element.
    let _ = store
        .open_call(
            &new_call("5.3", "Notruf", t(30)),
            &AddressSnapshot::default(),
            &ElementWrite::new(
                &scope,
                &battery("5.3", 30.0, t(30)),
                ElementPolicy::MustExist,
                &AddressSnapshot::default(),
            ),
        )
        .await;
    assert_eq!(
        element(store, &scope, "5.3").await,
        None,
        "open_call (MustExist) created an element"
    );
}

/// close_calls closes the listed calls that are open, each once, at the given
/// time, returns exactly those, and applies the element change either way.
pub async fn close_calls_closes_listed_open_calls(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let a = open(store, &scope, &new_call("6.1", "Notruf", t(1))).await;
    let b = open(store, &scope, &new_call("6.1", "WC", t(2))).await;
    let c = open(store, &scope, &new_call("6.1", "Hotelruf", t(3))).await;

    let closing = open_at(&[&a, &b, &a]);
    let mut closed_calls = store
        .close_calls(
            &closing,
            t(50),
            Some(CLOSER),
            &ElementWrite::new(
                &scope,
                &battery("6.1", 1.0, t(50)),
                ElementPolicy::CreateMissing,
                &closing,
            ),
        )
        .await
        .expect("close_calls failed")
        .calls();
    closed_calls.sort_by_key(|call| call.id);
    let mut expected = vec![closed(&a, t(50)), closed(&b, t(50))];
    expected.sort_by_key(|call| call.id);
    assert_eq!(
        closed_calls, expected,
        "close_calls must return each listed open call once, closed at the given time"
    );
    let snapshot = store
        .snapshot(&scope, "6.1")
        .await
        .expect("snapshot failed");
    assert_eq!(
        snapshot.open_calls,
        vec![c.clone()],
        "only the unlisted call stays open"
    );
    assert_eq!(
        snapshot.element.and_then(|e| e.battery),
        Some(1.0),
        "close_calls must apply the change"
    );

    // Closing closed calls closes nothing, but the change still lands.
    let closing = open_at(&[&a, &b]);
    let again = store
        .close_calls(
            &closing,
            t(60),
            Some(CLOSER),
            &ElementWrite::new(
                &scope,
                &battery("6.1", 2.0, t(60)),
                ElementPolicy::CreateMissing,
                &closing,
            ),
        )
        .await
        .expect("second close_calls failed")
        .calls();
    assert!(
        again.is_empty(),
        "closing closed calls must return nothing, got {again:?}"
    );
    assert_eq!(
        element(store, &scope, "6.1").await.and_then(|e| e.battery),
        Some(2.0),
        "close_calls must apply the element change even when it closes nothing"
    );
    let all = all_calls(store, &scope).await;
    assert!(
        all.contains(&closed(&a, t(50))),
        "a closed call keeps its first closed_at: {all:?}"
    );
    assert!(
        all.contains(&closed(&b, t(50))),
        "a closed call keeps its first closed_at: {all:?}"
    );

    // An empty list closes nothing.
    let none = close(store, &scope, "6.1", &[], t(70)).await;
    assert!(none.is_empty(), "closing no ids returned {none:?}");
    assert_eq!(open_calls(store, &scope, "6.1").await, vec![c]);
}

/// close_calls closes only calls of its own scope and address; unknown ids
/// are ignored.
pub async fn close_calls_ignores_other_addresses_and_unknown_ids(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let other_scope = sandbox("5e4d3c2b-1a09-4876-9543-210fedcba987");
    let x = open(store, &scope, &new_call("7.1", "Notruf", t(1))).await;
    let y = open(store, &scope, &new_call("7.2", "Notruf", t(2))).await;

    let closed_calls = close(store, &scope, "7.1", &[&y], t(10)).await;
    assert!(
        closed_calls.is_empty(),
        "close_calls on 7.1 must not close a call of 7.2, closed {closed_calls:?}"
    );
    let closed_calls = close(store, &other_scope, "7.1", &[&x], t(10)).await;
    assert!(
        closed_calls.is_empty(),
        "close_calls in another scope must not close the installation's call, closed {closed_calls:?}"
    );
    assert_eq!(
        open_calls(store, &scope, "7.1").await,
        vec![x],
        "7.1 must stay open"
    );
    assert_eq!(
        open_calls(store, &scope, "7.2").await,
        vec![y],
        "7.2 must stay open"
    );
}

/// close_calls treats the element like open_call: MustExist never creates,
/// CreateMissing creates.
pub async fn close_calls_element_policies(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let closing = open_at(&[]);
    let outcome = store
        .close_calls(
            &closing,
            t(1),
            Some(CLOSER),
            &ElementWrite::new(
                &scope,
                &battery("8.1", 5.0, t(1)),
                ElementPolicy::MustExist,
                &closing,
            ),
        )
        .await
        .expect("close_calls failed");
    assert!(
        matches!(outcome, CloseOutcome::UnknownElement),
        "close_calls (MustExist) on an unknown element must answer UnknownElement, got {outcome:?}"
    );
    assert_eq!(
        element(store, &scope, "8.1").await,
        None,
        "close_calls (MustExist) created an element"
    );

    let closing = open_at(&[]);
    let closed_calls = store
        .close_calls(
            &closing,
            t(2),
            Some(CLOSER),
            &ElementWrite::new(
                &scope,
                &battery("8.2", 6.0, t(2)),
                ElementPolicy::CreateMissing,
                &closing,
            ),
        )
        .await
        .expect("close_calls failed")
        .calls();
    assert!(closed_calls.is_empty());
    assert_eq!(
        element(store, &scope, "8.2").await,
        Some(Element {
            battery: Some(6.0),
            version: 1,
            ..Element::unregistered("8.2", t(2))
        }),
        "close_calls (CreateMissing) must create the unknown element"
    );

    let registered = register(store, &scope, "8.3", t(0)).await;
    let call = open(store, &scope, &new_call("8.3", "WC", t(1))).await;
    let closing = open_at(&[&call]);
    let closed_calls = store
        .close_calls(
            &closing,
            t(3),
            Some(CLOSER),
            &ElementWrite::new(
                &scope,
                &battery("8.3", 7.0, t(3)),
                ElementPolicy::MustExist,
                &closing,
            ),
        )
        .await
        .expect("close_calls failed")
        .calls();
    assert_eq!(closed_calls, vec![closed(&call, t(3))]);
    assert_eq!(
        element(store, &scope, "8.3").await,
        Some(Element {
            battery: Some(7.0),
            updated_at: t(3),
            version: registered.version + 1,
            ..registered
        }),
        "close_calls (MustExist) must apply the change to the registered element"
    );
}

/// Ids are unique across addresses, events and scopes, positive and at most
/// 2^53 - 1, also for calls re-opened after a close.
pub async fn call_ids_are_unique_positive_and_safe(harness: Harness) {
    let store = harness.store.as_ref();
    let scopes = [
        Scope::installation(),
        sandbox("c0ffee00-1234-4567-89ab-cdef01234567"),
    ];
    let events = ["Notruf", "WC", "Hotelruf"];
    let mut seen = std::collections::BTreeSet::new();
    let mut n = 0;
    for round in 0..2 {
        for scope in &scopes {
            for address in ["id.1", "id.2", "id.3", "id.4"] {
                for event in events {
                    n += 1;
                    let call = open(store, scope, &new_call(address, event, t(n))).await;
                    assert_id_valid(call.id, "open_call");
                    assert!(
                        seen.insert(call.id),
                        "call id {} was handed out twice",
                        call.id
                    );
                }
                if round == 0 {
                    let open = open_calls(store, scope, address).await;
                    close(
                        store,
                        scope,
                        address,
                        &open.iter().collect::<Vec<_>>(),
                        t(n),
                    )
                    .await;
                }
            }
        }
    }
    let stored: Vec<i64> = {
        let mut all = Vec::new();
        for scope in &scopes {
            all.extend(ids(&all_calls(store, scope).await));
        }
        all
    };
    assert_eq!(
        stored.len(),
        seen.len(),
        "every opened call must be stored once"
    );
    assert_eq!(
        sorted(&stored),
        seen.into_iter().collect::<Vec<_>>(),
        "stored ids"
    );
}
