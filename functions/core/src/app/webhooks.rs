//! The webhook dispatcher (DECISIONS §16): takes the outbox's events to the
//! endpoints that want them, signed (Standard Webhooks), at least once, in
//! order per call and endpoint, retried with the backoff of
//! [`schedule`](crate::domain::webhooks::schedule), every attempt in the
//! delivery log. The pure rules are in `domain::webhooks`; this is the
//! adapter around them, as `app::alarms` is around the alarm engine.
//!
//! What the dispatcher holds in memory (each delivery's attempts and next
//! time) it can rebuild from the store: after a restart the outbox still
//! has every event not finished, and the delivery log where each delivery
//! stood ([`WebhookStore::attempts_of`]). A delivery whose attempt was made
//! but not yet logged when the process died is made again: at least once,
//! the same `webhook-id`, for the receiver to drop.
//!
//! It never slows a write: it runs on its own task, reads the outbox on the
//! store's reader, and sends with bounded concurrency.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use crate::app::forwarding::{Failing, Forwarding};
use crate::app::webhook_attempts::{describe, ends_alert, health_change, log_attempt, not_sent};
use crate::domain::alarm::AlarmStatus;
use crate::domain::webhooks::outbox::OutboxEvent;
use crate::domain::webhooks::schedule::{self, Next, Outcome};
use crate::domain::webhooks::signing::sign;
use crate::domain::webhooks::{Endpoint, Event};
use crate::store::StoreError;
use crate::store::webhooks::{Attempt, AttemptEnd, WebhookStore};
use crate::wire::webhooks::event_of;

/// Events read from the outbox per page, and pages per round at most.
pub const ROUND: usize = 200;
const PAGES: usize = 5;

/// How long a finished event's id is remembered, to drop it when a store
/// gives it again (longer than [`LOOK_BACK`]).
const FINISHED_KEPT: chrono::Duration = chrono::Duration::seconds(300);

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

/// How long a call whose alert ended is remembered.
const ENDED_KEPT: chrono::Duration = chrono::Duration::hours(1);

/// How long the endpoints read stay in use: a new or changed endpoint is
/// seen within this (its events wait in the outbox meanwhile).
pub const ENDPOINTS_KEPT: chrono::Duration = chrono::Duration::seconds(1);

/// While no endpoint is enabled the outbox is not read each round, only
/// emptied this often (a store that keeps events regardless, DynamoDB).
pub const DRAIN_EVERY: chrono::Duration = chrono::Duration::seconds(60);

/// How much older than an endpoint an event may be and still go to it:
/// an endpoint gets the events of changes from its creation on (the
/// admin's and the server's clocks may differ a little).
pub const CREATED_GRACE: chrono::Duration = chrono::Duration::seconds(5);

/// Sends one attempt and says what came of it, within
/// [`schedule::ATTEMPT_TIMEOUT`]. The local server's is an HTTP client.
#[async_trait]
pub trait Sender: Send + Sync {
    async fn send(&self, url: &str, headers: Vec<(&'static str, String)>, body: String) -> Outcome;
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
    /// Events finished lately (a store may give them again, see
    /// [`WebhookStore::outbox_after`]), with when.
    finished_lately: HashMap<String, DateTime<Utc>>,
    /// Calls whose alert an event read from the outbox ended (accepted,
    /// a presence, closed), with when it was read: their alert events are
    /// given up without asking the store.
    ended_calls: HashMap<i64, DateTime<Utc>>,
    /// Calls whose alert the store said was current, and when it was
    /// asked: asked again only after [`CURRENT_KEPT`].
    current_calls: HashMap<i64, DateTime<Utc>>,
}

pub struct Dispatcher {
    store: Arc<dyn WebhookStore>,
    /// Which endpoints fail, for the displays.
    forwarding: Arc<Forwarding>,
    sender: Arc<dyn Sender>,
    zone: Tz,
    memory: Mutex<Memory>,
    /// Attempts on their way at once, at most.
    slots: Arc<tokio::sync::Semaphore>,
}

/// What one attempt needs, taken out of a round.
struct Job {
    /// The round's time and when the round began: an attempt's time is
    /// the round's plus what passed since (a test makes an hour pass by
    /// giving a later `now`; the backoff is measured to the millisecond).
    round: (DateTime<Utc>, std::time::Instant),
    event: Event,
    endpoint: Endpoint,
    number: u32,
    alert_current: bool,
}

impl Dispatcher {
    pub fn new(
        store: Arc<dyn WebhookStore>,
        sender: Arc<dyn Sender>,
        zone: Tz,
        concurrency: usize,
    ) -> Arc<Self> {
        Arc::new(Dispatcher {
            store,
            forwarding: Arc::new(Forwarding::default()),
            sender,
            zone,
            memory: Mutex::new(Memory::default()),
            slots: Arc::new(tokio::sync::Semaphore::new(concurrency.max(1))),
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
        self.flush_log().await?;
        let endpoints = self.endpoints(now).await?;
        self.publish_failing(&endpoints);
        if !endpoints.iter().any(|e| !e.disabled) && !self.drain_due(now) {
            // Nobody to send to: the store is not asked every round.
            return Ok(0);
        }
        let outbox = self.read_outbox(now).await?;
        if outbox.is_empty() {
            return Ok(0);
        }
        self.restore(&outbox).await?;

        // First what may go now (no store read under the lock), then what
        // those need: the alarms of their calls, the people's devices and
        // the call types are read only for events about to be sent.
        let mut finished = Vec::new();
        let mut candidates: Vec<(&OutboxEvent, &Endpoint)> = Vec::new();
        {
            let memory = &mut *self.memory.lock().expect("dispatcher memory");
            // Per endpoint and call: an earlier event not finished holds
            // the later ones back (the outbox is in write order).
            let mut held: HashSet<(String, i64)> = HashSet::new();
            for kept in &outbox {
                let mut open = false;
                let section = kept.section.as_deref();
                let wanting = endpoints.iter().filter(|e| {
                    e.wants_kind(kept.kind, section) && kept.at + CREATED_GRACE >= e.created_at
                });
                for endpoint in wanting {
                    let key = (kept.id.clone(), endpoint.id.clone());
                    let delivery = memory.deliveries.entry(key).or_default();
                    if delivery.finished {
                        continue;
                    }
                    open = true;
                    if let Some(call) = kept.call_id
                        && !held.insert((endpoint.id.clone(), call))
                    {
                        continue;
                    }
                    if delivery.in_flight || delivery.not_before.is_some_and(|t| t > now) {
                        continue;
                    }
                    candidates.push((kept, endpoint));
                }
                // Finished only once its last attempt is in the log (an
                // attempt that ended during this round is written next).
                let unlogged = memory.unlogged.iter().any(|a| a.event_id == kept.id);
                if !open && !unlogged {
                    finished.push(kept.id.clone());
                }
            }
            for id in &finished {
                memory.restored.remove(id);
                memory.deliveries.retain(|(event, _), _| event != id);
                memory.finished_lately.insert(id.clone(), now);
            }
            let done: HashSet<&String> = finished.iter().collect();
            memory.pending.retain(|e| !done.contains(&e.id));
        }
        let (alerts, devices, types) = if candidates.is_empty() {
            (HashMap::new(), HashMap::new(), Vec::new())
        } else {
            let going: Vec<&OutboxEvent> = candidates.iter().map(|(kept, _)| *kept).collect();
            (
                self.alerts_current(&going, now).await,
                self.devices(&going).await,
                self.store.call_types().await?.types,
            )
        };

        let started_at = std::time::Instant::now();
        let mut given_up = Vec::new();
        let mut jobs = Vec::new();
        {
            let mut memory = self.memory.lock().expect("dispatcher memory");
            // The body is rendered once per event, and only for one that
            // goes out (or is given up) in this round.
            let mut rendered: HashMap<&str, Event> = HashMap::new();
            for (kept, endpoint) in candidates {
                let event = rendered
                    .entry(kept.id.as_str())
                    .or_insert_with(|| event_of(kept, self.zone, &devices, &types))
                    .clone();
                let key = (kept.id.clone(), endpoint.id.clone());
                let delivery = memory.deliveries.entry(key).or_default();
                let alert_current = kept
                    .call_id
                    .is_some_and(|call| alerts.get(&call).copied().unwrap_or(false));
                if let Err(why) = schedule::still_due(kept.kind, kept.at, now, alert_current) {
                    delivery.finished = true;
                    delivery.attempts += 1;
                    given_up.push(not_sent(&event, endpoint, delivery.attempts, now, why));
                    // The next of its call may go in the next round.
                    continue;
                }
                delivery.in_flight = true;
                jobs.push(Job {
                    round: (now, started_at),
                    event,
                    endpoint: endpoint.clone(),
                    number: delivery.attempts + 1,
                    alert_current,
                });
            }
        }
        self.store.log_attempts(&given_up).await?;
        self.store.finish_events(&finished).await?;
        let started = jobs.len();
        for job in jobs {
            let permit = self.slots.clone().acquire_owned().await;
            let dispatcher = Arc::clone(self);
            tokio::spawn(async move {
                let _permit = permit;
                dispatcher.attempt(job).await;
            });
        }
        Ok(started)
    }

    /// The events not finished: those read before, and what the store has
    /// after them (at most [`PAGES`] pages of [`ROUND`] a round).
    async fn read_outbox(&self, now: DateTime<Utc>) -> Result<Vec<Arc<OutboxEvent>>, StoreError> {
        let mut from = self.read_from(now);
        for _ in 0..PAGES {
            let page = self.store.outbox_after(from.as_deref(), ROUND).await?;
            if let Some(last) = page.last() {
                from = Some(last.position.clone());
            }
            let full = page.len() == ROUND;
            let mut memory = self.memory.lock().expect("dispatcher memory");
            let memory = &mut *memory;
            memory
                .finished_lately
                .retain(|_, at| *at <= now && now - *at < FINISHED_KEPT);
            let known: HashSet<String> = memory.pending.iter().map(|e| e.id.clone()).collect();
            memory
                .ended_calls
                .retain(|_, at| *at <= now && now - *at < ENDED_KEPT);
            for event in page {
                if memory
                    .cursor
                    .as_deref()
                    .is_none_or(|c| event.position.as_str() > c)
                {
                    memory.cursor = Some(event.position.clone());
                }
                if let Some(call) = event.call_id
                    && ends_alert(&event)
                {
                    memory.ended_calls.insert(call, now);
                }
                if !known.contains(&event.id) && !memory.finished_lately.contains_key(&event.id) {
                    memory.pending.push(Arc::new(event));
                }
            }
            if !full {
                break;
            }
        }
        Ok(self
            .memory
            .lock()
            .expect("dispatcher memory")
            .pending
            .clone())
    }

    /// Where this round reads from: the cursor, or every
    /// [`LOOK_BACK_EVERY`] where it stood [`LOOK_BACK`] before.
    fn read_from(&self, now: DateTime<Utc>) -> Option<String> {
        let mut memory = self.memory.lock().expect("dispatcher memory");
        let memory = &mut *memory;
        let cursor = memory.cursor.clone();
        memory.cursor_history.push_back((now, cursor.clone()));
        while memory
            .cursor_history
            .front()
            .is_some_and(|(at, _)| *at > now || now - *at > LOOK_BACK + LOOK_BACK_EVERY)
        {
            memory.cursor_history.pop_front();
        }
        let due = memory
            .looked_back_at
            .is_none_or(|at| now < at || now - at >= LOOK_BACK_EVERY);
        if !due {
            return cursor;
        }
        memory.looked_back_at = Some(now);
        memory
            .cursor_history
            .iter()
            .find(|(at, _)| now - *at <= LOOK_BACK)
            .map(|(_, position)| position.clone())
            .unwrap_or(cursor)
    }

    /// The endpoints, read again once [`ENDPOINTS_KEPT`] has passed.
    async fn endpoints(&self, now: DateTime<Utc>) -> Result<Vec<Endpoint>, StoreError> {
        {
            let memory = self.memory.lock().expect("dispatcher memory");
            if let Some((read_at, endpoints)) = &memory.endpoints
                && now >= *read_at
                && now - *read_at < ENDPOINTS_KEPT
            {
                return Ok(endpoints.clone());
            }
        }
        let endpoints = self.store.endpoints().await?;
        self.memory.lock().expect("dispatcher memory").endpoints = Some((now, endpoints.clone()));
        Ok(endpoints)
    }

    /// Whether to empty the outbox although no endpoint is enabled.
    fn drain_due(&self, now: DateTime<Utc>) -> bool {
        let mut memory = self.memory.lock().expect("dispatcher memory");
        let due = memory
            .drained_at
            .is_none_or(|at| now < at || now - at >= DRAIN_EVERY);
        if due {
            memory.drained_at = Some(now);
        }
        due
    }

    /// Writes the attempts made since the last round to the delivery log.
    /// Until then an event finished by them stays in the outbox (a round
    /// finishes events only after this), so a crash in between makes the
    /// attempt again: at least once, never lost.
    async fn flush_log(&self) -> Result<(), StoreError> {
        let unlogged = std::mem::take(&mut self.memory.lock().expect("dispatcher memory").unlogged);
        if unlogged.is_empty() {
            return Ok(());
        }
        if let Err(error) = self.store.log_attempts(&unlogged).await {
            // Kept for the next round: the log misses nothing.
            self.memory
                .lock()
                .expect("dispatcher memory")
                .unlogged
                .splice(0..0, unlogged);
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

    /// Reads where the deliveries of events not seen before stand (after a
    /// restart: the delivery log).
    async fn restore(&self, outbox: &[Arc<OutboxEvent>]) -> Result<(), StoreError> {
        let new: Vec<String> = {
            let memory = self.memory.lock().expect("dispatcher memory");
            outbox
                .iter()
                .filter(|e| !memory.restored.contains(&e.id))
                .map(|e| e.id.clone())
                .collect()
        };
        if new.is_empty() {
            return Ok(());
        }
        let attempts = self.store.attempts_of(&new).await?;
        let mut memory = self.memory.lock().expect("dispatcher memory");
        for attempt in attempts {
            let key = (attempt.event_id.clone(), attempt.endpoint_id.clone());
            let delivery = memory.deliveries.entry(key).or_default();
            delivery.attempts = delivery.attempts.max(attempt.number);
            match attempt.end {
                AttemptEnd::RetryAt(at) => delivery.not_before = Some(at),
                _ => delivery.finished = true,
            }
        }
        memory.restored.extend(new);
        Ok(())
    }

    /// Whether each call's alert is current: the call open and its alarm
    /// alerting or unattended. A call that cannot be read counts as
    /// current: rather one attempt too many than an alert dropped.
    async fn alerts_current(
        &self,
        outbox: &[&OutboxEvent],
        now: DateTime<Utc>,
    ) -> HashMap<i64, bool> {
        let mut current = HashMap::new();
        for kept in outbox.iter().filter(|e| e.kind.is_alarm()) {
            let Some(call) = kept.call_id else { continue };
            if current.contains_key(&call) {
                continue;
            }
            let known = {
                let memory = self.memory.lock().expect("dispatcher memory");
                if memory.ended_calls.contains_key(&call) {
                    Some(false)
                } else {
                    memory
                        .current_calls
                        .get(&call)
                        .filter(|at| **at <= now && now - **at < CURRENT_KEPT)
                        .map(|_| true)
                }
            };
            if let Some(known) = known {
                current.insert(call, known);
                continue;
            }
            let is_current = match self.store.alarm(&kept.scope, call).await {
                Ok(Some(now)) => {
                    now.call.closed_at.is_none()
                        && matches!(
                            now.alarm.status,
                            AlarmStatus::Alerting | AlarmStatus::Unattended
                        )
                }
                Ok(None) => false,
                Err(error) => {
                    tracing::warn!(call, %error, "alarm not read for a webhook retry: sent anyway");
                    true
                }
            };
            let mut memory = self.memory.lock().expect("dispatcher memory");
            if is_current {
                memory.current_calls.insert(call, now);
            } else {
                memory.current_calls.remove(&call);
            }
            memory
                .current_calls
                .retain(|_, at| *at <= now && now - *at < CURRENT_KEPT);
            current.insert(call, is_current);
        }
        current
    }

    /// The handsets and pagers of the people the events name.
    async fn devices(&self, outbox: &[&OutboxEvent]) -> HashMap<String, String> {
        let mut devices = HashMap::new();
        let mut scopes: Vec<_> = outbox.iter().map(|e| e.scope.clone()).collect();
        scopes.dedup();
        for scope in scopes {
            match self.store.staff_of(&scope).await {
                Ok(staff) => {
                    devices.extend(staff.into_iter().filter_map(|s| Some((s.id, s.device?))))
                }
                Err(error) => tracing::warn!(%error, "staff not read: events go without devices"),
            }
        }
        devices
    }

    /// One attempt: signed, sent, logged; the endpoint's health kept.
    async fn attempt(&self, job: Job) {
        let Job {
            round,
            event,
            endpoint,
            number,
            alert_current,
        } = job;
        let body = event.body();
        let attempted_at = round.0
            + chrono::Duration::from_std(round.1.elapsed()).unwrap_or(chrono::Duration::zero());
        let outcome = match sign(
            &event.id,
            attempted_at.timestamp(),
            &body,
            &endpoint.secrets,
        ) {
            Ok(signed) => {
                let headers = signed.pairs().into_iter().collect();
                self.sender.send(&endpoint.url, headers, body).await
            }
            Err(problem) => {
                tracing::error!(endpoint = %endpoint.id, %problem, "webhook not signed: fix or rotate the endpoint's secret");
                Outcome::Status(0)
            }
        };
        let next = schedule::after_attempt(
            event.kind,
            event.at,
            number,
            attempted_at,
            outcome,
            alert_current,
        );
        let attempt = Attempt {
            event_id: event.id.clone(),
            endpoint_id: endpoint.id.clone(),
            event_type: event.kind.as_str().to_string(),
            call_id: event.call_id,
            number,
            at: attempted_at,
            status: match outcome {
                Outcome::Status(status) => Some(status),
                _ => None,
            },
            outcome: describe(outcome),
            end: match next {
                Next::Delivered => AttemptEnd::Delivered,
                Next::RetryAt(at) => AttemptEnd::RetryAt(at),
                Next::GivenUp(why) => AttemptEnd::GivenUp(why.as_str().to_string()),
            },
        };
        log_attempt(&event, &endpoint, &attempt);
        let health = {
            let mut memory = self.memory.lock().expect("dispatcher memory");
            memory.unlogged.push(attempt);
            let key = (event.id.clone(), endpoint.id.clone());
            let delivery = memory.deliveries.entry(key).or_default();
            delivery.in_flight = false;
            delivery.attempts = number;
            match next {
                Next::RetryAt(at) => delivery.not_before = Some(at),
                _ => delivery.finished = true,
            }
            health_change(&mut memory.failing_since, &endpoint, outcome, attempted_at)
        };
        if let Some(since) = health {
            if since.is_some() {
                tracing::warn!(endpoint = %endpoint.id, endpoint_name = %endpoint.name, endpoint_failing = true, "webhook endpoint started failing");
            } else {
                tracing::info!(endpoint = %endpoint.id, endpoint_name = %endpoint.name, "webhook endpoint recovered");
            }
            if let Err(error) = self.store.set_endpoint_failing(&endpoint.id, since).await {
                tracing::warn!(%error, endpoint = %endpoint.id, "endpoint health not stored");
            }
        }
    }
}
