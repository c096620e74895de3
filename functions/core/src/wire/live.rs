//! The live feed of displays (DECISIONS §11): one message per change to a
//! call or an element, pushed to every connected display of the scope; and
//! of staff pages (DECISIONS §14), which get the same messages plus the
//! alarm's messages meant for staff only (`call.declined`) and those meant
//! for one person (`call.alert`, `call.cancelled`).
//!
//! The messages are built here, without any transport: the local server
//! carries them over its WebSocket from the in-process [`LiveHub`], the AWS
//! broadcast function over API Gateway's WebSocket API from DynamoDB Streams.
//! Handlers publish after the store has committed, so a display never sees a
//! change that was not written.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Serialize;
use tokio::sync::broadcast;

use crate::domain::alarm::receipt::{Path, Receipt};
use crate::domain::alarm::{CancelReason, Effect, StaffRef};
use crate::domain::model::{Call, CallType, Element, Scope};
use crate::wire::{CallRecord, ElementRecord, StaffRecord};

/// One change as displays are told about it.
#[derive(Debug, Serialize)]
#[serde(tag = "type")]
pub enum LiveMessage<'a> {
    /// A call was opened.
    #[serde(rename = "call.opened")]
    CallOpened {
        /// The call's version ([`Call::version`]): a display keeps the newest.
        version: i64,
        /// The call as displays show it, with its alarm.
        call: CallRecord<'a>,
    },
    /// A call was closed.
    #[serde(rename = "call.closed")]
    CallClosed {
        /// The call's version ([`Call::version`]): a display keeps the newest.
        version: i64,
        /// The call as displays show it, with its alarm.
        call: CallRecord<'a>,
    },
    /// An element changed: its battery, position or reachability, or it is new.
    #[serde(rename = "element.updated")]
    ElementUpdated {
        /// The element's version: a display keeps the newest per address.
        version: i64,
        /// The element as displays list it.
        element: ElementRecord<'a>,
    },
    /// A level after the first started (DECISIONS §14).
    #[serde(rename = "call.escalated")]
    CallEscalated {
        /// The call's version ([`Call::version`]): a display keeps the newest.
        version: i64,
        /// The call as displays show it, with its alarm.
        call: CallRecord<'a>,
    },
    /// Somebody accepted ("Ich komme").
    #[serde(rename = "call.accepted")]
    CallAccepted {
        /// The call's version ([`Call::version`]): a display keeps the newest.
        version: i64,
        /// The call as displays show it, with its alarm.
        call: CallRecord<'a>,
    },
    /// Somebody declined: staff pages only.
    #[serde(rename = "call.declined")]
    CallDeclined {
        /// The call's version ([`Call::version`]): a display keeps the newest.
        version: i64,
        /// The call as displays show it, with its alarm.
        call: CallRecord<'a>,
    },
    /// Nobody can be reached.
    #[serde(rename = "call.unattended")]
    CallUnattended {
        /// The call's version ([`Call::version`]): a display keeps the newest.
        version: i64,
        /// The call as displays show it, with its alarm.
        call: CallRecord<'a>,
    },
    /// To one staff member: this call alerts you (again, for a re-alert).
    #[serde(rename = "call.alert")]
    CallAlert {
        /// The call's version ([`Call::version`]): a display keeps the newest.
        version: i64,
        /// The level that alerts them, 1 for the first.
        level: usize,
        /// Whether it is a re-alert of that level.
        repeat: bool,
        /// What the page (or, in a push, the phone) posts back to
        /// `POST /api/v1/staff/receipts` once it showed the alert (§18).
        receipt: String,
        /// The call as displays show it, with its alarm.
        call: CallRecord<'a>,
    },
    /// To one staff member: your alert for this call stops (`reason`:
    /// `accepted`, `present`, `ended` or `off_duty`; `accepted_by` who
    /// accepted, for `accepted`).
    #[serde(rename = "call.cancelled")]
    CallCancelled {
        /// The call's version ([`Call::version`]): a display keeps the newest.
        version: i64,
        /// Why it stops, one of the four above.
        reason: &'static str,
        /// Who accepted; `None` unless `reason` is `accepted`.
        accepted_by: Option<StaffRecord>,
        /// The call as displays show it, with its alarm.
        call: CallRecord<'a>,
    },
}

impl<'a> LiveMessage<'a> {
    /// `call.opened` or `call.closed`, after the call's state.
    pub fn call(call: &'a Call, types: &'a [CallType], zone: Tz, now: DateTime<Utc>) -> Self {
        let record = CallRecord::for_display(call, types, zone, now);
        let version = call.version();
        if call.closed_at.is_some() {
            LiveMessage::CallClosed {
                version,
                call: record,
            }
        } else {
            LiveMessage::CallOpened {
                version,
                call: record,
            }
        }
    }

    /// The message of an alarm's change to displays and staff pages.
    pub fn alarm(
        news: AlarmNews,
        call: &'a Call,
        types: &'a [CallType],
        zone: Tz,
        now: DateTime<Utc>,
    ) -> Self {
        let version = call.version();
        let call = CallRecord::for_display(call, types, zone, now);
        match news {
            AlarmNews::Escalated => LiveMessage::CallEscalated { version, call },
            AlarmNews::Accepted => LiveMessage::CallAccepted { version, call },
            AlarmNews::Declined => LiveMessage::CallDeclined { version, call },
            AlarmNews::Unattended => LiveMessage::CallUnattended { version, call },
        }
    }

    /// The message an effect sends to one person, with that person: an
    /// `Alert` is `call.alert`, a `Cancel` `call.cancelled`; the other
    /// effects are no one's own message. The open staff page and its Web
    /// Push both get this one.
    pub fn for_person(
        effect: &'a Effect,
        call: &'a Call,
        types: &'a [CallType],
        zone: Tz,
        now: DateTime<Utc>,
    ) -> Option<(&'a StaffRef, Self)> {
        match effect {
            Effect::Alert {
                staff,
                level,
                repeat,
                alert,
            } => {
                let receipt = Receipt::new(call.id, *alert, &staff.id, Path::Page);
                Some((
                    staff,
                    LiveMessage::alert(call, *level, *repeat, receipt, types, zone, now),
                ))
            }
            Effect::Cancel { staff, reason } => Some((
                staff,
                LiveMessage::cancelled(call, reason, types, zone, now),
            )),
            _ => None,
        }
    }

    /// `call.alert` to one staff member, with the receipt its page posts.
    pub fn alert(
        call: &'a Call,
        level: usize,
        repeat: bool,
        receipt: Receipt,
        types: &'a [CallType],
        zone: Tz,
        now: DateTime<Utc>,
    ) -> Self {
        LiveMessage::CallAlert {
            version: call.version(),
            level,
            repeat,
            receipt: receipt.to_string(),
            call: CallRecord::for_display(call, types, zone, now),
        }
    }

    /// `call.cancelled` to one staff member.
    pub fn cancelled(
        call: &'a Call,
        reason: &CancelReason,
        types: &'a [CallType],
        zone: Tz,
        now: DateTime<Utc>,
    ) -> Self {
        let (reason, accepted_by) = match reason {
            CancelReason::Accepted(by) => ("accepted", Some(StaffRecord::from(by))),
            CancelReason::Present => ("present", None),
            CancelReason::Ended => ("ended", None),
            CancelReason::OffDuty => ("off_duty", None),
        };
        LiveMessage::CallCancelled {
            version: call.version(),
            reason,
            accepted_by,
            call: CallRecord::for_display(call, types, zone, now),
        }
    }

    /// `element.updated` with `element`, its times local to `zone`.
    pub fn element(element: &'a Element, zone: Tz) -> Self {
        LiveMessage::ElementUpdated {
            version: element.version,
            element: ElementRecord::for_display(element, zone),
        }
    }

    /// The JSON text sent on the socket (and as a Web Push's payload).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("live messages always serialise")
    }
}

/// Which alarm message displays and staff pages get (DECISIONS §14).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlarmNews {
    /// A level started, or any other change displays see.
    Escalated,
    /// Somebody accepted the call.
    Accepted,
    /// Staff pages only.
    Declined,
    /// Became unattended.
    Unattended,
}

/// The answer to a client's `{"action":"ping"}`.
pub const PONG: &str = r#"{"type":"pong"}"#;

/// Whether a client's text frame is the ping of DECISIONS §11.
pub fn is_ping(frame: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Action<'a> {
        action: &'a str,
    }
    serde_json::from_str::<Action<'_>>(frame).is_ok_and(|frame| frame.action == "ping")
}

/// A change ready to send: its scope and section decide who gets it.
#[derive(Debug)]
pub struct LiveEvent {
    /// Whose change it is: only connections of this scope get it.
    pub scope: Scope,
    /// The call's section; `None` for elements and calls without one.
    pub section: Option<String>,
    /// The message's JSON text, built once for every receiver.
    pub message: String,
}

/// Which connections of the event's scope get an event (the local server's
/// live socket; in AWS the broadcast sends the displays' messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveAudience {
    /// Displays of the section and every staff page of the scope.
    Everyone,
    /// Staff pages only (`call.declined`).
    StaffPages,
    /// The pages of one staff member (by id): `call.alert`, `call.cancelled`.
    Person(String),
}

/// An event on its way, with who gets it.
#[derive(Debug)]
pub struct Delivery {
    /// The change and its message.
    pub event: LiveEvent,
    /// Which connections of the event's scope get it.
    pub audience: LiveAudience,
}

/// In-process fan-out from the writers to the connected displays.
///
/// A bounded broadcast ring: a write never waits for a reader. A reader that
/// falls more than [`LiveHub::CAPACITY`] events behind gets `Lagged` and is
/// dropped by its connection (the display reconnects and re-reads the
/// snapshot), so one stalled display costs the others nothing.
#[derive(Clone)]
pub struct LiveHub {
    sender: broadcast::Sender<Arc<Delivery>>,
    /// The staff members with a staff page connected, and how many: an
    /// open page is a channel to its person (§18).
    pages: Arc<Mutex<HashMap<String, usize>>>,
}

/// A staff page's place among the open pages while its socket lasts.
pub struct OpenPage {
    pages: Arc<Mutex<HashMap<String, usize>>>,
    staff_id: String,
}

impl Drop for OpenPage {
    fn drop(&mut self) {
        let mut pages = self.pages.lock().expect("open pages");
        if let Some(count) = pages.get_mut(&self.staff_id) {
            *count -= 1;
            if *count == 0 {
                pages.remove(&self.staff_id);
            }
        }
    }
}

impl LiveHub {
    /// Events a reader may fall behind before it is dropped.
    pub const CAPACITY: usize = 1024;

    /// A hub with no reader yet (the local server makes one when it starts).
    pub fn new() -> Self {
        let (sender, _) = broadcast::channel(Self::CAPACITY);
        LiveHub {
            sender,
            pages: Arc::default(),
        }
    }

    /// `staff_id`'s staff page is connected until the value is dropped.
    pub fn page_opened(&self, staff_id: &str) -> OpenPage {
        *self
            .pages
            .lock()
            .expect("open pages")
            .entry(staff_id.to_string())
            .or_default() += 1;
        OpenPage {
            pages: Arc::clone(&self.pages),
            staff_id: staff_id.to_string(),
        }
    }

    /// Whether `staff_id` has a staff page connected now.
    pub fn has_page(&self, staff_id: &str) -> bool {
        self.pages
            .lock()
            .expect("open pages")
            .contains_key(staff_id)
    }

    /// A new reader, of what is published from now on: a connection subscribes
    /// before it reads its snapshot.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Delivery>> {
        self.sender.subscribe()
    }

    /// Whether any display is connected. Writers skip building messages
    /// (and the element's re-read) when none is: a display subscribes before
    /// it reads its snapshot, so a write checked here before it subscribed
    /// is in that snapshot.
    pub fn has_listeners(&self) -> bool {
        self.sender.receiver_count() > 0
    }

    /// Sends a change to every current reader (none connected: dropped).
    pub fn publish(&self, event: LiveEvent) {
        self.publish_to(event, LiveAudience::Everyone);
    }

    /// Sends an event to `audience` of its scope.
    pub fn publish_to(&self, event: LiveEvent, audience: LiveAudience) {
        let _ = self.sender.send(Arc::new(Delivery { event, audience }));
    }

    /// Sends `call.opened` or `call.closed` of `call` to every connection of
    /// `scope` that sees its section.
    pub fn publish_call(
        &self,
        scope: &Scope,
        call: &Call,
        types: &[CallType],
        zone: Tz,
        now: DateTime<Utc>,
    ) {
        self.publish(LiveEvent {
            scope: scope.clone(),
            section: call.section.clone(),
            message: LiveMessage::call(call, types, zone, now).to_json(),
        });
    }

    /// Sends `element.updated` to every connection of `scope` (an element
    /// has no section).
    pub fn publish_element(&self, scope: &Scope, element: &Element, zone: Tz) {
        self.publish(LiveEvent {
            scope: scope.clone(),
            section: None,
            message: LiveMessage::element(element, zone).to_json(),
        });
    }
}

impl Default for LiveHub {
    fn default() -> Self {
        LiveHub::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_that_falls_behind_learns_it_and_writers_never_wait() {
        let hub = LiveHub::new();
        let mut stalled = hub.subscribe();
        for i in 0..LiveHub::CAPACITY + 10 {
            hub.publish(LiveEvent {
                scope: Scope::installation(),
                section: None,
                message: i.to_string(),
            });
        }
        assert!(matches!(
            stalled.try_recv().unwrap_err(),
            broadcast::error::TryRecvError::Lagged(10)
        ));
    }

    #[test]
    fn messages_have_the_documented_shape() {
        let call = Call {
            id: 7,
            address: "A".into(),
            event: "Notruf".into(),
            position: None,
            section: Some("S1".into()),
            attribute: None,
            element_code: "c".into(),
            element_name: "n".into(),
            opened_at: "2026-01-05T09:00:00Z".parse().unwrap(),
            closed_at: None,
            opened_by: Some("6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f".into()),
            closed_by: None,
            alarm: None,
        };
        let types = crate::domain::call_types::default_call_types();
        let now = "2026-01-05T09:00:10Z".parse().unwrap();
        let opened: serde_json::Value = serde_json::from_str(
            &LiveMessage::call(&call, &types, chrono_tz::Europe::Berlin, now).to_json(),
        )
        .unwrap();
        assert_eq!(opened["type"], "call.opened");
        assert_eq!(opened["version"], 1);
        assert_eq!(opened["call"]["opened_at"], "2026-01-05 10:00:00");
        assert_eq!(opened["call"]["duration"], 10);
        assert_eq!(opened["call"]["type"]["name"], "Notruf");
        let closed = Call {
            closed_at: Some(now),
            ..call
        };
        let text = LiveMessage::call(&closed, &types, chrono_tz::Europe::Berlin, now).to_json();
        assert!(text.starts_with(r#"{"type":"call.closed","version":2,"call":{"id":7,"#));
        assert!(!text.contains("opened_by"), "the audit stays off the wire");
    }

    #[test]
    fn pings_are_recognised_and_nothing_else() {
        assert!(is_ping(r#"{"action":"ping"}"#));
        assert!(!is_ping(r#"{"action":"pong"}"#));
        assert!(!is_ping("ping"));
    }
}
