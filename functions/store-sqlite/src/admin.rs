//! The admin operations ([`AdminStore`]) on the embedded store. Each is one
//! statement or one transaction, so the admin command can run while the
//! server writes the same file (WAL, busy timeout).

use async_trait::async_trait;
use rusqlite::{OptionalExtension, TransactionBehavior, params};

use nurse_call_core::admin::{AdminStore, SecretsReplaced};
use nurse_call_core::model::{CallType, Consumer, Display, Scope};
use nurse_call_core::store::StoreError;

use crate::{
    CONSUMER_COLUMNS, DISPLAY_COLUMNS, SqliteStore, consumer_from_row, display_from_row,
    insert_call_type,
};

#[async_trait]
impl AdminStore for SqliteStore {
    async fn check(&self) -> Result<(), StoreError> {
        // Opening the store created and migrated the file; one read proves
        // that it is usable.
        self.with(|c| c.query_row("SELECT count(*) FROM call_types", [], |_| Ok(())))
            .await
    }

    async fn consumers(&self) -> Result<Vec<Consumer>, StoreError> {
        self.with(|c| {
            let mut statement = c.prepare(&format!(
                "SELECT {CONSUMER_COLUMNS} FROM consumers ORDER BY created_at, id"
            ))?;
            statement.query_map([], consumer_from_row)?.collect()
        })
        .await
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
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
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
            tx.commit()?;
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

    async fn delete_consumer(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            // A sandbox consumer's data goes with it, as when it expires.
            tx.execute("DELETE FROM calls WHERE scope = ?1", params![id])?;
            tx.execute("DELETE FROM elements WHERE scope = ?1", params![id])?;
            let deleted = tx.execute("DELETE FROM consumers WHERE id = ?1", params![id])?;
            tx.commit()?;
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
                   notification_sound = excluded.notification_sound",
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
        self.with(|c| {
            let mut statement = c.prepare(&format!(
                "SELECT {DISPLAY_COLUMNS} FROM displays ORDER BY created_at, id"
            ))?;
            statement.query_map([], display_from_row)?.collect()
        })
        .await
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
}
