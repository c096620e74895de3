//! Which webhook endpoints fail, for the displays (DECISIONS §16): an
//! endpoint whose attempts have failed for [`SHOWN_AFTER`] shows as
//! "Weiterleitung gestört: <name>" until a delivery to it succeeds. The
//! dispatcher ([`crate::app::webhooks`]) keeps it current; the displays'
//! read ([`crate::http::handlers::display_read`]) reads it from memory, so
//! it costs the read no store round trip. Where the dispatcher is another
//! process's (AWS: the `forward` function, DECISIONS §17), the read takes
//! it from the endpoints' stored `failing_since` instead
//! ([`StoredForwarding`]), read at most every [`READ_EVERY`].

use std::sync::{Arc, Mutex, RwLock};

use chrono::{DateTime, Duration, Utc};

use crate::store::webhooks::EndpointsRead;

/// How long an endpoint fails before displays say so.
pub(crate) const SHOWN_AFTER: Duration = Duration::seconds(60);

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

/// How old the endpoints' stored state may be when a display reads: a
/// display re-reads every 60 s, so the line shows at most 70 s late.
pub(crate) const READ_EVERY: Duration = Duration::seconds(10);

/// Which endpoints fail as the dispatcher stored it (each endpoint's
/// `failing_since`, written when its attempts start or stop failing), for
/// a process without the dispatcher's memory.
pub struct StoredForwarding {
    endpoints: Arc<dyn EndpointsRead>,
    forwarding: Arc<Forwarding>,
    read_at: Mutex<Option<DateTime<Utc>>>,
}

impl StoredForwarding {
    pub fn new(endpoints: Arc<dyn EndpointsRead>) -> Self {
        StoredForwarding {
            endpoints,
            forwarding: Arc::new(Forwarding::default()),
            read_at: Mutex::new(None),
        }
    }

    /// What the reads show ([`Forwarding::shown`]).
    pub fn forwarding(&self) -> Arc<Forwarding> {
        Arc::clone(&self.forwarding)
    }

    /// Reads the endpoints when the last read is [`READ_EVERY`] old. A
    /// failed read keeps what was shown (and is tried again next time):
    /// the display's calls matter more than this line.
    pub async fn refresh(&self, now: DateTime<Utc>) {
        {
            let mut read_at = self.read_at.lock().expect("forwarding read");
            if read_at.is_some_and(|at| now - at < READ_EVERY && now >= at) {
                return;
            }
            *read_at = Some(now);
        }
        match self.endpoints.read_endpoints().await {
            Ok(endpoints) => self.forwarding.set(
                endpoints
                    .into_iter()
                    .filter(|e| !e.disabled)
                    .filter_map(|e| {
                        e.failing_since.map(|since| Failing {
                            name: e.name,
                            since,
                        })
                    })
                    .collect(),
            ),
            Err(error) => {
                *self.read_at.lock().expect("forwarding read") = None;
                tracing::warn!(%error, "webhook endpoints not read: the failing ones as last read");
            }
        }
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

    /// The endpoints as a store would have them, counting the reads.
    struct Stored {
        endpoints: std::sync::Mutex<Result<Vec<crate::domain::webhooks::Endpoint>, ()>>,
        reads: std::sync::atomic::AtomicUsize,
    }

    #[async_trait::async_trait]
    impl EndpointsRead for Stored {
        async fn read_endpoints(
            &self,
        ) -> Result<Vec<crate::domain::webhooks::Endpoint>, crate::store::StoreError> {
            self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.endpoints
                .lock()
                .unwrap()
                .clone()
                .map_err(|()| crate::store::StoreError::Unavailable("down".into()))
        }
    }

    fn endpoint(
        name: &str,
        disabled: bool,
        failing_since: Option<DateTime<Utc>>,
    ) -> crate::domain::webhooks::Endpoint {
        crate::domain::webhooks::Endpoint {
            id: format!("ep_{name}"),
            name: name.into(),
            url: "https://alarm.example/hook".into(),
            events: Vec::new(),
            sections: Vec::new(),
            secrets: vec!["whsec_x".into()],
            disabled,
            created_at: Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap(),
            failing_since,
            confirms_delivery: false,
            private_network: false,
        }
    }

    #[tokio::test]
    async fn stored_failures_are_read_at_most_every_ten_seconds_and_kept_when_unreadable() {
        let t0 = Utc.with_ymd_and_hms(2026, 11, 26, 9, 0, 0).unwrap();
        let store = Arc::new(Stored {
            endpoints: std::sync::Mutex::new(Ok(vec![
                endpoint("DECT", false, Some(t0)),
                endpoint("Pager", true, Some(t0)),
                endpoint("Gateway", false, None),
            ])),
            reads: std::sync::atomic::AtomicUsize::new(0),
        });
        let stored = StoredForwarding::new(store.clone());
        let at = |s| t0 + Duration::seconds(s);
        stored.refresh(at(61)).await;
        let names = |shown: Vec<Failing>| shown.into_iter().map(|f| f.name).collect::<Vec<_>>();
        assert_eq!(
            names(stored.forwarding().shown(at(61))),
            ["DECT"],
            "a disabled one is not shown"
        );

        // It works again: seen at the next read, 10 s after the last.
        *store.endpoints.lock().unwrap() = Ok(vec![endpoint("DECT", false, None)]);
        stored.refresh(at(70)).await;
        assert_eq!(names(stored.forwarding().shown(at(70))), ["DECT"]);
        stored.refresh(at(71)).await;
        assert!(stored.forwarding().shown(at(71)).is_empty());
        let reads = store.reads.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(reads, 2);

        // Unreadable: what was shown stays, and the next refresh reads again.
        *store.endpoints.lock().unwrap() = Ok(vec![endpoint("DECT", false, Some(t0))]);
        stored.refresh(at(90)).await;
        *store.endpoints.lock().unwrap() = Err(());
        stored.refresh(at(101)).await;
        assert_eq!(names(stored.forwarding().shown(at(101))), ["DECT"]);
        stored.refresh(at(102)).await;
        assert_eq!(store.reads.load(std::sync::atomic::Ordering::SeqCst), 5);
    }
}
