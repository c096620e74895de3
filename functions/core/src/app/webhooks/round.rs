//! The steps of a round ([`Dispatcher::round`]) between its reads and its
//! write: which deliveries may go now and which events are finished (in
//! memory, under its lock), what those about to go need from the store, the
//! attempts to make and the deliveries given up, and the attempts started.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::attempts::not_sent;
use super::receipts::{Handsets, handsets_of};
use super::{CREATED_GRACE, Dispatcher, Job, Memory};
use crate::domain::model::CallType;
use crate::domain::webhooks::outbox::OutboxEvent;
use crate::domain::webhooks::schedule;
use crate::domain::webhooks::{Endpoint, Event};
use crate::store::StoreError;
use crate::store::webhooks::Attempt;
use crate::wire::webhooks::event_of;

/// What may go now, as memory tells it without a store read.
pub(super) struct Selection<'o> {
    /// The deliveries that may be attempted now, in the outbox's order.
    pub(super) candidates: Vec<(&'o OutboxEvent, &'o Endpoint)>,
    /// The positions of the events every endpoint has finished: what the
    /// store takes out of the outbox.
    pub(super) finished: Vec<String>,
}

/// What the round's attempts need from the store, read only for events
/// about to be sent: whether each call's alert is current, the people's
/// devices and the call types (to render the bodies).
#[derive(Default)]
pub(super) struct Lookups {
    alerts: HashMap<i64, bool>,
    devices: HashMap<String, String>,
    types: Vec<CallType>,
}

impl Dispatcher {
    /// The deliveries of `outbox` to `endpoints` that may go at `now`, and
    /// the events finished (forgotten from memory here), under the memory's
    /// lock and without a store read.
    pub(super) fn select<'o>(
        &self,
        outbox: &'o [Arc<OutboxEvent>],
        endpoints: &'o [Endpoint],
        now: DateTime<Utc>,
    ) -> Selection<'o> {
        // The finished events' ids (what memory forgets) and positions
        // (what the store takes out).
        let mut finished: Vec<(String, String)> = Vec::new();
        let mut candidates: Vec<(&OutboxEvent, &Endpoint)> = Vec::new();
        let memory = &mut *self.memory.lock().expect("dispatcher memory");
        // Per endpoint and call: an earlier event not finished holds
        // the later ones back (the outbox is in write order).
        let mut held: HashSet<(String, i64)> = HashSet::new();
        for kept in outbox {
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
            // Its attempts not yet in the log are written in the same
            // step that finishes it (`write_round`), before it.
            if !open {
                finished.push((kept.id.clone(), kept.position.clone()));
            }
        }
        memory.forget(&finished);
        Selection {
            candidates,
            finished: finished.into_iter().map(|(_, position)| position).collect(),
        }
    }

    /// What `candidates` need from the store; nothing is read when there
    /// are none.
    pub(super) async fn lookups(
        &self,
        candidates: &[(&OutboxEvent, &Endpoint)],
        now: DateTime<Utc>,
    ) -> Result<Lookups, StoreError> {
        if candidates.is_empty() {
            return Ok(Lookups::default());
        }
        let going: Vec<&OutboxEvent> = candidates.iter().map(|(kept, _)| *kept).collect();
        Ok(Lookups {
            alerts: self.alerts_current(&going, now).await,
            devices: self.devices(&going).await,
            types: self.store.call_types().await?.types,
        })
    }

    /// The attempts to make of `candidates`, each delivery marked in flight,
    /// and the deliveries given up instead (`schedule::still_due`: an alert
    /// whose call's alert ended, an event too old), for the delivery log.
    pub(super) fn jobs(
        &self,
        candidates: Vec<(&OutboxEvent, &Endpoint)>,
        lookups: &Lookups,
        now: DateTime<Utc>,
    ) -> (Vec<Attempt>, Vec<Job>) {
        let started_at = std::time::Instant::now();
        let mut given_up = Vec::new();
        let mut jobs = Vec::new();
        let mut memory = self.memory.lock().expect("dispatcher memory");
        // The body is rendered once per event, only for one that goes
        // out in this round (about half of a busy house's events are
        // alerts given up because their call ended first), and shared
        // by its endpoints' attempts.
        let mut rendered: HashMap<&str, Arc<Event>> = HashMap::new();
        let mut handsets: HashMap<&str, Option<Arc<Handsets>>> = HashMap::new();
        for (kept, endpoint) in candidates {
            let key = (kept.id.clone(), endpoint.id.clone());
            let delivery = memory.deliveries.entry(key).or_default();
            let alert_current = kept
                .call_id
                .is_some_and(|call| lookups.alerts.get(&call).copied().unwrap_or(false));
            if let Err(why) = schedule::still_due(kept.kind, kept.at, now, alert_current) {
                delivery.finished = true;
                delivery.attempts += 1;
                given_up.push(not_sent(kept, endpoint, delivery.attempts, now, why));
                // The next of its call may go in the next round.
                continue;
            }
            let event = Arc::clone(rendered.entry(kept.id.as_str()).or_insert_with(|| {
                Arc::new(event_of(kept, self.zone, &lookups.devices, &lookups.types))
            }));
            let handsets = if self.answer_is_receipt(kept, endpoint) {
                handsets
                    .entry(kept.id.as_str())
                    .or_insert_with(|| handsets_of(kept, &lookups.devices).map(Arc::new))
                    .clone()
            } else {
                None
            };
            delivery.in_flight = true;
            jobs.push(Job {
                round: (now, started_at),
                event,
                endpoint: endpoint.clone(),
                number: delivery.attempts + 1,
                alert_current,
                handsets,
            });
        }
        (given_up, jobs)
    }

    /// Starts `jobs`, each on a task of its own that waits for a slot of
    /// its endpoint's host, then for one of the dispatcher's (DECISIONS
    /// §20): a slow host's attempts wait on their own tasks, never in
    /// front of another host's.
    pub(super) async fn start(self: &Arc<Self>, jobs: Vec<Job>) {
        for job in jobs {
            let dispatcher = Arc::clone(self);
            tokio::spawn(async move {
                let host = crate::app::fair::host_key(&job.endpoint.url);
                let permit = dispatcher.slots.acquire(&[&host]).await;
                dispatcher.attempt(job, permit).await;
            });
        }
    }
}

impl Memory {
    /// Forgets the events `finished` (ids and positions): their deliveries,
    /// that their log was read, and their place among those pending.
    fn forget(&mut self, finished: &[(String, String)]) {
        let done: HashSet<&String> = finished.iter().map(|(id, _)| id).collect();
        for id in &done {
            self.restored.remove(*id);
        }
        if !done.is_empty() {
            self.deliveries
                .retain(|(event, _), _| !done.contains(event));
            self.pending.retain(|e| !done.contains(&e.id));
        }
    }
}
