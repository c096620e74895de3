//! What the admin command (`functions/admin`, DECISIONS §8a) and the
//! service's housekeeping need of a store beyond [`Store`]: listing and
//! changing consumers, elements, call types and displays, seeding, the
//! retention purge, erasure and the report's reads.
//!
//! The API never uses these operations; they live in a trait of their own so
//! that the request path keeps its small, audited surface. Both stores
//! implement it inside their crates, next to their private connection.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::domain::credentials::Stored;
use crate::domain::model::{Call, CallType, Consumer, Display, Element, Scope};
use crate::store::{Store, StoreError};

/// An item of an admin's list ([`AdminStore::consumers`],
/// [`AdminStore::displays`]): a malformed one fails the list with what to
/// fix, rather than being left out of it unseen.
pub fn listed<T>(stored: Stored<T>) -> Result<T, StoreError> {
    match stored {
        Stored::Usable(value) => Ok(value),
        Stored::Malformed(malformed) => Err(StoreError::Internal(format!(
            "{malformed}: fix or delete the item"
        ))),
    }
}

/// The result of [`AdminStore::replace_secrets`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretsReplaced {
    /// The consumer had the expected secrets; it has the new ones now.
    Replaced,
    /// No consumer with that id.
    UnknownConsumer,
    /// The consumer's secrets were no longer the expected ones (another admin
    /// changed them meanwhile); nothing was written.
    Changed,
}

/// What [`AdminStore::erase_address`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Erased {
    /// Whether there was an element of that address.
    pub element: bool,
    /// Calls on the address, open and closed.
    pub calls: u64,
    /// Of those, the ones that were still open.
    pub open_calls: u64,
    /// Kept hash mismatches whose request named the address.
    pub mismatches: u64,
}

impl Erased {
    /// Whether nothing of the address was stored.
    pub fn is_nothing(&self) -> bool {
        *self == Erased::default()
    }
}

/// What the admin command and the housekeeping do with a store beyond
/// [`Store`] (see the module); never used by the API.
#[async_trait]
pub trait AdminStore: Store {
    /// Inserts the call types that do not exist yet (by name); never
    /// overwrites an admin's edit.
    async fn seed_call_types(&self, call_types: &[CallType]) -> Result<(), StoreError>;

    /// Registers or re-registers an element's code and name (admin, seed file),
    /// keeping its status fields.
    async fn register_element(
        &self,
        scope: &Scope,
        address: &str,
        code: &str,
        name: &str,
        at: DateTime<Utc>,
    ) -> Result<Element, StoreError>;

    /// Deletes the closed calls whose `closed_at` is before `closed_before`
    /// (the installation's call retention, [`crate::config::CallRetention`]),
    /// in every scope, and returns how many. Open calls are never deleted.
    /// Stores with native expiry (DynamoDB TTL on the closed call) need not do
    /// anything and return 0.
    async fn purge_closed_calls(&self, closed_before: DateTime<Utc>) -> Result<u64, StoreError>;

    /// Whether the store is reachable and ready (file opened, tables exist).
    /// Fails with a message naming what is missing.
    async fn check(&self) -> Result<(), StoreError>;

    /// Every consumer (production and sandbox), oldest first; fails on a
    /// malformed one ([`listed`]).
    async fn consumers(&self) -> Result<Vec<Consumer>, StoreError>;

    /// Sets the secrets of consumer `id` to `secrets` (newest last), if it
    /// still has `expected`, atomically.
    async fn replace_secrets(
        &self,
        id: &str,
        expected: &[String],
        secrets: &[String],
    ) -> Result<SecretsReplaced, StoreError>;

    /// Switches consumer `id`'s replay protection (a signed `signed_at` on
    /// every request, [`crate::signing::replay`]); `false` when there is no such consumer.
    async fn set_require_signed_time(&self, id: &str, required: bool) -> Result<bool, StoreError>;

    /// Sets consumer `id`'s heartbeat interval (DECISIONS §19, seconds,
    /// checked by the caller): its `last_seen_at` becomes `now` when none
    /// is kept, so a link is not silent the moment it is supervised.
    /// `None` removes the heartbeat and ends a silence it was in (its
    /// history entry ends at `now`). `false` when there is no such consumer.
    async fn set_heartbeat(
        &self,
        id: &str,
        seconds: Option<i64>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// Removes consumer `id`; `false` when there was none.
    async fn delete_consumer(&self, id: &str) -> Result<bool, StoreError>;

    /// Removes the element of `address` (its calls stay); `false` when there
    /// was none.
    async fn remove_element(&self, scope: &Scope, address: &str) -> Result<bool, StoreError>;

    /// Erases everything of `address` in `scope`: its element, every call on
    /// it (open and closed) and every kept hash mismatch whose request named
    /// it ([`crate::domain::model::HashMismatch::names_address`]); other addresses
    /// stay untouched. Safe to repeat: a second run finds nothing.
    async fn erase_address(&self, scope: &Scope, address: &str) -> Result<Erased, StoreError>;

    /// Creates or replaces the call type named `call_type.name`.
    async fn put_call_type(&self, call_type: &CallType) -> Result<(), StoreError>;

    /// Stores a new display (its id and token hash are new).
    async fn create_display(&self, display: &Display) -> Result<(), StoreError>;

    /// Every display, revoked ones included, oldest first; fails on a
    /// malformed one ([`listed`]).
    async fn displays(&self) -> Result<Vec<Display>, StoreError>;

    /// Gives display `id` a new token hash (the old token stops working at
    /// once) and un-revokes nothing: a revoked display stays revoked.
    /// `false` when there is no such display.
    async fn replace_display_token(&self, id: &str, token_hash: &str) -> Result<bool, StoreError>;

    /// Revokes display `id` (its token stops working at once; the record
    /// stays for the list). `false` when there is no such display.
    async fn revoke_display(&self, id: &str) -> Result<bool, StoreError>;

    /// The calls of `scope` opened at or after `from` and before `to`, open
    /// and closed, ordered by `opened_at`, then id (the quality report,
    /// DECISIONS §13). Reads only that span, never the whole history.
    async fn calls_opened_between(
        &self,
        scope: &Scope,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<Call>, StoreError>;
}
