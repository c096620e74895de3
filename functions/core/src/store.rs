//! Persistence behind one trait, so that the handlers neither know nor care
//! whether SQLite (locally) or DynamoDB (in AWS) keeps the data.
//!
//! Every method is one atomic step: a store never leaves a request half-written.
//! The domain decides *what* to write; the store guarantees *how* it lands
//! (the open-call uniqueness rule and all-or-nothing element batches are
//! enforced by the store, because only it can do so under concurrency).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::model::{
    Call, CallType, Consumer, Display, Element, ElementChange, ElementPolicy, HashMismatch,
    NewCall, Scope,
};

/// A failure of the store itself (not of the request).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Throttled or unreachable after retries: worth retrying later (503).
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// Anything else (500).
    #[error("store failure: {0}")]
    Internal(String),
}

/// The element and the open calls of one address, read together.
#[derive(Debug, Clone, Default)]
pub struct AddressSnapshot {
    pub element: Option<Element>,
    /// Open calls on the address, oldest first.
    pub open_calls: Vec<Call>,
}

/// The result of [`Store::open_call`].
#[derive(Debug, Clone)]
pub enum OpenOutcome {
    /// A new call was stored.
    Opened(Call),
    /// A call of the same event was already open on the address; nothing new
    /// was stored (the element change was still applied).
    AlreadyOpen(Call),
}

/// The result of [`Store::update_elements`].
#[derive(Debug)]
pub enum ElementsOutcome {
    /// Every change was written; the resulting elements, in the order given.
    Updated(Vec<Element>),
    /// `MustExist` and these addresses are not registered; nothing was written.
    Unknown(Vec<String>),
}

#[async_trait]
pub trait Store: Send + Sync {
    /// A consumer by id (lowercase UUID), or `None`.
    async fn consumer(&self, id: &str) -> Result<Option<Consumer>, StoreError>;

    /// Stores a new consumer.
    async fn create_consumer(&self, consumer: &Consumer) -> Result<(), StoreError>;

    /// Every configured call type, ordered by id.
    async fn call_types(&self) -> Result<Vec<CallType>, StoreError>;

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

    /// The element and open calls of an address, in one consistent read.
    async fn snapshot(&self, scope: &Scope, address: &str) -> Result<AddressSnapshot, StoreError>;

    /// Opens `call` unless a call of the same event is already open on the
    /// address, and applies `element` either way, atomically. With
    /// `CreateMissing` an unknown element is created; with `MustExist` the
    /// caller has checked that it exists, and a store may refuse with an error
    /// if it vanished meanwhile, but never creates it.
    async fn open_call(
        &self,
        scope: &Scope,
        call: &NewCall,
        element: &ElementChange,
        policy: ElementPolicy,
    ) -> Result<OpenOutcome, StoreError>;

    /// Closes those of `call_ids` that are still open, at `closed_at`, and
    /// applies `element`, atomically. Returns the calls this request closed.
    async fn close_calls(
        &self,
        scope: &Scope,
        address: &str,
        call_ids: &[i64],
        closed_at: DateTime<Utc>,
        element: &ElementChange,
        policy: ElementPolicy,
    ) -> Result<Vec<Call>, StoreError>;

    /// Applies element changes (at most one per address) all or nothing.
    async fn update_elements(
        &self,
        scope: &Scope,
        changes: &[ElementChange],
        policy: ElementPolicy,
    ) -> Result<ElementsOutcome, StoreError>;

    /// Every open call of a scope (the displays' snapshot, DECISIONS §11), in
    /// any order. Consistent: a call whose open was acknowledged before the
    /// read is in it, one whose close was acknowledged is not.
    async fn open_calls(&self, scope: &Scope) -> Result<Vec<Call>, StoreError>;

    /// Every element of `scope`, ordered by address (supervision, admin).
    async fn elements(&self, scope: &Scope) -> Result<Vec<Element>, StoreError>;

    /// The display whose token hashes to `token_hash` (lowercase hex SHA-256),
    /// revoked or not, or `None`.
    async fn display_by_token_hash(&self, token_hash: &str) -> Result<Option<Display>, StoreError>;

    /// The newest calls of a scope, open ones first (sandbox page).
    async fn recent_calls(&self, scope: &Scope, limit: usize) -> Result<Vec<Call>, StoreError>;

    /// The most recently updated elements of a scope (sandbox page).
    async fn recent_elements(
        &self,
        scope: &Scope,
        limit: usize,
    ) -> Result<Vec<Element>, StoreError>;

    /// Removes expired sandbox consumers and their data. Stores with native
    /// expiry (DynamoDB TTL) need not do anything.
    async fn purge_expired(&self, now: DateTime<Utc>) -> Result<u64, StoreError>;

    /// Remembers a hash mismatch of a sandbox consumer (its scope) for the test
    /// page. Keeps the newest [`HashMismatch::KEPT`] of the scope and drops the
    /// older ones; each expires after [`HashMismatch::LIFETIME_HOURS`] (a store
    /// with native expiry may leave that to the database).
    async fn record_hash_mismatch(
        &self,
        scope: &Scope,
        mismatch: &HashMismatch,
    ) -> Result<(), StoreError>;

    /// The scope's kept hash mismatches, newest first (by `at`, then the later
    /// recorded first), at most `limit` and at most [`HashMismatch::KEPT`].
    async fn recent_hash_mismatches(
        &self,
        scope: &Scope,
        limit: usize,
    ) -> Result<Vec<HashMismatch>, StoreError>;
}
