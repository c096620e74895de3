//! What the webhook dispatcher ([`crate::app::webhooks`]) decides about
//! single attempts, apart from its rounds: an endpoint's health after an
//! attempt, the delivery log's line of an event given up before it was
//! sent, the outcome in words, the structured log line of each attempt, and
//! which events end a call's alert.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use crate::domain::webhooks::outbox::OutboxEvent;
use crate::domain::webhooks::schedule::{GiveUp, Outcome};
use crate::domain::webhooks::{Endpoint, Event, EventType};
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
