//! Settings of one installation (DECISIONS §10): the mode, the time zone and
//! how long closed calls are kept, the supervision thresholds of the
//! elements (DECISIONS §12), where displays find the live socket, and what
//! alarm routing needs of staff (DECISIONS §14, §15).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;

use crate::domain::push_services::{PushServices, parse_push_services};
use crate::domain::supervision::Thresholds;

/// Whether this installation is a real one or the test server of spec 5.3.
/// Set at deploy time; a request never chooses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A real installation: one scope for the house, only registered elements.
    Production,
    /// The test server: every visitor (consumer) has a scope of its own, and
    /// the elements it names are created.
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
    /// A real installation or the test server (`SERVICE_MODE`).
    pub mode: Mode,
    /// Times on the wire are local times of this zone (DECISIONS §5).
    pub time_zone: Tz,
    /// How long a closed call is kept (`CALL_RETENTION_DAYS`).
    pub call_retention: CallRetention,
    /// When an element needs attention (DECISIONS §12).
    pub supervision: Thresholds,
    /// Where the display page opens its live socket (`DISPLAY_LIVE_URL`, in
    /// AWS the WebSocket API's URL); `None`: the same origin's
    /// `/api/v1/display/live` (DECISIONS §11).
    pub live_url: Option<String>,
    /// How long a duty lasts, and who Web Push says it is (DECISIONS §14, §15).
    pub staff: StaffSettings,
}

/// What alarm routing needs of staff: `DUTY_HOURS`, `VAPID_SUBJECT`,
/// `RECEIPT_SECONDS` and `PUSH_SERVICES`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaffSettings {
    /// A duty ends by itself this long after the sign-on (`DUTY_HOURS`).
    pub duty: Duration,
    /// The `sub` of Web Push's VAPID claims, a `mailto:` or `https:` URL
    /// (`VAPID_SUBJECT`).
    pub vapid_subject: String,
    /// An alert without a receipt this many seconds after it was first sent
    /// is not received (`RECEIPT_SECONDS`, §18).
    pub receipt_seconds: i64,
    /// The hosts a push subscription may point at (`PUSH_SERVICES`, §20):
    /// checked at registration and again before each push.
    pub push_services: PushServices,
}

impl StaffSettings {
    /// `DUTY_HOURS` when unset, as text for the local server's flag; the same
    /// 12 hours as [`StaffSettings::default`]'s duty.
    pub const DEFAULT_DUTY_HOURS: &'static str = "12";
    /// `VAPID_SUBJECT` when unset: a placeholder, not a contact the push
    /// services can write to.
    pub const DEFAULT_VAPID_SUBJECT: &'static str = "mailto:admin@localhost";
    /// `RECEIPT_SECONDS` when unset (§10), as text for the local server's flag.
    pub const DEFAULT_RECEIPT_SECONDS: &'static str = "30";
}

impl Default for StaffSettings {
    fn default() -> Self {
        StaffSettings {
            duty: Duration::hours(12),
            vapid_subject: Self::DEFAULT_VAPID_SUBJECT.to_string(),
            receipt_seconds: 30,
            push_services: PushServices::default(),
        }
    }
}

impl Settings {
    /// `SERVICE_TIME_ZONE` when unset (an IANA name).
    pub const DEFAULT_TIME_ZONE: &'static str = "Europe/Berlin";

    /// Reads `SERVICE_MODE`, `SERVICE_TIME_ZONE`, `CALL_RETENTION_DAYS`,
    /// `LOW_BATTERY_PERCENT`, `STALE_AFTER_HOURS`, `DISPLAY_LIVE_URL`,
    /// `DUTY_HOURS`, `VAPID_SUBJECT`, `RECEIPT_SECONDS` and `PUSH_SERVICES`; `default_mode` applies
    /// when the mode is unset (sandbox locally, set explicitly by the stack in AWS).
    pub fn from_env(default_mode: Mode) -> Result<Self, String> {
        Self::from_vars(default_mode, |name| std::env::var(name).ok())
    }

    /// [`Settings::from_env`] over any source of variables; an empty value
    /// counts as unset.
    pub fn from_vars(
        default_mode: Mode,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let var = |name: &str| var(name).filter(|value| !value.trim().is_empty());
        let mode = match var("SERVICE_MODE") {
            Some(value) => value.parse()?,
            None => default_mode,
        };
        let zone = var("SERVICE_TIME_ZONE").unwrap_or_else(|| Self::DEFAULT_TIME_ZONE.to_string());
        let mut supervision = Thresholds::default();
        if let Some(value) = var("LOW_BATTERY_PERCENT") {
            supervision.low_battery_percent = parse_low_battery_percent(&value)?;
        }
        if let Some(value) = var("STALE_AFTER_HOURS") {
            supervision.stale_after = parse_stale_after_hours(&value)?;
        }
        let call_retention = match var("CALL_RETENTION_DAYS") {
            Some(value) => value.parse()?,
            None => CallRetention::default(),
        };
        let live_url = match var("DISPLAY_LIVE_URL") {
            Some(url) => Some(parse_live_url(&url)?),
            None => None,
        };
        let mut staff = StaffSettings::default();
        if let Some(value) = var("DUTY_HOURS") {
            staff.duty = parse_duty_hours(&value)?;
        }
        if let Some(value) = var("VAPID_SUBJECT") {
            staff.vapid_subject = parse_vapid_subject(&value)?;
        }
        if let Some(value) = var("RECEIPT_SECONDS") {
            staff.receipt_seconds = parse_receipt_seconds(&value)?;
        }
        if let Some(value) = var("PUSH_SERVICES") {
            staff.push_services = parse_push_services(&value)?;
        }
        Ok(Settings {
            mode,
            time_zone: parse_time_zone(&zone)?,
            call_retention,
            supervision,
            live_url,
            staff,
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
    /// `CALL_RETENTION_DAYS` when unset: 400 days, a year and a month.
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

    /// The retention in whole days, 1 to [`CallRetention::MAX_DAYS`].
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

/// An environment variable's value, trimmed; unset and empty (or only
/// blanks) are the same: `None`. How every function and command reads the
/// stack's variables, so that a blank one left in a template means unset.
pub fn env_value(name: &str) -> Option<String> {
    non_blank(std::env::var(name).ok())
}

/// `value` trimmed, `None` when it is empty.
pub fn non_blank(value: Option<String>) -> Option<String> {
    value
        .map(|value| value.trim().to_string())
        .filter(|value| !value.is_empty())
}

/// `LOW_BATTERY_PERCENT`: a number from 0 to 100 (a battery below it is low).
pub fn parse_low_battery_percent(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(percent) if (0.0..=100.0).contains(&percent) => Ok(percent),
        _ => Err(format!(
            "invalid LOW_BATTERY_PERCENT {text:?}: expected a number from 0 to 100"
        )),
    }
}

/// `STALE_AFTER_HOURS`: a whole number of hours, at least 1 (an element silent
/// for longer is stale).
pub fn parse_stale_after_hours(text: &str) -> Result<chrono::Duration, String> {
    // Beyond ten years a threshold supervises nothing; the bound also keeps
    // the duration far from chrono's limits.
    const MAX_HOURS: i64 = 24 * 366 * 10;
    match text.trim().parse::<i64>() {
        Ok(hours) if (1..=MAX_HOURS).contains(&hours) => Ok(chrono::Duration::hours(hours)),
        _ => Err(format!(
            "invalid STALE_AFTER_HOURS {text:?}: expected a whole number of hours from 1 to {MAX_HOURS}"
        )),
    }
}

/// `DUTY_HOURS`: how long a duty lasts, in hours from above 0 to a week.
/// Fractions are allowed (`0.5` is half an hour; the tests let a duty end
/// within seconds); the duty is kept to the millisecond.
pub fn parse_duty_hours(text: &str) -> Result<Duration, String> {
    const MAX_HOURS: f64 = 7.0 * 24.0;
    match text.trim().parse::<f64>() {
        Ok(hours) if hours > 0.0 && hours <= MAX_HOURS => {
            let milliseconds = (hours * 3_600_000.0).round() as i64;
            Ok(Duration::milliseconds(milliseconds.max(1)))
        }
        _ => Err(format!(
            "invalid DUTY_HOURS {text:?}: expected a number of hours above 0 and at most {MAX_HOURS}"
        )),
    }
}

/// `RECEIPT_SECONDS`: how long an alert may go without a receipt before its
/// person is not reached (§18), whole seconds from 1 to 600.
pub fn parse_receipt_seconds(text: &str) -> Result<i64, String> {
    const MAX_SECONDS: i64 = 600;
    match text.trim().parse::<i64>() {
        Ok(seconds) if (1..=MAX_SECONDS).contains(&seconds) => Ok(seconds),
        _ => Err(format!(
            "invalid RECEIPT_SECONDS {text:?}: expected whole seconds from 1 to {MAX_SECONDS}"
        )),
    }
}

/// `VAPID_SUBJECT`: a `mailto:` or `https:` URL (RFC 8292 §2.1), plain text
/// without spaces or control characters.
pub fn parse_vapid_subject(text: &str) -> Result<String, String> {
    let subject = text.trim();
    let rest = subject
        .strip_prefix("mailto:")
        .or_else(|| subject.strip_prefix("https://"));
    match rest {
        Some(rest) if !rest.is_empty() && subject.chars().all(|c| c.is_ascii_graphic()) => {
            Ok(subject.to_string())
        }
        _ => Err(format!(
            "invalid VAPID_SUBJECT {text:?}: expected a mailto: or https:// URL such as \
             mailto:pflege@example.org"
        )),
    }
}

/// Checks a `DISPLAY_LIVE_URL`: `ws://` or `wss://`, a host, nothing that
/// could leave the page's meta tag or its Content-Security-Policy.
pub fn parse_live_url(url: &str) -> Result<String, String> {
    let url = url.trim();
    let rest = url
        .strip_prefix("wss://")
        .or_else(|| url.strip_prefix("ws://"));
    let host = rest.map(|rest| rest.split(['/', '?']).next().unwrap_or_default());
    let plain = url
        .chars()
        .all(|c| c.is_ascii_graphic() && !matches!(c, '"' | '\'' | ';' | ',' | '<' | '>'));
    match host {
        Some(host) if !host.is_empty() && plain => Ok(url.to_string()),
        _ => Err(format!(
            "DISPLAY_LIVE_URL {url:?}: expected a ws:// or wss:// URL such as \
             wss://abc123.execute-api.eu-central-1.amazonaws.com/live"
        )),
    }
}

/// `scheme://host[:port]` of a URL checked by [`parse_live_url`]: what the
/// display page's Content-Security-Policy allows it to connect to.
pub(crate) fn live_url_origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find(['/', '?']) {
        Some(end) => &url[..after_scheme + end],
        None => url,
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
    use std::collections::HashMap;

    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Result<Settings, String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_vars(Mode::Sandbox, |name| vars.get(name).cloned())
    }

    #[test]
    fn defaults_when_unset_or_empty() {
        let settings = settings(&[("LOW_BATTERY_PERCENT", " "), ("SERVICE_MODE", "")]).unwrap();
        assert_eq!(settings.mode, Mode::Sandbox);
        assert_eq!(settings.time_zone, chrono_tz::Europe::Berlin);
        assert_eq!(settings.supervision.low_battery_percent, 20.0);
        assert_eq!(
            settings.supervision.stale_after,
            chrono::Duration::hours(24)
        );
    }

    #[test]
    fn supervision_thresholds_are_read() {
        let settings =
            settings(&[("LOW_BATTERY_PERCENT", "12.5"), ("STALE_AFTER_HOURS", "6")]).unwrap();
        assert_eq!(settings.supervision.low_battery_percent, 12.5);
        assert_eq!(settings.supervision.stale_after, chrono::Duration::hours(6));
    }

    #[test]
    fn bad_thresholds_are_refused_with_the_variable_named() {
        for bad in ["-1", "100.5", "low", "NaN"] {
            let error = settings(&[("LOW_BATTERY_PERCENT", bad)]).unwrap_err();
            assert_eq!(
                error,
                format!("invalid LOW_BATTERY_PERCENT {bad:?}: expected a number from 0 to 100")
            );
        }
        for bad in ["0", "1.5", "-3", "day", "87841"] {
            let error = settings(&[("STALE_AFTER_HOURS", bad)]).unwrap_err();
            assert!(
                error.starts_with(&format!(
                    "invalid STALE_AFTER_HOURS {bad:?}: expected a whole number"
                )),
                "{error}"
            );
        }
        assert_eq!(parse_low_battery_percent("0"), Ok(0.0));
        assert_eq!(parse_low_battery_percent("100"), Ok(100.0));
    }
    #[test]
    fn duty_hours_and_vapid_subject_are_read_with_their_defaults() {
        let defaults = settings(&[]).unwrap().staff;
        assert_eq!(defaults.duty, Duration::hours(12));
        assert_eq!(defaults.vapid_subject, "mailto:admin@localhost");
        assert_eq!(
            defaults.push_services.to_string(),
            "fcm.googleapis.com,*.push.apple.com,*.push.services.mozilla.com,*.notify.windows.com"
        );
        let tests = settings(&[("PUSH_SERVICES", "localhost")]).unwrap().staff;
        assert!(tests.push_services.allows("http://localhost:9/x"));
        assert!(!tests.push_services.allows("https://fcm.googleapis.com/x"));
        let error = settings(&[("PUSH_SERVICES", "10.0.0.1")]).unwrap_err();
        assert!(error.starts_with("invalid PUSH_SERVICES"), "{error}");
        let set = settings(&[
            ("DUTY_HOURS", "0.5"),
            ("VAPID_SUBJECT", " https://pflege.example.org/kontakt "),
        ])
        .unwrap()
        .staff;
        assert_eq!(set.duty, Duration::minutes(30));
        assert_eq!(set.vapid_subject, "https://pflege.example.org/kontakt");
        assert_eq!(parse_duty_hours("0.001"), Ok(Duration::milliseconds(3600)));
        assert_eq!(parse_duty_hours("168"), Ok(Duration::hours(168)));
        for bad in ["0", "-1", "168.5", "zwölf", "NaN", "inf"] {
            let error = settings(&[("DUTY_HOURS", bad)]).unwrap_err();
            assert!(
                error.starts_with(&format!("invalid DUTY_HOURS {bad:?}")),
                "{error}"
            );
        }
        for bad in [
            "admin@localhost",
            "http://example.org",
            "mailto:",
            "mailto:a b",
        ] {
            let error = settings(&[("VAPID_SUBJECT", bad)]).unwrap_err();
            assert!(
                error.starts_with(&format!("invalid VAPID_SUBJECT {bad:?}")),
                "{error}"
            );
        }
    }

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

    #[test]
    fn a_live_url_is_a_websocket_url_that_stays_in_its_attribute() {
        let url = "wss://abc.execute-api.eu-central-1.amazonaws.com/live";
        assert_eq!(parse_live_url(&format!(" {url} ")), Ok(url.to_string()));
        assert_eq!(
            live_url_origin(url),
            "wss://abc.execute-api.eu-central-1.amazonaws.com"
        );
        assert_eq!(
            live_url_origin("ws://127.0.0.1:9000"),
            "ws://127.0.0.1:9000"
        );
        assert_eq!(live_url_origin("ws://h:1?x=1"), "ws://h:1");
        for bad in [
            "https://example.org/live",
            "wss://",
            "wss://h/a b",
            "wss://h/\"><script>",
            "wss://h; script-src *",
        ] {
            assert!(parse_live_url(bad).is_err(), "{bad}");
        }
    }
}
