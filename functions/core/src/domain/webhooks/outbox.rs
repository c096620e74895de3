//! What the outbox keeps (DECISIONS §16 "Durable"): the events of a write,
//! made from the same audit lines the store writes with the alarm, so that
//! the store can keep them in the same atomic step. An event keeps the facts
//! as they were at the write (the call, its alarm, the level, who); its body
//! is rendered when it is sent (`wire::webhooks`), in the installation's
//! time zone, which the store does not know.
//!
//! Which audit lines become which events:
//!
//! | audit lines of one write | event |
//! |---|---|
//! | `escalated` | `call.escalated` (the level) |
//! | `alert` / `realert` of one level | one `call.alert` (the level, its recipients and which alert of each it is, `repeat`) |
//! | `accepted` | `call.accepted` (who) |
//! | `declined` | `call.declined` (who) |
//! | `cancel` with one reason | one `call.cancelled` (whose alerts, why) |
//! | `read`, `unattended`, `present`, `ended` | none: displays show them; a handset's alert is stopped by the cancel |
//!
//! `call.closed` is the close's own ([`closed`]).

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::event::EventType;
pub use super::facts::{CallFacts, Facts, LinkFacts, OutboxEvent};
use crate::domain::alarm::Alarm;
use crate::domain::alarm::audit::AuditEvent;
use crate::domain::model::{Call, Scope};

/// Whose events endpoints get: the installation's. A sandbox visitor's
/// calls (DECISIONS §8) are theirs alone and never leave the service.
pub(crate) fn is_forwarded(scope: &Scope) -> bool {
    *scope == Scope::installation()
}

/// The events of one write of `call`'s alarm (`call` carries the alarm as
/// written) from that write's audit lines, in the order they happened;
/// `new_id` gives each its `webhook-id` ([`crate::clock::new_event_id`]).
pub fn events_of_write(
    scope: &Scope,
    call: &Call,
    audit: &[AuditEvent],
    mut new_id: impl FnMut() -> String,
) -> Vec<OutboxEvent> {
    if !is_forwarded(scope) {
        return Vec::new();
    }
    // Lines of one kind (and level, or reason) make one event, placed where
    // the first of them is.
    let mut events: Vec<(EventType, Facts, DateTime<Utc>)> = Vec::new();
    let mut grouped: HashMap<(EventType, usize, bool, Option<String>), usize> = HashMap::new();
    for line in audit {
        let (kind, level, repeat, reason) = match line.kind.as_str() {
            "escalated" => (EventType::CallEscalated, line.level, false, None),
            "alert" => (EventType::CallAlert, line.level, false, None),
            "realert" => (EventType::CallAlert, line.level, true, None),
            "accepted" => (EventType::CallAccepted, 0, false, None),
            "declined" => (EventType::CallDeclined, 0, false, None),
            "cancel" => (EventType::CallCancelled, 0, false, line.detail.clone()),
            _ => continue,
        };
        let groups = matches!(kind, EventType::CallAlert | EventType::CallCancelled);
        let key = (kind, level, repeat, reason.clone());
        let index = match grouped.get(&key) {
            Some(&index) if groups => index,
            _ => {
                events.push((
                    kind,
                    Facts {
                        level: matches!(kind, EventType::CallAlert | EventType::CallEscalated)
                            .then_some(level),
                        repeat,
                        reason,
                        ..Facts::of_call(call)
                    },
                    line.at,
                ));
                grouped.insert(key, events.len() - 1);
                events.len() - 1
            }
        };
        if let Some(staff) = &line.staff {
            let facts = &mut events[index].1;
            facts.staff.push(staff.clone());
            // An alert's line names its number for the person (`alert 2`).
            let number = line
                .detail
                .as_deref()
                .and_then(|d| d.strip_prefix("alert "));
            if kind == EventType::CallAlert
                && let Some(number) = number.and_then(|n| n.parse().ok())
            {
                facts.alerts.insert(staff.id.clone(), number);
            }
        }
    }
    events
        .into_iter()
        .map(|(kind, facts, at)| OutboxEvent::new(new_id(), scope, kind, at, call, facts))
        .collect()
}

/// The `call.closed` event of a call the central system closed, for a call
/// whose alarm the engine started (a presence, or a call closed before its
/// first step, was never sent anywhere); `new_id` gives its `webhook-id`.
pub fn closed(scope: &Scope, call: &Call, new_id: impl FnOnce() -> String) -> Option<OutboxEvent> {
    let closed_at = call.closed_at?;
    let has_alarm = call.alarm.as_ref().is_some_and(Alarm::is_shown);
    if !is_forwarded(scope) || !has_alarm {
        return None;
    }
    Some(OutboxEvent::new(
        new_id(),
        scope,
        EventType::CallClosed,
        closed_at,
        call,
        Facts::of_call(call),
    ))
}

impl OutboxEvent {
    fn new(
        id: String,
        scope: &Scope,
        kind: EventType,
        at: DateTime<Utc>,
        call: &Call,
        facts: Facts,
    ) -> Self {
        OutboxEvent {
            id,
            position: String::new(),
            scope: scope.clone(),
            kind,
            at,
            call_id: Some(call.id),
            section: call.section.clone(),
            facts,
        }
    }
}

#[cfg(test)]
#[path = "outbox_tests.rs"]
mod tests;
