//! The report's faults: calls of a call type whose `type` is `FAULT`
//! (Störung: a device or line that stopped working). They are no request
//! for care, so they stay out of the calls' response times, hours, sections
//! and alarm figures, and get a table of their own: per fault type how many
//! came, how many are still open, and how long they took to close.
//!
//! - **Time to close**: `opened_at` to `closed_at`, as a call's duration;
//!   only closed faults, as median, p90 and maximum by nearest rank.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{ReportedCall, alarms::Times};

/// The figures of a group of faults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FaultStats {
    /// Faults opened in the period.
    pub count: usize,
    /// Of those, still open.
    pub open: usize,
    /// Time to close (`opened_at` to `closed_at`) of the closed faults.
    pub to_close: Times,
}

impl FaultStats {
    fn of<'a>(faults: impl IntoIterator<Item = &'a ReportedCall>) -> Self {
        let faults: Vec<&ReportedCall> = faults.into_iter().filter(|c| c.is_fault()).collect();
        FaultStats {
            count: faults.len(),
            open: faults.iter().filter(|f| f.duration.is_none()).count(),
            to_close: Times::of(faults.iter().filter_map(|f| f.duration)),
        }
    }
}

/// The figures of one fault type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FaultGroup {
    /// The fault type's name (its calls' `event`).
    pub name: String,
    /// Its faults' figures.
    #[serde(flatten)]
    pub stats: FaultStats,
}

/// Every fault of the period: the total and one group per fault type, most
/// urgent first (priority, then name), as the calls' types.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FaultReport {
    /// The figures of every fault of the period.
    pub total: FaultStats,
    /// One group per fault type, most urgent first (priority, then name).
    pub by_fault_type: Vec<FaultGroup>,
}

impl FaultReport {
    /// `priority_of` orders the types; the reported calls' other kinds are
    /// left out.
    pub(super) fn of(calls: &[ReportedCall], priority_of: impl Fn(&str) -> i64) -> Self {
        let mut by_type: BTreeMap<(i64, &str), Vec<&ReportedCall>> = BTreeMap::new();
        for fault in calls.iter().filter(|c| c.is_fault()) {
            let name = fault.call.event.as_str();
            by_type
                .entry((priority_of(name), name))
                .or_default()
                .push(fault);
        }
        FaultReport {
            total: FaultStats::of(calls),
            by_fault_type: by_type
                .into_iter()
                .map(|((_, name), faults)| FaultGroup {
                    name: name.to_string(),
                    stats: FaultStats::of(faults),
                })
                .collect(),
        }
    }
}
