//! The contract of [`AdminStore`] (the admin command's operations), run by
//! each store crate against a fresh store with the default call types seeded:
//!
//! ```ignore
//! store_conformance::admin::contract(&store).await;
//! ```

use nurse_call_core::admin::{AdminStore, SecretsReplaced, new_consumer};
use nurse_call_core::call_types::default_call_types;
use nurse_call_core::displays::{new_display, token_hash};
use nurse_call_core::model::{ElementChange, ElementPolicy, Scope};
use nurse_call_core::wire_time;

/// Every admin operation once, with its refusals.
pub async fn contract(store: &dyn AdminStore) {
    store.check().await.expect("a fresh store is ready");
    consumers(store).await;
    displays(store).await;
    elements(store).await;
    call_types(store).await;
}

async fn consumers(store: &dyn AdminStore) {
    let now = wire_time::now();
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

async fn elements(store: &dyn AdminStore) {
    let scope = Scope::installation();
    let now = wire_time::now();
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
        .update_elements(&sandbox, &[change], ElementPolicy::CreateMissing)
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

async fn call_types(store: &dyn AdminStore) {
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
    let types = store.call_types().await.unwrap();
    assert_eq!(types.len(), 11);
    assert_eq!(types.iter().find(|t| t.name == "Notruf"), Some(&notruf));
    assert_eq!(types.last(), Some(&extra), "ordered by id");
}

/// A display is found by its token's hash, and only by it.
async fn displays(admin: &dyn AdminStore) {
    let consumers_before = admin.consumers().await.unwrap().len();
    let (display, token) =
        new_display("Flur", &["S1".to_string()], wire_time::now()).expect("random");
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
