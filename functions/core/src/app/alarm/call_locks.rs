//! One look at a time per call's alarm, within a process. Every look reads
//! the alarm, steps it and writes it only if nobody wrote meanwhile
//! ([`super::step`]); 100 phones confirming one call at once made some 16
//! lost races per receipt, and a receipt that lost 24 times was answered
//! 503 (issue 45's benchmark). Looks of the same call in this process now
//! wait for each other instead (a few ms each); looks of other processes
//! (the Lambda functions, a second local server on one store) still meet
//! the version check and its retries.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OwnedMutexGuard;

use crate::domain::model::Scope;

type Key = (Scope, i64);

/// The calls whose alarm a look of this process holds or waits for.
#[derive(Debug, Default)]
pub(crate) struct CallLocks {
    calls: Mutex<HashMap<Key, Arc<tokio::sync::Mutex<()>>>>,
}

impl CallLocks {
    /// Waits until no other look of this process holds call `call_id` of
    /// `scope`, and holds it until the guard is dropped.
    pub(crate) async fn hold(self: &Arc<Self>, scope: &Scope, call_id: i64) -> CallGuard {
        let key = (scope.clone(), call_id);
        let lock = Arc::clone(
            self.calls
                .lock()
                .expect("call locks")
                .entry(key.clone())
                .or_default(),
        );
        CallGuard {
            guard: Some(lock.lock_owned().await),
            locks: Arc::clone(self),
            key,
        }
    }
}

/// A held call ([`CallLocks::hold`]).
#[derive(Debug)]
pub(crate) struct CallGuard {
    guard: Option<OwnedMutexGuard<()>>,
    locks: Arc<CallLocks>,
    key: Key,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.guard.take();
        // Forget the call's lock once nobody holds or waits for it (the
        // map's own reference is the last).
        if let Ok(mut calls) = self.locks.calls.lock()
            && calls
                .get(&self.key)
                .is_some_and(|lock| Arc::strong_count(lock) == 1)
        {
            calls.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn looks_of_one_call_take_turns_and_other_calls_do_not_wait() {
        let locks = Arc::new(CallLocks::default());
        let scope = Scope::installation();
        let first = locks.hold(&scope, 1).await;
        let other = tokio::time::timeout(Duration::from_millis(100), locks.hold(&scope, 2)).await;
        assert!(other.is_ok(), "another call is free");
        let waiting = tokio::spawn({
            let (locks, scope) = (Arc::clone(&locks), scope.clone());
            async move { locks.hold(&scope, 1).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "the same call waits");
        drop(first);
        let second = tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .expect("its turn comes")
            .expect("no panic");
        drop(second);
        drop(other);
        assert!(locks.calls.lock().unwrap().is_empty(), "nothing kept");
    }
}
