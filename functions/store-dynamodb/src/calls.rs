//! Opening and closing calls: each one transaction over the address's lock
//! item (`open#<event>`, the open-call rule), the call's own record, the
//! scope's open-call index and, when the request writes it, the element;
//! retried when it loses a race (docs/data-model.md).

use std::collections::HashSet;

use aws_sdk_dynamodb::types::{Delete, TransactWriteItem, Update};
use chrono::{DateTime, TimeZone, Utc};

use nurse_call_core::{
    AddressSnapshot, Call, CloseOutcome, ElementWrite, NewCall, OpenOutcome, Scope, StoreError,
    alarm::Alarm, clock, webhooks::outbox, wire_time::to_stored,
};

use crate::DynamoStore;
use crate::alarms::{ALARM_VERSION, due_keys};
use crate::elements::ElementUpdate;
use crate::error::{build_error, classify};
use crate::item::{
    ALARM_CHANGES, CALL_SK, address_pk, call_attributes, call_from_item, call_pk, expiry_for,
    id_key, list_pk, n, open_index_pk, open_sk, s,
};
use crate::tables::TTL_ATTRIBUTE;
use crate::transaction::{
    TRANSACTION_ATTEMPTS, Transaction, backoff, condition_failed_at, put_new,
};

impl DynamoStore {
    /// [`nurse_call_core::Store::open_call`]: the lock, the record, the
    /// element (when written) and the index entry in one transaction.
    pub(crate) async fn open(
        &self,
        call: &NewCall,
        snapshot: &AddressSnapshot,
        element: &ElementWrite,
    ) -> Result<OpenOutcome, StoreError> {
        let scope = &element.scope;
        if let Some(existing) = snapshot.open_call_of(&call.event) {
            // Open at the snapshot: no transaction, only the element (if the
            // request writes it).
            if !self.write_element_alone(element).await? {
                return Ok(OpenOutcome::UnknownElement);
            }
            return Ok(OpenOutcome::AlreadyOpen(existing.clone()));
        }
        for attempt in 1..=TRANSACTION_ATTEMPTS {
            let at = element.change.at;
            let id = new_call_id(at)?;
            let attributes = call_attributes(scope, id, call, at);
            let mut lock = attributes.clone();
            lock.insert("pk".into(), s(address_pk(scope, &call.address)));
            lock.insert("sk".into(), s(open_sk(&call.event)));
            lock.insert("list_pk".into(), s(list_pk(scope, "open")));
            let mut index = attributes.clone();
            index.insert("pk".into(), s(open_index_pk(scope)));
            index.insert("sk".into(), s(id_key(id)));
            let mut record = attributes;
            record.insert("pk".into(), s(call_pk(id)));
            record.insert("sk".into(), s(CALL_SK));
            record.insert("list_pk".into(), s(list_pk(scope, "call")));
            // The pending alarm is due at once (the open's own time): in the
            // due index from the same transaction, so a crash right after
            // the commit still gets it looked at.
            let pending = Alarm::pending(call.opened_at);
            record.insert(ALARM_VERSION.into(), n(0));
            record.extend(due_keys(scope, id, pending.next_at));

            // The element update stays third: a failed condition there means
            // the element vanished (see below).
            let mut items = vec![
                put_new(&self.tables.data, lock)?,
                put_new(&self.tables.data, record)?,
            ];
            if element.writes_element {
                items.push(ElementUpdate::new(element).into_transact_item(&self.tables.data)?);
            }
            items.push(put_new(&self.tables.data, index)?);
            match self.transact(items).await? {
                Transaction::Committed => {
                    return Ok(OpenOutcome::Opened(Call {
                        alarm: Some(Alarm::pending(call.opened_at)),
                        ..call.opened(id)
                    }));
                }
                Transaction::Cancelled(reasons) => {
                    if condition_failed_at(&reasons, 0) {
                        // The event is open already: answer with that call.
                        if let Some(existing) =
                            self.open_lock(scope, &call.address, &call.event).await?
                        {
                            if !self.write_element_alone(element).await? {
                                return Ok(OpenOutcome::UnknownElement);
                            }
                            return Ok(OpenOutcome::AlreadyOpen(existing));
                        }
                        // Closed in between: open it again.
                    } else if element.writes_element && condition_failed_at(&reasons, 2) {
                        // The element vanished after the snapshot.
                        return Ok(OpenOutcome::UnknownElement);
                    }
                    // An id collision or a conflicting transaction: try again.
                    tracing::debug!(attempt, ?reasons, "open transaction cancelled, retrying");
                    backoff(attempt).await;
                }
            }
        }
        Err(StoreError::Unavailable(
            "opening the call kept conflicting".into(),
        ))
    }

    /// [`nurse_call_core::Store::close_calls`]: per call its record closed,
    /// its lock and index entry deleted, the element (when written), and
    /// per call with a shown alarm its `call.closed` event, in one
    /// transaction.
    pub(crate) async fn close(
        &self,
        snapshot: &AddressSnapshot,
        closed_at: DateTime<Utc>,
        closed_by: Option<&str>,
        element: &ElementWrite,
    ) -> Result<CloseOutcome, StoreError> {
        let request = CloseRequest {
            closed_at,
            closed_by,
            element,
        };
        // The snapshot's calls name each lock's event and record, so the
        // first attempt needs no read of its own (2 round trips in all). A
        // snapshot that is not one address's (two calls of one event) is
        // read again instead: a transaction may touch each lock only once.
        let requested: Vec<i64> = snapshot.closable(closed_at).map(|call| call.id).collect();
        let mut closing: Vec<Call> = snapshot.closable(closed_at).cloned().collect();
        let events: HashSet<&str> = closing.iter().map(|call| call.event.as_str()).collect();
        let read_first = events.len() != closing.len();
        for attempt in 1..=TRANSACTION_ATTEMPTS {
            if attempt > 1 || read_first {
                // Another close got some of them first: read again, close the rest.
                closing = self.still_open(&request, &requested).await?;
            }
            if closing.is_empty() {
                if !self.write_element_alone(element).await? {
                    return Ok(CloseOutcome::UnknownElement);
                }
                return Ok(CloseOutcome::Closed(Vec::new()));
            }
            let (items, closed) = self.close_transaction(&request, &closing).await?;
            match self.transact(items).await? {
                Transaction::Committed => {
                    return Ok(CloseOutcome::Closed(closed));
                }
                Transaction::Cancelled(reasons) => {
                    let element_index = closing.len() * 3;
                    if element.writes_element && condition_failed_at(&reasons, element_index) {
                        // The element vanished after the snapshot.
                        return Ok(CloseOutcome::UnknownElement);
                    }
                    tracing::debug!(attempt, ?reasons, "close transaction cancelled, retrying");
                    backoff(attempt).await;
                }
            }
        }
        Err(StoreError::Unavailable(
            "closing the calls kept conflicting".into(),
        ))
    }

    /// Of the calls `requested`, those still open on the address, read
    /// again (another close may have got some of them first).
    async fn still_open(
        &self,
        request: &CloseRequest<'_>,
        requested: &[i64],
    ) -> Result<Vec<Call>, StoreError> {
        let element = request.element;
        Ok(self
            .read_address(&element.scope, element.address())
            .await?
            .open_calls
            .into_iter()
            .filter(|call| requested.contains(&call.id))
            .collect())
    }

    /// The items of one attempt's transaction, and the calls as they are
    /// once it commits: per call (in order) its record closed, its lock
    /// and its index entry deleted (3 items each), then the element (when
    /// written), then the `call.closed` events.
    async fn close_transaction(
        &self,
        request: &CloseRequest<'_>,
        closing: &[Call],
    ) -> Result<(Vec<TransactWriteItem>, Vec<Call>), StoreError> {
        let element = request.element;
        let mut items = Vec::with_capacity(closing.len() * 4 + 1);
        for call in closing {
            items.push(self.close_record(request, call)?);
            items.push(self.release_lock(request, call)?);
            items.push(self.unindex(&element.scope, call)?);
        }
        if element.writes_element {
            items.push(ElementUpdate::new(element).into_transact_item(&self.tables.data)?);
        }
        let closed: Vec<Call> = closing
            .iter()
            .map(|call| Call {
                closed_at: Some(request.closed_at),
                closed_by: request.closed_by.map(str::to_string),
                ..call.clone()
            })
            .collect();
        // Each call's `call.closed` (DECISIONS §16) last, in the same
        // transaction, after the element so that its index above stays
        // put: at most 4 items per call and the element, 24 calls in
        // one transaction, where an address has one open call per event
        // (a handful). None while no endpoint is enabled (`webhook_gate`).
        let events = self
            .webhook_events_to_keep(
                closed
                    .iter()
                    .filter_map(|call| outbox::closed(&element.scope, call, clock::new_event_id))
                    .collect(),
            )
            .await;
        items.extend(self.outbox_puts(&events, self.outbox_stamp(), 0)?);
        Ok((items, closed))
    }

    /// The call's record closed (at and by whom), if it is still there and
    /// open. From its close on, the call counts down to its deletion (TTL):
    /// the installation's retention (docs/security.md).
    fn close_record(
        &self,
        request: &CloseRequest<'_>,
        call: &Call,
    ) -> Result<TransactWriteItem, StoreError> {
        let (expression, closed_by) = match request.closed_by {
            Some(consumer) => (
                "SET closed_at = :closed_at, closed_by = :closed_by, #ttl = :ttl",
                Some(s(consumer)),
            ),
            None => ("SET closed_at = :closed_at, #ttl = :ttl", None),
        };
        let closed_at = request.closed_at;
        let expiry = self.closed_call_expiry(&request.element.scope, closed_at, call.opened_at);
        let mut close = Update::builder()
            .table_name(&self.tables.data)
            .key("pk", s(call_pk(call.id)))
            .key("sk", s(CALL_SK))
            .update_expression(expression)
            .condition_expression("attribute_exists(pk) AND attribute_not_exists(closed_at)")
            .expression_attribute_names("#ttl", TTL_ATTRIBUTE)
            .expression_attribute_values(":closed_at", s(to_stored(closed_at)))
            .expression_attribute_values(":ttl", n(expiry));
        if let Some(value) = closed_by {
            close = close.expression_attribute_values(":closed_by", value);
        }
        let close = close.build().map_err(build_error)?;
        Ok(TransactWriteItem::builder().update(close).build())
    }

    /// The call's lock deleted: still that call, and its alarm still the
    /// one read (the same changes): a close returns the call with the alarm
    /// displays were last told of, so its version is above it. An alarm
    /// written meanwhile cancels this; the retry reads again.
    fn release_lock(
        &self,
        request: &CloseRequest<'_>,
        call: &Call,
    ) -> Result<TransactWriteItem, StoreError> {
        let unlock = match &call.alarm {
            Some(alarm) => Delete::builder()
                .condition_expression("id = :id AND #changes = :changes")
                .expression_attribute_names("#changes", ALARM_CHANGES)
                .expression_attribute_values(":changes", n(alarm.changes)),
            None => Delete::builder()
                .condition_expression("id = :id AND attribute_not_exists(#changes)")
                .expression_attribute_names("#changes", ALARM_CHANGES),
        };
        let element = request.element;
        let unlock = unlock
            .table_name(&self.tables.data)
            .key("pk", s(address_pk(&element.scope, element.address())))
            .key("sk", s(open_sk(&call.event)))
            .expression_attribute_values(":id", n(call.id))
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().delete(unlock).build())
    }

    /// The call's entry in the scope's open-call index deleted.
    fn unindex(&self, scope: &Scope, call: &Call) -> Result<TransactWriteItem, StoreError> {
        let unindex = Delete::builder()
            .table_name(&self.tables.data)
            .key("pk", s(open_index_pk(scope)))
            .key("sk", s(id_key(call.id)))
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().delete(unindex).build())
    }

    /// The request's element write without a call to open or close (one
    /// conditional update, when the request writes the element at all);
    /// `false` when the element must exist and has vanished.
    async fn write_element_alone(&self, element: &ElementWrite) -> Result<bool, StoreError> {
        if !element.writes_element {
            return Ok(true);
        }
        Ok(self
            .update_element(ElementUpdate::new(element))
            .await?
            .is_some())
    }

    /// The open call of `event` on the address: its lock item, read
    /// consistently (after an open lost the race to another).
    async fn open_lock(
        &self,
        scope: &Scope,
        address: &str,
        event: &str,
    ) -> Result<Option<Call>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.tables.data)
            .key("pk", s(address_pk(scope, address)))
            .key("sk", s(open_sk(event)))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        output.item.as_ref().map(call_from_item).transpose()
    }

    /// Epoch seconds at which a call opened at `opened_at` and closed at
    /// `closed_at` expires: the installation's retention, or a sandbox
    /// item's own expiry (30 days after the open) when that comes first.
    pub(crate) fn closed_call_expiry(
        &self,
        scope: &Scope,
        closed_at: DateTime<Utc>,
        opened_at: DateTime<Utc>,
    ) -> i64 {
        let retention = self.call_retention.expires_at(closed_at).timestamp();
        expiry_for(scope, opened_at).map_or(retention, |ttl| ttl.min(retention))
    }
}

/// One close request, as every item of its transaction needs it.
struct CloseRequest<'a> {
    closed_at: DateTime<Utc>,
    /// The consumer that closed the calls, when one did.
    closed_by: Option<&'a str>,
    /// The request's element write; its scope and address are the calls'.
    element: &'a ElementWrite,
}

/// A call id: milliseconds since 2024 in the high bits, 12 random bits below.
/// Fits 2^53 - 1 until 2093; uniqueness is enforced by a conditional write.
fn new_call_id(now: DateTime<Utc>) -> Result<i64, StoreError> {
    let epoch = Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap();
    let millis = (now - epoch).num_milliseconds().max(0);
    let mut random = [0u8; 2];
    getrandom::fill(&mut random).map_err(|e| StoreError::Internal(e.to_string()))?;
    let low = i64::from(u16::from_le_bytes(random) & 0x0fff);
    let id = (millis << 12) | low;
    if id > (1 << 53) - 1 {
        return Err(StoreError::Internal("call id space exhausted".into()));
    }
    Ok(id.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_ids_fit_javascript_numbers_until_2093() {
        let late = Utc.with_ymd_and_hms(2093, 1, 1, 0, 0, 0).unwrap();
        let id = new_call_id(late).unwrap();
        assert!(id > 0 && id < (1 << 53));
        let now = new_call_id(Utc::now()).unwrap();
        assert!(now < id);
    }
}
