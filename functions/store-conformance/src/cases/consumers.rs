//! Consumers: stored and read back whole; expired sandbox consumers are purged
//! together with their data.

use chrono::Duration;

use nurse_call_core::{Consumer, ElementPolicy, Scope};

use crate::Harness;
use crate::support::*;

/// `create_consumer` stores every field; `consumer` reads it back, or `None`.
pub async fn consumer_round_trip(harness: Harness) {
    let store = harness.store.as_ref();
    let production = Consumer {
        id: "3f2b8c1e-9d4a-4e6b-8a7c-1d2e3f4a5b6c".to_string(),
        name: "Central system".to_string(),
        secrets: vec!["a".repeat(64), "b".repeat(64)],
        allow_sha1: true,
        created_at: t(0),
        expires_at: None,
        require_signed_time: true,
        heartbeat_seconds: None,
    };
    let sandbox_consumer = Consumer {
        id: "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d".to_string(),
        name: String::new(),
        secrets: vec!["c".repeat(64)],
        allow_sha1: false,
        created_at: now(),
        expires_at: Some(now() + Duration::days(Consumer::SANDBOX_LIFETIME_DAYS)),
        require_signed_time: false,
        heartbeat_seconds: None,
    };
    for c in [&production, &sandbox_consumer] {
        store
            .create_consumer(c)
            .await
            .unwrap_or_else(|e| panic!("create_consumer({}) failed: {e}", c.id));
    }
    for c in [&production, &sandbox_consumer] {
        let read = store
            .consumer(&c.id)
            .await
            .unwrap_or_else(|e| panic!("consumer({}) failed: {e}", c.id));
        let read = read.unwrap_or_else(|| panic!("consumer {} was created but is not found", c.id));
        assert_eq!(
            read.id, c.id,
            "consumer id changed on the way through the store"
        );
        assert_eq!(read.name, c.name, "consumer {}: name", c.id);
        assert_eq!(
            read.secrets, c.secrets,
            "consumer {}: secrets (order matters: newest last)",
            c.id
        );
        assert_eq!(
            read.allow_sha1, c.allow_sha1,
            "consumer {}: allow_sha1",
            c.id
        );
        assert_eq!(
            read.require_signed_time, c.require_signed_time,
            "consumer {}: require_signed_time",
            c.id
        );
        assert_eq!(
            read.created_at, c.created_at,
            "consumer {}: created_at",
            c.id
        );
        assert_eq!(
            read.expires_at, c.expires_at,
            "consumer {}: expires_at",
            c.id
        );
    }
    let missing = store
        .consumer("00000000-0000-4000-8000-000000000000")
        .await
        .expect("consumer(unknown) failed");
    assert!(
        missing.is_none(),
        "an unknown consumer id must read as None, got {missing:?}"
    );
}

/// `purge_expired(now)` removes the consumers whose `expires_at <= now` with
/// every call and element of their scope, and returns how many it removed.
/// Live sandbox consumers, production consumers and the installation's data
/// stay. A store with native expiry may return 0 and leave the expired ones.
pub async fn purge_expired_removes_expired_consumers_and_their_data(harness: Harness) {
    let store = harness.store.as_ref();
    let now = now();
    let expired = consumer(
        "11111111-1111-4111-8111-111111111111",
        Some(now - Duration::days(1)),
    );
    let expiring_now = consumer("22222222-2222-4222-8222-222222222222", Some(now));
    let live = consumer(
        "33333333-3333-4333-8333-333333333333",
        Some(now + Duration::days(29)),
    );
    let production = consumer("44444444-4444-4444-8444-444444444444", None);
    for c in [&expired, &expiring_now, &live, &production] {
        store
            .create_consumer(c)
            .await
            .unwrap_or_else(|e| panic!("create_consumer({}) failed: {e}", c.id));
    }
    let installation = Scope::installation();
    let scopes = [
        sandbox(&expired.id),
        sandbox(&expiring_now.id),
        sandbox(&live.id),
        installation.clone(),
    ];
    for (i, scope) in scopes.iter().enumerate() {
        let i = i as i64;
        register(store, scope, "purge-1", t(i)).await;
        open(store, scope, &new_call("purge-1", "Notruf", t(10 + i))).await;
        let closed_call = open(store, scope, &new_call("purge-2", "WC", t(20 + i))).await;
        close(store, scope, "purge-2", &[&closed_call], t(30 + i)).await;
        expect_updated(
            update(
                store,
                scope,
                &[battery("purge-3", 50.0, t(40 + i))],
                ElementPolicy::CreateMissing,
            )
            .await,
            "creating a sandbox element before the purge",
        );
    }

    let purged = store
        .purge_expired(now)
        .await
        .expect("purge_expired failed");

    // Nothing live is lost, whatever the store's way of expiring.
    for c in [&live, &production] {
        let read = store.consumer(&c.id).await.expect("consumer failed");
        assert!(
            read.is_some(),
            "purge_expired removed consumer {} which has not expired",
            c.id
        );
    }
    for scope in [&scopes[2], &scopes[3]] {
        let calls = all_calls(store, scope).await;
        assert_eq!(
            calls.len(),
            2,
            "purge_expired removed calls of live scope {}: {calls:?}",
            scope.as_str()
        );
        let elements = all_elements(store, scope).await;
        assert_eq!(
            elements.len(),
            3,
            "purge_expired removed elements of live scope {}: {elements:?}",
            scope.as_str()
        );
    }

    if !harness.purges_expired {
        assert!(
            purged <= 2,
            "purge_expired reported {purged} consumers removed, only 2 had expired"
        );
        return;
    }
    assert_eq!(
        purged, 2,
        "purge_expired must report the two consumers with expires_at <= now"
    );
    for c in [&expired, &expiring_now] {
        let read = store.consumer(&c.id).await.expect("consumer failed");
        assert!(
            read.is_none(),
            "consumer {} expired (expires_at <= now) but survived the purge",
            c.id
        );
    }
    for scope in [&scopes[0], &scopes[1]] {
        let calls = all_calls(store, scope).await;
        assert!(
            calls.is_empty(),
            "calls of purged scope {} survived: {calls:?}",
            scope.as_str()
        );
        let elements = all_elements(store, scope).await;
        assert!(
            elements.is_empty(),
            "elements of purged scope {} survived: {elements:?}",
            scope.as_str()
        );
        let snapshot = store
            .snapshot(scope, "purge-1")
            .await
            .expect("snapshot failed");
        assert!(
            snapshot.element.is_none() && snapshot.open_calls.is_empty(),
            "snapshot of purged scope {} still shows data: {snapshot:?}",
            scope.as_str()
        );
    }
    let again = store
        .purge_expired(now)
        .await
        .expect("second purge_expired failed");
    assert_eq!(
        again, 0,
        "a second purge at the same instant must find nothing to remove"
    );
}
