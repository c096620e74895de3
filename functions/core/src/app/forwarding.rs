//! Which webhook endpoints fail, for the displays (DECISIONS §16): an
//! endpoint whose attempts have failed for [`SHOWN_AFTER`] shows as
//! "Weiterleitung gestört: <name>" until a delivery to it succeeds. The
//! dispatcher ([`crate::app::webhooks`]) keeps it current; the displays'
//! read ([`crate::http::handlers::display_read`]) reads it from memory, so
//! it costs the read no store round trip.

use std::sync::RwLock;

use chrono::{DateTime, Duration, Utc};

/// How long an endpoint fails before displays say so.
pub const SHOWN_AFTER: Duration = Duration::seconds(60);

/// An endpoint that fails, and since when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failing {
    pub name: String,
    pub since: DateTime<Utc>,
}

#[derive(Debug, Default)]
pub struct Forwarding {
    failing: RwLock<Vec<Failing>>,
}

impl Forwarding {
    /// Replaces what fails (every enabled endpoint with a first failure
    /// since its last success).
    pub fn set(&self, mut failing: Vec<Failing>) {
        failing.sort_by(|a, b| a.since.cmp(&b.since).then(a.name.cmp(&b.name)));
        *self.failing.write().expect("forwarding state") = failing;
    }

    /// What displays show at `now`: the endpoints failing for at least
    /// [`SHOWN_AFTER`], longest first.
    pub fn shown(&self, now: DateTime<Utc>) -> Vec<Failing> {
        self.failing
            .read()
            .expect("forwarding state")
            .iter()
            .filter(|f| now - f.since >= SHOWN_AFTER)
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn an_endpoint_shows_after_failing_for_a_minute_and_goes_when_it_works() {
        let t0 = Utc.with_ymd_and_hms(2026, 11, 26, 9, 0, 0).unwrap();
        let forwarding = Forwarding::default();
        let failing = |name: &str, since| Failing {
            name: name.into(),
            since,
        };
        forwarding.set(vec![
            failing("Pager", t0 + Duration::seconds(30)),
            failing("DECT Haus A", t0),
        ]);
        assert!(forwarding.shown(t0 + Duration::seconds(59)).is_empty());
        assert_eq!(
            forwarding.shown(t0 + Duration::seconds(60)),
            [failing("DECT Haus A", t0)]
        );
        assert_eq!(forwarding.shown(t0 + Duration::seconds(95)).len(), 2);
        forwarding.set(vec![failing("Pager", t0 + Duration::seconds(30))]);
        assert_eq!(
            forwarding.shown(t0 + Duration::seconds(95)),
            [failing("Pager", t0 + Duration::seconds(30))]
        );
    }
}
