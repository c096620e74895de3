//! Alarm routing's records ([`AlarmStore`], DECISIONS §14) on the embedded
//! store: staff and duties (`staff`), each call's alarm in its columns of
//! `calls` (`alarm`, `alarm_version`, `alarm_next_at`, schema version 6),
//! the due index on `alarm_next_at`, and the `alarm_audit` table.
//!
//! `write_alarm` is one conditional `UPDATE` on the version read and the
//! audit's inserts, in one job: the store thread runs jobs one after the
//! other (and takes the file's write lock first), so of two writes at the
//! same version the second finds the version moved and writes nothing.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use nurse_call_core::{
    AddressSnapshot, AlarmStore, AlarmWrite, Call, DueAlarm, KeptAlarm, RosterRead, Scope,
    StoreError,
    alarm::{Alarm, AuditEvent, Duty, Staff, StaffRef, quiet_end},
    clock,
    webhooks::outbox,
};

use crate::rows::{ALARM_COLUMN, CALL_COLUMNS, call_from_row, precise_at, to_precise};
use crate::{SqliteStore, outbox_write, staff};

/// The call `call_id` of `scope` with its alarm and version; `None` when
/// there is no such call or it has no alarm (closed before alarms existed).
/// An alarm a hand edit broke is an error: the engine must not step from
/// nothing and overwrite it.
fn kept_alarm(c: &Connection, scope: &Scope, call_id: i64) -> rusqlite::Result<Option<KeptAlarm>> {
    let version_column = ALARM_COLUMN + 1;
    let row = c
        .prepare_cached(&format!(
            "SELECT {CALL_COLUMNS}, alarm_version FROM calls WHERE id = ?1 AND scope = ?2"
        ))?
        .query_row(params![call_id, scope.as_str()], |row| {
            let text: Option<String> = row.get(ALARM_COLUMN)?;
            let version: Option<i64> = row.get(version_column)?;
            Ok((call_from_row(row)?, text, version))
        })
        .optional()?;
    let Some((call, Some(text), Some(version))) = row else {
        return Ok(None);
    };
    let alarm = Alarm::from_json(&text).map_err(|problem| {
        rusqlite::Error::FromSqlConversionFailure(
            ALARM_COLUMN,
            rusqlite::types::Type::Text,
            format!("the alarm of call {call_id} is unreadable: {problem}").into(),
        )
    })?;
    Ok(Some(KeptAlarm {
        scope: scope.clone(),
        call,
        alarm,
        version,
    }))
}

/// Writes `alarm` if the version is still `kept.version`, and appends the
/// audit lines; `Conflict` (nothing written) otherwise.
fn write(
    c: &Connection,
    kept: &KeptAlarm,
    alarm: &Alarm,
    audit: &[AuditEvent],
) -> rusqlite::Result<AlarmWrite> {
    let written = c
        .prepare_cached(
            "UPDATE calls SET alarm = ?1, alarm_version = alarm_version + 1, alarm_next_at = ?2
             WHERE id = ?3 AND scope = ?4 AND alarm_version = ?5",
        )?
        .execute(params![
            alarm.to_json(),
            alarm.next_at.map(to_precise),
            kept.call.id,
            kept.scope.as_str(),
            kept.version
        ])?;
    if written == 0 {
        return Ok(AlarmWrite::Conflict);
    }
    let call = Call {
        alarm: Some(alarm.clone()),
        ..kept.call.clone()
    };
    append_audit(c, &kept.scope, &call, audit)?;
    Ok(AlarmWrite::Written)
}

/// Appends `audit` to the audit of `call` (carrying the alarm as just
/// written), and keeps the webhook events of those lines in the outbox:
/// the same transaction, so a committed write has its events and a
/// failed one none (DECISIONS §16 "Durable").
pub(crate) fn append_audit(
    c: &Connection,
    scope: &Scope,
    call: &Call,
    audit: &[AuditEvent],
) -> rusqlite::Result<()> {
    let call_id = call.id;
    let mut insert = c.prepare_cached(
        "INSERT INTO alarm_audit (call_id, at, kind, level, staff_id, staff_name, detail)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for line in audit {
        insert.execute(params![
            call_id,
            to_precise(line.at),
            line.kind,
            line.level as i64,
            line.staff.as_ref().map(|s| s.id.as_str()),
            line.staff.as_ref().map(|s| s.name.as_str()),
            line.detail
        ])?;
    }
    outbox_write::keep(
        c,
        &outbox::events_of_write(scope, call, audit, clock::new_event_id),
    )
}

/// Ends the alarm of `closed` (just closed by this job) in the same job
/// where [`quiet_end`] gives its end: nobody's alert rings, so a look after
/// the close would only write this. The end is dated the call's close (its
/// audit line too). The call then carries the ended alarm.
pub(crate) fn end_quietly(
    c: &Connection,
    scope: &Scope,
    closed: &mut Call,
) -> rusqlite::Result<()> {
    let Some(now) = closed.closed_at else {
        return Ok(());
    };
    let Some(end) = closed
        .alarm
        .as_ref()
        .and_then(|alarm| quiet_end(alarm, closed, now))
    else {
        return Ok(());
    };
    c.prepare_cached(
        "UPDATE calls SET alarm = ?1, alarm_version = alarm_version + 1, alarm_next_at = NULL
         WHERE id = ?2",
    )?
    .execute(params![end.alarm.to_json(), closed.id])?;
    closed.alarm = Some(end.alarm);
    append_audit(c, scope, closed, &AuditEvent::all(&end.effects, now))
}

/// The due alarms: `IS NOT NULL` lets SQLite use the partial index
/// `calls_alarms_due`, which also gives the order.
const DUE_QUERY: &str = "SELECT scope, id, alarm_next_at FROM calls
                         WHERE alarm_next_at IS NOT NULL AND alarm_next_at <= ?1
                         ORDER BY alarm_next_at, id LIMIT ?2";

fn due(c: &Connection, now: DateTime<Utc>, limit: usize) -> rusqlite::Result<Vec<DueAlarm>> {
    c.prepare_cached(DUE_QUERY)?
        .query_map(
            params![to_precise(now), i64::try_from(limit).unwrap_or(i64::MAX)],
            |row| {
                Ok(DueAlarm {
                    scope: Scope::from_key(&row.get::<_, String>(0)?),
                    call_id: row.get(1)?,
                    next_at: precise_at(row, 2)?,
                })
            },
        )?
        .collect()
}

fn audit_of(c: &Connection, scope: &Scope, call_id: i64) -> rusqlite::Result<Vec<AuditEvent>> {
    c.prepare_cached(
        "SELECT a.at, a.kind, a.level, a.staff_id, a.staff_name, a.detail
         FROM alarm_audit a JOIN calls c ON c.id = a.call_id
         WHERE a.call_id = ?1 AND c.scope = ?2
         ORDER BY a.id",
    )?
    .query_map(params![call_id, scope.as_str()], |row| {
        let staff_id: Option<String> = row.get(3)?;
        let staff_name: Option<String> = row.get(4)?;
        Ok(AuditEvent {
            at: precise_at(row, 0)?,
            kind: row.get(1)?,
            level: usize::try_from(row.get::<_, i64>(2)?).unwrap_or(0),
            staff: staff_id.map(|id| StaffRef {
                id,
                name: staff_name.unwrap_or_default(),
            }),
            detail: row.get(5)?,
        })
    })?
    .collect()
}

#[async_trait]
impl AlarmStore for SqliteStore {
    async fn create_staff(&self, staff: &Staff) -> Result<(), StoreError> {
        let staff = staff.clone();
        self.with(move |c| staff::create(c, &staff)).await
    }

    async fn create_staff_within(&self, staff: &Staff, limit: usize) -> Result<bool, StoreError> {
        let staff = staff.clone();
        self.with(move |c| staff::create_within(c, &staff, limit))
            .await
    }

    async fn staff_by_token_hash(&self, token_hash: &str) -> Result<Option<Staff>, StoreError> {
        let token_hash = token_hash.to_string();
        self.read(move |c| staff::one_by(c, "token_hash", &token_hash))
            .await
    }

    async fn staff_member(&self, id: &str) -> Result<Option<Staff>, StoreError> {
        let id = id.to_string();
        self.read(move |c| staff::one_by(c, "id", &id)).await
    }

    async fn staff_of(&self, scope: &Scope) -> Result<Vec<Staff>, StoreError> {
        let scope = scope.as_str().to_string();
        self.read(move |c| staff::of_scope(c, &scope)).await
    }

    async fn replace_staff_token(&self, id: &str, token_hash: &str) -> Result<bool, StoreError> {
        let (id, token_hash) = (id.to_string(), token_hash.to_string());
        self.with(move |c| staff::replace_token(c, &id, &token_hash))
            .await
    }

    async fn revoke_staff(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.with(move |c| staff::revoke(c, &id)).await
    }

    async fn erase_staff(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.with(move |c| staff::erase(c, &id)).await
    }

    async fn put_duty(&self, duty: &Duty) -> Result<(), StoreError> {
        let duty = duty.clone();
        self.with(move |c| staff::put_duty(c, &duty)).await
    }

    async fn end_duty(&self, scope: &Scope, staff_id: &str) -> Result<bool, StoreError> {
        let (scope, staff_id) = (scope.as_str().to_string(), staff_id.to_string());
        self.with(move |c| staff::end_duty(c, &scope, &staff_id))
            .await
    }

    async fn duties(&self, scope: &Scope, now: DateTime<Utc>) -> Result<Vec<Duty>, StoreError> {
        let scope = scope.as_str().to_string();
        self.read(move |c| staff::duties(c, &scope, now)).await
    }

    /// One read: an open's snapshot and roster cost no more round trips
    /// to the reader's thread than the snapshot alone.
    async fn snapshot_and_roster(
        &self,
        scope: &Scope,
        address: &str,
        now: DateTime<Utc>,
    ) -> Result<(AddressSnapshot, Option<RosterRead>), StoreError> {
        let (scope, address) = (scope.as_str().to_string(), address.to_string());
        self.read(move |c| {
            let snapshot = crate::address::read_snapshot(c, &scope, &address)?;
            Ok((snapshot, Some(staff::roster(c, &scope, now)?)))
        })
        .await
    }

    /// One read of the staff, their duties and their channels.
    async fn roster(&self, scope: &Scope, now: DateTime<Utc>) -> Result<RosterRead, StoreError> {
        let scope = scope.as_str().to_string();
        self.read(move |c| staff::roster(c, &scope, now)).await
    }

    async fn alarm(&self, scope: &Scope, call_id: i64) -> Result<Option<KeptAlarm>, StoreError> {
        let scope = scope.clone();
        self.read(move |c| kept_alarm(c, &scope, call_id)).await
    }

    async fn write_alarm(
        &self,
        kept: &KeptAlarm,
        alarm: &Alarm,
        audit: &[AuditEvent],
    ) -> Result<AlarmWrite, StoreError> {
        let (kept, alarm, audit) = (kept.clone(), alarm.clone(), audit.to_vec());
        self.with(move |c| write(c, &kept, &alarm, &audit)).await
    }

    async fn due_alarms(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<DueAlarm>, StoreError> {
        self.read(move |c| due(c, now, limit)).await
    }

    async fn alarm_audit(
        &self,
        scope: &Scope,
        call_id: i64,
    ) -> Result<Vec<AuditEvent>, StoreError> {
        let scope = scope.clone();
        self.read(move |c| audit_of(c, &scope, call_id)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The timers ask for due alarms every second: the query reads the
    /// partial index, never the whole history of calls.
    #[test]
    fn the_due_query_reads_the_due_index() {
        let dir = tempfile::tempdir().unwrap();
        let connection = Connection::open(dir.path().join("s.sqlite3")).unwrap();
        crate::schema::prepare(&connection).unwrap();
        let plan: Vec<String> = connection
            .prepare(&format!("EXPLAIN QUERY PLAN {DUE_QUERY}"))
            .unwrap()
            .query_map(params!["2026-01-01T00:00:00.000000000Z", 10], |row| {
                row.get::<_, String>(3)
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(
            plan.iter().any(|step| step.contains("calls_alarms_due")),
            "{plan:?}"
        );
        assert!(
            !plan.iter().any(|step| step.contains("TEMP B-TREE")),
            "ordered by the index, not sorted: {plan:?}"
        );
    }
}
