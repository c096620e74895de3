//! The supervised links as the displays' and staff pages' reads show them
//! (their `silent`, DECISIONS §19), read from the store at most every
//! [`READ_EVERY`] per process: in AWS `LinkStore::links` is a `Scan` of the
//! consumers table, and a read of the calls must not cost one each time
//! (as [`crate::app::forwarding::StoredForwarding`] keeps the endpoints).
//!
//! A change this process makes (a silence its sweep kept, a request that
//! ended one) forgets what was read, so this process's reads show it at
//! once; another process's change shows within [`READ_EVERY`], and a page
//! hears of it live anyway (`consumer.silent`, `consumer.back`). A read
//! begun before a change is not kept after it ([`LinksRead::began`]).

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};

use crate::domain::links::Link;

/// How old the links a read shows may be.
pub(crate) const READ_EVERY: Duration = Duration::seconds(10);

/// What was read last, and when.
#[derive(Debug, Default)]
pub(crate) struct LinksRead {
    state: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    /// Counts the changes: a read keeps its links only where none came
    /// between its start and its end.
    changes: u64,
    read: Option<(DateTime<Utc>, Arc<Vec<Link>>)>,
}

/// A read of the store under way: [`LinksRead::keep`] takes its result.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Began {
    changes: u64,
    at: DateTime<Utc>,
}

impl LinksRead {
    /// The links read less than [`READ_EVERY`] before `now`, if any.
    pub(crate) fn fresh(&self, now: DateTime<Utc>) -> Option<Arc<Vec<Link>>> {
        let state = self.state.lock().expect("links read");
        state
            .read
            .as_ref()
            .filter(|(at, _)| now >= *at && now - *at < READ_EVERY)
            .map(|(_, links)| Arc::clone(links))
    }

    /// A read of the store begins at `now`.
    pub(crate) fn began(&self, now: DateTime<Utc>) -> Began {
        Began {
            changes: self.state.lock().expect("links read").changes,
            at: now,
        }
    }

    /// What the read that `began` got: kept for the next reads unless a
    /// change came meanwhile.
    pub(crate) fn keep(&self, began: Began, links: Vec<Link>) -> Arc<Vec<Link>> {
        let links = Arc::new(links);
        let mut state = self.state.lock().expect("links read");
        if state.changes == began.changes {
            state.read = Some((began.at, Arc::clone(&links)));
        }
        links
    }

    /// This process changed a link: the next read goes to the store.
    pub(crate) fn forget(&self) {
        let mut state = self.state.lock().expect("links read");
        state.changes += 1;
        state.read = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn link(consumer: &str) -> Link {
        Link {
            consumer: consumer.into(),
            name: consumer.into(),
            heartbeat_seconds: 30,
            last_seen_at: Utc.with_ymd_and_hms(2026, 12, 2, 8, 0, 0).unwrap(),
            silence: None,
        }
    }

    fn consumers(links: &[Link]) -> Vec<&str> {
        links.iter().map(|l| l.consumer.as_str()).collect()
    }

    #[test]
    fn a_read_serves_for_ten_seconds() {
        let t0 = Utc.with_ymd_and_hms(2026, 12, 2, 9, 0, 0).unwrap();
        let read = LinksRead::default();
        assert!(read.fresh(t0).is_none(), "nothing read yet");
        let began = read.began(t0);
        read.keep(began, vec![link("a")]);
        let kept = read.fresh(t0 + Duration::seconds(9)).expect("fresh");
        assert_eq!(consumers(&kept), ["a"]);
        assert!(read.fresh(t0 + READ_EVERY).is_none(), "10 s old");
        assert!(
            read.fresh(t0 - Duration::seconds(1)).is_none(),
            "a clock set back reads again"
        );
    }

    #[test]
    fn a_change_of_this_process_is_read_at_once() {
        let t0 = Utc.with_ymd_and_hms(2026, 12, 2, 9, 0, 0).unwrap();
        let read = LinksRead::default();
        read.keep(read.began(t0), vec![link("a")]);
        read.forget();
        assert!(read.fresh(t0).is_none());
    }

    #[test]
    fn a_read_begun_before_a_change_is_not_kept() {
        let t0 = Utc.with_ymd_and_hms(2026, 12, 2, 9, 0, 0).unwrap();
        let read = LinksRead::default();
        let began = read.began(t0);
        read.forget();
        let got = read.keep(began, vec![link("old")]);
        assert_eq!(
            consumers(&got),
            ["old"],
            "the read itself shows what it got"
        );
        assert!(read.fresh(t0).is_none(), "but the next one reads again");
        read.keep(read.began(t0), vec![link("new")]);
        assert_eq!(consumers(&read.fresh(t0).expect("fresh")), ["new"]);
    }
}
