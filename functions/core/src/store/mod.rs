//! Persistence behind traits, so that the handlers neither know nor care
//! whether SQLite (locally) or DynamoDB (in AWS) keeps the data.
//!
//! [`Store`] is what the request path uses: the API's writes and the
//! displays' reads. The sandbox's bookkeeping ([`SandboxStore`]), the admin
//! command's operations ([`admin::AdminStore`]) and alarm routing's records
//! ([`alarms::AlarmStore`]), the staff's Web Push subscriptions
//! ([`push::PushStore`]), the webhooks' records
//! ([`webhooks::WebhookStore`]) and the supervised links
//! ([`links::LinkStore`]) are traits of their own, so the request path
//! keeps a small, audited surface. [`Backend`] is all of them,
//! what each store crate implements and the wiring hands out.
//!
//! Every method is one atomic step: a store never leaves a request half-written.
//! The domain decides *what* to write; the store guarantees *how* it lands
//! (the open-call uniqueness rule and all-or-nothing element batches are
//! enforced by the store, because only it can do so under concurrency).

pub(crate) mod admin;
pub(crate) mod alarms;
pub(crate) mod cache;
pub(crate) mod fallbacks;
pub(crate) mod links;
pub(crate) mod outbox;
pub(crate) mod push;
pub(crate) mod webhooks;

pub(crate) use alarms::FirstAlarm;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::domain::call_type_items::{CallTypeItem, CallTypesRead, read_items};
use crate::domain::credentials::Stored;
use crate::domain::model::{
    Call, Consumer, Display, Element, ElementChange, ElementPolicy, HashMismatch, NewCall, Scope,
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
    /// A conditional write lost to other writers of the same record at
    /// every attempt (contention, not a store failure): worth retrying
    /// later (503).
    #[error("contention: {0}")]
    Contended(String),
}

/// The element and the open calls of one address, read together.
#[derive(Debug, Clone, Default)]
pub struct AddressSnapshot {
    /// The address's element; `None` while none is registered (a sandbox
    /// address not seen yet).
    pub element: Option<Element>,
    /// Open calls on the address, oldest first.
    pub open_calls: Vec<Call>,
}

impl AddressSnapshot {
    /// The open call of `event` on the address: opening that event again
    /// answers this call and stores nothing new (spec 4.1).
    pub fn open_call_of(&self, event: &str) -> Option<&Call> {
        self.open_calls.iter().find(|call| call.event == event)
    }

    /// The open calls a close at `closed_at` closes: a replayed or late close
    /// never closes a call opened after it (DECISIONS §5).
    pub fn closable(&self, closed_at: DateTime<Utc>) -> impl Iterator<Item = &Call> {
        self.open_calls
            .iter()
            .filter(move |call| call.opened_at <= closed_at)
    }
}

/// What a display request (open or close) writes to its element, decided
/// once by the handler from the snapshot and carried to the store as one
/// value: whose element, the status fields sent, what an unknown element
/// means, and whether the element is written at all. The handler publishes
/// the element to the displays when, and only when, the store writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ElementWrite {
    /// Whose data the request works on (the consumer's scope).
    pub scope: Scope,
    /// The status fields sent; only those change.
    pub change: ElementChange,
    /// What an unregistered address means (production or sandbox).
    pub policy: ElementPolicy,
    /// Whether the element is written: status fields sent, or a sandbox
    /// address seen for the first time.
    pub writes_element: bool,
}

impl ElementWrite {
    /// The write of `change` to the element of `snapshot`'s address.
    pub fn new(
        scope: &Scope,
        change: &ElementChange,
        policy: ElementPolicy,
        snapshot: &AddressSnapshot,
    ) -> Self {
        let writes_element = !change.is_empty()
            || (policy == ElementPolicy::CreateMissing && snapshot.element.is_none());
        ElementWrite {
            scope: scope.clone(),
            change: change.clone(),
            policy,
            writes_element,
        }
    }

    /// The address of the element (and of the calls opened or closed).
    pub fn address(&self) -> &str {
        &self.change.address
    }
}

/// What an element request writes (spec 4.2): changes of several elements
/// of one scope, all or nothing, under one policy.
#[derive(Debug, Clone, PartialEq)]
pub struct ElementBatch {
    /// Whose data the request works on (the consumer's scope).
    pub scope: Scope,
    /// At most one change per address.
    pub changes: Vec<ElementChange>,
    /// What an unregistered address means (production or sandbox).
    pub policy: ElementPolicy,
}

impl ElementBatch {
    /// The batch of `changes` in `scope`, which the handler has merged to one
    /// per address.
    pub fn new(scope: &Scope, changes: &[ElementChange], policy: ElementPolicy) -> Self {
        ElementBatch {
            scope: scope.clone(),
            changes: changes.to_vec(),
            policy,
        }
    }
}

/// The result of [`Store::open_call`].
#[derive(Debug, Clone)]
pub enum OpenOutcome {
    /// A new call was stored.
    Opened(Call),
    /// A call of the same event was already open on the address; nothing new
    /// was stored (the element change was still applied).
    AlreadyOpen(Call),
    /// `MustExist`, and the element vanished after the snapshot (an admin
    /// removed it): nothing was written; the request's 422 `address`.
    UnknownElement,
}

/// The result of [`Store::close_calls`].
#[derive(Debug, Clone)]
pub enum CloseOutcome {
    /// The calls this request closed (none when none was closable), and the
    /// element change was applied.
    Closed(Vec<Call>),
    /// `MustExist`, and the element vanished after the snapshot: nothing was
    /// written; the request's 422 `address`.
    UnknownElement,
}

/// The result of [`Store::update_elements`].
#[derive(Debug)]
pub enum ElementsOutcome {
    /// Every change was written; the resulting elements, in the order given.
    Updated(Vec<Element>),
    /// `MustExist` and these addresses are not registered; nothing was written.
    Unknown(Vec<String>),
}

/// What the request path needs: the API's reads and writes, the displays' reads.
///
/// Admins edit call types, consumers and displays by hand: a store hands
/// those items over field by field ([`crate::domain::raw::Raw`]) or read by
/// [`crate::domain::credentials`], and core decides what they mean, the
/// same for every store.
#[async_trait]
pub trait Store: Send + Sync {
    /// The consumer item of `id` (lowercase UUID) as stored, or `None`.
    async fn stored_consumer(&self, id: &str) -> Result<Option<Stored<Consumer>>, StoreError>;

    /// A usable consumer by id, or `None`: none stored, or one a hand edit
    /// left malformed, which is refused like an unknown one and logged as an
    /// error naming the consumer and the field (never a secret).
    async fn consumer(&self, id: &str) -> Result<Option<Consumer>, StoreError> {
        Ok(usable(self.stored_consumer(id).await?))
    }

    /// Every item of the call-types table, field by field, in any order.
    async fn call_type_items(&self) -> Result<Vec<CallTypeItem>, StoreError>;

    /// Every call type, ordered by id, read from the items with the
    /// fail-safe fallbacks of DECISIONS §7, and those fallbacks. Whoever
    /// serves them logs the fallbacks ([`fallbacks::FallbackLog`]).
    async fn call_types(&self) -> Result<CallTypesRead, StoreError> {
        Ok(read_items(self.call_type_items().await?))
    }

    /// The element and open calls of an address, in one consistent read.
    async fn snapshot(&self, scope: &Scope, address: &str) -> Result<AddressSnapshot, StoreError>;

    /// Opens `call` on the address of `snapshot` in `element`'s scope, and
    /// applies `element`, atomically. The store decides with
    /// [`AddressSnapshot::open_call_of`]: an event already open there is
    /// answered with that call and only the element is written (when
    /// [`ElementWrite::writes_element`]); one opened by a concurrent request
    /// meanwhile is answered the same way. With `CreateMissing` an unknown
    /// element is created; with `MustExist` one that vanished after the
    /// snapshot is [`OpenOutcome::UnknownElement`].
    ///
    /// The new call's alarm is [`Alarm::pending`](crate::domain::alarm::Alarm::pending),
    /// due at once, in the due index from the same atomic step: a committed
    /// open is always looked at, even when the process dies after the commit.
    async fn open_call(
        &self,
        call: &NewCall,
        snapshot: &AddressSnapshot,
        element: &ElementWrite,
    ) -> Result<OpenOutcome, StoreError>;

    /// [`Store::open_call`], where the store can, with the new call's alarm
    /// as `first` gives it (its first step, taken by the request with the
    /// roster it read, and that step's audit lines) in the same atomic step,
    /// its `next_at` the call's key in the due index; so the open needs no
    /// look of its own. The call returned carries the alarm written: a
    /// store that cannot (the default) writes the pending one, and the
    /// caller then looks at it as after [`Store::open_call`].
    async fn open_call_with_alarm(
        &self,
        call: &NewCall,
        snapshot: &AddressSnapshot,
        element: &ElementWrite,
        first: &FirstAlarm,
    ) -> Result<OpenOutcome, StoreError> {
        let _ = first;
        self.open_call(call, snapshot, element).await
    }

    /// Closes the [`AddressSnapshot::closable`] calls of `snapshot` that are
    /// still open, at `closed_at`, by consumer `closed_by` (kept for the
    /// audit, DECISIONS §13), and applies `element`, atomically; the address
    /// and scope are `element`'s. Returns the calls this request closed (one
    /// closed by a concurrent request meanwhile is not among them).
    ///
    /// A store may end a closed call's alarm in the same atomic step where
    /// [`quiet_end`](crate::domain::alarm::engine::quiet_end) gives its end
    /// (dated the close, with the end's audit lines, the alarm out of the
    /// due index), and
    /// return the call with that alarm, ended; the embedded store does. A
    /// call returned with its alarm not ended is for the caller to look at
    /// (a ringing alert is to be cancelled).
    async fn close_calls(
        &self,
        snapshot: &AddressSnapshot,
        closed_at: DateTime<Utc>,
        closed_by: Option<&str>,
        element: &ElementWrite,
    ) -> Result<CloseOutcome, StoreError>;

    /// Applies the batch's element changes (at most one per address) all or
    /// nothing.
    async fn update_elements(&self, batch: &ElementBatch) -> Result<ElementsOutcome, StoreError>;

    /// Every open call of a scope (the displays' snapshot, DECISIONS §11), in
    /// any order. Consistent: a call whose open was acknowledged before the
    /// read is in it, one whose close was acknowledged is not.
    async fn open_calls(&self, scope: &Scope) -> Result<Vec<Call>, StoreError>;

    /// Every element of `scope`, ordered by address (supervision, admin).
    async fn elements(&self, scope: &Scope) -> Result<Vec<Element>, StoreError>;

    /// The display item whose token hashes to `token_hash` (lowercase hex
    /// SHA-256) as stored, revoked or not, or `None`.
    async fn stored_display(&self, token_hash: &str)
    -> Result<Option<Stored<Display>>, StoreError>;

    /// The usable display whose token hashes to `token_hash`, revoked or
    /// not, or `None`: none stored, or one a hand edit left malformed
    /// (refused like an unknown token, logged as an error naming the display
    /// and the field).
    async fn display_by_token_hash(&self, token_hash: &str) -> Result<Option<Display>, StoreError> {
        Ok(usable(self.stored_display(token_hash).await?))
    }
}

/// The credential when it is usable; a malformed one is logged (kind, id,
/// field, problem: never a value) and refused.
fn usable<T>(stored: Option<Stored<T>>) -> Option<T> {
    match stored? {
        Stored::Usable(value) => Some(value),
        Stored::Malformed(malformed) => {
            tracing::error!(
                kind = malformed.kind,
                id = %malformed.id,
                field = malformed.field,
                problem = %malformed.problem,
                "malformed credential refused"
            );
            None
        }
    }
}

/// What the test server (sandbox mode, DECISIONS §8) keeps beyond the API:
/// its visitors, their recent data and their hash mismatches.
#[async_trait]
pub trait SandboxStore: Store {
    /// Stores a new consumer.
    async fn create_consumer(&self, consumer: &Consumer) -> Result<(), StoreError>;

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

/// Everything a store crate implements: the request path, the sandbox's
/// bookkeeping, the admin's operations, alarm routing's records, the Web
/// Push subscriptions and the webhooks' endpoints, outbox and delivery log. The wiring opens one and
/// hands each part the trait it needs.
pub trait Backend: ServiceStore + admin::AdminStore + webhooks::WebhookStore {}

impl<T: ServiceStore + admin::AdminStore + webhooks::WebhookStore> Backend for T {}

/// What a service uses (the Lambda functions, the local server): the
/// request path, the sandbox's bookkeeping, alarm routing, the staff's
/// push subscriptions, the webhook endpoints' read (which fail) and the
/// supervised links (DECISIONS §19), no admin operation (so none is linked
/// into a function's zip). The state hands each handler the part it needs
/// ([`crate::AppState`]).
pub trait ServiceStore:
    SandboxStore
    + alarms::AlarmStore
    + push::PushStore
    + webhooks::EndpointsRead
    + links::LinkStore
    + outbox::EventOutbox
{
}

impl<
    T: SandboxStore
        + alarms::AlarmStore
        + push::PushStore
        + webhooks::EndpointsRead
        + links::LinkStore
        + outbox::EventOutbox,
> ServiceStore for T
{
}
