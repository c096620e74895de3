//! What a webhook event keeps of the change it tells of, as it was at the
//! write (DECISIONS §16): the outbox's events ([`OutboxEvent`]) with their
//! facts, a call and its alarm ([`CallFacts`]) or an element
//! ([`ElementFacts`]). The events of an alarm write or a close are made in
//! [`super::outbox`], those of an element needing attention in
//! [`super::attention`]; both use these.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::event::EventType;
use crate::domain::alarm::Alarm;
use crate::domain::alarm::state::StaffRef;
use crate::domain::model::{Call, Element, Scope};

/// An event as the outbox keeps it until every endpoint that wants it has
/// it (or gave up on it).
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEvent {
    /// The `webhook-id`: unique per event, the same on every retry.
    pub id: String,
    /// Its place in the outbox as the store gave it (opaque; ordered as
    /// the outbox is): where a reader goes on from. Empty until stored.
    pub position: String,
    /// Whose change it is; only the installation's are forwarded.
    pub scope: Scope,
    /// The event type (the body's `type`).
    pub kind: EventType,
    /// When the change happened.
    pub at: DateTime<Utc>,
    /// The call it belongs to (its events go out in order per endpoint);
    /// `None` for `element.attention`.
    pub call_id: Option<i64>,
    /// The call's section, for the endpoints' section filter; `None` without
    /// one (every endpoint of the type gets it).
    pub section: Option<String>,
    /// What the body is rendered from when it is sent.
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
    /// Which alert of each person in `staff` it is (`call.alert`: 1 the
    /// first, 2 the first re-alert, …), by staff id, as their audit line
    /// names it: what a 2xx to it confirms (DECISIONS §18), never a later
    /// alert written meanwhile. Empty in events kept before it was
    /// recorded ([`Facts::alert_of`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub alerts: BTreeMap<String, i64>,
    /// The central system (`consumer.silent`, `consumer.back`, DECISIONS §19).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkFacts>,
}

/// A silent (or no longer silent) central system as its event keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkFacts {
    /// The consumer's id.
    pub consumer: String,
    /// Its name as admins gave it.
    pub name: String,
    /// Its last request before the silence (UTC).
    pub since: DateTime<Utc>,
}

/// A call and its alarm as an event keeps them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallFacts {
    /// The call's id (unique in the stack; a receiver's key for it).
    pub id: i64,
    /// The address of the element it is on.
    pub address: String,
    /// The call type name (`data.event`).
    pub event: String,
    /// Where the call is, as it keeps it; `None` when unknown.
    pub position: Option<String>,
    /// The call's section code; `None` without one.
    pub section: Option<String>,
    /// Bed detection attributes as the central system sent them.
    pub attribute: Option<String>,
    /// The element's code as the call keeps it; may be empty.
    pub element_code: String,
    /// The element's name as the call keeps it (may identify a person).
    pub element_name: String,
    /// When the call was opened (UTC).
    pub opened_at: DateTime<Utc>,
    /// When it was closed (UTC); `None` while it was open at the write.
    pub closed_at: Option<DateTime<Utc>>,
    /// Its alarm as written; `None` for a call without one.
    pub alarm: Option<Alarm>,
}

impl CallFacts {
    /// What an event keeps of `call`: all but who opened and closed it.
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
    pub(super) fn of_call(call: &Call) -> Self {
        Facts {
            call: Some(CallFacts::of(call)),
            element: None,
            level: None,
            staff: Vec::new(),
            repeat: false,
            reason: None,
            alerts: BTreeMap::new(),
            link: None,
        }
    }

    /// The facts of a `consumer.silent` or `consumer.back`.
    pub fn of_link(link: LinkFacts) -> Self {
        Facts {
            link: Some(link),
            ..Facts::empty()
        }
    }

    /// Facts of nothing yet.
    fn empty() -> Self {
        Facts {
            call: None,
            element: None,
            level: None,
            staff: Vec::new(),
            repeat: false,
            reason: None,
            alerts: BTreeMap::new(),
            link: None,
        }
    }

    /// The facts of an `element.attention`.
    pub fn of_element(element: ElementFacts) -> Self {
        Facts {
            call: None,
            element: Some(element),
            ..Facts::empty()
        }
    }

    /// Which alert of `staff_id`'s this event is (`call.alert`), `None`
    /// for someone it does not alert. An event kept before the numbers
    /// were recorded takes their count in the alarm as written with it:
    /// one write alerts a person once, so that is the same number.
    pub fn alert_of(&self, staff_id: &str) -> Option<i64> {
        if !self.staff.iter().any(|staff| staff.id == staff_id) {
            return None;
        }
        self.alerts.get(staff_id).copied().or_else(|| {
            let alarm = self.call.as_ref()?.alarm.as_ref()?;
            Some(alarm.recipient(staff_id)?.alerts).filter(|alerts| *alerts > 0)
        })
    }

    /// The stored form (the outbox's `facts`), which [`Facts::from_json`]
    /// reads back.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("facts serialise")
    }

    /// Reads the stored form back; `Err` is serde's reason.
    pub fn from_json(json: &str) -> Result<Self, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }
}

/// An element as an `element.attention` event keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElementFacts {
    /// The element's address (its key within the scope).
    pub address: String,
    /// The element's code as the central system sent it.
    pub code: String,
    /// The element's name as the central system sent it.
    pub name: String,
    /// Battery charge in percent, if the element reports one.
    pub battery: Option<f64>,
    /// Where it is, if the central system said.
    pub position: Option<String>,
    /// Whether the central system reaches it; `None` while never said.
    pub reachable: Option<bool>,
    /// When the element was last updated (UTC).
    pub updated_at: DateTime<Utc>,
    /// The element's version: grows with every change.
    pub version: i64,
    /// Every reason it needs attention now (wire names), the new ones and
    /// those announced before.
    pub reasons: Vec<String>,
}

impl ElementFacts {
    /// `element` needing attention for `reasons` (wire names).
    pub fn of(element: &Element, reasons: Vec<String>) -> Self {
        ElementFacts {
            address: element.address.clone(),
            code: element.code.clone(),
            name: element.name.clone(),
            battery: element.battery,
            position: element.position.clone(),
            reachable: element.reachable,
            updated_at: element.updated_at,
            version: element.version,
            reasons,
        }
    }

    /// The element as kept then.
    pub fn to_element(&self) -> Element {
        Element {
            address: self.address.clone(),
            code: self.code.clone(),
            name: self.name.clone(),
            battery: self.battery,
            position: self.position.clone(),
            reachable: self.reachable,
            updated_at: self.updated_at,
            version: self.version,
        }
    }
}
