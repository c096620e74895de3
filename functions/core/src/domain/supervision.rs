//! Supervision of elements (DECISIONS §12): which radio elements need a
//! technician before a resident presses a dead button. Pure: the caller reads
//! the elements and the clock; the display endpoint and `nurse-call-admin
//! elements health` share this one rule.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::domain::model::Element;

/// When an element needs attention (`LOW_BATTERY_PERCENT`, `STALE_AFTER_HOURS`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// A battery below this percentage is low.
    pub low_battery_percent: f64,
    /// An element that sent nothing for longer than this is stale
    /// (EN 50134-2's daily supervision: 24 h).
    pub stale_after: Duration,
}

impl Thresholds {
    /// `LOW_BATTERY_PERCENT` when not set: a battery below 20 % is low.
    pub const DEFAULT_LOW_BATTERY_PERCENT: f64 = 20.0;
    /// `STALE_AFTER_HOURS` when not set: a day, EN 50134-2's daily supervision.
    pub const DEFAULT_STALE_AFTER_HOURS: i64 = 24;
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            low_battery_percent: Self::DEFAULT_LOW_BATTERY_PERCENT,
            stale_after: Duration::hours(Self::DEFAULT_STALE_AFTER_HOURS),
        }
    }
}

/// Why an element needs attention, as the wire and the admin command name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionReason {
    /// `battery_low`: it reported a battery below `low_battery_percent`.
    BatteryLow,
    /// `unreachable`: it reported itself not reachable.
    Unreachable,
    /// `stale`: no status field arrived for longer than `stale_after`.
    Stale,
}

impl AttentionReason {
    /// The wire name (`battery_low`, `unreachable`, `stale`).
    pub fn as_str(self) -> &'static str {
        match self {
            AttentionReason::BatteryLow => "battery_low",
            AttentionReason::Unreachable => "unreachable",
            AttentionReason::Stale => "stale",
        }
    }
}

/// The reasons `element` needs attention at `now`, in the order battery_low,
/// unreachable, stale; empty when it is fine. An element that never reported
/// its battery is not battery_low, one that never reported reachability is not
/// unreachable: only what it said counts, and silence is what `stale` is for.
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

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 23, 12, 0, 0).unwrap()
    }

    fn element(battery: Option<f64>, reachable: Option<bool>, silent: Duration) -> Element {
        Element {
            address: "Zimmer-1".into(),
            code: "Z1".into(),
            name: "Zimmer 1".into(),
            battery,
            position: None,
            reachable,
            updated_at: now() - silent,
            version: 1,
        }
    }

    #[test]
    fn a_fresh_element_with_a_good_battery_is_fine() {
        let fine = element(Some(80.0), Some(true), Duration::hours(1));
        assert_eq!(attention_reasons(&fine, now(), &Thresholds::default()), []);
    }

    #[test]
    fn battery_below_the_threshold_is_low_and_at_it_is_not() {
        let defaults = Thresholds::default();
        let low = element(Some(19.5), None, Duration::zero());
        let at = element(Some(20.0), None, Duration::zero());
        assert_eq!(
            attention_reasons(&low, now(), &defaults),
            [AttentionReason::BatteryLow]
        );
        assert_eq!(attention_reasons(&at, now(), &defaults), []);
    }

    #[test]
    fn unknown_battery_and_reachability_raise_nothing() {
        let unknown = element(None, None, Duration::zero());
        assert_eq!(
            attention_reasons(&unknown, now(), &Thresholds::default()),
            []
        );
    }

    #[test]
    fn stale_is_strictly_longer_than_the_threshold() {
        let defaults = Thresholds::default();
        let exactly = element(None, None, Duration::hours(24));
        let longer = element(None, None, Duration::hours(24) + Duration::seconds(1));
        assert_eq!(attention_reasons(&exactly, now(), &defaults), []);
        assert_eq!(
            attention_reasons(&longer, now(), &defaults),
            [AttentionReason::Stale]
        );
    }

    #[test]
    fn every_reason_in_order() {
        let broken = element(Some(5.0), Some(false), Duration::days(3));
        assert_eq!(
            attention_reasons(&broken, now(), &Thresholds::default()),
            [
                AttentionReason::BatteryLow,
                AttentionReason::Unreachable,
                AttentionReason::Stale
            ]
        );
    }

    #[test]
    fn thresholds_are_configurable() {
        let strict = Thresholds {
            low_battery_percent: 50.0,
            stale_after: Duration::hours(2),
        };
        let element = element(Some(40.0), Some(true), Duration::hours(3));
        assert_eq!(
            attention_reasons(&element, now(), &strict),
            [AttentionReason::BatteryLow, AttentionReason::Stale]
        );
    }

    #[test]
    fn reasons_serialise_in_snake_case() {
        let json = serde_json::to_string(&[
            AttentionReason::BatteryLow,
            AttentionReason::Unreachable,
            AttentionReason::Stale,
        ])
        .unwrap();
        assert_eq!(json, r#"["battery_low","unreachable","stale"]"#);
        assert_eq!(AttentionReason::BatteryLow.as_str(), "battery_low");
    }
}
