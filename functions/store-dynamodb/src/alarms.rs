//! Alarm routing on DynamoDB ([`AlarmStore`], DECISIONS §14;
//! docs/data-model.md "Alarms"): a call's alarm lives on its record
//! (`call#<id>`), with its version for the conditional write and, while it
//! has a `next_at`, the keys of the sparse due index `by_due`; the lock and
//! the open-call index entry of an open call carry a copy, so that every
//! read of calls (the displays' one `Query` among them) has it. Staff and
//! duties are in `staff`; each write's webhook events go into its own
//! transaction (`webhooks`, the outbox).
//!
//! Round trips: `alarm` 1 (`GetItem`), `write_alarm` 1 (`TransactWriteItems`),
//! `due_alarms` 1 (`Query` of `by_due`, per 1 MB page), `alarm_audit` 1
//! (`Query`, per 1 MB page).

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{Put, TransactWriteItem, Update};
use chrono::{DateTime, Utc};

use nurse_call_core::{
    AlarmStore, AlarmWrite, Call, DueAlarm, KeptAlarm, RosterRead, Scope, StoreError,
    alarm::{Alarm, AuditEvent, Duty, Staff},
    clock,
    webhooks::{outbox, outbox::OutboxEvent},
};

use crate::DynamoStore;
use crate::alarm_items::{
    AUDIT_PREFIX, DUE_PK, audit_from_item, audit_items, due_from_item, due_sk, due_until,
};
use crate::error::{build_error, classify};
use crate::item::{
    ALARM, ALARM_CHANGES, CALL_SK, Item, address_pk, alarm_from_item, call_from_item, call_pk,
    get_n, get_s, id_key, n, open_index_pk, open_sk, required, s,
};
use crate::tables::BY_DUE_INDEX;
use crate::transaction::{CONDITIONAL_CHECK_FAILED, TRANSACTION_ATTEMPTS, Transaction, backoff};

/// The alarm's version on the call record: 0 when the open stored it, one
/// more with every write (the condition of the next).
pub(crate) const ALARM_VERSION: &str = "alarm_version";

/// Most items of one `TransactWriteItems`.
const TRANSACTION_LIMIT: usize = 100;

/// The due index keys of a call whose alarm is due at `next_at` (none when
/// it is not due at all).
pub(crate) fn due_keys(scope: &Scope, call_id: i64, next_at: Option<DateTime<Utc>>) -> Item {
    next_at
        .map(|next_at| {
            Item::from([
                ("due_pk".to_string(), s(DUE_PK)),
                ("due_sk".to_string(), s(due_sk(next_at, scope, call_id))),
            ])
        })
        .unwrap_or_default()
}

#[async_trait]
impl AlarmStore for DynamoStore {
    async fn create_staff(&self, staff: &Staff) -> Result<(), StoreError> {
        self.put_staff(staff).await
    }

    async fn create_staff_within(&self, staff: &Staff, limit: usize) -> Result<bool, StoreError> {
        self.put_staff_within(staff, limit).await
    }

    async fn staff_by_token_hash(&self, token_hash: &str) -> Result<Option<Staff>, StoreError> {
        self.staff_credential(token_hash).await
    }

    async fn staff_member(&self, id: &str) -> Result<Option<Staff>, StoreError> {
        self.find_staff(id).await
    }

    async fn staff_of(&self, scope: &Scope) -> Result<Vec<Staff>, StoreError> {
        self.roster(scope).await
    }

    /// The staff and their channels in one `Query` ([`crate::channels`]),
    /// then the duties when there is anybody.
    async fn roster(&self, scope: &Scope, now: DateTime<Utc>) -> Result<RosterRead, StoreError> {
        let (staff, with_channel) = self.roster_and_channels(scope, now).await?;
        if staff.is_empty() {
            return Ok(RosterRead::default());
        }
        Ok(RosterRead {
            duties: self.duties_at(scope, now).await?,
            staff,
            with_channel,
        })
    }

    async fn replace_staff_token(&self, id: &str, token_hash: &str) -> Result<bool, StoreError> {
        self.rotate_staff(id, token_hash).await
    }

    async fn revoke_staff(&self, id: &str) -> Result<bool, StoreError> {
        let revoked = self.remove_staff(id, false).await?;
        self.forget_push_subscriptions(id).await?;
        Ok(revoked)
    }

    async fn erase_staff(&self, id: &str) -> Result<bool, StoreError> {
        let erased = self.remove_staff(id, true).await?;
        self.forget_push_subscriptions(id).await?;
        Ok(erased)
    }

    async fn put_duty(&self, duty: &Duty) -> Result<(), StoreError> {
        self.sign_on(duty).await
    }

    async fn end_duty(&self, scope: &Scope, staff_id: &str) -> Result<bool, StoreError> {
        self.sign_off(scope, staff_id).await
    }

    async fn duties(&self, scope: &Scope, now: DateTime<Utc>) -> Result<Vec<Duty>, StoreError> {
        self.duties_at(scope, now).await
    }

    /// One consistent `GetItem` of the call record.
    async fn alarm(&self, scope: &Scope, call_id: i64) -> Result<Option<KeptAlarm>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.tables.data)
            .key("pk", s(call_pk(call_id)))
            .key("sk", s(CALL_SK))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        let Some(item) = output.item else {
            return Ok(None);
        };
        // Another scope's call is no call of this one.
        if get_s(&item, "scope").as_deref() != Some(scope.as_str()) {
            return Ok(None);
        }
        let Some(alarm) = alarm_from_item(&item)? else {
            return Ok(None);
        };
        Ok(Some(KeptAlarm {
            scope: scope.clone(),
            call: call_from_item(&item)?,
            alarm,
            version: required(get_n(&item, ALARM_VERSION), "call", ALARM_VERSION)?,
        }))
    }

    /// One `TransactWriteItems`: the record (only if its alarm's version is
    /// still `kept.version`), for an open call its lock and index entry
    /// (only if they still are that call's: a close meanwhile cancels it
    /// too), the audit items and the write's webhook events (the outbox).
    /// Cancelled by a condition: `Conflict`.
    async fn write_alarm(
        &self,
        kept: &KeptAlarm,
        alarm: &Alarm,
        audit: &[AuditEvent],
    ) -> Result<AlarmWrite, StoreError> {
        // Its webhook events (DECISIONS §16) go into the same transaction:
        // a committed write has them, a conflicting one none. None while no
        // endpoint is enabled (`webhook_gate`).
        let written = Call {
            alarm: Some(alarm.clone()),
            ..kept.call.clone()
        };
        let events = self
            .webhook_events_to_keep(outbox::events_of_write(
                &kept.scope,
                &written,
                audit,
                clock::new_event_id,
            ))
            .await;
        let items = self.alarm_write_items(kept, alarm, audit, &events)?;
        for attempt in 1..=TRANSACTION_ATTEMPTS {
            match self.transact(items.clone()).await? {
                Transaction::Committed => return Ok(AlarmWrite::Written),
                Transaction::Cancelled(reasons) => {
                    if reasons.iter().any(|r| r == CONDITIONAL_CHECK_FAILED) {
                        return Ok(AlarmWrite::Conflict);
                    }
                    // Another transaction on one of the items was under way:
                    // the next try finds it done (and then its condition).
                    tracing::debug!(attempt, ?reasons, "alarm write cancelled, retrying");
                    backoff(attempt).await;
                }
            }
        }
        Err(StoreError::Unavailable(
            "writing the alarm kept conflicting".into(),
        ))
    }

    /// A `Query` of `by_due` (`due_pk = due`, `due_sk` up to now), ascending,
    /// paged until `limit`. The index lags a moment behind the table: an
    /// entry may be missing for a second after its write, or still listed
    /// after it moved (the engine reads the alarm itself before acting).
    async fn due_alarms(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<DueAlarm>, StoreError> {
        let mut due = Vec::new();
        let mut start = None;
        while due.len() < limit {
            let page = self
                .client
                .query()
                .table_name(&self.tables.data)
                .index_name(BY_DUE_INDEX)
                .key_condition_expression("due_pk = :due AND due_sk <= :until")
                .expression_attribute_values(":due", s(DUE_PK))
                .expression_attribute_values(":until", s(due_until(now)))
                .limit(i32::try_from(limit - due.len()).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            for item in page.items() {
                due.push(due_from_item(item)?);
            }
            start = page.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        Ok(due)
    }

    /// One consistent `Query` of the call's partition, `begins_with(sk, audit#)`.
    async fn alarm_audit(
        &self,
        scope: &Scope,
        call_id: i64,
    ) -> Result<Vec<AuditEvent>, StoreError> {
        let items: Vec<Item> = self
            .client
            .query()
            .table_name(&self.tables.data)
            .key_condition_expression("pk = :pk AND begins_with(sk, :audit)")
            .expression_attribute_values(":pk", s(call_pk(call_id)))
            .expression_attribute_values(":audit", s(AUDIT_PREFIX))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(classify)?;
        let mut events = Vec::new();
        for item in items
            .iter()
            .filter(|item| get_s(item, "scope").as_deref() == Some(scope.as_str()))
        {
            events.extend(audit_from_item(item)?);
        }
        Ok(events)
    }
}

impl DynamoStore {
    /// The keys of a call's audit items (a consistent `Query` of its
    /// partition, keys only), for the erasure of an address.
    pub(crate) async fn audit_keys(
        &self,
        call_id: i64,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let items: Vec<Item> = self
            .client
            .query()
            .table_name(&self.tables.data)
            .key_condition_expression("pk = :pk AND begins_with(sk, :audit)")
            .expression_attribute_values(":pk", s(call_pk(call_id)))
            .expression_attribute_values(":audit", s(AUDIT_PREFIX))
            .projection_expression("pk, sk")
            .consistent_read(true)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(classify)?;
        Ok(items
            .iter()
            .filter_map(|item| Some((get_s(item, "pk")?, get_s(item, "sk")?)))
            .collect())
    }

    /// The items of one alarm write (see [`AlarmStore::write_alarm`]).
    fn alarm_write_items(
        &self,
        kept: &KeptAlarm,
        alarm: &Alarm,
        audit: &[AuditEvent],
        events: &[OutboxEvent],
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let (scope, call) = (&kept.scope, &kept.call);
        let version = kept.version + 1;
        let json = alarm.to_json();
        let due = due_keys(scope, call.id, alarm.next_at);
        let mut record = Update::builder()
            .table_name(&self.tables.data)
            .key("pk", s(call_pk(call.id)))
            .key("sk", s(CALL_SK))
            .condition_expression("#version = :expected AND #scope = :scope")
            .expression_attribute_names("#alarm", ALARM)
            .expression_attribute_names("#changes", ALARM_CHANGES)
            .expression_attribute_names("#version", ALARM_VERSION)
            .expression_attribute_names("#scope", "scope")
            .expression_attribute_values(":alarm", s(&json))
            .expression_attribute_values(":changes", n(alarm.changes))
            .expression_attribute_values(":version", n(version))
            .expression_attribute_values(":expected", n(kept.version))
            .expression_attribute_values(":scope", s(scope.as_str()));
        let sets = "SET #alarm = :alarm, #changes = :changes, #version = :version";
        record = if due.is_empty() {
            record.update_expression(format!("{sets} REMOVE due_pk, due_sk"))
        } else {
            let mut record =
                record.update_expression(format!("{sets}, due_pk = :due_pk, due_sk = :due_sk"));
            for (name, value) in due {
                record = record.expression_attribute_values(format!(":{name}"), value);
            }
            record
        };
        let mut items = vec![
            TransactWriteItem::builder()
                .update(record.build().map_err(build_error)?)
                .build(),
        ];
        if call.closed_at.is_none() {
            // The copies displays and the snapshot read, only while they
            // are still this call's (a close deletes them).
            let copies = [
                (address_pk(scope, &call.address), open_sk(&call.event)),
                (open_index_pk(scope), id_key(call.id)),
            ];
            for (pk, sk) in copies {
                let copy = Update::builder()
                    .table_name(&self.tables.data)
                    .key("pk", s(pk))
                    .key("sk", s(sk))
                    .update_expression("SET #alarm = :alarm, #changes = :changes")
                    .condition_expression("id = :id")
                    .expression_attribute_names("#alarm", ALARM)
                    .expression_attribute_names("#changes", ALARM_CHANGES)
                    .expression_attribute_values(":alarm", s(&json))
                    .expression_attribute_values(":changes", n(alarm.changes))
                    .expression_attribute_values(":id", n(call.id))
                    .build()
                    .map_err(build_error)?;
                items.push(TransactWriteItem::builder().update(copy).build());
            }
        }
        // The audit goes with the call: each item expires the retention
        // after its write (after the close, once closed), so never later
        // than the call's record, and no audit item is left without it.
        let written_at = audit.iter().map(|e| e.at).max();
        let ttl = written_at
            .map(|at| self.closed_call_expiry(scope, call.closed_at.unwrap_or(at), call.opened_at));
        for audit_item in audit_items(scope, call.id, version, audit, ttl) {
            let put = Put::builder()
                .table_name(&self.tables.data)
                .set_item(Some(audit_item))
                .build()
                .map_err(build_error)?;
            items.push(TransactWriteItem::builder().put(put).build());
        }
        // Its webhook events: few (one per kind and level of its lines, one
        // per answer), each at most the size of the call record plus its
        // staff.
        items.extend(self.outbox_puts(events, self.outbox_stamp(), 0)?);
        if items.len() > TRANSACTION_LIMIT {
            // 97 items of audit (200 lines each) and webhook events: far
            // more than a step of the largest house writes (one alert per
            // person on duty, one event per kind and level).
            return Err(StoreError::Internal(format!(
                "an alarm write of {} audit lines and {} webhook events exceeds one transaction",
                audit.len(),
                events.len()
            )));
        }
        Ok(items)
    }
}
