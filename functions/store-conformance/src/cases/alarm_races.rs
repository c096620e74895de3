//! Racing alarm writes: the conditional write on the alarm's version is what
//! makes a level fire once when two workers look at it, and the first accept
//! win (DECISIONS §14). Of writers that read the same version, exactly one
//! writes; the others get `Conflict` and leave no trace.

use std::sync::Arc;

use tokio::sync::Barrier;

use nurse_call_core::{AlarmWrite, Backend, Scope, alarm::Staff};

use crate::Harness;
use crate::alarm_support::*;
use crate::support::*;

/// Rounds of each race.
const ROUNDS: usize = 100;

/// Two workers write the alarm they stepped from the same version, 100
/// times: each time exactly one is written, and the alarm and audit are the
/// winner's.
pub async fn two_concurrent_alarm_writes_write_once(harness: Harness) {
    race_rounds(&harness.store, 2).await;
}

/// The same with ten writers at once.
pub async fn many_concurrent_alarm_writes_write_once(harness: Harness) {
    race_rounds(&harness.store, 10).await;
}

async fn race_rounds(store: &Arc<dyn Backend>, writers: usize) {
    let scope = Scope::installation();
    let people: Vec<Staff> = (0..writers as u32)
        .map(|n| staff(n + 1, &scope, &format!("Person {n}"), &[]))
        .collect();
    let call = open(store.as_ref(), &scope, &new_call("X-1", "Notruf", t(0))).await;
    let mut audit_so_far = Vec::new();
    for round in 0..ROUNDS {
        let read = kept(store.as_ref(), &scope, call.id).await;
        assert_eq!(
            read.version, round as i64,
            "round {round}: one write per round"
        );
        let at = t(round as i64 + 1);
        let barrier = Arc::new(Barrier::new(writers));
        let handles: Vec<_> = people
            .iter()
            .map(|person| {
                let (store, barrier, read) =
                    (Arc::clone(store), Arc::clone(&barrier), read.clone());
                let alarm = alerting(1, person, at, Some(at + chrono::Duration::seconds(30)));
                let lines = vec![line("alert", 1, Some(person), at)];
                tokio::spawn(async move {
                    barrier.wait().await;
                    let outcome = store
                        .write_alarm(&read, &alarm, &lines)
                        .await
                        .unwrap_or_else(|e| panic!("write_alarm failed: {e}"));
                    (outcome, alarm, lines)
                })
            })
            .collect();
        let mut written = Vec::new();
        for handle in handles {
            let (outcome, alarm, lines) = handle.await.expect("a racing writer panicked");
            if outcome == AlarmWrite::Written {
                written.push((alarm, lines));
            }
        }
        assert_eq!(
            written.len(),
            1,
            "round {round}: of {writers} writes at version {}, exactly one must be Written",
            read.version
        );
        let (alarm, lines) = written.pop().expect("one winner");
        let after = kept(store.as_ref(), &scope, call.id).await;
        assert_eq!(after.version, round as i64 + 1);
        assert_eq!(
            after.alarm, alarm,
            "round {round}: the winner's alarm is kept"
        );
        audit_so_far.extend(lines);
        assert_eq!(
            audit(store.as_ref(), &scope, call.id).await,
            audit_so_far,
            "round {round}: only the winner's audit lines are appended"
        );
    }
}
