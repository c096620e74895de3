//! From a record of the data table's stream to what the alarm engine must
//! do about it (DECISIONS §17), without any I/O. The stream is where every
//! committed write reaches the engine in AWS, whichever function wrote it
//! and whether or not that function lived on after its commit:
//!
//! - a call item whose alarm's next step is new or moved (the open, which
//!   stores its alarm due at once; a level started; a response that moved
//!   the time): a timer due then ([`timer_of_change`]);
//! - a call item closed while it has an alarm: a timer due now, so that
//!   its ringing alerts are cancelled (the engine ends the alarm of a
//!   closed call);
//! - a call item inserted open: [`Wake::Opened`], for the handler to ask
//!   whether it is a presence (then the other open calls of its address
//!   are looked at now: staff is in the room);
//! - a duty put, changed or removed: [`Wake::DutyChanged`], for the handler
//!   to look at the scope's running alarms (somebody came on duty for them,
//!   or went off duty and is alerted no more);
//! - an audit item inserted: [`Wake::Audit`], the alerts and cancels of
//!   the alarm write that made it, for the handler to push to the people's
//!   phones (the audit is written in the same transaction as the alarm, so
//!   it is the write's outbox of pushes, whichever function wrote it);
//! - a sign-on test item inserted (a person signed on, registered a phone
//!   or asked to test again, DECISIONS §18): [`Wake::DeviceTest`], for the
//!   handler to queue the test's push like an alert;
//! - a webhook event put in the outbox: [`Wake::Outbox`], for the handler
//!   to wake the webhook deliveries; a webhook wake-up item (a retry's time,
//!   put by the `forward` function): [`Wake::WebhookRetry`], for the handler
//!   to wake them then.
//!
//! Everything else (elements, locks, audit lines, staff, outbox items, an
//! alarm write that left its time, a removal by TTL) wakes nothing. The
//! images are read with the store's own item parsing, so the stream and the
//! store cannot disagree about what an item means.

use std::collections::HashMap;
use std::fmt;

use aws_lambda_events::dynamodb::EventRecord;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};

use nurse_call_core::{
    Call, Scope,
    alarm::{AuditEvent, Timer, timer_of_change},
};
use nurse_call_dynamodb::alarm_items::{AUDIT_PREFIX, audit_from_item};
use nurse_call_dynamodb::device_tests::{DEVICE_TEST_PK, DeviceTest, device_test_from_item};
use nurse_call_dynamodb::item::{CALL_SK, Item, alarm_from_item, call_from_item, get_n, get_s};
use nurse_call_dynamodb::webhook_items::OUTBOX_PK;
use nurse_call_dynamodb::webhook_wakes::{WAKE_PK, wake_due};

/// The prefix of a duty item's partition key (`duty#<scope>`).
const DUTY_PK_PREFIX: &str = "duty#";

/// What one record asks of the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    /// Send this timer, delayed by this many seconds.
    Timer(Timer, u32),
    /// A call was opened: when its type is a presence, the other open calls
    /// of its address are looked at now.
    Opened {
        /// Whose call it is (the installation or a sandbox visitor).
        scope: Scope,
        /// The opened call's id, left out of the calls looked at.
        call: i64,
        /// The call type's name, which says whether the call is a presence.
        event: String,
        /// The address whose other open calls a presence answers.
        address: String,
    },
    /// A duty of the scope changed: its running alarms are looked at now.
    DutyChanged {
        /// The scope whose duties changed.
        scope: Scope,
    },
    /// Webhook events wait in the outbox (DECISIONS §16).
    Outbox,
    /// The webhook deliveries want to be woken at `due` (a retry's time).
    WebhookRetry {
        /// The retry's time, as the wake-up item's `due` says.
        due: DateTime<Utc>,
    },
    /// A sign-on test to push to a person's devices (DECISIONS §18).
    DeviceTest(DeviceTest),
    /// An alarm write's audit lines: what it told whom.
    Audit {
        /// The call's scope (whose staff's phones get the pushes).
        scope: Scope,
        /// The call whose alarm was written.
        call: i64,
        /// The audit item's events: alerts and cancels become pushes, the rest
        /// nothing.
        events: Vec<AuditEvent>,
    },
}

/// A record that should wake the engine but cannot be read (an item
/// without a required attribute, a MODIFY without its old image). Logged
/// and skipped by the handler: retrying it would never succeed and would
/// hold up the shard. The reason names attributes, never values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable(pub String);

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What `record` asks of the engine at `now`.
pub fn wakes_of_record(record: &EventRecord, now: DateTime<Utc>) -> Result<Vec<Wake>, Unreadable> {
    let operation = record.event_name.as_str();
    let keys = to_sdk(&record.change.keys);
    let (Some(partition), Some(sort)) = (get_s(&keys, "pk"), get_s(&keys, "sk")) else {
        return Err(Unreadable(
            "the record's keys have no string \"pk\" and \"sk\"".into(),
        ));
    };
    if partition == WAKE_PK {
        if operation != "INSERT" {
            return Ok(Vec::new());
        }
        let due = wake_due(&to_sdk(&record.change.new_image))
            .ok_or_else(|| Unreadable("a webhook wake-up without a usable \"due\"".into()))?;
        return Ok(vec![Wake::WebhookRetry { due }]);
    }
    if partition == DEVICE_TEST_PK {
        if operation != "INSERT" {
            return Ok(Vec::new());
        }
        let test = device_test_from_item(&to_sdk(&record.change.new_image)).ok_or_else(|| {
            Unreadable("a sign-on test without \"scope\", \"staff_id\" and \"at\"".into())
        })?;
        return Ok(vec![Wake::DeviceTest(test)]);
    }
    if partition == OUTBOX_PK {
        return Ok(if operation == "INSERT" {
            vec![Wake::Outbox]
        } else {
            Vec::new()
        });
    }
    if partition.starts_with(DUTY_PK_PREFIX) {
        // A REMOVE (a sign-off, a shift's end by TTL) has the old image only.
        let image = match operation {
            "REMOVE" => &record.change.old_image,
            _ => &record.change.new_image,
        };
        let scope = get_s(&to_sdk(image), "scope")
            .ok_or_else(|| Unreadable("a duty without a string \"scope\"".into()))?;
        return Ok(vec![Wake::DutyChanged {
            scope: Scope::from_key(&scope),
        }]);
    }
    if sort.starts_with(AUDIT_PREFIX) {
        return audit_wakes(record);
    }
    if sort != CALL_SK || !matches!(operation, "INSERT" | "MODIFY") {
        return Ok(Vec::new());
    }
    let new = to_sdk(&record.change.new_image);
    let old = match operation {
        "INSERT" => None,
        _ if record.change.old_image.is_empty() => {
            return Err(Unreadable(
                "a MODIFY without an old image: the stream must carry NEW_AND_OLD_IMAGES".into(),
            ));
        }
        _ => Some(to_sdk(&record.change.old_image)),
    };
    call_wakes(&new, old.as_ref(), now)
}

fn call_wakes(new: &Item, old: Option<&Item>, now: DateTime<Utc>) -> Result<Vec<Wake>, Unreadable> {
    let call = call_from_item(new).map_err(|error| Unreadable(error.to_string()))?;
    let scope = get_s(new, "scope")
        .map(|scope| Scope::from_key(&scope))
        .ok_or_else(|| Unreadable("a stored call without a string \"scope\"".into()))?;
    let Some(alarm) = &call.alarm else {
        // A call of a type without alarm, or stored before alarms existed.
        return Ok(Vec::new());
    };
    let before = match old {
        Some(old) => alarm_from_item(old)
            .map_err(|error| Unreadable(error.to_string()))?
            .and_then(|alarm| alarm.next_at),
        None => None,
    };
    let mut wakes = Vec::new();
    let closed_now =
        call.closed_at.is_some() && old.is_some_and(|old| !old.contains_key("closed_at"));
    if let Some(closed_at) = call.closed_at.filter(|_| closed_now) {
        // The close is the last news of the call: a look now ends its alarm
        // (whatever its next step was, that look does it).
        wakes.push(Wake::Timer(Timer::new(&scope, call.id, closed_at), 0));
    } else if let Some((timer, delay)) =
        timer_of_change(&scope, call.id, before, alarm.next_at, now)
    {
        wakes.push(Wake::Timer(timer, delay));
    }
    if old.is_none() && call.closed_at.is_none() {
        wakes.push(Wake::Opened {
            scope,
            call: call.id,
            event: call.event.clone(),
            address: call.address.clone(),
        });
    }
    Ok(wakes)
}

/// An audit item inserted: its lines (a retention's removal is nothing).
fn audit_wakes(record: &EventRecord) -> Result<Vec<Wake>, Unreadable> {
    if record.event_name != "INSERT" {
        return Ok(Vec::new());
    }
    let item = to_sdk(&record.change.new_image);
    let events = audit_from_item(&item).map_err(|error| Unreadable(error.to_string()))?;
    let (Some(scope), Some(call)) = (get_s(&item, "scope"), get_n::<i64>(&item, "call_id")) else {
        return Err(Unreadable(
            "an audit item without a string \"scope\" and a number \"call_id\"".into(),
        ));
    };
    Ok(vec![Wake::Audit {
        scope: Scope::from_key(&scope),
        call,
        events,
    }])
}

/// The calls of `records` as their last image in the batch shows them,
/// by id: what an audit line's push says of its call, as the write that
/// made the line left it (read from the store only when not in the batch).
pub fn calls_in(records: &[EventRecord]) -> HashMap<i64, Call> {
    records
        .iter()
        .filter(|record| matches!(record.event_name.as_str(), "INSERT" | "MODIFY"))
        .filter(|record| get_s(&to_sdk(&record.change.keys), "sk").as_deref() == Some(CALL_SK))
        .filter_map(|record| call_from_item(&to_sdk(&record.change.new_image)).ok())
        .map(|call| (call.id, call))
        .collect()
}

/// A stream image (serde_dynamo's attribute values, as Lambda delivers
/// them) as the SDK's, which the store's item parsing reads.
fn to_sdk(image: &serde_dynamo::Item) -> Item {
    HashMap::<String, AttributeValue>::from(image.clone())
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone};

    use nurse_call_core::NewCall;
    use nurse_call_core::alarm::Alarm;
    use nurse_call_dynamodb::item::{ALARM, call_attributes, s};

    use super::*;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap()
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        t0() + Duration::seconds(seconds)
    }

    /// The call item of call 7, a Notruf on Zimmer-1, with `alarm`.
    fn call_item(alarm: Option<&Alarm>, closed_at: Option<DateTime<Utc>>) -> Item {
        let call = NewCall {
            address: "Zimmer-1".into(),
            event: "Notruf".into(),
            position: None,
            section: Some("S1".into()),
            attribute: None,
            element_code: String::new(),
            element_name: String::new(),
            opened_at: t0(),
            opened_by: None,
        };
        let mut item = call_attributes(&Scope::installation(), 7, &call, t0());
        item.insert("pk".into(), s("call#7"));
        item.insert("sk".into(), s("call"));
        match alarm {
            Some(alarm) => item.insert(ALARM.into(), s(alarm.to_json())),
            None => item.remove(ALARM),
        };
        if let Some(closed_at) = closed_at {
            item.insert("closed_at".into(), s(closed_at.to_rfc3339()));
        }
        item
    }

    fn due(seconds: i64) -> Alarm {
        let mut alarm = Alarm::pending(t0());
        alarm.next_at = Some(at(seconds));
        alarm.level = 1;
        alarm.levels = 2;
        alarm.changes = 1;
        alarm
    }

    fn record(operation: &str, old: Option<&Item>, new: Option<&Item>) -> EventRecord {
        let image =
            |item: Option<&Item>| serde_dynamo::Item::from(item.cloned().unwrap_or_default());
        let some = new.or(old).unwrap();
        let keys: Item = ["pk", "sk"]
            .iter()
            .map(|key| (key.to_string(), some[*key].clone()))
            .collect();
        let mut record = EventRecord::default();
        record.event_name = operation.into();
        record.change.keys = image(Some(&keys));
        record.change.old_image = image(old);
        record.change.new_image = image(new);
        record
    }

    fn timer(seconds: i64, delay: u32) -> Wake {
        Wake::Timer(Timer::new(&Scope::installation(), 7, at(seconds)), delay)
    }

    #[test]
    fn an_open_gets_the_timer_of_its_next_step_and_asks_about_a_presence() {
        let opened = call_item(Some(&due(30)), None);
        let wakes = wakes_of_record(&record("INSERT", None, Some(&opened)), t0()).unwrap();
        assert_eq!(
            wakes,
            [
                timer(30, 30),
                Wake::Opened {
                    scope: Scope::installation(),
                    call: 7,
                    event: "Notruf".into(),
                    address: "Zimmer-1".into(),
                }
            ]
        );
        // Stored pending (no roster read at the open): due at once.
        let pending = call_item(Some(&Alarm::pending(t0())), None);
        let wakes = wakes_of_record(&record("INSERT", None, Some(&pending)), at(1)).unwrap();
        assert_eq!(wakes[0], timer(0, 0));
    }

    #[test]
    fn a_moved_next_step_gets_a_timer_and_a_kept_one_none() {
        let (before, later) = (
            call_item(Some(&due(30)), None),
            call_item(Some(&due(90)), None),
        );
        let moved =
            wakes_of_record(&record("MODIFY", Some(&before), Some(&later)), at(30)).unwrap();
        assert_eq!(moved, [timer(90, 60)]);
        let kept = wakes_of_record(&record("MODIFY", Some(&before), Some(&before)), at(5)).unwrap();
        assert_eq!(kept, []);
        let mut accepted = due(30);
        accepted.next_at = None;
        let stopped = call_item(Some(&accepted), None);
        let wakes =
            wakes_of_record(&record("MODIFY", Some(&before), Some(&stopped)), at(5)).unwrap();
        assert_eq!(wakes, [], "accepted before accept timeouts: no next step");
        // Accepted with an accept timeout (DECISIONS §19): due at its end,
        // like a level.
        let mut waiting = due(30);
        waiting.status = nurse_call_core::alarm::AlarmStatus::Accepted;
        waiting.next_at = Some(at(125));
        let awaited = call_item(Some(&waiting), None);
        let wakes =
            wakes_of_record(&record("MODIFY", Some(&before), Some(&awaited)), at(5)).unwrap();
        assert_eq!(
            wakes,
            [timer(125, 120)],
            "accepted: a timer for its timeout"
        );
    }

    #[test]
    fn a_close_looks_at_once_and_a_later_edit_of_it_does_not() {
        let open = call_item(Some(&due(30)), None);
        let closed = call_item(Some(&due(30)), Some(at(12)));
        let wakes = wakes_of_record(&record("MODIFY", Some(&open), Some(&closed)), at(12)).unwrap();
        assert_eq!(wakes, [timer(12, 0)]);
        let edited =
            wakes_of_record(&record("MODIFY", Some(&closed), Some(&closed)), at(20)).unwrap();
        assert_eq!(edited, []);
    }

    #[test]
    fn a_call_without_alarm_and_other_items_wake_nothing() {
        let plain = call_item(None, None);
        assert_eq!(
            wakes_of_record(&record("INSERT", None, Some(&plain)), t0()).unwrap(),
            []
        );
        let element: Item = [("pk", "installation#Zimmer-1"), ("sk", "element")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), s(v)))
            .collect();
        assert_eq!(
            wakes_of_record(&record("INSERT", None, Some(&element)), t0()).unwrap(),
            []
        );
        let removed = call_item(Some(&due(30)), Some(at(12)));
        assert_eq!(
            wakes_of_record(&record("REMOVE", Some(&removed), None), t0()).unwrap(),
            []
        );
    }

    #[test]
    fn a_duty_put_or_removed_wakes_its_scope() {
        let duty: Item = [
            ("pk", "duty#installation"),
            ("sk", "5b1f"),
            ("scope", "installation"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), s(v)))
        .collect();
        let expected = [Wake::DutyChanged {
            scope: Scope::installation(),
        }];
        assert_eq!(
            wakes_of_record(&record("INSERT", None, Some(&duty)), t0()).unwrap(),
            expected
        );
        assert_eq!(
            wakes_of_record(&record("REMOVE", Some(&duty), None), t0()).unwrap(),
            expected
        );
    }

    #[test]
    fn a_webhook_event_put_in_the_outbox_wakes_the_deliveries_and_its_removal_does_not() {
        let event: Item = [
            ("pk", "webhook#outbox"),
            ("sk", "2026-01-05T09:00:00.000000000Z#1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), s(v)))
        .collect();
        assert_eq!(
            wakes_of_record(&record("INSERT", None, Some(&event)), t0()).unwrap(),
            [Wake::Outbox]
        );
        assert_eq!(
            wakes_of_record(&record("REMOVE", Some(&event), None), t0()).unwrap(),
            []
        );
    }

    #[test]
    fn a_webhook_wake_up_item_asks_for_a_wake_up_at_its_time() {
        let wake: Item = [
            ("pk", "webhook#wake"),
            ("sk", "2026-01-05T09:00:08.000000000Z#0a1b"),
            ("due", "2026-01-05T09:00:08.000000000Z"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), s(v)))
        .collect();
        assert_eq!(
            wakes_of_record(&record("INSERT", None, Some(&wake)), t0()).unwrap(),
            [Wake::WebhookRetry { due: at(8) }]
        );
        assert_eq!(
            wakes_of_record(&record("REMOVE", Some(&wake), None), t0()).unwrap(),
            []
        );
    }

    #[test]
    fn a_sign_on_test_item_asks_for_its_push_and_an_unreadable_one_is_said() {
        let test: Item = [
            ("pk", "push#test"),
            (
                "sk",
                "2026-01-05T09:00:08.000000000Z#5af55af5-0000-4000-8000-000000000001#all",
            ),
            ("scope", "installation"),
            ("staff_id", "5af55af5-0000-4000-8000-000000000001"),
            ("at", "2026-01-05T09:00:08.000000000Z"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), s(v)))
        .collect();
        assert_eq!(
            wakes_of_record(&record("INSERT", None, Some(&test)), t0()).unwrap(),
            [Wake::DeviceTest(DeviceTest {
                scope: Scope::installation(),
                staff_id: "5af55af5-0000-4000-8000-000000000001".into(),
                at: at(8),
                device: None,
            })]
        );
        assert_eq!(
            wakes_of_record(&record("REMOVE", Some(&test), None), t0()).unwrap(),
            [],
            "its removal by TTL"
        );
        let mut broken = test.clone();
        broken.remove("staff_id");
        let error = wakes_of_record(&record("INSERT", None, Some(&broken)), t0()).unwrap_err();
        assert!(error.0.contains("staff_id"), "{error}");
    }

    #[test]
    fn a_modify_without_its_old_image_is_unreadable() {
        let open = call_item(Some(&due(30)), None);
        let error = wakes_of_record(&record("MODIFY", None, Some(&open)), t0()).unwrap_err();
        assert!(error.0.contains("NEW_AND_OLD_IMAGES"), "{error}");
    }
}
