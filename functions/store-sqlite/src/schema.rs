//! The tables of the embedded store, created on first open.

use rusqlite::Connection;
use rusqlite::config::DbConfig;

/// Bumped when the schema changes; checked with `PRAGMA user_version`.
/// 1: consumers, call types, elements, calls. 2: hash mismatches (test page).
/// 3: a consumer's `require_signed_time` (replay protection).
/// 4: displays (DECISIONS §11) and an element's `version`.
const SCHEMA_VERSION: i64 = 4;

pub(crate) fn prepare(connection: &Connection) -> rusqlite::Result<()> {
    // WAL lets readers (the admin command) work while the server writes; the
    // busy timeout waits for another process's write lock instead of failing.
    connection.pragma_update(None, "journal_mode", "WAL")?;
    connection.pragma_update(None, "synchronous", "NORMAL")?;
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
    Ok(())
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
