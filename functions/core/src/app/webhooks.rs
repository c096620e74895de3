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
use crate::domain::alarm::AlarmStatus;
use crate::domain::webhooks::outbox::OutboxEvent;
use crate::domain::webhooks::schedule::{self, GiveUp, Next, Outcome};
use crate::domain::webhooks::signing::sign;
use crate::domain::webhooks::{Endpoint, Event};
use crate::store::StoreError;
use crate::store::webhooks::{Attempt, AttemptEnd, WebhookStore};
use crate::wire::webhooks::event_of;

/// Events read from the outbox per round.
pub const ROUND: usize = 1_000;

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
        let endpoints = self.store.endpoints().await?;
        self.publish_failing(&endpoints);
        let outbox = self.store.outbox(ROUND).await?;
        if outbox.is_empty() {
            return Ok(0);
        }
        self.restore(&outbox).await?;
        let alerts = self.alerts_current(&outbox).await;
        let devices = self.devices(&outbox).await;
        let types = self.store.call_types().await?.types;

        let started_at = std::time::Instant::now();
        let mut finished = Vec::new();
        let mut given_up = Vec::new();
        let mut jobs = Vec::new();
        {
            let mut memory = self.memory.lock().expect("dispatcher memory");
            // Per endpoint and call: an earlier event not finished holds
            // the later ones back (the outbox is in write order).
            let mut held: HashSet<(String, i64)> = HashSet::new();
            for kept in &outbox {
                // The body is rendered once, and only for an event that goes
                // out in this round (most rounds find most events in flight
                // or waiting).
                let mut rendered: Option<Event> = None;
                let mut render = || {
                    rendered
                        .get_or_insert_with(|| event_of(kept, self.zone, &devices, &types))
                        .clone()
                };
                let mut open = false;
                let section = kept.section.as_deref();
                for endpoint in endpoints.iter().filter(|e| e.wants_kind(kept.kind, section)) {
                    let key = (kept.id.clone(), endpoint.id.clone());
                    let delivery = memory.deliveries.entry(key).or_default();
                    if delivery.finished {
                        continue;
                    }
                    open = true;
                    let line = kept.call_id.map(|call| (endpoint.id.clone(), call));
                    if let Some(line) = &line
                        && !held.insert(line.clone())
                    {
                        continue;
                    }
                    if delivery.in_flight || delivery.not_before.is_some_and(|t| t > now) {
                        continue;
                    }
                    let alert_current = kept
                        .call_id
                        .is_some_and(|call| alerts.get(&call).copied().unwrap_or(false));
                    if let Err(why) = schedule::still_due(kept.kind, kept.at, now, alert_current) {
                        delivery.finished = true;
                        delivery.attempts += 1;
                        given_up.push(not_sent(&render(), endpoint, delivery.attempts, now, why));
                        // The next of its call may go in the next round.
                        continue;
                    }
                    delivery.in_flight = true;
                    jobs.push(Job {
                        round: (now, started_at),
                        event: render(),
                        endpoint: endpoint.clone(),
                        number: delivery.attempts + 1,
                        alert_current,
                    });
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
    async fn restore(&self, outbox: &[OutboxEvent]) -> Result<(), StoreError> {
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
    async fn alerts_current(&self, outbox: &[OutboxEvent]) -> HashMap<i64, bool> {
        let mut current = HashMap::new();
        for kept in outbox.iter().filter(|e| e.kind.is_alarm()) {
            let Some(call) = kept.call_id else { continue };
            if current.contains_key(&call) {
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
            current.insert(call, is_current);
        }
        current
    }

    /// The handsets and pagers of the people the events name.
    async fn devices(&self, outbox: &[OutboxEvent]) -> HashMap<String, String> {
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

/// What to store of an endpoint's health after an attempt, if it changed:
/// `Some(Some(since))` it fails from then on, `Some(None)` it works again.
/// `endpoint.failing_since` is what the store said when the round began
/// (it may say failing from before a restart, when memory knows nothing).
fn health_change(
    failing: &mut HashMap<String, DateTime<Utc>>,
    endpoint: &Endpoint,
    outcome: Outcome,
    attempted_at: DateTime<Utc>,
) -> Option<Option<DateTime<Utc>>> {
    if outcome.delivered() {
        let was_failing =
            failing.remove(&endpoint.id).is_some() || endpoint.failing_since.is_some();
        return was_failing.then_some(None);
    }
    if failing.contains_key(&endpoint.id) {
        return None;
    }
    let since = endpoint.failing_since.unwrap_or(attempted_at);
    failing.insert(endpoint.id.clone(), since);
    endpoint.failing_since.is_none().then_some(Some(since))
}

/// The log line of an event given up before an attempt.
fn not_sent(
    event: &Event,
    endpoint: &Endpoint,
    number: u32,
    now: DateTime<Utc>,
    why: GiveUp,
) -> Attempt {
    tracing::warn!(
        event = %event.id,
        event_type = event.kind.as_str(),
        endpoint = %endpoint.id,
        reason = why.as_str(),
        "webhook given up before it could be delivered"
    );
    Attempt {
        event_id: event.id.clone(),
        endpoint_id: endpoint.id.clone(),
        event_type: event.kind.as_str().to_string(),
        call_id: event.call_id,
        number,
        at: now,
        status: None,
        outcome: format!("not sent: {}", why.as_str()),
        end: AttemptEnd::GivenUp(why.as_str().to_string()),
    }
}

fn describe(outcome: Outcome) -> String {
    match outcome {
        Outcome::Status(0) => "not signed".to_string(),
        Outcome::Status(status) if outcome.delivered() => format!("delivered ({status})"),
        Outcome::Status(status) => format!("status {status}"),
        Outcome::NetworkError => "network error".to_string(),
        Outcome::TimedOut => "timed out".to_string(),
    }
}

/// One structured line per attempt: an operator alarms on
/// `webhook_given_up` and on `endpoint_failing` (the URL is the admin's,
/// never a secret or a signature).
fn log_attempt(event: &Event, endpoint: &Endpoint, attempt: &Attempt) {
    match &attempt.end {
        // A delivery is the normal case: debug, so that a busy installation's
        // log carries the failures, not one line per success.
        AttemptEnd::Delivered => tracing::debug!(
            event = %event.id,
            event_type = event.kind.as_str(),
            endpoint = %endpoint.id,
            attempt = attempt.number,
            "webhook delivered"
        ),
        AttemptEnd::RetryAt(at) => tracing::warn!(
            event = %event.id,
            event_type = event.kind.as_str(),
            endpoint = %endpoint.id,
            endpoint_name = %endpoint.name,
            attempt = attempt.number,
            outcome = %attempt.outcome,
            retry_at = %at,
            endpoint_failing = true,
            "webhook attempt failed"
        ),
        AttemptEnd::GivenUp(reason) => tracing::error!(
            event = %event.id,
            event_type = event.kind.as_str(),
            endpoint = %endpoint.id,
            endpoint_name = %endpoint.name,
            attempt = attempt.number,
            outcome = %attempt.outcome,
            reason = %reason,
            webhook_given_up = true,
            "webhook given up"
        ),
    }
}
