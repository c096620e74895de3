//! The admin operations (AdminStore) on the embedded store.

use nurse_call_core::{AdminStore, default_call_types};
use nurse_call_sqlite::SqliteStore;

#[tokio::test]
async fn admin_store_contract() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let store = SqliteStore::open_dir(dir.path()).expect("open the store");
    store
        .seed_call_types(&default_call_types())
        .await
        .expect("seed the call types");
    store_conformance::admin::contract(&store).await;
}

#[tokio::test]
async fn erase_address_contract() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let store = SqliteStore::open_dir(dir.path()).expect("open the store");
    store
        .seed_call_types(&default_call_types())
        .await
        .expect("seed the call types");
    store_conformance::admin::erasure(&store).await;
}
