//! The tables of the embedded store, created on first open.

use rusqlite::config::DbConfig;
use rusqlite::{Connection, params};

use nurse_call_core::{alarm::Alarm, wire_time::from_stored};

use crate::rows::to_precise;

/// Bumped when the schema changes; checked with `PRAGMA user_version`.
/// 1: consumers, call types, elements, calls. 2: hash mismatches (test page).
/// 3: a consumer's `require_signed_time` (replay protection).
/// 4: displays (DECISIONS §11) and an element's `version`.
/// 5: who opened and closed a call (audit), calls by opening time (report).
/// 6: alarm routing (DECISIONS §14): a call type's `escalation`, each call's
/// alarm with its version and due time, staff, duties, the alarms' audit.
/// 7: the configuration's generation, bumped by triggers on call types and
/// consumers (`config_cache`).
/// 8: outbound webhooks (DECISIONS §16): endpoints, the outbox, the
/// delivery log (`webhooks`).
/// 9: what `element.attention` last announced per element (`attention`).
/// 10: Web Push (DECISIONS §15): the VAPID key pair, the staff's browser
/// subscriptions (`push`).
/// 11: the outbox without an index on the event's id (`webhooks`): an
/// event leaves it by its position.
/// 12: an endpoint's `confirms_delivery` (DECISIONS §16, §18).
/// 13: what each push subscription's pushes and receipts tell (DECISIONS
/// §18, `devices`).
/// 14: an endpoint's `private_network` (DECISIONS §20).
/// 15: supervised links (DECISIONS §19): a consumer's `heartbeat_seconds`,
/// its last sign of life and silence (`consumer_links`), the silences'
/// history (`silences`); see `links`.
/// 16: a call type's `accept_timeout` (DECISIONS §19).
const SCHEMA_VERSION: i64 = 16;

pub(crate) fn prepare(connection: &Connection) -> rusqlite::Result<()> {
    // WAL lets readers (the admin command) work while the server writes; the
    // busy timeout waits for another process's write lock instead of failing.
    // FULL: a commit waits until the WAL is on the disk, so an answered write
    // survives a power loss, not only a crash of the process (NORMAL). The
    // store thread's group commit (worker.rs) pays that fsync once per batch.
    connection.pragma_update(None, "journal_mode", "WAL")?;
    connection.pragma_update(None, "synchronous", "FULL")?;
    connection.pragma_update(None, "foreign_keys", "ON")?;
    connection.busy_timeout(std::time::Duration::from_secs(5))?;
    // Keep each prepared statement's plan: otherwise SQLite (built with STAT4)
    // re-prepares some cached statements on every new binding, the snapshot's
    // `ORDER BY` query on every request (bench/load).
    connection.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;

    let version: i64 = connection.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if version >= SCHEMA_VERSION {
        return Ok(());
    }
    // Each step moves a file one version on, so a file of any older version
    // (and a new, empty one) ends up current without losing data.
    if version < 1 {
        version_1(connection)?;
    }
    if version < 2 {
        version_2(connection)?;
    }
    if version < 3 {
        version_3(connection)?;
    }
    if version < 4 {
        version_4(connection)?;
    }
    if version < 5 {
        version_5(connection)?;
    }
    if version < 6 {
        version_6(connection)?;
    }
    if version < 7 {
        version_7(connection)?;
    }
    if version < 8 {
        version_8(connection)?;
    }
    if version < 9 {
        version_9(connection)?;
    }
    if version < 10 {
        version_10(connection)?;
    }
    if version < 11 {
        version_11(connection)?;
    }
    if version < 12 {
        version_12(connection)?;
    }
    if version < 13 {
        version_13(connection)?;
    }
    if version < 14 {
        version_14(connection)?;
    }
    if version < 15 {
        version_15(connection)?;
    }
    if version < 16 {
        version_16(connection)?;
    }
    Ok(())
}

/// `call_types.accept_timeout` (DECISIONS §19: an accept is not an
/// arrival), seconds. The types stored before read NULL, which core reads
/// as the seeded timeout of the name, else 300 (`call_type_items`), until
/// an admin sets one. Added only where missing, as version 12 does.
fn version_16(connection: &Connection) -> rusqlite::Result<()> {
    let has_column: bool = connection.query_row(
        "SELECT EXISTS (SELECT 1 FROM pragma_table_info('call_types')
                        WHERE name = 'accept_timeout')",
        [],
        |row| row.get(0),
    )?;
    let add = if has_column {
        ""
    } else {
        "ALTER TABLE call_types ADD COLUMN accept_timeout INTEGER;"
    };
    connection.execute_batch(&format!(
        "BEGIN;
         {add}
         PRAGMA user_version = 16;
         COMMIT;"
    ))
}

/// `webhook_endpoints.confirms_delivery`: the alarm server sends `received`
/// for its handsets itself (`webhooks create --confirms-delivery`); the
/// endpoints registered before read 0, their 2xx a receipt as before.
/// Added only where missing, as the earlier steps create only what is
/// missing: a file whose tables are newer than its version (a copy moved
/// back by hand, the tests' older files) opens all the same.
fn version_12(connection: &Connection) -> rusqlite::Result<()> {
    let has_column: bool = connection.query_row(
        "SELECT EXISTS (SELECT 1 FROM pragma_table_info('webhook_endpoints')
                        WHERE name = 'confirms_delivery')",
        [],
        |row| row.get(0),
    )?;
    let add = if has_column {
        ""
    } else {
        "ALTER TABLE webhook_endpoints ADD COLUMN confirms_delivery INTEGER NOT NULL DEFAULT 0;"
    };
    connection.execute_batch(&format!(
        "BEGIN;
         {add}
         PRAGMA user_version = 12;
         COMMIT;"
    ))
}

/// `webhook_endpoints.private_network`: the endpoint may reach the home's
/// own network (`webhooks create --private-network`, DECISIONS §20). The
/// endpoints registered before read 0: an inside address is refused from
/// now on, until the admin creates the endpoint again with the flag.
/// Added only where missing, as version 12 does.
fn version_14(connection: &Connection) -> rusqlite::Result<()> {
    let has_column: bool = connection.query_row(
        "SELECT EXISTS (SELECT 1 FROM pragma_table_info('webhook_endpoints')
                        WHERE name = 'private_network')",
        [],
        |row| row.get(0),
    )?;
    let add = if has_column {
        ""
    } else {
        "ALTER TABLE webhook_endpoints ADD COLUMN private_network INTEGER NOT NULL DEFAULT 0;"
    };
    connection.execute_batch(&format!(
        "BEGIN;
         {add}
         PRAGMA user_version = 14;
         COMMIT;"
    ))
}

/// Supervised links (DECISIONS §19). The interval is the admin's, on the
/// consumer (its edits bump the configuration's generation, so the kept
/// consumers see it); the signs of life and the silence are in a table of
/// their own, so that a request's sign of life does not bump it (and
/// re-read every consumer). A consumer's link goes with it (`CASCADE`); a
/// silence's history line stays for the report. Each column added only
/// where missing, as version 12 does.
fn version_15(connection: &Connection) -> rusqlite::Result<()> {
    let has_column: bool = connection.query_row(
        "SELECT EXISTS (SELECT 1 FROM pragma_table_info('consumers')
                        WHERE name = 'heartbeat_seconds')",
        [],
        |row| row.get(0),
    )?;
    let add = if has_column {
        ""
    } else {
        "ALTER TABLE consumers ADD COLUMN heartbeat_seconds INTEGER;"
    };
    connection.execute_batch(&format!(
        "BEGIN;
         {add}
         CREATE TABLE IF NOT EXISTS consumer_links (
             consumer              TEXT PRIMARY KEY
                                   REFERENCES consumers (id) ON DELETE CASCADE,
             last_seen_at          TEXT NOT NULL,   -- to_stored: whole seconds, fixed width
             silence_since         TEXT,            -- NULL: not silent
             silence_detected_at   TEXT,
             silence_alerts        INTEGER,
             silence_last_alert_at TEXT
         );
         CREATE TABLE IF NOT EXISTS silences (
             consumer TEXT NOT NULL,
             name     TEXT NOT NULL,
             since    TEXT NOT NULL,
             ended_at TEXT,                         -- NULL while it lasts
             PRIMARY KEY (consumer, since)
         );
         CREATE INDEX IF NOT EXISTS silences_by_since ON silences (since);
         PRAGMA user_version = 15;
         COMMIT;"
    ))
}

/// Each push subscription's device facts (DECISIONS §18): when a test or an
/// alert was last pushed to it and a test last, its first receipt since,
/// and the pushes since its last receipt. A subscription kept before knows
/// nothing yet (`NULL`, 0). Each column added only where missing, as
/// version 12 does.
fn version_13(connection: &Connection) -> rusqlite::Result<()> {
    let mut add = String::new();
    for (column, kind) in [
        ("pushed_at", "TEXT"),
        ("tested_at", "TEXT"),
        ("received_at", "TEXT"),
        ("unanswered", "INTEGER NOT NULL DEFAULT 0"),
    ] {
        let has_column: bool = connection.query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info('push_subscriptions')
                            WHERE name = ?1)",
            [column],
            |row| row.get(0),
        )?;
        if !has_column {
            add.push_str(&format!(
                "ALTER TABLE push_subscriptions ADD COLUMN {column} {kind};\n"
            ));
        }
    }
    connection.execute_batch(&format!(
        "BEGIN;
         {add}
         PRAGMA user_version = 13;
         COMMIT;"
    ))
}

/// The outbox again, without `UNIQUE` on `id`: its index took a random page
/// of the file for every event kept and every event finished (ids are
/// random), four more pages written per commit under load (bench/load with
/// an endpoint: 17.4 against 12.5 page writes per request). An event leaves
/// the outbox by its `seq` (its position). The events are copied with their
/// `seq`, and `AUTOINCREMENT`'s counter is moved over too, so that no
/// position is ever given twice.
fn version_11(connection: &Connection) -> rusqlite::Result<()> {
    connection.execute_batch(
        "BEGIN;
         CREATE TABLE webhook_outbox_v11 (
             seq     INTEGER PRIMARY KEY AUTOINCREMENT,
             id      TEXT NOT NULL,
             scope   TEXT NOT NULL,
             kind    TEXT NOT NULL,
             at      TEXT NOT NULL,
             call_id INTEGER,
             section TEXT,
             facts   TEXT NOT NULL
         );
         INSERT INTO webhook_outbox_v11 (seq, id, scope, kind, at, call_id, section, facts)
             SELECT seq, id, scope, kind, at, call_id, section, facts FROM webhook_outbox;
         DELETE FROM sqlite_sequence WHERE name = 'webhook_outbox_v11';
         UPDATE sqlite_sequence SET name = 'webhook_outbox_v11' WHERE name = 'webhook_outbox';
         DROP TABLE webhook_outbox;
         ALTER TABLE webhook_outbox_v11 RENAME TO webhook_outbox;
         PRAGMA user_version = 11;
         COMMIT;",
    )
}

/// Web Push:
/// - `vapid_keys`: the installation's one key pair (`id` is always 1);
/// - `push_subscriptions`: a staff member's browsers, one row per endpoint;
///   deleted with the person (revoke, erase, a visitor's scope).
fn version_10(connection: &Connection) -> rusqlite::Result<()> {
    connection.execute_batch(
        "BEGIN;
         CREATE TABLE IF NOT EXISTS vapid_keys (
             id INTEGER PRIMARY KEY CHECK (id = 1),
             public_key TEXT NOT NULL,
             private_key TEXT NOT NULL,
             created_at TEXT NOT NULL
         );
         CREATE TABLE IF NOT EXISTS push_subscriptions (
             staff_id TEXT NOT NULL,
             endpoint TEXT NOT NULL,
             scope TEXT NOT NULL,
             p256dh TEXT NOT NULL,
             auth TEXT NOT NULL,
             created_at TEXT NOT NULL,
             PRIMARY KEY (staff_id, endpoint)
         );
         CREATE INDEX IF NOT EXISTS push_subscriptions_by_scope ON push_subscriptions (scope);
         PRAGMA user_version = 10;
         COMMIT;",
    )
}

/// `element_attention`: per element of the installation, the reasons
/// `element.attention` last announced (a JSON list of wire names), moved
/// in the same transaction as the event that announces news.
fn version_9(connection: &Connection) -> rusqlite::Result<()> {
    connection.execute_batch(
        "BEGIN;
         CREATE TABLE IF NOT EXISTS element_attention (
             address TEXT PRIMARY KEY,
             reasons TEXT NOT NULL
         );
         PRAGMA user_version = 9;
         COMMIT;",
    )
}

/// Outbound webhooks:
/// - `webhook_endpoints`: what an admin registered; `events`, `sections`
///   and `secrets` are JSON lists of texts;
/// - `webhook_outbox`: the events not yet finished, written in the same
///   transaction as the change that caused them; `seq` is the order they
///   were written in (a call's events go out in that order); a finished
///   event is deleted (version 11 drops `UNIQUE` from `id`);
/// - `webhook_deliveries`: the delivery log, one row per attempt (kept 30
///   days); `end_kind` `delivered`, `retry` (at `retry_at`) or `given_up`
///   (`reason`).
fn version_8(connection: &Connection) -> rusqlite::Result<()> {
    connection.execute_batch(
        "BEGIN;
         CREATE TABLE IF NOT EXISTS webhook_endpoints (
             id            TEXT PRIMARY KEY,
             name          TEXT NOT NULL,
             url           TEXT NOT NULL,
             events        TEXT NOT NULL,
             sections      TEXT NOT NULL,
             secrets       TEXT NOT NULL,
             disabled      INTEGER NOT NULL DEFAULT 0,
             created_at    TEXT NOT NULL,
             failing_since TEXT
         );
         CREATE TABLE IF NOT EXISTS webhook_outbox (
             seq     INTEGER PRIMARY KEY AUTOINCREMENT,
             id      TEXT NOT NULL UNIQUE,
             scope   TEXT NOT NULL,
             kind    TEXT NOT NULL,
             at      TEXT NOT NULL,
             call_id INTEGER,
             section TEXT,
             facts   TEXT NOT NULL
         );
         CREATE TABLE IF NOT EXISTS webhook_deliveries (
             event_id    TEXT NOT NULL,
             endpoint_id TEXT NOT NULL,
             number      INTEGER NOT NULL,
             event_type  TEXT NOT NULL,
             call_id     INTEGER,
             at          TEXT NOT NULL,
             status      INTEGER,
             outcome     TEXT NOT NULL,
             end_kind    TEXT NOT NULL,
             retry_at    TEXT,
             reason      TEXT,
             PRIMARY KEY (event_id, endpoint_id, number)
         );
         CREATE INDEX IF NOT EXISTS webhook_deliveries_by_time ON webhook_deliveries (at);
         PRAGMA user_version = 8;
         COMMIT;",
    )
}

/// A number that changes with every insert, update or delete of a call type
/// or a consumer, in the same transaction, whoever writes (this process, the
/// admin command, `sqlite3` by hand): the in-memory copies of both
/// (`config_cache`) are trusted only while it stays the same.
fn version_7(connection: &Connection) -> rusqlite::Result<()> {
    let mut script = String::from(
        "BEGIN;
         CREATE TABLE IF NOT EXISTS config_generation (
             id INTEGER PRIMARY KEY CHECK (id = 1),
             n  INTEGER NOT NULL
         );
         INSERT OR IGNORE INTO config_generation (id, n) VALUES (1, 0);",
    );
    for table in ["call_types", "consumers"] {
        for change in ["INSERT", "UPDATE", "DELETE"] {
            let name = format!("{table}_{}_bumps_generation", change.to_lowercase());
            script.push_str(&format!(
                "CREATE TRIGGER IF NOT EXISTS {name} AFTER {change} ON {table}
                 BEGIN UPDATE config_generation SET n = n + 1 WHERE id = 1; END;"
            ));
        }
    }
    script.push_str("PRAGMA user_version = 7; COMMIT;");
    connection.execute_batch(&script)
}

/// Alarm routing. Columns on `calls` rather than a table of their own, so
/// every read of calls has its alarm without a join, and every delete of
/// calls (erasure, retention, an expired visitor) takes it along:
/// - `alarm`: the alarm as JSON ([`Alarm::to_json`]); NULL for a call
///   closed before alarms existed (it never had one);
/// - `alarm_version`: grows by one with every write (conditional writes);
/// - `alarm_next_at`: when the engine must look again (fixed-width text,
///   `rows::to_precise`); NULL once stopped; indexed for the due query.
///
/// Calls open at migration get a pending alarm due at their opening, so
/// the engine looks at them at once, as at a new open: an open Notruf is
/// not left out of alarm routing because the update came while it was open.
/// The audit's lines go with their call (`ON DELETE CASCADE`). Call types
/// gain `escalation` (JSON text); NULL reads as the seeded policy of the
/// name (core's `call_type_items`).
fn version_6(connection: &Connection) -> rusqlite::Result<()> {
    let tx = connection.unchecked_transaction()?;
    tx.execute_batch(
        "ALTER TABLE call_types ADD COLUMN escalation TEXT;   -- JSON list of levels
         ALTER TABLE calls ADD COLUMN alarm TEXT;             -- JSON
         ALTER TABLE calls ADD COLUMN alarm_version INTEGER;
         ALTER TABLE calls ADD COLUMN alarm_next_at TEXT;
         CREATE INDEX IF NOT EXISTS calls_alarms_due
             ON calls (alarm_next_at, id) WHERE alarm_next_at IS NOT NULL;
         CREATE TABLE IF NOT EXISTS staff (
             id         TEXT PRIMARY KEY,
             scope      TEXT NOT NULL,
             name       TEXT NOT NULL,
             groups     TEXT NOT NULL,                -- JSON array of group names
             device     TEXT,
             token_hash TEXT NOT NULL UNIQUE,         -- SHA-256 hex of the token
             created_at TEXT NOT NULL,
             revoked    INTEGER NOT NULL DEFAULT 0
         );
         CREATE INDEX IF NOT EXISTS staff_by_scope ON staff (scope, name, id);
         CREATE TABLE IF NOT EXISTS duties (
             staff_id TEXT PRIMARY KEY,               -- one duty per person
             scope    TEXT NOT NULL,
             sections TEXT NOT NULL,                  -- JSON array; empty = the whole house
             since    TEXT NOT NULL,
             until    TEXT NOT NULL                   -- ends by itself then
         );
         CREATE INDEX IF NOT EXISTS duties_by_scope ON duties (scope, until);
         CREATE TABLE IF NOT EXISTS alarm_audit (
             id         INTEGER PRIMARY KEY,          -- the order written
             call_id    INTEGER NOT NULL REFERENCES calls (id) ON DELETE CASCADE,
             at         TEXT NOT NULL,
             kind       TEXT NOT NULL,
             level      INTEGER NOT NULL,
             staff_id   TEXT,
             staff_name TEXT,
             detail     TEXT
         );
         CREATE INDEX IF NOT EXISTS alarm_audit_by_call ON alarm_audit (call_id, id);",
    )?;
    let open: Vec<(i64, String)> = {
        let mut statement =
            tx.prepare("SELECT id, opened_at FROM calls WHERE closed_at IS NULL")?;
        statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?
    };
    for (id, opened_at) in open {
        // A time a hand edit broke fails every read of that call anyway.
        let Some(opened_at) = from_stored(&opened_at) else {
            continue;
        };
        let pending = Alarm::pending(opened_at);
        tx.execute(
            "UPDATE calls SET alarm = ?1, alarm_version = 0, alarm_next_at = ?2 WHERE id = ?3",
            params![pending.to_json(), to_precise(opened_at), id],
        )?;
    }
    tx.execute_batch("PRAGMA user_version = 6;")?;
    tx.commit()
}

/// Displays and their token hashes; every existing element starts at
/// version 1 (it has been written once as far as any display knows).
fn version_4(connection: &Connection) -> rusqlite::Result<()> {
    connection.execute_batch(
        "BEGIN;
         CREATE TABLE IF NOT EXISTS displays (
             id         TEXT PRIMARY KEY,
             name       TEXT NOT NULL,
             sections   TEXT NOT NULL,               -- JSON array; empty = every section
             scope      TEXT NOT NULL,
             token_hash TEXT NOT NULL UNIQUE,        -- SHA-256 hex of the token
             created_at TEXT NOT NULL,
             revoked    INTEGER NOT NULL DEFAULT 0
         );
         ALTER TABLE elements ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
         PRAGMA user_version = 4;
         COMMIT;",
    )
}

/// The store's second connection, for reads only (worker.rs): it cannot
/// write, waits for a lock like the writer, and keeps its statements' plans.
/// Opened after [`prepare`], so the file is in WAL mode and migrated.
pub(crate) fn prepare_reader(connection: &Connection) -> rusqlite::Result<()> {
    connection.pragma_update(None, "query_only", true)?;
    connection.busy_timeout(std::time::Duration::from_secs(5))?;
    connection.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    Ok(())
}

/// Who opened and who closed each call (DECISIONS §13, a consumer id); calls
/// stored before stay unknown (NULL). The index serves the quality report,
/// which reads a scope's calls by opening time.
fn version_5(connection: &Connection) -> rusqlite::Result<()> {
    connection.execute_batch(
        "BEGIN;
         ALTER TABLE calls ADD COLUMN opened_by TEXT;
         ALTER TABLE calls ADD COLUMN closed_by TEXT;
         CREATE INDEX IF NOT EXISTS calls_by_opening ON calls (scope, opened_at, id);
         PRAGMA user_version = 5;
         COMMIT;",
    )
}

/// Replay protection is off for every existing consumer (the spec's behaviour).
fn version_3(connection: &Connection) -> rusqlite::Result<()> {
    connection.execute_batch(
        "BEGIN;
         ALTER TABLE consumers ADD COLUMN require_signed_time INTEGER NOT NULL DEFAULT 0;
         PRAGMA user_version = 3;
         COMMIT;",
    )
}

/// A kept hash mismatch of a sandbox consumer (the newest 10 per scope, for a day).
fn version_2(connection: &Connection) -> rusqlite::Result<()> {
    connection.execute_batch(
        "BEGIN;
         CREATE TABLE IF NOT EXISTS hash_mismatches (
             id       INTEGER PRIMARY KEY AUTOINCREMENT,   -- recording order
             scope    TEXT NOT NULL,                       -- a sandbox consumer id
             at       TEXT NOT NULL,
             string   TEXT NOT NULL,
             expected TEXT NOT NULL,
             provided TEXT NOT NULL
         );
         CREATE INDEX IF NOT EXISTS hash_mismatches_by_scope
             ON hash_mismatches (scope, at, id);
         PRAGMA user_version = 2;
         COMMIT;",
    )
}

fn version_1(connection: &Connection) -> rusqlite::Result<()> {
    connection.execute_batch(
        "BEGIN;
         CREATE TABLE IF NOT EXISTS consumers (
             id          TEXT PRIMARY KEY,
             name        TEXT NOT NULL,
             secrets     TEXT NOT NULL,          -- JSON array, newest last
             allow_sha1  INTEGER NOT NULL,
             created_at  TEXT NOT NULL,
             expires_at  TEXT                    -- sandbox consumers only
         );
         CREATE TABLE IF NOT EXISTS call_types (
             name                  TEXT PRIMARY KEY,
             id                    INTEGER NOT NULL UNIQUE,
             internal_name         TEXT NOT NULL DEFAULT '',
             urgency               TEXT NOT NULL,
             priority              INTEGER NOT NULL,
             type                  TEXT NOT NULL,
             color                 TEXT NOT NULL,
             notify                INTEGER NOT NULL,
             notification_interval INTEGER NOT NULL,
             notification_maxloops INTEGER NOT NULL,
             notification_sound    TEXT NOT NULL
         );
         CREATE TABLE IF NOT EXISTS elements (
             scope      TEXT NOT NULL,           -- 'installation' or a sandbox consumer id
             address    TEXT NOT NULL,
             code       TEXT NOT NULL,
             name       TEXT NOT NULL,
             battery    REAL,
             position   TEXT,
             reachable  INTEGER,
             updated_at TEXT NOT NULL,
             PRIMARY KEY (scope, address)
         );
         CREATE TABLE IF NOT EXISTS calls (
             id           INTEGER PRIMARY KEY AUTOINCREMENT,
             scope        TEXT NOT NULL,
             address      TEXT NOT NULL,
             event        TEXT NOT NULL,
             position     TEXT,
             section      TEXT,
             attribute    TEXT,
             element_code TEXT NOT NULL,
             element_name TEXT NOT NULL,
             opened_at    TEXT NOT NULL,
             closed_at    TEXT
         );
         -- At most one open call per event and address: the idempotent re-open
         -- rule holds even if two processes write the file.
         CREATE UNIQUE INDEX IF NOT EXISTS calls_one_open_per_event
             ON calls (scope, address, event) WHERE closed_at IS NULL;
         CREATE INDEX IF NOT EXISTS calls_by_scope ON calls (scope, closed_at, opened_at);
         CREATE INDEX IF NOT EXISTS elements_by_update ON elements (scope, updated_at);
         PRAGMA user_version = 1;
         COMMIT;",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_wait_for_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        let connection = Connection::open(dir.path().join("s.sqlite3")).unwrap();
        prepare(&connection).unwrap();
        let mode: String = connection
            .pragma_query_value(None, "journal_mode", |row| row.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        // 2 = FULL: the WAL is synced on every commit, not only at checkpoints.
        let synchronous: i64 = connection
            .pragma_query_value(None, "synchronous", |row| row.get(0))
            .unwrap();
        assert_eq!(synchronous, 2);
    }
}
