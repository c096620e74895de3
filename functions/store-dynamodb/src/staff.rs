//! Staff members and their duties on DynamoDB (DECISIONS §14;
//! docs/data-model.md "Alarms"). A staff member is two items written
//! together: the credential `staff#<token hash>` in the consumers table
//! (authenticating a staff request is one `GetItem`, as a display's) and
//! the roster entry `staff#<scope>` / `<id>` in the data table (the engine
//! reads a scope's staff with one consistent `Query`, whatever else the
//! consumers table holds). A duty is `duty#<scope>` / `<staff id>`, expired
//! by TTL after `until` and skipped by reads from `until` on.

use aws_sdk_dynamodb::types::{Delete, Put, ReturnValue, TransactWriteItem};
use chrono::{DateTime, Utc};

use nurse_call_core::{
    Scope, StoreError,
    alarm::{Duty, Staff},
};

use crate::DynamoStore;
use crate::alarm_items::{
    duty_from_item, duty_item, duty_pk, roster_pk, staff_credential, staff_from_item, staff_key,
    staff_roster_entry,
};
use crate::caps::Counted;
use crate::channels::{is_channel, staff_with_channel};
use crate::credentials_gone::{CredentialGone, Holder};
use crate::error::{build_error, classify};
use crate::item::{Item, expiry_for, s};
use crate::transaction::{TRANSACTION_ATTEMPTS, Transaction, backoff};

/// The staff members of a roster partition's items (not its channel
/// items), ordered by name, then id.
fn roster_staff(items: &[Item]) -> Result<Vec<Staff>, StoreError> {
    let mut staff = items
        .iter()
        .filter(|item| !is_channel(item))
        .map(staff_from_item)
        .collect::<Result<Vec<_>, _>>()?;
    staff.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
    Ok(staff)
}

/// When a staff member's item is put.
enum Only<'a> {
    Always,
    /// Where no item has its key (`key` the table's key attribute).
    New(&'static str),
    /// Where the item still holds this token hash.
    Holding(&'a str),
}

impl DynamoStore {
    /// Both items, each only where none has its key: one `TransactWriteItems`.
    pub(crate) async fn put_staff(&self, staff: &Staff) -> Result<(), StoreError> {
        let items = self.new_staff_items(staff)?;
        match self.transact(items).await? {
            Transaction::Committed => Ok(()),
            Transaction::Cancelled(reasons) => Err(StoreError::Internal(format!(
                "storing the staff member was cancelled: {reasons:?}"
            ))),
        }
    }

    /// A new member's credential and roster entry, each only where none has
    /// its key.
    fn new_staff_items(&self, staff: &Staff) -> Result<Vec<TransactWriteItem>, StoreError> {
        let ttl = expiry_for(&staff.scope, staff.created_at);
        Ok(vec![
            self.put_staff_item(
                &self.tables.consumers,
                staff_credential(staff, ttl),
                Only::New("id"),
            )?,
            self.put_staff_item(
                &self.tables.data,
                staff_roster_entry(staff, ttl),
                Only::New("pk"),
            )?,
        ])
    }

    /// [`DynamoStore::put_staff`] while the scope's roster has fewer than
    /// `limit` members, under the roster's cap ([`crate::caps`]). `false`:
    /// full.
    pub(crate) async fn put_staff_within(
        &self,
        staff: &Staff,
        limit: usize,
    ) -> Result<bool, StoreError> {
        let ttl = expiry_for(&staff.scope, staff.created_at);
        let count = |roster: &[Item]| Counted {
            count: roster.iter().filter(|item| !is_channel(item)).count(),
            renewal: false,
        };
        let items = |_renewal: bool| self.new_staff_items(staff);
        let roster = roster_pk(&staff.scope);
        Ok(self
            .write_under_cap(&roster, limit, ttl, &count, &items)
            .await?
            .is_some())
    }

    /// One consistent `GetItem` of the credential.
    pub(crate) async fn staff_credential(
        &self,
        token_hash: &str,
    ) -> Result<Option<Staff>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.tables.consumers)
            .key("id", s(staff_key(token_hash)))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        output.item.as_ref().map(staff_from_item).transpose()
    }

    /// A staff member by id in any scope: a consistent `Scan` of the
    /// consumers table filtered on `staff_id` (the admin's rotate, revoke
    /// and erase; billed for the whole small table, as the displays' list).
    pub(crate) async fn find_staff(&self, id: &str) -> Result<Option<Staff>, StoreError> {
        let items: Vec<Item> = self
            .client
            .scan()
            .table_name(&self.tables.consumers)
            .consistent_read(true)
            .filter_expression("staff_id = :id AND begins_with(id, :prefix)")
            .expression_attribute_values(":id", s(id))
            .expression_attribute_values(":prefix", s(staff_key("")))
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(classify)?;
        items.first().map(staff_from_item).transpose()
    }

    /// One consistent `Query` of the scope's roster, ordered by name, then id.
    pub(crate) async fn roster(&self, scope: &Scope) -> Result<Vec<Staff>, StoreError> {
        roster_staff(&self.query_partition(&roster_pk(scope)).await?)
    }

    /// The scope's staff and who of them has a channel at `now`
    /// ([`crate::channels`]): the same one `Query`.
    pub(crate) async fn roster_and_channels(
        &self,
        scope: &Scope,
        now: DateTime<Utc>,
    ) -> Result<(Vec<Staff>, Vec<String>), StoreError> {
        let items = self.query_partition(&roster_pk(scope)).await?;
        Ok((roster_staff(&items)?, staff_with_channel(&items, now)))
    }

    /// The credential of the new hash put, the old one deleted (only if it
    /// still holds the old hash: two rotations at once cannot leave two
    /// working tokens), the roster entry replaced, and the person's push
    /// subscriptions with their channel items deleted (§20: the lost phone
    /// hears nothing more): one transaction. (A registration racing the
    /// rotation with the old token, checked just before, may still land
    /// after it: the old token is refused from the commit on.)
    pub(crate) async fn rotate_staff(
        &self,
        id: &str,
        token_hash: &str,
    ) -> Result<bool, StoreError> {
        for attempt in 1..=TRANSACTION_ATTEMPTS {
            let Some(old) = self.find_staff(id).await? else {
                return Ok(false);
            };
            let new = Staff {
                token_hash: token_hash.to_string(),
                ..old.clone()
            };
            let ttl = expiry_for(&new.scope, new.created_at);
            let mut items = vec![
                self.put_staff_item(
                    &self.tables.consumers,
                    staff_credential(&new, ttl),
                    Only::New("id"),
                )?,
                self.delete_credential(&old)?,
                self.put_staff_item(
                    &self.tables.data,
                    staff_roster_entry(&new, ttl),
                    Only::Always,
                )?,
            ];
            items.extend(self.subscription_deletes(id).await?);
            items.push(self.credential_gone_put(CredentialGone {
                scope: old.scope.clone(),
                holder: Holder::Staff(old.id.clone()),
            })?);
            match self.transact(items).await? {
                Transaction::Committed => return Ok(true),
                Transaction::Cancelled(reasons) => {
                    tracing::debug!(attempt, ?reasons, "staff rotation cancelled, retrying");
                    backoff(attempt).await;
                }
            }
        }
        Err(StoreError::Unavailable(
            "rotating the staff token kept conflicting".into(),
        ))
    }

    /// Revoke (`erase` false): both items marked revoked, the duty ended.
    /// Erase: both items and the duty deleted. One transaction each.
    pub(crate) async fn remove_staff(&self, id: &str, erase: bool) -> Result<bool, StoreError> {
        for attempt in 1..=TRANSACTION_ATTEMPTS {
            let Some(staff) = self.find_staff(id).await? else {
                return Ok(false);
            };
            let end_duty = Delete::builder()
                .table_name(&self.tables.data)
                .key("pk", s(duty_pk(&staff.scope)))
                .key("sk", s(&staff.id))
                .build()
                .map_err(build_error)?;
            // Their open staff pages are closed (§20).
            let mut items = vec![
                TransactWriteItem::builder().delete(end_duty).build(),
                self.credential_gone_put(CredentialGone {
                    scope: staff.scope.clone(),
                    holder: Holder::Staff(staff.id.clone()),
                })?,
            ];
            if erase {
                items.push(self.delete_credential(&staff)?);
                let roster = Delete::builder()
                    .table_name(&self.tables.data)
                    .key("pk", s(roster_pk(&staff.scope)))
                    .key("sk", s(&staff.id))
                    .build()
                    .map_err(build_error)?;
                items.push(TransactWriteItem::builder().delete(roster).build());
            } else {
                let revoked = Staff {
                    revoked: true,
                    ..staff.clone()
                };
                let ttl = expiry_for(&staff.scope, staff.created_at);
                // Only the credential read (not rotated meanwhile).
                items.push(self.put_staff_item(
                    &self.tables.consumers,
                    staff_credential(&revoked, ttl),
                    Only::Holding(&staff.token_hash),
                )?);
                items.push(self.put_staff_item(
                    &self.tables.data,
                    staff_roster_entry(&revoked, ttl),
                    Only::Always,
                )?);
            }
            match self.transact(items).await? {
                Transaction::Committed => return Ok(true),
                Transaction::Cancelled(reasons) => {
                    tracing::debug!(attempt, ?reasons, "staff removal cancelled, retrying");
                    backoff(attempt).await;
                }
            }
        }
        Err(StoreError::Unavailable(
            "removing the staff member kept conflicting".into(),
        ))
    }

    /// One `PutItem`: a new duty replaces the one before.
    pub(crate) async fn sign_on(&self, duty: &Duty) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.tables.data)
            .set_item(Some(duty_item(duty)))
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }

    /// One `DeleteItem` returning what it deleted.
    pub(crate) async fn sign_off(&self, scope: &Scope, staff_id: &str) -> Result<bool, StoreError> {
        let output = self
            .client
            .delete_item()
            .table_name(&self.tables.data)
            .key("pk", s(duty_pk(scope)))
            .key("sk", s(staff_id))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(classify)?;
        Ok(output.attributes.is_some_and(|old| !old.is_empty()))
    }

    /// One consistent `Query` of the scope's duties, without those ended by
    /// `now` (TTL removes them only within a day or two), by staff id.
    pub(crate) async fn duties_at(
        &self,
        scope: &Scope,
        now: DateTime<Utc>,
    ) -> Result<Vec<Duty>, StoreError> {
        let mut duties = Vec::new();
        for item in self.query_partition(&duty_pk(scope)).await? {
            let duty = duty_from_item(&item)?;
            if duty.until > now {
                duties.push(duty);
            }
        }
        duties.sort_by(|a, b| a.staff_id.cmp(&b.staff_id));
        Ok(duties)
    }

    /// A transaction item putting a staff member's `item` into `table`,
    /// under `condition`.
    fn put_staff_item(
        &self,
        table: &str,
        item: Item,
        condition: Only<'_>,
    ) -> Result<TransactWriteItem, StoreError> {
        let put = Put::builder().table_name(table).set_item(Some(item));
        let put = match condition {
            Only::Always => put,
            Only::New(key) => put.condition_expression(format!("attribute_not_exists({key})")),
            Only::Holding(token_hash) => put
                .condition_expression("token_hash = :old")
                .expression_attribute_values(":old", s(token_hash)),
        };
        Ok(TransactWriteItem::builder()
            .put(put.build().map_err(build_error)?)
            .build())
    }

    /// Deletes `staff`'s credential only while it holds their current hash.
    fn delete_credential(&self, staff: &Staff) -> Result<TransactWriteItem, StoreError> {
        let delete = Delete::builder()
            .table_name(&self.tables.consumers)
            .key("id", s(staff_key(&staff.token_hash)))
            .condition_expression("token_hash = :old")
            .expression_attribute_values(":old", s(&staff.token_hash))
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().delete(delete).build())
    }
}
