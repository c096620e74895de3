//! Caps counted inside the write (DECISIONS §20): requests at once never
//! store more than 10 devices of one person or 20 staff of one sandbox
//! visitor (counting first and writing after stored 36, 12 and 11 of 50
//! registrations at once).

use std::sync::Arc;

use tokio::sync::Barrier;

use nurse_call_core::{
    Registration, Scope,
    alarm::Staff,
    push::{MAX_SUBSCRIPTIONS_PER_STAFF, PushSubscription},
};

use super::push::{push, subscription};
use crate::Harness;
use crate::alarm_support::*;
use crate::support::*;

/// Runs `work(n)` for every `n` of `0..count` on tasks of their own, all
/// released at once, and returns their answers in order.
async fn at_once<T, F, Fut>(count: u32, work: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(u32) -> Fut,
    Fut: std::future::Future<Output = T> + Send + 'static,
{
    let barrier = Arc::new(Barrier::new(count as usize));
    let tasks: Vec<_> = (0..count)
        .map(|n| {
            let (barrier, work) = (barrier.clone(), work(n));
            tokio::spawn(async move {
                barrier.wait().await;
                work.await
            })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.expect("task"));
    }
    answers
}

/// 50 registrations of one person at once: exactly 10 stored, the others
/// refused with nothing written; one of the stored endpoints registered
/// again is renewed, not counted; another person is not affected.
pub async fn concurrent_registrations_stop_at_the_cap(harness: Harness) {
    let store = push(&harness);
    let installation = Scope::installation();
    let (anna, ben) = (staff_id(71), staff_id(72));
    let answers = at_once(50, |n| {
        let (store, s) = (
            store.clone(),
            subscription(&anna, &installation, &format!("phone-{n}"), 0),
        );
        async move {
            store
                .register_push_subscription(&s, MAX_SUBSCRIPTIONS_PER_STAFF)
                .await
                .unwrap()
        }
    })
    .await;
    let added = answers.iter().filter(|a| **a == Registration::New).count();
    let full = answers.iter().filter(|a| **a == Registration::Full).count();
    assert_eq!((added, full), (10, 40), "answers: {answers:?}");
    let kept: Vec<PushSubscription> = store.push_subscriptions(&anna).await.unwrap();
    assert_eq!(kept.len(), 10, "stored");

    let again = PushSubscription {
        auth: "renewed".into(),
        ..kept[3].clone()
    };
    assert_eq!(
        store
            .register_push_subscription(&again, MAX_SUBSCRIPTIONS_PER_STAFF)
            .await
            .unwrap(),
        Registration::Renewed,
        "a stored endpoint again is no new device"
    );
    let eleventh = subscription(&anna, &installation, "phone-x", 1);
    assert_eq!(
        store
            .register_push_subscription(&eleventh, MAX_SUBSCRIPTIONS_PER_STAFF)
            .await
            .unwrap(),
        Registration::Full
    );
    assert_eq!(store.push_subscriptions(&anna).await.unwrap().len(), 10);
    let bens = subscription(&ben, &installation, "phone", 2);
    assert_eq!(
        store
            .register_push_subscription(&bens, MAX_SUBSCRIPTIONS_PER_STAFF)
            .await
            .unwrap(),
        Registration::New
    );

    // A removed device frees its place.
    assert!(
        store
            .delete_push_subscription(&anna, &kept[0].endpoint)
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .register_push_subscription(&eleventh, MAX_SUBSCRIPTIONS_PER_STAFF)
            .await
            .unwrap(),
        Registration::New
    );
    assert_eq!(store.push_subscriptions(&anna).await.unwrap().len(), 10);
}

/// 30 sandbox staff of one visitor created at once: exactly 20 stored;
/// another visitor's scope is not affected.
pub async fn concurrent_sandbox_staff_stop_at_the_cap(harness: Harness) {
    let store = harness.store.clone();
    let visitor = sandbox("5af55af5-0000-4000-8000-0000000000c1");
    let other = sandbox("5af55af5-0000-4000-8000-0000000000c2");
    let answers = at_once(30, |n| {
        let (store, member) = (
            store.clone(),
            staff(200 + n, &visitor, &format!("Pflege {n}"), &[]),
        );
        async move {
            store
                .create_staff_within(&member, Staff::SANDBOX_LIMIT)
                .await
                .unwrap()
        }
    })
    .await;
    let stored = answers.iter().filter(|a| **a).count();
    assert_eq!(stored, 20, "answers: {answers:?}");
    assert_eq!(store.staff_of(&visitor).await.unwrap().len(), 20);
    assert!(
        !store
            .create_staff_within(
                &staff(300, &visitor, "Pflege 31", &[]),
                Staff::SANDBOX_LIMIT
            )
            .await
            .unwrap()
    );
    assert!(
        store
            .create_staff_within(&staff(301, &other, "Pflege 1", &[]), Staff::SANDBOX_LIMIT)
            .await
            .unwrap()
    );
    assert_eq!(store.staff_of(&visitor).await.unwrap().len(), 20);
}
