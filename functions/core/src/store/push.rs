//! What Web Push keeps (DECISIONS §15): the installation's VAPID key pair
//! and each staff member's browser subscriptions (several devices each).
//! A subscription goes with its person: revoking or erasing a staff member
//! deletes theirs in the same step, and a push service's 404 or 410 deletes
//! the one it names.

use async_trait::async_trait;

use chrono::{DateTime, Utc};

use crate::domain::device::Device;
use crate::domain::model::Scope;
use crate::domain::push::{PushSubscription, VapidKeys};
use crate::store::StoreError;

/// What [`PushStore::register_push_subscription`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registration {
    /// A new endpoint of its person, stored.
    New,
    /// The person's endpoint registered again: its keys and time replaced,
    /// counted once.
    Renewed,
    /// A new endpoint, but the person has as many as the limit: nothing
    /// stored.
    Full,
}

/// What Web Push keeps (see the module): the installation's VAPID key pair
/// and the staff's browser subscriptions.
#[async_trait]
pub trait PushStore: Send + Sync {
    /// The installation's key pair, if one was made.
    async fn vapid_keys(&self) -> Result<Option<VapidKeys>, StoreError>;

    /// Keeps `keys` unless a pair is kept already, and returns the pair
    /// kept: two processes starting at once agree on the first one written.
    async fn keep_vapid_keys(&self, keys: &VapidKeys) -> Result<VapidKeys, StoreError>;

    /// Stores a subscription, replacing the person's one with the same
    /// endpoint (a browser renews its keys under the same endpoint), with
    /// no cap (the admin's and the tests' writes).
    async fn put_push_subscription(
        &self,
        subscription: &PushSubscription,
    ) -> Result<(), StoreError> {
        self.register_push_subscription(subscription, usize::MAX)
            .await
            .map(|_| ())
    }

    /// Stores a subscription as [`PushStore::put_push_subscription`] does,
    /// unless it is a new endpoint and its person has `limit` already:
    /// counted inside the write (DECISIONS §20), so that requests at once
    /// never store more than `limit`. [`Registration::Full`] wrote nothing.
    async fn register_push_subscription(
        &self,
        subscription: &PushSubscription,
        limit: usize,
    ) -> Result<Registration, StoreError>;

    /// Deletes the person's subscription with this endpoint; `false`: they
    /// had none.
    async fn delete_push_subscription(
        &self,
        staff_id: &str,
        endpoint: &str,
    ) -> Result<bool, StoreError>;

    /// The person's subscriptions, oldest first.
    async fn push_subscriptions(&self, staff_id: &str)
    -> Result<Vec<PushSubscription>, StoreError>;

    /// The person's devices (one per subscription, oldest first) with what
    /// their pushes and receipts tell (DECISIONS §18).
    async fn push_devices(&self, staff_id: &str) -> Result<Vec<Device>, StoreError>;

    /// A test (`test`) or an alert was pushed at `at` to the person's
    /// device at `endpoint`: its `pushed_at` (and for a test `tested_at`)
    /// becomes `at`, one more push awaits a receipt. `false`: no such
    /// subscription (it stays gone).
    async fn record_device_push(
        &self,
        staff_id: &str,
        endpoint: &str,
        at: DateTime<Utc>,
        test: bool,
    ) -> Result<bool, StoreError>;

    /// A receipt of the device at `endpoint` came at `at`: `received_at`
    /// becomes `at` and no push awaits one, unless none did (a receipt
    /// posted again, or a late one after another): then nothing changes.
    /// `true` when it changed.
    async fn record_device_receipt(
        &self,
        staff_id: &str,
        endpoint: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// Hands the sign-on test pushed at `at` to the person's devices (or to
    /// the one tagged `device`) to the push sender of another process
    /// (DECISIONS §17, §18): where the process that tests sends no pushes
    /// (a Lambda function), the store's change stream takes it there.
    /// `false`: this store has no such path (the embedded store's server
    /// sends its pushes itself).
    async fn hand_on_device_test(
        &self,
        scope: &Scope,
        staff_id: &str,
        at: DateTime<Utc>,
        device: Option<&str>,
    ) -> Result<bool, StoreError>;
}
