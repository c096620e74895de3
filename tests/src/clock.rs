//! Times to send as `created_at` and `closed_at`: the service refuses any
//! that lies more than 7 days before or 5 minutes after its clock
//! (DECISIONS §5), so a test dates its calls relative to now, never on a
//! fixed day.

use chrono::{DateTime, Duration, SubsecRound, Utc};
use chrono_tz::Tz;

use crate::{Response, validation_body};

/// How far back a sent time may lie (DECISIONS §5).
pub const MAX_PAST: Duration = Duration::days(7);
/// How far ahead a sent time may lie (DECISIONS §5).
pub const MAX_FUTURE: Duration = Duration::minutes(5);

/// One reading of the clock, in whole seconds like the wire, and a zone to
/// show it in: times taken from the same reading keep their exact distance,
/// so a test can assert a duration to the second.
#[derive(Debug, Clone, Copy)]
pub struct WireClock {
    /// The reading, in whole seconds.
    pub now: DateTime<Utc>,
    /// The zone the wire times are shown in (the server's).
    pub zone: Tz,
}

impl WireClock {
    /// Now, shown in the server's default zone, Europe/Berlin.
    pub fn berlin() -> Self {
        Self::in_zone("Europe/Berlin")
    }

    /// Now, shown in `zone` (an IANA name).
    pub fn in_zone(zone: &str) -> Self {
        WireClock {
            now: Utc::now().trunc_subsecs(0),
            zone: zone.parse().expect("IANA zone"),
        }
    }

    /// The wire time `YYYY-MM-DD HH:MM:SS` of now + `seconds` (negative: ago).
    pub fn at(&self, seconds: i64) -> String {
        self.show(self.now + Duration::seconds(seconds))
    }

    /// The wire time of `instant` in this clock's zone.
    pub fn show(&self, instant: DateTime<Utc>) -> String {
        instant
            .with_timezone(&self.zone)
            .format("%Y-%m-%d %H:%M:%S")
            .to_string()
    }

    /// The 422 message of a sent time outside the range, for a request the
    /// server read `at_server` seconds after this clock's reading (DECISIONS
    /// §5): `<key> muss zwischen <now − 7 days> und <now + 5 minutes> liegen.`
    pub fn range_message(&self, key: &str, at_server: i64) -> String {
        let now = self.now + Duration::seconds(at_server);
        format!(
            "{key} muss zwischen {} und {} liegen.",
            self.show(now - MAX_PAST),
            self.show(now + MAX_FUTURE)
        )
    }

    /// Asserts that `response` is exactly the 422 of DECISIONS §5 for each of
    /// `keys` (in that order), its range around the server's clock when it
    /// read the request: this clock's reading or up to 5 s later.
    pub fn assert_out_of_range(&self, response: &Response, keys: &[&str]) {
        assert_eq!(response.status, 422, "{}", response.text);
        let bodies: Vec<String> = (0..=5)
            .map(|at_server| {
                let messages: Vec<[String; 1]> = keys
                    .iter()
                    .map(|key| [self.range_message(key, at_server)])
                    .collect();
                let errors: Vec<(&str, Vec<&str>)> = keys
                    .iter()
                    .zip(&messages)
                    .map(|(key, [message])| (*key, vec![message.as_str()]))
                    .collect();
                let errors: Vec<(&str, &[&str])> = errors
                    .iter()
                    .map(|(key, messages)| (*key, messages.as_slice()))
                    .collect();
                validation_body(&errors)
            })
            .collect();
        assert!(
            bodies.contains(&response.text),
            "{}\nis none of\n{}",
            response.text,
            bodies.join("\n")
        );
    }
}
