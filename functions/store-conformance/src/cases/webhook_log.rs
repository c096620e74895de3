//! The delivery log (DECISIONS §16): every attempt, read back by event in
//! the order made and by time newest first, pruned by age.

use chrono::Duration;

use nurse_call_core::AttemptEnd;

use crate::Harness;
use crate::support::t;
use crate::webhook_support::*;

/// Logged attempts come back whole: by event (`attempts_of`, in the order
/// made), and as the log (`deliveries`: from `since` on, newest first, the
/// failed ones only if asked, at most `limit`); `prune_deliveries` deletes
/// those made before a time and says how many.
pub async fn the_delivery_log_keeps_every_attempt(harness: Harness) {
    let hooks = webhooks(&harness);
    let store = hooks.as_ref();
    let (e1, e2) = ("msg_00000000000000000000000000000001", "msg_2");
    let (a, b) = ("endpoint-a", "endpoint-b");
    // Sub-second times: the log keeps them exactly.
    let at = |s: i64| t(s) + Duration::milliseconds(250);
    let first = attempt(e1, a, 1, at(1), Some(503), AttemptEnd::RetryAt(at(2)));
    let second = attempt(e1, a, 2, at(2), Some(200), AttemptEnd::Delivered);
    let refused = attempt(
        e1,
        b,
        1,
        at(3),
        Some(410),
        AttemptEnd::GivenUp("refused".into()),
    );
    let unreachable = attempt(e2, a, 1, at(4), None, AttemptEnd::RetryAt(at(5)));

    hooks.log_attempts(&[]).await.expect("logging nothing");
    hooks
        .log_attempts(&[second.clone(), first.clone(), refused.clone()])
        .await
        .expect("log_attempts");
    hooks
        .log_attempts(std::slice::from_ref(&unreachable))
        .await
        .expect("log_attempts");

    assert_eq!(
        attempts_of(store, &[e1]).await,
        [first.clone(), second.clone(), refused.clone()],
        "an event's attempts, in the order made, whatever the order logged"
    );
    assert_eq!(
        attempts_of(store, &[e2, e1]).await,
        [
            first.clone(),
            second.clone(),
            refused.clone(),
            unreachable.clone()
        ],
        "several events' attempts, in the order made"
    );
    assert!(attempts_of(store, &[]).await.is_empty());
    assert!(attempts_of(store, &["msg_nobody_tried"]).await.is_empty());

    let everything = [
        unreachable.clone(),
        refused.clone(),
        second.clone(),
        first.clone(),
    ];
    assert_eq!(
        deliveries(store, t(0), false, 10).await,
        everything,
        "newest first"
    );
    assert_eq!(
        deliveries(store, at(2), false, 10).await,
        everything[..3],
        "from `since` on, an attempt at `since` among them"
    );
    assert_eq!(
        deliveries(store, t(0), false, 2).await,
        everything[..2],
        "at most `limit`"
    );
    assert!(deliveries(store, t(0), false, 0).await.is_empty());
    assert_eq!(
        deliveries(store, t(0), true, 10).await,
        [unreachable.clone(), refused.clone(), first.clone()],
        "failed only: every attempt that did not deliver"
    );
    assert_eq!(
        deliveries(store, t(0), true, 1).await,
        std::slice::from_ref(&unreachable),
        "failed only, at most `limit`"
    );
    assert!(deliveries(store, at(5), false, 10).await.is_empty());

    assert_eq!(
        hooks.prune_deliveries(at(3)).await.expect("prune"),
        2,
        "the two attempts made before the cutoff"
    );
    assert_eq!(
        deliveries(store, t(0), false, 10).await,
        [unreachable.clone(), refused.clone()],
        "the attempt at the cutoff stays"
    );
    assert_eq!(attempts_of(store, &[e1]).await, [refused]);
    assert_eq!(hooks.prune_deliveries(at(3)).await.expect("prune"), 0);
}
