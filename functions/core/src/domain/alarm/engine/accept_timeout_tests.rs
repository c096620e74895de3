//! An accept is not an arrival (DECISIONS §19): an accept followed by
//! neither a presence nor the close within the call type's accept timeout
//! resumes the alarm.

use super::tests::{World, at, duty};
use super::*;
use crate::domain::alarm::policy::{Audience, Level};

/// Anna (section 1) alerted by level 1 of Notruf and accepted at 5 s; the
/// accept times out after 20 s.
fn accepted_by_anna() -> (World, Alarm) {
    let mut w = World::new();
    w.accept_timeout = 20;
    let alerting = w.step(&Alarm::pending(at(0)), at(0)).alarm;
    let accepted = w
        .respond(&alerting, "anna", Response::Accepted, at(5))
        .unwrap()
        .alarm;
    (w, accepted)
}

fn alerted(step: &Step) -> Vec<(&str, bool)> {
    step.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Alert { staff, repeat, .. } => Some((staff.id.as_str(), *repeat)),
            _ => None,
        })
        .collect()
}

#[test]
fn an_accepted_alarm_is_due_again_when_its_accept_times_out() {
    let (w, accepted) = accepted_by_anna();
    assert_eq!(accepted.status, AlarmStatus::Accepted);
    assert_eq!(accepted.next_at, Some(at(25)), "accept at 5 s + 20 s");
    assert_eq!(accepted.next_level_at, None, "no level is shown as next");
    // Before its time, nothing changes (level 2 of Notruf is due at 60 s,
    // but an accepted alarm starts no level).
    let early = w.step(&accepted, at(24));
    assert!(!early.changed, "{:?}", early.effects);
}

#[test]
fn without_presence_or_close_the_accept_expires_and_the_next_level_starts_at_once() {
    let (w, accepted) = accepted_by_anna();
    let resumed = w.step(&accepted, at(25));
    let alarm = &resumed.alarm;
    assert_eq!(alarm.status, AlarmStatus::Alerting);
    assert_eq!(alarm.accepted, None, "accepted_by null");
    assert_eq!(alarm.not_arrived.len(), 1);
    assert_eq!(alarm.not_arrived[0].staff.id, "anna");
    assert_eq!(alarm.not_arrived[0].at, at(5));
    assert_eq!(alarm.level, 2, "level 2 (house) at once, not at 60 s");
    assert_eq!(alarm.level_started_at[1], at(25));
    assert!(alarm.changes > accepted.changes, "displays are told");
    assert_eq!(
        resumed.effects[0],
        Effect::AcceptExpired {
            by: accepted.accepted.as_ref().unwrap().staff.clone()
        }
    );
    assert!(resumed.effects.contains(&Effect::Escalated { level: 2 }));
    // Anna alerted again, Ben (house) for the first time.
    let mut who = alerted(&resumed);
    who.sort();
    assert_eq!(who, [("anna", true), ("ben", false)]);
    assert!(alarm.alerts("anna") && alarm.alerts("ben"));
    // Level 3 keeps its time.
    assert_eq!(alarm.next_level_at, Some(at(180)));
}

#[test]
fn a_presence_within_the_timeout_is_the_arrival() {
    let (mut w, accepted) = accepted_by_anna();
    w.presence_at = Some(at(12));
    let present = w.step(&accepted, at(12));
    assert_eq!(present.alarm.status, AlarmStatus::Accepted);
    assert_eq!(present.alarm.present_at, Some(at(12)));
    assert_eq!(present.alarm.next_at, None, "arrived: nothing more is due");
    assert!(present.effects.is_empty(), "{:?}", present.effects);
    // Later, even with the presence gone, it stays as it is.
    w.presence_at = None;
    assert!(!w.step(&present.alarm, at(300)).changed);
    // A presence seen only at the timeout's own look counts as well.
    w.presence_at = Some(at(20));
    let late_look = w.step(&accepted, at(26));
    assert_eq!(late_look.alarm.status, AlarmStatus::Accepted);
    assert_eq!(late_look.alarm.present_at, Some(at(20)));
}

#[test]
fn a_close_within_the_timeout_ends_the_alarm() {
    let (mut w, accepted) = accepted_by_anna();
    w.call.closed_at = Some(at(15));
    let ended = w.step(&accepted, at(15));
    assert_eq!(ended.alarm.status, AlarmStatus::Ended);
    assert_eq!(ended.alarm.next_at, None);
    assert!(alerted(&ended).is_empty());
    // The close's own write ends it without a look (nothing rings).
    assert_eq!(quiet_end(&accepted, &w.call, at(15)), Some(ended));
}

#[test]
fn at_the_last_level_its_recipients_are_alerted_again() {
    let mut w = World::new();
    w.accept_timeout = 20;
    w.policy = Policy::new(vec![Level {
        after: 0,
        to: Audience::House,
    }])
    .unwrap();
    let alerting = w.step(&Alarm::pending(at(0)), at(0)).alarm;
    let accepted = w
        .respond(&alerting, "ben", Response::Accepted, at(5))
        .unwrap();
    // Anna's alert was cancelled by Ben's accept.
    assert!(!accepted.alarm.alerts("anna"));
    let resumed = w.step(&accepted.alarm, at(25));
    assert_eq!(resumed.alarm.level, 1, "no level left");
    assert!(
        !resumed
            .effects
            .iter()
            .any(|e| matches!(e, Effect::Escalated { .. }))
    );
    let mut who = alerted(&resumed);
    who.sort();
    assert_eq!(who, [("anna", true), ("ben", true)]);
}

#[test]
fn the_one_who_accepted_is_alerted_again_even_off_duty() {
    let (mut w, accepted) = accepted_by_anna();
    w.duties.retain(|d| d.staff_id != "anna");
    let resumed = w.step(&accepted, at(25));
    assert!(alerted(&resumed).contains(&("anna", true)));
    // And keeps being alerted (not cancelled as off duty) until answered.
    let later = w.step(&resumed.alarm, at(26));
    assert!(later.alarm.alerts("anna"), "{:?}", later.effects);
    assert!(
        !later
            .effects
            .iter()
            .any(|e| matches!(e, Effect::Cancel { staff, .. } if staff.id == "anna"))
    );
}

#[test]
fn a_new_accept_starts_the_timeout_again() {
    let (w, accepted) = accepted_by_anna();
    let resumed = w.step(&accepted, at(25)).alarm;
    // Ben (alerted by level 2 now) accepts: a timeout of his own.
    let by_ben = w
        .respond(&resumed, "ben", Response::Accepted, at(30))
        .unwrap()
        .alarm;
    assert_eq!(by_ben.accepted.as_ref().unwrap().staff.id, "ben");
    assert_eq!(by_ben.next_at, Some(at(50)));
    // Anna again, the same person, instead: her answer is not kept twice.
    let again = w
        .respond(&resumed, "anna", Response::Accepted, at(31))
        .unwrap();
    assert_eq!(again.alarm.accepted.as_ref().unwrap().at, at(31));
    assert_eq!(again.alarm.next_at, Some(at(51)));
    let annas = again
        .alarm
        .answers
        .iter()
        .filter(|a| a.staff.id == "anna" && a.response == Response::Accepted)
        .count();
    assert_eq!(annas, 1);
    assert!(again.effects.contains(&Effect::Accepted {
        by: resumed.not_arrived[0].staff.clone()
    }));
}

#[test]
fn an_accept_whose_timeout_passed_unlooked_does_not_refuse_the_next() {
    let (mut w, accepted) = accepted_by_anna();
    // Ben, on duty for section 1 too now, may answer (§20).
    w.duties.retain(|d| d.staff_id != "ben");
    w.duties.push(duty("ben", &["1", "2"]));
    // No look at 25 s (a late timer): Ben's accept at 40 s finds it expired.
    let by_ben = w
        .respond(&accepted, "ben", Response::Accepted, at(40))
        .unwrap();
    assert_eq!(by_ben.alarm.accepted.as_ref().unwrap().staff.id, "ben");
    assert_eq!(by_ben.alarm.not_arrived[0].staff.id, "anna");
    assert!(matches!(by_ben.effects[0], Effect::AcceptExpired { .. }));
}

#[test]
fn the_timeout_reads_back_from_the_stored_alarm() {
    let (w, accepted) = accepted_by_anna();
    let resumed = w.step(&accepted, at(25)).alarm;
    let stored = Alarm::from_json(&resumed.to_json()).unwrap();
    assert_eq!(stored, resumed);
    // An alarm stored before accept timeouts existed reads with none.
    let mut old: serde_json::Value = serde_json::from_str(&accepted.to_json()).unwrap();
    assert!(old.get("not_arrived").is_none(), "left out while empty");
    old.as_object_mut().unwrap().remove("not_arrived");
    assert_eq!(Alarm::from_json(&old.to_string()).unwrap(), accepted);
}
