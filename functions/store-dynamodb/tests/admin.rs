//! The admin operations (AdminStore) on DynamoDB (moto_server).

use nurse_call_core::{AdminStore, default_call_types};
use nurse_call_dynamodb::{DynamoStore, TableNames, Timeouts};
use store_conformance::moto;

async fn connect(prefix: &str) -> DynamoStore {
    DynamoStore::connect_with(
        Some(&moto::endpoint()),
        TableNames::with_prefix(prefix),
        Timeouts::SLOW_STAND_IN,
    )
    .await
}

#[tokio::test]
async fn admin_store_contract() {
    let store = connect(&moto::unique_prefix()).await;
    store
        .create_missing_tables()
        .await
        .expect("create the tables");
    store
        .seed_call_types(&default_call_types())
        .await
        .expect("seed the call types");
    store_conformance::admin::contract(&store).await;
}

#[tokio::test]
async fn check_names_a_missing_table() {
    let prefix = moto::unique_prefix();
    let error = connect(&prefix)
        .await
        .check()
        .await
        .expect_err("no tables yet");
    assert!(
        error.to_string().contains(&format!("{prefix}call-types")),
        "{error}"
    );
}

#[tokio::test]
async fn erase_address_contract() {
    let store = connect(&moto::unique_prefix()).await;
    store
        .create_missing_tables()
        .await
        .expect("create the tables");
    store
        .seed_call_types(&default_call_types())
        .await
        .expect("seed the call types");
    store_conformance::admin::erasure(&store).await;
}
