//! When a delivery is tried again, when it is given up, and which
//! deliveries may go now (DECISIONS §16): at least once, in order per call
//! and endpoint, 5 s per attempt, retried after a network error, a timeout,
//! 408, 429 or 5xx with backoff 1, 2, 4, 8, 16, 30, 30 … s; alarm events
//! while their call's alert is current, the others for 24 h.
//!
//! Time is a parameter: the dispatcher passes "now", the tests make an hour
//! pass without waiting for it.

use chrono::{DateTime, Duration, Utc};

use super::event::EventType;

/// The longest an attempt may take before it counts as failed.
pub const ATTEMPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The longest an outbound attempt (a webhook's or a push's) may take to
/// connect (DECISIONS §20): a host that does not answer frees its share of
/// the sender's concurrency soon.
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// How long an event that is not an alarm event is tried.
pub(crate) fn retry_window() -> Duration {
    Duration::hours(24)
}

/// The backoff after the `failed`-th failed attempt (1-based): 1, 2, 4, 8,
/// 16 s, then every 30 s.
pub(crate) fn backoff(failed: u32) -> Duration {
    let seconds = match failed {
        0 | 1 => 1,
        2 => 2,
        3 => 4,
        4 => 8,
        5 => 16,
        _ => 30,
    };
    Duration::seconds(seconds)
}

/// What an attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The receiver answered with this status.
    Status(u16),
    /// No answer: refused, reset, a name that did not resolve, TLS failed.
    NetworkError,
    /// No answer within [`ATTEMPT_TIMEOUT`].
    TimedOut,
    /// Not sent: the host is, or resolved only to, an address of the
    /// home's network or this machine, and the endpoint was not created
    /// with `--private-network` (DECISIONS §20). Tried again like a
    /// network error: a name may resolve elsewhere later.
    PrivateAddress,
}

impl Outcome {
    /// Whether the receiver took the event: any 2xx status.
    pub fn delivered(self) -> bool {
        matches!(self, Outcome::Status(200..=299))
    }

    /// Whether trying again may help: the receiver was away, overloaded or
    /// failing. Any other answer (400, 401, 404, a redirect …) says it will
    /// not take this event, and asking again would not change that.
    pub fn retryable(self) -> bool {
        match self {
            Outcome::NetworkError | Outcome::TimedOut | Outcome::PrivateAddress => true,
            Outcome::Status(status) => status == 408 || status == 429 || status >= 500,
        }
    }
}

/// What becomes of a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    Delivered,
    RetryAt(DateTime<Utc>),
    GivenUp(GiveUp),
}

/// Why a delivery is given up (the delivery log says so).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GiveUp {
    /// The receiver answered with a status that is not retried.
    Refused(u16),
    /// An alarm event whose alert is no longer current.
    AlertEnded,
    /// Another event, tried for [`retry_window`].
    WindowPassed,
}

impl GiveUp {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            GiveUp::Refused(_) => "refused",
            GiveUp::AlertEnded => "alert_ended",
            GiveUp::WindowPassed => "window_passed",
        }
    }
}

/// Whether an event written at `created_at` is still to be sent at `now`:
/// checked before every attempt, so that a receiver back after an hour gets
/// what is still due and nothing that is not.
pub(crate) fn still_due(
    kind: EventType,
    created_at: DateTime<Utc>,
    now: DateTime<Utc>,
    alert_current: bool,
) -> Result<(), GiveUp> {
    if kind.is_alarm() {
        if alert_current {
            Ok(())
        } else {
            Err(GiveUp::AlertEnded)
        }
    } else if now - created_at <= retry_window() {
        Ok(())
    } else {
        Err(GiveUp::WindowPassed)
    }
}

/// After the `attempts`-th attempt (1-based) of an event written at
/// `created_at`, made at `attempted_at`, which came to `outcome`.
pub(crate) fn after_attempt(
    kind: EventType,
    created_at: DateTime<Utc>,
    attempts: u32,
    attempted_at: DateTime<Utc>,
    outcome: Outcome,
    alert_current: bool,
) -> Next {
    if outcome.delivered() {
        return Next::Delivered;
    }
    // Only an answer is final: a network error or a timeout is retried.
    if let Outcome::Status(status) = outcome
        && !outcome.retryable()
    {
        return Next::GivenUp(GiveUp::Refused(status));
    }
    let retry_at = attempted_at + backoff(attempts);
    match still_due(kind, created_at, retry_at, alert_current) {
        Ok(()) => Next::RetryAt(retry_at),
        Err(why) => Next::GivenUp(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use proptest::prelude::*;

    fn start() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 26, 3, 0, 0).unwrap()
    }

    #[test]
    fn the_backoff_is_1_2_4_8_16_then_30() {
        let delays: Vec<i64> = (1..=9).map(|n| backoff(n).num_seconds()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 30, 30, 30, 30]);
    }

    #[test]
    fn which_answers_are_retried() {
        for retried in [
            Outcome::NetworkError,
            Outcome::TimedOut,
            Outcome::Status(408),
            Outcome::Status(429),
            Outcome::Status(500),
            Outcome::Status(503),
        ] {
            assert!(retried.retryable(), "{retried:?}");
        }
        for final_answer in [400, 401, 404, 410, 301] {
            assert!(!Outcome::Status(final_answer).retryable());
            assert_eq!(
                after_attempt(
                    EventType::CallClosed,
                    start(),
                    1,
                    start(),
                    Outcome::Status(final_answer),
                    true
                ),
                Next::GivenUp(GiveUp::Refused(final_answer))
            );
        }
        assert!(Outcome::Status(204).delivered());
    }

    #[test]
    fn three_503_then_200_retries_after_1_2_and_4_seconds() {
        let mut at = start();
        let mut attempts = 0;
        let mut times = vec![at];
        for outcome in [
            Outcome::Status(503),
            Outcome::Status(503),
            Outcome::Status(503),
            Outcome::Status(200),
        ] {
            attempts += 1;
            match after_attempt(EventType::CallAlert, start(), attempts, at, outcome, true) {
                Next::RetryAt(next) => {
                    at = next;
                    times.push(at);
                }
                Next::Delivered => break,
                other => panic!("{other:?}"),
            }
        }
        let offsets: Vec<i64> = times.iter().map(|t| (*t - start()).num_seconds()).collect();
        assert_eq!(offsets, [0, 1, 3, 7]);
    }

    #[test]
    fn a_receiver_back_after_an_hour_gets_what_is_still_due() {
        let back = start() + Duration::hours(1);
        assert_eq!(
            still_due(EventType::CallClosed, start(), back, false),
            Ok(())
        );
        assert_eq!(still_due(EventType::CallAlert, start(), back, true), Ok(()));
        assert_eq!(
            still_due(EventType::CallAlert, start(), back, false),
            Err(GiveUp::AlertEnded)
        );
        assert_eq!(
            still_due(
                EventType::CallClosed,
                start(),
                start() + Duration::hours(25),
                true
            ),
            Err(GiveUp::WindowPassed)
        );
    }

    fn outcome() -> impl Strategy<Value = Outcome> {
        prop_oneof![
            Just(Outcome::NetworkError),
            Just(Outcome::TimedOut),
            Just(Outcome::PrivateAddress),
            (100u16..600).prop_map(Outcome::Status),
        ]
    }

    fn kind() -> impl Strategy<Value = EventType> {
        (0..EventType::ALL.len()).prop_map(|i| EventType::ALL[i])
    }

    proptest! {
        /// Whatever happens: a delivered attempt ends it; a retry is later
        /// than the attempt by the backoff; an alarm event is never retried
        /// once its alert ended; any other event never past 24 h.
        #[test]
        fn retries_keep_to_the_rules(
            kind in kind(),
            outcome in outcome(),
            attempts in 1u32..2_000,
            waited in 0i64..(30 * 3_600),
            alert_current in any::<bool>(),
        ) {
            let attempted_at = start() + Duration::seconds(waited);
            let next = after_attempt(kind, start(), attempts, attempted_at, outcome, alert_current);
            if outcome.delivered() {
                prop_assert_eq!(next, Next::Delivered);
            }
            if let Next::RetryAt(at) = next {
                prop_assert!(outcome.retryable());
                prop_assert_eq!(at - attempted_at, backoff(attempts));
                if kind.is_alarm() {
                    prop_assert!(alert_current);
                } else {
                    prop_assert!(at - start() <= retry_window());
                }
            }
            if !outcome.delivered() && !outcome.retryable() {
                prop_assert!(matches!(next, Next::GivenUp(GiveUp::Refused(_))));
            }
        }
    }
}
