//! Alarm changes → displays' messages (DECISIONS §14), on stream records
//! made of the items the DynamoDB store really writes (on moto): each
//! record's images are the call item before and after one alarm write, in
//! the shape Lambda delivers. A level started is `call.escalated`, an
//! accept `call.accepted`, nobody reachable `call.unattended`, each with
//! the call's growing version and its alarm; a re-alert, a closed call's
//! alarm stopping, and the copies and audit items are no message.

use aws_lambda_events::dynamodb::EventRecord;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::Value;

use nurse_call_core::{
    AddressSnapshot, AlarmStore, AlarmWrite, Call, CloseOutcome, ElementChange, ElementPolicy,
    ElementWrite, NewCall, OpenOutcome, Scope, Store,
    alarm::{AuditEvent, Duty, Policy, Response, Roster, Situation, Staff, Step, respond, step},
    default_call_types,
};
use nurse_call_dynamodb::item::Item;
use nurse_call_dynamodb::{DynamoStore, TableNames, Timeouts};
use nurse_call_live_aws::change::Change;
use store_conformance::moto;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap()
}

fn at(seconds: i64) -> DateTime<Utc> {
    t0() + Duration::seconds(seconds)
}

fn anna() -> Staff {
    Staff {
        id: "5b1f3c2a-0000-4000-8000-000000000001".into(),
        scope: Scope::installation(),
        name: "Anna".into(),
        groups: vec![],
        device: None,
        token_hash: "a".repeat(64),
        created_at: t0(),
        revoked: false,
    }
}

fn on_duty(staff: &Staff) -> Duty {
    Duty {
        staff_id: staff.id.clone(),
        scope: staff.scope.clone(),
        sections: vec!["S1".into()],
        since: t0(),
        until: at(8 * 3600),
    }
}

/// The store on moto and a Notruf of section S1 opened on `address` at t0.
struct World {
    store: DynamoStore,
    scope: Scope,
}

impl World {
    async fn new() -> Self {
        let store = DynamoStore::connect_with(
            Some(&moto::endpoint()),
            TableNames::with_prefix(&moto::unique_prefix()),
            Timeouts::SLOW_STAND_IN,
        )
        .await;
        store.create_missing_tables().await.unwrap();
        World {
            store,
            scope: Scope::installation(),
        }
    }

    fn element(&self, address: &str, at: DateTime<Utc>) -> ElementWrite {
        ElementWrite::new(
            &self.scope,
            &ElementChange {
                address: address.into(),
                battery: None,
                position: None,
                reachable: None,
                at,
            },
            ElementPolicy::CreateMissing,
            &AddressSnapshot::default(),
        )
    }

    async fn open(&self, address: &str) -> Call {
        let call = NewCall {
            address: address.into(),
            event: "Notruf".into(),
            position: None,
            section: Some("S1".into()),
            attribute: None,
            element_code: String::new(),
            element_name: String::new(),
            opened_at: t0(),
            opened_by: None,
        };
        let snapshot = AddressSnapshot::default();
        match self
            .store
            .open_call(&call, &snapshot, &self.element(address, t0()))
            .await
            .unwrap()
        {
            OpenOutcome::Opened(call) => call,
            other => panic!("{other:?}"),
        }
    }

    async fn close(&self, address: &str, closed: DateTime<Utc>) {
        let snapshot = self.store.snapshot(&self.scope, address).await.unwrap();
        let outcome = self
            .store
            .close_calls(&snapshot, closed, None, &self.element(address, closed))
            .await
            .unwrap();
        assert!(matches!(outcome, CloseOutcome::Closed(calls) if calls.len() == 1));
    }

    /// The call item as stored now.
    async fn record(&self, id: i64) -> Item {
        self.store
            .client()
            .get_item()
            .table_name(&self.store.tables().data)
            .key("pk", AttributeValue::S(format!("call#{id}")))
            .key("sk", AttributeValue::S("call".into()))
            .consistent_read(true)
            .send()
            .await
            .unwrap()
            .item
            .expect("the call item")
    }

    /// Steps (or answers for `staff`) the call's alarm at `now`, writes it,
    /// and returns the stream record of the call item's change.
    async fn write(
        &self,
        id: i64,
        duties: &[Duty],
        now: DateTime<Utc>,
        answer: Option<Response>,
    ) -> EventRecord {
        let before = self.record(id).await;
        let kept = self.store.alarm(&self.scope, id).await.unwrap().unwrap();
        let staff = [anna()];
        let policy = Policy::seeded("Notruf").unwrap();
        let situation = Situation {
            call: &kept.call,
            policy: &policy,
            interval: 15,
            maxloops: 0,
            roster: Roster {
                staff: &staff,
                duties,
                now,
            },
            presence_at: None,
            receipt_seconds: 3600,
            without_channel: &[],
            // An accept is not timed out here (DECISIONS §19).
            accept_timeout: 86_400,
        };
        let stepped: Step = match answer {
            Some(response) => respond(&kept.alarm, &situation, &staff[0], None, response).unwrap(),
            None => step(&kept.alarm, &situation),
        };
        let audit = AuditEvent::all(&stepped.effects, now);
        assert_eq!(
            self.store
                .write_alarm(&kept, &stepped.alarm, &audit)
                .await
                .unwrap(),
            AlarmWrite::Written
        );
        modify(&before, &self.record(id).await)
    }
}

/// A MODIFY record of the call item from `old` to `new`, as Lambda delivers it.
fn modify(old: &Item, new: &Item) -> EventRecord {
    let image = |item: &Item| serde_dynamo::Item::from(item.clone());
    let keys: Item = ["pk", "sk"]
        .iter()
        .map(|key| (key.to_string(), new[*key].clone()))
        .collect();
    let mut record = EventRecord::default();
    record.event_id = "alarm-write".into();
    record.event_name = "MODIFY".into();
    record.change.keys = image(&keys);
    record.change.old_image = image(old);
    record.change.new_image = image(new);
    record
}

/// The message of `record`, if it is one.
fn message(record: &EventRecord) -> Option<Value> {
    let change = Change::from_record(record).expect("not a poison record")?;
    assert_eq!(change.scope(), Some(&Scope::installation()));
    assert!(change.needs_call_types());
    let event = change
        .into_event(&default_call_types(), &berlin(), at(10))
        .expect("a message");
    assert_eq!(event.section.as_deref(), Some("S1"));
    Some(serde_json::from_str(&event.message).expect("JSON"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_level_started_then_an_accept_are_escalated_then_accepted_with_growing_versions() {
    let world = World::new().await;
    let duties = [on_duty(&anna())];
    let call = world.open("Zimmer-101").await;

    let first = message(&world.write(call.id, &duties, at(1), None).await).expect("a message");
    assert_eq!(first["type"], "call.escalated");
    assert_eq!(first["version"], 2);
    assert_eq!(first["call"]["version"], 2);
    assert_eq!(first["call"]["id"], call.id);
    assert_eq!(first["call"]["alarm"]["state"], "alerting");
    assert_eq!(first["call"]["alarm"]["level"], 1);
    assert_eq!(first["call"]["alarm"]["levels"], 3);
    assert_eq!(first["call"]["alarm"]["next_at"], "2026-01-05 10:01:00");

    // A re-alert changes nothing displays see.
    let realert = world.write(call.id, &duties, at(17), None).await;
    assert_eq!(message(&realert), None);

    let accepted = world
        .write(call.id, &duties, at(20), Some(Response::Accepted))
        .await;
    let accepted = message(&accepted).expect("a message");
    assert_eq!(accepted["type"], "call.accepted");
    assert_eq!(accepted["version"], 3);
    assert_eq!(accepted["call"]["alarm"]["state"], "accepted");
    assert_eq!(accepted["call"]["alarm"]["accepted_by"]["name"], "Anna");
    assert_eq!(
        accepted["call"]["alarm"]["accepted_at"],
        "2026-01-05 10:00:20"
    );

    // The close is the displays' last word on the call: the alarm it stops
    // afterwards is no message.
    world.close("Zimmer-101", at(30)).await;
    let ended = world.write(call.id, &duties, at(31), None).await;
    assert_eq!(message(&ended), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn nobody_on_duty_is_call_unattended() {
    let world = World::new().await;
    let call = world.open("Zimmer-102").await;
    let unattended = message(&world.write(call.id, &[], at(1), None).await).expect("a message");
    assert_eq!(unattended["type"], "call.unattended");
    assert_eq!(unattended["version"], 2);
    assert_eq!(unattended["call"]["alarm"]["state"], "unattended");

    // Anna comes on duty: alerted now, which displays see as a change.
    let duties = [on_duty(&anna())];
    let alerting = world.write(call.id, &duties, at(40), None).await;
    let alerting = message(&alerting).expect("a message");
    assert_eq!(alerting["type"], "call.escalated");
    assert_eq!(alerting["version"], 3);
    assert_eq!(alerting["call"]["alarm"]["state"], "alerting");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_copies_and_the_audit_of_an_alarm_write_are_no_message() {
    let world = World::new().await;
    let call = world.open("Zimmer-103").await;
    world.write(call.id, &[on_duty(&anna())], at(1), None).await;
    let items = world
        .store
        .client()
        .scan()
        .table_name(&world.store.tables().data)
        .send()
        .await
        .unwrap()
        .items
        .unwrap_or_default();
    let mut others = 0;
    for item in items
        .iter()
        .filter(|item| item["sk"] != AttributeValue::S("call".into()))
    {
        let mut record = modify(item, item);
        if item["sk"].as_s().unwrap().starts_with("audit#") {
            record.event_name = "INSERT".into();
            record.change.old_image = serde_dynamo::Item::from(Item::new());
        }
        assert_eq!(Change::from_record(&record), Ok(None), "{:?}", item["sk"]);
        others += 1;
    }
    assert!(others >= 4, "lock, index entry, element, audit: {others}");
}

/// The installation's settings, in Berlin's time (the default zone).
fn berlin() -> nurse_call_core::Settings {
    nurse_call_core::Settings::from_vars(nurse_call_core::Mode::Production, |name| {
        (name == "SERVICE_TIME_ZONE").then(|| "Europe/Berlin".to_string())
    })
    .expect("settings")
}
