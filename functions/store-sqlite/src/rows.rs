//! Rows to domain values and back: the columns each query selects, in the
//! order the readers take them, and times stored as RFC 3339 text.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, Row, params};

use nurse_call_core::domain::model::{Call, CallType, Consumer, Display, Element, Scope};
use nurse_call_core::domain::wire_time::from_stored;

pub(crate) fn time_at(row: &Row<'_>, index: usize) -> rusqlite::Result<DateTime<Utc>> {
    let text: String = row.get(index)?;
    from_stored(&text).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            index,
            rusqlite::types::Type::Text,
            format!("not an RFC 3339 instant: {text:?}").into(),
        )
    })
}

pub(crate) fn optional_time_at(
    row: &Row<'_>,
    index: usize,
) -> rusqlite::Result<Option<DateTime<Utc>>> {
    let text: Option<String> = row.get(index)?;
    match text {
        None => Ok(None),
        Some(_) => time_at(row, index).map(Some),
    }
}

pub(crate) const CALL_COLUMNS: &str = "id, address, event, position, section, attribute, \
                                       element_code, element_name, opened_at, closed_at, \
                                       opened_by, closed_by";

pub(crate) fn call_from_row(row: &Row<'_>) -> rusqlite::Result<Call> {
    Ok(Call {
        id: row.get(0)?,
        address: row.get(1)?,
        event: row.get(2)?,
        position: row.get(3)?,
        section: row.get(4)?,
        attribute: row.get(5)?,
        element_code: row.get(6)?,
        element_name: row.get(7)?,
        opened_at: time_at(row, 8)?,
        closed_at: optional_time_at(row, 9)?,
        opened_by: row.get(10)?,
        closed_by: row.get(11)?,
    })
}

pub(crate) const ELEMENT_COLUMNS: &str =
    "address, code, name, battery, position, reachable, updated_at, version";

pub(crate) fn element_from_row(row: &Row<'_>) -> rusqlite::Result<Element> {
    Ok(Element {
        address: row.get(0)?,
        code: row.get(1)?,
        name: row.get(2)?,
        battery: row.get(3)?,
        position: row.get(4)?,
        reachable: row.get(5)?,
        updated_at: time_at(row, 6)?,
        version: row.get(7)?,
    })
}

/// The columns [`display_from_row`] reads, in its order.
pub(crate) const DISPLAY_COLUMNS: &str =
    "id, name, sections, scope, token_hash, created_at, revoked";

pub(crate) fn display_from_row(row: &Row<'_>) -> rusqlite::Result<Display> {
    let sections: String = row.get(2)?;
    Ok(Display {
        id: row.get(0)?,
        name: row.get(1)?,
        sections: serde_json::from_str(&sections).map_err(|error| {
            rusqlite::Error::FromSqlConversionFailure(2, rusqlite::types::Type::Text, error.into())
        })?,
        scope: Scope::from_key(&row.get::<_, String>(3)?),
        token_hash: row.get(4)?,
        created_at: time_at(row, 5)?,
        revoked: row.get(6)?,
    })
}

/// The columns [`consumer_from_row`] reads, in its order.
pub(crate) const CONSUMER_COLUMNS: &str =
    "id, name, secrets, allow_sha1, created_at, expires_at, require_signed_time";

pub(crate) fn consumer_from_row(row: &Row<'_>) -> rusqlite::Result<Consumer> {
    let secrets: String = row.get(2)?;
    Ok(Consumer {
        id: row.get(0)?,
        name: row.get(1)?,
        secrets: serde_json::from_str(&secrets).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(2, rusqlite::types::Type::Text, e.into())
        })?,
        allow_sha1: row.get(3)?,
        created_at: time_at(row, 4)?,
        expires_at: optional_time_at(row, 5)?,
        require_signed_time: row.get(6)?,
    })
}

/// Inserts a call type; `on_conflict` says what happens when its name exists.
pub(crate) fn insert_call_type(
    connection: &Connection,
    t: &CallType,
    on_conflict: &str,
) -> rusqlite::Result<()> {
    connection.execute(
        &format!(
            "INSERT INTO call_types (id, name, internal_name, urgency, priority, type,
                color, notify, notification_interval, notification_maxloops,
                notification_sound)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
             {on_conflict}"
        ),
        params![
            t.id,
            t.name,
            t.internal_name,
            t.urgency,
            t.priority,
            t.kind,
            t.color,
            t.notify,
            t.notification_interval,
            t.notification_maxloops,
            t.notification_sound
        ],
    )?;
    Ok(())
}

pub(crate) fn call_type_from_row(row: &Row<'_>) -> rusqlite::Result<CallType> {
    Ok(CallType {
        id: row.get(0)?,
        name: row.get(1)?,
        internal_name: row.get(2)?,
        urgency: row.get(3)?,
        priority: row.get(4)?,
        kind: row.get(5)?,
        color: row.get(6)?,
        notify: row.get(7)?,
        notification_interval: row.get(8)?,
        notification_maxloops: row.get(9)?,
        notification_sound: row.get(10)?,
    })
}
