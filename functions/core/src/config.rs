//! Settings of one installation (DECISIONS §10): the mode and the time zone.

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
        Ok(Settings {
            mode,
            time_zone: parse_time_zone(&zone)?,
        })
    }
}

/// Parses an IANA zone name such as `Europe/Berlin`.
pub fn parse_time_zone(name: &str) -> Result<Tz, String> {
    name.trim().parse::<Tz>().map_err(|_| {
        format!("unknown time zone {name:?}: expected an IANA name such as Europe/Berlin")
    })
}
