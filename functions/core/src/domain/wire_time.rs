//! Times on the wire: `YYYY-MM-DD HH:MM:SS` in the installation's time zone.
//! Stored as UTC instants with whole seconds, the resolution of the wire.

use chrono::{DateTime, Datelike, Duration, NaiveDateTime, SubsecRound, TimeZone, Timelike, Utc};
use chrono_tz::Tz;

/// The chrono format of a wire time, `YYYY-MM-DD HH:MM:SS`: local, no
/// offset, whole seconds.
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
    let instant = local_to_utc(naive, zone);
    // An instant the stored form cannot hold is no time either: ahead of UTC,
    // "0000-01-01 00:00:00" lies in the year -1, behind it "9999-12-31
    // 23:59:59" in 10000, and RFC 3339 does not read those back, so a call
    // opened then would fail every later request on its address (fuzzing).
    (from_stored(&to_stored(instant)) == Some(instant)).then_some(instant)
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
///
/// Written digit by digit: every record of a response carries one or two of
/// these, and chrono's `format` reads the format string anew on each call,
/// which made it a tenth of a 100-item element request (issue 7). Years
/// beyond four digits, which no wire time has, take chrono's way.
pub fn format_local(instant: DateTime<Utc>, zone: Tz) -> String {
    let local = instant.with_timezone(&zone).naive_local();
    let year = match u32::try_from(local.year()) {
        Ok(year) if year <= 9999 => year,
        _ => return local.format(WIRE_FORMAT).to_string(),
    };
    let mut text = *b"YYYY-MM-DD HH:MM:SS";
    put_two_digits(&mut text[0..2], year / 100);
    put_two_digits(&mut text[2..4], year % 100);
    put_two_digits(&mut text[5..7], local.month());
    put_two_digits(&mut text[8..10], local.day());
    put_two_digits(&mut text[11..13], local.hour());
    put_two_digits(&mut text[14..16], local.minute());
    put_two_digits(&mut text[17..19], local.second());
    String::from_utf8(text.to_vec()).expect("ASCII digits and separators")
}

/// Writes `value` (below 100) as two decimal digits into `slot`.
fn put_two_digits(slot: &mut [u8], value: u32) {
    slot[0] = b'0' + (value / 10 % 10) as u8;
    slot[1] = b'0' + (value % 10) as u8;
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
    fn rejects_times_the_store_cannot_keep() {
        let st_johns: Tz = "America/St_Johns".parse().unwrap();
        // Berlin's local mean time before 1893 is UTC+00:53:28.
        for (bad, zone) in [
            ("0000-01-01 00:00:00", berlin()),
            ("0000-01-01 00:53:27", berlin()),
            ("9999-12-31 23:59:59", st_johns),
        ] {
            assert!(
                parse_local(bad, zone).is_none(),
                "{bad:?} in {zone} accepted"
            );
        }
        for good in ["0001-01-01 12:00:00", "9999-12-31 23:59:59"] {
            let t = parse_local(good, berlin()).expect(good);
            assert_eq!(from_stored(&to_stored(t)), Some(t), "{good}");
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
    fn local_times_across_the_clock_changes_are_real_seconds_apart() {
        // A call's duration is the difference of its instants: across the end
        // of summer time 01:30 → 03:30 local is three hours, across its start
        // one hour, and in UTC (no summer time) two. (The black-box suite can
        // no longer send these: a sent time lies within the last week.)
        let hours = |from: &str, to: &str, zone: Tz| {
            (parse_local(to, zone).unwrap() - parse_local(from, zone).unwrap()).num_hours()
        };
        assert_eq!(
            hours("2026-10-25 01:30:00", "2026-10-25 03:30:00", berlin()),
            3
        );
        assert_eq!(
            hours("2026-03-29 01:30:00", "2026-03-29 03:30:00", berlin()),
            1
        );
        assert_eq!(
            hours("2026-10-25 01:30:00", "2026-10-25 03:30:00", chrono_tz::UTC),
            2
        );
    }

    #[test]
    fn formats_like_chrono_around_the_clock_changes_and_the_year_limits() {
        let zones: [Tz; 3] = [
            berlin(),
            chrono_tz::UTC,
            "America/St_Johns".parse().unwrap(),
        ];
        let instants = [
            "2026-03-29T00:59:59Z",
            "2026-03-29T01:00:00Z",
            "2026-10-25T00:30:00Z",
            "2026-10-25T01:30:00Z",
            "2026-12-31T23:00:00Z",
            "0001-01-01T12:00:00Z",
            "9999-12-31T12:00:00Z",
            "+10000-01-01T12:00:00Z",
            "-0001-06-01T12:00:00Z",
        ];
        for zone in zones {
            for text in instants {
                let instant = DateTime::parse_from_rfc3339(text)
                    .map(|t| t.with_timezone(&Utc))
                    .or_else(|_| text.parse::<DateTime<Utc>>())
                    .unwrap();
                assert_eq!(
                    format_local(instant, zone),
                    instant.with_timezone(&zone).format(WIRE_FORMAT).to_string(),
                    "{text} in {zone}"
                );
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn formats_like_chrono(seconds in -62_135_596_800i64..253_402_300_800) {
            let instant = DateTime::from_timestamp(seconds, 0).unwrap();
            let zone = berlin();
            proptest::prop_assert_eq!(
                format_local(instant, zone),
                instant.with_timezone(&zone).format(WIRE_FORMAT).to_string()
            );
        }
    }

    #[test]
    fn stored_form_round_trips() {
        let t = parse_local("2026-07-01 12:00:00", berlin()).unwrap();
        assert_eq!(from_stored(&to_stored(t)), Some(t));
    }
}
