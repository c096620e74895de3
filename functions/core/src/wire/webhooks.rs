//! The body of a webhook event (DECISIONS §16) from what the outbox kept:
//! `data` has the call as displays get it (wire times in the installation's
//! zone, its `type` object with name, priority and urgency, its version),
//! its alarm, and per event type the level, the recipients or the person
//! who answered, each with their id, name and device (a `call.alert`'s
//! recipients also with which alert of theirs it is). `element.attention`
//! has the element as displays get it with its reasons (DECISIONS §12).

use std::collections::HashMap;

use chrono_tz::Tz;
use serde_json::{Value, json};

use crate::domain::alarm::StaffRef;
use crate::domain::model::CallType;
use crate::domain::webhooks::outbox::OutboxEvent;
use crate::domain::webhooks::{Event, EventType};
use crate::wire::{AlarmRecord, CallRecord, ElementRecord};

/// The event as endpoints get it. `devices` maps a staff id to their
/// handset or pager, read when it is sent (an admin may have changed it
/// since the write; `null` for someone without one).
/// `types`: the call types now (`type` is `null` for a type an admin removed).
pub(crate) fn event_of(
    kept: &OutboxEvent,
    zone: Tz,
    devices: &HashMap<String, String>,
    types: &[CallType],
) -> Event {
    let mut data = match (&kept.facts.call, &kept.facts.element) {
        (Some(call), _) => {
            let call = call.to_call();
            let mut record = CallRecord::new(&call, Some(types), zone, kept.at);
            record.version = Some(call.version());
            json!({
                "call": record,
                "alarm": AlarmRecord::of(call.alarm.as_ref(), zone),
            })
        }
        (None, Some(element)) => {
            let kept_element = element.to_element();
            let mut record = serde_json::to_value(ElementRecord::for_display(&kept_element, zone))
                .expect("an element record serialises");
            record["reasons"] = json!(element.reasons);
            json!({ "element": record })
        }
        // A central system (DECISIONS §19): the object the reads list.
        (None, None) => match &kept.facts.link {
            Some(link) => serde_json::to_value(crate::wire::silence::SilentRecord::new(
                &link.consumer,
                &link.name,
                link.since,
                zone,
            ))
            .expect("a silent record serialises"),
            // Neither: a hand-edited row; sent as it is rather than not at all.
            None => json!({}),
        },
    };
    let people = |staff: &[StaffRef]| -> Vec<Value> {
        staff
            .iter()
            .map(|s| json!({"id": s.id, "name": s.name, "device": devices.get(&s.id)}))
            .collect()
    };
    let facts = &kept.facts;
    match kept.kind {
        EventType::CallAlert => {
            data["level"] = json!(facts.level);
            data["repeat"] = json!(facts.repeat);
            // Each recipient with which alert of theirs this is (DECISIONS
            // §18: their receipt names it; `null` only where unknown).
            let mut recipients = people(&facts.staff);
            for (recipient, staff) in recipients.iter_mut().zip(&facts.staff) {
                recipient["alert"] = json!(facts.alert_of(&staff.id));
            }
            data["recipients"] = json!(recipients);
        }
        EventType::CallEscalated => data["level"] = json!(facts.level),
        EventType::CallAccepted | EventType::CallDeclined => {
            data["staff"] = people(&facts.staff)
                .into_iter()
                .next()
                .unwrap_or(Value::Null);
        }
        EventType::CallCancelled => {
            data["recipients"] = json!(people(&facts.staff));
            data["reason"] = json!(facts.reason);
        }
        EventType::CallClosed
        | EventType::ElementAttention
        | EventType::ConsumerSilent
        | EventType::ConsumerBack => {}
    }
    Event {
        id: kept.id.clone(),
        kind: kept.kind,
        at: kept.at,
        call_id: kept.call_id,
        section: kept.section.clone(),
        data,
    }
}
