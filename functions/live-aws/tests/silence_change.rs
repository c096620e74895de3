//! A central system's silence → the displays' and staff pages' messages
//! (DECISIONS §19): the silence's history item (partition `silence`, as
//! the DynamoDB store writes it) inserted is `consumer.silent`, its
//! `ended_at` set is `consumer.back`, both to the installation's scope in
//! production and to the consumer's own in the sandbox; another change of
//! the item, or its removal, is no message.

use aws_lambda_events::dynamodb::EventRecord;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use nurse_call_core::{Mode, Scope, Settings, wire_time::to_stored};
use nurse_call_dynamodb::SILENCE_PK;
use nurse_call_dynamodb::item::Item;
use nurse_call_live_aws::change::Change;

const CONSUMER: &str = "0d9f3c2a-0000-4000-8000-00000000000c";

fn since() -> DateTime<Utc> {
    "2026-01-05T09:00:00Z".parse().unwrap()
}

fn settings(mode: Mode) -> Settings {
    Settings::from_vars(mode, |name| {
        (name == "SERVICE_TIME_ZONE").then(|| "Europe/Berlin".to_string())
    })
    .expect("settings")
}

/// The history item of the silence since [`since`], ended at `ended`.
fn item(ended: Option<&str>) -> Item {
    let s = |text: &str| AttributeValue::S(text.to_string());
    let mut item: Item = [
        ("pk", s(SILENCE_PK)),
        ("sk", s(&format!("{}#{CONSUMER}", to_stored(since())))),
        ("consumer", s(CONSUMER)),
        ("name", s("Rufanlage Haus A")),
        ("since", s(&to_stored(since()))),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), value))
    .collect();
    if let Some(ended) = ended {
        item.insert("ended_at".into(), s(&to_stored(ended.parse().unwrap())));
    }
    item
}

fn record(operation: &str, old: Option<&Item>, new: &Item) -> EventRecord {
    let image = |item: &Item| serde_dynamo::Item::from(item.clone());
    let keys: Item = ["pk", "sk"]
        .iter()
        .map(|key| (key.to_string(), new[*key].clone()))
        .collect();
    let mut record = EventRecord::default();
    record.event_id = "silence".into();
    record.event_name = operation.into();
    record.change.keys = image(&keys);
    if let Some(old) = old {
        record.change.old_image = image(old);
    }
    record.change.new_image = image(new);
    record
}

/// The message of `record` in `mode`, with its scope; `None` when no news.
fn message(record: &EventRecord, mode: Mode) -> Option<(Scope, Value)> {
    let change = Change::from_record(record).expect("not a poison record")?;
    assert_eq!(change.scope(), None, "its scope is the mode's");
    assert!(!change.needs_call_types());
    let event = change
        .into_event(&[], &settings(mode), since())
        .expect("a message");
    assert_eq!(event.section, None, "every display and staff page");
    Some((event.scope, serde_json::from_str(&event.message).unwrap()))
}

#[test]
fn a_silence_begun_is_consumer_silent_and_its_end_consumer_back() {
    let begun = record("INSERT", None, &item(None));
    let (scope, silent) = message(&begun, Mode::Production).expect("news");
    assert_eq!(scope, Scope::installation());
    assert_eq!(
        silent,
        json!({"type": "consumer.silent", "consumer": CONSUMER, "name": "Rufanlage Haus A", "since": "2026-01-05 10:00:00"})
    );
    let ended = record(
        "MODIFY",
        Some(&item(None)),
        &item(Some("2026-01-05T09:05:00Z")),
    );
    let (_, back) = message(&ended, Mode::Production).expect("news");
    assert_eq!(back["type"], "consumer.back");
    assert_eq!(back["since"], "2026-01-05 10:00:00");
    // In the sandbox the consumer's own displays and pages hear of it.
    let (scope, _) = message(&begun, Mode::Sandbox).expect("news");
    assert_eq!(scope, Scope::consumer(CONSUMER));
}

#[test]
fn another_change_of_the_item_or_its_removal_is_no_message() {
    let ended = item(Some("2026-01-05T09:05:00Z"));
    // Ended already: a later write (a TTL, say) is no news.
    assert_eq!(
        message(&record("MODIFY", Some(&ended), &ended), Mode::Production),
        None
    );
    assert_eq!(
        message(
            &record("MODIFY", Some(&item(None)), &item(None)),
            Mode::Production
        ),
        None
    );
    assert_eq!(
        message(&record("REMOVE", Some(&ended), &ended), Mode::Production),
        None
    );
}

#[test]
fn a_silence_item_without_its_consumer_is_a_poison_record() {
    let mut broken = item(None);
    broken.remove("consumer");
    assert!(Change::from_record(&record("INSERT", None, &broken)).is_err());
}
