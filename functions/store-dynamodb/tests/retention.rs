//! Retention on DynamoDB (moto_server): a closed call's item carries `ttl`,
//! epoch seconds of its close plus the installation's retention, so that
//! DynamoDB deletes it by itself; an open call has none in production (never
//! deleted). A sandbox item already expires 30 days after its open: the
//! shorter of the two wins. A call's alarm audit never outlives it: each
//! audit item expires the retention after its write, or after the close.

use chrono::{DateTime, Duration, TimeZone, Utc};

use nurse_call_core::{
    AddressSnapshot, AdminStore, AlarmStore, AlarmWrite, Call, CallRetention, CloseOutcome,
    Consumer, ElementChange, ElementPolicy, ElementWrite, NewCall, OpenOutcome, Scope, Store,
    alarm::AuditEvent, default_call_types,
};
use nurse_call_dynamodb::{DynamoStore, TableNames, Timeouts};
use store_conformance::moto;

async fn store(retention_days: u32) -> DynamoStore {
    let store = DynamoStore::connect_with(
        Some(&moto::endpoint()),
        TableNames::with_prefix(&moto::unique_prefix()),
        Timeouts::SLOW_STAND_IN,
    )
    .await
    .with_call_retention(CallRetention::days(retention_days).unwrap());
    store.create_missing_tables().await.unwrap();
    store.seed_call_types(&default_call_types()).await.unwrap();
    store
}

fn at(hours: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 5, 1, 8, 0, 0).unwrap() + Duration::hours(hours)
}

fn change(address: &str, at: DateTime<Utc>) -> ElementChange {
    ElementChange {
        address: address.into(),
        battery: None,
        position: None,
        reachable: None,
        at,
    }
}

async fn open(store: &DynamoStore, scope: &Scope, address: &str, opened: DateTime<Utc>) -> Call {
    let call = NewCall {
        address: address.into(),
        event: "Notruf".into(),
        position: None,
        section: None,
        attribute: None,
        element_code: String::new(),
        element_name: String::new(),
        opened_at: opened,
        opened_by: None,
    };
    match store
        .open_call(
            &call,
            &AddressSnapshot::default(),
            &ElementWrite::new(
                scope,
                &change(address, opened),
                ElementPolicy::CreateMissing,
                &AddressSnapshot::default(),
            ),
        )
        .await
        .unwrap()
    {
        OpenOutcome::Opened(call) => call,
        other => panic!("expected a new call, got {other:?}"),
    }
}

async fn close(store: &DynamoStore, scope: &Scope, call: &Call, closed: DateTime<Utc>) {
    let open = AddressSnapshot {
        element: None,
        open_calls: vec![call.clone()],
    };
    let outcome = store
        .close_calls(
            &open,
            closed,
            None,
            &ElementWrite::new(
                scope,
                &change(&call.address, closed),
                ElementPolicy::CreateMissing,
                &open,
            ),
        )
        .await
        .unwrap();
    assert!(matches!(outcome, CloseOutcome::Closed(calls) if calls.len() == 1));
}

/// The `ttl` of the call item `call#<id>` (None when it has none).
async fn call_ttl(store: &DynamoStore, id: i64) -> Option<i64> {
    let item = store
        .client()
        .get_item()
        .table_name(&store.tables().data)
        .key(
            "pk",
            aws_sdk_dynamodb::types::AttributeValue::S(format!("call#{id}")),
        )
        .key(
            "sk",
            aws_sdk_dynamodb::types::AttributeValue::S("call".into()),
        )
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .expect("the call item exists");
    item.get("ttl")
        .map(|ttl| ttl.as_n().expect("ttl is a number").parse().unwrap())
}

#[tokio::test]
async fn a_closed_call_expires_its_retention_after_the_close() {
    let store = store(30).await;
    let scope = Scope::installation();
    let call = open(&store, &scope, "R-1", at(0)).await;
    assert_eq!(
        call_ttl(&store, call.id).await,
        None,
        "an open call never expires"
    );
    close(&store, &scope, &call, at(5)).await;
    assert_eq!(
        call_ttl(&store, call.id).await,
        Some((at(5) + Duration::days(30)).timestamp())
    );
}

#[tokio::test]
async fn a_sandbox_call_keeps_the_shorter_of_its_expiries() {
    let visitor = Scope::consumer("0b7c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e");
    let sandbox_expiry = (at(0) + Duration::days(Consumer::SANDBOX_LIFETIME_DAYS)).timestamp();

    // Retention 400 days: the sandbox's 30 days from the open come first.
    let long = store(400).await;
    let call = open(&long, &visitor, "R-1", at(0)).await;
    assert_eq!(call_ttl(&long, call.id).await, Some(sandbox_expiry));
    close(&long, &visitor, &call, at(5)).await;
    assert_eq!(call_ttl(&long, call.id).await, Some(sandbox_expiry));

    // Retention 1 day: a day after the close comes first.
    let short = store(1).await;
    let call = open(&short, &visitor, "R-1", at(0)).await;
    close(&short, &visitor, &call, at(5)).await;
    assert_eq!(
        call_ttl(&short, call.id).await,
        Some((at(5) + Duration::days(1)).timestamp())
    );
}

/// The `ttl` of each audit item of call `id`, in write order.
async fn audit_ttls(store: &DynamoStore, id: i64) -> Vec<Option<i64>> {
    let items = store
        .client()
        .query()
        .table_name(&store.tables().data)
        .key_condition_expression("pk = :pk AND begins_with(sk, :audit)")
        .expression_attribute_values(
            ":pk",
            aws_sdk_dynamodb::types::AttributeValue::S(format!("call#{id}")),
        )
        .expression_attribute_values(
            ":audit",
            aws_sdk_dynamodb::types::AttributeValue::S("audit#".into()),
        )
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .items
        .unwrap_or_default();
    items
        .iter()
        .map(|item| {
            item.get("ttl")
                .map(|ttl| ttl.as_n().unwrap().parse().unwrap())
        })
        .collect()
}

/// Writes the call's alarm again with one audit line at `at`.
async fn audit_line(store: &DynamoStore, scope: &Scope, id: i64, at: DateTime<Utc>) {
    let kept = store.alarm(scope, id).await.unwrap().unwrap();
    let line = AuditEvent {
        at,
        kind: "read".into(),
        level: 0,
        staff: None,
        detail: None,
    };
    assert_eq!(
        store
            .write_alarm(&kept, &kept.alarm, &[line])
            .await
            .unwrap(),
        AlarmWrite::Written
    );
}

#[tokio::test]
async fn a_calls_audit_expires_with_it_never_after_it() {
    let store = store(30).await;
    let scope = Scope::installation();
    let call = open(&store, &scope, "R-1", at(0)).await;
    audit_line(&store, &scope, call.id, at(1)).await;
    close(&store, &scope, &call, at(5)).await;
    audit_line(&store, &scope, call.id, at(6)).await;
    assert_eq!(
        audit_ttls(&store, call.id).await,
        [
            Some((at(1) + Duration::days(30)).timestamp()),
            call_ttl(&store, call.id).await,
        ],
        "written while open: the retention after its write; once closed: the call's own"
    );
}
