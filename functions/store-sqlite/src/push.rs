//! Web Push in SQLite (schema version 10): the installation's VAPID key
//! pair (one row) and the staff's browser subscriptions.

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, Row, params};

use chrono::{DateTime, Utc};
use nurse_call_core::{
    PushStore, Registration, Scope, StoreError,
    push::{Device, PushSubscription, VapidKeys},
};

use crate::SqliteStore;
use crate::rows::{precise_at, to_precise};

fn keys_of(c: &Connection) -> rusqlite::Result<Option<VapidKeys>> {
    c.prepare_cached("SELECT public_key, private_key, created_at FROM vapid_keys WHERE id = 1")?
        .query_row([], |row| {
            Ok(VapidKeys {
                public_key: row.get(0)?,
                private_key: row.get(1)?,
                created_at: precise_at(row, 2)?,
            })
        })
        .optional()
}

const SUBSCRIPTION_COLUMNS: &str = "staff_id, scope, endpoint, p256dh, auth, created_at";

fn subscription_from_row(row: &Row<'_>) -> rusqlite::Result<PushSubscription> {
    Ok(PushSubscription {
        staff_id: row.get(0)?,
        scope: Scope::from_key(&row.get::<_, String>(1)?),
        endpoint: row.get(2)?,
        p256dh: row.get(3)?,
        auth: row.get(4)?,
        created_at: precise_at(row, 5)?,
    })
}

#[async_trait]
impl PushStore for SqliteStore {
    async fn vapid_keys(&self) -> Result<Option<VapidKeys>, StoreError> {
        self.read(keys_of).await
    }

    async fn keep_vapid_keys(&self, keys: &VapidKeys) -> Result<VapidKeys, StoreError> {
        let keys = keys.clone();
        self.with(move |c| {
            // The first pair written stays (another process may have made one).
            c.execute(
                "INSERT INTO vapid_keys (id, public_key, private_key, created_at)
                 VALUES (1, ?1, ?2, ?3) ON CONFLICT (id) DO NOTHING",
                params![
                    keys.public_key,
                    keys.private_key,
                    to_precise(keys.created_at)
                ],
            )?;
            keys_of(c)?.ok_or(rusqlite::Error::QueryReturnedNoRows)
        })
        .await
    }

    async fn register_push_subscription(
        &self,
        subscription: &PushSubscription,
        limit: usize,
    ) -> Result<Registration, StoreError> {
        let s = subscription.clone();
        // Counted and written in one transaction of the one writer.
        self.with(move |c| {
            let kept: Vec<String> = c
                .prepare_cached("SELECT endpoint FROM push_subscriptions WHERE staff_id = ?1")?
                .query_map(params![s.staff_id], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let renewed = kept.contains(&s.endpoint);
            if !renewed && kept.len() >= limit {
                return Ok(Registration::Full);
            }
            c.execute(
                &format!(
                    "INSERT INTO push_subscriptions ({SUBSCRIPTION_COLUMNS})
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (staff_id, endpoint) DO UPDATE SET
                       scope = excluded.scope, p256dh = excluded.p256dh,
                       auth = excluded.auth, created_at = excluded.created_at"
                ),
                params![
                    s.staff_id,
                    s.scope.as_str(),
                    s.endpoint,
                    s.p256dh,
                    s.auth,
                    to_precise(s.created_at)
                ],
            )?;
            Ok(if renewed {
                Registration::Renewed
            } else {
                Registration::New
            })
        })
        .await
    }

    async fn delete_push_subscription(
        &self,
        staff_id: &str,
        endpoint: &str,
    ) -> Result<bool, StoreError> {
        let (staff_id, endpoint) = (staff_id.to_string(), endpoint.to_string());
        self.with(move |c| {
            Ok(c.execute(
                "DELETE FROM push_subscriptions WHERE staff_id = ?1 AND endpoint = ?2",
                params![staff_id, endpoint],
            )? > 0)
        })
        .await
    }

    async fn push_subscriptions(
        &self,
        staff_id: &str,
    ) -> Result<Vec<PushSubscription>, StoreError> {
        let staff_id = staff_id.to_string();
        self.read(move |c| {
            c.prepare_cached(&format!(
                "SELECT {SUBSCRIPTION_COLUMNS} FROM push_subscriptions
                 WHERE staff_id = ?1 ORDER BY created_at, endpoint"
            ))?
            .query_map(params![staff_id], subscription_from_row)?
            .collect()
        })
        .await
    }

    async fn push_devices(&self, staff_id: &str) -> Result<Vec<Device>, StoreError> {
        self.devices_of(staff_id).await
    }

    async fn record_device_push(
        &self,
        staff_id: &str,
        endpoint: &str,
        at: DateTime<Utc>,
        test: bool,
    ) -> Result<bool, StoreError> {
        self.device_pushed(staff_id, endpoint, at, test).await
    }

    async fn record_device_receipt(
        &self,
        staff_id: &str,
        endpoint: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.device_received(staff_id, endpoint, at).await
    }

    async fn hand_on_device_test(
        &self,
        _scope: &Scope,
        _staff_id: &str,
        _at: DateTime<Utc>,
        _device: Option<&str>,
    ) -> Result<bool, StoreError> {
        // No change stream, nobody to hand it to: the local server sends
        // its tests itself.
        Ok(false)
    }
}
