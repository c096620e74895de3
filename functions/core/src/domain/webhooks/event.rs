//! The events an endpoint receives (DECISIONS §16) and the body of each:
//! `{"type": …, "timestamp": "<RFC 3339>", "data": {…}}`.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;

/// What happened. The wire names are the Standard Webhooks `type`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventType {
    /// People are alerted to a call: its level and its recipients.
    CallAlert,
    /// A call's alarm went to its next level.
    CallEscalated,
    /// Someone accepted the call ("Ich komme").
    CallAccepted,
    /// Someone declined the call.
    CallDeclined,
    /// Alerts to stop: accepted, present, closed or escalated past them.
    CallCancelled,
    /// The central system closed the call.
    CallClosed,
    /// An element needs a technician (DECISIONS §12).
    ElementAttention,
    /// A central system went silent (DECISIONS §19).
    ConsumerSilent,
    /// A silent central system's next request came (DECISIONS §19).
    ConsumerBack,
}

impl EventType {
    /// Every type once, in the order of docs/webhooks.md's table.
    pub const ALL: [EventType; 9] = [
        EventType::CallAlert,
        EventType::CallEscalated,
        EventType::CallAccepted,
        EventType::CallDeclined,
        EventType::CallCancelled,
        EventType::CallClosed,
        EventType::ElementAttention,
        EventType::ConsumerSilent,
        EventType::ConsumerBack,
    ];

    /// The wire name (`call.alert`, …): the body's `type`, as stores keep it
    /// and admins type it.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::CallAlert => "call.alert",
            EventType::CallEscalated => "call.escalated",
            EventType::CallAccepted => "call.accepted",
            EventType::CallDeclined => "call.declined",
            EventType::CallCancelled => "call.cancelled",
            EventType::CallClosed => "call.closed",
            EventType::ElementAttention => "element.attention",
            EventType::ConsumerSilent => "consumer.silent",
            EventType::ConsumerBack => "consumer.back",
        }
    }

    /// The type of a wire name, as an admin types it for `--event`.
    pub fn parse(name: &str) -> Option<EventType> {
        EventType::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// Whether the event asks somebody to act on a call's current alert:
    /// retried only while that alert is current, because a handset must
    /// not ring for an alert that has ended. Every other event (an accept,
    /// a cancel that stops handsets, a close) is retried for 24 h whatever
    /// the alert does: it is the message that stops the ringing.
    pub fn is_alarm(self) -> bool {
        matches!(self, EventType::CallAlert | EventType::CallEscalated)
    }
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event as the outbox keeps it: written in the same atomic step as
/// the change that caused it, delivered to every endpoint that wants it.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The `webhook-id`: unique per event, the same on every retry and for
    /// every endpoint, so a receiver can drop a duplicate.
    pub id: String,
    pub kind: EventType,
    /// When the change happened (the body's `timestamp`).
    pub at: DateTime<Utc>,
    /// The call it belongs to: a call's events go out in order, per endpoint.
    pub call_id: Option<i64>,
    /// The section of the call or element, for endpoints that filter by
    /// section; `None` when it has none.
    pub section: Option<String>,
    /// The body's `data`: the call or element as the displays get it, and
    /// for alarm events the level and recipients.
    pub data: Value,
}

impl Event {
    /// A new event; `id` is its `webhook-id`
    /// ([`crate::clock::new_event_id`] makes one).
    pub fn new(
        id: String,
        kind: EventType,
        at: DateTime<Utc>,
        call_id: Option<i64>,
        section: Option<String>,
        data: Value,
    ) -> Event {
        Event {
            id,
            kind,
            at,
            call_id,
            section,
            data,
        }
    }

    /// The body every endpoint gets, byte for byte what is signed.
    pub fn body(&self) -> String {
        // Borrows `data` instead of building a new tree of it (`json!`
        // copied the whole call and alarm for every attempt). The fields
        // in the order `json!`'s map gave them, so the bytes are the same.
        #[derive(serde::Serialize)]
        struct Body<'a> {
            data: &'a Value,
            timestamp: String,
            #[serde(rename = "type")]
            kind: &'static str,
        }
        serde_json::to_string(&Body {
            data: &self.data,
            timestamp: self.at.to_rfc3339_opts(SecondsFormat::Millis, true),
            kind: self.kind.as_str(),
        })
        .expect("a JSON value serialises")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;

    #[test]
    fn every_type_reads_back_from_its_wire_name() {
        for kind in EventType::ALL {
            assert_eq!(EventType::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(EventType::parse("call.opened"), None);
        assert_eq!(EventType::parse("CALL.ALERT"), None);
    }

    #[test]
    fn only_the_alerts_themselves_depend_on_the_alert_being_current() {
        let alarm: Vec<_> = EventType::ALL
            .into_iter()
            .filter(|t| t.is_alarm())
            .collect();
        assert_eq!(alarm, [EventType::CallAlert, EventType::CallEscalated]);
    }

    #[test]
    fn the_body_has_type_timestamp_and_data() {
        let at = Utc.with_ymd_and_hms(2026, 11, 26, 7, 30, 5).unwrap();
        let event = Event::new(
            "msg_1".into(),
            EventType::CallAccepted,
            at,
            Some(42),
            Some("Wohnbereich 1".into()),
            json!({"call": {"id": 42}, "staff": {"name": "Anna"}}),
        );
        let text = event.body();
        assert!(
            text.starts_with(r#"{"data":{"call":{"id":42}"#)
                && text
                    .ends_with(r#""timestamp":"2026-11-26T07:30:05.000Z","type":"call.accepted"}"#),
            "the bytes as before: {text}"
        );
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            body,
            json!({
                "type": "call.accepted",
                "timestamp": "2026-11-26T07:30:05.000Z",
                "data": {"call": {"id": 42}, "staff": {"name": "Anna"}},
            })
        );
    }
}
