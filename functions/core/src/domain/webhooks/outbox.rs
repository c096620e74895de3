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
//! | `alert` / `realert` of one level | one `call.alert` (the level, its recipients, `repeat`) |
//! | `accepted` | `call.accepted` (who) |
//! | `declined` | `call.declined` (who) |
//! | `cancel` with one reason | one `call.cancelled` (whose alerts, why) |
//! | `read`, `unattended`, `present`, `ended` | none: displays show them; a handset's alert is stopped by the cancel |
//!
//! `call.closed` is the close's own ([`closed`]).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::attention::ElementFacts;
use super::event::EventType;
use crate::domain::alarm::Alarm;
use crate::domain::alarm::audit::AuditEvent;
use crate::domain::alarm::state::StaffRef;
use crate::domain::model::{Call, Scope};

/// An event as the outbox keeps it until every endpoint that wants it has
/// it (or gave up on it).
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEvent {
    /// The `webhook-id`: unique per event, the same on every retry.
    pub id: String,
    /// Its place in the outbox as the store gave it (opaque; ordered as
    /// the outbox is): where a reader goes on from. Empty until stored.
    pub position: String,
    pub scope: Scope,
    pub kind: EventType,
    /// When the change happened.
    pub at: DateTime<Utc>,
    pub call_id: Option<i64>,
    pub section: Option<String>,
    pub facts: Facts,
}

/// The change an event tells of, as it was at the write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Facts {
    /// The call (every `call.*` event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<CallFacts>,
    /// The element (`element.attention`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element: Option<ElementFacts>,
    /// The level alerted or started (`call.alert`, `call.escalated`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<usize>,
    /// Whose alerts (`call.alert`, `call.cancelled`), or who answered
    /// (`call.accepted`, `call.declined`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub staff: Vec<StaffRef>,
    /// A re-alert of people already alerted (`call.alert`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repeat: bool,
    /// Why alerts stop (`call.cancelled`): `accepted by <id>`, `present`,
    /// `ended`, `off duty`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A call and its alarm as an event keeps them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallFacts {
    pub id: i64,
    pub address: String,
    pub event: String,
    pub position: Option<String>,
    pub section: Option<String>,
    pub attribute: Option<String>,
    pub element_code: String,
    pub element_name: String,
    pub opened_at: DateTime<Utc>,
    pub closed_at: Option<DateTime<Utc>>,
    pub alarm: Option<Alarm>,
}

impl CallFacts {
    pub fn of(call: &Call) -> Self {
        CallFacts {
            id: call.id,
            address: call.address.clone(),
            event: call.event.clone(),
            position: call.position.clone(),
            section: call.section.clone(),
            attribute: call.attribute.clone(),
            element_code: call.element_code.clone(),
            element_name: call.element_name.clone(),
            opened_at: call.opened_at,
            closed_at: call.closed_at,
            alarm: call.alarm.clone(),
        }
    }

    /// The call as kept then (without who opened or closed it).
    pub fn to_call(&self) -> Call {
        Call {
            id: self.id,
            address: self.address.clone(),
            event: self.event.clone(),
            position: self.position.clone(),
            section: self.section.clone(),
            attribute: self.attribute.clone(),
            element_code: self.element_code.clone(),
            element_name: self.element_name.clone(),
            opened_at: self.opened_at,
            closed_at: self.closed_at,
            opened_by: None,
            closed_by: None,
            alarm: self.alarm.clone(),
        }
    }
}

impl Facts {
    /// The facts of a call's event, before its level, people and reason.
    fn of_call(call: &Call) -> Self {
        Facts {
            call: Some(CallFacts::of(call)),
            element: None,
            level: None,
            staff: Vec::new(),
            repeat: false,
            reason: None,
        }
    }

    /// The facts of an `element.attention`.
    pub fn of_element(element: ElementFacts) -> Self {
        Facts {
            call: None,
            element: Some(element),
            level: None,
            staff: Vec::new(),
            repeat: false,
            reason: None,
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("facts serialise")
    }

    pub fn from_json(json: &str) -> Result<Self, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }
}

/// Whose events endpoints get: the installation's. A sandbox visitor's
/// calls (DECISIONS §8) are theirs alone and never leave the service.
pub fn is_forwarded(scope: &Scope) -> bool {
    *scope == Scope::installation()
}

/// The events of one write of `call`'s alarm (`call` carries the alarm as
/// written) from that write's audit lines, in the order they happened.
pub fn events_of_write(scope: &Scope, call: &Call, audit: &[AuditEvent]) -> Vec<OutboxEvent> {
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
            events[index].1.staff.push(staff.clone());
        }
    }
    events
        .into_iter()
        .map(|(kind, facts, at)| OutboxEvent::new(scope, kind, at, call, facts))
        .collect()
}

/// The `call.closed` event of a call the central system closed, for a call
/// whose alarm the engine started (a presence, or a call closed before its
/// first step, was never sent anywhere).
pub fn closed(scope: &Scope, call: &Call) -> Option<OutboxEvent> {
    let closed_at = call.closed_at?;
    let has_alarm = call.alarm.as_ref().is_some_and(Alarm::is_shown);
    if !is_forwarded(scope) || !has_alarm {
        return None;
    }
    Some(OutboxEvent::new(
        scope,
        EventType::CallClosed,
        closed_at,
        call,
        Facts::of_call(call),
    ))
}

impl OutboxEvent {
    fn new(scope: &Scope, kind: EventType, at: DateTime<Utc>, call: &Call, facts: Facts) -> Self {
        OutboxEvent {
            id: super::event::new_event_id(),
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
