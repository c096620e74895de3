//! What each device's pushes and receipts tell (DECISIONS §18): a test or
//! an alert pushed, a receipt, pushes in a row without one; only the device
//! named changes, a repeated receipt changes nothing, a registration of the
//! same endpoint again keeps them, and a subscription deleted is neither
//! brought back nor reported as written.

use nurse_call_core::{
    Scope,
    push::{DeviceState, device_state},
};

use crate::Harness;
use crate::alarm_support::*;
use crate::cases::push::{push, subscription};
use crate::support::*;

/// A new device knows nothing; pushes count up until a receipt, which
/// takes them back to none; a test sets `tested_at`, an alert does not;
/// the state follows (waiting, silent after three, confirmed).
pub async fn device_pushes_and_receipts_are_kept(harness: Harness) {
    let store = push(&harness);
    let scope = Scope::installation();
    let anna = staff_id(1);
    let (phone, tablet) = (
        subscription(&anna, &scope, "phone", 0),
        subscription(&anna, &scope, "tablet", 1),
    );
    store.put_push_subscription(&phone).await.unwrap();
    store.put_push_subscription(&tablet).await.unwrap();
    let device = |devices: Vec<nurse_call_core::push::Device>, endpoint: &str| {
        devices
            .into_iter()
            .find(|d| d.endpoint == endpoint)
            .expect("the device")
    };

    let fresh = store.push_devices(&anna).await.unwrap();
    assert_eq!(fresh.len(), 2, "one device per subscription");
    assert_eq!(fresh[0].endpoint, phone.endpoint, "oldest first");
    assert_eq!(fresh[0].created_at, phone.created_at);
    assert_eq!(
        (
            fresh[0].pushed_at,
            fresh[0].tested_at,
            fresh[0].received_at,
            fresh[0].unanswered
        ),
        (None, None, None, 0),
        "a new device knows nothing"
    );

    // The sign-on test, then an alert: two pushes without a receipt.
    assert!(
        store
            .record_device_push(&anna, &phone.endpoint, t(10), true)
            .await
            .unwrap()
    );
    assert!(
        store
            .record_device_push(&anna, &phone.endpoint, t(20), false)
            .await
            .unwrap()
    );
    let pushed = device(store.push_devices(&anna).await.unwrap(), &phone.endpoint);
    assert_eq!(pushed.pushed_at, Some(t(20)));
    assert_eq!(pushed.tested_at, Some(t(10)), "an alert is no test");
    assert_eq!(pushed.unanswered, 2);
    assert_eq!(device_state(&pushed, t(25), 30), DeviceState::Waiting);
    let untouched = device(store.push_devices(&anna).await.unwrap(), &tablet.endpoint);
    assert_eq!(
        (untouched.pushed_at, untouched.unanswered),
        (None, 0),
        "the other device is its own"
    );

    // Its receipt: confirmed; the same receipt again changes nothing.
    assert!(
        store
            .record_device_receipt(&anna, &phone.endpoint, t(22))
            .await
            .unwrap()
    );
    assert!(
        !store
            .record_device_receipt(&anna, &phone.endpoint, t(23))
            .await
            .unwrap()
    );
    let received = device(store.push_devices(&anna).await.unwrap(), &phone.endpoint);
    assert_eq!(
        (received.received_at, received.unanswered),
        (Some(t(22)), 0)
    );
    assert_eq!(device_state(&received, t(1000), 30), DeviceState::Confirmed);

    // Three pushes in a row without a receipt: silent at once.
    for at in [100, 101, 102] {
        assert!(
            store
                .record_device_push(&anna, &phone.endpoint, t(at), false)
                .await
                .unwrap()
        );
    }
    let silent = device(store.push_devices(&anna).await.unwrap(), &phone.endpoint);
    assert_eq!(silent.unanswered, 3);
    assert_eq!(silent.received_at, Some(t(22)), "the last receipt stays");
    assert_eq!(device_state(&silent, t(103), 30), DeviceState::Silent);

    // The same endpoint registered again (a browser renewing its keys):
    // new keys, the device's facts kept, on both stores.
    let renewed = nurse_call_core::push::PushSubscription {
        auth: "renewed-auth".into(),
        ..phone.clone()
    };
    store.put_push_subscription(&renewed).await.unwrap();
    let kept = device(store.push_devices(&anna).await.unwrap(), &phone.endpoint);
    assert_eq!(
        (
            kept.pushed_at,
            kept.tested_at,
            kept.received_at,
            kept.unanswered
        ),
        (silent.pushed_at, silent.tested_at, silent.received_at, 3),
        "a renewal keeps what the device's pushes told"
    );
    assert_eq!(store.push_subscriptions(&anna).await.unwrap().len(), 2);
    assert!(
        store
            .push_subscriptions(&anna)
            .await
            .unwrap()
            .iter()
            .any(|s| s.auth == "renewed-auth"),
        "its new keys"
    );

    // A device never tested takes its first receipt (a cancel's).
    assert!(
        store
            .record_device_receipt(&anna, &tablet.endpoint, t(5))
            .await
            .unwrap()
    );

    // Gone: no write reports success, and nothing comes back.
    assert!(
        store
            .delete_push_subscription(&anna, &phone.endpoint)
            .await
            .unwrap()
    );
    assert!(
        !store
            .record_device_push(&anna, &phone.endpoint, t(200), true)
            .await
            .unwrap()
    );
    assert!(
        !store
            .record_device_receipt(&anna, &phone.endpoint, t(201))
            .await
            .unwrap()
    );
    let left = store.push_devices(&anna).await.unwrap();
    assert_eq!(left.len(), 1, "the deleted device stays deleted: {left:?}");
    assert_eq!(left[0].endpoint, tablet.endpoint);
    assert_eq!(store.push_subscriptions(&anna).await.unwrap().len(), 1);
    // Another person's devices are theirs: none here.
    assert!(store.push_devices(&staff_id(2)).await.unwrap().is_empty());
    assert!(
        !store
            .record_device_push(&staff_id(2), &tablet.endpoint, t(300), false)
            .await
            .unwrap()
    );
}
