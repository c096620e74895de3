//! Items edited by hand in the DynamoDB console (DECISIONS §7), on moto:
//! any attribute may have any type; each wrong one is a fallback of that
//! field (call types) or that one credential refused (consumers, displays).

use aws_sdk_dynamodb::types::AttributeValue;
use nurse_call_core::{
    AdminStore, CallTypeItem, Store, alarm::Policy, credentials::Stored, default_call_types,
};
use nurse_call_dynamodb::item::{Item, call_type_item, display_key};
use nurse_call_dynamodb::{DynamoStore, TableNames, Timeouts};
use store_conformance::moto;

async fn seeded() -> DynamoStore {
    let store = DynamoStore::connect_with(
        Some(&moto::endpoint()),
        TableNames::with_prefix(&moto::unique_prefix()),
        Timeouts::SLOW_STAND_IN,
    )
    .await;
    store.create_missing_tables().await.unwrap();
    store.seed_call_types(&default_call_types()).await.unwrap();
    store
}

async fn put(store: &DynamoStore, table: &str, item: Item) {
    store
        .client()
        .put_item()
        .table_name(table)
        .set_item(Some(item))
        .send()
        .await
        .expect("item put");
}

fn s(text: &str) -> AttributeValue {
    AttributeValue::S(text.into())
}

/// The seeded item of `name` with `changes`.
fn seeded_item(name: &str, changes: &[(&str, AttributeValue)]) -> Item {
    let seeded = default_call_types()
        .into_iter()
        .find(|t| t.name == name)
        .expect("a seeded name");
    let mut item = call_type_item(&seeded);
    for (key, value) in changes {
        item.insert(key.to_string(), value.clone());
    }
    item
}

#[tokio::test]
async fn each_hand_edit_of_issue_24_is_a_fallback_of_that_field() {
    let store = seeded().await;
    let table = store.tables().call_types.clone();
    let edits = [
        seeded_item("Normalruf", &[("priority", s("high"))]),
        seeded_item("WC", &[("color", s("red")), ("notify", s("yes"))]),
        Item::from([
            ("name".into(), s("Ohne Id")),
            ("priority".into(), AttributeValue::N("4".into())),
        ]),
        Item::from([
            ("name".into(), s("Doppelt")),
            ("id".into(), AttributeValue::N("7".into())),
        ]),
        Item::from([
            ("name".into(), s("Riesig")),
            (
                "id".into(),
                AttributeValue::N("100000000000000000000".into()),
            ),
            (
                "priority".into(),
                AttributeValue::N("100000000000000000000".into()),
            ),
        ]),
        Item::from([
            ("name".into(), s(" ")),
            ("id".into(), AttributeValue::N("12".into())),
        ]),
        Item::from([
            ("name".into(), s("Liste")),
            ("id".into(), AttributeValue::L(vec![])),
        ]),
    ];
    for item in edits {
        put(&store, &table, item).await;
    }
    let read = store.call_types().await.expect("read");
    let by_name = |name: &str| read.types.iter().find(|t| t.name == name).unwrap();
    assert_eq!(by_name("Normalruf").priority, 3);
    assert_eq!(by_name("WC").color, "#e67e22");
    assert!(by_name("WC").notify);
    assert_eq!(by_name("Notruf").id, 7);
    assert_eq!(read.types.iter().filter(|t| t.id == 7).count(), 1);
    assert_eq!(by_name("Riesig").priority, 5);
    assert!(read.types.iter().all(|t| t.name.trim() != ""));
    let ids: std::collections::HashSet<i64> = read.types.iter().map(|t| t.id).collect();
    assert_eq!(ids.len(), read.types.len(), "ids are unique");

    let fields = |item: &str| -> Vec<(&str, &str)> {
        read.fallbacks
            .iter()
            .filter(|f| f.item == item)
            .map(|f| (f.field, f.found.as_str()))
            .collect()
    };
    assert_eq!(fields("Normalruf"), [("priority", "\"high\"")]);
    assert_eq!(fields("WC"), [("color", "\"red\""), ("notify", "\"yes\"")]);
    assert_eq!(fields("Doppelt")[0], ("id", "7"));
    assert_eq!(fields("Ohne Id")[0], ("id", "missing"));
    let riesig: Vec<_> = fields("Riesig")
        .into_iter()
        .filter(|(field, _)| ["id", "priority"].contains(field))
        .collect();
    assert_eq!(
        riesig,
        [
            ("id", "100000000000000000000"),
            ("priority", "100000000000000000000")
        ]
    );
    assert_eq!(fields(" "), [("name", "\" \"")]);
    assert_eq!(fields("Liste")[0], ("id", "a list of 0"));

    // The same items, read again: the same ids (stable across reads).
    assert_eq!(store.call_types().await.unwrap(), read);
}

#[tokio::test]
async fn a_seeded_item_reads_back_field_by_field_as_written() {
    let store = seeded().await;
    let items = store.call_type_items().await.unwrap();
    for seeded in default_call_types() {
        assert!(
            items.contains(&CallTypeItem::from(&seeded)),
            "{}",
            seeded.name
        );
    }
}

#[tokio::test]
async fn a_malformed_consumer_or_display_is_refused_alone() {
    let store = seeded().await;
    let table = store.tables().consumers.clone();
    let consumer = |id: &str, secrets: AttributeValue| {
        Item::from([
            ("id".into(), s(id)),
            ("name".into(), s("Zentrale")),
            ("secrets".into(), secrets),
        ])
    };
    put(
        &store,
        &table,
        consumer("c-good", AttributeValue::L(vec![s("secret")])),
    )
    .await;
    put(
        &store,
        &table,
        consumer("c-set", AttributeValue::Ss(vec!["secret".into()])),
    )
    .await;
    put(&store, &table, consumer("c-text", s("secret"))).await;
    put(
        &store,
        &table,
        consumer(
            "c-number",
            AttributeValue::L(vec![AttributeValue::N("5".into())]),
        ),
    )
    .await;
    let display = |id: &str, hash: &str, sections: AttributeValue| {
        Item::from([
            ("id".into(), s(&display_key(hash))),
            ("display_id".into(), s(id)),
            ("name".into(), s("Flur")),
            ("sections".into(), sections),
            ("scope".into(), s("installation")),
            ("token_hash".into(), s(hash)),
            ("revoked".into(), AttributeValue::Bool(false)),
        ])
    };
    put(
        &store,
        &table,
        display("d-good", "h-good", AttributeValue::L(vec![s("S1")])),
    )
    .await;
    put(&store, &table, display("d-bad", "h-bad", s("S1"))).await;

    assert!(store.consumer("c-good").await.unwrap().is_some());
    assert!(
        store.consumer("c-set").await.unwrap().is_some(),
        "a string set is a list"
    );
    for (id, problem) in [
        ("c-text", "text, not a list"),
        ("c-number", "a list with a number in it"),
    ] {
        match store.stored_consumer(id).await.unwrap() {
            Some(Stored::Malformed(m)) => {
                assert_eq!((m.field, m.problem.as_str()), ("secrets", problem))
            }
            other => panic!("{id}: {other:?}"),
        }
        assert_eq!(store.consumer(id).await.unwrap(), None);
    }
    assert!(
        store
            .display_by_token_hash("h-good")
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(store.display_by_token_hash("h-bad").await.unwrap(), None);
    let error = store.consumers().await.unwrap_err().to_string();
    assert!(!error.contains("secret\""), "{error}");
}

/// An escalation policy edited by hand (DECISIONS §14): a valid one is
/// used as written, an invalid one falls back to `section 0, house 60`,
/// and a missing one is the seeded policy of the name.
#[tokio::test]
async fn an_escalation_edited_by_hand_is_used_or_falls_back() {
    let store = seeded().await;
    let table = store.tables().call_types.clone();
    let shortened = r#"[{"after":0,"to":"section"},{"after":2,"to":"house"}]"#;
    put(
        &store,
        &table,
        seeded_item("WC", &[("escalation", s(shortened))]),
    )
    .await;
    let starts_late = r#"[{"after":9,"to":"house"}]"#;
    put(
        &store,
        &table,
        seeded_item("Notruf", &[("escalation", s(starts_late))]),
    )
    .await;
    let mut unwritten = seeded_item("Hotelruf", &[]);
    unwritten.remove("escalation");
    put(&store, &table, unwritten).await;

    let read = store.call_types().await.expect("read");
    let policy = |name: &str| {
        read.types
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .escalation
            .clone()
    };
    assert_eq!(policy("WC"), Policy::parse(shortened).unwrap());
    assert_eq!(policy("Notruf"), Policy::fallback());
    assert_eq!(policy("Hotelruf"), Policy::seeded("Hotelruf").unwrap());
    let fallbacks: Vec<(&str, &str)> = read
        .fallbacks
        .iter()
        .map(|f| (f.item.as_str(), f.field))
        .collect();
    assert_eq!(fallbacks, [("Notruf", "escalation")]);
}
