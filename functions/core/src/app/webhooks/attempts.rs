//! The webhook dispatcher's single attempts ([`Dispatcher::attempt`]),
//! apart from its rounds: signed with the endpoint's opened secrets, sent,
//! logged; and what it decides about them: an endpoint's health after an
//! attempt, the delivery log's line of an event given up before it was
//! sent, the outcome in words, the structured log line of each attempt, and
//! which events end a call's alert.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::{Dispatcher, Job};
use crate::app::fair::FairPermit;
use crate::domain::webhooks::outbox::OutboxEvent;
use crate::domain::webhooks::schedule::{self, GiveUp, Next, Outcome};
use crate::domain::webhooks::signing::sign;
use crate::domain::webhooks::{Endpoint, Event, EventType};
use crate::signing::sealing::{Sealed, is_sealed};
use crate::store::webhooks::{Attempt, AttemptEnd};

/// Whether `event` ends its call's alert for everyone.
pub(crate) fn ends_alert(event: &OutboxEvent) -> bool {
    match event.kind {
        EventType::CallAccepted | EventType::CallClosed => true,
        EventType::CallCancelled => event.facts.reason.as_deref().is_some_and(|reason| {
            reason == "present" || reason == "ended" || reason.starts_with("accepted by")
        }),
        _ => false,
    }
}

/// What to store of an endpoint's health after an attempt, if it changed:
/// `Some(Some(since))` it fails from then on, `Some(None)` it works again.
/// `endpoint.failing_since` is what the store said when the round began
/// (it may say failing from before a restart, when memory knows nothing).
pub(crate) fn health_change(
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

/// The log line of an event given up before an attempt (its body never
/// rendered).
pub(crate) fn not_sent(
    event: &OutboxEvent,
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

pub(crate) fn describe(outcome: Outcome) -> String {
    match outcome {
        Outcome::Status(0) => "not signed".to_string(),
        Outcome::Status(status) if outcome.delivered() => format!("delivered ({status})"),
        Outcome::Status(status) => format!("status {status}"),
        Outcome::NetworkError => "network error".to_string(),
        Outcome::TimedOut => "timed out".to_string(),
        Outcome::PrivateAddress => "refused: private address".to_string(),
    }
}

/// One structured line per attempt: an operator alarms on
/// `webhook_given_up` and on `endpoint_failing` (the URL is the admin's,
/// never a secret or a signature).
pub(crate) fn log_attempt(event: &Event, endpoint: &Endpoint, attempt: &Attempt) {
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

impl Dispatcher {
    /// The endpoint's secrets to sign with: the sealed ones opened (the
    /// sealer remembers what it opened, so KMS is asked once per secret
    /// and process). A failure is an attempt not made, retried as one that
    /// failed: the event is kept, and the error line says why.
    async fn opened_secrets(&self, endpoint: &Endpoint) -> Result<Vec<String>, String> {
        let what = Sealed::WebhookSecret {
            endpoint: endpoint.id.clone(),
        };
        let mut opened = Vec::with_capacity(endpoint.secrets.len());
        for stored in &endpoint.secrets {
            if self.sealer.has_key()
                && !is_sealed(stored)
                && self
                    .plain_warned
                    .lock()
                    .expect("plain secrets warned")
                    .insert(endpoint.id.clone())
            {
                tracing::warn!(endpoint = %endpoint.id, "webhook secret kept plain, not sealed with the installation's key: `nurse-call-admin webhooks seal-secrets`");
            }
            opened.push(
                self.sealer
                    .open(stored, &what)
                    .await
                    .map_err(|error| error.to_string())?,
            );
        }
        Ok(opened)
    }

    /// One attempt: signed, sent, logged; the endpoint's health kept. The
    /// host's share of `permit` is given back once the request is done, the
    /// dispatcher's with the attempt (DECISIONS §20: a quarter per host for
    /// the requests, the store's work after them bounded as a whole).
    pub(super) async fn attempt(&self, job: Job, mut permit: FairPermit) {
        let Job {
            round,
            event,
            endpoint,
            number,
            alert_current,
            handsets,
        } = job;
        let body = event.body();
        let attempted_at = round.0
            + chrono::Duration::from_std(round.1.elapsed()).unwrap_or(chrono::Duration::zero());
        let signed = match self.opened_secrets(&endpoint).await {
            Ok(secrets) => sign(&event.id, attempted_at.timestamp(), &body, &secrets)
                .map_err(|problem| problem.to_string()),
            Err(problem) => Err(problem),
        };
        let outcome = match signed {
            Ok(signed) => {
                let headers = signed.pairs().into_iter().collect();
                self.sender.send(&endpoint, headers, body).await
            }
            Err(problem) => {
                tracing::error!(endpoint = %endpoint.id, %problem, "webhook not signed: fix or rotate the endpoint's secret");
                Outcome::Status(0)
            }
        };
        permit.release_keys();
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
        // The handsets' receipts before the delivery counts as finished
        // (DECISIONS §16: the 2xx of an endpoint that does not confirm
        // delivery itself).
        if let Some(handsets) = handsets.filter(|_| outcome.delivered()) {
            self.receive_delivered(&handsets, &endpoint, &event.id)
                .await;
        }
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
