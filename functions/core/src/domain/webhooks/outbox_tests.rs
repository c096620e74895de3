//! Which events a write's audit lines make, and what they keep.

use chrono::{DateTime, Duration, TimeZone, Utc};

use super::*;
use crate::domain::alarm::state::StaffRef;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 26, 8, 0, 0).unwrap()
}

/// Event ids in the order they are asked for: `msg_1`, `msg_2`, …
fn ids() -> impl FnMut() -> String {
    let mut next = 0;
    move || {
        next += 1;
        format!("msg_{next}")
    }
}

fn call() -> Call {
    Call {
        id: 7,
        address: "Zimmer.12".into(),
        event: "Notruf".into(),
        position: Some("Bett 1".into()),
        section: Some("Wohnbereich 1".into()),
        attribute: None,
        element_code: "R12".into(),
        element_name: "Zimmer 12".into(),
        opened_at: t0(),
        closed_at: None,
        opened_by: Some("consumer".into()),
        closed_by: None,
        alarm: Some(Alarm {
            level: 1,
            levels: 3,
            changes: 1,
            ..Alarm::pending(t0())
        }),
    }
}

fn person(id: &str) -> StaffRef {
    StaffRef {
        id: id.into(),
        name: id.to_uppercase(),
    }
}

fn line(kind: &str, level: usize, staff: Option<&str>, detail: Option<&str>) -> AuditEvent {
    AuditEvent {
        at: t0() + Duration::seconds(60),
        kind: kind.into(),
        level,
        staff: staff.map(person),
        detail: detail.map(str::to_string),
    }
}

fn kinds(events: &[OutboxEvent]) -> Vec<&str> {
    events.iter().map(|e| e.kind.as_str()).collect()
}

#[test]
fn an_escalation_is_one_escalated_and_one_alert_naming_every_new_recipient() {
    let audit = [
        line("escalated", 2, None, None),
        line("alert", 2, Some("anna"), None),
        line("alert", 2, Some("ben"), None),
        line("realert", 1, Some("carla"), None),
    ];
    let events = events_of_write(&Scope::installation(), &call(), &audit, ids());
    assert_eq!(
        kinds(&events),
        ["call.escalated", "call.alert", "call.alert"]
    );
    assert_eq!(events[0].facts.level, Some(2));
    assert!(events[0].facts.staff.is_empty());
    assert_eq!(events[1].facts.level, Some(2));
    assert!(!events[1].facts.repeat);
    assert_eq!(events[1].facts.staff, [person("anna"), person("ben")]);
    assert!(events[2].facts.repeat, "carla's is a re-alert of level 1");
    assert_eq!(events[2].facts.staff, [person("carla")]);
    for event in &events {
        assert_eq!(event.call_id, Some(7));
        assert_eq!(event.section.as_deref(), Some("Wohnbereich 1"));
        assert_eq!(event.at, t0() + Duration::seconds(60));
        assert!(event.id.starts_with("msg_"));
    }
    let ids: std::collections::HashSet<_> = events.iter().map(|e| &e.id).collect();
    assert_eq!(ids.len(), 3, "every event has an id of its own");
}

#[test]
fn an_accept_is_the_accept_then_one_cancel_for_everyone_else() {
    let audit = [
        line("accepted", 0, Some("anna"), None),
        line("cancel", 0, Some("ben"), Some("accepted by anna")),
        line("cancel", 0, Some("carla"), Some("accepted by anna")),
    ];
    let events = events_of_write(&Scope::installation(), &call(), &audit, ids());
    assert_eq!(kinds(&events), ["call.accepted", "call.cancelled"]);
    assert_eq!(events[0].facts.staff, [person("anna")]);
    assert_eq!(events[0].facts.level, None);
    assert_eq!(events[1].facts.staff, [person("ben"), person("carla")]);
    assert_eq!(events[1].facts.reason.as_deref(), Some("accepted by anna"));
}

#[test]
fn two_declines_are_two_events() {
    let audit = [
        line("declined", 0, Some("anna"), None),
        line("declined", 0, Some("ben"), None),
    ];
    let events = events_of_write(&Scope::installation(), &call(), &audit, ids());
    assert_eq!(kinds(&events), ["call.declined", "call.declined"]);
    assert_eq!(events[1].facts.staff, [person("ben")]);
}

#[test]
fn what_only_displays_show_makes_no_event() {
    let audit = [
        line("read", 0, Some("anna"), None),
        line("unattended", 0, None, None),
        line("present", 0, None, None),
        line("ended", 0, None, None),
    ];
    assert!(events_of_write(&Scope::installation(), &call(), &audit, ids()).is_empty());
}

#[test]
fn a_sandbox_visitors_calls_go_nowhere() {
    let visitor = Scope::consumer("6f1c1f6e-3d2a-4b8e-9a57-0c1d2e3f4a5b");
    let audit = [line("alert", 1, Some("anna"), None)];
    assert!(events_of_write(&visitor, &call(), &audit, ids()).is_empty());
    let mut closed_call = call();
    closed_call.closed_at = Some(t0() + Duration::minutes(3));
    assert!(closed(&visitor, &closed_call, ids()).is_none());
}

#[test]
fn a_close_of_a_call_with_an_alarm_is_call_closed_at_its_close() {
    let mut closed_call = call();
    let closed_at = t0() + Duration::minutes(3);
    closed_call.closed_at = Some(closed_at);
    let event = closed(&Scope::installation(), &closed_call, ids()).expect("an event");
    assert_eq!(event.kind, EventType::CallClosed);
    assert_eq!(event.at, closed_at);
    assert_eq!(
        event.facts.call.as_ref().unwrap().closed_at,
        Some(closed_at)
    );

    // A presence's alarm alerts nobody, one closed before its first step
    // was never sent: no event.
    let mut presence = closed_call.clone();
    presence.alarm = Some(Alarm {
        next_at: None,
        changes: 1,
        ..Alarm::pending(t0())
    });
    assert!(closed(&Scope::installation(), &presence, ids()).is_none());
    presence.alarm = Some(Alarm::pending(t0()));
    assert!(closed(&Scope::installation(), &presence, ids()).is_none());
    // Not closed: no event.
    assert!(closed(&Scope::installation(), &call(), ids()).is_none());
}

#[test]
fn the_facts_read_back_from_their_json() {
    let audit = [
        line("alert", 1, Some("anna"), None),
        line("cancel", 0, Some("ben"), Some("present")),
    ];
    for event in events_of_write(&Scope::installation(), &call(), &audit, ids()) {
        let json = event.facts.to_json();
        assert_eq!(Facts::from_json(&json), Ok(event.facts.clone()));
        assert_eq!(
            event.facts.call.as_ref().unwrap().to_call().address,
            "Zimmer.12"
        );
    }
}

#[test]
fn an_alert_keeps_which_alert_of_each_person_it_is() {
    let audit = [
        line("realert", 1, Some("anna"), Some("alert 3")),
        line("realert", 1, Some("ben"), Some("alert 2")),
        line("cancel", 0, Some("carla"), Some("off duty")),
    ];
    let events = events_of_write(&Scope::installation(), &call(), &audit, ids());
    assert_eq!(kinds(&events), ["call.alert", "call.cancelled"]);
    let alert = &events[0].facts;
    assert_eq!(alert.alert_of("anna"), Some(3));
    assert_eq!(alert.alert_of("ben"), Some(2));
    assert_eq!(alert.alert_of("carla"), None, "not alerted by it");
    assert_eq!(
        events[1].facts.alert_of("carla"),
        None,
        "a cancel alerts nobody"
    );
    let kept = Facts::from_json(&alert.to_json()).unwrap();
    assert_eq!(kept.alert_of("anna"), Some(3), "kept in the outbox");
}

#[test]
fn an_alert_kept_before_the_numbers_takes_the_count_written_with_it() {
    let mut written = call();
    let alarm = written.alarm.as_mut().unwrap();
    alarm.recipients.push(crate::domain::alarm::Recipient {
        staff: person("anna"),
        level: 1,
        alerts: 2,
        last_alert_at: t0(),
        ringing: true,
        alerted_at: Some(t0()),
        received_at: None,
    });
    let audit = [line("realert", 1, Some("anna"), None)];
    let mut facts = events_of_write(&Scope::installation(), &written, &audit, ids())
        .remove(0)
        .facts;
    facts.alerts.clear();
    let old = Facts::from_json(&facts.to_json()).unwrap();
    assert!(old.alerts.is_empty());
    assert_eq!(old.alert_of("anna"), Some(2));
}
