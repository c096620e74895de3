//! The admin operations ([`AdminStore`]) on the embedded store. Each is one
//! statement or one transaction, so the admin command can run while the
//! server writes the same file (WAL, busy timeout).

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use chrono::{DateTime, Utc};
use nurse_call_core::{
    AdminStore, Call, CallType, Consumer, Display, Element, Erased, Scope, SecretsReplaced,
    StoreError, listed, wire_time::to_stored,
};

use crate::address::{read_element, write_element};
use crate::rows::{
    CALL_COLUMNS, CONSUMER_COLUMNS, DISPLAY_COLUMNS, call_from_row, consumer_from_row,
    display_from_row, insert_call_type,
};
use crate::{SqliteStore, mismatches, staff};

#[async_trait]
impl AdminStore for SqliteStore {
    async fn seed_call_types(&self, call_types: &[CallType]) -> Result<(), StoreError> {
        let call_types = call_types.to_vec();
        self.with(move |c| {
            for t in &call_types {
                insert_call_type(c, t, "ON CONFLICT DO NOTHING")?;
            }
            Ok(())
        })
        .await
    }

    async fn register_element(
        &self,
        scope: &Scope,
        address: &str,
        code: &str,
        name: &str,
        at: DateTime<Utc>,
    ) -> Result<Element, StoreError> {
        let (scope, address, code, name) = (
            scope.as_str().to_string(),
            address.to_string(),
            code.to_string(),
            name.to_string(),
        );
        self.with(move |c| {
            let mut element = read_element(c, &scope, &address)?
                .unwrap_or_else(|| Element::unregistered(&address, at));
            element.code = code;
            element.name = name;
            write_element(c, &scope, &mut element)?;
            Ok(element)
        })
        .await
    }

    async fn purge_closed_calls(&self, closed_before: DateTime<Utc>) -> Result<u64, StoreError> {
        self.with(move |c| {
            let purged = c
                .prepare_cached("DELETE FROM calls WHERE closed_at IS NOT NULL AND closed_at < ?1")?
                .execute(params![to_stored(closed_before)])?;
            Ok(purged as u64)
        })
        .await
    }

    async fn check(&self) -> Result<(), StoreError> {
        // Opening the store created and migrated the file; one read proves
        // that it is usable.
        self.read(|c| c.query_row("SELECT count(*) FROM call_types", [], |_| Ok(())))
            .await
    }

    async fn consumers(&self) -> Result<Vec<Consumer>, StoreError> {
        self.read(|c| {
            let mut statement = c.prepare(&format!(
                "SELECT {CONSUMER_COLUMNS} FROM consumers ORDER BY created_at, id"
            ))?;
            statement
                .query_map([], consumer_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .await?
        .into_iter()
        .map(listed)
        .collect()
    }

    async fn replace_secrets(
        &self,
        id: &str,
        expected: &[String],
        secrets: &[String],
    ) -> Result<SecretsReplaced, StoreError> {
        let id = id.to_string();
        let expected = expected.to_vec();
        let secrets = serde_json::to_string(secrets).expect("strings serialise");
        self.with(move |tx| {
            let stored: Option<String> = tx
                .query_row(
                    "SELECT secrets FROM consumers WHERE id = ?1",
                    params![id],
                    |row| row.get(0),
                )
                .optional()?;
            let Some(stored) = stored else {
                return Ok(SecretsReplaced::UnknownConsumer);
            };
            let stored: Vec<String> = serde_json::from_str(&stored).unwrap_or_default();
            if stored != expected {
                return Ok(SecretsReplaced::Changed);
            }
            tx.execute(
                "UPDATE consumers SET secrets = ?1 WHERE id = ?2",
                params![secrets, id],
            )?;
            Ok(SecretsReplaced::Replaced)
        })
        .await
    }

    async fn set_require_signed_time(&self, id: &str, required: bool) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.with(move |c| {
            let changed = c.execute(
                "UPDATE consumers SET require_signed_time = ?1 WHERE id = ?2",
                params![required, id],
            )?;
            Ok(changed > 0)
        })
        .await
    }

    async fn set_heartbeat(
        &self,
        id: &str,
        seconds: Option<i64>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.with(move |c| crate::links::set_heartbeat(c, &id, seconds, now))
            .await
    }

    async fn delete_consumer(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.with(move |tx| {
            // A sandbox consumer's data goes with it, as when it expires.
            tx.execute("DELETE FROM calls WHERE scope = ?1", params![id])?;
            tx.execute("DELETE FROM elements WHERE scope = ?1", params![id])?;
            staff::erase_scopes(tx, "?1", &id)?;
            let deleted = tx.execute("DELETE FROM consumers WHERE id = ?1", params![id])?;
            Ok(deleted > 0)
        })
        .await
    }

    async fn remove_element(&self, scope: &Scope, address: &str) -> Result<bool, StoreError> {
        let (scope, address) = (scope.as_str().to_string(), address.to_string());
        self.with(move |c| {
            let deleted = c.execute(
                "DELETE FROM elements WHERE scope = ?1 AND address = ?2",
                params![scope, address],
            )?;
            Ok(deleted > 0)
        })
        .await
    }

    /// One job, so one transaction: all of the address goes, or nothing.
    /// The calls are found through `calls_by_scope` (the scope's calls are
    /// read, which a rare admin action may afford); their alarms are columns
    /// of theirs, their audit lines go by `ON DELETE CASCADE`.
    async fn erase_address(&self, scope: &Scope, address: &str) -> Result<Erased, StoreError> {
        let (scope, address) = (scope.as_str().to_string(), address.to_string());
        self.with(move |c| {
            let element = c.execute(
                "DELETE FROM elements WHERE scope = ?1 AND address = ?2",
                params![scope, address],
            )? > 0;
            let open_calls: i64 = c.query_row(
                "SELECT count(*) FROM calls
                 WHERE scope = ?1 AND address = ?2 AND closed_at IS NULL",
                params![scope, address],
                |row| row.get(0),
            )?;
            let calls = c.execute(
                "DELETE FROM calls WHERE scope = ?1 AND address = ?2",
                params![scope, address],
            )? as u64;
            let mismatches = mismatches::erase_naming(c, &scope, &address)? as u64;
            Ok(Erased {
                element,
                calls,
                open_calls: open_calls as u64,
                mismatches,
            })
        })
        .await
    }

    async fn put_call_type(&self, call_type: &CallType) -> Result<(), StoreError> {
        let t = call_type.clone();
        self.with(move |c| {
            insert_call_type(
                c,
                &t,
                "ON CONFLICT (name) DO UPDATE SET
                   id = excluded.id, internal_name = excluded.internal_name,
                   urgency = excluded.urgency, priority = excluded.priority,
                   type = excluded.type, color = excluded.color, notify = excluded.notify,
                   notification_interval = excluded.notification_interval,
                   notification_maxloops = excluded.notification_maxloops,
                   notification_sound = excluded.notification_sound,
                   escalation = excluded.escalation,
                   accept_timeout = excluded.accept_timeout",
            )?;
            Ok(())
        })
        .await
    }

    async fn create_display(&self, display: &Display) -> Result<(), StoreError> {
        let display = display.clone();
        self.with(move |c| {
            c.execute(
                "INSERT INTO displays (id, name, sections, scope, token_hash, created_at, revoked)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    display.id,
                    display.name,
                    serde_json::to_string(&display.sections).expect("strings serialise"),
                    display.scope.as_str(),
                    display.token_hash,
                    nurse_call_core::wire_time::to_stored(display.created_at),
                    display.revoked
                ],
            )?;
            Ok(())
        })
        .await
    }

    async fn displays(&self) -> Result<Vec<Display>, StoreError> {
        self.read(|c| {
            let mut statement = c.prepare(&format!(
                "SELECT {DISPLAY_COLUMNS} FROM displays ORDER BY created_at, id"
            ))?;
            statement
                .query_map([], display_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .await?
        .into_iter()
        .map(listed)
        .collect()
    }

    async fn replace_display_token(&self, id: &str, token_hash: &str) -> Result<bool, StoreError> {
        let (id, token_hash) = (id.to_string(), token_hash.to_string());
        self.with(move |c| {
            let updated = c.execute(
                "UPDATE displays SET token_hash = ?2 WHERE id = ?1",
                params![id, token_hash],
            )?;
            Ok(updated > 0)
        })
        .await
    }

    async fn revoke_display(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.with(move |c| {
            let updated =
                c.execute("UPDATE displays SET revoked = 1 WHERE id = ?1", params![id])?;
            Ok(updated > 0)
        })
        .await
    }

    async fn calls_opened_between(
        &self,
        scope: &Scope,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<Call>, StoreError> {
        // Stored times are RFC 3339 UTC with whole seconds: text order is
        // time order, so the index on (scope, opened_at, id) answers this.
        let (scope, from, to) = (scope.as_str().to_string(), to_stored(from), to_stored(to));
        self.read(move |c| {
            let mut statement = c.prepare(&format!(
                "SELECT {CALL_COLUMNS} FROM calls
                 WHERE scope = ?1 AND opened_at >= ?2 AND opened_at < ?3
                 ORDER BY opened_at, id"
            ))?;
            statement
                .query_map(params![scope, from, to], call_from_row)?
                .collect()
        })
        .await
    }
}
