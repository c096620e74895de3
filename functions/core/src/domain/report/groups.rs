//! The report's groups: the measured calls by call type, by section and by
//! hour of day, grouped once for both the response and the alarm figures,
//! and the slowest of them.

use std::collections::BTreeMap;

use chrono::Timelike;
use chrono_tz::Tz;

use super::{
    AlarmGroup, AlarmReport, AlarmStats, Group, ReportedCall, SLOWEST_LISTED, Stats, TypesByName,
    measured,
};

/// The measured calls grouped once, for both the response and the alarm
/// figures: by call type (most urgent first), by section (by name, calls
/// without a section last), and counted per local hour of their opening.
pub(super) struct Groups<'r> {
    by_type: BTreeMap<(i64, String), Vec<&'r ReportedCall>>,
    by_section: BTreeMap<(bool, String), Vec<&'r ReportedCall>>,
    pub(super) by_hour: [usize; 24],
}

impl<'r> Groups<'r> {
    pub(super) fn of(reported: &'r [ReportedCall], types: &TypesByName<'_>, zone: Tz) -> Self {
        let mut groups = Groups {
            by_type: BTreeMap::new(),
            by_section: BTreeMap::new(),
            by_hour: [0usize; 24],
        };
        for call in measured(reported) {
            groups
                .by_type
                .entry((types.priority_of(&call.call.event), call.call.event.clone()))
                .or_default()
                .push(call);
            let section = &call.call.section;
            groups
                .by_section
                .entry((section.is_none(), section.clone().unwrap_or_default()))
                .or_default()
                .push(call);
            let hour = call.call.opened_at.with_timezone(&zone).hour();
            groups.by_hour[hour as usize] += 1;
        }
        groups
    }

    /// The alarm figures, in the same groups and order as the responses'.
    pub(super) fn alarm_report(
        &self,
        reported: &[ReportedCall],
        receipt_seconds: i64,
    ) -> AlarmReport {
        let group = |name: Option<String>, calls: &[&ReportedCall]| AlarmGroup {
            name,
            stats: AlarmStats::of(calls.iter().copied()),
        };
        AlarmReport {
            total: AlarmStats::of(measured(reported)),
            by_call_type: self
                .by_type
                .iter()
                .map(|((_, name), calls)| group(Some(name.clone()), calls))
                .collect(),
            by_section: self
                .by_section
                .iter()
                .map(|((none, name), calls)| group((!none).then(|| name.clone()), calls))
                .collect(),
            by_person: super::receipts::by_person(reported, receipt_seconds),
        }
    }

    /// The response figures: by call type, and by section.
    pub(super) fn response_groups(self) -> (Vec<Group>, Vec<Group>) {
        let by_call_type = self
            .by_type
            .into_iter()
            .map(|((_, name), calls)| Group {
                name: Some(name),
                stats: Stats::of(calls),
            })
            .collect();
        let by_section = self
            .by_section
            .into_iter()
            .map(|((none, name), calls)| Group {
                name: (!none).then_some(name),
                stats: Stats::of(calls),
            })
            .collect();
        (by_call_type, by_section)
    }
}

/// Indexes of the slowest answered calls, slowest first (the earlier, then
/// the lower id, of equally slow ones), at most [`SLOWEST_LISTED`].
pub(super) fn slowest_answered(reported: &[ReportedCall]) -> Vec<usize> {
    let mut slowest: Vec<usize> = (0..reported.len())
        .filter(|&i| reported[i].is_measured() && reported[i].response.is_some())
        .collect();
    slowest.sort_by(|&a, &b| {
        reported[b]
            .response
            .cmp(&reported[a].response)
            .then(reported[a].call.opened_at.cmp(&reported[b].call.opened_at))
            .then(reported[a].call.id.cmp(&reported[b].call.id))
    });
    slowest.truncate(SLOWEST_LISTED);
    slowest
}
