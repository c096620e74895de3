//! Reading and writing DynamoDB items: attribute helpers and the item shapes
//! of docs/data-model.md. Public for the AWS live feed, which reads the same
//! items from the data table's stream (`nurse-call-live-aws`).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};

use nurse_call_core::{
    Call, CallType, CallTypeItem, Consumer, Display, Element, NewCall, Raw, Scope, StoreError,
    alarm::Alarm,
    credentials::{Stored, read_consumer, read_display},
    wire_time::{from_stored, to_stored},
};

/// A DynamoDB item as the SDK hands it over: attribute name to value.
pub type Item = HashMap<String, AttributeValue>;

/// Sort key of an element item.
pub const ELEMENT_SK: &str = "element";
/// Sort key prefix of an open-call lock item (`open#<event>`).
pub const OPEN_PREFIX: &str = "open#";
/// Sort key of a call item.
pub const CALL_SK: &str = "call";

/// Partition key of an address: its element and the locks of its open calls.
pub fn address_pk(scope: &Scope, address: &str) -> String {
    format!("{}#{address}", scope.as_str())
}

/// Partition key of a scope's open-call index: one item per open call, so
/// that displays read every open call of a scope with one consistent Query
/// (the `by_scope` index cannot be read consistently).
pub fn open_index_pk(scope: &Scope) -> String {
    format!("open#{}", scope.as_str())
}

/// Partition key of a call item: the id, so that id uniqueness is a condition.
pub fn call_pk(id: i64) -> String {
    format!("call#{id}")
}

/// Sort key of the lock item of an address's open call of `event`: one per
/// address and event, so the lock's conditional put keeps a second open call
/// of that event out.
pub fn open_sk(event: &str) -> String {
    format!("{OPEN_PREFIX}{event}")
}

/// Partition key of the `by_scope` index: what kind of item, in which scope.
pub fn list_pk(scope: &Scope, kind: &str) -> String {
    format!("{}#{kind}", scope.as_str())
}

/// Sort key of the `by_scope` index: newest last, ids fixed width.
pub fn list_sk(at: DateTime<Utc>, tie_breaker: &str) -> String {
    format!("{}#{tie_breaker}", to_stored(at))
}

/// A call id as a key part, zero-padded to 16 digits (ids stay below 2^53),
/// so that text order is id order.
pub fn id_key(id: i64) -> String {
    format!("{id:016}")
}

/// A string attribute value (`S`): the short name every item builder uses.
pub fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

/// A number attribute value (`N`), which DynamoDB carries as decimal text.
pub fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn corrupt(what: &str, key: &str) -> StoreError {
    StoreError::Internal(format!("stored {what} has no usable {key:?}"))
}

/// The string attribute `key`; `None` when it is missing or not a string.
pub fn get_s(item: &Item, key: &str) -> Option<String> {
    match item.get(key) {
        Some(AttributeValue::S(value)) => Some(value.clone()),
        _ => None,
    }
}

/// The number attribute `key` as a `T`; `None` when it is missing, not a
/// number, or not a `T` (a fraction for an integer, out of range).
pub fn get_n<T: std::str::FromStr>(item: &Item, key: &str) -> Option<T> {
    match item.get(key) {
        Some(AttributeValue::N(value)) => value.parse().ok(),
        _ => None,
    }
}

/// The boolean attribute `key`; `None` when it is missing or not a boolean
/// (the callers choose the fail-safe value).
pub fn get_bool(item: &Item, key: &str) -> Option<bool> {
    match item.get(key) {
        Some(AttributeValue::Bool(value)) => Some(*value),
        _ => None,
    }
}

fn get_time(item: &Item, key: &str) -> Option<DateTime<Utc>> {
    get_s(item, key).and_then(|text| from_stored(&text))
}

/// `value`, or the error of a stored `what` without a usable `key`.
pub fn required<T>(value: Option<T>, what: &str, key: &str) -> Result<T, StoreError> {
    value.ok_or_else(|| corrupt(what, key))
}

/// Epoch seconds for DynamoDB's TTL: sandbox items expire, installation items do not.
pub fn expiry_for(scope: &Scope, now: DateTime<Utc>) -> Option<i64> {
    (scope != &Scope::installation())
        .then(|| (now + chrono::Duration::days(Consumer::SANDBOX_LIFETIME_DAYS)).timestamp())
}

/// The attributes every copy of a new call shares (its record, its lock, its
/// open-call index entry), keys aside: the call as opened, its pending alarm,
/// and a sandbox call's expiry counted from `now`.
pub fn call_attributes(scope: &Scope, id: i64, call: &NewCall, now: DateTime<Utc>) -> Item {
    let mut item = Item::new();
    item.insert("id".into(), n(id));
    item.insert("scope".into(), s(scope.as_str()));
    item.insert("address".into(), s(&call.address));
    item.insert("event".into(), s(&call.event));
    if let Some(position) = &call.position {
        item.insert("position".into(), s(position));
    }
    if let Some(section) = &call.section {
        item.insert("section".into(), s(section));
    }
    if let Some(attribute) = &call.attribute {
        item.insert("attribute".into(), s(attribute));
    }
    item.insert("element_code".into(), s(&call.element_code));
    item.insert("element_name".into(), s(&call.element_name));
    item.insert("opened_at".into(), s(to_stored(call.opened_at)));
    if let Some(opened_by) = &call.opened_by {
        item.insert("opened_by".into(), s(opened_by));
    }
    item.insert("list_sk".into(), s(list_sk(call.opened_at, &id_key(id))));
    if let Some(ttl) = expiry_for(scope, now) {
        item.insert("ttl".into(), n(ttl));
    }
    // Every copy of an open call (record, lock, index entry) carries its
    // alarm, so that each read of calls has it without a second request.
    let pending = Alarm::pending(call.opened_at);
    item.insert(ALARM.into(), s(pending.to_json()));
    item.insert(ALARM_CHANGES.into(), n(pending.changes));
    item
}

/// The attribute holding a call's alarm (`Alarm::to_json`).
pub const ALARM: &str = "alarm";
/// The alarm's `changes` beside it, for conditions: a close is written only
/// if the alarm displays see is still the one it read (its version).
pub const ALARM_CHANGES: &str = "alarm_changes";

/// The alarm of a call item: `None` on items stored before alarms existed;
/// an error when a hand edit left it unreadable (the engine's read refuses
/// such an alarm, see [`call_from_item`] for the other reads).
pub fn alarm_from_item(item: &Item) -> Result<Option<Alarm>, StoreError> {
    match item.get(ALARM) {
        None => Ok(None),
        // Not serde's message: it may quote a value (a staff member's name).
        Some(AttributeValue::S(json)) => Alarm::from_json(json).map(Some).map_err(|_| {
            StoreError::Internal(
                "stored call has an unreadable \"alarm\": not an alarm's JSON".into(),
            )
        }),
        Some(_) => Err(StoreError::Internal(
            "stored call has an unreadable \"alarm\": not a string".into(),
        )),
    }
}

/// A call item with its alarm. An alarm a hand edit left unreadable is
/// logged and left out, so that displays still get the call (the engine's
/// read, `AlarmStore::alarm`, refuses it instead).
pub fn call_from_item(item: &Item) -> Result<Call, StoreError> {
    let id = required(get_n(item, "id"), "call", "id")?;
    let alarm = alarm_from_item(item).unwrap_or_else(|problem| {
        tracing::error!(call = id, %problem, "unreadable alarm left out of the call");
        None
    });
    Ok(Call {
        id,
        address: required(get_s(item, "address"), "call", "address")?,
        event: required(get_s(item, "event"), "call", "event")?,
        position: get_s(item, "position"),
        section: get_s(item, "section"),
        attribute: get_s(item, "attribute"),
        element_code: get_s(item, "element_code").unwrap_or_default(),
        element_name: get_s(item, "element_name").unwrap_or_default(),
        opened_at: required(get_time(item, "opened_at"), "call", "opened_at")?,
        closed_at: get_time(item, "closed_at"),
        // Absent on calls stored before the audit fields existed.
        opened_by: get_s(item, "opened_by"),
        closed_by: get_s(item, "closed_by"),
        alarm,
    })
}

/// An element from its item; an error without `address` or `updated_at` (an
/// item written before versions existed is version 1).
pub fn element_from_item(item: &Item) -> Result<Element, StoreError> {
    Ok(Element {
        address: required(get_s(item, "address"), "element", "address")?,
        code: get_s(item, "code").unwrap_or_default(),
        name: get_s(item, "name").unwrap_or_default(),
        battery: get_n(item, "battery"),
        position: get_s(item, "position"),
        reachable: get_bool(item, "reachable"),
        updated_at: required(get_time(item, "updated_at"), "element", "updated_at")?,
        // Written before versions existed: it has been written once.
        version: get_n(item, "version").unwrap_or(1),
    })
}

/// Key prefix of display items in the consumers (credentials) table; no
/// consumer id (a UUID) starts with it.
pub const DISPLAY_PREFIX: &str = "display#";

/// The key of a display item: its token's hash, so that authenticating a
/// display is one `GetItem`.
pub fn display_key(token_hash: &str) -> String {
    format!("{DISPLAY_PREFIX}{token_hash}")
}

/// Whether an item of the consumers table is a display's credential (the
/// admin's consumer list skips those).
pub fn is_display_item(item: &Item) -> bool {
    get_s(item, "id").is_some_and(|id| id.starts_with(DISPLAY_PREFIX))
}

/// A display's credential item in the consumers table, keyed by its token's
/// hash ([`display_key`]).
pub fn display_item(display: &Display) -> Item {
    Item::from([
        ("id".to_string(), s(display_key(&display.token_hash))),
        ("display_id".to_string(), s(&display.id)),
        ("name".to_string(), s(&display.name)),
        (
            "sections".to_string(),
            AttributeValue::L(display.sections.iter().map(s).collect()),
        ),
        ("scope".to_string(), s(display.scope.as_str())),
        ("token_hash".to_string(), s(&display.token_hash)),
        ("created_at".to_string(), s(to_stored(display.created_at))),
        ("revoked".to_string(), AttributeValue::Bool(display.revoked)),
    ])
}

/// A display item as stored: usable, or malformed by a hand edit (its
/// sections not a list of texts, …; [`nurse_call_core::credentials`]).
pub fn display_from_item(item: &Item) -> Stored<Display> {
    read_display(|field| raw(item.get(field)))
}

/// A consumer's (a central system's) item in the consumers table; a sandbox
/// consumer's `expires_at` is its TTL as well.
pub fn consumer_item(consumer: &Consumer) -> Item {
    let mut item = Item::new();
    item.insert("id".into(), s(&consumer.id));
    item.insert("name".into(), s(&consumer.name));
    item.insert(
        "secrets".into(),
        AttributeValue::L(consumer.secrets.iter().map(s).collect()),
    );
    item.insert(
        "allow_sha1".into(),
        AttributeValue::Bool(consumer.allow_sha1),
    );
    item.insert("created_at".into(), s(to_stored(consumer.created_at)));
    if consumer.require_signed_time {
        // Absent means off: items written before replay protection existed.
        item.insert("require_signed_time".into(), AttributeValue::Bool(true));
    }
    if let Some(expires_at) = consumer.expires_at {
        item.insert("expires_at".into(), s(to_stored(expires_at)));
        item.insert("ttl".into(), n(expires_at.timestamp()));
    }
    item
}

/// A consumer item as stored: usable, or malformed by a hand edit (its
/// secrets not a list of texts, …; [`nurse_call_core::credentials`]).
/// An admin may have typed the secrets as a string set in the console: that
/// is a list of texts too.
pub fn consumer_from_item(item: &Item) -> Stored<Consumer> {
    read_consumer(|field| raw(item.get(field)))
}

/// A call type's item in the call-types table, keyed by its name (what
/// seeding and the admin command put).
pub fn call_type_item(t: &CallType) -> Item {
    Item::from([
        ("name".to_string(), s(&t.name)),
        ("id".to_string(), n(t.id)),
        ("internal_name".to_string(), s(&t.internal_name)),
        ("urgency".to_string(), s(&t.urgency)),
        ("priority".to_string(), n(t.priority)),
        ("type".to_string(), s(&t.kind)),
        ("color".to_string(), s(&t.color)),
        ("notify".to_string(), AttributeValue::Bool(t.notify)),
        (
            "notification_interval".to_string(),
            n(t.notification_interval),
        ),
        (
            "notification_maxloops".to_string(),
            n(t.notification_maxloops),
        ),
        ("notification_sound".to_string(), s(&t.notification_sound)),
        // The policy's JSON text (DECISIONS §14); core reads it back with
        // the fallbacks of a hand edit.
        ("escalation".to_string(), s(t.escalation.to_json())),
        // Seconds (DECISIONS §19); an item without it reads as the seeded
        // timeout of the name.
        ("accept_timeout".to_string(), n(t.accept_timeout)),
    ])
}

/// A call-type item field by field; core reads it with the fallbacks of
/// DECISIONS §7 ([`nurse_call_core`]).
pub fn call_type_from_item(item: &Item) -> CallTypeItem {
    CallTypeItem::from_fields(|field| raw(item.get(field)))
}

/// An attribute as it is, for core to judge: admins edit the call types,
/// consumers and displays in the console, where any attribute can be given
/// any type.
pub fn raw(value: Option<&AttributeValue>) -> Raw {
    match value {
        None => Raw::Missing,
        Some(AttributeValue::S(text)) => Raw::Text(text.clone()),
        Some(AttributeValue::N(number)) => Raw::Number(number.clone()),
        Some(AttributeValue::Bool(value)) => Raw::Bool(*value),
        Some(AttributeValue::L(items)) => Raw::List(items.iter().map(|v| raw(Some(v))).collect()),
        Some(AttributeValue::Ss(texts)) => {
            Raw::List(texts.iter().cloned().map(Raw::Text).collect())
        }
        Some(AttributeValue::Null(_)) => Raw::Other("null"),
        Some(AttributeValue::M(_)) => Raw::Other("a map"),
        Some(AttributeValue::Ns(_)) => Raw::Other("a number set"),
        Some(AttributeValue::B(_)) => Raw::Other("binary"),
        Some(AttributeValue::Bs(_)) => Raw::Other("a binary set"),
        Some(_) => Raw::Other("an unknown type"),
    }
}
