//! The supervised links of DECISIONS §19: a central system (a consumer)
//! with a heartbeat interval is silent when no request of it came for
//! 2 × its interval + 10 s. Plain data and the one rule of when a link is
//! silent; the store keeps them ([`crate::store::links::LinkStore`]), the
//! request path records signs of life and the silence's watcher marks and
//! announces silences.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

/// The shortest heartbeat interval an admin may set (seconds).
pub const MIN_HEARTBEAT_SECONDS: i64 = 30;
/// The longest heartbeat interval an admin may set (seconds).
pub const MAX_HEARTBEAT_SECONDS: i64 = 3600;
/// The grace beyond two intervals before a link is silent (seconds): a
/// heartbeat sent exactly on time, late by network delays, is not a silence.
pub const GRACE_SECONDS: i64 = 10;

/// A supervised link: a consumer with a heartbeat, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// The consumer's id (lowercase UUID).
    pub consumer: String,
    /// The consumer's name (what banners and messages call the central system).
    pub name: String,
    /// Its heartbeat interval (seconds, [`MIN_HEARTBEAT_SECONDS`] to
    /// [`MAX_HEARTBEAT_SECONDS`]).
    pub heartbeat_seconds: i64,
    /// Its last request (or, before any, when its heartbeat was set).
    pub last_seen_at: DateTime<Utc>,
    /// The silence it is in, while it lasts.
    pub silence: Option<Silence>,
}

/// A silence as kept while it lasts (and in the history once it ended).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Silence {
    /// = the link's `last_seen_at` when it went silent (the wire's `since`).
    pub since: DateTime<Utc>,
    /// When the service found it silent.
    pub detected_at: DateTime<Utc>,
    /// Technik alerts sent so far (at most 3, every 5 minutes).
    pub alerts: i64,
    /// When the last of those alerts was sent.
    pub last_alert_at: Option<DateTime<Utc>>,
}

/// A silence for the report: a consumer, when it began (`since`), when it
/// ended (`None` while it lasts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SilenceRecord {
    /// The consumer's id.
    pub consumer: String,
    /// The consumer's name when the silence began.
    pub name: String,
    /// Its last request before the silence.
    pub since: DateTime<Utc>,
    /// Its next request (or its heartbeat's removal); `None` while it lasts.
    pub ended_at: Option<DateTime<Utc>>,
}

/// When a link last seen at `last_seen_at` with a heartbeat of `seconds`
/// is silent: 2 × the interval + [`GRACE_SECONDS`] later. Also the
/// heartbeat's answer `next_before`.
pub fn silent_after(last_seen_at: DateTime<Utc>, seconds: i64) -> DateTime<Utc> {
    last_seen_at + Duration::seconds(2 * seconds + GRACE_SECONDS)
}

/// Whether `seconds` is an interval an admin may set.
pub fn is_heartbeat_interval(seconds: i64) -> bool {
    (MIN_HEARTBEAT_SECONDS..=MAX_HEARTBEAT_SECONDS).contains(&seconds)
}

impl Link {
    /// When this link is silent without a request: its last one + 2 × its
    /// interval + 10 s.
    pub fn silent_at(&self) -> DateTime<Utc> {
        silent_after(self.last_seen_at, self.heartbeat_seconds)
    }

    /// Whether the link went silent by `now` and no silence is kept yet
    /// (one kept is the watcher's already).
    pub fn is_overdue(&self, now: DateTime<Utc>) -> bool {
        self.silence.is_none() && now >= self.silent_at()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_780_000_000 + seconds, 0).unwrap()
    }

    fn link(heartbeat_seconds: i64, silence: Option<Silence>) -> Link {
        Link {
            consumer: "c1".into(),
            name: "Zentrale".into(),
            heartbeat_seconds,
            last_seen_at: at(0),
            silence,
        }
    }

    #[test]
    fn a_link_is_silent_two_intervals_and_ten_seconds_after_its_last_request() {
        let link = link(60, None);
        assert_eq!(link.silent_at(), at(130));
        assert!(!link.is_overdue(at(129)));
        assert!(link.is_overdue(at(130)));
    }

    #[test]
    fn a_kept_silence_is_not_overdue_again() {
        let silence = Silence {
            since: at(0),
            detected_at: at(131),
            alerts: 0,
            last_alert_at: None,
        };
        assert!(!link(60, Some(silence)).is_overdue(at(10_000)));
    }

    #[test]
    fn intervals_are_thirty_seconds_to_an_hour() {
        assert!(!is_heartbeat_interval(29));
        assert!(is_heartbeat_interval(30));
        assert!(is_heartbeat_interval(3600));
        assert!(!is_heartbeat_interval(3601));
    }
}
