//! The JSON the service answers with: call records (spec 2.3), elements
//! (DECISIONS §4) and call type objects, with times as wire times.

pub(crate) mod live;
pub(crate) mod silence;
pub(crate) mod staff;
pub(crate) mod webhooks;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::{Serialize, Serializer};

use crate::domain::alarm::{Alarm, Response, StaffRef};
use crate::domain::model::{Call, CallType, Element};
use crate::domain::wire_time::format_local;

/// `{"success":true,"data":…}`
pub(crate) fn success<T: Serialize>(data: &T) -> String {
    #[derive(Serialize)]
    struct Success<'a, T> {
        success: bool,
        data: &'a T,
    }
    serde_json::to_string(&Success {
        success: true,
        data,
    })
    .expect("response records always serialise")
}

/// The `type` object of a call record.
#[derive(Debug, Serialize)]
pub struct TypeRecord<'a> {
    pub id: i64,
    pub name: &'a str,
    pub urgency: &'a str,
    pub priority: i64,
    #[serde(rename = "type")]
    pub kind: &'a str,
    pub color: &'a str,
    pub notify: bool,
    pub notification_interval: i64,
    pub notification_maxloops: i64,
    pub notification_sound: &'a str,
}

impl<'a> From<&'a CallType> for TypeRecord<'a> {
    fn from(t: &'a CallType) -> Self {
        TypeRecord {
            id: t.id,
            name: &t.name,
            urgency: &t.urgency,
            priority: t.priority,
            kind: &t.kind,
            color: &t.color,
            notify: t.notify,
            notification_interval: t.notification_interval,
            notification_maxloops: t.notification_maxloops,
            notification_sound: &t.notification_sound,
        }
    }
}

/// A call as the API shows it (spec 2.3).
#[derive(Debug, Serialize)]
pub struct CallRecord<'a> {
    pub id: i64,
    pub address: &'a str,
    pub position: Option<&'a str>,
    pub section: Option<&'a str>,
    pub attribute: Option<&'a str>,
    pub element_code: &'a str,
    pub element_name: &'a str,
    pub opened_at: String,
    pub closed_at: Option<String>,
    /// Whole seconds from opened_at to closed_at, or to now while open.
    pub duration: i64,
    /// Only with `?include=type` (and always on the sandbox page). `null` if an
    /// admin has since removed the call type.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub call_type: Option<Option<TypeRecord<'a>>>,
    /// Only for displays (DECISIONS §11), never on the wire of spec 2.3.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
    /// Only for displays and staff (DECISIONS §14): `null` for a call
    /// without an alarm (a presence, or not yet looked at).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alarm: Option<Option<AlarmRecord>>,
}

/// A call's alarm on the wire (DECISIONS §14, §18).
#[derive(Debug, Serialize)]
pub struct AlarmRecord {
    pub state: &'static str,
    pub level: usize,
    pub levels: usize,
    pub next_at: Option<String>,
    pub accepted_by: Option<StaffRecord>,
    pub accepted_at: Option<String>,
    /// Whoever accepted and did not come within the call type's
    /// `accept_timeout` (DECISIONS §19: "<Name> kam nicht"), oldest first;
    /// empty while nobody did.
    pub not_arrived: Vec<StaffRecord>,
    /// Everyone alerted so far, in the order they were first alerted;
    /// left out of a Web Push (`None`): 200 of them would make it 27 KB,
    /// and push services take 4 KB (the page reads them when it opens).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipients: Option<Vec<RecipientRecord>>,
}

/// Someone a call alerted, and whether they got it (DECISIONS §18).
#[derive(Debug, Serialize)]
pub struct RecipientRecord {
    pub id: String,
    pub name: String,
    /// The level that first alerted them.
    pub level: usize,
    /// When they were first alerted.
    pub alerted_at: String,
    /// When their first receipt arrived; `null` while none has.
    pub received_at: Option<String>,
    /// Their answer: `accepted` before `declined` before `read`; `null`
    /// while they gave none.
    pub response: Option<&'static str>,
}

/// A staff member as colleagues and displays see them.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StaffRecord {
    pub id: String,
    pub name: String,
}

impl From<&StaffRef> for StaffRecord {
    fn from(staff: &StaffRef) -> Self {
        StaffRecord {
            id: staff.id.clone(),
            name: staff.name.clone(),
        }
    }
}

impl AlarmRecord {
    /// The record of `alarm`, or `None` when there is none to show.
    pub fn of(alarm: Option<&Alarm>, zone: Tz) -> Option<Self> {
        let alarm = alarm.filter(|a| a.is_shown())?;
        Some(AlarmRecord {
            state: alarm.status.as_str(),
            level: alarm.level,
            levels: alarm.levels,
            next_at: alarm.next_level_at.map(|t| format_local(t, zone)),
            accepted_by: alarm.accepted.as_ref().map(|a| StaffRecord::from(&a.staff)),
            accepted_at: alarm.accepted.as_ref().map(|a| format_local(a.at, zone)),
            not_arrived: alarm
                .not_arrived
                .iter()
                .map(|a| StaffRecord::from(&a.staff))
                .collect(),
            recipients: Some(
                alarm
                    .alerted()
                    .map(|r| RecipientRecord {
                        id: r.staff.id.clone(),
                        name: r.staff.name.clone(),
                        level: r.level,
                        alerted_at: format_local(r.first_alert_at(), zone),
                        received_at: r.received_at.map(|t| format_local(t, zone)),
                        response: alarm.response_of(&r.staff.id).map(Response::as_str),
                    })
                    .collect(),
            ),
        })
    }
}

impl<'a> CallRecord<'a> {
    /// [`CallRecord::for_display`] without the alarm's recipients: what a
    /// Web Push carries (see [`AlarmRecord::recipients`]).
    pub fn for_push(call: &'a Call, types: &'a [CallType], zone: Tz, now: DateTime<Utc>) -> Self {
        let mut record = CallRecord::for_display(call, types, zone, now);
        if let Some(Some(alarm)) = &mut record.alarm {
            alarm.recipients = None;
        }
        record
    }

    /// `types` is `Some` when the `type` object is wanted.
    pub fn new(
        call: &'a Call,
        types: Option<&'a [CallType]>,
        zone: Tz,
        now: DateTime<Utc>,
    ) -> Self {
        let end = call.closed_at.unwrap_or(now);
        CallRecord {
            id: call.id,
            address: &call.address,
            position: call.position.as_deref(),
            section: call.section.as_deref(),
            attribute: call.attribute.as_deref(),
            element_code: &call.element_code,
            element_name: &call.element_name,
            opened_at: format_local(call.opened_at, zone),
            closed_at: call.closed_at.map(|t| format_local(t, zone)),
            // A call opened with a future created_at has not lasted yet.
            duration: (end - call.opened_at).num_seconds().max(0),
            call_type: types.map(|types| {
                types
                    .iter()
                    .find(|t| t.name == call.event)
                    .map(TypeRecord::from)
            }),
            version: None,
            alarm: None,
        }
    }

    /// A call as displays get it: with its type, its version and its alarm.
    pub fn for_display(
        call: &'a Call,
        types: &'a [CallType],
        zone: Tz,
        now: DateTime<Utc>,
    ) -> Self {
        CallRecord {
            version: Some(call.version()),
            alarm: Some(AlarmRecord::of(call.alarm.as_ref(), zone)),
            ..CallRecord::new(call, Some(types), zone, now)
        }
    }
}

/// An element as the API shows it.
#[derive(Debug, Serialize)]
pub struct ElementRecord<'a> {
    pub address: &'a str,
    pub code: &'a str,
    pub name: &'a str,
    #[serde(serialize_with = "battery_number")]
    pub battery: Option<f64>,
    pub position: Option<&'a str>,
    pub reachable: Option<bool>,
    pub updated_at: String,
    /// Only for displays (DECISIONS §11), never in the answers of spec 4.2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
}

impl<'a> ElementRecord<'a> {
    /// An element as displays get it: with its version.
    pub fn for_display(element: &'a Element, zone: Tz) -> Self {
        ElementRecord {
            version: Some(element.version),
            ..ElementRecord::new(element, zone)
        }
    }

    pub fn new(element: &'a Element, zone: Tz) -> Self {
        ElementRecord {
            address: &element.address,
            code: &element.code,
            name: &element.name,
            battery: element.battery,
            position: element.position.as_deref(),
            reachable: element.reachable,
            updated_at: format_local(element.updated_at, zone),
            version: None,
        }
    }
}

/// A whole percentage is shown as an integer (`80`, not `80.0`).
fn battery_number<S: Serializer>(battery: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
    match battery {
        Some(level) if level.fract() == 0.0 => serializer.serialize_i64(*level as i64),
        Some(level) => serializer.serialize_f64(*level),
        None => serializer.serialize_none(),
    }
}

/// The call type list of spec 4.3: name → internal name, in id order.
pub(crate) struct CallTypeNames<'a>(pub &'a [CallType]);

impl Serialize for CallTypeNames<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for t in self.0 {
            map.serialize_entry(&t.name, &t.internal_name)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn call_records_never_show_who_opened_or_closed() {
        let opened_at = Utc.with_ymd_and_hms(2026, 3, 1, 8, 0, 0).unwrap();
        let call = Call {
            id: 7,
            address: "Zimmer-1".into(),
            event: "Normalruf".into(),
            position: None,
            section: None,
            attribute: None,
            element_code: "Z1".into(),
            element_name: "Zimmer 1".into(),
            opened_at,
            closed_at: Some(opened_at + chrono::Duration::seconds(90)),
            opened_by: Some("aaaaaaaa-0000-4000-8000-00000000000a".into()),
            closed_by: Some("bbbbbbbb-0000-4000-8000-00000000000b".into()),
            alarm: None,
        };
        let zone: Tz = "Europe/Berlin".parse().unwrap();
        let record = serde_json::to_value(CallRecord::new(&call, None, zone, opened_at)).unwrap();
        let mut keys: Vec<&str> = record
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        // Spec 2.3's record, exactly: no audit fields.
        assert_eq!(
            keys,
            [
                "address",
                "attribute",
                "closed_at",
                "duration",
                "element_code",
                "element_name",
                "id",
                "opened_at",
                "position",
                "section"
            ]
        );
        assert!(!record.to_string().contains("aaaaaaaa"));
    }
}
