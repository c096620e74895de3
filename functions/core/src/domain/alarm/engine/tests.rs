//! The engine's rules, one example each.

use chrono::{DateTime, Duration, TimeZone, Utc};

use super::*;
use crate::domain::alarm::staff::Duty;
use crate::domain::model::Scope;

pub(super) fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 25, 8, 0, 0).unwrap()
}

pub(super) fn at(seconds: i64) -> DateTime<Utc> {
    t0() + Duration::seconds(seconds)
}

pub(super) fn call(section: Option<&str>) -> Call {
    Call {
        id: 1,
        address: "Zimmer.1".into(),
        event: "Notruf".into(),
        position: None,
        section: section.map(str::to_string),
        attribute: None,
        element_code: String::new(),
        element_name: String::new(),
        opened_at: t0(),
        closed_at: None,
        opened_by: None,
        closed_by: None,
        alarm: None,
    }
}

pub(super) fn person(id: &str, groups: &[&str]) -> Staff {
    Staff {
        id: id.into(),
        scope: Scope::installation(),
        name: id.to_uppercase(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        device: None,
        token_hash: String::new(),
        created_at: t0(),
        revoked: false,
    }
}

pub(super) fn duty(id: &str, sections: &[&str]) -> Duty {
    Duty {
        staff_id: id.into(),
        scope: Scope::installation(),
        sections: sections.iter().map(|s| s.to_string()).collect(),
        since: t0() - Duration::hours(1),
        until: t0() + Duration::hours(11),
    }
}

pub(super) struct World {
    pub(super) call: Call,
    pub(super) policy: Policy,
    pub(super) staff: Vec<Staff>,
    pub(super) duties: Vec<Duty>,
    pub(super) presence_at: Option<DateTime<Utc>>,
    pub(super) interval: i64,
    pub(super) maxloops: i64,
    /// `RECEIPT_SECONDS`: an hour unless a test is about receipts.
    pub(super) receipt_seconds: i64,
    pub(super) without_channel: Vec<String>,
    /// The accept timeout (§19): a day unless a test is about it.
    pub(super) accept_timeout: i64,
}

impl World {
    /// Anna on duty for section 1, Ben for section 2, Chef (Leitung) off duty.
    pub(super) fn new() -> Self {
        World {
            call: call(Some("1")),
            policy: Policy::seeded("Notruf").unwrap(),
            staff: vec![
                person("anna", &[]),
                person("ben", &[]),
                person("chef", &["Leitung"]),
            ],
            duties: vec![duty("anna", &["1"]), duty("ben", &["2"])],
            presence_at: None,
            interval: 30,
            maxloops: 3,
            receipt_seconds: 3600,
            without_channel: Vec::new(),
            accept_timeout: 86_400,
        }
    }

    pub(super) fn situation(&self, now: DateTime<Utc>) -> Situation<'_> {
        Situation {
            call: &self.call,
            policy: &self.policy,
            interval: self.interval,
            maxloops: self.maxloops,
            roster: Roster {
                staff: &self.staff,
                duties: &self.duties,
                now,
            },
            presence_at: self.presence_at,
            receipt_seconds: self.receipt_seconds,
            without_channel: &self.without_channel,
            accept_timeout: self.accept_timeout,
        }
    }

    pub(super) fn step(&self, alarm: &Alarm, now: DateTime<Utc>) -> Step {
        step(alarm, &self.situation(now))
    }

    pub(super) fn respond(
        &self,
        alarm: &Alarm,
        who: &str,
        response: Response,
        now: DateTime<Utc>,
    ) -> Result<Step, Refusal> {
        let staff = self.staff.iter().find(|s| s.id == who).unwrap().clone();
        respond(alarm, &self.situation(now), &staff, None, response)
    }
}

pub(super) fn alerted(step: &Step) -> Vec<String> {
    step.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Alert { staff, .. } => Some(staff.id.clone()),
            _ => None,
        })
        .collect()
}

fn cancelled(step: &Step) -> Vec<String> {
    step.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Cancel { staff, .. } => Some(staff.id.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_new_call_alerts_its_section_and_waits_for_the_next_level() {
    let w = World::new();
    let first = w.step(&Alarm::pending(t0()), t0());
    assert!(first.changed);
    assert_eq!(alerted(&first), ["anna"]);
    let alarm = &first.alarm;
    assert_eq!(
        (alarm.status, alarm.level, alarm.levels),
        (AlarmStatus::Alerting, 1, 3)
    );
    assert_eq!(alarm.next_level_at, Some(at(60)));
    assert_eq!(alarm.next_at, Some(at(30)), "Anna's re-alert comes first");
    assert_eq!(alarm.changes, 1);
    // Nothing is due before then: nothing changes.
    let quiet = w.step(alarm, at(10));
    assert!(!quiet.changed && quiet.effects.is_empty());
}

#[test]
fn levels_start_at_their_times_and_add_up() {
    let w = World::new();
    let a = w.step(&Alarm::pending(t0()), t0()).alarm;
    let house = w.step(&a, at(60));
    assert_eq!(house.alarm.level, 2);
    assert!(house.effects.contains(&Effect::Escalated { level: 2 }));
    // Ben (house) is alerted; Anna's re-alert (due at 30 s) comes too.
    assert_eq!(alerted(&house), ["anna", "ben"]);
    let group = w.step(&house.alarm, at(180));
    assert_eq!(group.alarm.level, 3);
    assert!(
        alerted(&group).contains(&"chef".to_string()),
        "a group member off duty"
    );
    assert_eq!(group.alarm.next_level_at, None);
    assert_eq!(group.alarm.level_started_at, vec![t0(), at(60), at(180)]);
}

#[test]
fn re_alerts_stop_at_maxloops() {
    let w = World::new();
    let mut alarm = w.step(&Alarm::pending(t0()), t0()).alarm;
    let mut anna_alerts = 1;
    for s in (30..=55).step_by(5) {
        let next = w.step(&alarm, at(s));
        anna_alerts += alerted(&next).iter().filter(|id| *id == "anna").count();
        alarm = next.alarm;
    }
    // Until the house level at 60 s: alerts at 0 and 30 s.
    assert_eq!(anna_alerts, 2);
    let later = w.step(&alarm, at(60)).alarm;
    let later = w.step(&later, at(120)).alarm;
    assert_eq!(later.recipient("anna").unwrap().alerts, 3, "maxloops 3");
    let much_later = w.step(&later, at(170));
    assert!(!alerted(&much_later).contains(&"anna".to_string()));
}

#[test]
fn someone_back_on_duty_is_alerted_at_once_and_their_count_goes_on() {
    let mut w = World::new();
    let a = w.step(&Alarm::pending(t0()), t0()).alarm;
    let anna_off = |w: &mut World| w.duties.retain(|d| d.staff_id != "anna");
    anna_off(&mut w);
    let off = w.step(&a, at(5));
    assert_eq!(cancelled(&off), ["anna"]);
    // Back 5 s later: alerted now, not at her re-alert time (30 s).
    w.duties.push(duty("anna", &["1"]));
    let back = w.step(&off.alarm, at(10));
    let anna = |step: &Step| {
        step.effects.iter().find_map(|e| match e {
            Effect::Alert {
                staff,
                repeat,
                alert,
                ..
            } if staff.id == "anna" => Some((*repeat, *alert)),
            _ => None,
        })
    };
    assert_eq!(anna(&back), Some((true, 2)), "a re-alert, her second");
    let again = w.step(&back.alarm, at(40));
    assert_eq!(anna(&again), Some((true, 3)), "her interval runs from then");
    // Her maxloops (3) are used up: back once more, alerted once more,
    // and never again after that.
    anna_off(&mut w);
    let off = w.step(&again.alarm, at(45)).alarm;
    w.duties.push(duty("anna", &["1"]));
    let past_maxloops = w.step(&off, at(50));
    assert_eq!(anna(&past_maxloops), Some((true, 4)));
    assert!(past_maxloops.alarm.alerts("anna"));
    let later = w.step(&past_maxloops.alarm, at(170));
    assert_eq!(anna(&later), None);
}

#[test]
fn nobody_in_the_section_falls_through_to_the_house() {
    let mut w = World::new();
    w.call = call(Some("3"));
    let first = w.step(&Alarm::pending(t0()), t0());
    assert_eq!(first.alarm.level, 2, "the section's level was empty");
    assert_eq!(alerted(&first), ["anna", "ben"]);
}

#[test]
fn nobody_at_all_is_unattended_and_looked_at_again() {
    let mut w = World::new();
    w.duties.clear();
    w.staff.retain(|s| s.id != "chef");
    let first = w.step(&Alarm::pending(t0()), t0());
    assert_eq!(first.alarm.status, AlarmStatus::Unattended);
    assert_eq!(first.alarm.level, 3, "every level started at once");
    assert!(first.effects.contains(&Effect::Unattended));
    assert_eq!(first.alarm.next_at, Some(at(UNATTENDED_RECHECK_SECONDS)));
    // Somebody signs on: alerted at the next look.
    w.duties.push(duty("ben", &[]));
    let found = w.step(&first.alarm, at(5));
    assert_eq!(found.alarm.status, AlarmStatus::Alerting);
    assert_eq!(alerted(&found), ["ben"]);
    assert!(found.alarm.was_unattended);
}

#[test]
fn accept_stops_and_cancels_everyone_else() {
    let w = World::new();
    let a = w.step(&Alarm::pending(t0()), t0()).alarm;
    let a = w.step(&a, at(60)).alarm;
    let accept = w.respond(&a, "ben", Response::Accepted, at(70)).unwrap();
    assert_eq!(accept.alarm.status, AlarmStatus::Accepted);
    assert_eq!(accept.alarm.accepted.as_ref().unwrap().staff.id, "ben");
    assert_eq!(cancelled(&accept), ["anna"], "not the one who accepted");
    // No level any more; only the accept's timeout is due (§19).
    assert_eq!(accept.alarm.next_level_at, None);
    assert_eq!(
        accept.alarm.next_at,
        Some(at(70) + Duration::seconds(w.accept_timeout))
    );
    // Again by Ben: nothing new. By Anna: refused, naming Ben.
    let again = w
        .respond(&accept.alarm, "ben", Response::Accepted, at(71))
        .unwrap();
    assert!(!again.changed);
    let refused = w
        .respond(&accept.alarm, "anna", Response::Accepted, at(71))
        .unwrap_err();
    assert_eq!(
        refused,
        Refusal::AlreadyAccepted(StaffRef {
            id: "ben".into(),
            name: "BEN".into()
        })
    );
    // Nothing after a stop.
    let later = w.step(&accept.alarm, at(500));
    assert!(later.effects.is_empty() && !later.changed);
}

#[test]
fn declines_by_everyone_start_the_next_level_at_once() {
    let w = World::new();
    let a = w.step(&Alarm::pending(t0()), t0()).alarm;
    let declined = w.respond(&a, "anna", Response::Declined, at(5)).unwrap();
    assert_eq!(declined.alarm.level, 2, "without waiting for 60 s");
    assert_eq!(alerted(&declined), ["ben"]);
    assert!(declined.effects.contains(&Effect::Declined {
        by: StaffRef {
            id: "anna".into(),
            name: "ANNA".into()
        }
    }));
    assert!(!declined.alarm.alerts("anna"));
    // Anna is never alerted again for this call.
    let later = w.step(&declined.alarm, at(200));
    assert!(!alerted(&later).contains(&"anna".to_string()));
}

#[test]
fn presence_and_close_stop() {
    let mut w = World::new();
    let a = w.step(&Alarm::pending(t0()), t0()).alarm;
    w.presence_at = Some(at(20));
    let present = w.step(&a, at(20));
    assert_eq!(present.alarm.status, AlarmStatus::Present);
    assert_eq!(cancelled(&present), ["anna"]);
    assert_eq!(present.alarm.present_at, Some(at(20)));

    let mut w = World::new();
    w.presence_at = Some(t0() - Duration::seconds(5));
    let before = w.step(&a, at(20));
    assert_ne!(
        before.alarm.status,
        AlarmStatus::Present,
        "a presence before the call does not stop it"
    );

    let mut w = World::new();
    w.call.closed_at = Some(at(40));
    let ended = w.step(&a, at(40));
    assert_eq!(ended.alarm.status, AlarmStatus::Ended);
    assert_eq!(cancelled(&ended), ["anna"]);
    assert_eq!(
        w.respond(&a, "anna", Response::Accepted, at(41)),
        Err(Refusal::CallClosed)
    );
}

#[test]
fn a_type_without_levels_has_no_alarm() {
    let mut w = World::new();
    w.policy = Policy::none();
    let none = w.step(&Alarm::pending(t0()), t0());
    assert!(!none.alarm.is_shown());
    assert!(none.effects.is_empty());
    assert_eq!(none.alarm.next_at, None);
}

#[test]
fn read_is_kept_once_and_changes_nothing_else() {
    let w = World::new();
    let a = w.step(&Alarm::pending(t0()), t0()).alarm;
    let read = w.respond(&a, "anna", Response::Read, at(3)).unwrap();
    assert_eq!(read.alarm.answers.len(), 1);
    assert_eq!(read.alarm.changes, a.changes, "displays see no change");
    assert!(read.alarm.alerts("anna"));
    let again = w
        .respond(&read.alarm, "anna", Response::Read, at(4))
        .unwrap();
    assert!(!again.changed);
}
