//! The call types and consumers are kept in memory (src/config_cache.rs),
//! yet every edit is seen by the next read, whoever made it: this store, a
//! second store on the same file (the admin command is one), or `sqlite3` by
//! hand; and a file of schema version 6 gains the generation that makes this
//! so.

use chrono::Utc;
use rusqlite::Connection;

use nurse_call_core::{
    AdminStore, Consumer, SandboxStore, SecretsReplaced, Store, default_call_types,
};
use nurse_call_sqlite::{FILE_NAME, SqliteStore};

const ID: &str = "c0c0c0c0-0000-4000-8000-000000000001";

fn consumer(secret: &str) -> Consumer {
    Consumer {
        id: ID.into(),
        name: "Zentrale".into(),
        secrets: vec![secret.into()],
        allow_sha1: false,
        created_at: Utc::now(),
        expires_at: None,
        require_signed_time: false,
        heartbeat_seconds: None,
    }
}

async fn seeded() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let store = SqliteStore::open_dir(dir.path()).expect("open the store");
    store
        .seed_call_types(&default_call_types())
        .await
        .expect("seed the call types");
    store.create_consumer(&consumer("first")).await.unwrap();
    (dir, store)
}

async fn priority_of(store: &SqliteStore, name: &str) -> i64 {
    let read = store.call_types().await.expect("call types read");
    read.types
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("{name} is served"))
        .priority
}

async fn secrets_of(store: &SqliteStore) -> Option<Vec<String>> {
    store
        .consumer(ID)
        .await
        .expect("consumer read")
        .map(|c| c.secrets)
}

#[tokio::test]
async fn a_hand_edit_is_seen_by_the_next_read() {
    let (_dir, store) = seeded().await;
    // Read twice: the second is served from memory.
    assert_eq!(priority_of(&store, "Normalruf").await, 3);
    assert_eq!(priority_of(&store, "Normalruf").await, 3);
    assert_eq!(secrets_of(&store).await, Some(vec!["first".to_string()]));
    assert_eq!(secrets_of(&store).await, Some(vec!["first".to_string()]));

    let sqlite3 = Connection::open(store.path()).expect("a second connection");
    sqlite3
        .execute_batch(
            "UPDATE call_types SET priority = 7 WHERE name = 'Normalruf';
             UPDATE consumers SET secrets = '[\"second\"]' WHERE id = 'c0c0c0c0-0000-4000-8000-000000000001';",
        )
        .expect("hand edits");
    assert_eq!(priority_of(&store, "Normalruf").await, 7);
    assert_eq!(secrets_of(&store).await, Some(vec!["second".to_string()]));

    sqlite3
        .execute_batch(
            "DELETE FROM call_types WHERE name = 'Normalruf';
             DELETE FROM consumers;",
        )
        .expect("hand deletes");
    let read = store.call_types().await.unwrap();
    assert!(
        read.types.iter().all(|t| t.name != "Normalruf"),
        "a deleted call type is gone at once"
    );
    assert_eq!(
        secrets_of(&store).await,
        None,
        "a deleted consumer is refused at once"
    );

    sqlite3
        .execute(
            "INSERT INTO consumers (id, name, secrets, allow_sha1, created_at)
             VALUES (?1, 'Zentrale', '[\"third\"]', 0, '2026-01-01T00:00:00Z')",
            [ID],
        )
        .expect("hand insert");
    assert_eq!(secrets_of(&store).await, Some(vec!["third".to_string()]));
}

#[tokio::test]
async fn an_edit_through_another_store_on_the_file_is_seen_by_the_next_read() {
    let (_dir, serving) = seeded().await;
    assert_eq!(priority_of(&serving, "Notruf").await, 1);
    assert_eq!(secrets_of(&serving).await, Some(vec!["first".to_string()]));

    // The admin command: its own process, its own store on the same file.
    let admin = SqliteStore::open(serving.path()).expect("a second store");
    let mut notruf = admin
        .call_types()
        .await
        .unwrap()
        .types
        .into_iter()
        .find(|t| t.name == "Notruf")
        .unwrap();
    notruf.priority = 2;
    admin.put_call_type(&notruf).await.unwrap();
    let rotated = ["first".to_string(), "rotated".to_string()];
    assert_eq!(
        admin
            .replace_secrets(ID, &["first".to_string()], &rotated)
            .await
            .unwrap(),
        SecretsReplaced::Replaced
    );
    assert_eq!(priority_of(&serving, "Notruf").await, 2);
    assert_eq!(secrets_of(&serving).await, Some(rotated.to_vec()));

    assert!(admin.delete_consumer(ID).await.unwrap());
    assert_eq!(secrets_of(&serving).await, None);
}

#[tokio::test]
async fn the_stores_own_edits_are_seen_at_once() {
    let (_dir, store) = seeded().await;
    assert_eq!(secrets_of(&store).await, Some(vec!["first".to_string()]));
    let both = ["first".to_string(), "next".to_string()];
    assert_eq!(
        store
            .replace_secrets(ID, &["first".to_string()], &both)
            .await
            .unwrap(),
        SecretsReplaced::Replaced
    );
    assert_eq!(secrets_of(&store).await, Some(both.to_vec()));
    assert!(store.set_require_signed_time(ID, true).await.unwrap());
    let consumer = store.consumer(ID).await.unwrap().expect("still there");
    assert!(consumer.require_signed_time);
}

/// A file of version 6 (as the previous release left it, made here by
/// taking the generation away from a current file) gains the generation
/// and its triggers, keeps its rows, and its edits are seen.
#[tokio::test]
async fn a_version_6_file_gains_the_generation() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join(FILE_NAME);
    {
        let (_seed_dir, store) = seeded().await;
        let source = store.path().to_path_buf();
        // Closed first: the last connection's close moves the WAL into the file.
        drop(store);
        std::fs::copy(source, &path).expect("copy of a current file");
    }
    let sqlite3 = Connection::open(&path).expect("file opens");
    sqlite3
        .execute_batch(
            "DROP TRIGGER call_types_insert_bumps_generation;
             DROP TRIGGER call_types_update_bumps_generation;
             DROP TRIGGER call_types_delete_bumps_generation;
             DROP TRIGGER consumers_insert_bumps_generation;
             DROP TRIGGER consumers_update_bumps_generation;
             DROP TRIGGER consumers_delete_bumps_generation;
             DROP TABLE config_generation;
             PRAGMA user_version = 6;",
        )
        .expect("back to version 6");

    let store = SqliteStore::open(&path).expect("the version 6 file opens");
    assert_eq!(priority_of(&store, "Normalruf").await, 3);
    assert_eq!(secrets_of(&store).await, Some(vec!["first".to_string()]));
    sqlite3
        .execute_batch("UPDATE call_types SET priority = 5 WHERE name = 'Normalruf';")
        .expect("hand edit");
    assert_eq!(priority_of(&store, "Normalruf").await, 5);
    let version: i64 = sqlite3
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("version read");
    assert_eq!(version, 15);
}
