//! Settings of one installation (DECISIONS §10): the mode, the time zone and
//! where displays find the live socket.

use std::fmt;
use std::str::FromStr;

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
    /// Where the display page opens its live socket (`DISPLAY_LIVE_URL`, in
    /// AWS the WebSocket API's URL); `None`: the same origin's
    /// `/api/v1/display/live` (DECISIONS §11).
    pub live_url: Option<String>,
}

impl Settings {
    pub const DEFAULT_TIME_ZONE: &'static str = "Europe/Berlin";

    /// Reads `SERVICE_MODE` and `SERVICE_TIME_ZONE`; `default_mode` applies when
    /// the mode is unset (sandbox locally, set explicitly by the stack in AWS).
    pub fn from_env(default_mode: Mode) -> Result<Self, String> {
        let mode = match std::env::var("SERVICE_MODE") {
            Ok(value) if !value.trim().is_empty() => value.parse()?,
            _ => default_mode,
        };
        let zone = std::env::var("SERVICE_TIME_ZONE")
            .ok()
            .filter(|zone| !zone.trim().is_empty())
            .unwrap_or_else(|| Self::DEFAULT_TIME_ZONE.to_string());
        let live_url = match std::env::var("DISPLAY_LIVE_URL") {
            Ok(url) if !url.trim().is_empty() => Some(parse_live_url(&url)?),
            _ => None,
        };
        Ok(Settings {
            mode,
            time_zone: parse_time_zone(&zone)?,
            live_url,
        })
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
pub fn live_url_origin(url: &str) -> &str {
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
    use super::*;

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
