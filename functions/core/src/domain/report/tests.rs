//! Hand-computed figures: a weekend in Berlin whose Sunday is the spring
//! clock change (2026-03-29, 02:00 CET → 03:00 CEST, a 23-hour day).

use chrono::{Duration, NaiveDate};

use super::*;
use crate::domain::call_types::default_call_types;
use crate::domain::wire_time::{parse_local, to_stored};

fn berlin() -> Tz {
    chrono_tz::Europe::Berlin
}

fn at(local: &str) -> DateTime<Utc> {
    parse_local(local, berlin()).expect("a wire time")
}

fn date(text: &str) -> NaiveDate {
    text.parse().unwrap()
}

struct Calls(Vec<Call>);

impl Calls {
    fn add(
        &mut self,
        event: &str,
        address: &str,
        section: Option<&str>,
        opened: &str,
        closed: Option<&str>,
    ) -> i64 {
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
            alarm: None,
        });
        id
    }

    fn presence(&mut self, address: &str, opened: &str) -> i64 {
        self.add("Anwesenheit", address, None, opened, None)
    }
}

const S1: Option<&str> = Some("Station 1");
const S2: Option<&str> = Some("Station 2");

/// The weekend's calls, ordered by opening as the stores return them; the
/// returned ids are those of the measured calls c1 … c10 (see each line).
fn weekend() -> (Vec<Call>, [i64; 10]) {
    let mut calls = Calls(Vec::new());
    let mut c = [0; 10];
    // Before the period: not reported.
    calls.add(
        "Normalruf",
        "R1",
        S1,
        "2026-03-27 23:00:00",
        Some("2026-03-27 23:10:00"),
    );
    // c1: presence after 3 min, before the close: 180 s.
    c[0] = calls.add(
        "Normalruf",
        "R1",
        S1,
        "2026-03-28 10:00:00",
        Some("2026-03-28 10:10:00"),
    );
    // c2: no presence: the close, 270 s.
    c[1] = calls.add(
        "WC",
        "R2",
        S1,
        "2026-03-28 10:00:00",
        Some("2026-03-28 10:04:30"),
    );
    calls.presence("R1", "2026-03-28 10:03:00");
    // c3: the presence is on another address: the close, 420 s.
    c[2] = calls.add(
        "Notruf",
        "R3",
        S1,
        "2026-03-28 11:00:00",
        Some("2026-03-28 11:07:00"),
    );
    calls.presence("R4", "2026-03-28 11:01:00");
    // c10: a presence at the very second of the call: 0 s.
    c[9] = calls.add(
        "Geräteruf",
        "R7",
        None,
        "2026-03-28 14:00:00",
        Some("2026-03-28 14:01:00"),
    );
    calls.presence("R7", "2026-03-28 14:00:00");
    // c4: across midnight: 30 min.
    c[3] = calls.add(
        "Normalruf",
        "R1",
        S2,
        "2026-03-28 23:50:00",
        Some("2026-03-29 00:20:00"),
    );
    // c5: across the clock change, 01:30 CET to 03:30 CEST: one real hour.
    c[4] = calls.add(
        "Normalruf",
        "R2",
        S2,
        "2026-03-29 01:30:00",
        Some("2026-03-29 03:30:00"),
    );
    // c6: the presence comes after the close: the close, 300 s, exactly the
    // threshold, so not over it.
    c[5] = calls.add(
        "Normalruf",
        "R3",
        S2,
        "2026-03-29 12:00:00",
        Some("2026-03-29 12:05:00"),
    );
    calls.presence("R3", "2026-03-29 12:06:00");
    // c7: still open, no presence: unanswered.
    c[6] = calls.add("WC", "R5", None, "2026-03-29 20:00:00", None);
    // c8: opened a minute before the period ends, answered by a presence
    // after it (read through the lookahead): 120 s.
    c[7] = calls.add(
        "Notruf",
        "R6",
        None,
        "2026-03-29 23:59:00",
        Some("2026-03-30 00:02:00"),
    );
    calls.presence("R6", "2026-03-30 00:01:00");
    // After the period: not reported (c9 is unused).
    calls.add("Notruf", "R6", None, "2026-03-30 00:05:00", None);
    calls.0.sort_by_key(|c| (c.opened_at, c.id));
    (calls.0, c)
}

fn options(section: Option<&str>) -> Options {
    Options {
        period: Period::days(date("2026-03-28"), date("2026-03-29"), berlin()).unwrap(),
        zone: berlin(),
        threshold: Duration::minutes(5),
        section: section.map(Into::into),
        receipt_seconds: 30,
    }
}

fn stats(
    count: usize,
    unanswered: usize,
    median: i64,
    p90: i64,
    max: i64,
    over_threshold: usize,
) -> Stats {
    Stats {
        count,
        unanswered,
        median_seconds: Some(median),
        p90_seconds: Some(p90),
        max_seconds: Some(max),
        over_threshold,
    }
}

fn group(name: Option<&str>, stats: Stats) -> Group {
    Group {
        name: name.map(Into::into),
        stats,
    }
}

fn reported(report: &Report, id: i64) -> &ReportedCall {
    report
        .calls
        .iter()
        .find(|c| c.call.id == id)
        .unwrap_or_else(|| panic!("call {id} is not in the report"))
}

#[test]
fn the_period_is_local_days_with_their_real_hours() {
    let period = options(None).period;
    assert_eq!(to_stored(period.from), "2026-03-27T23:00:00Z");
    assert_eq!(to_stored(period.to), "2026-03-29T22:00:00Z");
    assert_eq!(period.to - period.from, Duration::hours(24 + 23));
    let autumn = Period::days(date("2026-10-25"), date("2026-10-25"), berlin()).unwrap();
    assert_eq!(autumn.to - autumn.from, Duration::hours(25));
    assert!(Period::days(date("2026-03-02"), date("2026-03-01"), berlin()).is_none());
}

#[test]
fn response_times_and_durations_per_call() {
    let (calls, c) = weekend();
    let report = compute(&calls, &default_call_types(), options(None));
    let response = |i: usize| reported(&report, c[i]).response.map(|r| r.num_seconds());
    let answer = |i: usize| reported(&report, c[i]).answered_by;
    let duration = |i: usize| reported(&report, c[i]).duration.map(|d| d.num_seconds());

    assert_eq!(
        (response(0), answer(0)),
        (Some(180), Some(Answer::Presence))
    );
    assert_eq!(duration(0), Some(600));
    assert_eq!((response(1), answer(1)), (Some(270), Some(Answer::Close)));
    assert_eq!((response(2), answer(2)), (Some(420), Some(Answer::Close)));
    assert_eq!((response(3), duration(3)), (Some(1800), Some(1800)));
    assert_eq!((response(4), duration(4)), (Some(3600), Some(3600)));
    assert_eq!((response(5), answer(5)), (Some(300), Some(Answer::Close)));
    assert_eq!((response(6), answer(6), duration(6)), (None, None, None));
    assert_eq!(
        (response(7), answer(7)),
        (Some(120), Some(Answer::Presence))
    );
    assert_eq!((response(9), answer(9)), (Some(0), Some(Answer::Presence)));

    let over: Vec<i64> = report
        .calls
        .iter()
        .filter(|c| c.over_threshold)
        .map(|c| c.call.id)
        .collect();
    assert_eq!(over, [c[2], c[3], c[4]], "strictly over 5 minutes");
}

#[test]
fn the_period_lists_its_calls_and_presences_in_opening_order() {
    let (calls, _) = weekend();
    let report = compute(&calls, &default_call_types(), options(None));
    let listed: Vec<(String, String)> = report
        .calls
        .iter()
        .map(|c| {
            (
                c.call.event.clone(),
                crate::domain::wire_time::format_local(c.call.opened_at, berlin()),
            )
        })
        .collect();
    let expected = [
        ("Normalruf", "2026-03-28 10:00:00"),
        ("WC", "2026-03-28 10:00:00"),
        ("Anwesenheit", "2026-03-28 10:03:00"),
        ("Notruf", "2026-03-28 11:00:00"),
        ("Anwesenheit", "2026-03-28 11:01:00"),
        ("Geräteruf", "2026-03-28 14:00:00"),
        ("Anwesenheit", "2026-03-28 14:00:00"),
        ("Normalruf", "2026-03-28 23:50:00"),
        ("Normalruf", "2026-03-29 01:30:00"),
        ("Normalruf", "2026-03-29 12:00:00"),
        ("Anwesenheit", "2026-03-29 12:06:00"),
        ("WC", "2026-03-29 20:00:00"),
        ("Notruf", "2026-03-29 23:59:00"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(e, t)| (e.to_string(), t.to_string()))
        .collect();
    assert_eq!(listed, expected);
    let presence = report
        .calls
        .iter()
        .find(|c| c.call.event == "Anwesenheit")
        .unwrap();
    assert_eq!(
        (presence.kind.as_str(), presence.response),
        (PRESENCE_KIND, None)
    );
}

#[test]
fn totals_per_call_type_and_per_section() {
    let (calls, _) = weekend();
    let report = compute(&calls, &default_call_types(), options(None));
    // Answered: 0, 120, 180, 270, 300, 420, 1800, 3600 (n = 8); median rank
    // ⌈4⌉ = 4 → 270, p90 rank ⌈7.2⌉ = 8 → 3600; one unanswered.
    assert_eq!(report.total, stats(9, 1, 270, 3600, 3600, 3));
    assert_eq!(
        report.by_call_type,
        [
            // Priority order: Notruf 1, WC 2, Normalruf 3, Geräteruf 4.
            group(Some("Notruf"), stats(2, 0, 120, 420, 420, 1)),
            group(Some("WC"), stats(2, 1, 270, 270, 270, 0)),
            group(Some("Normalruf"), stats(4, 0, 300, 3600, 3600, 2)),
            group(Some("Geräteruf"), stats(1, 0, 0, 0, 0, 0)),
        ]
    );
    assert_eq!(
        report.by_section,
        [
            group(Some("Station 1"), stats(3, 0, 270, 420, 420, 1)),
            group(Some("Station 2"), stats(3, 0, 1800, 3600, 3600, 2)),
            group(None, stats(3, 1, 0, 120, 120, 0)),
        ]
    );
}

#[test]
fn calls_by_local_hour_of_day() {
    let (calls, _) = weekend();
    let report = compute(&calls, &default_call_types(), options(None));
    let mut expected = [0; 24];
    for (hour, count) in [(1, 1), (10, 2), (11, 1), (12, 1), (14, 1), (20, 1), (23, 2)] {
        expected[hour] = count;
    }
    assert_eq!(report.by_hour, expected);
}

#[test]
fn the_slowest_answered_calls_first() {
    let (calls, c) = weekend();
    let report = compute(&calls, &default_call_types(), options(None));
    let slowest: Vec<i64> = report
        .slowest
        .iter()
        .map(|&i| report.calls[i].call.id)
        .collect();
    assert_eq!(slowest, [c[4], c[3], c[2], c[5], c[1], c[0], c[7], c[9]]);
}

#[test]
fn one_section_is_answered_by_presences_of_any_section() {
    let (calls, c) = weekend();
    let report = compute(&calls, &default_call_types(), options(Some("Station 1")));
    let ids: Vec<i64> = report.calls.iter().map(|r| r.call.id).collect();
    assert_eq!(ids, [c[0], c[1], c[2]], "the presences have no section");
    assert_eq!(reported(&report, c[0]).answered_by, Some(Answer::Presence));
    assert_eq!(report.total, stats(3, 0, 270, 420, 420, 1));
    assert_eq!(
        report.by_section,
        [group(Some("Station 1"), stats(3, 0, 270, 420, 420, 1))]
    );
}

#[test]
fn an_empty_period_has_no_figures() {
    let report = compute(&[], &default_call_types(), options(None));
    assert_eq!(report.total, Stats::default());
    assert!(report.by_call_type.is_empty() && report.slowest.is_empty());
}

#[test]
fn nearest_rank_percentiles() {
    let ten: Vec<i64> = (1..=10).collect();
    assert_eq!(nearest_rank(&ten, 50), Some(5));
    assert_eq!(nearest_rank(&ten, 90), Some(9));
    assert_eq!(nearest_rank(&ten, 100), Some(10));
    assert_eq!(nearest_rank(&[7], 90), Some(7));
    assert_eq!(nearest_rank(&[1, 2, 3], 50), Some(2));
    assert_eq!(nearest_rank(&[], 50), None);
}
