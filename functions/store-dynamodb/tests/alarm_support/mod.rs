//! A store on moto with calls opened and alarms stepped by the real engine,
//! for the alarm tests of this crate.

#![allow(dead_code)]

use chrono::{DateTime, Duration, TimeZone, Utc};

use nurse_call_core::{
    AddressSnapshot, AdminStore, Call, CloseOutcome, ElementChange, ElementPolicy, ElementWrite,
    KeptAlarm, NewCall, OpenOutcome, Scope, Store,
    alarm::{AuditEvent, Duty, Policy, Roster, Situation, Staff, Step, step},
    default_call_types,
};
use nurse_call_dynamodb::{DynamoStore, TableNames, Timeouts};
use store_conformance::moto;

pub(crate) async fn store() -> DynamoStore {
    let store = DynamoStore::connect_with(
        Some(&moto::endpoint()),
        TableNames::with_prefix(&moto::unique_prefix()),
        Timeouts::SLOW_STAND_IN,
    )
    .await;
    store.create_missing_tables().await.unwrap();
    store.seed_call_types(&default_call_types()).await.unwrap();
    store
}

pub(crate) fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 25, 8, 0, 0).unwrap()
}

/// `t0` plus `seconds` and a fraction (alarms keep their times exactly).
pub(crate) fn at(seconds: i64) -> DateTime<Utc> {
    t0() + Duration::seconds(seconds) + Duration::milliseconds(250)
}

pub(crate) fn person(id: &str, name: &str, scope: &Scope) -> Staff {
    Staff {
        id: id.into(),
        scope: scope.clone(),
        name: name.into(),
        groups: vec!["Leitung".into()],
        device: Some(format!("dect-{id}")),
        token_hash: format!("{id:0>64}"),
        created_at: at(-3600),
        revoked: false,
    }
}

pub(crate) fn duty(staff: &Staff, sections: &[&str], until: DateTime<Utc>) -> Duty {
    Duty {
        staff_id: staff.id.clone(),
        scope: staff.scope.clone(),
        sections: sections.iter().map(|s| s.to_string()).collect(),
        since: at(-600),
        until,
    }
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

fn write(scope: &Scope, address: &str, at: DateTime<Utc>) -> ElementWrite {
    ElementWrite::new(
        scope,
        &change(address, at),
        ElementPolicy::CreateMissing,
        &AddressSnapshot::default(),
    )
}

/// Opens a Notruf of section `S1` on `address` at `opened`.
pub(crate) async fn open(
    store: &DynamoStore,
    scope: &Scope,
    address: &str,
    opened: DateTime<Utc>,
) -> Call {
    let call = NewCall {
        address: address.into(),
        event: "Notruf".into(),
        position: None,
        section: Some("S1".into()),
        attribute: None,
        element_code: String::new(),
        element_name: String::new(),
        opened_at: opened,
        opened_by: None,
    };
    let snapshot = store.snapshot(scope, address).await.unwrap();
    match store
        .open_call(&call, &snapshot, &write(scope, address, opened))
        .await
        .unwrap()
    {
        OpenOutcome::Opened(call) => call,
        other => panic!("expected a new call, got {other:?}"),
    }
}

/// Closes the open calls of `address` at `closed` (a fresh snapshot).
pub(crate) async fn close(
    store: &DynamoStore,
    scope: &Scope,
    address: &str,
    closed: DateTime<Utc>,
) -> Vec<Call> {
    let snapshot = store.snapshot(scope, address).await.unwrap();
    match store
        .close_calls(&snapshot, closed, None, &write(scope, address, closed))
        .await
        .unwrap()
    {
        CloseOutcome::Closed(calls) => calls,
        other => panic!("expected closed calls, got {other:?}"),
    }
}

/// The engine's step of `kept` at `now` with the seeded Notruf policy
/// (section 0 s, house 60 s, Leitung 180 s), `staff` and `duties`.
pub(crate) fn step_at(
    kept: &KeptAlarm,
    staff: &[Staff],
    duties: &[Duty],
    now: DateTime<Utc>,
) -> (Step, Vec<AuditEvent>) {
    let policy = Policy::seeded("Notruf").unwrap();
    let situation = Situation {
        call: &kept.call,
        policy: &policy,
        interval: 15,
        maxloops: 0,
        roster: Roster { staff, duties, now },
        presence_at: None,
        receipt_seconds: 3600,
        without_channel: &[],
        // An accept is not timed out here (DECISIONS §19).
        accept_timeout: 86_400,
    };
    let stepped = step(&kept.alarm, &situation);
    let audit = AuditEvent::all(&stepped.effects, now);
    (stepped, audit)
}
