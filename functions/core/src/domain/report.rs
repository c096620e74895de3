//! The quality report (DECISIONS §13): how fast calls were answered, per call
//! type, per section and by hour of day. Pure: the admin command reads the
//! calls and call types and renders the result; the definitions live here
//! once (docs/report.md states them for people).
//!
//! - **Response time**: from a call's `opened_at` to the first presence (a
//!   call of a type whose `type` is `PRESENCE`) opened on the same address at
//!   or after it and before its close; without such a presence, to its close.
//!   A call still open with no presence has none yet (*unanswered*).
//! - **Duration**: `opened_at` to `closed_at` (none while open).
//! - Both are differences of instants, so a night with a clock change counts
//!   its real hours; days and hours of day are the installation's local ones.
//! - **Median and p90** are nearest-rank percentiles: of `n` sorted values,
//!   the p-th percentile is the value at rank ⌈p·n/100⌉ (1-based), always
//!   a response time that happened (the median of 4 values is the 2nd).
//! - **Over the threshold**: a response time strictly longer than it.
//! - Presences are the answers, not calls: they are listed, not measured.
//! - Faults (a call type whose `type` is `FAULT`, e.g. Störung) are no
//!   request for care: listed, not measured as calls, counted apart with
//!   their time to close ([`faults`]).
//! - The alarm figures (time to accept, to presence, to close, escalations,
//!   unattended calls, time to first receipt, alerts never received) are
//!   defined in [`alarms`]; each person's receipts in [`receipts`].

use std::collections::HashMap;

use chrono::{DateTime, Duration, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;
use serde::Serialize;

use crate::domain::model::{Call, CallType};

pub mod alarms;
pub mod faults;
mod groups;
pub mod receipts;
pub mod silences;

pub use alarms::{AlarmGroup, AlarmReport, AlarmStats, CallAlarm, RecipientFigures};
pub use faults::{FaultGroup, FaultReport, FaultStats};
use groups::{Groups, slowest_answered};
pub use receipts::PersonReceipts;
pub use silences::{ReportedSilence, silences_of};

pub use crate::domain::model::{FAULT_KIND, PRESENCE_KIND};

/// How far past the window's end the report reads calls, to find the
/// presence that answered a call opened shortly before the end. A call
/// neither answered by a presence nor closed within this time after the
/// window is measured to its close (or stays unanswered): bounded reading
/// over exactness for calls left open for more than a day.
pub const PRESENCE_LOOKAHEAD_HOURS: i64 = 24;

/// How many of the slowest calls the report lists.
pub const SLOWEST_LISTED: usize = 10;

/// What the report covers.
#[derive(Debug, Clone)]
pub struct Period {
    /// First instant of the first day (local midnight).
    pub from: DateTime<Utc>,
    /// First instant after the last day (local midnight of the day after).
    pub to: DateTime<Utc>,
}

impl Period {
    /// The local days `first` to `last`, both included, in `zone`.
    pub fn days(first: NaiveDate, last: NaiveDate, zone: Tz) -> Option<Self> {
        let from = start_of_day(first, zone)?;
        let to = start_of_day(last.succ_opt()?, zone)?;
        (from < to).then_some(Period { from, to })
    }

    /// The span the report must read: the period and the presence lookahead.
    pub fn read_until(&self) -> DateTime<Utc> {
        self.to + Duration::hours(PRESENCE_LOOKAHEAD_HOURS)
    }
}

/// The first instant of local day `day`. Where a clock change skips midnight
/// (some zones change at 00:00), the day starts when the clock resumes.
pub fn start_of_day(day: NaiveDate, zone: Tz) -> Option<DateTime<Utc>> {
    let midnight = day.and_hms_opt(0, 0, 0)?;
    (0..=2)
        .find_map(|hours| {
            zone.from_local_datetime(&(midnight + Duration::hours(hours)))
                .earliest()
        })
        .map(|local| local.with_timezone(&Utc))
}

/// What the report is asked for.
#[derive(Debug, Clone)]
pub struct Options {
    /// The local days the report covers.
    pub period: Period,
    /// The installation's time zone: what a day and an hour of day are.
    pub zone: Tz,
    /// Responses longer than this are counted as over the threshold.
    pub threshold: Duration,
    /// Only calls of this section (`--section`); `None`: every section.
    pub section: Option<String>,
    /// `RECEIPT_SECONDS` (§18): a receipt within this of a person's first
    /// alert is in time.
    pub receipt_seconds: i64,
}

/// What answered a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// A presence on its address, at this instant.
    Presence,
    /// Its close, with no presence before.
    Close,
}

/// One call of the period as the report sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportedCall {
    /// The call as stored, with its alarm.
    pub call: Call,
    /// The `type` of its call type (`CALL`, `PRESENCE`, …); empty when an
    /// admin has removed the call type since.
    pub kind: String,
    /// `None` for presences, faults and calls still open with no presence.
    pub response: Option<Duration>,
    /// What ended its response time; `None` when it has none.
    pub answered_by: Option<Answer>,
    /// `None` while open.
    pub duration: Option<Duration>,
    /// Whether its response time is longer than [`Options::threshold`].
    pub over_threshold: bool,
    /// `opened_at` to the first presence on its address ([`alarms`]); `None`
    /// for presences, faults and calls no presence answered.
    pub to_presence: Option<Duration>,
    /// Its alarm's figures; `None` for calls without an alarm. A fault's
    /// is kept for the audit export, not counted among the calls'.
    pub alarm: Option<CallAlarm>,
}

impl ReportedCall {
    /// Whether the call is measured as a call: a presence answers, a fault
    /// reports a device, neither is a request for care.
    pub fn is_measured(&self) -> bool {
        self.kind != PRESENCE_KIND && self.kind != FAULT_KIND
    }

    /// Whether it is a fault: counted in the faults' table, not as a call.
    pub fn is_fault(&self) -> bool {
        self.kind == FAULT_KIND
    }
}

/// Response figures of a group of calls; times in whole seconds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Calls (presences and faults not counted).
    pub count: usize,
    /// Calls still open with no presence: no response time yet.
    pub unanswered: usize,
    /// Median response time (nearest rank); `None` when no call was answered.
    pub median_seconds: Option<i64>,
    /// 90th percentile (nearest rank); `None` when no call was answered.
    pub p90_seconds: Option<i64>,
    /// Slowest response; `None` when no call was answered.
    pub max_seconds: Option<i64>,
    /// Calls whose response took longer than the threshold.
    pub over_threshold: usize,
}

impl Stats {
    fn of<'a>(calls: impl IntoIterator<Item = &'a ReportedCall>) -> Self {
        let mut stats = Stats::default();
        let mut responses = Vec::new();
        for call in calls.into_iter().filter(|c| c.is_measured()) {
            stats.count += 1;
            match call.response {
                Some(response) => responses.push(response.num_seconds()),
                None => stats.unanswered += 1,
            }
            stats.over_threshold += usize::from(call.over_threshold);
        }
        responses.sort_unstable();
        stats.median_seconds = nearest_rank(&responses, 50);
        stats.p90_seconds = nearest_rank(&responses, 90);
        stats.max_seconds = responses.last().copied();
        stats
    }
}

/// The `percent`-th nearest-rank percentile of `sorted` (ascending).
pub fn nearest_rank(sorted: &[i64], percent: usize) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (percent * sorted.len()).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

/// The figures of one call type or one section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Group {
    /// The call type's or section's name; `None` for calls without a section.
    pub name: Option<String>,
    /// Its calls' response figures.
    #[serde(flatten)]
    pub stats: Stats,
}

/// The whole report.
#[derive(Debug, Clone)]
pub struct Report {
    /// What was asked: period, zone, threshold, section.
    pub options: Options,
    /// The figures of all the report's calls (not presences, not faults).
    pub total: Stats,
    /// Call types most urgent first (priority, then name); presences and
    /// faults left out.
    pub by_call_type: Vec<Group>,
    /// Sections by name, calls without a section last.
    pub by_section: Vec<Group>,
    /// Calls (not presences, not faults) opened in each local hour of day.
    pub by_hour: [usize; 24],
    /// Indexes into `calls` of the slowest answered calls, slowest first.
    pub slowest: Vec<usize>,
    /// Every call, presence and fault of the period (and section), in
    /// opening order.
    pub calls: Vec<ReportedCall>,
    /// Alarm figures, in the groups of `by_call_type` and `by_section`.
    pub alarms: AlarmReport,
    /// Faults, apart from the calls.
    pub faults: FaultReport,
    /// The central systems' silences (DECISIONS §19), oldest first: empty
    /// from [`compute`], which sees calls only; the admin command adds
    /// them from the store ([`silences_of`]).
    pub silences: Vec<ReportedSilence>,
}

/// Computes the report from every call opened in
/// `[period.from, period.read_until())` (of any section: a presence answers
/// whatever its section), ordered by `opened_at`.
pub fn compute(calls: &[Call], call_types: &[CallType], options: Options) -> Report {
    let types = TypesByName::of(call_types);
    let presences = presences_by_address(calls, &types);
    let reported: Vec<ReportedCall> = calls
        .iter()
        .filter(|call| options.covers(call))
        .map(|call| reported_call(call, types.kind_of(call), &presences, options.threshold))
        .collect();

    let groups = Groups::of(&reported, &types, options.zone);
    let alarms = groups.alarm_report(&reported, options.receipt_seconds);
    let by_hour = groups.by_hour;
    let (by_call_type, by_section) = groups.response_groups();
    Report {
        total: Stats::of(measured(&reported)),
        by_call_type,
        by_section,
        by_hour,
        slowest: slowest_answered(&reported),
        faults: FaultReport::of(&reported, |event| types.priority_of(event)),
        calls: reported,
        alarms,
        options,
        silences: Vec::new(),
    }
}

impl Options {
    /// Whether the report lists `call`: opened in the period, and of the
    /// section asked for (if any).
    fn covers(&self, call: &Call) -> bool {
        let period = &self.period;
        period.from <= call.opened_at
            && call.opened_at < period.to
            && self
                .section
                .as_ref()
                .is_none_or(|wanted| call.section.as_ref() == Some(wanted))
    }
}

/// The call types by name, as a call's `event` names its type.
struct TypesByName<'t>(HashMap<&'t str, &'t CallType>);

impl<'t> TypesByName<'t> {
    fn of(call_types: &'t [CallType]) -> Self {
        TypesByName(call_types.iter().map(|t| (t.name.as_str(), t)).collect())
    }

    /// The `type` of `call`'s call type; empty when it has been removed.
    fn kind_of(&self, call: &Call) -> String {
        self.0
            .get(call.event.as_str())
            .map_or_else(String::new, |t| t.kind.clone())
    }

    /// The priority of call type `event`; a removed one sorts last.
    fn priority_of(&self, event: &str) -> i64 {
        self.0.get(event).map_or(i64::MAX, |t| t.priority)
    }
}

/// The presences are the answers: every presence's opening per address,
/// read over the whole span (any section), sorted for the search of the
/// first at or after a call's opening.
fn presences_by_address<'c>(
    calls: &'c [Call],
    types: &TypesByName<'_>,
) -> HashMap<&'c str, Vec<DateTime<Utc>>> {
    let mut presences: HashMap<&str, Vec<DateTime<Utc>>> = HashMap::new();
    for call in calls.iter().filter(|c| types.kind_of(c) == PRESENCE_KIND) {
        presences
            .entry(call.address.as_str())
            .or_default()
            .push(call.opened_at);
    }
    for times in presences.values_mut() {
        times.sort_unstable();
    }
    presences
}

/// One call of the period with its figures (the definitions at the top).
fn reported_call(
    call: &Call,
    kind: String,
    presences: &HashMap<&str, Vec<DateTime<Utc>>>,
    threshold: Duration,
) -> ReportedCall {
    let duration = call.closed_at.map(|closed| closed - call.opened_at);
    if kind == PRESENCE_KIND || kind == FAULT_KIND {
        return listed_only(call, kind, duration);
    }
    let presence = first_presence(call, presences);
    let (response, answered_by) = match (presence, call.closed_at) {
        (Some(at), _) => (Some(at - call.opened_at), Some(Answer::Presence)),
        (None, Some(closed)) => (Some(closed - call.opened_at), Some(Answer::Close)),
        (None, None) => (None, None),
    };
    // A presence beyond the read span still stopped the alarm.
    let arrived = presence.or_else(|| call.alarm.as_ref().and_then(|a| a.present_at));
    ReportedCall {
        over_threshold: response.is_some_and(|r| r > threshold),
        call: call.clone(),
        kind,
        response,
        answered_by,
        duration,
        to_presence: arrived.map(|at| at - call.opened_at),
        alarm: CallAlarm::of(call.alarm.as_ref(), call.opened_at),
    }
}

/// A presence or a fault: no request for care, so listed without a
/// response; a fault's alarm is kept for the audit export.
fn listed_only(call: &Call, kind: String, duration: Option<Duration>) -> ReportedCall {
    let alarm = if kind == FAULT_KIND {
        CallAlarm::of(call.alarm.as_ref(), call.opened_at)
    } else {
        None
    };
    ReportedCall {
        call: call.clone(),
        kind,
        response: None,
        answered_by: None,
        duration,
        over_threshold: false,
        to_presence: None,
        alarm,
    }
}

/// The presence that answered `call`: the first on its address at or after
/// its opening, and before its close if it is closed.
fn first_presence(
    call: &Call,
    presences: &HashMap<&str, Vec<DateTime<Utc>>>,
) -> Option<DateTime<Utc>> {
    presences
        .get(call.address.as_str())
        .and_then(|times| {
            let first = times.partition_point(|at| *at < call.opened_at);
            times
                .get(first)
                .filter(|at| call.closed_at.is_none_or(|closed| **at < closed))
        })
        .copied()
}

/// The calls measured as calls (no presences, no faults).
fn measured(reported: &[ReportedCall]) -> impl Iterator<Item = &ReportedCall> {
    reported.iter().filter(|c| c.is_measured())
}

#[cfg(test)]
mod alarm_tests;
#[cfg(test)]
mod fault_tests;
#[cfg(test)]
mod receipt_tests;
#[cfg(test)]
mod tests;
