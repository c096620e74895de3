//! Hash mismatches of sandbox consumers (the test page's explanations): the
//! `hash_mismatches` table, the newest [`HashMismatch::KEPT`] per scope.

use chrono::{DateTime, Duration, Utc};
use rusqlite::{Connection, params};

use nurse_call_core::{HashMismatch, wire_time::to_stored};

use crate::rows::time_at;

/// Stores `mismatch` and drops the scope's mismatches beyond the newest kept
/// (one job, so one transaction).
pub(crate) fn record(
    tx: &Connection,
    scope: &str,
    mismatch: &HashMismatch,
) -> rusqlite::Result<()> {
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
    Ok(())
}

/// The scope's mismatches, newest first.
pub(crate) fn recent(
    connection: &Connection,
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

/// Deletes the scope's mismatches whose request named `address`
/// ([`HashMismatch::names_address`], the scope being the consumer's id);
/// returns how many.
pub(crate) fn erase_naming(
    connection: &Connection,
    scope: &str,
    address: &str,
) -> rusqlite::Result<usize> {
    let naming: Vec<i64> = {
        let mut statement = connection.prepare(
            "SELECT id, string, expected, provided, at FROM hash_mismatches WHERE scope = ?1",
        )?;
        statement
            .query_map(params![scope], |row| {
                let mismatch = HashMismatch {
                    string: row.get(1)?,
                    expected: row.get(2)?,
                    provided: row.get(3)?,
                    at: time_at(row, 4)?,
                };
                Ok((row.get::<_, i64>(0)?, mismatch))
            })?
            .filter_map(|row| match row {
                Ok((id, mismatch)) => mismatch.names_address(scope, address).then_some(Ok(id)),
                Err(error) => Some(Err(error)),
            })
            .collect::<rusqlite::Result<_>>()?
    };
    let mut delete = connection.prepare("DELETE FROM hash_mismatches WHERE id = ?1")?;
    for id in &naming {
        delete.execute(params![id])?;
    }
    Ok(naming.len())
}

/// Inside `purge_expired`: the mismatches of expired consumers and every
/// mismatch older than its lifetime.
pub(crate) fn purge(tx: &Connection, now: DateTime<Utc>) -> rusqlite::Result<usize> {
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
