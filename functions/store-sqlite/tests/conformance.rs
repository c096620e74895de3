//! The shared Store conformance suite, run against SQLite.

use std::sync::Arc;

use nurse_call_core::{AdminStore, default_call_types};
use nurse_call_sqlite::SqliteStore;
use store_conformance::Harness;

/// A fresh store in its own temporary folder, kept until the test ends.
async fn make_store() -> Harness {
    let dir = tempfile::tempdir().expect("temporary folder");
    let store = SqliteStore::open_dir(dir.path()).expect("open the store");
    store
        .seed_call_types(&default_call_types())
        .await
        .expect("seed the call types");
    let store = Arc::new(store);
    Harness::new(store.clone())
        .with_webhooks(store)
        .keep_alive(dir)
}

store_conformance::conformance_tests!(make_store());
