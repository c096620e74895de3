//! Concurrency: the store, not the handler, upholds the open-call rule and the
//! all-or-nothing batches when requests race (DECISIONS §5, §6).

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use nurse_call_core::{
    AddressSnapshot, Backend, Call, Element, ElementBatch, ElementChange, ElementPolicy,
    ElementWrite, ElementsOutcome, OpenOutcome, Scope,
};
use tokio::sync::Barrier;

use crate::Harness;
use crate::support::*;

/// How many requests race in each round.
const RACERS: usize = 50;

/// Runs `RACERS` tasks on the runtime's worker threads, released together.
async fn race<T, F, Fut>(store: &Arc<dyn Backend>, task: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(Arc<dyn Backend>, usize) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
{
    let barrier = Arc::new(Barrier::new(RACERS));
    let handles: Vec<_> = (0..RACERS)
        .map(|i| {
            let barrier = Arc::clone(&barrier);
            let work = task(Arc::clone(store), i);
            tokio::spawn(async move {
                barrier.wait().await;
                work.await
            })
        })
        .collect();
    let mut results = Vec::with_capacity(RACERS);
    for handle in handles {
        results.push(handle.await.expect("a racing task panicked"));
    }
    results
}

/// 50 simultaneous opens of one (address, event): exactly one opens, the
/// other 49 get that same call back, and one call is open afterwards. Run
/// with a missing element (created by the race), a registered one, and in a
/// sandbox scope.
pub async fn concurrent_opens_of_one_event_open_once(harness: Harness) {
    let store = &harness.store;
    let rounds = [
        (
            Scope::installation(),
            "race.1",
            ElementPolicy::CreateMissing,
        ),
        (Scope::installation(), "race.2", ElementPolicy::MustExist),
        (
            sandbox("9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"),
            "race.1",
            ElementPolicy::CreateMissing,
        ),
    ];
    for (scope, address, policy) in rounds {
        if policy == ElementPolicy::MustExist {
            register(store.as_ref(), &scope, address, t(0)).await;
        }
        let outcomes = race(store, |store, i| {
            let scope = scope.clone();
            async move {
                let at = t(i as i64);
                store
                    .open_call(
                        &new_call(address, "Notruf", at),
                        &AddressSnapshot::default(),
                        &ElementWrite::new(
                            &scope,
                            &battery(address, i as f64, at),
                            policy,
                            &AddressSnapshot::default(),
                        ),
                    )
                    .await
                    .unwrap_or_else(|e| panic!("racing open_call #{i} failed: {e}"))
            }
        })
        .await;

        let context = format!("scope {}, {address}, {policy:?}", scope.as_str());
        let opened: Vec<&Call> = outcomes
            .iter()
            .filter_map(|o| match o {
                OpenOutcome::Opened(call) => Some(call),
                OpenOutcome::AlreadyOpen(_) => None,
                OpenOutcome::UnknownElement => {
                    panic!("{context}: a racing open answered UnknownElement")
                }
            })
            .collect();
        assert_eq!(
            opened.len(),
            1,
            "{context}: {RACERS} racing opens of one event must open exactly one call, opened {opened:?}"
        );
        let winner = opened[0].clone();
        assert_id_valid(winner.id, &context);
        for outcome in &outcomes {
            if let OpenOutcome::AlreadyOpen(existing) = outcome {
                assert_eq!(
                    existing, &winner,
                    "{context}: every AlreadyOpen must return the one call that was opened"
                );
            }
        }
        let snapshot = store
            .snapshot(&scope, address)
            .await
            .expect("snapshot failed");
        assert_eq!(
            snapshot.open_calls,
            vec![winner.clone()],
            "{context}: exactly one call must be open"
        );
        assert_eq!(
            ids(&all_calls(store.as_ref(), &scope).await)
                .iter()
                .filter(|id| **id == winner.id)
                .count(),
            1,
            "{context}: the call must be stored once"
        );
        let element = snapshot
            .element
            .unwrap_or_else(|| panic!("{context}: the element must exist after the race"));
        let battery = element.battery.expect("every racer sent a battery");
        assert!(
            (0..RACERS).any(|i| battery == i as f64 && element.updated_at == t(i as i64)),
            "{context}: the element must carry one racer's whole change, got {element:?}"
        );
    }
}

/// What one racer of the mixed race did.
// A few hundred of these per case: boxing the larger variant buys nothing.
#[allow(clippy::large_enum_variant)]
enum Op {
    Open {
        event: &'static str,
        outcome: OpenOutcome,
    },
    Close {
        requested: Vec<i64>,
        closed_at: chrono::DateTime<chrono::Utc>,
        closed: Vec<Call>,
    },
}

/// 50 simultaneous opens and closes on one address, the closes using ids from
/// a snapshot taken just before (as the display handler does). Afterwards
/// every call returned as opened is stored, at most one call per event is
/// open, and every closed call was closed by exactly one close, at that
/// close's time, which is not before it was opened. Three rounds on the same
/// address, each starting from what the previous left.
pub async fn concurrent_opens_and_closes_keep_invariants(harness: Harness) {
    let store = &harness.store;
    let scope = Scope::installation();
    let address = "mixed.1";
    let events = ["Notruf", "WC", "Hotelruf"];
    let clock = Arc::new(AtomicI64::new(0));
    let mut ops: Vec<Op> = Vec::new();

    for round in 1..=3 {
        let round_ops = race(store, |store, i| {
            let (scope, clock) = (scope.clone(), Arc::clone(&clock));
            async move {
                let tick = || t(clock.fetch_add(1, Ordering::SeqCst));
                if i % 2 == 0 {
                    let event = events[(i / 2) % events.len()];
                    let at = tick();
                    let outcome = store
                        .open_call(
                            &new_call(address, event, at),
                            &AddressSnapshot::default(),
                            &ElementWrite::new(
                                &scope,
                                &battery(address, (i % 101) as f64, at),
                                ElementPolicy::CreateMissing,
                                &AddressSnapshot::default(),
                            ),
                        )
                        .await
                        .unwrap_or_else(|e| panic!("racing open_call #{i} failed: {e}"));
                    Op::Open { event, outcome }
                } else {
                    let snapshot = store
                        .snapshot(&scope, address)
                        .await
                        .unwrap_or_else(|e| panic!("racing snapshot #{i} failed: {e}"));
                    let closed_at = tick();
                    let requested: Vec<i64> = snapshot
                        .open_calls
                        .iter()
                        .filter(|call| call.opened_at <= closed_at)
                        .map(|call| call.id)
                        .collect();
                    let closed = store
                        .close_calls(
                            &snapshot,
                            closed_at,
                            Some(CLOSER),
                            &ElementWrite::new(
                                &scope,
                                &no_change(address, closed_at),
                                ElementPolicy::CreateMissing,
                                &snapshot,
                            ),
                        )
                        .await
                        .unwrap_or_else(|e| panic!("racing close_calls #{i} failed: {e}"))
                        .calls();
                    Op::Close {
                        requested,
                        closed_at,
                        closed,
                    }
                }
            }
        })
        .await;
        ops.extend(round_ops);
        check_mixed_race(store.as_ref(), &scope, address, &ops, round).await;
    }
}

async fn check_mixed_race(
    store: &dyn Backend,
    scope: &Scope,
    address: &str,
    ops: &[Op],
    round: usize,
) {
    let context = format!("mixed race, after round {round}");
    let stored: BTreeMap<i64, Call> = all_calls(store, scope)
        .await
        .into_iter()
        .map(|call| (call.id, call))
        .collect();

    // Every opened call is stored, as opened; nothing else was stored.
    let mut opened_ids = BTreeSet::new();
    for op in ops {
        let Op::Open { event, outcome } = op else {
            continue;
        };
        let call = match outcome {
            OpenOutcome::Opened(call) => {
                assert!(
                    opened_ids.insert(call.id),
                    "{context}: id {} opened twice",
                    call.id
                );
                call
            }
            OpenOutcome::AlreadyOpen(call) => call,
            OpenOutcome::UnknownElement => panic!("{context}: an open answered UnknownElement"),
        };
        assert_eq!(
            &call.event, event,
            "{context}: open of {event} answered with another event's call"
        );
        assert_eq!(
            call.address, address,
            "{context}: answered with another address's call"
        );
        assert!(
            call.closed_at.is_none(),
            "{context}: an open answered with a closed call {call:?}"
        );
        let kept = stored.get(&call.id).unwrap_or_else(|| {
            panic!(
                "{context}: call {} was returned by open_call but is not stored",
                call.id
            )
        });
        assert_eq!(
            (&kept.event, kept.opened_at),
            (&call.event, call.opened_at),
            "{context}: stored call {} differs from what open_call returned",
            call.id
        );
    }
    assert_eq!(
        stored.keys().copied().collect::<BTreeSet<_>>(),
        opened_ids,
        "{context}: the stored calls must be exactly those returned as Opened"
    );

    // At most one open call per event; the snapshot agrees with the list.
    let open: Vec<&Call> = stored.values().filter(|c| c.closed_at.is_none()).collect();
    let mut open_events: Vec<&str> = open.iter().map(|c| c.event.as_str()).collect();
    open_events.sort_unstable();
    let before = open_events.len();
    open_events.dedup();
    assert_eq!(
        before,
        open_events.len(),
        "{context}: two open calls of one event: {open:?}"
    );
    let snapshot_ids = sorted(&ids(&open_calls(store, scope, address).await));
    assert_eq!(
        snapshot_ids,
        open.iter().map(|c| c.id).collect::<Vec<_>>(),
        "{context}: the snapshot's open calls must be the stored open calls"
    );

    // Each closed call was closed by exactly one close, at its time.
    let mut closed_by: BTreeMap<i64, chrono::DateTime<chrono::Utc>> = BTreeMap::new();
    for op in ops {
        let Op::Close {
            requested,
            closed_at,
            closed,
        } = op
        else {
            continue;
        };
        for call in closed {
            assert!(
                requested.contains(&call.id),
                "{context}: close_calls({requested:?}) returned call {} it was not asked to close",
                call.id
            );
            assert_eq!(
                call.closed_at,
                Some(*closed_at),
                "{context}: call {} closed at another time",
                call.id
            );
            assert!(
                call.opened_at <= *closed_at,
                "{context}: call {} closed at {closed_at} before it opened at {}",
                call.id,
                call.opened_at
            );
            assert!(
                closed_by.insert(call.id, *closed_at).is_none(),
                "{context}: call {} was returned as closed by two closes",
                call.id
            );
        }
    }
    for call in stored.values() {
        match call.closed_at {
            None => assert!(
                !closed_by.contains_key(&call.id),
                "{context}: call {} was returned as closed but is open",
                call.id
            ),
            Some(at) => {
                assert_eq!(
                    closed_by.get(&call.id),
                    Some(&at),
                    "{context}: stored call {} is closed at {at}, but no close returned it at that time",
                    call.id
                );
                assert!(
                    call.opened_at <= at,
                    "{context}: call {} closed before it opened",
                    call.id
                );
            }
        }
    }
}

/// How many rounds the element race runs (an interleaving shows only when
/// the racers happen to collide, so give them a few chances).
const BATCH_ROUNDS: usize = 5;

/// Batch `b`: which addresses, which policy, and the unknown address if any.
type Batch = (Vec<String>, ElementPolicy, Option<String>);

/// Concurrent element batches on overlapping addresses: each batch lands
/// whole or (MustExist with an unknown address) not at all, and the final
/// state is one that some order of the whole batches produces.
pub async fn concurrent_element_batches_are_all_or_nothing(harness: Harness) {
    let store = &harness.store;
    let scope = Scope::installation();
    let shared: Vec<String> = (0..6).map(|n| format!("batch.{n}")).collect();
    for address in &shared {
        register(store.as_ref(), &scope, address, t(0)).await;
    }

    // Every change of batch b carries marker b.
    let plan: Vec<Batch> = (0..RACERS * BATCH_ROUNDS)
        .map(|b| {
            let window = |len: usize| -> Vec<String> {
                (0..len)
                    .map(|k| shared[(b + k) % shared.len()].clone())
                    .collect()
            };
            match b % 4 {
                0 => (window(4), ElementPolicy::MustExist, None),
                1 => {
                    let mut addresses = window(3);
                    addresses.insert(1, format!("ghost.{b}"));
                    (
                        addresses,
                        ElementPolicy::MustExist,
                        Some(format!("ghost.{b}")),
                    )
                }
                2 => {
                    let mut addresses = window(3);
                    addresses.push(format!("fresh.{b}"));
                    (addresses, ElementPolicy::CreateMissing, None)
                }
                _ => (window(shared.len()), ElementPolicy::MustExist, None),
            }
        })
        .collect();
    let plan = Arc::new(plan);
    let mut applied = BTreeSet::new();

    for round in 0..BATCH_ROUNDS {
        let batches = round * RACERS..(round + 1) * RACERS;
        let outcomes = race(store, |store, i| {
            let (scope, plan) = (scope.clone(), Arc::clone(&plan));
            let b = round * RACERS + i;
            async move {
                let (addresses, policy, _) = &plan[b];
                let changes: Vec<ElementChange> = addresses.iter().map(|a| marker(b, a)).collect();
                store
                    .update_elements(&ElementBatch::new(&scope, &changes, *policy))
                    .await
                    .unwrap_or_else(|e| panic!("racing update_elements (batch {b}) failed: {e}"))
            }
        })
        .await;

        // Each answer: the whole batch, or the unknown address.
        for (b, outcome) in batches.clone().zip(outcomes) {
            let (addresses, _, ghost) = &plan[b];
            match (outcome, ghost) {
                (ElementsOutcome::Unknown(unknown), Some(ghost)) => {
                    assert_eq!(
                        &unknown,
                        std::slice::from_ref(ghost),
                        "batch {b}: Unknown must name the ghost only"
                    );
                }
                (ElementsOutcome::Updated(elements), None) => {
                    // Each element as it stands right after the batch: whole,
                    // from this batch or from one that committed after it (a
                    // store may read the result back after its transaction).
                    let got: Vec<&str> = elements.iter().map(|e| e.address.as_str()).collect();
                    let want: Vec<&str> = addresses.iter().map(String::as_str).collect();
                    assert_eq!(
                        got, want,
                        "batch {b}: Updated must return its elements in order"
                    );
                    for found in &elements {
                        let writer: usize = found
                            .position
                            .as_deref()
                            .and_then(|p| p.strip_prefix("batch-"))
                            .and_then(|n| n.parse().ok())
                            .unwrap_or_else(|| panic!("batch {b}: {found:?} carries no batch"));
                        assert!(
                            plan[writer].2.is_none() && plan[writer].0.contains(&found.address),
                            "batch {b}: {} shows batch {writer}, which cannot have written it",
                            found.address
                        );
                        let mut expected = Element {
                            code: found.code.clone(),
                            name: found.name.clone(),
                            // How often it was written depends on the race.
                            version: found.version,
                            ..Element::unregistered(&found.address, t(0))
                        };
                        expected.apply(&marker(writer, &found.address));
                        assert_eq!(
                            found, &expected,
                            "batch {b}: {} mixes fields of different batches",
                            found.address
                        );
                    }
                    applied.insert(b);
                }
                (outcome, _) => panic!("batch {b} ({addresses:?}): unexpected {outcome:?}"),
            }
        }

        // Rejected batches left no trace; created elements carry their batch whole.
        for b in batches {
            let (addresses, policy, ghost) = &plan[b];
            if let Some(ghost) = ghost {
                assert_eq!(
                    element(store.as_ref(), &scope, ghost).await,
                    None,
                    "batch {b} created {ghost}"
                );
            }
            if *policy == ElementPolicy::CreateMissing {
                let fresh = addresses.last().expect("fresh address");
                let mut expected = Element::unregistered(fresh, t(0));
                expected.apply(&marker(b, fresh));
                expected.version = 1;
                assert_eq!(
                    element(store.as_ref(), &scope, fresh).await,
                    Some(expected),
                    "batch {b} must have created {fresh} with its change"
                );
            }
        }

        check_batch_state(store.as_ref(), &scope, &shared, &plan, &applied, round).await;
    }
}

/// The change batch `b` makes to `address`.
fn marker(b: usize, address: &str) -> ElementChange {
    ElementChange {
        address: address.to_string(),
        battery: Some((b % 101) as f64),
        position: Some(format!("batch-{b}")),
        reachable: Some(b.is_multiple_of(2)),
        at: t(100 + b as i64),
    }
}

/// The shared elements: each carries one applied batch that included it,
/// whole, and no two show an interleaving (X from i, Y from j, though i and j
/// both wrote X and Y: in any serial order the later of the two wins both).
async fn check_batch_state(
    store: &dyn Backend,
    scope: &Scope,
    shared: &[String],
    plan: &[Batch],
    applied: &BTreeSet<usize>,
    round: usize,
) {
    let mut last = BTreeMap::new();
    for address in shared {
        let found = element(store, scope, address)
            .await
            .unwrap_or_else(|| panic!("round {round}: element {address} disappeared"));
        let position = found.position.clone().unwrap_or_default();
        let b: usize = position
            .strip_prefix("batch-")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| {
                panic!("round {round}: {address} was written by no batch: {found:?}")
            });
        assert!(
            applied.contains(&b),
            "round {round}: {address} carries batch {b}, which was rejected"
        );
        assert!(
            plan[b].0.contains(address),
            "round {round}: {address} carries batch {b}, which did not include it"
        );
        let mut expected = Element {
            code: found.code.clone(),
            name: found.name.clone(),
            version: found.version,
            ..Element::unregistered(address, t(0))
        };
        expected.apply(&marker(b, address));
        assert_eq!(
            found, expected,
            "round {round}: {address} mixes fields of different batches"
        );
        last.insert(address.clone(), b);
    }
    for (x, &i) in &last {
        for (y, &j) in &last {
            if i != j {
                assert!(
                    !(plan[i].0.contains(y) && plan[j].0.contains(x)),
                    "round {round}: batches {i} and {j} both wrote {x} and {y}, yet {x} shows {i} \
                     and {y} shows {j}: the batches interleaved"
                );
            }
        }
    }
}
