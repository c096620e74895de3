//! Times on the wire: `YYYY-MM-DD HH:MM:SS` in the installation's time zone.
//! Stored as UTC instants with whole seconds, the resolution of the wire.

use chrono::{DateTime, Duration, NaiveDateTime, SubsecRound, TimeZone, Utc};
use chrono_tz::Tz;

pub const WIRE_FORMAT: &str = "%Y-%m-%d %H:%M:%S";

/// Parses a wire time strictly (exactly 19 characters, a real calendar date).
/// Returns `None` when the text does not match the format.
pub fn parse_local(text: &str, zone: Tz) -> Option<DateTime<Utc>> {
    // chrono accepts single-digit fields; the format demands two digits.
    let bytes = text.as_bytes();
    let shape_ok = bytes.len() == 19
        && bytes.iter().enumerate().all(|(i, b)| match i {
            4 | 7 => *b == b'-',
            10 => *b == b' ',
            13 | 16 => *b == b':',
            _ => b.is_ascii_digit(),
        });
    if !shape_ok {
        return None;
    }
    let naive = NaiveDateTime::parse_from_str(text, WIRE_FORMAT).ok()?;
    Some(local_to_utc(naive, zone))
}

/// Maps a local time to an instant. In the autumn overlap the earlier instant
/// is taken; a time inside the spring gap (which no clock showed) is read as
/// the same wall time shifted past the gap, as most clocks do.
fn local_to_utc(naive: NaiveDateTime, zone: Tz) -> DateTime<Utc> {
    if let Some(local) = zone.from_local_datetime(&naive).earliest() {
        return local.with_timezone(&Utc);
    }
    let shifted = naive + Duration::hours(1);
    match zone.from_local_datetime(&shifted).earliest() {
        Some(local) => local.with_timezone(&Utc),
        // No zone has a gap over an hour long; fall back to UTC rather than panic.
        None => Utc.from_utc_datetime(&naive),
    }
}

/// Formats an instant as a wire time in `zone`.
pub fn format_local(instant: DateTime<Utc>, zone: Tz) -> String {
    instant.with_timezone(&zone).format(WIRE_FORMAT).to_string()
}

/// The current instant, truncated to whole seconds like every stored time.
pub fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(0)
}

/// Formats an instant for storage: RFC 3339 in UTC, fixed width, so that text
/// comparison orders instants.
pub fn to_stored(instant: DateTime<Utc>) -> String {
    instant.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Reads a stored instant.
pub fn from_stored(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc).trunc_subsecs(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn berlin() -> Tz {
        "Europe/Berlin".parse().unwrap()
    }

    #[test]
    fn parses_and_formats_in_the_installation_zone() {
        let t = parse_local("2026-07-01 12:00:00", berlin()).unwrap();
        assert_eq!(to_stored(t), "2026-07-01T10:00:00Z");
        assert_eq!(format_local(t, berlin()), "2026-07-01 12:00:00");
        let winter = parse_local("2026-01-15 08:30:05", berlin()).unwrap();
        assert_eq!(to_stored(winter), "2026-01-15T07:30:05Z");
    }

    #[test]
    fn rejects_other_shapes() {
        for bad in [
            "2026-7-01 12:00:00",
            "2026-07-01T12:00:00",
            "2026-07-01 12:00",
            "2026-02-30 12:00:00",
            "2026-07-01 24:00:00",
            " 2026-07-01 12:00:00",
            "",
        ] {
            assert!(parse_local(bad, berlin()).is_none(), "{bad:?} accepted");
        }
    }

    #[test]
    fn overlap_takes_the_earlier_instant_and_gap_shifts_forward() {
        let overlap = parse_local("2026-10-25 02:30:00", berlin()).unwrap();
        assert_eq!(to_stored(overlap), "2026-10-25T00:30:00Z");
        let gap = parse_local("2026-03-29 02:30:00", berlin()).unwrap();
        assert_eq!(to_stored(gap), "2026-03-29T01:30:00Z");
    }

    #[test]
    fn stored_form_round_trips() {
        let t = parse_local("2026-07-01 12:00:00", berlin()).unwrap();
        assert_eq!(from_stored(&to_stored(t)), Some(t));
    }
}
