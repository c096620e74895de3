//! Stream records → displays' messages, on a recorded batch in the shape
//! Lambda delivers (tests/fixtures/stream-batch.json: an open of a Notruf
//! with its lock, index and element update, a sandbox element created and
//! then touched without a change, the close with its removals, a closed
//! call edited later, a TTL removal, and a poison record). The fixture's
//! `eventID`s name the records; Lambda's are random hex.

use aws_lambda_events::dynamodb::{Event, EventRecord};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use nurse_call_core::{Scope, default_call_types};
use nurse_call_live_aws::change::Change;

const SANDBOX: &str = "0b6d2c1e-3f4a-4b5c-8d6e-7f8091a2b3c4";

fn batch() -> Vec<EventRecord> {
    let event: Event = serde_json::from_str(include_str!("fixtures/stream-batch.json"))
        .expect("the fixture is a DynamoDB stream event as Lambda delivers it");
    event.records
}

fn record(id: &str) -> EventRecord {
    batch()
        .into_iter()
        .find(|record| record.event_id == id)
        .unwrap_or_else(|| panic!("no record {id} in the fixture"))
}

fn now() -> DateTime<Utc> {
    "2026-01-05T09:00:10Z".parse().unwrap()
}

/// The change of record `id`, as the message's JSON with its scope and section.
fn message(id: &str) -> Option<(Scope, Option<String>, Value)> {
    let change = Change::from_record(&record(id)).expect("not a poison record")?;
    let event = change
        .into_event(&default_call_types(), &berlin(), now())
        .expect("a message");
    let message = serde_json::from_str(&event.message).expect("the message is JSON");
    Some((event.scope, event.section, message))
}

#[test]
fn an_inserted_open_call_is_call_opened_with_its_type_in_local_time() {
    let (scope, section, message) = message("call-opened").expect("a change");
    assert_eq!(scope, Scope::installation());
    assert_eq!(section.as_deref(), Some("S1"));
    assert_eq!(message["type"], "call.opened");
    assert_eq!(message["version"], 1);
    let call = &message["call"];
    assert_eq!(call["id"], 111988768358401_i64);
    assert_eq!(call["address"], "Zimmer-101");
    assert_eq!(call["section"], "S1");
    assert_eq!(call["opened_at"], "2026-01-05 10:00:00", "Europe/Berlin");
    assert_eq!(call["closed_at"], Value::Null);
    assert_eq!(call["duration"], 10);
    assert_eq!(call["type"]["name"], "Notruf");
    assert!(
        call.get("opened_by").is_none(),
        "the audit stays off the wire"
    );
}

#[test]
fn closing_a_call_is_call_closed_with_version_2() {
    let (scope, section, message) = message("call-closed").expect("a change");
    assert_eq!(scope, Scope::installation());
    assert_eq!(section.as_deref(), Some("S1"));
    assert_eq!(message["type"], "call.closed");
    assert_eq!(message["version"], 2);
    assert_eq!(message["call"]["closed_at"], "2026-01-05 10:04:10");
    assert_eq!(message["call"]["duration"], 250, "open to close");
}

#[test]
fn an_element_whose_version_grew_is_element_updated() {
    let (scope, section, message) = message("element-battery").expect("a change");
    assert_eq!(scope, Scope::installation());
    assert_eq!(section, None, "elements belong to no section");
    assert_eq!(
        message,
        json!({"type": "element.updated", "version": 4, "element": {
            "address": "Zimmer-101", "code": "Z101", "name": "Zimmer 101, Bett 1",
            "battery": 79, "position": null, "reachable": true,
            "updated_at": "2026-01-05 10:00:00", "version": 4
        }})
    );
}

#[test]
fn a_new_sandbox_element_is_sent_to_its_visitor_and_a_touch_without_change_is_not() {
    let (scope, _, message) = message("sandbox-element-created").expect("a change");
    assert_eq!(scope, Scope::consumer(SANDBOX));
    assert_eq!(message["type"], "element.updated");
    assert_eq!(message["version"], 1);
    assert_eq!(message["element"]["address"], "Flur-2");
    // Only its TTL moved (the same version): nothing a display shows.
    assert_eq!(message_of("sandbox-element-touched"), None);
}

fn message_of(id: &str) -> Option<Value> {
    message(id).map(|(_, _, message)| message)
}

#[test]
fn locks_index_items_removals_and_later_edits_are_no_message() {
    for id in [
        "lock-put",
        "open-index",
        "lock-removed",
        "index-removed",
        "closed-call-edited",
        "call-expired",
    ] {
        assert_eq!(message_of(id), None, "{id}");
    }
}

#[test]
fn a_poison_record_is_reported_by_attribute_never_by_value() {
    let poison = Change::from_record(&record("poison")).expect_err("a call item without its id");
    assert!(poison.0.contains("\"id\""), "{poison}");
    assert!(!poison.0.contains("not-a-number"), "{poison}");
}

#[test]
fn a_modify_without_old_image_is_poison_not_a_guess() {
    let mut closing = record("call-closed");
    closing.change.old_image = serde_dynamo::Item::from(std::collections::HashMap::<
        String,
        serde_dynamo::AttributeValue,
    >::new());
    assert!(Change::from_record(&closing).is_err());
}

#[test]
fn the_whole_batch_gives_the_displays_the_messages_in_write_order() {
    let kinds: Vec<String> = batch()
        .iter()
        .filter_map(|record| Change::from_record(record).ok().flatten())
        .map(|change| {
            let event = change
                .into_event(&default_call_types(), &berlin(), now())
                .expect("a message");
            let message: Value = serde_json::from_str(&event.message).unwrap();
            format!(
                "{} {}",
                message["type"].as_str().unwrap(),
                event.scope.as_str()
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "call.opened installation",
            "element.updated installation",
            &format!("element.updated {SANDBOX}"),
            "call.closed installation",
        ]
    );
}

/// The installation's settings, in Berlin's time (the default zone).
fn berlin() -> nurse_call_core::Settings {
    nurse_call_core::Settings::from_vars(nurse_call_core::Mode::Production, |name| {
        (name == "SERVICE_TIME_ZONE").then(|| "Europe/Berlin".to_string())
    })
    .expect("settings")
}
