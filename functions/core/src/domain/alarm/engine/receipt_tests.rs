//! Receipts and reachability (DECISIONS §18), one example each: the
//! Notruf's seeded policy (section at once, house after 60 s, Leitung after
//! 180 s), Anna on duty for the call's section 1, Ben for section 2.

use super::tests::{World, alerted, at};
use super::*;

/// The world with a receipt deadline of 30 s.
fn world() -> World {
    World {
        receipt_seconds: 30,
        ..World::new()
    }
}

#[test]
fn a_recipient_who_confirms_does_not_start_the_next_level_early() {
    let world = world();
    let opened = world.step(&Alarm::pending(at(0)), at(0)).alarm;
    assert_eq!(opened.level, 1);
    // The first receipt deadline is a due time like a level's.
    assert_eq!(opened.next_at, Some(at(30)));
    let received = receive(&opened, &world.situation(at(5)), "anna", 1).unwrap();
    assert!(received.changed);
    assert_eq!(
        received.effects,
        vec![Effect::Received {
            by: StaffRef {
                id: "anna".into(),
                name: "ANNA".into()
            }
        }]
    );
    let anna = received.alarm.recipient("anna").unwrap();
    assert_eq!(anna.received_at, Some(at(5)));
    // The displays show who got it: a newer version.
    assert_eq!(received.alarm.changes, opened.changes + 1);
    // No deadline left: the re-alert at 30 s and the house at 60 s.
    assert_eq!(received.alarm.next_at, Some(at(30)));
    let later = world.step(&received.alarm, at(31)).alarm;
    assert_eq!(later.level, 1, "the house is not alerted before 60 s");
    assert_eq!(later.status, AlarmStatus::Alerting);
}

#[test]
fn nobody_confirming_starts_the_next_level_at_the_deadline() {
    let world = world();
    let opened = world.step(&Alarm::pending(at(0)), at(0)).alarm;
    let before = world.step(&opened, at(29));
    assert_eq!(before.alarm.level, 1);
    let due = world.step(&opened, at(30));
    assert_eq!(due.alarm.level, 2, "the house at the deadline, not at 60 s");
    assert!(due.effects.contains(&Effect::Escalated { level: 2 }));
    assert_eq!(alerted(&due), vec!["anna", "ben"], "Anna again, Ben first");
}

#[test]
fn a_person_without_any_channel_is_not_reached_at_once() {
    let mut world = world();
    world.without_channel = vec!["anna".to_string()];
    let opened = world.step(&Alarm::pending(at(0)), at(0));
    assert_eq!(opened.alarm.level, 2, "the house at once");
    assert_eq!(alerted(&opened), vec!["anna", "ben"]);
    // Ben has a channel: his deadline is the next due time.
    assert_eq!(opened.alarm.next_at, Some(at(30)));
}

#[test]
fn everyone_not_reached_and_no_level_left_is_unattended_until_a_late_receipt() {
    let world = world();
    let mut alarm = world.step(&Alarm::pending(at(0)), at(0)).alarm;
    for now in [30, 60, 90, 180, 210] {
        alarm = world.step(&alarm, at(now)).alarm;
    }
    assert_eq!(alarm.level, 3);
    assert_eq!(alarm.status, AlarmStatus::Unattended);
    // A late receipt: reached after all, and still alerted.
    let late = receive(&alarm, &world.situation(at(215)), "ben", 1).unwrap();
    assert_eq!(late.alarm.status, AlarmStatus::Alerting);
    assert!(late.alarm.recipient("ben").unwrap().ringing);
}

#[test]
fn a_response_reaches_as_a_receipt_does_and_a_late_accept_still_counts() {
    let world = world();
    let opened = world.step(&Alarm::pending(at(0)), at(0)).alarm;
    let read = world
        .respond(&opened, "anna", Response::Read, at(3))
        .unwrap();
    assert_eq!(world.step(&read.alarm, at(31)).alarm.level, 1);
    // Not reached at 30 s, the house alerted; Anna's accept at 40 s still stops it.
    let unread = world.step(&opened, at(30)).alarm;
    let accepted = world
        .respond(&unread, "anna", Response::Accepted, at(40))
        .unwrap();
    assert_eq!(accepted.alarm.status, AlarmStatus::Accepted);
}

#[test]
fn an_unknown_or_repeated_receipt() {
    let world = world();
    let opened = world.step(&Alarm::pending(at(0)), at(0)).alarm;
    let now = world.situation(at(5));
    assert_eq!(
        receive(&opened, &now, "anna", 2),
        None,
        "no second alert yet"
    );
    assert_eq!(
        receive(&opened, &now, "ben", 1),
        None,
        "Ben was not alerted"
    );
    let first = receive(&opened, &now, "anna", 1).unwrap();
    let again = receive(&first.alarm, &world.situation(at(6)), "anna", 1).unwrap();
    assert!(!again.changed, "a second receipt changes nothing");
    assert!(again.effects.is_empty());
    assert_eq!(
        again.alarm.recipient("anna").unwrap().received_at,
        Some(at(5))
    );
}

#[test]
fn someone_back_on_duty_gets_a_new_receipt_deadline() {
    let mut world = world();
    let opened = world.step(&Alarm::pending(at(0)), at(0)).alarm;
    // Anna signs off at 10 s (her alert cancelled; her section is empty:
    // the house, Ben, at once), Ben's phone confirms, Anna is back at 40 s.
    let duties = world.duties.clone();
    world.duties.retain(|d| d.staff_id != "anna");
    let away = world.step(&opened, at(10)).alarm;
    assert_eq!(away.level, 2);
    let ben = receive(&away, &world.situation(at(15)), "ben", 1)
        .unwrap()
        .alarm;
    world.duties = duties;
    let back = world.step(&ben, at(40));
    let anna = back.alarm.recipient("anna").unwrap();
    assert!(anna.ringing, "alerted again at once");
    assert_eq!(
        anna.alerted_at,
        Some(at(40)),
        "her deadline runs from her return"
    );
    // Her first alert went unconfirmed 40 s ago: no sign of a silent phone.
    assert_eq!(
        back.alarm.level, 2,
        "Leitung not alerted for her missed alert"
    );
    assert_eq!(world.step(&back.alarm, at(69)).alarm.level, 2);
}
