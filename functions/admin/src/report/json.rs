//! The JSON form: the figures of the HTML report and every call record of
//! the CSV export, for scripts and other tools.

use serde::Serialize;

use nurse_call_core::{
    report::{AlarmReport, FaultReport, Group, Report, ReportedSilence, Stats},
    wire_time::format_local,
};

use super::Days;
use super::rows::CallRow;

#[derive(Serialize)]
struct Document<'a> {
    period: PeriodRecord,
    threshold_seconds: i64,
    section: Option<&'a str>,
    total: &'a Stats,
    by_call_type: &'a [Group],
    by_section: &'a [Group],
    /// Calls opened in each local hour of day, 0 to 23.
    by_hour: &'a [usize; 24],
    /// Time to accept, to presence, to close; escalations; unattended
    /// calls (DECISIONS §14), in the groups of `by_call_type` and `by_section`.
    alarms: &'a AlarmReport,
    /// Faults (call types of `type` `FAULT`), in none of the figures above:
    /// count, still open, time to close, per fault type.
    faults: &'a FaultReport,
    /// The central systems' silences (DECISIONS §19), oldest first.
    silences: Vec<SilenceRow<'a>>,
    slowest: Vec<CallRow<'a>>,
    calls: Vec<CallRow<'a>>,
}

/// A silence with its times as local wire times.
#[derive(Serialize)]
struct SilenceRow<'a> {
    consumer: &'a str,
    name: &'a str,
    since: String,
    ended_at: Option<String>,
    length_seconds: Option<i64>,
}

impl<'a> SilenceRow<'a> {
    fn new(silence: &'a ReportedSilence, zone: chrono_tz::Tz) -> Self {
        SilenceRow {
            consumer: &silence.consumer,
            name: &silence.name,
            since: format_local(silence.since, zone),
            ended_at: silence.ended_at.map(|at| format_local(at, zone)),
            length_seconds: silence.length_seconds,
        }
    }
}

#[derive(Serialize)]
struct PeriodRecord {
    first_day: String,
    last_day: String,
    time_zone: String,
    /// The first and the first-after instants, as local wire times.
    from: String,
    to: String,
}

pub(super) fn render(report: &Report, days: &Days) -> String {
    let zone = report.options.zone;
    let document = Document {
        period: PeriodRecord {
            first_day: days.first.to_string(),
            last_day: days.last.to_string(),
            time_zone: zone.name().to_string(),
            from: format_local(report.options.period.from, zone),
            to: format_local(report.options.period.to, zone),
        },
        threshold_seconds: report.options.threshold.num_seconds(),
        section: report.options.section.as_deref(),
        total: &report.total,
        by_call_type: &report.by_call_type,
        by_section: &report.by_section,
        by_hour: &report.by_hour,
        alarms: &report.alarms,
        faults: &report.faults,
        silences: report
            .silences
            .iter()
            .map(|s| SilenceRow::new(s, zone))
            .collect(),
        slowest: report
            .slowest
            .iter()
            .map(|&i| CallRow::new(&report.calls[i], zone))
            .collect(),
        calls: report.calls.iter().map(|c| CallRow::new(c, zone)).collect(),
    };
    let mut text = serde_json::to_string_pretty(&document).expect("report records serialise");
    text.push('\n');
    text
}
