//! Call types: seeded once, listed by id, never overwritten by a later seed.

use nurse_call_core::{CallType, alarm::Policy, default_call_types};

use crate::Harness;

fn by_id(mut types: Vec<CallType>) -> Vec<CallType> {
    types.sort_by_key(|t| t.id);
    types
}

/// The factory seeded the defaults: `call_types` lists exactly them, by id.
pub async fn call_types_are_seeded_in_id_order(harness: Harness) {
    let listed = harness.store.call_types().await.expect("call_types failed");
    assert_eq!(
        listed.fallbacks,
        [],
        "the seeded items must read without a fallback (DECISIONS §7)"
    );
    assert_eq!(
        listed.types,
        by_id(default_call_types()),
        "call_types must return the seeded defaults, every field intact, ordered by id"
    );
}

/// Seeding the same types again adds nothing and changes nothing.
pub async fn seed_call_types_is_idempotent(harness: Harness) {
    let store = harness.store.as_ref();
    store
        .seed_call_types(&default_call_types())
        .await
        .expect("seeding the defaults a second time failed");
    store
        .seed_call_types(&default_call_types())
        .await
        .expect("seeding the defaults a third time failed");
    let listed = store.call_types().await.expect("call_types failed").types;
    assert_eq!(
        listed,
        by_id(default_call_types()),
        "seeding existing call types again must neither duplicate nor change them"
    );
}

/// A seed inserts only names that do not exist yet: the stored version of an
/// existing name (which an admin may have edited) survives.
pub async fn seed_call_types_never_overwrites(harness: Harness) {
    let store = harness.store.as_ref();
    let defaults = default_call_types();
    let stored_wc = defaults
        .iter()
        .find(|t| t.name == "WC")
        .expect("the defaults include WC")
        .clone();
    let rewritten_wc = CallType {
        internal_name: "toilet".to_string(),
        urgency: "EMERGENCY".to_string(),
        priority: 1,
        color: "#000000".to_string(),
        notify: !stored_wc.notify,
        notification_interval: 999,
        notification_maxloops: 99,
        notification_sound: "other.mp3".to_string(),
        escalation: nurse_call_core::alarm::Policy::fallback(),
        accept_timeout: 7,
        ..stored_wc.clone()
    };
    let new_type = CallType {
        id: defaults.iter().map(|t| t.id).max().unwrap_or(0) + 1,
        name: "Testruf".to_string(),
        internal_name: "TEST".to_string(),
        urgency: "NORMAL".to_string(),
        priority: 7,
        kind: "CALL".to_string(),
        color: "#123456".to_string(),
        notify: false,
        notification_interval: 0,
        notification_maxloops: 0,
        notification_sound: String::new(),
        escalation: nurse_call_core::alarm::Policy::none(),
        accept_timeout: 42,
    };
    store
        .seed_call_types(&[rewritten_wc, new_type.clone()])
        .await
        .expect("seed_call_types failed");

    let listed = store.call_types().await.expect("call_types failed").types;
    let wc = listed
        .iter()
        .find(|t| t.name == "WC")
        .expect("WC disappeared after a seed");
    assert_eq!(
        wc, &stored_wc,
        "seed_call_types overwrote the existing call type WC"
    );
    let mut expected = defaults;
    expected.push(new_type);
    assert_eq!(
        listed,
        by_id(expected),
        "seed_call_types must add the new name and leave the others as they were"
    );
}

/// A call type's escalation policy round-trips through `put_call_type`
/// (the admin's `--escalation`) and `seed_call_types`, an empty one (no
/// alarm) included, and reads without a fallback.
pub async fn call_types_keep_their_escalation(harness: Harness) {
    let store = harness.store.as_ref();
    let shortened = Policy::parse(
        r#"[{"after":0,"to":"section"},{"after":2,"to":"house"},{"after":4,"to":"group:Leitung"}]"#,
    )
    .expect("a valid policy");
    let mut notruf = default_call_types()
        .into_iter()
        .find(|t| t.name == "Notruf")
        .expect("the defaults include Notruf");
    assert_ne!(notruf.escalation, shortened);
    notruf.escalation = shortened.clone();
    // And its accept timeout (DECISIONS §19), as `--accept-timeout` puts it.
    notruf.accept_timeout = 2;
    store
        .put_call_type(&notruf)
        .await
        .expect("put_call_type failed");
    let read = store.call_types().await.expect("call_types failed");
    assert_eq!(read.fallbacks, [], "a written policy reads as written");
    let stored = |types: &[CallType]| {
        types
            .iter()
            .find(|t| t.name == "Notruf")
            .expect("Notruf listed")
            .clone()
    };
    assert_eq!(
        stored(&read.types),
        notruf,
        "put_call_type keeps the escalation and the accept timeout"
    );

    // Seeding again keeps the admin's policy.
    store
        .seed_call_types(&default_call_types())
        .await
        .expect("seed_call_types failed");
    let types = store.call_types().await.expect("call_types failed").types;
    assert_eq!(stored(&types).escalation, shortened);

    notruf.escalation = Policy::none();
    store
        .put_call_type(&notruf)
        .await
        .expect("put_call_type failed");
    let read = store.call_types().await.expect("call_types failed");
    assert_eq!(read.fallbacks, []);
    assert_eq!(
        stored(&read.types).escalation,
        Policy::none(),
        "an empty policy (no alarm) is kept, not replaced by the seeded one"
    );
}
