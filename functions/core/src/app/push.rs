//! The alarm engine's alerts and cancels as Web Push jobs (DECISIONS §15).
//! After a step is written, each `Alert` and `Cancel` effect becomes one
//! [`PushJob`] for its person, handed to the state's [`PushSink`] without
//! waiting: the sink (the push adapter, `functions/push`) finds the
//! person's subscriptions, encrypts, signs and sends, and retries, all off
//! the request path, so a push never delays a write.
//!
//! The payload is exactly the live message the person's open staff page
//! gets (`call.alert`, `call.cancelled`), so the page and its service
//! worker read one format.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::app::AppState;
use crate::domain::alarm::receipt::{Path, Receipt, device_tag};
use crate::domain::alarm::{Effect, Step};
use crate::domain::device::TestReceipt;
use crate::domain::model::{Call, CallType, Scope};
use crate::wire::CallRecord;
use crate::wire::live::LiveMessage;

/// Largest payload sent (DECISIONS §15: at most 3 KB; push services take
/// 4,096 bytes after encryption, which adds 86).
pub(crate) const MAX_PAYLOAD_BYTES: usize = 3 * 1024;

/// What a push is about: the person is alerted, or their alert stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PushKind {
    /// `call.alert`: the person is alerted to the call, or re-alerted.
    Alert,
    /// `call.cancelled`: the person's alert for the call stops.
    Cancel,
    /// `staff.test`: the sign-on test of one device (DECISIONS §18), about
    /// no call ([`TEST_CALL_ID`]).
    Test,
    /// `consumer.silent`: Technik's alert that a central system is silent
    /// (DECISIONS §19), about no call ([`SILENCE_CALL_ID`]); its payload
    /// carries its receipt already, and no device owes one for it.
    Silence,
}

/// The call id of a test push, which is about no call (ids start at 1): its
/// `Topic` (`call-0`, a newer test replaces an older one still waiting) and
/// its lane in the senders ([`PushJob::lane`]).
pub const TEST_CALL_ID: i64 = 0;

/// The call id of a silence's alert (DECISIONS §19), which is about no
/// call: its `Topic` (`call--1`, a newer silence alert replaces an older
/// one still waiting) and its lane in the senders.
pub const SILENCE_CALL_ID: i64 = -1;

/// One push to every subscription of one person. As JSON it is the
/// message of the AWS path's delivery queue (DECISIONS §17).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PushJob {
    /// Whose staff and call it is; in the JSON the scope's key.
    #[serde(with = "scope_key")]
    pub scope: Scope,
    /// The person: every browser they subscribed gets the push.
    pub staff_id: String,
    /// The call it is about: the push's `Topic`, so a newer push of the call
    /// replaces one still waiting at the push service.
    pub call_id: i64,
    /// An alert or its cancel.
    pub kind: PushKind,
    /// The JSON sent, at most [`MAX_PAYLOAD_BYTES`].
    pub payload: String,
    /// When the step that made it was taken: the push's `TTL` runs from here.
    pub made_at: DateTime<Utc>,
    /// The person's alert number this push is about (1 = the first; for a
    /// cancel their latest): each device's payload carries the receipt of
    /// this alert by that device (§15, §18). `None` in jobs queued before
    /// receipts existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert: Option<i64>,
    /// The one device this push is for (its tag, [`device_tag`]): a test
    /// goes to the device tested; `None`: every device of the person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

impl PushJob {
    /// The payload as sent to the subscription at `endpoint`: an alert's
    /// or a test's `receipt` names that device, so that the device's own
    /// receipt tells the service that this phone shows alerts (§18).
    pub fn payload_for(&self, endpoint: &str) -> String {
        let receipt = match (self.kind, self.alert) {
            (PushKind::Test, _) => {
                TestReceipt::new(self.made_at, &self.staff_id, endpoint).to_string()
            }
            (_, Some(alert)) => Receipt::new(
                self.call_id,
                alert,
                &self.staff_id,
                Path::Push(device_tag(endpoint)),
            )
            .to_string(),
            (_, None) => return self.payload.clone(),
        };
        let Ok(Value::Object(mut message)) = serde_json::from_str::<Value>(&self.payload) else {
            return self.payload.clone();
        };
        message.insert("receipt".into(), Value::String(receipt));
        Value::Object(message).to_string()
    }

    /// The sign-on test pushed at `at` to the person's devices, or to the
    /// one tagged `device` (DECISIONS §18): made where the test is asked
    /// for (locally), or from the table's stream in AWS (the `alarm`
    /// function, from the item the request's store wrote).
    pub fn test(scope: &Scope, staff_id: &str, at: DateTime<Utc>, device: Option<String>) -> Self {
        PushJob {
            scope: scope.clone(),
            staff_id: staff_id.to_string(),
            call_id: TEST_CALL_ID,
            kind: PushKind::Test,
            payload: json!({ "type": "staff.test" }).to_string(),
            made_at: at,
            alert: None,
            device,
        }
    }

    /// Whether this job goes to the device at `endpoint`.
    pub fn goes_to(&self, endpoint: &str) -> bool {
        self.device
            .as_deref()
            .is_none_or(|device| device == device_tag(endpoint))
    }

    /// The senders' lane of this job: a newer job of the same lane
    /// supersedes an older one (the phone would replace it: same `Topic`).
    /// The person and the call, and for a test the device it is for, so
    /// that a new phone's test never replaces the test of all the others.
    pub fn lane(&self) -> (String, i64, Option<String>) {
        (self.staff_id.clone(), self.call_id, self.device.clone())
    }
}

/// Where pushes go: takes a job at once and never waits (an adapter queues
/// it); dropped jobs are the adapter's to log loudly.
pub trait PushSink: Send + Sync {
    /// Takes `job` to send later; returns at once.
    fn send(&self, job: PushJob);
}

/// The pushes of a written step: one per `Alert` and `Cancel` effect, in
/// the order the engine made them.
pub(crate) fn jobs_of_step(
    scope: &Scope,
    call: &Call,
    next: &Step,
    types: &[CallType],
    zone: chrono_tz::Tz,
    now: DateTime<Utc>,
) -> Vec<PushJob> {
    jobs_of_effects(scope, call, &next.effects, types, zone, now)
}

/// The pushes of `effects` of `call`'s alarm: one per `Alert` and
/// `Cancel`, in their order.
pub fn jobs_of_effects(
    scope: &Scope,
    call: &Call,
    effects: &[Effect],
    types: &[CallType],
    zone: chrono_tz::Tz,
    now: DateTime<Utc>,
) -> Vec<PushJob> {
    if !effects.iter().any(Effect::is_for_a_person) {
        return Vec::new();
    }
    // The call once for every person of the step, without the alarm's
    // recipients (push services take 4 KB; 20 recipients made 3.5 KB).
    let record = serde_json::value::to_raw_value(&CallRecord::for_push(call, types, zone, now))
        .expect("call records always serialise");
    effects
        .iter()
        .filter_map(|effect| {
            let (staff, message) = LiveMessage::for_person(effect, call, &record)?;
            // Every push carries a receipt (§15): a cancel that of the
            // person's latest alert, so that its device's receipt says the
            // phone is reachable even when the alert's went missing.
            let (kind, alert) = match effect {
                Effect::Alert { alert, .. } => (PushKind::Alert, Some(*alert)),
                _ => (
                    PushKind::Cancel,
                    call.alarm
                        .as_ref()
                        .and_then(|alarm| alarm.recipient(&staff.id))
                        .map(|r| r.alerts)
                        .filter(|alerts| *alerts > 0),
                ),
            };
            Some(PushJob {
                scope: scope.clone(),
                staff_id: staff.id.clone(),
                call_id: call.id,
                kind,
                payload: fit_payload(message.to_json()),
                made_at: now,
                alert,
                device: None,
            })
        })
        .collect()
}

/// The message as JSON, at most [`MAX_PAYLOAD_BYTES`]: a call whose texts
/// make it longer (each may have 255 characters) keeps its id, address,
/// section, call type and alarm, the rest shortened or left out: the page
/// reads the whole call when it opens.
fn fit_payload(message: String) -> String {
    if message.len() <= MAX_PAYLOAD_BYTES {
        return message;
    }
    let Ok(mut value) = serde_json::from_str::<Value>(&message) else {
        return message;
    };
    if let Some(call) = value.get_mut("call").and_then(Value::as_object_mut) {
        for key in ["attribute", "element_code", "element_name", "position"] {
            call.remove(key);
        }
        for key in ["address", "section"] {
            if let Some(Value::String(text)) = call.get_mut(key) {
                *text = text.chars().take(60).collect();
            }
        }
        if let Some(kind) = call.get_mut("type").and_then(Value::as_object_mut) {
            kind.retain(|key, _| {
                matches!(
                    key.as_str(),
                    "id" | "name" | "urgency" | "priority" | "type" | "color"
                )
            });
        }
        call.insert("shortened".into(), json!(true));
    }
    value.to_string()
}

impl AppState {
    /// Hands the pushes of a written step to the push adapter, if this
    /// process sends pushes.
    pub(crate) fn push_alarm(
        &self,
        scope: &Scope,
        call: &Call,
        next: &Step,
        types: &[CallType],
        now: DateTime<Utc>,
    ) {
        let Some(sink) = &self.pushes else {
            return;
        };
        for job in jobs_of_step(scope, call, next, types, self.settings.time_zone, now) {
            sink.send(job);
        }
    }
}

/// A scope as its key in JSON (the delivery queue's messages).
mod scope_key {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::domain::model::Scope;

    pub(super) fn serialize<S: Serializer>(
        scope: &Scope,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(scope.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Scope, D::Error> {
        String::deserialize(deserializer).map(|key| Scope::from_key(&key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_call_is_shortened_to_fit_and_keeps_what_identifies_it() {
        let long = "Ü".repeat(255);
        let message = json!({
            "type": "call.alert", "version": 3, "level": 1, "repeat": false,
            "call": {
                "id": 7, "address": long, "position": long, "section": long,
                "attribute": long, "element_code": long, "element_name": long,
                "type": {"name": "Notruf", "urgency": "high", "color": "#ff0000", "sound": long},
                "alarm": {"state": "alerting", "level": 1}
            }
        })
        .to_string();
        assert!(message.len() > MAX_PAYLOAD_BYTES);
        let fitted: Value = serde_json::from_str(&fit_payload(message)).unwrap();
        assert!(fitted.to_string().len() <= MAX_PAYLOAD_BYTES);
        assert_eq!(fitted["call"]["id"], 7);
        assert_eq!(fitted["call"]["type"]["name"], "Notruf");
        assert_eq!(fitted["call"]["alarm"]["state"], "alerting");
        assert_eq!(
            fitted["call"]["address"].as_str().unwrap().chars().count(),
            60
        );
        assert_eq!(fitted["type"], "call.alert");
        assert_eq!(fitted["call"]["shortened"], true);
    }

    /// A call that alerted 100 people (issue 45's benchmark: with its
    /// recipients a push of it was 15 KB, and push services take 4 KB).
    #[test]
    fn a_push_of_a_call_with_a_hundred_recipients_fits_and_carries_its_receipt() {
        use crate::domain::alarm::{Alarm, Recipient, StaffRef};
        use crate::domain::call_types::default_call_types;
        let at = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 12, 2, 8, 0, 0).unwrap();
        let people: Vec<StaffRef> = (0..100)
            .map(|n| StaffRef {
                id: format!("00000000-0000-4000-8000-{n:012}"),
                name: format!("Pflegekraft {n}"),
            })
            .collect();
        let mut alarm = Alarm::pending(at);
        alarm.levels = 2;
        alarm.level = 1;
        alarm.recipients = people
            .iter()
            .map(|staff| Recipient {
                staff: staff.clone(),
                level: 1,
                alerts: 1,
                last_alert_at: at,
                ringing: true,
                alerted_at: Some(at),
                received_at: None,
            })
            .collect();
        let call = Call {
            id: 7,
            address: "Zimmer.1".into(),
            event: "Notruf".into(),
            position: None,
            section: Some("1".into()),
            attribute: None,
            element_code: String::new(),
            element_name: String::new(),
            opened_at: at,
            closed_at: None,
            opened_by: None,
            closed_by: None,
            alarm: Some(alarm),
        };
        let effects: Vec<Effect> = people
            .iter()
            .map(|staff| Effect::Alert {
                staff: staff.clone(),
                level: 1,
                repeat: false,
                alert: 1,
            })
            .collect();
        let types = default_call_types();
        let zone = chrono_tz::Europe::Berlin;
        let jobs = jobs_of_effects(&Scope::installation(), &call, &effects, &types, zone, at);
        assert_eq!(jobs.len(), 100);
        for job in &jobs {
            let payload = job.payload_for("https://push.example/phone");
            assert!(
                payload.len() <= MAX_PAYLOAD_BYTES,
                "{} bytes",
                payload.len()
            );
            let message: Value = serde_json::from_str(&payload).unwrap();
            assert_eq!(message["type"], "call.alert");
            assert_eq!(message["call"]["alarm"]["state"], "alerting");
            assert_eq!(message["call"]["alarm"].get("recipients"), None);
            let receipt = message["receipt"].as_str().unwrap();
            assert!(receipt.starts_with("7.1.") && receipt.contains(&job.staff_id));
        }
    }

    #[test]
    fn a_short_message_is_sent_as_it_is() {
        let message = json!({"type": "call.cancelled", "call": {"id": 1}}).to_string();
        assert_eq!(fit_payload(message.clone()), message);
    }
}
