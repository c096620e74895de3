//! What a silent central system sets off (DECISIONS §19), decided without a
//! clock or a store: which supervised links a sweep finds newly silent,
//! which silent ones owe Technik another alert, and the receipt id such an
//! alert carries. The links and their silences are kept by the store
//! ([`crate::domain::links`]); the sweep that asks it and sends what is
//! decided here is [`crate::app::silence`].

use std::fmt;

use chrono::{DateTime, Duration, Utc};

use crate::domain::links::{Link, Silence};

/// A silent link's Technik alert is sent again this long after the last
/// one while the silence lasts (§19: every 5 minutes) …
pub(crate) const REALERT_EVERY: Duration = Duration::minutes(5);

/// … at most this many times in all, the first included.
pub(crate) const MAX_ALERTS: i64 = 3;

/// The group whose members are alerted; without members, everyone on duty.
pub(crate) const TECHNIK: &str = "Technik";

/// What one sweep does to one link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SweepStep {
    /// Overdue and not yet known silent: keep `silence` if the link was
    /// still last seen at `seen` (a request in between wins).
    GoesSilent {
        /// The link as read.
        link: Link,
        /// Its `last_seen_at` as read, the store's condition.
        seen: DateTime<Utc>,
        /// The silence to keep: no alert sent yet.
        silence: Silence,
    },
    /// Silent, and Technik's alert number `alert` (1 = the first) is due:
    /// kept first ([`crate::store::links::LinkStore::mark_silence_alerted`]),
    /// then sent, so two processes never both send it.
    Alert {
        /// The link as read, with its silence.
        link: Link,
        /// Which alert it is.
        alert: i64,
    },
}

/// The steps of a sweep at `now` over every supervised link: the newly
/// silent ones first, each followed by its first alert, then the repeats.
pub(crate) fn sweep(links: &[Link], now: DateTime<Utc>) -> Vec<SweepStep> {
    let mut steps = Vec::new();
    for link in links {
        if link.is_overdue(now) {
            let silence = Silence {
                since: link.last_seen_at,
                detected_at: now,
                alerts: 0,
                last_alert_at: None,
            };
            let silent = Link {
                silence: Some(silence.clone()),
                ..link.clone()
            };
            steps.push(SweepStep::GoesSilent {
                link: link.clone(),
                seen: link.last_seen_at,
                silence,
            });
            steps.push(SweepStep::Alert {
                link: silent,
                alert: 1,
            });
        } else if let Some(alert) = link.silence.as_ref().and_then(|s| alert_due(s, now)) {
            steps.push(SweepStep::Alert {
                link: link.clone(),
                alert,
            });
        }
    }
    steps
}

/// The number of the alert a kept silence owes at `now`, if one: the
/// first when none was sent (a process that kept the silence may have
/// stopped before its alert), a repeat [`REALERT_EVERY`] after the last,
/// never more than [`MAX_ALERTS`].
pub(crate) fn alert_due(silence: &Silence, now: DateTime<Utc>) -> Option<i64> {
    if silence.alerts >= MAX_ALERTS {
        return None;
    }
    match silence.last_alert_at {
        Some(last) if silence.alerts > 0 && now - last < REALERT_EVERY => None,
        _ => Some(silence.alerts + 1),
    }
}

/// The receipt id of a silence's alert to one person (§18, §19):
/// `s.<since, ms since 1970>.<consumer>.<staff>`. `POST
/// /api/v1/staff/receipts` answers it 200 with `"call": null`; it confirms
/// that the person saw the alert, and changes nothing kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SilenceReceipt {
    /// The silence's `since` in milliseconds.
    pub(crate) since_ms: i64,
    /// The silent consumer.
    pub(crate) consumer: String,
    /// Whose alert it is.
    pub(crate) staff_id: String,
}

impl SilenceReceipt {
    /// The receipt of `staff_id`'s alert about `consumer`'s silence since `since`.
    pub(crate) fn new(since: DateTime<Utc>, consumer: &str, staff_id: &str) -> Self {
        SilenceReceipt {
            since_ms: since.timestamp_millis(),
            consumer: consumer.to_string(),
            staff_id: staff_id.to_string(),
        }
    }

    /// Reads an id back; `None` for anything else (a call's or a test's).
    pub(crate) fn parse(id: &str) -> Option<Self> {
        let rest = id.strip_prefix("s.")?;
        let (since, rest) = rest.split_once('.')?;
        let (consumer, staff_id) = rest.rsplit_once('.')?;
        let since_ms: i64 = since.parse().ok()?;
        if consumer.is_empty() || staff_id.is_empty() {
            return None;
        }
        Some(SilenceReceipt {
            since_ms,
            consumer: consumer.to_string(),
            staff_id: staff_id.to_string(),
        })
    }
}

impl fmt::Display for SilenceReceipt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s.{}.{}.{}", self.since_ms, self.consumer, self.staff_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(seconds: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 2, 8, 0, 0).unwrap() + Duration::seconds(seconds)
    }

    fn link(last_seen: i64, silence: Option<Silence>) -> Link {
        Link {
            consumer: "c1".into(),
            name: "Rufanlage Haus A".into(),
            heartbeat_seconds: 60,
            last_seen_at: at(last_seen),
            silence,
        }
    }

    #[test]
    fn a_link_goes_silent_at_twice_its_interval_and_ten_seconds() {
        // 60 s interval: silent at 130 s after its last request.
        assert!(sweep(&[link(0, None)], at(129)).is_empty());
        let steps = sweep(&[link(0, None)], at(130));
        assert_eq!(steps.len(), 2);
        let SweepStep::GoesSilent { seen, silence, .. } = &steps[0] else {
            panic!("{steps:?}")
        };
        assert_eq!(*seen, at(0));
        assert_eq!(silence.since, at(0));
        assert_eq!(silence.detected_at, at(130));
        assert_eq!(silence.alerts, 0);
        assert!(matches!(&steps[1], SweepStep::Alert { alert: 1, .. }));
    }

    #[test]
    fn a_silent_link_is_alerted_again_every_five_minutes_three_times_at_most() {
        let silence = |alerts, last: Option<i64>| Silence {
            since: at(0),
            detected_at: at(130),
            alerts,
            last_alert_at: last.map(at),
        };
        // Kept but its first alert never sent (a process stopped).
        assert_eq!(alert_due(&silence(0, None), at(131)), Some(1));
        assert_eq!(alert_due(&silence(1, Some(130)), at(429)), None);
        assert_eq!(alert_due(&silence(1, Some(130)), at(430)), Some(2));
        assert_eq!(alert_due(&silence(2, Some(430)), at(730)), Some(3));
        assert_eq!(alert_due(&silence(3, Some(730)), at(5000)), None);
        let steps = sweep(&[link(0, Some(silence(1, Some(130))))], at(430));
        assert!(matches!(&steps[..], [SweepStep::Alert { alert: 2, .. }]));
    }

    #[test]
    fn a_silence_receipt_reads_back_and_nothing_else_reads_as_one() {
        let receipt = SilenceReceipt::new(at(0), "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f", "s1");
        let id = receipt.to_string();
        assert!(id.starts_with(&format!("s.{}.6f1c7d2e-", at(0).timestamp_millis())));
        assert_eq!(SilenceReceipt::parse(&id), Some(receipt));
        assert_eq!(SilenceReceipt::parse("7.1.s1.page"), None);
        assert_eq!(SilenceReceipt::parse("t.1.s1.d"), None);
        assert_eq!(SilenceReceipt::parse("s.x.c.s"), None);
        assert_eq!(SilenceReceipt::parse("s.1.c"), None);
    }
}
