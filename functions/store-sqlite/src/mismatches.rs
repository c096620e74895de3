//! Hash mismatches of sandbox consumers (the test page's explanations): the
//! `hash_mismatches` table, the newest [`HashMismatch::KEPT`] per scope.

use chrono::{DateTime, Duration, Utc};
use rusqlite::{Connection, Transaction, params};

use nurse_call_core::model::HashMismatch;
use nurse_call_core::wire_time::to_stored;

use crate::time_at;

/// Stores `mismatch` and drops the scope's mismatches beyond the newest kept,
/// in one transaction.
pub(crate) fn record(
    connection: &mut Connection,
    scope: &str,
    mismatch: &HashMismatch,
) -> rusqlite::Result<()> {
    let tx = connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    tx.execute(
        "INSERT INTO hash_mismatches (scope, at, string, expected, provided)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            scope,
            to_stored(mismatch.at),
            mismatch.string,
            mismatch.expected,
            mismatch.provided
        ],
    )?;
    tx.execute(
        "DELETE FROM hash_mismatches WHERE scope = ?1 AND id NOT IN (
             SELECT id FROM hash_mismatches WHERE scope = ?1
             ORDER BY at DESC, id DESC LIMIT ?2)",
        params![scope, HashMismatch::KEPT as i64],
    )?;
    tx.commit()
}

/// The scope's mismatches, newest first.
pub(crate) fn recent(
    connection: &mut Connection,
    scope: &str,
    limit: usize,
) -> rusqlite::Result<Vec<HashMismatch>> {
    let mut statement = connection.prepare_cached(
        "SELECT string, expected, provided, at FROM hash_mismatches WHERE scope = ?1
         ORDER BY at DESC, id DESC LIMIT ?2",
    )?;
    statement
        .query_map(
            params![scope, limit.min(HashMismatch::KEPT) as i64],
            |row| {
                Ok(HashMismatch {
                    string: row.get(0)?,
                    expected: row.get(1)?,
                    provided: row.get(2)?,
                    at: time_at(row, 3)?,
                })
            },
        )?
        .collect()
}

/// Inside `purge_expired`: the mismatches of expired consumers and every
/// mismatch older than its lifetime.
pub(crate) fn purge(tx: &Transaction<'_>, now: DateTime<Utc>) -> rusqlite::Result<usize> {
    let removed = tx.execute(
        "DELETE FROM hash_mismatches WHERE at <= ?2 OR scope IN (
             SELECT id FROM consumers WHERE expires_at IS NOT NULL AND expires_at <= ?1)",
        params![
            to_stored(now),
            to_stored(now - Duration::hours(HashMismatch::LIFETIME_HOURS))
        ],
    )?;
    Ok(removed)
}
