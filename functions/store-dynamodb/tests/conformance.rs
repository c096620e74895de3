//! The shared Store conformance suite, run against DynamoDB (moto_server).

use std::sync::Arc;

use nurse_call_core::{AdminStore, default_call_types};
use nurse_call_dynamodb::{DynamoStore, TableNames, Timeouts};
use store_conformance::{Harness, moto};

/// A store on the shared moto server with tables of its own.
async fn make_store() -> Harness {
    let endpoint = moto::endpoint();
    let store = DynamoStore::connect_with(
        Some(&endpoint),
        TableNames::with_prefix(&moto::unique_prefix()),
        Timeouts::SLOW_STAND_IN,
    )
    .await;
    store
        .create_missing_tables()
        .await
        .expect("create the tables");
    store
        .seed_call_types(&default_call_types())
        .await
        .expect("seed the call types");
    // Expired sandbox data is left to DynamoDB's TTL.
    let store = Arc::new(store);
    Harness::new(store.clone())
        .with_webhooks(store)
        .with_purges_expired(false)
        .with_alarms_with_writes(false)
}

store_conformance::conformance_tests!(make_store());
