//! The alarm figures of a hand-computed day (Wednesday 2026-11-25, Berlin):
//! each call's alarm written as the engine leaves it, the figures worked out
//! by hand in the comments.

use chrono::{Duration, NaiveDate};

use super::*;
use crate::domain::alarm::{Alarm, AlarmStatus, Answer as AlarmAnswer, Response, StaffRef};
use crate::domain::call_types::default_call_types;
use crate::domain::wire_time::parse_local;

pub(super) fn at(time: &str) -> DateTime<Utc> {
    parse_local(&format!("2026-11-25 {time}"), chrono_tz::Europe::Berlin).expect("a wire time")
}

fn anna() -> StaffRef {
    StaffRef {
        id: "0b7d2c43-4c39-4d4e-9a43-2f0c1a6f6b01".into(),
        name: "Anna".into(),
    }
}

/// An alarm of `levels` levels that started a level at each of `started`,
/// accepted at `accepted`, unattended at some moment or not, now `status`.
pub(super) fn alarm(
    levels: usize,
    started: &[&str],
    accepted: Option<&str>,
    unattended: bool,
    status: AlarmStatus,
) -> Alarm {
    let accepted = accepted.map(|time| AlarmAnswer {
        staff: anna(),
        response: Response::Accepted,
        at: at(time),
    });
    Alarm {
        status,
        level: started.len(),
        levels,
        next_level_at: None,
        next_at: None,
        answers: accepted.iter().cloned().collect(),
        accepted,
        present_at: None,
        not_arrived: Vec::new(),
        recipients: Vec::new(),
        level_started_at: started.iter().map(|t| at(t)).collect(),
        was_unattended: unattended,
        changes: 3,
    }
}

pub(super) struct Day(pub(super) Vec<Call>);

impl Day {
    pub(super) fn add(
        &mut self,
        event: &str,
        address: &str,
        section: Option<&str>,
        opened: &str,
        closed: Option<&str>,
        alarm: Option<Alarm>,
    ) {
        let id = self.0.len() as i64 + 1;
        self.0.push(Call {
            id,
            address: address.into(),
            event: event.into(),
            position: None,
            section: section.map(Into::into),
            attribute: None,
            element_code: String::new(),
            element_name: String::new(),
            opened_at: at(opened),
            closed_at: closed.map(at),
            opened_by: None,
            closed_by: None,
            alarm,
        });
    }
}

const S1: Option<&str> = Some("Station 1");
const S2: Option<&str> = Some("Station 2");

fn calls() -> Vec<Call> {
    use AlarmStatus::*;
    let mut day = Day(Vec::new());
    // c1 Notruf: accepted 40 s, presence 120 s, closed 300 s; level 1 only.
    day.add(
        "Notruf",
        "R1",
        S1,
        "08:00:00",
        Some("08:05:00"),
        Some(alarm(3, &["08:00:00"], Some("08:00:40"), false, Ended)),
    );
    day.add(
        "Anwesenheit",
        "R1",
        None,
        "08:02:00",
        Some("08:05:00"),
        None,
    );
    // c2 Notruf: level 2 after 60 s, accepted 90 s, presence 180 s, closed 600 s.
    day.add(
        "Notruf",
        "R2",
        S1,
        "08:10:00",
        Some("08:20:00"),
        Some(alarm(
            3,
            &["08:10:00", "08:11:00"],
            Some("08:11:30"),
            false,
            Ended,
        )),
    );
    day.add("Anwesenheit", "R2", None, "08:13:00", None, None);
    // c3 Normalruf: nobody on duty, both levels at once, unattended, closed
    // 1800 s without presence.
    day.add(
        "Normalruf",
        "R3",
        S2,
        "09:00:00",
        Some("09:30:00"),
        Some(alarm(2, &["09:00:00", "09:00:00"], None, true, Ended)),
    );
    // c4 Notruf: levels 2 and 3, accepted 240 s, closed 600 s, no presence.
    day.add(
        "Notruf",
        "R4",
        S2,
        "10:00:00",
        Some("10:10:00"),
        Some(alarm(
            3,
            &["10:00:00", "10:01:00", "10:03:00"],
            Some("10:04:00"),
            false,
            Ended,
        )),
    );
    // c5 WC stored before alarms: no alarm; presence 60 s, closed 120 s.
    day.add("WC", "R5", S1, "11:00:00", Some("11:02:00"), None);
    day.add("Anwesenheit", "R5", None, "11:01:00", None, None);
    // c6 Störung (FAULT): accepted 120 s by the technician, closed 1800 s.
    // A fault is no call: in none of the figures below (its own: fault_tests).
    day.add(
        "Störung",
        "R6",
        None,
        "12:00:00",
        Some("12:30:00"),
        Some(alarm(2, &["12:00:00"], Some("12:02:00"), false, Ended)),
    );
    // c7 WC, still open: its presence stopped the alarm (a presence 30 s
    // after it, which the report reads too).
    let mut present = alarm(2, &["13:00:00"], None, false, Present);
    present.present_at = Some(at("13:00:30"));
    day.add("WC", "R7", S1, "13:00:00", None, Some(present));
    day.add("Anwesenheit", "R7", None, "13:00:30", None, None);
    day.0.sort_by_key(|c| (c.opened_at, c.id));
    day.0
}

pub(super) fn report_of(calls: &[Call]) -> Report {
    let day = NaiveDate::from_ymd_opt(2026, 11, 25).unwrap();
    let zone = chrono_tz::Europe::Berlin;
    let options = Options {
        period: Period::days(day, day, zone).unwrap(),
        zone,
        threshold: Duration::minutes(5),
        section: None,
        receipt_seconds: 30,
    };
    compute(calls, &default_call_types(), options)
}

fn report() -> Report {
    report_of(&calls())
}

pub(super) fn times(count: usize, median: i64, p90: i64, max: i64) -> alarms::Times {
    alarms::Times {
        count,
        median_seconds: Some(median),
        p90_seconds: Some(p90),
        max_seconds: Some(max),
    }
}

pub(super) fn none() -> alarms::Times {
    alarms::Times::default()
}

fn levels(counts: &[(usize, usize)]) -> Vec<alarms::Escalation> {
    counts
        .iter()
        .map(|&(level, calls)| alarms::Escalation { level, calls })
        .collect()
}

#[test]
fn the_day_in_total() {
    let report = report();
    assert_eq!(
        report.alarms.total,
        AlarmStats {
            calls: 6,
            alarmed: 5,
            // 40, 90, 240 (not the fault's 120): median rank 2, p90 rank ⌈2.7⌉ = 3.
            to_accept: times(3, 90, 240, 240),
            // 30, 60, 120, 180: median rank 2, p90 rank 4.
            to_presence: times(4, 60, 180, 180),
            // 120, 300, 600, 600, 1800 (c7 is open; not the fault's 1800):
            // rank ⌈2.5⌉ = 3 and ⌈4.5⌉ = 5.
            to_close: times(5, 600, 1800, 1800),
            // Level 2: c2, c3, c4; level 3: c4.
            escalations: levels(&[(2, 3), (3, 1)]),
            unattended: 1,
            // No receipts kept that day (alarms before §18).
            to_first_receipt: none(),
            never_received: 0,
        }
    );
}

#[test]
fn per_call_type_and_per_section() {
    let report = report();
    let names = |groups: &[AlarmGroup]| groups.iter().map(|g| g.name.clone()).collect::<Vec<_>>();
    // The groups and their order are those of the response times.
    assert_eq!(
        names(&report.alarms.by_call_type),
        report
            .by_call_type
            .iter()
            .map(|g| g.name.clone())
            .collect::<Vec<_>>()
    );
    assert_eq!(
        names(&report.alarms.by_section),
        report
            .by_section
            .iter()
            .map(|g| g.name.clone())
            .collect::<Vec<_>>()
    );
    let notruf = &report.alarms.by_call_type[0];
    assert_eq!(notruf.name.as_deref(), Some("Notruf"));
    assert_eq!(
        notruf.stats,
        AlarmStats {
            calls: 3,
            alarmed: 3,
            to_accept: times(3, 90, 240, 240),
            to_presence: times(2, 120, 180, 180),
            to_close: times(3, 600, 600, 600),
            escalations: levels(&[(2, 2), (3, 1)]),
            unattended: 0,
            // No receipts kept that day (alarms before §18).
            to_first_receipt: none(),
            never_received: 0,
        }
    );
    let wc = &report.alarms.by_call_type[1];
    assert_eq!(wc.name.as_deref(), Some("WC"));
    assert_eq!(
        wc.stats,
        AlarmStats {
            calls: 2,
            alarmed: 1,
            to_accept: none(),
            to_presence: times(2, 30, 60, 60),
            to_close: times(1, 120, 120, 120),
            escalations: levels(&[(2, 0)]),
            unattended: 0,
            // No receipts kept that day (alarms before §18).
            to_first_receipt: none(),
            never_received: 0,
        }
    );
    let normalruf = &report.alarms.by_call_type[2].stats;
    assert_eq!(
        (normalruf.unattended, normalruf.escalations.clone()),
        (1, levels(&[(2, 1)]))
    );
    // The fault is no call: no group of its own, as in the response times.
    assert_eq!(report.alarms.by_call_type.len(), 3);

    let station_2 = &report.alarms.by_section[1];
    assert_eq!(station_2.name.as_deref(), Some("Station 2"));
    assert_eq!(
        station_2.stats,
        AlarmStats {
            calls: 2,
            alarmed: 2,
            to_accept: times(1, 240, 240, 240),
            to_presence: none(),
            to_close: times(2, 600, 1800, 1800),
            escalations: levels(&[(2, 2), (3, 1)]),
            unattended: 1,
            // No receipts kept that day (alarms before §18).
            to_first_receipt: none(),
            never_received: 0,
        }
    );
    // The fault was the only one without a section: no such group.
    assert_eq!(report.alarms.by_section.len(), 2);
}

#[test]
fn each_call_keeps_its_own_figures() {
    let report = report();
    let call = |address: &str| {
        report
            .calls
            .iter()
            .find(|c| c.call.address == address && c.is_measured())
            .unwrap()
    };
    let c2 = call("R2");
    assert_eq!(c2.to_presence, Some(Duration::seconds(180)));
    let c2_alarm = c2.alarm.as_ref().unwrap();
    assert_eq!(
        (c2_alarm.levels_started, c2_alarm.to_accept, c2_alarm.state),
        (2, Some(Duration::seconds(90)), AlarmStatus::Ended)
    );
    assert_eq!(call("R5").alarm, None, "stored before alarms");
    assert_eq!(call("R3").to_presence, None);
    assert!(call("R3").alarm.as_ref().unwrap().unattended);
    let presence = report
        .calls
        .iter()
        .find(|c| c.kind == PRESENCE_KIND)
        .unwrap();
    assert_eq!((presence.to_presence, &presence.alarm), (None, &None));
    // The fault keeps its alarm for the audit export, and has no response.
    let fault = report.calls.iter().find(|c| c.is_fault()).unwrap();
    assert_eq!(
        fault.alarm.as_ref().unwrap().to_accept,
        Some(Duration::seconds(120))
    );
    assert_eq!((fault.response, fault.to_presence), (None, None));
}

#[test]
fn an_alarm_stopped_by_a_presence_outside_the_read_span_still_has_its_arrival() {
    let mut calls = calls();
    calls.retain(|c| !(c.event == "Anwesenheit" && c.address == "R7"));
    let report = report_of(&calls);
    let c7 = report
        .calls
        .iter()
        .find(|c| c.call.address == "R7")
        .unwrap();
    assert_eq!(c7.to_presence, Some(Duration::seconds(30)));
    assert_eq!(c7.response, None, "the response time reads presences only");
}

#[test]
fn an_accept_that_expired_without_an_arrival_is_no_time_to_accept() {
    let opened = at("08:00:00");
    // Anna accepted at 08:01 and did not come (DECISIONS §19): the alarm
    // resumed, nobody accepted since.
    let mut expired = alarm(
        2,
        &["08:00:00", "08:03:00"],
        Some("08:01:00"),
        false,
        AlarmStatus::Alerting,
    );
    expired.not_arrived.push(expired.accepted.take().unwrap());
    let figures = alarms::CallAlarm::of(Some(&expired), opened).unwrap();
    assert_eq!(figures.to_accept, None);
    // Ben's accept after it is the one that counts.
    expired.accepted = Some(AlarmAnswer {
        staff: StaffRef {
            id: "b".into(),
            name: "Ben".into(),
        },
        response: Response::Accepted,
        at: at("08:04:00"),
    });
    let figures = alarms::CallAlarm::of(Some(&expired), opened).unwrap();
    assert_eq!(figures.to_accept, Some(Duration::seconds(240)));
}
