//! The one place the service reads the clock and the random source for a
//! fresh id. The domain reads neither: its functions take the time and the
//! ids as parameters, so that they are pure functions, tested with fixed
//! times and ids. (Secrets and tokens come from the random source in
//! [`crate::signing`].)

use chrono::{DateTime, SubsecRound, Utc};

/// The current instant, truncated to whole seconds like every stored time.
pub fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(0)
}

/// The current instant to the millisecond: a sign-on test's time, which
/// its receipt names (DECISIONS §18), so that two tests within a second (a
/// new phone's, then the sign-on's) are two, each with a receipt of its own.
pub fn now_ms() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(3)
}

/// A fresh `webhook-id`: `msg_` and a UUID (the Standard Webhooks
/// convention), unique per event, the same on every retry of it. Version 7
/// (RFC 9562: the time in milliseconds first, then random bits): ids made
/// one after another sort one after another, so the delivery log's key on
/// them grows at its end instead of writing a random page of the file for
/// every attempt (embedded store, bench/load with an endpoint).
pub fn new_event_id() -> String {
    format!("msg_{}", uuid::Uuid::now_v7().simple())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_are_unique() {
        let (a, b) = (new_event_id(), new_event_id());
        assert!(a.starts_with("msg_") && a.len() == 36, "{a}");
        assert_ne!(a, b);
    }

    #[test]
    fn now_is_whole_seconds() {
        assert_eq!(now().timestamp_subsec_nanos(), 0);
    }
}
