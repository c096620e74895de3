//! Scopes: the installation and every sandbox consumer see only their own data.

use chrono::Duration;

use nurse_call_core::{ElementPolicy, ElementsOutcome, Scope};

use crate::Harness;
use crate::support::*;

/// Calls and elements of one scope are invisible to, and untouchable from,
/// every other scope, even at the same address and event.
pub async fn scopes_are_isolated(harness: Harness) {
    let store = harness.store.as_ref();
    let a_id = "aaaaaaaa-0000-4000-8000-00000000000a";
    let b_id = "bbbbbbbb-0000-4000-8000-00000000000b";
    for id in [a_id, b_id] {
        store
            .create_consumer(&consumer(id, Some(now() + Duration::days(30))))
            .await
            .expect("create_consumer failed");
    }
    let installation = Scope::installation();
    let a = sandbox(a_id);
    let b = sandbox(b_id);

    // An element registered in one scope does not exist in another.
    let registered = register(store, &installation, "shared", t(0)).await;
    let outcome = update(
        store,
        &a,
        &[battery("shared", 1.0, t(1))],
        ElementPolicy::MustExist,
    )
    .await;
    assert!(
        matches!(&outcome, ElementsOutcome::Unknown(u) if u == &["shared".to_string()]),
        "an element registered in the installation must be unknown in a sandbox scope, got {outcome:?}"
    );
    assert_eq!(element(store, &a, "shared").await, None);

    // The same event at the same address opens once per scope.
    let mut opened = Vec::new();
    for (i, scope) in [&installation, &a, &b].into_iter().enumerate() {
        let call = open(
            store,
            scope,
            &new_call("shared", "Notruf", t(10 + i as i64)),
        )
        .await;
        opened.push(call);
    }
    let mut distinct = ids(&opened);
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        3,
        "calls of different scopes need different ids: {opened:?}"
    );

    // A change in one scope stays there.
    expect_updated(
        update(
            store,
            &a,
            &[battery("shared", 77.0, t(20))],
            ElementPolicy::CreateMissing,
        )
        .await,
        "creating the element in scope a",
    );
    assert_eq!(
        element(store, &installation, "shared").await,
        Some(registered),
        "a sandbox change reached the installation's element"
    );
    assert_eq!(
        element(store, &b, "shared").await.and_then(|e| e.battery),
        None,
        "a change in scope a reached scope b"
    );

    // A close in one scope closes only its own call, even given every id.
    let closed_calls = close(
        store,
        &b,
        "shared",
        &opened.iter().collect::<Vec<_>>(),
        t(30),
    )
    .await;
    assert_eq!(
        ids(&closed_calls),
        vec![opened[2].id],
        "close_calls in scope b must close only b's call"
    );
    assert_eq!(
        open_calls(store, &installation, "shared").await,
        vec![opened[0].clone()]
    );
    assert_eq!(
        open_calls(store, &a, "shared").await,
        vec![opened[1].clone()]
    );
    assert!(open_calls(store, &b, "shared").await.is_empty());

    // The lists show each scope its own.
    assert_eq!(
        all_calls(store, &installation).await,
        vec![opened[0].clone()],
        "installation's calls"
    );
    assert_eq!(
        all_calls(store, &a).await,
        vec![opened[1].clone()],
        "scope a's calls"
    );
    assert_eq!(
        all_calls(store, &b).await,
        vec![closed(&opened[2], t(30))],
        "scope b's calls"
    );
    for scope in [&installation, &a, &b] {
        let elements = all_elements(store, scope).await;
        assert_eq!(
            elements
                .iter()
                .map(|e| e.address.as_str())
                .collect::<Vec<_>>(),
            ["shared"],
            "scope {} must list only its own element",
            scope.as_str()
        );
    }
}
