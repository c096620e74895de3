//! Rows to domain values and back: the columns each query selects, in the
//! order the readers take them, and times stored as RFC 3339 text.

use chrono::{DateTime, Utc};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row, params};

use nurse_call_core::{
    Call, CallType, CallTypeItem, Consumer, Display, Element, Raw,
    alarm::Alarm,
    credentials::{Stored, read_consumer, read_display},
    wire_time::from_stored,
};

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

/// An instant with its fraction of a second, fixed width (nanoseconds), so
/// that text order is time order: the times alarm routing keeps (`next_at`
/// of the due index, duties, audit lines) come from the clock, not from the
/// wire's whole seconds, and must read back exactly.
pub(crate) fn to_precise(instant: DateTime<Utc>) -> String {
    instant.format("%Y-%m-%dT%H:%M:%S%.9fZ").to_string()
}

/// Reads a time stored by [`to_precise`] (or by `to_stored`: whole seconds).
pub(crate) fn precise_at(row: &Row<'_>, index: usize) -> rusqlite::Result<DateTime<Utc>> {
    let text: String = row.get(index)?;
    DateTime::parse_from_rfc3339(&text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| {
            rusqlite::Error::FromSqlConversionFailure(
                index,
                rusqlite::types::Type::Text,
                format!("not an RFC 3339 instant: {text:?}").into(),
            )
        })
}

/// A list of texts as kept: JSON (read back by [`texts_at`]).
pub(crate) fn texts_json(texts: &[String]) -> String {
    serde_json::to_string(texts).expect("strings serialise")
}

/// A list of texts kept as JSON (a staff member's groups, a duty's
/// sections); a conversion failure names the column.
pub(crate) fn texts_at(row: &Row<'_>, index: usize) -> rusqlite::Result<Vec<String>> {
    let text: String = row.get(index)?;
    serde_json::from_str(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, e.into())
    })
}

/// The columns [`call_from_row`] reads; the last, `alarm`, is the call's
/// alarm as JSON (NULL for calls stored before alarms existed).
pub(crate) const CALL_COLUMNS: &str = "id, address, event, position, section, attribute, \
                                       element_code, element_name, opened_at, closed_at, \
                                       opened_by, closed_by, alarm";

/// The index of `alarm` in [`CALL_COLUMNS`].
pub(crate) const ALARM_COLUMN: usize = 12;

/// A call with its alarm. An alarm a hand edit left unreadable is logged
/// and left out, so the displays still get the call (an alarm read for the
/// engine, `alarms::kept_alarm`, refuses it instead).
pub(crate) fn call_from_row(row: &Row<'_>) -> rusqlite::Result<Call> {
    let alarm = match row.get::<_, Option<String>>(ALARM_COLUMN)? {
        None => None,
        Some(json) => match Alarm::from_json(&json) {
            Ok(alarm) => Some(alarm),
            Err(problem) => {
                let id: i64 = row.get(0)?;
                tracing::error!(call = id, %problem, "unreadable alarm left out of the call");
                None
            }
        },
    };
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
        alarm,
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

/// The columns [`display_from_row`] reads.
pub(crate) const DISPLAY_COLUMNS: &str =
    "id, name, sections, scope, token_hash, created_at, revoked";

/// A display row as stored: usable, or malformed by a hand edit
/// ([`nurse_call_core::credentials`]). The display's id is the
/// column `id` (`display_id` in DynamoDB, whose `id` is the key).
pub(crate) fn display_from_row(row: &Row<'_>) -> rusqlite::Result<Stored<Display>> {
    let mut fields = Fields::new(row);
    let display = read_display(|field| match field {
        "display_id" => fields.get("id"),
        "sections" => fields.json_list("sections"),
        "revoked" => fields.boolean("revoked"),
        other => fields.get(other),
    });
    fields.finish(display)
}

/// The columns [`consumer_from_row`] reads.
pub(crate) const CONSUMER_COLUMNS: &str =
    "id, name, secrets, allow_sha1, created_at, expires_at, require_signed_time, heartbeat_seconds";

/// A consumer row as stored: usable, or malformed by a hand edit
/// ([`nurse_call_core::credentials`]).
pub(crate) fn consumer_from_row(row: &Row<'_>) -> rusqlite::Result<Stored<Consumer>> {
    let mut fields = Fields::new(row);
    let consumer = read_consumer(|field| match field {
        "secrets" => fields.json_list("secrets"),
        "allow_sha1" | "require_signed_time" => fields.boolean(field),
        other => fields.get(other),
    });
    fields.finish(consumer)
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
                notification_sound, escalation, accept_timeout)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
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
            t.notification_sound,
            t.escalation.to_json(),
            t.accept_timeout
        ],
    )?;
    Ok(())
}

/// The columns [`call_type_from_row`] reads: every field of an item.
pub(crate) const CALL_TYPE_COLUMNS: &str = "id, name, internal_name, urgency, priority, type, \
                                            color, notify, notification_interval, \
                                            notification_maxloops, notification_sound, \
                                            escalation, accept_timeout";

/// A call-type row field by field; core reads it with the fallbacks of
/// DECISIONS §7 ([`nurse_call_core`]). Each column
/// is taken as it is (`get_ref`), not converted: with the sqlite3 tool an
/// admin can put the text `high` into the INTEGER column `priority`, and
/// that is a fallback, not an error for every request.
pub(crate) fn call_type_from_row(row: &Row<'_>) -> rusqlite::Result<CallTypeItem> {
    let mut fields = Fields::new(row);
    let item = CallTypeItem::from_fields(|field| match field {
        "notify" => fields.boolean(field),
        other => fields.get(other),
    });
    fields.finish(item)
}

/// The columns of one row as [`Raw`] values; the first error (a column the
/// query did not select: a bug, not a hand edit) is kept for [`Fields::finish`].
struct Fields<'r, 's> {
    row: &'r Row<'s>,
    error: Option<rusqlite::Error>,
}

impl<'r, 's> Fields<'r, 's> {
    fn new(row: &'r Row<'s>) -> Self {
        Fields { row, error: None }
    }

    fn finish<T>(self, value: T) -> rusqlite::Result<T> {
        match self.error {
            Some(error) => Err(error),
            None => Ok(value),
        }
    }

    /// The column as it is.
    fn get(&mut self, column: &str) -> Raw {
        match self.row.get_ref(column) {
            Ok(value) => raw(value),
            Err(error) => {
                self.error.get_or_insert(error);
                Raw::Missing
            }
        }
    }

    /// A boolean column: SQLite keeps `false` and `true` as 0 and 1;
    /// anything else stays as it is, for core to judge.
    fn boolean(&mut self, column: &str) -> Raw {
        match self.get(column) {
            Raw::Number(n) if n == "0" => Raw::Bool(false),
            Raw::Number(n) if n == "1" => Raw::Bool(true),
            other => other,
        }
    }

    /// A list kept as JSON text (secrets, sections).
    fn json_list(&mut self, column: &str) -> Raw {
        match self.get(column) {
            Raw::Text(text) => match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(value) => from_json(value),
                // Never the text itself: it may be a secret.
                Err(_) => Raw::Other("text that is not JSON"),
            },
            other => other,
        }
    }
}

pub(crate) fn raw(value: ValueRef<'_>) -> Raw {
    match value {
        ValueRef::Null => Raw::Missing,
        ValueRef::Integer(n) => Raw::Number(n.to_string()),
        ValueRef::Real(x) => Raw::Number(x.to_string()),
        ValueRef::Text(bytes) => match std::str::from_utf8(bytes) {
            Ok(text) => Raw::Text(text.to_string()),
            Err(_) => Raw::Other("text that is not UTF-8"),
        },
        ValueRef::Blob(_) => Raw::Other("binary"),
    }
}

fn from_json(value: serde_json::Value) -> Raw {
    use serde_json::Value;
    match value {
        Value::Null => Raw::Other("null"),
        Value::Bool(b) => Raw::Bool(b),
        Value::Number(n) => Raw::Number(n.to_string()),
        Value::String(text) => Raw::Text(text),
        Value::Array(items) => Raw::List(items.into_iter().map(from_json).collect()),
        Value::Object(_) => Raw::Other("a map"),
    }
}
