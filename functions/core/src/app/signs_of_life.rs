//! Every signed request of a consumer with a heartbeat is a sign of life
//! (DECISIONS §19), kept at a bounded cost: this process writes a
//! consumer's sign of life at most once per third of its interval. A link
//! is silent only after 2 × its interval without one, so a skipped write
//! never makes a live link look silent, and a consumer silent in the store
//! has had no write for longer than a third of its interval: its next
//! request always writes, and so always ends the silence.
//!
//! A failed write never fails the request: it is logged (WARN) and
//! forgotten, so the consumer's next request tries again.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Duration, Utc};

use crate::app::AppState;
use crate::domain::links::silent_after;
use crate::domain::model::Consumer;

/// Beyond this many consumers the map starts over (bounded memory; an
/// installation has a handful).
const MAX_CONSUMERS: usize = 10_000;

/// When this process last wrote each consumer's sign of life.
#[derive(Default)]
pub(crate) struct SignsOfLife {
    written: Mutex<HashMap<String, DateTime<Utc>>>,
}

/// What [`SignsOfLife::claim`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Claim {
    /// Write now; `previous` is restored if the write fails.
    Write { previous: Option<DateTime<Utc>> },
    /// Written at this time, less than a third of the interval ago.
    Written(DateTime<Utc>),
}

impl SignsOfLife {
    /// Whether a sign of life at `now` of a consumer with a heartbeat of
    /// `seconds` is to be written; when it is, `now` is claimed at once, so
    /// that concurrent requests of the same consumer write it once.
    fn claim(&self, consumer: &str, seconds: i64, now: DateTime<Utc>) -> Claim {
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        let previous = written.get(consumer).copied();
        if let Some(at) = previous
            && now < at + Duration::seconds(seconds / 3)
            && now >= at
        {
            return Claim::Written(at);
        }
        if written.len() >= MAX_CONSUMERS {
            written.clear();
        }
        written.insert(consumer.to_string(), now);
        Claim::Write { previous }
    }

    /// The write claimed at `claimed` failed: the consumer's next request
    /// tries again.
    fn failed(&self, consumer: &str, claimed: DateTime<Utc>, previous: Option<DateTime<Utc>>) {
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        if written.get(consumer) == Some(&claimed) {
            match previous {
                Some(at) => written.insert(consumer.to_string(), at),
                None => written.remove(consumer),
            };
        }
    }
}

/// Keeps `consumer`'s sign of life of a request at `now` (see the module)
/// and returns when the consumer would be silent by what this process
/// knows it wrote (the heartbeat's `next_before`); `None` for a consumer
/// without a heartbeat, which costs nothing. A silence the write ended is
/// announced ([`crate::app::silence::announce_back`]).
pub(crate) async fn keep(
    state: &AppState,
    consumer: &Consumer,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let seconds = consumer.heartbeat_seconds?;
    let Some(links) = &state.links else {
        return Some(silent_after(now, seconds));
    };
    let previous = match state.signs_of_life.claim(&consumer.id, seconds, now) {
        Claim::Written(at) => return Some(silent_after(at, seconds)),
        Claim::Write { previous } => previous,
    };
    match links.sign_of_life(&consumer.id, now).await {
        Ok(Some(silence)) => {
            crate::app::silence::announce_back(state, &consumer.id, &silence, now).await;
        }
        Ok(None) => {}
        Err(error) => {
            tracing::warn!(consumer = %consumer.id, %error, "sign of life not kept");
            state.signs_of_life.failed(&consumer.id, now, previous);
            return Some(silent_after(previous.unwrap_or(now), seconds));
        }
    }
    Some(silent_after(now, seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_780_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn one_write_per_third_of_the_interval() {
        let signs = SignsOfLife::default();
        assert_eq!(signs.claim("c", 60, at(0)), Claim::Write { previous: None });
        assert_eq!(signs.claim("c", 60, at(1)), Claim::Written(at(0)));
        assert_eq!(signs.claim("c", 60, at(19)), Claim::Written(at(0)));
        assert_eq!(
            signs.claim("c", 60, at(20)),
            Claim::Write {
                previous: Some(at(0))
            }
        );
        // Another consumer has its own.
        assert_eq!(signs.claim("d", 60, at(1)), Claim::Write { previous: None });
    }

    #[test]
    fn a_failed_write_is_tried_again() {
        let signs = SignsOfLife::default();
        assert!(matches!(signs.claim("c", 60, at(0)), Claim::Write { .. }));
        signs.failed("c", at(0), None);
        assert_eq!(signs.claim("c", 60, at(1)), Claim::Write { previous: None });
    }

    #[test]
    fn a_clock_going_back_writes() {
        let signs = SignsOfLife::default();
        signs.claim("c", 60, at(100));
        assert!(matches!(signs.claim("c", 60, at(50)), Claim::Write { .. }));
    }
}
