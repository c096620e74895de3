//! The receipt figures (DECISIONS §18) of a hand-computed morning: three
//! Notrufe of section "Station 1" (each accepted at once: only the receipts
//! matter here), `RECEIPT_SECONDS` 30.

use super::alarm_tests::{Day, alarm, at, none, report_of, times};
use super::*;
use crate::domain::alarm::{AlarmStatus, Recipient, StaffRef};

/// `name`, first alerted at `alerted`, their first receipt at `received`.
fn recipient(name: &str, alerted: &str, received: Option<&str>) -> Recipient {
    Recipient {
        staff: StaffRef {
            id: format!("id-{name}"),
            name: name.into(),
        },
        level: 1,
        alerts: 1,
        last_alert_at: at(alerted),
        ringing: false,
        alerted_at: Some(at(alerted)),
        received_at: received.map(at),
    }
}

fn morning() -> Vec<Call> {
    let mut day = Day(Vec::new());
    let mut add = |opened: &str, recipients: Vec<Recipient>| {
        let mut alarm = alarm(2, &[opened], Some(opened), false, AlarmStatus::Ended);
        alarm.recipients = recipients;
        day.add(
            "Notruf",
            "R1",
            Some("Station 1"),
            opened,
            Some(opened),
            Some(alarm),
        );
    };
    // c1: Anna's phone confirms after 2 s, Ben's after 40 s (late).
    add(
        "08:00:00",
        vec![
            recipient("Anna", "08:00:00", Some("08:00:02")),
            recipient("Ben", "08:00:00", Some("08:00:40")),
        ],
    );
    // c2: Anna's never; Ben's after 10 s, alerted at the second level (60 s).
    add(
        "09:00:00",
        vec![
            recipient("Anna", "09:00:00", None),
            recipient("Ben", "09:01:00", Some("09:01:10")),
        ],
    );
    // c3: nobody's.
    add("10:00:00", vec![recipient("Anna", "10:00:00", None)]);
    day.0
}

#[test]
fn time_to_first_receipt_and_alerts_never_received() {
    let report = report_of(&morning());
    let total = &report.alarms.total;
    // From the open: c1 2 s, c2 70 s (Ben's); c3 none. Median rank 1, p90 rank 2.
    assert_eq!(total.to_first_receipt, times(2, 2, 70, 70));
    // Anna on c2 and c3.
    assert_eq!(total.never_received, 2);
    let station = &report.alarms.by_section[0];
    assert_eq!(station.stats.to_first_receipt, total.to_first_receipt);
    assert_eq!(station.stats.never_received, 2);
}

#[test]
fn each_person_s_share_of_alerts_received_in_time() {
    let report = report_of(&morning());
    let shares: Vec<(&str, usize, usize, u32)> = report
        .alarms
        .by_person
        .iter()
        .map(|p| {
            (
                p.name.as_str(),
                p.alerted,
                p.received_in_time,
                p.share_percent,
            )
        })
        .collect();
    // Anna: c1 in time, c2 and c3 never: 1 of 3. Ben: c1 late (40 s), c2 in
    // time (10 s after his own first alert): 1 of 2.
    assert_eq!(shares, vec![("Anna", 3, 1, 33), ("Ben", 2, 1, 50)]);
}

#[test]
fn a_day_without_receipts_has_none() {
    let mut calls = morning();
    for call in &mut calls {
        for r in &mut call.alarm.as_mut().unwrap().recipients {
            r.received_at = None;
        }
    }
    let report = report_of(&calls);
    assert_eq!(report.alarms.total.to_first_receipt, none());
    // c1 two, c2 two, c3 one.
    assert_eq!(report.alarms.total.never_received, 5);
}
