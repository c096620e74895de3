//! Sending fairly (DECISIONS §20): the permits of an outbound sender (the
//! push sender's, the webhook dispatcher's), where one person's or one
//! host's attempts hold at most a quarter of them. An attempt takes a
//! permit of each of its keys (its person, its host) first, then one of
//! the sender's: a key's attempts beyond its share wait without holding
//! anything of the others'. Ten slow phones of one person (or a push
//! service that hangs) so leave three quarters of the sender to everyone
//! else's alarms.
//!
//! A key's semaphore lives while an attempt holds or waits for it and is
//! forgotten when the last one is done: the map holds the keys in use only.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

type Keys = Arc<Mutex<HashMap<String, Arc<Semaphore>>>>;

/// A sender's permits, shared fairly (see the module).
#[derive(Debug)]
pub struct FairPermits {
    all: Arc<Semaphore>,
    share: usize,
    keys: Keys,
}

/// What an attempt holds while it is on its way: one permit of each of its
/// keys and one of the sender's, all given back when dropped.
#[derive(Debug)]
pub struct FairPermit {
    // Declared first, dropped first: the sender's permit goes back before
    // the keys' (a waiter of another key need not wait for the map's lock).
    _all: OwnedSemaphorePermit,
    keys: Vec<KeyPermit>,
}

impl FairPermit {
    /// Gives back the keys' permits and keeps the sender's: the request to
    /// the person's phone or the host is done, what follows (the store's
    /// bookkeeping) is no host's to hold up (a webhook's 2xx becomes its
    /// handsets' receipts, §18, while 8 more requests may go to that host).
    pub fn release_keys(&mut self) {
        self.keys.clear();
    }
}

#[derive(Debug)]
struct KeyPermit {
    key: String,
    semaphore: Arc<Semaphore>,
    permit: Option<OwnedSemaphorePermit>,
    keys: Keys,
}

impl FairPermits {
    /// `concurrency` attempts at once (at least 1), a quarter of them (at
    /// least 1) per key.
    pub fn new(concurrency: usize) -> Self {
        let concurrency = concurrency.max(1);
        FairPermits {
            all: Arc::new(Semaphore::new(concurrency)),
            share: (concurrency / 4).max(1),
            keys: Keys::default(),
        }
    }

    /// Waits for a permit of each of `keys` (in the order given: every
    /// caller names them in the same order, person before host), then for
    /// one of the sender's.
    pub async fn acquire(&self, keys: &[&str]) -> FairPermit {
        let mut held = Vec::with_capacity(keys.len());
        for key in keys {
            let semaphore = {
                let mut map = self.keys.lock().expect("fair permits");
                map.entry((*key).to_string())
                    .or_insert_with(|| Arc::new(Semaphore::new(self.share)))
                    .clone()
            };
            // Made before the wait: an attempt dropped while it waits
            // still forgets an idle key.
            held.push(KeyPermit {
                key: (*key).to_string(),
                semaphore: semaphore.clone(),
                permit: None,
                keys: self.keys.clone(),
            });
            let permit = semaphore.acquire_owned().await.expect("never closed");
            if let Some(last) = held.last_mut() {
                last.permit = Some(permit);
            }
        }
        let all = self
            .all
            .clone()
            .acquire_owned()
            .await
            .expect("never closed");
        FairPermit {
            _all: all,
            keys: held,
        }
    }

    /// How many keys are in use (held or waited for).
    pub fn keys_in_use(&self) -> usize {
        self.keys.lock().expect("fair permits").len()
    }
}

impl Drop for KeyPermit {
    fn drop(&mut self) {
        self.permit.take();
        let mut map = self.keys.lock().expect("fair permits");
        // Nobody else holds or waits for it (clones are made under this
        // lock): only the map's and this one are left.
        if map
            .get(&self.key)
            .is_some_and(|kept| Arc::ptr_eq(kept, &self.semaphore))
            && Arc::strong_count(&self.semaphore) == 2
        {
            map.remove(&self.key);
        }
    }
}

/// The key of an attempt's host: its URL's host and port (a host's
/// services on other ports are others'); the whole text if it is no URL.
pub fn host_key(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(parsed) => format!(
            "host:{}:{}",
            parsed.host_str().unwrap_or_default(),
            parsed.port_or_known_default().unwrap_or(0)
        ),
        Err(_) => format!("host:{url}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// A slow fake endpoint: each attempt to it takes this long.
    const SLOW: Duration = Duration::from_millis(600);

    #[tokio::test]
    async fn one_persons_slow_attempts_leave_permits_for_another() {
        let permits = Arc::new(FairPermits::new(32));
        let busy = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let most = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        // Anna: ten phones, four calls, all at one slow push service.
        let slow: Vec<_> = (0..40)
            .map(|_| {
                let (permits, busy, most) = (permits.clone(), busy.clone(), most.clone());
                tokio::spawn(async move {
                    let _permit = permits.acquire(&["staff:anna", "host:slow:443"]).await;
                    let now = busy.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    most.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                    tokio::time::sleep(SLOW).await;
                    busy.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Ben's push to another service finishes at once.
        let started = Instant::now();
        let _ben = permits.acquire(&["staff:ben", "host:fast:443"]).await;
        let waited = started.elapsed();
        drop(_ben);
        assert!(waited < Duration::from_millis(100), "Ben waited {waited:?}");
        for task in slow {
            task.await.unwrap();
        }
        assert_eq!(
            most.load(std::sync::atomic::Ordering::SeqCst),
            8,
            "Anna's attempts held a quarter of the 32"
        );
        assert_eq!(permits.keys_in_use(), 0, "idle keys are forgotten");
    }

    #[tokio::test]
    async fn a_host_is_limited_as_a_person_is() {
        let permits = FairPermits::new(32);
        let mut held = Vec::new();
        for n in 0..8 {
            held.push(
                permits
                    .acquire(&[&format!("staff:{n}"), "host:push:443"])
                    .await,
            );
        }
        let ninth = tokio::time::timeout(
            Duration::from_millis(100),
            permits.acquire(&["staff:9", "host:push:443"]),
        )
        .await;
        assert!(ninth.is_err(), "a ninth attempt at the host waits");
        let other = tokio::time::timeout(
            Duration::from_millis(100),
            permits.acquire(&["staff:9", "host:other:443"]),
        )
        .await;
        assert!(other.is_ok(), "another host's does not");
        drop(other);
        drop(held);
        assert_eq!(
            permits.keys_in_use(),
            0,
            "a cancelled wait leaves no key behind"
        );
    }

    #[test]
    fn hosts_are_keyed_with_their_port() {
        assert_eq!(
            host_key("https://fcm.googleapis.com/fcm/send/x"),
            "host:fcm.googleapis.com:443"
        );
        assert_eq!(
            host_key("http://127.0.0.1:8080/hook"),
            "host:127.0.0.1:8080"
        );
    }
}
