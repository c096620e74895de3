//! The report's alarm figures (DECISIONS §14 "Audit and report"): how fast
//! somebody said "Ich komme", arrived and the call ended, how often a call
//! had to reach more people, and how often nobody could be reached; per call
//! type and per section, like the response times of [`super`].
//!
//! - **Time to accept**: `opened_at` to the "Ich komme" that stands (the
//!   alarm's `accepted.at`); only calls somebody accepted. An accept that
//!   expired without an arrival (DECISIONS §19, `not_arrived`) is no
//!   answer: a call whose every accept expired has no time to accept.
//! - **Time to presence** (arrival): `opened_at` to the first presence on
//!   the call's address at or after it and before its close: the same
//!   presence the response time uses, whether or not somebody accepted
//!   first; without one read, the alarm's own `present_at`.
//! - **Time to close**: the call's duration; only closed calls.
//! - **Escalations per level**: for each level from the second on, how many
//!   calls reached it (a call that reached level 3 also reached level 2);
//!   from the levels the alarm started (`level_started_at`).
//! - **Unattended**: calls that were at some moment without anybody to
//!   alert (`was_unattended`), even when somebody came on duty later.
//! - **Time to first receipt** (§18): `opened_at` to the first moment
//!   anybody alerted is known to have got it: their receipt (a phone, a
//!   page or a handset said it showed the alert) or, sooner, their answer
//!   (who answers got it, as §18's "reached"); only calls with one.
//! - **Never received**: alerted people (one per person and call) with
//!   neither a receipt nor an answer; per person, [`super::receipts`].
//!
//! Times are medians, p90 and maxima by nearest rank, as the response times.
//! Calls stored before alarms existed, and types without an escalation
//! policy, have no alarm: they count in the times to presence and close only.
//! Presences and faults are no calls here either ([`super::faults`]).

use chrono::Duration;
use serde::Serialize;

use crate::domain::alarm::{Alarm, AlarmStatus, Recipient};

use super::receipts::PersonReceipts;
use super::{ReportedCall, nearest_rank};

/// What the report takes from one call's alarm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallAlarm {
    /// Where its escalation ended up (or stands, while open).
    pub state: AlarmStatus,
    /// Levels started (1 = only the first; 0 = stopped before any, e.g.
    /// closed before the engine first looked).
    pub levels_started: usize,
    /// Levels its call type's policy had.
    pub levels: usize,
    /// `opened_at` to the first acceptance.
    pub to_accept: Option<Duration>,
    /// Whether nobody could be reached at some moment (`was_unattended`).
    pub unattended: bool,
    /// `opened_at` to the first receipt of anybody alerted (§18).
    pub to_first_receipt: Option<Duration>,
    /// Everyone alerted, with how long their first receipt took.
    pub recipients: Vec<RecipientFigures>,
}

/// When `recipient` is known to have got the alert: their receipt or their
/// first answer, whichever came first.
fn got_at(alarm: &Alarm, recipient: &Recipient) -> Option<chrono::DateTime<chrono::Utc>> {
    let answered = alarm
        .answers
        .iter()
        .filter(|a| a.staff.id == recipient.staff.id)
        .map(|a| a.at)
        .min();
    [recipient.received_at, answered]
        .into_iter()
        .flatten()
        .min()
}

/// One person a call alerted, as the report counts them (§18).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecipientFigures {
    /// The staff member's id.
    pub id: String,
    /// Their name as the alarm kept it.
    pub name: String,
    /// Their first alert to their receipt or answer, whichever came first;
    /// `None`: neither came.
    pub receipt_after: Option<Duration>,
}

impl CallAlarm {
    /// The figures of a call's alarm; `None` when it has none to show (a
    /// presence, a type without policy, a call stored before alarms).
    pub fn of(alarm: Option<&Alarm>, opened_at: chrono::DateTime<chrono::Utc>) -> Option<Self> {
        let alarm = alarm.filter(|a| a.is_shown())?;
        Some(CallAlarm {
            state: alarm.status,
            levels_started: alarm.level_started_at.len(),
            levels: alarm.levels,
            to_accept: alarm.accepted.as_ref().map(|a| a.at - opened_at),
            unattended: alarm.was_unattended,
            to_first_receipt: alarm
                .recipients
                .iter()
                .filter_map(|r| got_at(alarm, r))
                .min()
                .map(|at| at - opened_at),
            recipients: alarm
                .alerted()
                .map(|r| RecipientFigures {
                    id: r.staff.id.clone(),
                    name: r.staff.name.clone(),
                    receipt_after: got_at(alarm, r).map(|at| at - r.first_alert_at()),
                })
                .collect(),
        })
    }
}

/// Median, p90 and maximum of one kind of time, in whole seconds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Times {
    /// Calls that have this time.
    pub count: usize,
    /// Median (nearest rank); `None` when no call has this time.
    pub median_seconds: Option<i64>,
    /// 90th percentile (nearest rank); `None` when no call has this time.
    pub p90_seconds: Option<i64>,
    /// Longest; `None` when no call has this time.
    pub max_seconds: Option<i64>,
}

impl Times {
    pub(super) fn of(durations: impl IntoIterator<Item = Duration>) -> Self {
        let mut seconds: Vec<i64> = durations.into_iter().map(|d| d.num_seconds()).collect();
        seconds.sort_unstable();
        Times {
            count: seconds.len(),
            median_seconds: nearest_rank(&seconds, 50),
            p90_seconds: nearest_rank(&seconds, 90),
            max_seconds: seconds.last().copied(),
        }
    }
}

/// How many calls reached a level beyond the first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Escalation {
    /// 2 or more.
    pub level: usize,
    /// Calls whose alarm started this level (or a later one).
    pub calls: usize,
}

/// The alarm figures of a group of calls (presences not counted).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AlarmStats {
    /// Calls of the group.
    pub calls: usize,
    /// Of those, calls with an alarm.
    pub alarmed: usize,
    /// Time to accept: calls somebody accepted.
    pub to_accept: Times,
    /// Time to presence (arrival): calls where somebody arrived.
    pub to_presence: Times,
    /// Time to close: closed calls, alarm or not.
    pub to_close: Times,
    /// Levels 2 up to the most any alarm of the group had, each with the
    /// calls that reached it (0 included).
    pub escalations: Vec<Escalation>,
    /// Calls whose alarm was ever unattended.
    pub unattended: usize,
    /// Time to the first receipt (§18): calls with one.
    pub to_first_receipt: Times,
    /// Alerted people (per call) whose alert never got a receipt.
    pub never_received: usize,
}

impl AlarmStats {
    pub(super) fn of<'a>(calls: impl IntoIterator<Item = &'a ReportedCall>) -> Self {
        let calls: Vec<&ReportedCall> = calls.into_iter().filter(|c| c.is_measured()).collect();
        let alarms: Vec<&CallAlarm> = calls.iter().filter_map(|c| c.alarm.as_ref()).collect();
        let deepest = alarms
            .iter()
            .map(|a| a.levels.max(a.levels_started))
            .max()
            .unwrap_or(0);
        AlarmStats {
            calls: calls.len(),
            alarmed: alarms.len(),
            to_accept: Times::of(alarms.iter().filter_map(|a| a.to_accept)),
            to_presence: Times::of(calls.iter().filter_map(|c| c.to_presence)),
            to_close: Times::of(calls.iter().filter_map(|c| c.duration)),
            escalations: (2..=deepest)
                .map(|level| Escalation {
                    level,
                    calls: alarms.iter().filter(|a| a.levels_started >= level).count(),
                })
                .collect(),
            unattended: alarms.iter().filter(|a| a.unattended).count(),
            to_first_receipt: Times::of(alarms.iter().filter_map(|a| a.to_first_receipt)),
            never_received: alarms
                .iter()
                .flat_map(|a| &a.recipients)
                .filter(|r| r.receipt_after.is_none())
                .count(),
        }
    }
}

/// The alarm figures of one call type or one section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AlarmGroup {
    /// The call type's or section's name; `None` for calls without a section.
    pub name: Option<String>,
    /// Its calls' alarm figures.
    #[serde(flatten)]
    pub stats: AlarmStats,
}

/// The report's alarm part: the same groups, in the same order, as its
/// response times.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AlarmReport {
    /// The figures of all the report's calls (presences and faults not counted).
    pub total: AlarmStats,
    /// Per call type, most urgent first, as the response times'.
    pub by_call_type: Vec<AlarmGroup>,
    /// Per section by name, calls without a section last, as the response
    /// times'.
    pub by_section: Vec<AlarmGroup>,
    /// Per person alerted: how many of their alerts they received within
    /// `RECEIPT_SECONDS` (§18), by name.
    pub by_person: Vec<PersonReceipts>,
}
