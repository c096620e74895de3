//! Web Push's records (DECISIONS §15): the installation's VAPID key pair,
//! kept once (two processes starting at once agree on the first), and a
//! staff member's browser subscriptions: several devices, one per
//! endpoint, renewed in place, deleted one by one and with their person.

use std::sync::Arc;

use chrono::Duration;
use tokio::sync::Barrier;

use nurse_call_core::{
    PushStore, Scope,
    push::{PushSubscription, VapidKeys},
    tokens::token_hash,
};

use crate::Harness;
use crate::alarm_support::*;
use crate::support::*;

const P256DH: &str =
    "BLn9b-VR0ca83knDNZ32dCHGyjJp-1riX9ZTN40MqV8K_LpQmLqxC_DoHvqvFXO_nGdAB4W9dogZb_sM-uV4JbY";

pub(crate) fn push(harness: &Harness) -> Arc<dyn PushStore> {
    harness.store.clone()
}

/// A subscription of `staff_id` in `scope`, made `seconds` after [`t`]`(0)`,
/// its endpoint as long as the push services' (and then some).
pub(crate) fn subscription(
    staff_id: &str,
    scope: &Scope,
    device: &str,
    seconds: i64,
) -> PushSubscription {
    PushSubscription {
        staff_id: staff_id.to_string(),
        scope: scope.clone(),
        endpoint: format!(
            "https://fcm.googleapis.com/fcm/send/{device}:{}",
            "A".repeat(1500)
        ),
        p256dh: P256DH.to_string(),
        auth: format!("auth-of-{device}"),
        created_at: t(0) + Duration::seconds(seconds),
    }
}

/// A key pair as the push sender makes one (the store keeps the texts; it
/// never reads them).
fn keys(n: i64) -> VapidKeys {
    VapidKeys {
        public_key: format!("B{n:086}"),
        private_key: format!("{n:043}"),
        created_at: t(n),
    }
}

/// No key pair at first; the first kept stays, also when two processes
/// keep theirs at once.
pub async fn vapid_keys_are_kept_once(harness: Harness) {
    let store = push(&harness);
    assert_eq!(store.vapid_keys().await.unwrap(), None, "none at first");
    let (mine, theirs) = (keys(0), keys(1));
    let barrier = Arc::new(Barrier::new(2));
    let race = |keys: VapidKeys| {
        let (store, barrier) = (store.clone(), barrier.clone());
        tokio::spawn(async move {
            barrier.wait().await;
            store.keep_vapid_keys(&keys).await.unwrap()
        })
    };
    let (a, b) = (race(mine.clone()), race(theirs.clone()));
    let (a, b) = (a.await.unwrap(), b.await.unwrap());
    assert_eq!(a, b, "both processes use the same pair");
    assert!(a == mine || a == theirs);
    assert_eq!(store.vapid_keys().await.unwrap(), Some(a.clone()));
    assert_eq!(
        store.keep_vapid_keys(&keys(2)).await.unwrap(),
        a,
        "a later pair does not replace it"
    );
}

/// Several devices per person, oldest first; the same endpoint again
/// replaces its keys; a delete takes one device (`false` for an unknown
/// one); other people's subscriptions are their own.
pub async fn push_subscriptions_are_kept_per_person_and_endpoint(harness: Harness) {
    let store = push(&harness);
    let installation = Scope::installation();
    let visitor = sandbox("5af55af5-0000-4000-8000-0000000000a1");
    let (anna, ben) = (staff_id(1), staff_id(2));
    let phone = subscription(&anna, &installation, "phone", 5);
    let tablet = subscription(&anna, &installation, "tablet", 1);
    let bens = subscription(&ben, &visitor, "bens-phone", 2);
    for s in [&phone, &tablet, &bens] {
        store.put_push_subscription(s).await.unwrap();
    }
    assert_eq!(
        store.push_subscriptions(&anna).await.unwrap(),
        [tablet.clone(), phone.clone()],
        "every field kept, oldest first"
    );
    assert_eq!(
        store.push_subscriptions(&ben).await.unwrap(),
        std::slice::from_ref(&bens)
    );
    assert_eq!(store.push_subscriptions(&staff_id(3)).await.unwrap(), []);

    let renewed = PushSubscription {
        auth: "new-auth".into(),
        created_at: t(0) + Duration::seconds(9),
        ..phone.clone()
    };
    store.put_push_subscription(&renewed).await.unwrap();
    assert_eq!(
        store.push_subscriptions(&anna).await.unwrap(),
        [tablet.clone(), renewed.clone()],
        "the same endpoint replaced, not added"
    );

    assert!(
        store
            .delete_push_subscription(&anna, &tablet.endpoint)
            .await
            .unwrap()
    );
    assert!(
        !store
            .delete_push_subscription(&anna, &tablet.endpoint)
            .await
            .unwrap()
    );
    assert!(
        !store
            .delete_push_subscription(&anna, &bens.endpoint)
            .await
            .unwrap(),
        "another person's device is not Anna's to delete"
    );
    assert_eq!(store.push_subscriptions(&anna).await.unwrap(), [renewed]);
    assert_eq!(store.push_subscriptions(&ben).await.unwrap(), [bens]);
}

/// Revoking, erasing or rotating a staff member deletes their
/// subscriptions (their phones must not ring for a person who left, nor
/// a lost phone for the person it was taken from, §20), and with them
/// their channel; not anybody else's.
pub async fn push_subscriptions_go_with_their_person(harness: Harness) {
    let store = harness.store.as_ref();
    let push = push(&harness);
    let installation = Scope::installation();
    let (anna, ben, cem, dora) = (
        staff(1, &installation, "Anna", &[]),
        staff(2, &installation, "Ben", &[]),
        staff(3, &installation, "Cem", &[]),
        staff(4, &installation, "Dora", &[]),
    );
    for member in [&anna, &ben, &cem, &dora] {
        create(store, member).await;
        push.put_push_subscription(&subscription(&member.id, &installation, "phone", 0))
            .await
            .unwrap();
    }
    push.put_push_subscription(&subscription(&dora.id, &installation, "tablet", 1))
        .await
        .unwrap();
    assert!(store.revoke_staff(&anna.id).await.unwrap());
    assert!(store.erase_staff(&ben.id).await.unwrap());
    assert!(
        store
            .replace_staff_token(&dora.id, &token_hash("dora's new phone"))
            .await
            .unwrap()
    );
    assert_eq!(push.push_subscriptions(&anna.id).await.unwrap(), []);
    assert_eq!(push.push_subscriptions(&ben.id).await.unwrap(), []);
    assert_eq!(push.push_subscriptions(&dora.id).await.unwrap(), []);
    assert_eq!(push.push_subscriptions(&cem.id).await.unwrap().len(), 1);
    let roster = store.roster(&installation, t(10)).await.unwrap();
    assert_eq!(
        roster.with_channel,
        [cem.id.as_str()],
        "only Cem's phone is left"
    );
}

/// A push subscription is a channel to its person (DECISIONS §18): the
/// roster says who has one, in the scope of the subscription only, until
/// the last one is deleted or the person revoked; the roster's staff are
/// the staff only (DynamoDB keeps the channels in the roster's partition).
pub async fn a_subscription_is_its_persons_channel_in_the_roster(harness: Harness) {
    let store = harness.store.as_ref();
    let push = push(&harness);
    let installation = Scope::installation();
    let visitor = Scope::from_key("visitor-channels");
    let (anna, ben, cem) = (
        staff(11, &installation, "Anna", &[]),
        staff(12, &installation, "Ben", &[]),
        staff(13, &visitor, "Cem", &[]),
    );
    for member in [&anna, &ben, &cem] {
        create(store, member).await;
    }
    let with_channel = |scope: Scope| async move {
        store
            .roster(&scope, t(10))
            .await
            .expect("roster")
            .with_channel
    };
    assert_eq!(
        with_channel(installation.clone()).await,
        Vec::<String>::new()
    );

    let (phone, tablet) = (
        subscription(&anna.id, &installation, "phone", 0),
        subscription(&anna.id, &installation, "tablet", 1),
    );
    push.put_push_subscription(&phone).await.unwrap();
    push.put_push_subscription(&tablet).await.unwrap();
    push.put_push_subscription(&subscription(&cem.id, &visitor, "phone", 0))
        .await
        .unwrap();
    assert_eq!(with_channel(installation.clone()).await, [anna.id.as_str()]);
    assert_eq!(with_channel(visitor.clone()).await, [cem.id.as_str()]);
    let roster = store.roster(&installation, t(10)).await.unwrap();
    let names: Vec<&str> = roster.staff.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["Anna", "Ben"], "the staff only");
    assert_eq!(store.staff_of(&installation).await.unwrap().len(), 2);

    // One device gone: still a channel; the last one gone: none.
    assert!(
        push.delete_push_subscription(&anna.id, &phone.endpoint)
            .await
            .unwrap()
    );
    assert_eq!(with_channel(installation.clone()).await, [anna.id.as_str()]);
    assert!(
        push.delete_push_subscription(&anna.id, &tablet.endpoint)
            .await
            .unwrap()
    );
    assert_eq!(
        with_channel(installation.clone()).await,
        Vec::<String>::new()
    );

    // Revoked: their subscriptions and so their channel go with them.
    push.put_push_subscription(&phone).await.unwrap();
    assert!(store.revoke_staff(&anna.id).await.unwrap());
    assert_eq!(with_channel(installation).await, Vec::<String>::new());
}
