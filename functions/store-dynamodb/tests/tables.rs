//! Tables a local server created before alarm routing (moto_server): the
//! data table gets the due index added, and alarms then work on it.

mod alarm_support;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType,
};

use nurse_call_core::{AlarmStore, Scope};
use nurse_call_dynamodb::tables::{BY_DUE_INDEX, BY_SCOPE_INDEX};
use nurse_call_dynamodb::{DynamoStore, TableNames, Timeouts};
use store_conformance::moto;

use alarm_support::{at, open};

fn key(name: &str, key_type: KeyType) -> KeySchemaElement {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(key_type)
        .build()
        .unwrap()
}

fn text(name: &str) -> AttributeDefinition {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .unwrap()
}

async fn index_names(store: &DynamoStore) -> Vec<String> {
    let described = store
        .client()
        .describe_table()
        .table_name(&store.tables().data)
        .send()
        .await
        .unwrap();
    let mut names: Vec<String> = described
        .table()
        .unwrap()
        .global_secondary_indexes()
        .iter()
        .filter_map(|index| index.index_name().map(str::to_string))
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread")]
async fn a_data_table_of_before_alarms_gets_the_due_index() {
    let store = DynamoStore::connect_with(
        Some(&moto::endpoint()),
        TableNames::with_prefix(&moto::unique_prefix()),
        Timeouts::SLOW_STAND_IN,
    )
    .await;
    // The data table as issue 24's create_missing made it.
    store
        .client()
        .create_table()
        .table_name(&store.tables().data)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(text("pk"))
        .attribute_definitions(text("sk"))
        .attribute_definitions(text("list_pk"))
        .attribute_definitions(text("list_sk"))
        .key_schema(key("pk", KeyType::Hash))
        .key_schema(key("sk", KeyType::Range))
        .global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name(BY_SCOPE_INDEX)
                .key_schema(key("list_pk", KeyType::Hash))
                .key_schema(key("list_sk", KeyType::Range))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::All)
                        .build(),
                )
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();

    let created = store.create_missing_tables().await.unwrap();
    assert!(!created.contains(&store.tables().data), "{created:?}");
    assert_eq!(index_names(&store).await, [BY_DUE_INDEX, BY_SCOPE_INDEX]);
    // Again: nothing to add.
    store.create_missing_tables().await.unwrap();

    let call = open(&store, &Scope::installation(), "Zimmer.1", at(0)).await;
    let due = store.due_alarms(at(1), 10).await.unwrap();
    assert_eq!(due.iter().map(|d| d.call_id).collect::<Vec<_>>(), [call.id]);
}
