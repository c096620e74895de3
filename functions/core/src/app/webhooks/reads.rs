//! What the dispatcher reads, and how little: the outbox from its cursor
//! (and now and then from a little earlier), the endpoints once a second,
//! the delivery log only for events of an earlier run, a call's alarm only
//! when its own events cannot tell, the people's devices only for events
//! that name people.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::attempts::ends_alert;
use super::*;
use crate::domain::alarm::AlarmStatus;

impl Dispatcher {
    /// The events not finished: those read before, and what the store has
    /// after them (at most [`PAGES`] pages of [`ROUND`] a round).
    pub(super) async fn read_outbox(
        &self,
        now: DateTime<Utc>,
    ) -> Result<Vec<Arc<OutboxEvent>>, StoreError> {
        let mut from = self.read_from(now);
        let mut known: HashSet<String> = {
            let mut memory = self.memory.lock().expect("dispatcher memory");
            memory.sweep(now);
            memory.pending.iter().map(|e| e.id.clone()).collect()
        };
        for _ in 0..PAGES {
            let page = self.store.outbox_after(from.as_deref(), ROUND).await?;
            if let Some(last) = page.last() {
                from = Some(last.position.clone());
            }
            let full = page.len() == ROUND;
            let mut memory = self.memory.lock().expect("dispatcher memory");
            let memory = &mut *memory;
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
                // A finished event is out of the store once the round
                // that finished it has written; until then (a failed
                // write) it is in `unfinished`.
                if !known.contains(&event.id) && !memory.unfinished.contains(&event.position) {
                    known.insert(event.id.clone());
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
    pub(super) fn read_from(&self, now: DateTime<Utc>) -> Option<String> {
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
    pub(super) async fn endpoints(&self, now: DateTime<Utc>) -> Result<Vec<Endpoint>, StoreError> {
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
    pub(super) fn drain_due(&self, now: DateTime<Utc>) -> bool {
        let mut memory = self.memory.lock().expect("dispatcher memory");
        let due = memory
            .drained_at
            .is_none_or(|at| now < at || now - at >= DRAIN_EVERY);
        if due {
            memory.drained_at = Some(now);
        }
        due
    }

    /// Reads where the deliveries of events not seen before stand (after a
    /// restart: the delivery log). An event written since this dispatcher's
    /// first round has no attempt of an earlier run: not read. (Another
    /// process sending from the same store at once, which the local server
    /// never does, would make a delivery twice: at least once still holds.)
    pub(super) async fn restore(
        &self,
        outbox: &[Arc<OutboxEvent>],
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let new: Vec<String> = {
            let mut memory = self.memory.lock().expect("dispatcher memory");
            let memory = &mut *memory;
            let started_at = *memory.started_at.get_or_insert(now);
            let mut new = Vec::new();
            for event in outbox {
                if memory.restored.contains(&event.id) {
                    continue;
                }
                if event.at > started_at {
                    memory.restored.insert(event.id.clone());
                } else {
                    new.push(event.id.clone());
                }
            }
            new
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
    /// alerting or unattended. Known without a read from the outbox itself
    /// for a while ([`CURRENT_KEPT`]); a call that cannot be read counts as
    /// current: rather one attempt too many than an alert dropped.
    pub(super) async fn alerts_current(
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
                let fresh = |at: &DateTime<Utc>| *at <= now && now - *at < CURRENT_KEPT;
                if memory.ended_calls.contains_key(&call) {
                    Some(false)
                } else if fresh(&kept.at) || memory.current_calls.get(&call).is_some_and(fresh) {
                    // An event written moments ago says the alert was
                    // current then, and what ended it since would be in the
                    // outbox, read up to now (`ended_calls`): the first
                    // attempt needs no read of the call.
                    Some(true)
                } else {
                    None
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
            current.insert(call, is_current);
        }
        current
    }

    /// The handsets and pagers of the people the events name (no read for
    /// events that name nobody: `call.closed`, `call.escalated`).
    pub(super) async fn devices(&self, outbox: &[&OutboxEvent]) -> HashMap<String, String> {
        let mut devices = HashMap::new();
        let mut scopes: Vec<_> = outbox
            .iter()
            .filter(|e| !e.facts.staff.is_empty())
            .map(|e| e.scope.clone())
            .collect();
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
}

impl Memory {
    /// Forgets, every [`SWEEP_EVERY`], what expired about calls.
    fn sweep(&mut self, now: DateTime<Utc>) {
        if self
            .swept_at
            .is_some_and(|at| at <= now && now - at < SWEEP_EVERY)
        {
            return;
        }
        self.swept_at = Some(now);
        self.ended_calls
            .retain(|_, at| *at <= now && now - *at < ENDED_KEPT);
        self.current_calls
            .retain(|_, at| *at <= now && now - *at < CURRENT_KEPT);
    }
}
