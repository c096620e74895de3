//! A store file written by an earlier version opens with its data intact and
//! gains what the later versions added (schema version 1 → 2: the hash
//! mismatches of the test page; 2 → 3: a consumer's replay protection, off;
//! 3 → 4: displays and element versions; 4 → 5: who opened and closed a
//! call, unknown for the old calls; 5 → 6: alarm routing, its tables and
//! a pending alarm for every call open at the update; 6 → 7: the
//! configuration's generation, tests/config_cache.rs; 10 → 11: the outbox
//! without an index on its ids; 11 → 12: an endpoint's `confirms_delivery`,
//! off for those registered before; 12 → 13: each push subscription's
//! device facts, unknown for those subscribed before; 13 → 14: an endpoint's
//! `private_network`, off for those registered before; 14 → 15: the
//! supervised links (heartbeat, silences); 15 → 16: a call
//! type's `accept_timeout`, the seeded one for those stored before).

use chrono::{TimeZone, Utc};
use rusqlite::Connection;

use nurse_call_core::{
    AddressSnapshot, AdminStore, ElementChange, ElementPolicy, ElementWrite, HashMismatch, NewCall,
    OpenOutcome, SandboxStore, Scope, Store,
    tokens::{new_display, token_hash},
};
use nurse_call_sqlite::{FILE_NAME, SqliteStore};

/// The schema of version 1 exactly as it shipped, with one consumer and one call.
fn write_version_1(path: &std::path::Path) {
    let connection = Connection::open(path).expect("file opens");
    connection
        .execute_batch(
            "BEGIN;
             CREATE TABLE consumers (
                 id TEXT PRIMARY KEY, name TEXT NOT NULL, secrets TEXT NOT NULL,
                 allow_sha1 INTEGER NOT NULL, created_at TEXT NOT NULL, expires_at TEXT);
             CREATE TABLE call_types (
                 name TEXT PRIMARY KEY, id INTEGER NOT NULL UNIQUE,
                 internal_name TEXT NOT NULL DEFAULT '', urgency TEXT NOT NULL,
                 priority INTEGER NOT NULL, type TEXT NOT NULL, color TEXT NOT NULL,
                 notify INTEGER NOT NULL, notification_interval INTEGER NOT NULL,
                 notification_maxloops INTEGER NOT NULL, notification_sound TEXT NOT NULL);
             CREATE TABLE elements (
                 scope TEXT NOT NULL, address TEXT NOT NULL, code TEXT NOT NULL,
                 name TEXT NOT NULL, battery REAL, position TEXT, reachable INTEGER,
                 updated_at TEXT NOT NULL, PRIMARY KEY (scope, address));
             CREATE TABLE calls (
                 id INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT NOT NULL,
                 address TEXT NOT NULL, event TEXT NOT NULL, position TEXT, section TEXT,
                 attribute TEXT, element_code TEXT NOT NULL, element_name TEXT NOT NULL,
                 opened_at TEXT NOT NULL, closed_at TEXT);
             CREATE UNIQUE INDEX calls_one_open_per_event
                 ON calls (scope, address, event) WHERE closed_at IS NULL;
             CREATE INDEX calls_by_scope ON calls (scope, closed_at, opened_at);
             CREATE INDEX elements_by_update ON elements (scope, updated_at);
             INSERT INTO consumers VALUES ('aaaaaaaa-0000-4000-8000-00000000000a', 'old',
                 '[\"s3cr3t\"]', 0, '2026-01-01T00:00:00Z', NULL);
             INSERT INTO calls (scope, address, event, element_code, element_name, opened_at)
                 VALUES ('installation', 'Zimmer-1', 'Notruf', '', '', '2026-01-01T10:00:00Z');
             PRAGMA user_version = 1;
             COMMIT;",
        )
        .expect("version 1 written");
}

#[tokio::test]
async fn a_version_1_file_keeps_its_data_and_gains_mismatches_and_replay_protection() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join(FILE_NAME);
    write_version_1(&path);

    let store = SqliteStore::open(&path).expect("the old file opens");
    let consumer = store
        .consumer("aaaaaaaa-0000-4000-8000-00000000000a")
        .await
        .expect("consumer read")
        .expect("the old consumer is still there");
    assert_eq!(consumer.secrets, ["s3cr3t"]);
    assert!(
        !consumer.require_signed_time,
        "replay protection stays off for an old consumer"
    );
    let calls = store
        .recent_calls(&Scope::installation(), 10)
        .await
        .expect("calls read");
    assert_eq!(calls.len(), 1, "the old call is still there");

    let scope = Scope::consumer("aaaaaaaa-0000-4000-8000-00000000000a");
    let mismatch = HashMismatch::new(
        "Zimmer-1.aaaaaaaa-0000-4000-8000-00000000000a.{}",
        &"e".repeat(64),
        &"0".repeat(64),
        Utc.with_ymd_and_hms(2026, 1, 2, 0, 0, 0).unwrap(),
    );
    store
        .record_hash_mismatch(&scope, &mismatch)
        .await
        .expect("the new table works");
    assert_eq!(
        store
            .recent_hash_mismatches(&scope, 10)
            .await
            .expect("mismatches read"),
        [mismatch]
    );
    drop(store);

    let version: i64 = Connection::open(&path)
        .expect("file opens")
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("version read");
    assert_eq!(version, 16);
    // Version 10's Web Push tables are there, empty (DECISIONS §15).
    let connection = Connection::open(&path).expect("file opens");
    for table in ["vapid_keys", "push_subscriptions"] {
        let rows: i64 = connection
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
                row.get(0)
            })
            .unwrap_or_else(|e| panic!("{table} after the migration: {e}"));
        assert_eq!(rows, 0, "{table}");
    }
    // Opening a current file again changes nothing.
    SqliteStore::open(&path).expect("the migrated file opens again");
}

/// Version 3 as it shipped: version 1, the mismatches table and the
/// consumer's replay protection; one closed call.
fn write_version_3(path: &std::path::Path) {
    write_version_1(path);
    let connection = Connection::open(path).expect("file opens");
    connection
        .execute_batch(
            "BEGIN;
             CREATE TABLE hash_mismatches (
                 id INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT NOT NULL, at TEXT NOT NULL,
                 string TEXT NOT NULL, expected TEXT NOT NULL, provided TEXT NOT NULL);
             CREATE INDEX hash_mismatches_by_scope ON hash_mismatches (scope, at, id);
             ALTER TABLE consumers ADD COLUMN require_signed_time INTEGER NOT NULL DEFAULT 0;
             UPDATE calls SET closed_at = '2026-01-01T10:05:00Z';
             PRAGMA user_version = 3;
             COMMIT;",
        )
        .expect("version 3 written");
}

#[tokio::test]
async fn a_version_3_file_keeps_its_calls_with_unknown_openers_and_closers() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join(FILE_NAME);
    write_version_3(&path);

    let store = SqliteStore::open(&path).expect("the old file opens");
    let scope = Scope::installation();
    let day = |hour| Utc.with_ymd_and_hms(2026, 1, 1, hour, 0, 0).unwrap();
    let old = store
        .calls_opened_between(&scope, day(0), day(23))
        .await
        .expect("calls read");
    assert_eq!(old.len(), 1, "the old call is still there");
    assert_eq!(
        old[0].closed_at,
        Some(day(10) + chrono::Duration::minutes(5))
    );
    assert_eq!(
        (old[0].opened_by.as_deref(), old[0].closed_by.as_deref()),
        (None, None)
    );

    // New calls keep who opened and closed them.
    let change = |at| ElementChange {
        address: "Zimmer-2".into(),
        battery: None,
        position: None,
        reachable: None,
        at,
    };
    let call = NewCall {
        address: "Zimmer-2".into(),
        event: "WC".into(),
        position: None,
        section: None,
        attribute: None,
        element_code: String::new(),
        element_name: String::new(),
        opened_at: day(11),
        opened_by: Some("aaaaaaaa-0000-4000-8000-00000000000a".into()),
    };
    let OpenOutcome::Opened(opened) = store
        .open_call(
            &call,
            &AddressSnapshot::default(),
            &ElementWrite::new(
                &scope,
                &change(day(11)),
                ElementPolicy::CreateMissing,
                &AddressSnapshot::default(),
            ),
        )
        .await
        .expect("open")
    else {
        panic!("a new call")
    };
    let closing = AddressSnapshot {
        element: None,
        open_calls: vec![opened],
    };
    store
        .close_calls(
            &closing,
            day(12),
            Some("bbbbbbbb-0000-4000-8000-00000000000b"),
            &ElementWrite::new(
                &scope,
                &change(day(12)),
                ElementPolicy::CreateMissing,
                &closing,
            ),
        )
        .await
        .expect("close");
    let calls = store
        .calls_opened_between(&scope, day(0), day(23))
        .await
        .expect("calls read");
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[1].opened_by.as_deref(),
        Some("aaaaaaaa-0000-4000-8000-00000000000a")
    );
    assert_eq!(
        calls[1].closed_by.as_deref(),
        Some("bbbbbbbb-0000-4000-8000-00000000000b")
    );
    drop(store);
    let version: i64 = Connection::open(&path)
        .expect("file opens")
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("version read");
    assert_eq!(version, 16);
}

#[tokio::test]
async fn a_version_3_file_gains_displays_and_element_versions() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join(FILE_NAME);
    write_version_3(&path);
    // What a display will want to see of the old file: an element, an open call.
    Connection::open(&path)
        .expect("file opens")
        .execute_batch(
            "INSERT INTO elements VALUES ('installation', 'Zimmer-1', 'Z1', 'Zimmer 1', 15.0,
                 NULL, 1, '2026-01-01T09:00:00Z');
             INSERT INTO calls (scope, address, event, element_code, element_name, opened_at)
                 VALUES ('installation', 'Zimmer-1', 'WC', '', '', '2026-01-01T11:00:00Z');",
        )
        .expect("old rows written");

    let store = SqliteStore::open(&path).expect("the version 3 file opens");
    let elements = store
        .elements(&Scope::installation())
        .await
        .expect("elements read");
    assert_eq!(elements.len(), 1, "the old element is still there");
    assert_eq!(elements[0].battery, Some(15.0));
    assert_eq!(elements[0].version, 1, "an old element starts at version 1");
    let open = store
        .open_calls(&Scope::installation())
        .await
        .expect("open calls read");
    assert_eq!(open.len(), 1, "the old open call is in the displays' read");
    assert_eq!(open[0].event, "WC");

    let (display, token) = new_display("Flur", &[], nurse_call_core::clock::now()).expect("random");
    store
        .create_display(&display)
        .await
        .expect("the new table works");
    assert_eq!(
        store
            .display_by_token_hash(&token_hash(&token))
            .await
            .expect("lookup"),
        Some(display)
    );
}

/// Version 5 as it shipped (the current version before alarm routing):
/// version 3, then displays and element versions (4), then who opened and
/// closed a call (5); with a call type of each kind, an element, a display,
/// the closed call of version 3 and an open one.
fn write_version_5(path: &std::path::Path) {
    write_version_3(path);
    let connection = Connection::open(path).expect("file opens");
    connection
        .execute_batch(
            "BEGIN;
             CREATE TABLE displays (
                 id TEXT PRIMARY KEY, name TEXT NOT NULL, sections TEXT NOT NULL,
                 scope TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE,
                 created_at TEXT NOT NULL, revoked INTEGER NOT NULL DEFAULT 0);
             ALTER TABLE elements ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
             ALTER TABLE calls ADD COLUMN opened_by TEXT;
             ALTER TABLE calls ADD COLUMN closed_by TEXT;
             CREATE INDEX calls_by_opening ON calls (scope, opened_at, id);
             INSERT INTO call_types VALUES ('Notruf', 1, '', 'EMERGENCY', 1, 'CALL', '#e74c3c',
                 1, 30, 0, 'alarm.mp3');
             INSERT INTO call_types VALUES ('Sonderruf', 11, '', 'NORMAL', 4, 'CALL', '#123456',
                 1, 60, 0, '');
             INSERT INTO elements VALUES ('installation', 'Zimmer-2', 'Z2', 'Zimmer 2', 80.0,
                 NULL, 1, '2026-01-01T09:00:00Z', 3);
             INSERT INTO displays VALUES ('d-1', 'Flur', '[]', 'installation', 'h-1',
                 '2026-01-01T08:00:00Z', 0);
             INSERT INTO calls (scope, address, event, element_code, element_name, opened_at,
                     opened_by)
                 VALUES ('installation', 'Zimmer-2', 'Notruf', 'Z2', 'Zimmer 2',
                     '2026-01-01T11:00:00Z', 'aaaaaaaa-0000-4000-8000-00000000000a');
             PRAGMA user_version = 5;
             COMMIT;",
        )
        .expect("version 5 written");
}

/// 5 → 6: every row stays; a call open at the update gets a pending alarm
/// due at its opening (the engine looks at it at once, as at a new open),
/// a call closed before has none; call types without `escalation` read as
/// the seeded policy of their name (the fallback for a name not seeded);
/// staff, duties, alarm writes and the audit work; a second open migrates
/// nothing again.
#[tokio::test]
async fn a_version_5_file_keeps_its_data_and_its_open_calls_get_pending_alarms() {
    use nurse_call_core::alarm::AuditEvent;
    use nurse_call_core::alarm::{Alarm, Duty, Policy, Staff};
    use nurse_call_core::{AlarmStore, AlarmWrite, DueAlarm};

    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join(FILE_NAME);
    write_version_5(&path);
    let scope = Scope::installation();
    let at = |hour, minute| Utc.with_ymd_and_hms(2026, 1, 1, hour, minute, 0).unwrap();

    let store = SqliteStore::open(&path).expect("the version 5 file opens");
    let calls = store
        .calls_opened_between(&scope, at(0, 0), at(23, 0))
        .await
        .expect("calls read");
    assert_eq!(calls.len(), 2, "both old calls are still there");
    let (closed, open) = (&calls[0], &calls[1]);
    assert_eq!(closed.closed_at, Some(at(10, 5)));
    assert_eq!(closed.alarm, None, "a call closed before alarms has none");
    assert_eq!(store.alarm(&scope, closed.id).await.unwrap(), None);
    assert_eq!(
        open.opened_by.as_deref(),
        Some("aaaaaaaa-0000-4000-8000-00000000000a")
    );
    let pending = Alarm::pending(at(11, 0));
    assert_eq!(
        open.alarm.as_ref(),
        Some(&pending),
        "an open call gets a pending alarm"
    );
    let kept = store
        .alarm(&scope, open.id)
        .await
        .unwrap()
        .expect("its alarm");
    assert_eq!((kept.version, &kept.alarm), (0, &pending));
    assert_eq!(
        store.due_alarms(at(12, 0), 10).await.unwrap(),
        [DueAlarm {
            scope: scope.clone(),
            call_id: open.id,
            next_at: at(11, 0)
        }],
        "due at its opening: looked at right after the update"
    );
    assert_eq!(store.open_calls(&scope).await.unwrap(), vec![open.clone()]);

    let read = store.call_types().await.expect("call types read");
    let policy = |name: &str| {
        &read
            .types
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .escalation
    };
    assert_eq!(policy("Notruf"), &Policy::seeded("Notruf").unwrap());
    assert_eq!(policy("Sonderruf"), &Policy::fallback());
    let element = store.snapshot(&scope, "Zimmer-2").await.unwrap().element;
    assert_eq!(
        element.map(|e| (e.battery, e.version)),
        Some((Some(80.0), 3))
    );
    assert_eq!(store.displays().await.unwrap().len(), 1);
    assert!(
        store
            .consumer("aaaaaaaa-0000-4000-8000-00000000000a")
            .await
            .unwrap()
            .is_some()
    );

    // The new tables work.
    let anna = Staff {
        id: "5af55af5-0000-4000-8000-000000000001".into(),
        scope: scope.clone(),
        name: "Anna".into(),
        groups: vec!["Leitung".into()],
        device: None,
        token_hash: token_hash("anna"),
        created_at: at(8, 0),
        revoked: false,
    };
    store.create_staff(&anna).await.expect("staff table");
    let duty = Duty {
        staff_id: anna.id.clone(),
        scope: scope.clone(),
        sections: vec![],
        since: at(8, 0),
        until: at(16, 0),
    };
    store.put_duty(&duty).await.expect("duties table");
    assert_eq!(store.duties(&scope, at(12, 0)).await.unwrap(), [duty]);
    let mut stepped = pending.clone();
    stepped.next_at = None;
    let line = AuditEvent {
        at: at(12, 0),
        kind: "unattended".into(),
        level: 0,
        staff: None,
        detail: None,
    };
    assert_eq!(
        store
            .write_alarm(&kept, &stepped, std::slice::from_ref(&line))
            .await
            .unwrap(),
        AlarmWrite::Written
    );
    assert_eq!(store.alarm_audit(&scope, open.id).await.unwrap(), [line]);
    drop(store);

    let store = SqliteStore::open(&path).expect("the migrated file opens again");
    let kept = store
        .alarm(&scope, open.id)
        .await
        .unwrap()
        .expect("its alarm");
    assert_eq!(
        (kept.version, &kept.alarm),
        (1, &stepped),
        "a second open migrates nothing again"
    );
    drop(store);
    let version: i64 = Connection::open(&path)
        .expect("file opens")
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("version read");
    assert_eq!(version, 16);
}

/// 10 → 11: the outbox loses the index on its ids; the events waiting in
/// it stay with their positions, and `AUTOINCREMENT`'s counter goes on from
/// where it stood, so that no position is given twice (a dispatcher's
/// cursor past it would skip the event).
#[tokio::test]
async fn a_version_10_outbox_keeps_its_events_and_its_counter_without_the_id_index() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join(FILE_NAME);
    drop(SqliteStore::open(&path).expect("a new file"));
    // Back to version 10's outbox, as it shipped, with two events waiting
    // and a counter at 9 (seven events finished before them).
    Connection::open(&path)
        .expect("file opens")
        .execute_batch(
            "BEGIN;
             DROP TABLE webhook_outbox;
             CREATE TABLE webhook_outbox (
                 seq     INTEGER PRIMARY KEY AUTOINCREMENT,
                 id      TEXT NOT NULL UNIQUE,
                 scope   TEXT NOT NULL,
                 kind    TEXT NOT NULL,
                 at      TEXT NOT NULL,
                 call_id INTEGER,
                 section TEXT,
                 facts   TEXT NOT NULL
             );
             INSERT INTO webhook_outbox (seq, id, scope, kind, at, call_id, section, facts) VALUES
                 (5, 'msg_five', 'installation', 'call.closed', '2026-01-01T10:00:00.000Z', 1, NULL, '{}'),
                 (7, 'msg_seven', 'installation', 'call.closed', '2026-01-01T10:00:01.000Z', 2, 'A', '{}');
             UPDATE sqlite_sequence SET seq = 9 WHERE name = 'webhook_outbox';
             ALTER TABLE webhook_endpoints DROP COLUMN confirms_delivery;
             PRAGMA user_version = 10;
             COMMIT;",
        )
        .expect("back to version 10");

    drop(SqliteStore::open(&path).expect("the version 10 file opens"));

    let connection = Connection::open(&path).expect("file opens");
    let version: i64 = connection
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("version read");
    assert_eq!(version, 16);
    let kept: Vec<(i64, String, Option<String>)> = connection
        .prepare("SELECT seq, id, section FROM webhook_outbox ORDER BY seq")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        kept,
        [
            (5, "msg_five".to_string(), None),
            (7, "msg_seven".to_string(), Some("A".to_string()))
        ],
        "the waiting events, at their positions"
    );
    let indexes: i64 = connection
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'webhook_outbox'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(indexes, 0, "no index on the outbox's ids");
    connection
        .execute(
            "INSERT INTO webhook_outbox (id, scope, kind, at, facts)
             VALUES ('msg_next', 'installation', 'call.closed', '2026-01-01T10:00:02.000Z', '{}')",
            [],
        )
        .unwrap();
    let next: i64 = connection
        .query_row(
            "SELECT seq FROM webhook_outbox WHERE id = 'msg_next'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(next, 10, "the counter goes on after 9, not after 7");
}

/// 11 → 12: an endpoint registered before `--confirms-delivery` existed
/// reads `false` (its 2xx to a `call.alert` stays a receipt, DECISIONS
/// §16), and the flag is kept from then on.
#[tokio::test]
async fn a_version_11_endpoint_does_not_confirm_delivery_itself() {
    use nurse_call_core::WebhookStore;
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join(FILE_NAME);
    drop(SqliteStore::open(&path).expect("a new file"));
    Connection::open(&path)
        .expect("file opens")
        .execute_batch(
            "BEGIN;
             ALTER TABLE webhook_endpoints DROP COLUMN confirms_delivery;
             INSERT INTO webhook_endpoints
                 (id, name, url, events, sections, secrets, disabled, created_at, failing_since)
                 VALUES ('ep_old', 'alarm.example', 'https://alarm.example/hook', '[]', '[]',
                         '[\"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"]', 0,
                         '2026-01-01T10:00:00.000Z', NULL);
             PRAGMA user_version = 11;
             COMMIT;",
        )
        .expect("back to version 11");

    let store = SqliteStore::open(&path).expect("the version 11 file opens");
    let endpoints = store.endpoints().await.expect("endpoints read");
    assert_eq!(endpoints.len(), 1);
    assert_eq!(endpoints[0].id, "ep_old");
    assert!(!endpoints[0].confirms_delivery);

    let mut confirming = endpoints[0].clone();
    confirming.id = "ep_new".into();
    confirming.confirms_delivery = true;
    store.create_endpoint(&confirming).await.expect("created");
    let read = store.endpoints().await.expect("endpoints read");
    assert_eq!(
        read.iter()
            .map(|e| (e.id.as_str(), e.confirms_delivery))
            .collect::<Vec<_>>(),
        [("ep_new", true), ("ep_old", false)],
        "by age, then id; each with its own flag"
    );
}

/// 12 → 13: a phone subscribed before the sign-on test existed knows
/// nothing of its pushes and receipts (DECISIONS §18: never pushed, no
/// receipt, none unanswered), and records them from then on.
#[tokio::test]
async fn a_version_12_subscription_gains_its_device_facts() {
    use nurse_call_core::PushStore;
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join(FILE_NAME);
    drop(SqliteStore::open(&path).expect("a new file"));
    let staff_id = "5af55af5-0000-4000-8000-000000000001";
    Connection::open(&path)
        .expect("file opens")
        .execute_batch(&format!(
            "BEGIN;
             ALTER TABLE push_subscriptions DROP COLUMN pushed_at;
             ALTER TABLE push_subscriptions DROP COLUMN tested_at;
             ALTER TABLE push_subscriptions DROP COLUMN received_at;
             ALTER TABLE push_subscriptions DROP COLUMN unanswered;
             INSERT INTO push_subscriptions (staff_id, scope, endpoint, p256dh, auth, created_at)
                 VALUES ('{staff_id}', 'installation', 'https://push.example/old-phone',
                         'BLn9b-VR0ca83knDNZ32dCHGyjJp-1riX9ZTN40MqV8K_LpQmLqxC_DoHvqvFXO_nGdAB4W9dogZb_sM-uV4JbY',
                         'auth', '2026-01-01T10:00:00.000000000Z');
             PRAGMA user_version = 12;
             COMMIT;"
        ))
        .expect("back to version 12");

    let store = SqliteStore::open(&path).expect("the version 12 file opens");
    let devices = store.push_devices(staff_id).await.expect("devices read");
    assert_eq!(devices.len(), 1, "{devices:?}");
    assert_eq!(
        (
            devices[0].pushed_at,
            devices[0].tested_at,
            devices[0].received_at,
            devices[0].unanswered
        ),
        (None, None, None, 0)
    );
    let at = Utc.with_ymd_and_hms(2026, 1, 2, 8, 0, 0).unwrap();
    assert!(
        store
            .record_device_push(staff_id, "https://push.example/old-phone", at, true)
            .await
            .expect("recorded")
    );
    let devices = store.push_devices(staff_id).await.expect("devices read");
    assert_eq!((devices[0].tested_at, devices[0].unanswered), (Some(at), 1));
}

/// 13 → 14: an endpoint registered before `--private-network` existed
/// reads `false` (an inside address is refused from then on, DECISIONS
/// §20), and the flag is kept for those created with it.
#[tokio::test]
async fn a_version_13_endpoint_may_not_reach_the_private_network() {
    use nurse_call_core::WebhookStore;
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join(FILE_NAME);
    drop(SqliteStore::open(&path).expect("a new file"));
    Connection::open(&path)
        .expect("file opens")
        .execute_batch(
            "BEGIN;
             ALTER TABLE webhook_endpoints DROP COLUMN private_network;
             INSERT INTO webhook_endpoints
                 (id, name, url, events, sections, secrets, disabled, created_at, failing_since,
                  confirms_delivery)
                 VALUES ('ep_old', 'alarm.example', 'https://alarm.example/hook', '[]', '[]',
                         '[\"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"]', 0,
                         '2026-01-01T10:00:00.000Z', NULL, 1);
             PRAGMA user_version = 13;
             COMMIT;",
        )
        .expect("back to version 13");

    let store = SqliteStore::open(&path).expect("the version 13 file opens");
    let endpoints = store.endpoints().await.expect("endpoints read");
    assert_eq!(endpoints.len(), 1);
    assert!(endpoints[0].confirms_delivery, "kept");
    assert!(!endpoints[0].private_network);

    let mut inside = endpoints[0].clone();
    inside.id = "ep_new".into();
    inside.private_network = true;
    store.create_endpoint(&inside).await.expect("created");
    let read = store.endpoints().await.expect("endpoints read");
    assert_eq!(
        read.iter()
            .map(|e| (e.id.as_str(), e.private_network))
            .collect::<Vec<_>>(),
        [("ep_new", true), ("ep_old", false)],
    );
}

/// 14 → 15: call types stored before accept timeouts existed read the
/// seeded timeout of their name, else 300 (DECISIONS §19), without a
/// fallback; one an admin sets is kept.
#[tokio::test]
async fn a_version_14_call_type_gets_the_seeded_accept_timeout() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join(FILE_NAME);
    drop(SqliteStore::open(&path).expect("a new file"));
    Connection::open(&path)
        .expect("file opens")
        .execute_batch(
            "BEGIN;
             ALTER TABLE call_types DROP COLUMN accept_timeout;
             INSERT INTO call_types (id, name, internal_name, urgency, priority, type, color,
                                     notify, notification_interval, notification_maxloops,
                                     notification_sound, escalation)
                 VALUES (7, 'Notruf', '', 'EMERGENCY', 1, 'CALL', '#e74c3c', 1, 15, 0, '', NULL),
                        (30, 'Sonderruf', '', 'NORMAL', 4, 'CALL', '#8e44ad', 1, 60, 0, '',
                         '[{\"after\":0,\"to\":\"house\"}]');
             PRAGMA user_version = 14;
             COMMIT;",
        )
        .expect("back to version 14");

    let store = SqliteStore::open(&path).expect("the version 14 file opens");
    let read = store.call_types().await.expect("call types read");
    assert_eq!(
        read.fallbacks,
        [],
        "no fallback for a column that did not exist"
    );
    let timeout = |name: &str| {
        read.types
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.accept_timeout)
    };
    assert_eq!(
        (timeout("Notruf"), timeout("Sonderruf")),
        (Some(120), Some(300))
    );
    let mut notruf = read
        .types
        .iter()
        .find(|t| t.name == "Notruf")
        .unwrap()
        .clone();
    notruf.accept_timeout = 45;
    store.put_call_type(&notruf).await.expect("put");
    let read = store.call_types().await.expect("call types read");
    let kept = read.types.iter().find(|t| t.name == "Notruf").unwrap();
    assert_eq!(kept.accept_timeout, 45);
}
