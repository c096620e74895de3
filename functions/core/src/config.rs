//! Settings of one installation (DECISIONS §10): the mode, the time zone and
//! how long closed calls are kept.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;

/// Whether this installation is a real one or the test server of spec 5.3.
/// Set at deploy time; a request never chooses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Production,
    Sandbox,
}

impl FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "production" => Ok(Mode::Production),
            "sandbox" => Ok(Mode::Sandbox),
            other => Err(format!(
                "unknown SERVICE_MODE {other:?}: expected \"production\" or \"sandbox\""
            )),
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Production => "production",
            Mode::Sandbox => "sandbox",
        })
    }
}

/// The per-installation settings every handler needs.
#[derive(Debug, Clone)]
pub struct Settings {
    pub mode: Mode,
    /// Times on the wire are local times of this zone (DECISIONS §5).
    pub time_zone: Tz,
    /// How long a closed call is kept (`CALL_RETENTION_DAYS`).
    pub call_retention: CallRetention,
}

impl Settings {
    pub const DEFAULT_TIME_ZONE: &'static str = "Europe/Berlin";

    /// Reads `SERVICE_MODE`, `SERVICE_TIME_ZONE` and `CALL_RETENTION_DAYS`;
    /// `default_mode` applies when the mode is unset (sandbox locally, set
    /// explicitly by the stack in AWS).
    pub fn from_env(default_mode: Mode) -> Result<Self, String> {
        let mode = match std::env::var("SERVICE_MODE") {
            Ok(value) if !value.trim().is_empty() => value.parse()?,
            _ => default_mode,
        };
        let zone = std::env::var("SERVICE_TIME_ZONE")
            .ok()
            .filter(|zone| !zone.trim().is_empty())
            .unwrap_or_else(|| Self::DEFAULT_TIME_ZONE.to_string());
        let call_retention = match std::env::var("CALL_RETENTION_DAYS") {
            Ok(value) if !value.trim().is_empty() => value.parse()?,
            _ => CallRetention::default(),
        };
        Ok(Settings {
            mode,
            time_zone: parse_time_zone(&zone)?,
            call_retention,
        })
    }
}

/// How long a closed call is kept, in whole days from its `closed_at`
/// (`CALL_RETENTION_DAYS`, default 400). How long to keep the call history is
/// the care home's decision (its documentation duties against data
/// minimisation), so it is a setting of the installation. An open call is
/// never deleted, however old.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallRetention {
    days: u32,
}

impl CallRetention {
    pub const DEFAULT_DAYS: u32 = 400;
    /// A century: far beyond any retention duty, and keeps the date
    /// arithmetic far from chrono's limits.
    pub const MAX_DAYS: u32 = 36_500;

    /// `days` (1 to [`CallRetention::MAX_DAYS`]).
    pub fn days(days: u32) -> Result<Self, String> {
        if (1..=Self::MAX_DAYS).contains(&days) {
            Ok(CallRetention { days })
        } else {
            Err(Self::invalid(&days.to_string()))
        }
    }

    pub fn as_days(&self) -> u32 {
        self.days
    }

    /// When a call closed at `closed_at` may be deleted.
    pub fn expires_at(&self, closed_at: DateTime<Utc>) -> DateTime<Utc> {
        closed_at + Duration::days(i64::from(self.days))
    }

    /// Calls closed before this instant are past retention at `now`.
    pub fn closed_before(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        now - Duration::days(i64::from(self.days))
    }

    fn invalid(value: &str) -> String {
        format!(
            "invalid CALL_RETENTION_DAYS {value:?}: expected a whole number of days from 1 to {}",
            Self::MAX_DAYS
        )
    }
}

impl Default for CallRetention {
    fn default() -> Self {
        CallRetention {
            days: Self::DEFAULT_DAYS,
        }
    }
}

impl FromStr for CallRetention {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let days: u32 = s.trim().parse().map_err(|_| Self::invalid(s))?;
        Self::days(days).map_err(|_| Self::invalid(s))
    }
}

impl fmt::Display for CallRetention {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.days)
    }
}

/// Parses an IANA zone name such as `Europe/Berlin`.
pub fn parse_time_zone(name: &str) -> Result<Tz, String> {
    name.trim().parse::<Tz>().map_err(|_| {
        format!("unknown time zone {name:?}: expected an IANA name such as Europe/Berlin")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_retention_is_a_whole_number_of_days_from_1() {
        assert_eq!(CallRetention::default().as_days(), 400);
        assert_eq!("30".parse::<CallRetention>().unwrap().as_days(), 30);
        assert_eq!(" 1 ".parse::<CallRetention>().unwrap().as_days(), 1);
        for bad in ["0", "-1", "1.5", "30d", "", "abc", "36501", "99999999999"] {
            let error = bad.parse::<CallRetention>().unwrap_err();
            assert_eq!(
                error,
                format!(
                    "invalid CALL_RETENTION_DAYS {bad:?}: expected a whole number of days \
                     from 1 to 36500"
                ),
            );
        }
    }

    #[test]
    fn call_retention_counts_days_from_the_close() {
        let closed_at = "2026-01-31T10:00:00Z".parse::<DateTime<Utc>>().unwrap();
        let retention = CallRetention::days(30).unwrap();
        assert_eq!(
            retention.expires_at(closed_at).to_rfc3339(),
            "2026-03-02T10:00:00+00:00"
        );
        assert_eq!(
            retention.closed_before(retention.expires_at(closed_at)),
            closed_at
        );
    }
}
