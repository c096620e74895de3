//! The webhook dispatcher (DECISIONS §16): takes the outbox's events to the
//! endpoints that want them, signed (Standard Webhooks), at least once, in
//! order per call and endpoint, retried with the backoff of
//! [`schedule`](crate::domain::webhooks::schedule), every attempt in the
//! delivery log. The pure rules are in `domain::webhooks`; this is the
//! adapter around them, as `app::alarm` is around the alarm engine.
//!
//! What the dispatcher holds in memory (each delivery's attempts and next
//! time) it can rebuild from the store: after a restart the outbox still
//! has every event not finished, and the delivery log where each delivery
//! stood ([`WebhookStore::attempts_of`]). A delivery whose attempt was made
//! but not yet logged when the process died is made again: at least once,
//! the same `webhook-id`, for the receiver to drop.
//!
//! It also sweeps the elements for `element.attention` ([`attention`]).
//!
//! It never slows a write: it runs on its own task, reads the outbox on the
//! store's reader, and sends with bounded concurrency.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use crate::app::forwarding::{Failing, Forwarding};
use crate::domain::supervision::Thresholds;
use crate::domain::webhooks::outbox::OutboxEvent;
use crate::domain::webhooks::schedule::Outcome;
use crate::domain::webhooks::{Endpoint, Event};
use crate::signing::sealing::Sealer;
use crate::store::StoreError;
use crate::store::webhooks::{Attempt, AttemptEnd, WebhookStore};

mod attempts;
mod attention;
mod reads;
mod receipts;
mod round;

/// Events read from the outbox per page, and pages per round at most.
pub(crate) const ROUND: usize = 200;
const PAGES: usize = 5;

/// Every [`LOOK_BACK_EVERY`] the outbox is read again from where the cursor
/// stood [`LOOK_BACK`] before: an event of a store whose positions commit
/// out of order (DynamoDB stamps a write before it commits; the SDK gives
/// up on a write long before 90 s) is found then, at most 10 s late.
const LOOK_BACK: chrono::Duration = chrono::Duration::seconds(90);
const LOOK_BACK_EVERY: chrono::Duration = chrono::Duration::seconds(10);

/// How long "this call's alert is current" is believed without asking the
/// store again (an ended alert is mostly known from its own events first;
/// otherwise it may be tried once more within this time: rather once too
/// often than silent).
const CURRENT_KEPT: chrono::Duration = chrono::Duration::seconds(5);

/// How long a call whose alert ended is remembered (its alarm events
/// are given up without a read; later the store is asked).
const ENDED_KEPT: chrono::Duration = chrono::Duration::minutes(10);

/// How often what is remembered about calls is swept of what expired:
/// not per read (at thousands of events a second a sweep per page of the
/// outbox cost more than sending them).
const SWEEP_EVERY: chrono::Duration = chrono::Duration::seconds(10);

/// How long the endpoints read stay in use: a new or changed endpoint is
/// seen within this (its events wait in the outbox meanwhile).
pub(crate) const ENDPOINTS_KEPT: chrono::Duration = chrono::Duration::seconds(1);

/// While no endpoint is enabled the outbox is not read each round, only
/// emptied this often (a store that keeps events regardless, DynamoDB).
pub(crate) const DRAIN_EVERY: chrono::Duration = chrono::Duration::seconds(60);

/// How much older than an endpoint an event may be and still go to it:
/// an endpoint gets the events of changes from its creation on (the
/// admin's and the server's clocks may differ a little).
pub(crate) const CREATED_GRACE: chrono::Duration = chrono::Duration::seconds(5);

/// Sends one attempt and says what came of it, within
/// [`schedule::ATTEMPT_TIMEOUT`](crate::domain::webhooks::schedule::ATTEMPT_TIMEOUT).
/// The local server's is an HTTP client.
#[async_trait]
pub trait Sender: Send + Sync {
    /// POSTs `body` (JSON) to `endpoint`'s URL with `headers`, the Standard
    /// Webhooks `webhook-id`, `webhook-timestamp` and `webhook-signature`;
    /// to an inside address only when the endpoint has `private_network`
    /// (DECISIONS §20, else [`Outcome::PrivateAddress`]).
    async fn send(
        &self,
        endpoint: &Endpoint,
        headers: Vec<(&'static str, String)>,
        body: String,
    ) -> Outcome;
}

/// Where one event's delivery to one endpoint stands.
#[derive(Debug, Clone, Default)]
struct Delivery {
    /// Attempts made (and logged) so far.
    attempts: u32,
    /// Not before this time (a retry's backoff).
    not_before: Option<DateTime<Utc>>,
    /// Delivered or given up.
    finished: bool,
    /// An attempt is on its way.
    in_flight: bool,
}

#[derive(Default)]
struct Memory {
    deliveries: HashMap<(String, String), Delivery>,
    /// Events whose logged attempts were read (once per event).
    restored: HashSet<String>,
    /// Each endpoint's first failure since its last success.
    failing_since: HashMap<String, DateTime<Utc>>,
    /// Attempts made and not yet in the delivery log: written together at
    /// the next round (one store job, not one per attempt).
    unlogged: Vec<Attempt>,
    /// The positions of events finished whose removal from the outbox
    /// failed: again with the next round's write.
    unfinished: Vec<String>,
    /// The first round's time: an event written after it cannot have an
    /// attempt of an earlier run in the delivery log.
    started_at: Option<DateTime<Utc>>,
    /// The endpoints as last read, and when.
    endpoints: Option<(DateTime<Utc>, Vec<Endpoint>)>,
    /// When the outbox was last emptied without an enabled endpoint.
    drained_at: Option<DateTime<Utc>>,
    /// The outbox's events not yet finished, in its order, as read so far,
    /// and the position read up to: a round reads only what is new, so
    /// events waiting for a retry never hide newer ones.
    pending: Vec<Arc<OutboxEvent>>,
    cursor: Option<String>,
    /// Where the cursor stood when (the last [`LOOK_BACK`] and a little),
    /// and when the outbox was last read again from there.
    cursor_history: std::collections::VecDeque<(DateTime<Utc>, Option<String>)>,
    looked_back_at: Option<DateTime<Utc>>,
    /// When `ended_calls` and `current_calls` were last swept.
    swept_at: Option<DateTime<Utc>>,
    /// Calls whose alert an event read from the outbox ended (accepted,
    /// a presence, closed), with when it was read: their alert events are
    /// given up without asking the store.
    ended_calls: HashMap<i64, DateTime<Utc>>,
    /// Calls whose alert the store said was current, and when it was
    /// asked: asked again only after [`CURRENT_KEPT`].
    current_calls: HashMap<i64, DateTime<Utc>>,
    /// When the elements were last swept for `element.attention`.
    attention_swept_at: Option<DateTime<Utc>>,
}

/// Takes the outbox's events to the webhook endpoints, round by round (the
/// local server's task, in AWS the `forward` function), remembering where
/// each delivery stands; one per process.
pub struct Dispatcher {
    store: Arc<dyn WebhookStore>,
    /// Which endpoints fail, for the displays.
    forwarding: Arc<Forwarding>,
    sender: Arc<dyn Sender>,
    /// Opens the endpoints' secrets where they are sealed (DECISIONS §17).
    sealer: Arc<dyn Sealer>,
    /// The endpoints whose plain secret was warned about (once each).
    plain_warned: Mutex<HashSet<String>>,
    zone: Tz,
    /// When an element needs attention (`element.attention`).
    supervision: Thresholds,
    memory: Mutex<Memory>,
    /// Attempts on their way at once, at most; a quarter of them per
    /// endpoint host (DECISIONS §20).
    slots: Arc<crate::app::fair::FairPermits>,
    /// Whose alarm runner takes a 2xx to a `call.alert` as its handsets'
    /// receipts ([`receipts`]); unset: a 2xx is only a delivery.
    receipts: std::sync::OnceLock<crate::app::AppState>,
}

/// What one attempt needs, taken out of a round.
struct Job {
    /// The round's time and when the round began: an attempt's time is
    /// the round's plus what passed since (a test makes an hour pass by
    /// giving a later `now`; the backoff is measured to the millisecond).
    round: (DateTime<Utc>, std::time::Instant),
    event: Arc<Event>,
    endpoint: Endpoint,
    number: u32,
    alert_current: bool,
    /// Whose receipt a 2xx is (a `call.alert` to an endpoint that does not
    /// confirm delivery itself), shared by the event's attempts.
    handsets: Option<Arc<receipts::Handsets>>,
}

impl Dispatcher {
    /// A dispatcher of `store`'s outbox, sending with `sender` and signing
    /// with the secrets `sealer` opens;
    /// `zone` for the events' wire times, `concurrency` attempts on their way
    /// at most (at least 1; a quarter of them per endpoint host), `supervision` for the `element.attention` sweep.
    /// Its memory starts empty: the outbox and the delivery log restore it.
    pub fn new(
        store: Arc<dyn WebhookStore>,
        sender: Arc<dyn Sender>,
        sealer: Arc<dyn Sealer>,
        zone: Tz,
        concurrency: usize,
        supervision: Thresholds,
    ) -> Arc<Self> {
        Arc::new(Dispatcher {
            store,
            forwarding: Arc::new(Forwarding::default()),
            sender,
            sealer,
            plain_warned: Mutex::new(HashSet::new()),
            zone,
            supervision,
            memory: Mutex::new(Memory::default()),
            slots: Arc::new(crate::app::fair::FairPermits::new(concurrency)),
            receipts: std::sync::OnceLock::new(),
        })
    }

    /// Which endpoints fail, as this dispatcher sees them (the displays'
    /// "Weiterleitung gestört").
    pub fn forwarding(&self) -> Arc<Forwarding> {
        Arc::clone(&self.forwarding)
    }

    /// One round at `now`: every delivery that may go now is started (on
    /// tasks of its own, bounded); events every endpoint has finished
    /// leave the outbox. Returns how many attempts were started.
    pub async fn round(self: &Arc<Self>, now: DateTime<Utc>) -> Result<usize, StoreError> {
        let endpoints = self.endpoints(now).await?;
        self.publish_failing(&endpoints);
        if let Err(error) = self.sweep_attention_when_due(&endpoints, now).await {
            tracing::warn!(%error, "elements not swept for element.attention");
        }
        if !endpoints.iter().any(|e| !e.disabled) && !self.drain_due(now) {
            // Nobody to send to: the store is not asked every round.
            self.write_round(Vec::new(), Vec::new()).await?;
            return Ok(0);
        }
        let outbox = self.read_outbox(now).await?;
        if outbox.is_empty() {
            self.write_round(Vec::new(), Vec::new()).await?;
            return Ok(0);
        }
        self.restore(&outbox, now).await?;

        // First what may go now (no store read under the lock), then what
        // those need: the alarms of their calls, the people's devices and
        // the call types are read only for events about to be sent.
        let selection = self.select(&outbox, &endpoints, now);
        let lookups = self.lookups(&selection.candidates, now).await?;
        let (given_up, jobs) = self.jobs(selection.candidates, &lookups, now);
        self.write_round(given_up, selection.finished).await?;
        let started = jobs.len();
        self.start(jobs).await;
        Ok(started)
    }

    /// The round's one write: the attempts made since the last round and
    /// `given_up` into the delivery log, then the events at the positions
    /// `finished` out of the outbox (with those not finished after an
    /// earlier failure), in one store step. Until then an event stays in
    /// the outbox, so a crash in between makes the attempt again: at least
    /// once, never lost.
    async fn write_round(
        &self,
        given_up: Vec<Attempt>,
        finished: Vec<String>,
    ) -> Result<(), StoreError> {
        let (attempts, finished) = {
            let mut memory = self.memory.lock().expect("dispatcher memory");
            let mut attempts = std::mem::take(&mut memory.unlogged);
            attempts.extend(given_up);
            let mut unfinished = std::mem::take(&mut memory.unfinished);
            unfinished.extend(finished);
            (attempts, unfinished)
        };
        if attempts.is_empty() && finished.is_empty() {
            return Ok(());
        }
        if let Err(error) = self.store.log_and_finish(&attempts, &finished).await {
            // Kept for the next round: the log misses nothing, and no event
            // stays in the outbox for good.
            let mut memory = self.memory.lock().expect("dispatcher memory");
            memory.unlogged.splice(0..0, attempts);
            memory.unfinished.splice(0..0, finished);
            tracing::error!(%error, "delivery attempts not logged yet");
            return Err(error);
        }
        Ok(())
    }

    /// Tells the displays which enabled endpoints fail, since the earliest
    /// failure known: what this process saw (fresher than the store) or
    /// what the store says (a failure from before a restart, another
    /// process's).
    fn publish_failing(&self, endpoints: &[Endpoint]) {
        let memory = self.memory.lock().expect("dispatcher memory");
        let failing = endpoints
            .iter()
            .filter(|e| !e.disabled)
            .filter_map(|e| {
                let seen = memory.failing_since.get(&e.id).copied();
                let since = match (seen, e.failing_since) {
                    (Some(seen), Some(stored)) => Some(seen.min(stored)),
                    (seen, stored) => seen.or(stored),
                }?;
                Some(Failing {
                    name: e.name.clone(),
                    since,
                })
            })
            .collect();
        self.forwarding.set(failing);
    }

    /// Whether a retry has come due by `now` (in memory, no store read): a
    /// caller polling the outbox at a coarser pace runs a round early for
    /// it, so that the backoff of 1, 2, 4 s is kept to a few milliseconds.
    pub fn retry_due(&self, now: DateTime<Utc>) -> bool {
        let memory = self.memory.lock().expect("dispatcher memory");
        memory
            .deliveries
            .values()
            .any(|d| !d.finished && !d.in_flight && d.not_before.is_some_and(|at| at <= now))
    }

    /// Whether an attempt is on its way: a caller that must not end before
    /// its attempts (a Lambda invocation) waits for this to turn false.
    pub fn in_flight(&self) -> bool {
        let memory = self.memory.lock().expect("dispatcher memory");
        memory.deliveries.values().any(|d| d.in_flight)
    }

    /// Whether attempts made are not yet in the delivery log (the next
    /// round writes them first).
    pub fn has_unlogged(&self) -> bool {
        let memory = self.memory.lock().expect("dispatcher memory");
        !memory.unlogged.is_empty() || !memory.unfinished.is_empty()
    }

    /// When the earliest retry waiting in memory falls due, if any: where
    /// nothing polls (AWS), the caller schedules a wake-up for then.
    pub fn next_retry(&self) -> Option<DateTime<Utc>> {
        let memory = self.memory.lock().expect("dispatcher memory");
        memory
            .deliveries
            .values()
            .filter(|d| !d.finished && !d.in_flight)
            .filter_map(|d| d.not_before)
            .min()
    }
}
