//! One address's element and open calls: the reads and writes every
//! request shares (the open, the close, the element updates, the admin's
//! registration), each on the connection of the job it runs in.

use rusqlite::{Connection, OptionalExtension, params};

use nurse_call_core::{
    AddressSnapshot, Call, Element, ElementChange, ElementPolicy, wire_time::to_stored,
};

use crate::rows::{CALL_COLUMNS, ELEMENT_COLUMNS, call_from_row, element_from_row};

pub(crate) fn read_element(
    tx: &Connection,
    scope: &str,
    address: &str,
) -> rusqlite::Result<Option<Element>> {
    tx.prepare_cached(&format!(
        "SELECT {ELEMENT_COLUMNS} FROM elements WHERE scope = ?1 AND address = ?2"
    ))?
    .query_row(params![scope, address], element_from_row)
    .optional()
}

/// The element and open calls of an address (one read's part).
pub(crate) fn read_snapshot(
    c: &Connection,
    scope: &str,
    address: &str,
) -> rusqlite::Result<AddressSnapshot> {
    let element = read_element(c, scope, address)?;
    let open_calls = c
        .prepare_cached(&format!(
            "SELECT {CALL_COLUMNS} FROM calls
             WHERE scope = ?1 AND address = ?2 AND closed_at IS NULL
             ORDER BY opened_at, id"
        ))?
        .query_map(params![scope, address], call_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(AddressSnapshot {
        element,
        open_calls,
    })
}

/// Writes `element` as its next version (every write is a change a display
/// may be told about; the transaction read it, so the count cannot skip).
pub(crate) fn write_element(
    tx: &Connection,
    scope: &str,
    element: &mut Element,
) -> rusqlite::Result<()> {
    element.version += 1;
    tx.prepare_cached(
        "INSERT INTO elements
           (scope, address, code, name, battery, position, reachable, updated_at, version)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT (scope, address) DO UPDATE SET
           code = excluded.code, name = excluded.name, battery = excluded.battery,
           position = excluded.position, reachable = excluded.reachable,
           updated_at = excluded.updated_at, version = excluded.version",
    )?
    .execute(params![
        scope,
        element.address,
        element.code,
        element.name,
        element.battery,
        element.position,
        element.reachable,
        to_stored(element.updated_at),
        element.version
    ])?;
    Ok(())
}

/// Applies `change` to the element of its address inside `tx`. Returns `false`
/// (writing nothing) when the element is unknown and must exist.
pub(crate) fn apply_change(
    tx: &Connection,
    scope: &str,
    change: &ElementChange,
    policy: ElementPolicy,
) -> rusqlite::Result<Option<Element>> {
    let mut element = match (read_element(tx, scope, &change.address)?, policy) {
        (Some(mut element), _) => {
            if change.is_empty() {
                return Ok(Some(element));
            }
            element.apply(change);
            element
        }
        (None, ElementPolicy::MustExist) => return Ok(None),
        (None, ElementPolicy::CreateMissing) => {
            let mut element = Element::unregistered(&change.address, change.at);
            element.apply(change);
            element
        }
    };
    write_element(tx, scope, &mut element)?;
    Ok(Some(element))
}

pub(crate) fn open_call_with_event(
    tx: &Connection,
    scope: &str,
    address: &str,
    event: &str,
) -> rusqlite::Result<Option<Call>> {
    tx.prepare_cached(&format!(
        "SELECT {CALL_COLUMNS} FROM calls
         WHERE scope = ?1 AND address = ?2 AND event = ?3 AND closed_at IS NULL"
    ))?
    .query_row(params![scope, address, event], call_from_row)
    .optional()
}
