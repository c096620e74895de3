//! Supervision of elements (DECISIONS §12): which elements need attention
//! before a resident presses a dead button.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::model::Element;

/// When an element needs attention (`LOW_BATTERY_PERCENT`, `STALE_AFTER_HOURS`).
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    pub low_battery_percent: f64,
    pub stale_after: chrono::Duration,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            low_battery_percent: 20.0,
            stale_after: chrono::Duration::hours(24),
        }
    }
}

/// Why an element needs attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionReason {
    BatteryLow,
    Unreachable,
    Stale,
}

/// The reasons `element` needs attention at `now`, in a fixed order; empty
/// when it needs none. An element that never reported a battery level or its
/// reachability is not flagged for them (it may have no battery at all).
pub fn attention_reasons(
    element: &Element,
    now: DateTime<Utc>,
    thresholds: &Thresholds,
) -> Vec<AttentionReason> {
    let mut reasons = Vec::new();
    if element
        .battery
        .is_some_and(|level| level < thresholds.low_battery_percent)
    {
        reasons.push(AttentionReason::BatteryLow);
    }
    if element.reachable == Some(false) {
        reasons.push(AttentionReason::Unreachable);
    }
    if now - element.updated_at > thresholds.stale_after {
        reasons.push(AttentionReason::Stale);
    }
    reasons
}
