//! What outbound webhooks keep (DECISIONS §16): the endpoints an admin
//! registers, the outbox of events not yet delivered everywhere, and the
//! delivery log of every attempt.
//!
//! The outbox is written by the stores themselves, in the same atomic step
//! as the write that causes its events: wherever a store appends a call's
//! alarm audit (the open's first step, [`AlarmStore::write_alarm`], the
//! close's quiet end) it also keeps
//! [`events_of_write`](crate::domain::webhooks::outbox::events_of_write),
//! and a close keeps [`closed`](crate::domain::webhooks::outbox::closed).
//! `element.attention` is kept with the element's mark
//! ([`WebhookStore::mark_attention`]) by the dispatcher's sweep.
//! So a committed change always has its events, whatever happens to the
//! process after the commit, and a write that fails keeps none. A store may
//! leave them out while no endpoint is enabled (the embedded store checks
//! in the same transaction); the dispatcher drops an event nobody wants.
//!
//! [`AlarmStore::write_alarm`]: crate::store::alarms::AlarmStore::write_alarm

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::domain::webhooks::Endpoint;
use crate::domain::webhooks::attention::AttentionChange;
use crate::domain::webhooks::outbox::OutboxEvent;
use crate::store::StoreError;
use crate::store::alarms::AlarmStore;

/// The endpoints' read alone: what a display's or staff page's read needs
/// to say which endpoints fail, where another process delivers (AWS: the
/// `forward` function stores each endpoint's `failing_since`). A trait of
/// its own so that a function links this read, not the whole outbox and
/// delivery log ([`crate::store::ServiceStore`] has it).
#[async_trait]
pub trait EndpointsRead: Send + Sync {
    /// Every endpoint, disabled or not, oldest first.
    async fn read_endpoints(&self) -> Result<Vec<Endpoint>, StoreError>;
}

#[async_trait]
impl<T: WebhookStore> EndpointsRead for T {
    async fn read_endpoints(&self) -> Result<Vec<Endpoint>, StoreError> {
        self.endpoints().await
    }
}

/// How an attempt ended, as the delivery log keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptEnd {
    /// The receiver took it (2xx).
    Delivered,
    /// Failed; tried again at this time.
    RetryAt(DateTime<Utc>),
    /// Failed and not tried again: `refused` (a final status),
    /// `alert_ended`, `window_passed` ([`crate::domain::webhooks::GiveUp`]).
    GivenUp(String),
}

/// One attempt to deliver an event to an endpoint: a line of the delivery
/// log (kept 30 days, `nurse-call-admin webhooks deliveries`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The event's `webhook-id`: the same on every attempt and endpoint.
    pub event_id: String,
    /// The id of the endpoint it went to.
    pub endpoint_id: String,
    /// The event's type and call, so that the log reads on its own after
    /// the event has left the outbox.
    pub event_type: String,
    /// `None` for an element's event (`element.attention`).
    pub call_id: Option<i64>,
    /// 1 for the first attempt.
    pub number: u32,
    /// When it was made, or the event given up without one (UTC).
    pub at: DateTime<Utc>,
    /// The receiver's status, `None` for a network error or a timeout (or
    /// an event given up before this attempt was made).
    pub status: Option<u16>,
    /// `delivered`, `status 503`, `network error: …`, `timed out`, … in
    /// words, never with a secret or a signature.
    pub outcome: String,
    /// Whether the delivery goes on, and when.
    pub end: AttemptEnd,
}

impl Attempt {
    /// Whether this attempt finished the event for its endpoint.
    pub fn is_final(&self) -> bool {
        !matches!(self.end, AttemptEnd::RetryAt(_))
    }
}

/// What outbound webhooks keep (see the module): the endpoints, the outbox
/// and the delivery log; beside the alarms, whose writes fill the outbox.
#[async_trait]
pub trait WebhookStore: AlarmStore {
    /// Stores a new endpoint.
    async fn create_endpoint(&self, endpoint: &Endpoint) -> Result<(), StoreError>;

    /// Every endpoint, disabled or not, oldest first.
    async fn endpoints(&self) -> Result<Vec<Endpoint>, StoreError>;

    /// Replaces an endpoint's name, URL, events, sections, secrets and
    /// `disabled` (rotate, disable); `false`: no such id.
    async fn update_endpoint(&self, endpoint: &Endpoint) -> Result<bool, StoreError>;

    /// Sets or clears since when an endpoint fails (displays show it after
    /// 60 s); `false`: no such id.
    async fn set_endpoint_failing(
        &self,
        id: &str,
        since: Option<DateTime<Utc>>,
    ) -> Result<bool, StoreError>;

    /// Deletes an endpoint (its lines of the delivery log stay until they
    /// expire); `false`: no such id.
    async fn delete_endpoint(&self, id: &str) -> Result<bool, StoreError>;

    /// The events not yet finished, in the order they were written (a
    /// call's events in the order they happened), at most `limit`.
    async fn outbox(&self, limit: usize) -> Result<Vec<OutboxEvent>, StoreError> {
        self.outbox_after(None, limit).await
    }

    /// [`WebhookStore::outbox`] from after `after` (a
    /// [`position`](OutboxEvent::position) read before) on: what a reader
    /// has not seen, so that events waiting for a retry never hide newer
    /// ones. A store whose positions may commit out of order (DynamoDB:
    /// stamped before the commit) may add an event before a position
    /// already read: a reader reads again from an earlier position now and
    /// then, and drops by id what it has (the dispatcher: every 10 s from
    /// where it stood 90 s before).
    async fn outbox_after(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<OutboxEvent>, StoreError>;

    /// Takes the events at these [`positions`](OutboxEvent::position) out
    /// of the outbox: every endpoint that wanted them has them or gave up
    /// on them. A position is the outbox's own key, so no store looks an
    /// event up by its id. A position no longer there is no error.
    async fn finish_events(&self, positions: &[String]) -> Result<(), StoreError>;

    /// Adds attempts to the delivery log.
    async fn log_attempts(&self, attempts: &[Attempt]) -> Result<(), StoreError>;

    /// Adds `attempts` to the delivery log, then takes the events at the
    /// positions `finished` out of the outbox: the dispatcher's write of a
    /// round. An event is never finished before its attempts are logged;
    /// after a failure part way the dispatcher writes the whole round
    /// again, so doing a part twice must change nothing (a logged attempt
    /// replaces itself, finishing a finished event does nothing). The
    /// embedded store writes it in small jobs, so that requests' writes
    /// come between them.
    async fn log_and_finish(
        &self,
        attempts: &[Attempt],
        finished: &[String],
    ) -> Result<(), StoreError> {
        self.log_attempts(attempts).await?;
        self.finish_events(finished).await
    }

    /// Every logged attempt of these events, in the order made: where each
    /// delivery stands after a restart.
    async fn attempts_of(&self, event_ids: &[String]) -> Result<Vec<Attempt>, StoreError>;

    /// The delivery log from `since` on, newest first, at most `limit`;
    /// `failed_only`: only attempts that did not deliver.
    async fn deliveries(
        &self,
        since: DateTime<Utc>,
        failed_only: bool,
        limit: usize,
    ) -> Result<Vec<Attempt>, StoreError>;

    /// Deletes the delivery log's lines made before `before`; how many.
    async fn prune_deliveries(&self, before: DateTime<Utc>) -> Result<usize, StoreError>;

    /// What `element.attention` last announced per element of the
    /// installation: address → reasons (wire names).
    async fn attention_marks(&self) -> Result<HashMap<String, Vec<String>>, StoreError>;

    /// Moves one element's mark from `change.before` to `change.after` and
    /// keeps `change.event` in the outbox, in one atomic step; `false`, and
    /// nothing written, when the mark is no longer `before` (another
    /// process announced it first).
    async fn mark_attention(&self, change: &AttentionChange) -> Result<bool, StoreError>;
}
