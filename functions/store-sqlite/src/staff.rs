//! Staff and their duties (DECISIONS §14) in SQLite: the `staff` and
//! `duties` tables, one statement or one job each (`alarms` maps the
//! `AlarmStore` trait onto these).

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use nurse_call_core::{
    RosterRead, Scope,
    alarm::{Duty, Staff},
};

use crate::rows::{precise_at, texts_at, texts_json as json, to_precise};

const STAFF_COLUMNS: &str = "id, scope, name, groups, device, token_hash, created_at, revoked";

fn staff_from_row(row: &Row<'_>) -> rusqlite::Result<Staff> {
    Ok(Staff {
        id: row.get(0)?,
        scope: Scope::from_key(&row.get::<_, String>(1)?),
        name: row.get(2)?,
        groups: texts_at(row, 3)?,
        device: row.get(4)?,
        token_hash: row.get(5)?,
        created_at: precise_at(row, 6)?,
        revoked: row.get(7)?,
    })
}

const DUTY_COLUMNS: &str = "staff_id, scope, sections, since, until";

fn duty_from_row(row: &Row<'_>) -> rusqlite::Result<Duty> {
    Ok(Duty {
        staff_id: row.get(0)?,
        scope: Scope::from_key(&row.get::<_, String>(1)?),
        sections: texts_at(row, 2)?,
        since: precise_at(row, 3)?,
        until: precise_at(row, 4)?,
    })
}

pub(crate) fn create(c: &Connection, staff: &Staff) -> rusqlite::Result<()> {
    c.execute(
        &format!("INSERT INTO staff ({STAFF_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
        params![
            staff.id,
            staff.scope.as_str(),
            staff.name,
            json(&staff.groups),
            staff.device,
            staff.token_hash,
            to_precise(staff.created_at),
            staff.revoked
        ],
    )?;
    Ok(())
}

/// [`create`] unless the member's scope has `limit` staff already (in the
/// caller's transaction: counted and written at once); `false`: full.
pub(crate) fn create_within(c: &Connection, staff: &Staff, limit: usize) -> rusqlite::Result<bool> {
    let count: i64 = c
        .prepare_cached("SELECT COUNT(*) FROM staff WHERE scope = ?1")?
        .query_row(params![staff.scope.as_str()], |row| row.get(0))?;
    if usize::try_from(count).unwrap_or(usize::MAX) >= limit {
        return Ok(false);
    }
    create(c, staff)?;
    Ok(true)
}

/// The staff member whose `column` (`id` or `token_hash`, both unique) is `value`.
pub(crate) fn one_by(c: &Connection, column: &str, value: &str) -> rusqlite::Result<Option<Staff>> {
    c.prepare_cached(&format!(
        "SELECT {STAFF_COLUMNS} FROM staff WHERE {column} = ?1"
    ))?
    .query_row(params![value], staff_from_row)
    .optional()
}

pub(crate) fn of_scope(c: &Connection, scope: &str) -> rusqlite::Result<Vec<Staff>> {
    c.prepare_cached(&format!(
        "SELECT {STAFF_COLUMNS} FROM staff WHERE scope = ?1 ORDER BY name, id"
    ))?
    .query_map(params![scope], staff_from_row)?
    .collect()
}

/// `scope`'s roster (`AlarmStore::roster`): its staff, their duties not
/// ended by `now`, and who has a channel. A push subscription is the only
/// channel this store knows of: the local server's open pages are its live
/// hub's.
pub(crate) fn roster(
    c: &Connection,
    scope: &str,
    now: DateTime<Utc>,
) -> rusqlite::Result<RosterRead> {
    let staff = of_scope(c, scope)?;
    if staff.is_empty() {
        return Ok(RosterRead::default());
    }
    Ok(RosterRead {
        duties: duties(c, scope, now)?,
        with_channel: with_channel(c, scope)?,
        staff,
    })
}

/// The staff (ids) of `scope` with at least one push subscription: a
/// channel (§18).
fn with_channel(c: &Connection, scope: &str) -> rusqlite::Result<Vec<String>> {
    c.prepare_cached(
        "SELECT DISTINCT staff_id FROM push_subscriptions WHERE scope = ?1 ORDER BY staff_id",
    )?
    .query_map(params![scope], |row| row.get(0))?
    .collect()
}

/// Rotates a member's token and forgets their phones' push subscriptions
/// in the same transaction (DECISIONS §20: the lost phone hears nothing
/// more; the new phone registers itself).
pub(crate) fn replace_token(c: &Connection, id: &str, token_hash: &str) -> rusqlite::Result<bool> {
    let replaced = c.execute(
        "UPDATE staff SET token_hash = ?2 WHERE id = ?1",
        params![id, token_hash],
    )? > 0;
    if replaced {
        c.execute(
            "DELETE FROM push_subscriptions WHERE staff_id = ?1",
            params![id],
        )?;
    }
    Ok(replaced)
}

/// Revokes a member, ends their duty and forgets their phones' push
/// subscriptions (one job: all or nothing).
pub(crate) fn revoke(c: &Connection, id: &str) -> rusqlite::Result<bool> {
    let revoked = c.execute("UPDATE staff SET revoked = 1 WHERE id = ?1", params![id])? > 0;
    c.execute("DELETE FROM duties WHERE staff_id = ?1", params![id])?;
    c.execute(
        "DELETE FROM push_subscriptions WHERE staff_id = ?1",
        params![id],
    )?;
    Ok(revoked)
}

/// Deletes a member, their duty and their push subscriptions (one job).
pub(crate) fn erase(c: &Connection, id: &str) -> rusqlite::Result<bool> {
    c.execute("DELETE FROM duties WHERE staff_id = ?1", params![id])?;
    c.execute(
        "DELETE FROM push_subscriptions WHERE staff_id = ?1",
        params![id],
    )?;
    Ok(c.execute("DELETE FROM staff WHERE id = ?1", params![id])? > 0)
}

/// Deletes the staff and duties of the scopes `scopes` selects (`?1` bound
/// by the caller's `parameter`): a visitor's people go with the visitor.
pub(crate) fn erase_scopes(c: &Connection, scopes: &str, parameter: &str) -> rusqlite::Result<()> {
    c.execute(
        &format!("DELETE FROM duties WHERE scope IN ({scopes})"),
        params![parameter],
    )?;
    c.execute(
        &format!("DELETE FROM push_subscriptions WHERE scope IN ({scopes})"),
        params![parameter],
    )?;
    c.execute(
        &format!("DELETE FROM staff WHERE scope IN ({scopes})"),
        params![parameter],
    )?;
    Ok(())
}

/// Replaces the member's duty (a person has at most one).
pub(crate) fn put_duty(c: &Connection, duty: &Duty) -> rusqlite::Result<()> {
    c.prepare_cached(&format!(
        "INSERT INTO duties ({DUTY_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (staff_id) DO UPDATE SET
           scope = excluded.scope, sections = excluded.sections,
           since = excluded.since, until = excluded.until"
    ))?
    .execute(params![
        duty.staff_id,
        duty.scope.as_str(),
        json(&duty.sections),
        to_precise(duty.since),
        to_precise(duty.until)
    ])?;
    Ok(())
}

pub(crate) fn end_duty(c: &Connection, scope: &str, staff_id: &str) -> rusqlite::Result<bool> {
    Ok(c.execute(
        "DELETE FROM duties WHERE scope = ?1 AND staff_id = ?2",
        params![scope, staff_id],
    )? > 0)
}

/// The scope's duties not ended by `now`. Expired rows stay until the
/// member signs on or off again (a few per person at most); never returned.
pub(crate) fn duties(
    c: &Connection,
    scope: &str,
    now: DateTime<Utc>,
) -> rusqlite::Result<Vec<Duty>> {
    c.prepare_cached(&format!(
        "SELECT {DUTY_COLUMNS} FROM duties WHERE scope = ?1 AND until > ?2 ORDER BY staff_id"
    ))?
    .query_map(params![scope, to_precise(now)], duty_from_row)?
    .collect()
}
