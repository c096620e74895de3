//! Webhook endpoints (DECISIONS §16): what an admin registers, read back
//! whole, changed only where it exists.

use chrono::Duration;

use nurse_call_core::webhooks::{Endpoint, EventType};

use crate::Harness;
use crate::support::t;
use crate::webhook_support::*;

/// Created endpoints are listed oldest first, every field as stored; an
/// update replaces the settings (not `created_at`, not `failing_since`),
/// `set_endpoint_failing` sets and clears its own field, a delete removes
/// it; each answers `false` for an id that is not there.
pub async fn webhook_endpoints_are_created_listed_updated_and_deleted(harness: Harness) {
    let hooks = webhooks(&harness);
    let store = hooks.as_ref();
    assert!(endpoints(store).await.is_empty(), "a new store has none");

    // The second is created first, but is younger: the list is by age.
    let older = endpoint(1, t(10));
    let younger = Endpoint {
        events: vec![EventType::CallAlert, EventType::CallClosed],
        sections: vec!["Station 1".into(), "Station 2".into()],
        failing_since: Some(t(20) + Duration::milliseconds(250)),
        confirms_delivery: true,
        private_network: true,
        ..endpoint(2, t(20))
    };
    create_endpoint(store, &younger).await;
    create_endpoint(store, &older).await;
    assert_eq!(
        endpoints(store).await,
        [older.clone(), younger.clone()],
        "oldest first, every field as created"
    );

    let rotated = Endpoint {
        name: "DECT Haus A".into(),
        url: "https://dect.example:8443/espa".into(),
        events: vec![EventType::CallAccepted],
        sections: vec!["Station 3".into()],
        secrets: vec![older.secrets[0].clone(), "whsec_the-new-one".into()],
        disabled: true,
        confirms_delivery: true,
        private_network: true,
        // Neither is the update's to change.
        created_at: t(99),
        failing_since: Some(t(99)),
        ..older.clone()
    };
    assert!(hooks.update_endpoint(&rotated).await.unwrap());
    let after_update = Endpoint {
        created_at: older.created_at,
        failing_since: older.failing_since,
        ..rotated.clone()
    };
    assert_eq!(
        endpoints(store).await,
        [after_update.clone(), younger.clone()],
        "the update replaced name, URL, events, sections, secrets, disabled, confirms_delivery and private_network only"
    );
    let stranger = endpoint(9, t(30));
    assert!(
        !hooks.update_endpoint(&stranger).await.unwrap(),
        "updating an unknown id: false"
    );
    assert_eq!(endpoints(store).await.len(), 2, "and nothing created");

    let failing = t(40) + Duration::nanoseconds(123_456_789);
    assert!(
        hooks
            .set_endpoint_failing(&older.id, Some(failing))
            .await
            .unwrap()
    );
    assert_eq!(endpoints(store).await[0].failing_since, Some(failing));
    assert!(hooks.set_endpoint_failing(&older.id, None).await.unwrap());
    assert_eq!(
        endpoints(store).await,
        [after_update.clone(), younger.clone()],
        "failing_since cleared, nothing else changed"
    );
    assert!(
        !hooks
            .set_endpoint_failing(&stranger.id, Some(failing))
            .await
            .unwrap(),
        "an unknown id: false"
    );

    assert!(hooks.delete_endpoint(&older.id).await.unwrap());
    assert_eq!(endpoints(store).await, std::slice::from_ref(&younger));
    assert!(
        !hooks.delete_endpoint(&older.id).await.unwrap(),
        "deleted already: false"
    );
    assert!(!hooks.delete_endpoint(&stranger.id).await.unwrap());
    assert!(
        !hooks.update_endpoint(&rotated).await.unwrap(),
        "a deleted endpoint is not updated back into being"
    );
    assert_eq!(endpoints(store).await, [younger]);
}
