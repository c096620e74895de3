//! Faults apart from calls, figures worked out by hand: Wednesday 2026-11-25
//! in Berlin, one Notruf and four faults of two fault types.

use chrono::{Duration, NaiveDate};

use super::alarms::Times;
use super::*;
use crate::domain::call_types::default_call_types;
use crate::domain::wire_time::parse_local;

fn at(time: &str) -> DateTime<Utc> {
    parse_local(&format!("2026-11-25 {time}"), chrono_tz::Europe::Berlin).expect("a wire time")
}

/// The defaults and a second fault type, more urgent than Störung (5).
fn call_types() -> Vec<CallType> {
    let mut types = default_call_types();
    let mut power = types
        .iter()
        .find(|t| t.kind == FAULT_KIND)
        .expect("Störung is a fault")
        .clone();
    power.id = 11;
    power.name = "Netzausfall".into();
    power.priority = 2;
    types.push(power);
    types
}

fn call(
    id: i64,
    event: &str,
    address: &str,
    section: Option<&str>,
    opened: &str,
    closed: Option<&str>,
) -> Call {
    Call {
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
        alarm: None,
    }
}

fn the_day() -> Vec<Call> {
    vec![
        // The one call: closed after 240 s, no presence.
        call(
            1,
            "Notruf",
            "R1",
            Some("Station 1"),
            "08:00:00",
            Some("08:04:00"),
        ),
        // 7200 s: were it a call, the slowest, over the threshold, in hour 8.
        call(
            2,
            "Störung",
            "R9",
            Some("Station 1"),
            "08:30:00",
            Some("10:30:00"),
        ),
        // A presence on the fault's address answers no fault.
        call(3, "Anwesenheit", "R9", None, "08:31:00", None),
        // Still open.
        call(4, "Störung", "R8", None, "12:00:00", None),
        // 600 s.
        call(
            5,
            "Störung",
            "R7",
            Some("Station 2"),
            "13:00:00",
            Some("13:10:00"),
        ),
        // 2700 s, the other fault type.
        call(6, "Netzausfall", "R6", None, "20:00:00", Some("20:45:00")),
    ]
}

fn report(section: Option<&str>) -> Report {
    let day = NaiveDate::from_ymd_opt(2026, 11, 25).unwrap();
    let zone = chrono_tz::Europe::Berlin;
    let options = Options {
        period: Period::days(day, day, zone).unwrap(),
        zone,
        threshold: Duration::minutes(5),
        section: section.map(Into::into),
        receipt_seconds: 30,
    };
    compute(&the_day(), &call_types(), options)
}

fn times(count: usize, median: i64, p90: i64, max: i64) -> Times {
    Times {
        count,
        median_seconds: Some(median),
        p90_seconds: Some(p90),
        max_seconds: Some(max),
    }
}

#[test]
fn faults_are_in_none_of_the_calls_figures() {
    let report = report(None);
    let only_the_notruf = Stats {
        count: 1,
        unanswered: 0,
        median_seconds: Some(240),
        p90_seconds: Some(240),
        max_seconds: Some(240),
        over_threshold: 0,
    };
    assert_eq!(report.total, only_the_notruf);
    let names = |groups: &[Group]| groups.iter().map(|g| g.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&report.by_call_type), [Some("Notruf".to_string())]);
    assert_eq!(names(&report.by_section), [Some("Station 1".to_string())]);
    assert_eq!(report.by_section[0].stats, only_the_notruf);
    let mut hours = [0; 24];
    hours[8] = 1;
    assert_eq!(report.by_hour, hours);
    assert_eq!(report.slowest.len(), 1);
    assert_eq!(report.calls[report.slowest[0]].call.id, 1);
    assert_eq!(report.alarms.total.calls, 1);
    assert_eq!(report.alarms.total.to_close, times(1, 240, 240, 240));
}

#[test]
fn faults_have_their_own_table_per_fault_type() {
    let report = report(None);
    assert_eq!(
        report.faults,
        FaultReport {
            // Closed: 600, 2700, 7200: median rank ⌈1.5⌉ = 2, p90 rank ⌈2.7⌉ = 3.
            total: FaultStats {
                count: 4,
                open: 1,
                to_close: times(3, 2700, 7200, 7200),
            },
            by_fault_type: vec![
                // Priority order: Netzausfall 2, Störung 5.
                FaultGroup {
                    name: "Netzausfall".into(),
                    stats: FaultStats {
                        count: 1,
                        open: 0,
                        to_close: times(1, 2700, 2700, 2700),
                    },
                },
                FaultGroup {
                    name: "Störung".into(),
                    // Closed: 600, 7200: median rank 1, p90 rank ⌈1.8⌉ = 2.
                    stats: FaultStats {
                        count: 3,
                        open: 1,
                        to_close: times(2, 600, 7200, 7200),
                    },
                },
            ],
        }
    );
}

#[test]
fn a_fault_is_listed_with_its_duration_and_no_response() {
    let report = report(None);
    assert_eq!(
        report.calls.len(),
        6,
        "every call, presence and fault is listed"
    );
    let fault = report.calls.iter().find(|c| c.call.id == 2).unwrap();
    assert!(fault.is_fault() && !fault.is_measured());
    assert_eq!(
        (fault.response, fault.answered_by, fault.over_threshold),
        (None, None, false)
    );
    assert_eq!(fault.duration, Some(Duration::seconds(7200)));
}

#[test]
fn a_section_selects_its_faults() {
    let report = report(Some("Station 1"));
    assert_eq!(report.faults.total.count, 1);
    assert_eq!(report.faults.by_fault_type[0].name, "Störung");
    assert_eq!(report.faults.total.to_close, times(1, 7200, 7200, 7200));
}
