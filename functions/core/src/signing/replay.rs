//! Optional replay protection (docs/security.md).
//!
//! The spec's signature covers target, consumer and data but no time, so a
//! captured request verifies forever. A client may add a top-level
//! `signed_at` (Unix seconds, an integer) and sign it: the signing string
//! becomes `<target>.<consumer>.<data_json>.<signed_at>`. Appending keeps the
//! two forms apart: a spec string always ends with the `}` or `]` of
//! `data_json`, an extended one with a digit.
//!
//! A consumer whose record says `require_signed_time` must send it; every
//! request that carries it (required or not) is refused when it is more than
//! [`WINDOW_SECONDS`] off the server's clock. Clients that never send it see
//! the spec's behaviour unchanged.
//!
//! Within the window a repeat is treated as a client's retry (DECISIONS §1:
//! every operation is safe to repeat). An open without `created_at` and a
//! close without `closed_at` take the signed time (never a future one) as
//! "the current time" of the spec, so a client's open and close keep their
//! order on its own clock, and a repeated close never closes a call opened
//! after it was signed.

use chrono::{DateTime, Utc};

use crate::domain::model::Consumer;

/// How far `signed_at` may be from the server's clock, either way.
pub(crate) const WINDOW_SECONDS: i64 = 300;

/// The top-level key of the signed request time.
pub(crate) const FIELD: &str = "signed_at";

/// Why a request whose hash verified is refused for its signed time; the
/// HTTP layer answers each with its 400 (`crate::http::error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The consumer requires `signed_at` and the request has none.
    Required,
    /// `signed_at` is more than [`WINDOW_SECONDS`] off the server's clock.
    OutOfRange,
}

/// Appends `.<signed_at>` to a spec signing string, when the request has one.
pub(crate) fn extend_signing_string(signing_string: &mut String, signed_at: Option<i64>) {
    if let Some(seconds) = signed_at {
        signing_string.push('.');
        signing_string.push_str(&seconds.to_string());
    }
}

/// Step 3b of the checks, after the hash verified: the consumer's requirement
/// and the window.
pub(crate) fn check(
    consumer: &Consumer,
    signed_at: Option<i64>,
    now: DateTime<Utc>,
) -> Result<(), Refusal> {
    match signed_at {
        None if consumer.require_signed_time => Err(Refusal::Required),
        None => Ok(()),
        Some(seconds) if seconds.abs_diff(now.timestamp()) > WINDOW_SECONDS.unsigned_abs() => {
            Err(Refusal::OutOfRange)
        }
        Some(_) => Ok(()),
    }
}

/// The instant a request stands for: its signed time when it has one (never
/// later than `now`), else `now`.
pub(crate) fn request_time(signed_at: Option<i64>, now: DateTime<Utc>) -> DateTime<Utc> {
    signed_at
        .and_then(|seconds| DateTime::from_timestamp(seconds, 0))
        .map_or(now, |signed| signed.min(now))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn consumer(require_signed_time: bool) -> Consumer {
        Consumer {
            id: "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f".into(),
            name: "Zentrale".into(),
            secrets: vec!["s".into()],
            allow_sha1: false,
            created_at: Utc::now(),
            expires_at: None,
            require_signed_time,
            heartbeat_seconds: None,
        }
    }

    #[test]
    fn the_signing_string_grows_only_with_a_signed_time() {
        let mut spec = "A.c.{}".to_string();
        extend_signing_string(&mut spec, None);
        assert_eq!(spec, "A.c.{}");
        let mut extended = "A.c.{}".to_string();
        extend_signing_string(&mut extended, Some(1_763_772_000));
        assert_eq!(extended, "A.c.{}.1763772000");
    }

    #[test]
    fn the_requirement_and_the_window() {
        let now = DateTime::from_timestamp(1_763_772_000, 0).unwrap();
        let t = now.timestamp();
        assert!(check(&consumer(false), None, now).is_ok());
        assert!(matches!(
            check(&consumer(true), None, now),
            Err(Refusal::Required)
        ));
        for consumer in [consumer(false), consumer(true)] {
            assert!(check(&consumer, Some(t), now).is_ok());
            assert!(check(&consumer, Some(t - 300), now).is_ok());
            assert!(check(&consumer, Some(t + 300), now).is_ok());
            for off in [t - 301, t + 301, 0, i64::MIN, i64::MAX] {
                assert!(
                    matches!(check(&consumer, Some(off), now), Err(Refusal::OutOfRange)),
                    "{off}"
                );
            }
        }
    }

    #[test]
    fn a_request_stands_for_its_signed_time_but_never_a_future_one() {
        let now = DateTime::from_timestamp(1_763_772_000, 0).unwrap();
        assert_eq!(request_time(None, now), now);
        assert_eq!(
            request_time(Some(1_763_771_990), now),
            DateTime::from_timestamp(1_763_771_990, 0).unwrap()
        );
        assert_eq!(request_time(Some(1_763_772_100), now), now);
    }
}
