//! Staff and duties on DynamoDB (moto_server): a staff member's credential
//! and roster entry written together, rotation, revocation and erasure;
//! duties replaced, ended, expired; the admin's consumer list untouched;
//! call types with their escalation policy.

mod alarm_support;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::Duration;

use nurse_call_core::{AdminStore, AlarmStore, Scope, Store, alarm::Policy, default_call_types};
use nurse_call_dynamodb::DynamoStore;

use alarm_support::{at, duty, person, store};

async fn raw_item(
    store: &DynamoStore,
    table: &str,
    key: &[(&str, &str)],
) -> Option<nurse_call_dynamodb::item::Item> {
    let mut get = store
        .client()
        .get_item()
        .table_name(table)
        .consistent_read(true);
    for (name, value) in key {
        get = get.key(*name, AttributeValue::S(value.to_string()));
    }
    get.send().await.unwrap().item
}

#[tokio::test(flavor = "multi_thread")]
async fn staff_are_found_by_token_by_id_and_by_scope_in_name_order() {
    let store = store().await;
    let scope = Scope::installation();
    let sandbox = Scope::consumer("0b6d2c1e-3f4a-4b5c-8d6e-7f8091a2b3c4");
    let mut ben = person("b-id", "Ben", &scope);
    ben.groups = vec![];
    ben.device = None;
    let anna = person("a-id", "Anna", &scope);
    let visitor = person("v-id", "Vera", &sandbox);
    for staff in [&ben, &anna, &visitor] {
        store.create_staff(staff).await.unwrap();
    }
    assert!(
        store.create_staff(&anna).await.is_err(),
        "an id or token hash taken is never overwritten"
    );

    assert_eq!(
        store.staff_by_token_hash(&anna.token_hash).await.unwrap(),
        Some(anna.clone())
    );
    assert_eq!(store.staff_by_token_hash("f00").await.unwrap(), None);
    assert_eq!(
        store.staff_member("v-id").await.unwrap(),
        Some(visitor.clone())
    );
    assert_eq!(store.staff_member("nobody").await.unwrap(), None);
    assert_eq!(
        store.staff_of(&scope).await.unwrap(),
        [anna.clone(), ben.clone()]
    );
    assert_eq!(
        store.staff_of(&sandbox).await.unwrap(),
        std::slice::from_ref(&visitor)
    );

    // The sandbox's staff go with the visitor (TTL); the installation's stay.
    let key = format!("staff#{}", visitor.token_hash);
    let credential = raw_item(&store, &store.tables().consumers, &[("id", &key)])
        .await
        .unwrap();
    assert!(credential.contains_key("ttl"));
    let key = format!("staff#{}", anna.token_hash);
    let credential = raw_item(&store, &store.tables().consumers, &[("id", &key)])
        .await
        .unwrap();
    assert!(!credential.contains_key("ttl"));

    assert!(
        store.consumers().await.unwrap().is_empty(),
        "staff are no consumers of the admin's list"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rotation_replaces_the_token_and_revocation_keeps_the_member_without_duty() {
    let store = store().await;
    let scope = Scope::installation();
    let anna = person("a-id", "Anna", &scope);
    store.create_staff(&anna).await.unwrap();
    store
        .put_duty(&duty(&anna, &["S1"], at(3600)))
        .await
        .unwrap();

    let new_hash = "e".repeat(64);
    assert!(store.replace_staff_token("a-id", &new_hash).await.unwrap());
    assert!(
        !store
            .replace_staff_token("nobody", &new_hash)
            .await
            .unwrap()
    );
    assert_eq!(
        store.staff_by_token_hash(&anna.token_hash).await.unwrap(),
        None,
        "the old token stops"
    );
    let rotated = store.staff_by_token_hash(&new_hash).await.unwrap().unwrap();
    assert_eq!(rotated.id, "a-id");
    assert_eq!(
        store.staff_of(&scope).await.unwrap()[0].token_hash,
        new_hash
    );

    assert!(store.revoke_staff("a-id").await.unwrap());
    assert!(!store.revoke_staff("nobody").await.unwrap());
    assert!(
        store
            .staff_by_token_hash(&new_hash)
            .await
            .unwrap()
            .unwrap()
            .revoked
    );
    assert!(store.staff_member("a-id").await.unwrap().unwrap().revoked);
    assert!(store.staff_of(&scope).await.unwrap()[0].revoked);
    assert!(
        store.duties(&scope, at(0)).await.unwrap().is_empty(),
        "their duty ended"
    );

    assert!(store.erase_staff("a-id").await.unwrap());
    assert!(!store.erase_staff("a-id").await.unwrap());
    assert_eq!(store.staff_by_token_hash(&new_hash).await.unwrap(), None);
    assert!(store.staff_of(&scope).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_duty_is_replaced_ended_and_over_at_its_until() {
    let store = store().await;
    let scope = Scope::installation();
    let anna = person("a-id", "Anna", &scope);
    let ben = person("b-id", "Ben", &scope);
    store.put_duty(&duty(&ben, &[], at(60))).await.unwrap();
    store
        .put_duty(&duty(&anna, &["S1"], at(3600)))
        .await
        .unwrap();
    let whole_house = duty(&anna, &[], at(7200));
    store.put_duty(&whole_house).await.unwrap();

    assert_eq!(
        store.duties(&scope, at(0)).await.unwrap(),
        [whole_house.clone(), duty(&ben, &[], at(60))]
    );
    assert_eq!(
        store.duties(&scope, at(60)).await.unwrap(),
        std::slice::from_ref(&whole_house),
        "ben's ended"
    );
    assert!(
        store
            .duties(&Scope::consumer("other"), at(0))
            .await
            .unwrap()
            .is_empty()
    );

    // DynamoDB's TTL removes it after `until` (rounded up to the second).
    let item = raw_item(
        &store,
        &store.tables().data,
        &[("pk", "duty#installation"), ("sk", "a-id")],
    )
    .await
    .unwrap();
    assert_eq!(
        item["ttl"],
        AttributeValue::N((at(7200) + Duration::seconds(1)).timestamp().to_string())
    );

    assert!(store.end_duty(&scope, "a-id").await.unwrap());
    assert!(
        !store.end_duty(&scope, "a-id").await.unwrap(),
        "no duty any more"
    );
    assert_eq!(store.duties(&scope, at(0)).await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn call_types_keep_their_escalation_policy() {
    let store = store().await;
    let seeded = store.call_types().await.unwrap().types;
    let notruf = seeded.iter().find(|t| t.name == "Notruf").unwrap();
    assert_eq!(notruf.escalation, Policy::seeded("Notruf").unwrap());
    let item = raw_item(&store, &store.tables().call_types, &[("name", "Notruf")])
        .await
        .unwrap();
    assert_eq!(
        item["escalation"],
        AttributeValue::S(notruf.escalation.to_json())
    );

    let mut shortened = default_call_types()
        .into_iter()
        .find(|t| t.name == "Notruf")
        .unwrap();
    shortened.escalation = Policy::parse(
        r#"[{"after":0,"to":"section"},{"after":2,"to":"house"},{"after":4,"to":"group:Leitung"}]"#,
    )
    .unwrap();
    store.put_call_type(&shortened).await.unwrap();
    let read = store.call_types().await.unwrap();
    assert!(read.fallbacks.is_empty(), "{:?}", read.fallbacks);
    let notruf = read.types.iter().find(|t| t.name == "Notruf").unwrap();
    assert_eq!(notruf.escalation, shortened.escalation);
}

/// The `credential#gone` markers in the data table (DECISIONS §20: their
/// stream records make `broadcast` close the holder's connections), as
/// (kind#id, scope, holder attribute) without the time.
async fn credential_markers(store: &DynamoStore) -> Vec<(String, String, String)> {
    let items = store
        .client()
        .query()
        .table_name(&store.tables().data)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", AttributeValue::S("credential#gone".into()))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .items
        .unwrap_or_default();
    let text = |item: &nurse_call_dynamodb::item::Item, key: &str| {
        item.get(key)
            .and_then(|value| value.as_s().ok())
            .cloned()
            .unwrap_or_default()
    };
    let mut markers: Vec<(String, String, String)> = items
        .iter()
        .map(|item| {
            let sk = text(item, "sk");
            let holder = text(item, "staff_id") + &text(item, "display_id");
            assert!(item.contains_key("ttl"), "a marker expires");
            let mut parts = sk.splitn(3, '#');
            let (kind, id) = (
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
            );
            (format!("{kind}#{id}"), text(item, "scope"), holder)
        })
        .collect();
    markers.sort();
    markers
}

#[tokio::test(flavor = "multi_thread")]
async fn rotate_revoke_and_erase_leave_a_marker_that_closes_the_holders_connections() {
    let store = store().await;
    let scope = Scope::installation();
    let sandbox = Scope::consumer("0b6d2c1e-3f4a-4b5c-8d6e-7f8091a2b3c4");
    let (anna, ben, vera) = (
        person("a-id", "Anna", &scope),
        person("b-id", "Ben", &scope),
        person("v-id", "Vera", &sandbox),
    );
    for staff in [&anna, &ben, &vera] {
        store.create_staff(staff).await.unwrap();
    }
    let flur = nurse_call_core::Display {
        id: "d-flur".into(),
        name: "Flur".into(),
        sections: vec![],
        scope: scope.clone(),
        token_hash: "ab".repeat(32),
        created_at: at(0),
        revoked: false,
    };
    store.create_display(&flur).await.unwrap();
    assert_eq!(credential_markers(&store).await, []);

    assert!(
        store
            .replace_staff_token("a-id", &"cd".repeat(32))
            .await
            .unwrap()
    );
    assert!(store.revoke_staff("b-id").await.unwrap());
    assert!(store.erase_staff("v-id").await.unwrap());
    assert!(
        store
            .replace_display_token("d-flur", &"ef".repeat(32))
            .await
            .unwrap()
    );
    assert!(store.revoke_display("d-flur").await.unwrap());
    assert!(!store.revoke_display("nobody").await.unwrap());
    let installation = "installation".to_string();
    assert_eq!(
        credential_markers(&store).await,
        [
            (
                "display#d-flur".into(),
                installation.clone(),
                "d-flur".into()
            ),
            (
                "display#d-flur".into(),
                installation.clone(),
                "d-flur".into()
            ),
            ("staff#a-id".into(), installation.clone(), "a-id".into()),
            ("staff#b-id".into(), installation, "b-id".into()),
            (
                "staff#v-id".into(),
                sandbox.as_str().to_string(),
                "v-id".into()
            ),
        ]
    );
}
