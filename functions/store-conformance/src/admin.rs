//! The contract of [`AdminStore`] (the admin command's operations), run by
//! each store crate against a fresh store with the default call types seeded:
//!
//! ```ignore
//! store_conformance::admin::contract(&store).await;
//! store_conformance::admin::erasure(&store).await;
//! ```

mod erasure;

pub use erasure::erasure;

use nurse_call_core::{
    AddressSnapshot, Backend, Call, ElementBatch, ElementChange, ElementPolicy, ElementWrite,
    NewCall, OpenOutcome, Scope, SecretsReplaced, clock, default_call_types,
    secrets::new_consumer,
    tokens::{new_display, token_hash},
};

use crate::support::{CLOSER, OPENER, close, new_call, t};

/// Every admin operation once, with its refusals.
pub async fn contract(store: &dyn Backend) {
    store.check().await.expect("a fresh store is ready");
    consumers(store).await;
    displays(store).await;
    elements(store).await;
    call_types(store).await;
    calls_by_opening(store).await;
}

async fn consumers(store: &dyn Backend) {
    let now = clock::now();
    let first = new_consumer("first", false, false, now).unwrap();
    let second = new_consumer("second", true, true, now + chrono::Duration::seconds(1)).unwrap();
    store.create_consumer(&first).await.unwrap();
    store.create_consumer(&second).await.unwrap();

    let listed = store.consumers().await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, [first.id.as_str(), second.id.as_str()], "oldest first");
    assert_eq!(listed[1], second);

    let rotated = vec![first.secrets[0].clone(), "new".to_string()];
    assert_eq!(
        store
            .replace_secrets(&first.id, &first.secrets, &rotated)
            .await
            .unwrap(),
        SecretsReplaced::Replaced
    );
    assert_eq!(
        store.consumer(&first.id).await.unwrap().unwrap().secrets,
        rotated
    );
    // Expecting the old secrets again: someone changed them meanwhile.
    assert_eq!(
        store
            .replace_secrets(&first.id, &first.secrets, &["x".to_string()])
            .await
            .unwrap(),
        SecretsReplaced::Changed
    );
    assert_eq!(
        store.consumer(&first.id).await.unwrap().unwrap().secrets,
        rotated,
        "a refused replacement writes nothing"
    );
    let retired = vec!["new".to_string()];
    assert_eq!(
        store
            .replace_secrets(&first.id, &rotated, &retired)
            .await
            .unwrap(),
        SecretsReplaced::Replaced
    );
    assert_eq!(
        store.consumer(&first.id).await.unwrap().unwrap().secrets,
        retired
    );
    let unknown = "00000000-0000-4000-8000-000000000000";
    assert_eq!(
        store
            .replace_secrets(unknown, &retired, &retired)
            .await
            .unwrap(),
        SecretsReplaced::UnknownConsumer
    );

    // Replay protection switches on and off; an unknown consumer is reported.
    assert!(
        !store
            .consumer(&first.id)
            .await
            .unwrap()
            .unwrap()
            .require_signed_time
    );
    assert!(
        store
            .set_require_signed_time(&first.id, true)
            .await
            .unwrap()
    );
    assert!(
        store
            .consumer(&first.id)
            .await
            .unwrap()
            .unwrap()
            .require_signed_time
    );
    assert!(
        store
            .set_require_signed_time(&first.id, false)
            .await
            .unwrap()
    );
    assert!(
        !store
            .consumer(&first.id)
            .await
            .unwrap()
            .unwrap()
            .require_signed_time
    );
    assert!(!store.set_require_signed_time(unknown, true).await.unwrap());
    assert!(
        store.consumer(unknown).await.unwrap().is_none(),
        "switching an unknown consumer creates nothing"
    );

    assert!(store.delete_consumer(&first.id).await.unwrap());
    assert!(store.consumer(&first.id).await.unwrap().is_none());
    assert!(!store.delete_consumer(&first.id).await.unwrap());
    assert_eq!(store.consumers().await.unwrap(), [second]);
}

async fn elements(store: &dyn Backend) {
    let scope = Scope::installation();
    let now = clock::now();
    for (address, code) in [("B-2", "Z2"), ("A-1", "Z1")] {
        store
            .register_element(&scope, address, code, "Zimmer", now)
            .await
            .unwrap();
    }
    // Another scope's elements are not listed.
    let sandbox = Scope::consumer("00000000-0000-4000-8000-000000000001");
    let change = ElementChange {
        address: "C-3".into(),
        battery: Some(50.0),
        position: None,
        reachable: None,
        at: now,
    };
    store
        .update_elements(&ElementBatch::new(
            &sandbox,
            &[change],
            ElementPolicy::CreateMissing,
        ))
        .await
        .unwrap();

    let listed = store.elements(&scope).await.unwrap();
    let addresses: Vec<&str> = listed.iter().map(|e| e.address.as_str()).collect();
    assert_eq!(addresses, ["A-1", "B-2"], "ordered by address");
    assert_eq!(listed[0].code, "Z1");

    assert!(store.remove_element(&scope, "A-1").await.unwrap());
    assert!(!store.remove_element(&scope, "A-1").await.unwrap());
    assert!(
        store
            .snapshot(&scope, "A-1")
            .await
            .unwrap()
            .element
            .is_none()
    );
    let addresses: Vec<String> = store
        .elements(&scope)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.address)
        .collect();
    assert_eq!(addresses, ["B-2"]);
}

async fn call_types(store: &dyn Backend) {
    let mut notruf = default_call_types()
        .into_iter()
        .find(|t| t.name == "Notruf")
        .unwrap();
    notruf.internal_name = "NR".into();
    notruf.color = "#ff0000".into();
    store.put_call_type(&notruf).await.unwrap();
    let mut extra = notruf.clone();
    extra.id = 11;
    extra.name = "Sonderruf".into();
    store.put_call_type(&extra).await.unwrap();

    // Seeding again keeps the edit.
    store.seed_call_types(&default_call_types()).await.unwrap();
    let types = store.call_types().await.unwrap().types;
    assert_eq!(types.len(), 11);
    assert_eq!(types.iter().find(|t| t.name == "Notruf"), Some(&notruf));
    assert_eq!(types.last(), Some(&extra), "ordered by id");
}

/// A display is found by its token's hash, and only by it.
async fn displays(admin: &dyn Backend) {
    let consumers_before = admin.consumers().await.unwrap().len();
    let (display, token) = new_display("Flur", &["S1".to_string()], clock::now()).expect("random");
    admin
        .create_display(&display)
        .await
        .expect("create_display");
    let found = admin
        .display_by_token_hash(&token_hash(&token))
        .await
        .expect("display_by_token_hash");
    assert_eq!(found, Some(display.clone()));
    assert_eq!(
        admin
            .display_by_token_hash(&token_hash("not the token"))
            .await
            .expect("display_by_token_hash"),
        None
    );
    // Rotation: the old hash no longer finds it, the new one does.
    let new_hash = token_hash("a new token");
    assert!(
        admin
            .replace_display_token(&display.id, &new_hash)
            .await
            .expect("rotate")
    );
    assert_eq!(
        admin
            .display_by_token_hash(&display.token_hash)
            .await
            .expect("lookup"),
        None,
        "a rotated-away token must not be found"
    );
    assert!(admin.revoke_display(&display.id).await.expect("revoke"));
    let revoked = admin
        .display_by_token_hash(&new_hash)
        .await
        .expect("lookup")
        .expect("still listed");
    assert!(revoked.revoked);
    assert!(
        !admin
            .revoke_display("00000000-0000-4000-8000-000000000000")
            .await
            .expect("revoke")
    );
    let listed = admin.displays().await.expect("displays");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].token_hash, new_hash);
    assert_eq!(
        admin.consumers().await.unwrap().len(),
        consumers_before,
        "displays are not consumers"
    );
}
/// The report's read: calls opened in `[from, to)` of one scope, in opening
/// order, closed ones with their close, who opened and closed them kept.
async fn calls_by_opening(store: &dyn Backend) {
    let scope = Scope::installation();
    let (from, to) = (t(0), t(3600));
    let before = open_in(store, new_call("R-1", "Normalruf", t(-1)), &scope).await;
    let at_from = open_in(store, new_call("R-2", "Normalruf", from), &scope).await;
    let last = open_in(store, new_call("R-1", "WC", t(3599)), &scope).await;
    let middle = open_in(store, new_call("R-3", "Notruf", t(1800)), &scope).await;
    let at_to = open_in(store, new_call("R-4", "Normalruf", to), &scope).await;
    let sandbox = Scope::consumer("00000000-0000-4000-8000-000000000002");
    open_in(store, new_call("R-2", "WC", t(60)), &sandbox).await;
    let closed = close(store, &scope, "R-3", &[&middle], t(1900)).await;
    assert_eq!(closed.len(), 1);

    let found = store
        .calls_opened_between(&scope, from, to)
        .await
        .expect("calls_opened_between");
    let ids: Vec<i64> = found.iter().map(|c| c.id).collect();
    assert_eq!(
        ids,
        [at_from.id, middle.id, last.id],
        "from inclusive, to exclusive, in opening order, one scope only \
         (before {}, at to {})",
        before.id,
        at_to.id
    );
    assert_eq!(found[0], at_from, "an open call as opened");
    assert_eq!(found[1].closed_at, Some(t(1900)));
    assert_eq!(found[1].opened_by.as_deref(), Some(OPENER));
    assert_eq!(found[1].closed_by.as_deref(), Some(CLOSER));
    assert_eq!(found[2].closed_by, None, "open: nobody closed it");
    assert!(
        store
            .calls_opened_between(&scope, to, from)
            .await
            .unwrap()
            .is_empty(),
        "an empty span"
    );
}

async fn open_in(store: &dyn Backend, call: NewCall, scope: &Scope) -> Call {
    let change = ElementChange {
        address: call.address.clone(),
        battery: None,
        position: None,
        reachable: None,
        at: call.opened_at,
    };
    match store
        .open_call(
            &call,
            &AddressSnapshot::default(),
            &ElementWrite::new(
                scope,
                &change,
                ElementPolicy::CreateMissing,
                &AddressSnapshot::default(),
            ),
        )
        .await
        .unwrap()
    {
        OpenOutcome::Opened(opened) => opened,
        OpenOutcome::AlreadyOpen(call) => panic!("already open: {call:?}"),
        OpenOutcome::UnknownElement => panic!("CreateMissing answered UnknownElement"),
    }
}
