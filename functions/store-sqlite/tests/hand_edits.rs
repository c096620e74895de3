//! Rows edited by hand with the sqlite3 tool (DECISIONS §7): SQLite's type
//! affinity lets text into an INTEGER column, so a wrong type is a fallback
//! of that one field, or that one credential refused, never an error of
//! every read.

use chrono::Utc;
use nurse_call_core::{
    AddressSnapshot, AdminStore, AlarmStore, Consumer, Display, ElementChange, ElementPolicy,
    ElementWrite, NewCall, OpenOutcome, SandboxStore, Scope, Store, alarm::Policy,
    credentials::Stored, default_call_types,
};
use nurse_call_sqlite::SqliteStore;

async fn seeded() -> (tempfile::TempDir, SqliteStore, rusqlite::Connection) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let store = SqliteStore::open_dir(dir.path()).expect("open the store");
    store
        .seed_call_types(&default_call_types())
        .await
        .expect("seed the call types");
    let sqlite3 = rusqlite::Connection::open(store.path()).expect("a second connection");
    (dir, store, sqlite3)
}

#[tokio::test]
async fn text_in_an_integer_column_is_a_fallback_of_that_field() {
    let (_dir, store, sqlite3) = seeded().await;
    sqlite3
        .execute_batch(
            "UPDATE call_types SET priority = 'high' WHERE name = 'Normalruf';
             UPDATE call_types SET color = 'red', notify = 'yes' WHERE name = 'WC';
             UPDATE call_types SET notify = 0 WHERE name = 'Hotelruf';
             UPDATE call_types SET escalation = 'soon' WHERE name = 'Notruf';
             UPDATE call_types SET escalation = NULL WHERE name = 'Flucht';
             INSERT INTO call_types VALUES (' ', 11, '', 'NORMAL', 1, 'CALL', '#000000', 1, 0, 0, '',
                 NULL, NULL);
             INSERT INTO call_types VALUES ('Extra', 'seven', '', 'NORMAL', 2.5, 'CALL', X'00', 1, 0, 0, '',
                 '[{\"after\":0,\"to\":\"house\"}]', NULL);",
        )
        .expect("hand edits");
    let fallback_policy = Policy::fallback().to_json();
    let read = store.call_types().await.expect("the call types are read");
    let found: Vec<(&str, &str, &str, &str)> = read
        .fallbacks
        .iter()
        .map(|f| (f.item.as_str(), f.field, f.found.as_str(), f.used.as_str()))
        .collect();
    let extra_id = read
        .types
        .iter()
        .find(|t| t.name == "Extra")
        .expect("Extra is served")
        .id
        .to_string();
    assert_eq!(
        found,
        [
            (" ", "name", "\" \"", "skipped"),
            ("Extra", "id", "\"seven\"", extra_id.as_str()),
            ("Extra", "priority", "2.5", "5"),
            ("Extra", "color", "binary", "\"#808080\""),
            ("Normalruf", "priority", "\"high\"", "3"),
            ("Notruf", "escalation", "\"soon\"", fallback_policy.as_str()),
            ("WC", "color", "\"red\"", "\"#e67e22\""),
            ("WC", "notify", "\"yes\"", "true"),
        ]
    );
    let hotelruf = read.types.iter().find(|t| t.name == "Hotelruf").unwrap();
    assert!(!hotelruf.notify, "0 is false as stored, not a fallback");
    let policy = |name: &str| {
        &read
            .types
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .escalation
    };
    assert_eq!(
        policy("Notruf"),
        &Policy::fallback(),
        "an invalid policy: the fallback"
    );
    assert_eq!(
        policy("Flucht"),
        &Policy::seeded("Flucht").unwrap(),
        "a missing policy: the seeded one of the name, no fallback"
    );
    assert_eq!(policy("Extra").to_json(), r#"[{"after":0,"to":"house"}]"#);
    // SQLite keeps ids unique itself (UNIQUE): a duplicate is DynamoDB's case.
}

fn consumer(id: &str) -> Consumer {
    Consumer {
        id: id.into(),
        name: "Zentrale".into(),
        secrets: vec!["a-secret".into()],
        allow_sha1: false,
        created_at: Utc::now(),
        expires_at: None,
        require_signed_time: false,
        heartbeat_seconds: None,
    }
}

#[tokio::test]
async fn a_malformed_consumer_or_display_is_refused_alone() {
    let (_dir, store, sqlite3) = seeded().await;
    for id in ["c-good", "c-text", "c-empty", "c-flag"] {
        store.create_consumer(&consumer(id)).await.unwrap();
    }
    let display = |id: &str, hash: &str| Display {
        id: id.into(),
        name: "Flur".into(),
        sections: vec!["S1".into()],
        scope: Scope::installation(),
        token_hash: hash.into(),
        created_at: Utc::now(),
        revoked: false,
    };
    store
        .create_display(&display("d-good", "h-good"))
        .await
        .unwrap();
    store
        .create_display(&display("d-bad", "h-bad"))
        .await
        .unwrap();
    sqlite3
        .execute_batch(
            "UPDATE consumers SET secrets = 'a-secret' WHERE id = 'c-text';
             UPDATE consumers SET secrets = '[]' WHERE id = 'c-empty';
             UPDATE consumers SET require_signed_time = 'yes' WHERE id = 'c-flag';
             UPDATE displays SET sections = 'S1' WHERE id = 'd-bad';",
        )
        .expect("hand edits");

    let malformed = |stored: Option<Stored<Consumer>>| match stored {
        Some(Stored::Malformed(m)) => (m.field, m.problem),
        other => panic!("not malformed: {other:?}"),
    };
    assert_eq!(
        malformed(store.stored_consumer("c-text").await.unwrap()),
        ("secrets", "text that is not JSON, not a list".to_string())
    );
    assert_eq!(
        malformed(store.stored_consumer("c-empty").await.unwrap()),
        ("secrets", "an empty list".to_string())
    );
    assert_eq!(
        malformed(store.stored_consumer("c-flag").await.unwrap()).0,
        "require_signed_time"
    );
    for id in ["c-text", "c-empty", "c-flag"] {
        assert_eq!(store.consumer(id).await.unwrap(), None, "{id} is refused");
    }
    let good = store.consumer("c-good").await.unwrap().expect("usable");
    assert_eq!(good.secrets, ["a-secret"]);

    match store.stored_display("h-bad").await.unwrap() {
        Some(Stored::Malformed(m)) => {
            assert_eq!((m.id.as_str(), m.field), ("d-bad", "sections"))
        }
        other => panic!("not malformed: {other:?}"),
    }
    assert_eq!(store.display_by_token_hash("h-bad").await.unwrap(), None);
    assert!(
        store
            .display_by_token_hash("h-good")
            .await
            .unwrap()
            .is_some()
    );

    // The admin's list names what to fix instead of leaving it out.
    let error = store.displays().await.unwrap_err().to_string();
    assert!(error.contains("display \"d-bad\": sections is"), "{error}");
    let error = store.consumers().await.unwrap_err().to_string();
    assert!(!error.contains("a-secret"), "{error}");
}

/// An alarm a hand edit left unreadable: the call still shows (without
/// it) on every read, and the engine's read refuses it rather than step
/// from nothing and overwrite it.
#[tokio::test]
async fn an_unreadable_alarm_is_left_out_of_reads_and_refused_to_the_engine() {
    let (_dir, store, sqlite3) = seeded().await;
    let scope = Scope::installation();
    let change = ElementChange {
        address: "Zimmer-1".into(),
        battery: None,
        position: None,
        reachable: None,
        at: Utc::now(),
    };
    let call = NewCall {
        address: "Zimmer-1".into(),
        event: "Notruf".into(),
        position: None,
        section: None,
        attribute: None,
        element_code: String::new(),
        element_name: String::new(),
        opened_at: nurse_call_core::clock::now(),
        opened_by: None,
    };
    let OpenOutcome::Opened(opened) = store
        .open_call(
            &call,
            &AddressSnapshot::default(),
            &ElementWrite::new(
                &scope,
                &change,
                ElementPolicy::CreateMissing,
                &AddressSnapshot::default(),
            ),
        )
        .await
        .unwrap()
    else {
        panic!("a new call")
    };
    sqlite3
        .execute(
            "UPDATE calls SET alarm = 'not json' WHERE id = ?1",
            [opened.id],
        )
        .expect("hand edit");

    let open = store
        .open_calls(&scope)
        .await
        .expect("the displays' read works");
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].alarm, None, "shown without its alarm");
    let refused = store
        .alarm(&scope, opened.id)
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("unreadable"), "{refused}");
}
