//! Staff and their duties (DECISIONS §14): found by token hash and id,
//! listed per scope, rotated, revoked and erased; a duty is replaced by the
//! next sign-on, ended by the sign-off, and ends by itself at `until`.

use chrono::Duration;

use nurse_call_core::{Scope, tokens::token_hash};

use crate::Harness;
use crate::alarm_support::*;
use crate::support::*;

/// A created staff member is found, every field intact, by their token's
/// hash and by their id (in any scope), and by nothing else.
pub async fn staff_are_found_by_token_hash_and_id(harness: Harness) {
    let store = harness.store.as_ref();
    let visitor = sandbox("5af55af5-0000-4000-8000-000000000001");
    let anna = staff(1, &Scope::installation(), "Anna", &["Leitung", "Technik"]);
    let mut ben = staff(2, &visitor, "Ben", &[]);
    ben.device = None;
    create(store, &anna).await;
    create(store, &ben).await;

    for member in [&anna, &ben] {
        assert_eq!(
            store.staff_by_token_hash(&member.token_hash).await.unwrap(),
            Some(member.clone()),
            "staff_by_token_hash must find {} with every field as created",
            member.name
        );
        assert_eq!(
            store.staff_member(&member.id).await.unwrap(),
            Some(member.clone()),
            "staff_member must find {} in any scope",
            member.name
        );
    }
    assert_eq!(
        store
            .staff_by_token_hash(&token_hash("not a token"))
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.staff_member(&staff_id(99)).await.unwrap(), None);
}

/// `staff_of` lists one scope's staff, revoked ones included, ordered by
/// name, then id; another scope's staff are not in it.
pub async fn staff_of_lists_a_scope_by_name_then_id(harness: Harness) {
    let store = harness.store.as_ref();
    let installation = Scope::installation();
    let visitor = sandbox("5af55af5-0000-4000-8000-000000000002");
    let cem = staff(1, &installation, "Cem", &[]);
    let later_ben = staff(4, &installation, "Ben", &["Leitung"]);
    let anna = staff(3, &installation, "Anna", &[]);
    let earlier_ben = staff(2, &installation, "Ben", &[]);
    let stranger = staff(5, &visitor, "Aaron", &[]);
    for member in [&cem, &later_ben, &anna, &earlier_ben, &stranger] {
        create(store, member).await;
    }
    assert!(store.revoke_staff(&cem.id).await.unwrap());
    let revoked_cem = nurse_call_core::alarm::Staff {
        revoked: true,
        ..cem.clone()
    };

    assert_eq!(
        store.staff_of(&installation).await.unwrap(),
        [anna, earlier_ben, later_ben, revoked_cem],
        "by name, then id; revoked staff listed; another scope's not"
    );
    assert_eq!(store.staff_of(&visitor).await.unwrap(), [stranger]);
    assert_eq!(
        store
            .staff_of(&sandbox("5af55af5-0000-4000-8000-000000000003"))
            .await
            .unwrap(),
        []
    );
}

/// Rotation replaces the token hash (the old token finds nobody), a revoked
/// member is still found but revoked and their duty ends, and erasure
/// removes the member and their duty; an unknown id is reported each time.
pub async fn staff_rotate_revoke_and_erase(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let anna = staff(1, &scope, "Anna", &[]);
    let ben = staff(2, &scope, "Ben", &[]);
    let unknown = staff_id(99);
    create(store, &anna).await;
    create(store, &ben).await;
    let now = now();
    for member in [&anna, &ben] {
        store
            .put_duty(&duty(member, &[], now, now + Duration::hours(8)))
            .await
            .unwrap();
    }

    let new_hash = token_hash("anna's new token");
    assert!(
        store
            .replace_staff_token(&anna.id, &new_hash)
            .await
            .unwrap()
    );
    assert_eq!(
        store.staff_by_token_hash(&anna.token_hash).await.unwrap(),
        None,
        "a rotated-away token must find nobody"
    );
    let rotated = store
        .staff_by_token_hash(&new_hash)
        .await
        .unwrap()
        .expect("the new token finds her");
    assert_eq!(rotated.id, anna.id);
    assert!(!rotated.revoked);
    assert!(
        !store
            .replace_staff_token(&unknown, &new_hash)
            .await
            .unwrap()
    );

    assert!(store.revoke_staff(&anna.id).await.unwrap());
    let revoked = store
        .staff_by_token_hash(&new_hash)
        .await
        .unwrap()
        .expect("a revoked member is still found");
    assert!(revoked.revoked, "revoke_staff must mark the member revoked");
    assert_eq!(store.staff_member(&anna.id).await.unwrap(), Some(revoked));
    let on_duty: Vec<String> = duties(store, &scope, now)
        .await
        .into_iter()
        .map(|d| d.staff_id)
        .collect();
    assert_eq!(
        on_duty,
        vec![ben.id.clone()],
        "a revoked member's duty ends"
    );
    assert!(!store.revoke_staff(&unknown).await.unwrap());

    assert!(store.erase_staff(&ben.id).await.unwrap());
    assert_eq!(store.staff_member(&ben.id).await.unwrap(), None);
    assert_eq!(
        store.staff_by_token_hash(&ben.token_hash).await.unwrap(),
        None
    );
    assert!(
        duties(store, &scope, now).await.is_empty(),
        "an erased member's duty goes with them"
    );
    let left: Vec<String> = store
        .staff_of(&scope)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(left, vec![anna.id.clone()]);
    assert!(
        !store.erase_staff(&ben.id).await.unwrap(),
        "a second erase finds nobody"
    );
}

/// A sign-on replaces the member's duty, a sign-off ends it (once), and a
/// duty past its `until` is never returned.
pub async fn duties_are_replaced_ended_and_expire(harness: Harness) {
    let store = harness.store.as_ref();
    let scope = Scope::installation();
    let anna = staff(1, &scope, "Anna", &[]);
    let ben = staff(2, &scope, "Ben", &[]);
    create(store, &anna).await;
    create(store, &ben).await;
    let now = now();
    let shift = now + Duration::hours(8);

    let first = duty(&anna, &["Station 1"], now, shift);
    store.put_duty(&first).await.unwrap();
    assert_eq!(duties(store, &scope, now).await, [first]);
    let second = duty(
        &anna,
        &["Station 2", "Station 3"],
        now,
        shift + Duration::hours(1),
    );
    store.put_duty(&second).await.unwrap();
    let whole_house = duty(&ben, &[], now, shift);
    store.put_duty(&whole_house).await.unwrap();
    assert_eq!(
        duties(store, &scope, now).await,
        [second, whole_house.clone()],
        "the second sign-on replaces the first"
    );

    assert!(store.end_duty(&scope, &anna.id).await.unwrap());
    assert_eq!(duties(store, &scope, now).await, vec![whole_house.clone()]);
    assert!(
        !store.end_duty(&scope, &anna.id).await.unwrap(),
        "a second sign-off finds no duty"
    );

    // Ending by itself: at `until` the duty is over.
    let short = duty(&anna, &[], t(0), t(100));
    store.put_duty(&short).await.unwrap();
    let anna_on_duty =
        |duties: Vec<nurse_call_core::alarm::Duty>| duties.iter().any(|d| d.staff_id == anna.id);
    assert!(anna_on_duty(duties(store, &scope, t(99)).await));
    assert!(
        !anna_on_duty(duties(store, &scope, t(100)).await),
        "a duty ends at its until"
    );
    assert!(!anna_on_duty(duties(store, &scope, t(101)).await));
}

/// Another scope's staff and duties are invisible, and its sign-off cannot
/// end this scope's duty.
pub async fn staff_and_duties_are_scoped(harness: Harness) {
    let store = harness.store.as_ref();
    let a = sandbox("5af55af5-0000-4000-8000-00000000000a");
    let b = sandbox("5af55af5-0000-4000-8000-00000000000b");
    let anna = staff(1, &a, "Anna", &[]);
    let ben = staff(2, &b, "Ben", &[]);
    create(store, &anna).await;
    create(store, &ben).await;
    let now = now();
    let annas = duty(&anna, &[], now, now + Duration::hours(1));
    let bens = duty(&ben, &[], now, now + Duration::hours(1));
    store.put_duty(&annas).await.unwrap();
    store.put_duty(&bens).await.unwrap();

    assert_eq!(store.staff_of(&a).await.unwrap(), vec![anna.clone()]);
    assert_eq!(store.staff_of(&b).await.unwrap(), [ben]);
    assert!(
        store
            .staff_of(&Scope::installation())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(duties(store, &a, now).await, vec![annas.clone()]);
    assert_eq!(duties(store, &b, now).await, [bens]);
    assert!(duties(store, &Scope::installation(), now).await.is_empty());

    assert!(
        !store.end_duty(&b, &anna.id).await.unwrap(),
        "a sign-off in another scope finds no duty"
    );
    assert_eq!(duties(store, &a, now).await, [annas]);
}
