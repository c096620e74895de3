//! The test server's bookkeeping ([`SandboxStore`], DECISIONS §8) in
//! SQLite: visitors, their recent calls and elements, their hash mismatches
//! (`mismatches`), and the purge of expired visitors with their data.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::params;

use nurse_call_core::{
    Call, Consumer, Element, HashMismatch, SandboxStore, Scope, StoreError, wire_time::to_stored,
};

use crate::rows::{CALL_COLUMNS, ELEMENT_COLUMNS, call_from_row, element_from_row};
use crate::{SqliteStore, mismatches, staff};

#[async_trait]
impl SandboxStore for SqliteStore {
    async fn create_consumer(&self, consumer: &Consumer) -> Result<(), StoreError> {
        let consumer = consumer.clone();
        self.with(move |c| {
            c.execute(
                "INSERT INTO consumers (id, name, secrets, allow_sha1, created_at, expires_at,
                    require_signed_time)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    consumer.id,
                    consumer.name,
                    serde_json::to_string(&consumer.secrets).expect("strings serialise"),
                    consumer.allow_sha1,
                    to_stored(consumer.created_at),
                    consumer.expires_at.map(to_stored),
                    consumer.require_signed_time
                ],
            )?;
            Ok(())
        })
        .await
    }

    async fn recent_calls(&self, scope: &Scope, limit: usize) -> Result<Vec<Call>, StoreError> {
        let scope = scope.as_str().to_string();
        self.read(move |c| {
            let mut statement = c.prepare_cached(&format!(
                "SELECT {CALL_COLUMNS} FROM calls WHERE scope = ?1
                 ORDER BY closed_at IS NOT NULL, opened_at DESC, id DESC LIMIT ?2"
            ))?;
            statement
                .query_map(params![scope, limit as i64], call_from_row)?
                .collect()
        })
        .await
    }

    async fn recent_elements(
        &self,
        scope: &Scope,
        limit: usize,
    ) -> Result<Vec<Element>, StoreError> {
        let scope = scope.as_str().to_string();
        self.read(move |c| {
            let mut statement = c.prepare_cached(&format!(
                "SELECT {ELEMENT_COLUMNS} FROM elements WHERE scope = ?1
                 ORDER BY updated_at DESC, address LIMIT ?2"
            ))?;
            statement
                .query_map(params![scope, limit as i64], element_from_row)?
                .collect()
        })
        .await
    }

    async fn purge_expired(&self, now: DateTime<Utc>) -> Result<u64, StoreError> {
        self.with(move |tx| {
            mismatches::purge(tx, now)?;
            let now = to_stored(now);
            let scopes =
                "SELECT id FROM consumers WHERE expires_at IS NOT NULL AND expires_at <= ?1";
            tx.execute(
                &format!("DELETE FROM calls WHERE scope IN ({scopes})"),
                params![now],
            )?;
            tx.execute(
                &format!("DELETE FROM elements WHERE scope IN ({scopes})"),
                params![now],
            )?;
            // Their calls' alarms and audit went with the calls (schema 6).
            staff::erase_scopes(tx, scopes, &now)?;
            let purged = tx.execute(
                "DELETE FROM consumers WHERE expires_at IS NOT NULL AND expires_at <= ?1",
                params![now],
            )?;
            Ok(purged as u64)
        })
        .await
    }

    async fn record_hash_mismatch(
        &self,
        scope: &Scope,
        mismatch: &HashMismatch,
    ) -> Result<(), StoreError> {
        let (scope, mismatch) = (scope.as_str().to_string(), mismatch.clone());
        self.with(move |c| mismatches::record(c, &scope, &mismatch))
            .await
    }

    async fn recent_hash_mismatches(
        &self,
        scope: &Scope,
        limit: usize,
    ) -> Result<Vec<HashMismatch>, StoreError> {
        let scope = scope.as_str().to_string();
        self.read(move |c| mismatches::recent(c, &scope, limit))
            .await
    }
}
