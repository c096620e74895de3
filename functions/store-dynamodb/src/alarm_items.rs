//! The items of alarm routing (docs/data-model.md, DECISIONS §14): staff
//! members (a credential in the consumers table, a roster entry in the data
//! table), duties, a call's audit, and the keys of the due index.

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, SecondsFormat, Utc};

use nurse_call_core::{
    DueAlarm, Scope, StoreError,
    alarm::{AuditEvent, Duty, Staff, StaffRef},
};

use crate::item::{Item, get_bool, get_n, get_s, id_key, n, required, s};

/// Key prefix of staff credentials in the consumers table; no consumer id
/// (a UUID) and no display key starts with it.
pub const STAFF_PREFIX: &str = "staff#";
/// Sort key prefix of a call's audit items (`call#<id>` partition).
pub const AUDIT_PREFIX: &str = "audit#";
/// The one partition of the due index `by_due`: every alarm with a
/// `next_at`, in every scope, ordered by it.
pub const DUE_PK: &str = "due";
/// Audit events per audit item: some 150 bytes each, so an item stays far
/// below DynamoDB's 400 KB and one step's events seldom need two.
pub const EVENTS_PER_AUDIT_ITEM: usize = 200;

/// The credential's key: the token's hash, so that a staff request is
/// authenticated with one `GetItem` (as a display's).
pub fn staff_key(token_hash: &str) -> String {
    format!("{STAFF_PREFIX}{token_hash}")
}

/// Whether an item of the consumers table is a staff member's credential
/// (the admin's consumer list skips those).
pub fn is_staff_item(item: &Item) -> bool {
    get_s(item, "id").is_some_and(|id| id.starts_with(STAFF_PREFIX))
}

/// Partition of a scope's roster: every staff member of the scope, so that
/// the engine reads them with one consistent `Query`.
pub fn roster_pk(scope: &Scope) -> String {
    format!("staff#{}", scope.as_str())
}

/// Partition of a scope's duties, one item per staff member on duty.
pub fn duty_pk(scope: &Scope) -> String {
    format!("duty#{}", scope.as_str())
}

/// An instant to the nanosecond, fixed width (`2026-05-01T10:00:00.123456789Z`),
/// so that text order is time order and an alarm's times read back exactly.
pub fn precise(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Nanos, true)
}

/// The instant of a [`precise`] text (any RFC 3339 text reads); `None` for
/// anything else.
pub fn from_precise(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

pub(crate) fn get_precise(item: &Item, key: &str) -> Option<DateTime<Utc>> {
    get_s(item, key).and_then(|text| from_precise(&text))
}

/// A list of texts as a DynamoDB list (groups, sections, secrets).
pub(crate) fn texts(values: &[String]) -> AttributeValue {
    AttributeValue::L(values.iter().map(s).collect())
}

pub(crate) fn get_texts(item: &Item, key: &str) -> Option<Vec<String>> {
    match item.get(key) {
        Some(AttributeValue::L(values)) => values
            .iter()
            .map(|v| v.as_s().ok().cloned())
            .collect::<Option<Vec<_>>>(),
        _ => None,
    }
}

/// A staff member's attributes (the same on the credential and on the
/// roster entry); `ttl` for a sandbox's staff, which go with the visitor.
pub fn staff_attributes(staff: &Staff, ttl: Option<i64>) -> Item {
    let mut item = Item::from([
        ("staff_id".to_string(), s(&staff.id)),
        ("scope".to_string(), s(staff.scope.as_str())),
        ("name".to_string(), s(&staff.name)),
        ("groups".to_string(), texts(&staff.groups)),
        ("token_hash".to_string(), s(&staff.token_hash)),
        ("created_at".to_string(), s(precise(staff.created_at))),
        ("revoked".to_string(), AttributeValue::Bool(staff.revoked)),
    ]);
    if let Some(device) = &staff.device {
        item.insert("device".into(), s(device));
    }
    if let Some(ttl) = ttl {
        item.insert("ttl".into(), n(ttl));
    }
    item
}

/// The credential item of the consumers table.
pub fn staff_credential(staff: &Staff, ttl: Option<i64>) -> Item {
    let mut item = staff_attributes(staff, ttl);
    item.insert("id".into(), s(staff_key(&staff.token_hash)));
    item
}

/// The roster item of the data table.
pub fn staff_roster_entry(staff: &Staff, ttl: Option<i64>) -> Item {
    let mut item = staff_attributes(staff, ttl);
    item.insert("pk".into(), s(roster_pk(&staff.scope)));
    item.insert("sk".into(), s(&staff.id));
    item
}

/// A staff member from their credential or their roster entry (both carry
/// the same attributes); an error when one they cannot do without is missing.
pub fn staff_from_item(item: &Item) -> Result<Staff, StoreError> {
    Ok(Staff {
        id: required(get_s(item, "staff_id"), "staff member", "staff_id")?,
        scope: Scope::from_key(&required(get_s(item, "scope"), "staff member", "scope")?),
        name: get_s(item, "name").unwrap_or_default(),
        groups: get_texts(item, "groups").unwrap_or_default(),
        device: get_s(item, "device"),
        token_hash: required(get_s(item, "token_hash"), "staff member", "token_hash")?,
        created_at: required(
            get_precise(item, "created_at"),
            "staff member",
            "created_at",
        )?,
        // Unreadable counts as revoked: a hand edit never lets a token in.
        revoked: get_bool(item, "revoked").unwrap_or(true),
    })
}

/// A duty's item; DynamoDB's TTL removes it (within a day or two) after it
/// ended, and reads skip it from `until` on.
pub fn duty_item(duty: &Duty) -> Item {
    Item::from([
        ("pk".to_string(), s(duty_pk(&duty.scope))),
        ("sk".to_string(), s(&duty.staff_id)),
        ("staff_id".to_string(), s(&duty.staff_id)),
        ("scope".to_string(), s(duty.scope.as_str())),
        ("sections".to_string(), texts(&duty.sections)),
        ("since".to_string(), s(precise(duty.since))),
        ("until".to_string(), s(precise(duty.until))),
        // Whole seconds, rounded up: never removed before it ended.
        (
            "ttl".to_string(),
            n(duty.until.timestamp() + i64::from(duty.until.timestamp_subsec_nanos() > 0)),
        ),
    ])
}

/// A duty from its item; an error when any attribute is missing. An ended
/// duty reads too (TTL is slow to remove it): skipping it is the reader's.
pub fn duty_from_item(item: &Item) -> Result<Duty, StoreError> {
    Ok(Duty {
        staff_id: required(get_s(item, "staff_id"), "duty", "staff_id")?,
        scope: Scope::from_key(&required(get_s(item, "scope"), "duty", "scope")?),
        sections: required(get_texts(item, "sections"), "duty", "sections")?,
        since: required(get_precise(item, "since"), "duty", "since")?,
        until: required(get_precise(item, "until"), "duty", "until")?,
    })
}

/// Sort key of a call's audit item: the alarm version the write made, and
/// the chunk of that write's events, both fixed width (written order).
pub fn audit_sk(version: i64, chunk: usize) -> String {
    format!("{AUDIT_PREFIX}{version:010}#{chunk:03}")
}

/// A write's audit events as items of the call's partition, at most
/// [`EVENTS_PER_AUDIT_ITEM`] each.
pub fn audit_items(
    scope: &Scope,
    call_id: i64,
    version: i64,
    events: &[AuditEvent],
    ttl: Option<i64>,
) -> Vec<Item> {
    events
        .chunks(EVENTS_PER_AUDIT_ITEM)
        .enumerate()
        .map(|(chunk, events)| {
            let mut item = Item::from([
                ("pk".to_string(), s(crate::item::call_pk(call_id))),
                ("sk".to_string(), s(audit_sk(version, chunk))),
                ("scope".to_string(), s(scope.as_str())),
                ("call_id".to_string(), n(call_id)),
                (
                    "events".to_string(),
                    AttributeValue::L(events.iter().map(event_value).collect()),
                ),
            ]);
            if let Some(ttl) = ttl {
                item.insert("ttl".into(), n(ttl));
            }
            item
        })
        .collect()
}

fn event_value(event: &AuditEvent) -> AttributeValue {
    let mut map = Item::from([
        ("at".to_string(), s(precise(event.at))),
        ("kind".to_string(), s(&event.kind)),
        ("level".to_string(), n(event.level)),
    ]);
    if let Some(staff) = &event.staff {
        map.insert("staff_id".into(), s(&staff.id));
        map.insert("staff_name".into(), s(&staff.name));
    }
    if let Some(detail) = &event.detail {
        map.insert("detail".into(), s(detail));
    }
    AttributeValue::M(map)
}

/// The events of an audit item, in the order written.
pub fn audit_from_item(item: &Item) -> Result<Vec<AuditEvent>, StoreError> {
    let Some(AttributeValue::L(events)) = item.get("events") else {
        return Err(StoreError::Internal(
            "stored audit has no usable \"events\"".into(),
        ));
    };
    events
        .iter()
        .map(|event| {
            let map = event
                .as_m()
                .map_err(|_| StoreError::Internal("stored audit event is not a map".into()))?;
            let staff = match (get_s(map, "staff_id"), get_s(map, "staff_name")) {
                (Some(id), Some(name)) => Some(StaffRef { id, name }),
                _ => None,
            };
            Ok(AuditEvent {
                at: required(get_precise(map, "at"), "audit event", "at")?,
                kind: required(get_s(map, "kind"), "audit event", "kind")?,
                level: get_n(map, "level").unwrap_or(0),
                staff,
                detail: get_s(map, "detail"),
            })
        })
        .collect()
}

/// Sort key of a call in the due index: when it is due, then whose and
/// which (unique, and readable back without the call's item).
pub fn due_sk(next_at: DateTime<Utc>, scope: &Scope, call_id: i64) -> String {
    format!(
        "{}#{}#{}",
        precise(next_at),
        scope.as_str(),
        id_key(call_id)
    )
}

/// The upper bound of a due index query: everything due at or before `now`
/// (`~` sorts after `#` and every digit).
pub fn due_until(now: DateTime<Utc>) -> String {
    format!("{}~", precise(now))
}

/// The alarm a due index entry names (its keys only).
pub fn due_from_item(item: &Item) -> Result<DueAlarm, StoreError> {
    let unusable = || StoreError::Internal("stored due entry has no usable \"due_sk\"".into());
    let sk = get_s(item, "due_sk").ok_or_else(unusable)?;
    // The time has no `#`, the id is the last part; the scope is between.
    let (next_at, rest) = sk.split_once('#').ok_or_else(unusable)?;
    let (scope, id) = rest.rsplit_once('#').ok_or_else(unusable)?;
    Ok(DueAlarm {
        scope: Scope::from_key(scope),
        call_id: id.parse().map_err(|_| unusable())?,
        next_at: from_precise(next_at).ok_or_else(unusable)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_keys_sort_by_time_and_read_back() {
        let at: DateTime<Utc> = "2026-05-01T10:00:00.5Z".parse().unwrap();
        let scope = Scope::consumer("0b6d2c1e-3f4a-4b5c-8d6e-7f8091a2b3c4");
        let sk = due_sk(at, &scope, 42);
        assert_eq!(
            sk,
            "2026-05-01T10:00:00.500000000Z#0b6d2c1e-3f4a-4b5c-8d6e-7f8091a2b3c4#0000000000000042"
        );
        assert!(sk.as_str() <= due_until(at).as_str(), "due at now");
        let just_before = at - chrono::Duration::nanoseconds(1);
        assert!(sk.as_str() > due_until(just_before).as_str(), "not yet due");
        let item = Item::from([("due_sk".to_string(), s(sk))]);
        assert_eq!(
            due_from_item(&item).unwrap(),
            DueAlarm {
                scope,
                call_id: 42,
                next_at: at
            }
        );
    }

    #[test]
    fn audit_events_are_chunked_and_read_back_in_order() {
        let at: DateTime<Utc> = "2026-05-01T10:00:00.123Z".parse().unwrap();
        let events: Vec<AuditEvent> = (0..EVENTS_PER_AUDIT_ITEM + 1)
            .map(|i| AuditEvent {
                at,
                kind: "alert".into(),
                level: 1,
                staff: Some(StaffRef {
                    id: format!("id-{i}"),
                    name: format!("Name {i}"),
                }),
                detail: (i == 0).then(|| "first".to_string()),
            })
            .collect();
        let items = audit_items(&Scope::installation(), 7, 3, &events, None);
        assert_eq!(items.len(), 2);
        assert_eq!(get_s(&items[1], "sk").unwrap(), "audit#0000000003#001");
        let back: Vec<AuditEvent> = items
            .iter()
            .flat_map(|item| audit_from_item(item).unwrap())
            .collect();
        assert_eq!(back, events);
    }
}
