//! Web Push on DynamoDB (DECISIONS §15; docs/data-model.md "Web Push"):
//! the installation's VAPID key pair, one item `push#vapid` / `key` put
//! only where none is (the first pair written stays), and each staff
//! member's browser subscriptions under `push#<staff id>`, one item per
//! endpoint (its SHA-256 as the sort key: an endpoint may be longer than a
//! sort key may be), written by `UpdateItem` so that the device's facts
//! (devices.rs) outlive a registration of the same endpoint again. A
//! person's subscriptions are read with one consistent `Query`; sandbox
//! items expire with their visitor (TTL). A new endpoint is added under the
//! person's cap of devices, counted inside the write ([`crate::caps`]).
//!
//! Who of a scope has a phone subscribed (a channel, DECISIONS §18) is read
//! with the roster, at no cost: each subscription has a channel item in its
//! scope's roster partition ([`crate::channels`]), written in the same
//! transaction as the subscription. (Subscriptions stored before those
//! items existed have none: their person counts as without a channel until
//! the page registers again, which it does each time it opens.)

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{
    AttributeValue, Delete, Put, ReturnValue, TransactWriteItem, Update,
};

use chrono::{DateTime, Utc};
use nurse_call_core::{
    PushStore, Registration, Scope, StoreError,
    push::{Device, PushSubscription, VapidKeys},
    tokens::token_hash as sha256_hex,
};

use crate::DynamoStore;
use crate::alarm_items::{get_precise, precise, roster_pk};
use crate::caps::Counted;
use crate::channels::{channel_item, push_channel_sk};
use crate::device_tests::DeviceTest;
use crate::error::{build_error, classify, condition_failed};
use crate::item::{Item, expiry_for, get_s, n, required, s};

const VAPID_PK: &str = "push#vapid";
const VAPID_SK: &str = "key";

pub(crate) fn subscriptions_pk(staff_id: &str) -> String {
    format!("push#{staff_id}")
}

/// The channel item of a subscription: its person has a push channel.
fn index_item(subscription: &PushSubscription) -> Item {
    let ttl = expiry_for(&subscription.scope, subscription.created_at);
    channel_item(
        &subscription.scope,
        &index_sk(&subscription.staff_id, &subscription.endpoint),
        &subscription.staff_id,
        ttl,
    )
}

fn index_sk(staff_id: &str, endpoint: &str) -> String {
    push_channel_sk(staff_id, &sha256_hex(endpoint))
}

fn subscription_item(subscription: &PushSubscription) -> Item {
    let mut item = Item::from([
        (
            "pk".to_string(),
            s(subscriptions_pk(&subscription.staff_id)),
        ),
        ("sk".to_string(), s(sha256_hex(&subscription.endpoint))),
        ("staff_id".to_string(), s(&subscription.staff_id)),
        ("scope".to_string(), s(subscription.scope.as_str())),
        ("endpoint".to_string(), s(&subscription.endpoint)),
        ("p256dh".to_string(), s(&subscription.p256dh)),
        ("auth".to_string(), s(&subscription.auth)),
        (
            "created_at".to_string(),
            s(precise(subscription.created_at)),
        ),
    ]);
    if let Some(ttl) = expiry_for(&subscription.scope, subscription.created_at) {
        item.insert("ttl".to_string(), n(ttl));
    }
    item
}

/// A subscription's `UpdateItem` (its key apart): `SET` of every attribute
/// of [`subscription_item`], so that registering the same endpoint again
/// replaces its keys and time and keeps what the device's pushes and
/// receipts told (devices.rs), as the embedded store does (DECISIONS §18).
/// Names for all: `ttl` is a reserved word.
pub(crate) struct SubscriptionUpdate {
    pub(crate) key: Item,
    pub(crate) expression: String,
    pub(crate) names: HashMap<String, String>,
    pub(crate) values: Item,
}

pub(crate) fn subscription_update(subscription: &PushSubscription) -> SubscriptionUpdate {
    let mut item = subscription_item(subscription);
    let key: Item = ["pk", "sk"]
        .into_iter()
        .filter_map(|name| item.remove_entry(name))
        .collect();
    let mut attributes: Vec<(String, AttributeValue)> = item.into_iter().collect();
    attributes.sort_by(|a, b| a.0.cmp(&b.0));
    let mut sets = Vec::new();
    let (mut names, mut values) = (HashMap::new(), Item::new());
    for (index, (name, value)) in attributes.into_iter().enumerate() {
        sets.push(format!("#a{index} = :a{index}"));
        names.insert(format!("#a{index}"), name);
        values.insert(format!(":a{index}"), value);
    }
    SubscriptionUpdate {
        key,
        expression: format!("SET {}", sets.join(", ")),
        names,
        values,
    }
}

fn subscription_from_item(item: &Item) -> Result<PushSubscription, StoreError> {
    let text = |key: &str| required(get_s(item, key), "push subscription", key);
    Ok(PushSubscription {
        staff_id: text("staff_id")?,
        scope: Scope::from_key(&text("scope")?),
        endpoint: text("endpoint")?,
        p256dh: text("p256dh")?,
        auth: text("auth")?,
        created_at: required(
            get_precise(item, "created_at"),
            "push subscription",
            "created_at",
        )?,
    })
}

fn keys_from_item(item: &Item) -> Result<VapidKeys, StoreError> {
    let text = |key: &str| required(get_s(item, key), "VAPID keys", key);
    Ok(VapidKeys {
        public_key: text("public_key")?,
        private_key: text("private_key")?,
        created_at: required(get_precise(item, "created_at"), "VAPID keys", "created_at")?,
    })
}

impl DynamoStore {
    /// The deletes of every subscription of a staff member and of its
    /// channel item, for a transaction of the caller's (`staff rotate`:
    /// the subscriptions go in the same write as the old token, §20).
    pub(crate) async fn subscription_deletes(
        &self,
        staff_id: &str,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let pk = subscriptions_pk(staff_id);
        let mut deletes = Vec::new();
        for item in self.query_partition(&pk).await? {
            let subscription = subscription_from_item(&item)?;
            for (pk, sk) in [
                (pk.clone(), sha256_hex(&subscription.endpoint)),
                (
                    roster_pk(&subscription.scope),
                    index_sk(staff_id, &subscription.endpoint),
                ),
            ] {
                let delete = Delete::builder()
                    .table_name(&self.tables.data)
                    .key("pk", s(pk))
                    .key("sk", s(sk))
                    .build()
                    .map_err(build_error)?;
                deletes.push(TransactWriteItem::builder().delete(delete).build());
            }
        }
        Ok(deletes)
    }

    /// Deletes every subscription of a staff member (revoke, erase) and
    /// their channel items: a `Query` of their partition and
    /// `BatchWriteItem`s, after the member's own transaction (repeating it
    /// is harmless).
    pub(crate) async fn forget_push_subscriptions(&self, staff_id: &str) -> Result<(), StoreError> {
        let pk = subscriptions_pk(staff_id);
        let mut keys = Vec::new();
        for item in self.query_partition(&pk).await? {
            let subscription = subscription_from_item(&item)?;
            keys.push((pk.clone(), sha256_hex(&subscription.endpoint)));
            keys.push((
                roster_pk(&subscription.scope),
                index_sk(staff_id, &subscription.endpoint),
            ));
        }
        if keys.is_empty() {
            return Ok(());
        }
        self.delete_keys(keys, "revoke or erase the staff member again")
            .await
    }
}

#[async_trait]
impl PushStore for DynamoStore {
    async fn vapid_keys(&self) -> Result<Option<VapidKeys>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.tables.data)
            .key("pk", s(VAPID_PK))
            .key("sk", s(VAPID_SK))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        output.item.as_ref().map(keys_from_item).transpose()
    }

    async fn keep_vapid_keys(&self, keys: &VapidKeys) -> Result<VapidKeys, StoreError> {
        let item = Item::from([
            ("pk".to_string(), s(VAPID_PK)),
            ("sk".to_string(), s(VAPID_SK)),
            ("public_key".to_string(), s(&keys.public_key)),
            ("private_key".to_string(), s(&keys.private_key)),
            ("created_at".to_string(), s(precise(keys.created_at))),
        ]);
        let put = self
            .client
            .put_item()
            .table_name(&self.tables.data)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        match put {
            Ok(_) => Ok(keys.clone()),
            // Another process made the pair first: theirs stays.
            Err(error) if condition_failed!(error) => self.vapid_keys().await?.ok_or_else(|| {
                StoreError::Internal("the VAPID keys vanished after a conflict".into())
            }),
            Err(error) => Err(classify(error)),
        }
    }

    /// Under the person's cap ([`crate::caps`]): a new endpoint added
    /// (`attribute_not_exists`) with its channel item and the cap's step,
    /// a known one updated only while it is still there (else a removal
    /// meanwhile would let it come back uncounted).
    async fn register_push_subscription(
        &self,
        subscription: &PushSubscription,
        limit: usize,
    ) -> Result<Registration, StoreError> {
        let sk = sha256_hex(&subscription.endpoint);
        let count = |kept: &[Item]| Counted {
            count: kept.len(),
            renewal: kept
                .iter()
                .any(|item| get_s(item, "sk").as_deref() == Some(&sk)),
        };
        let items = |renewal: bool| {
            let update = subscription_update(subscription);
            let update = Update::builder()
                .table_name(&self.tables.data)
                .set_key(Some(update.key))
                .update_expression(update.expression)
                .set_expression_attribute_names(Some(update.names))
                .set_expression_attribute_values(Some(update.values))
                .condition_expression(if renewal {
                    "attribute_exists(pk)"
                } else {
                    "attribute_not_exists(pk)"
                })
                .build()
                .map(|update| TransactWriteItem::builder().update(update).build())
                .map_err(build_error)?;
            let channel = Put::builder()
                .table_name(&self.tables.data)
                .set_item(Some(index_item(subscription)))
                .build()
                .map(|put| TransactWriteItem::builder().put(put).build())
                .map_err(build_error)?;
            Ok(vec![update, channel])
        };
        let ttl = expiry_for(&subscription.scope, subscription.created_at);
        let set = subscriptions_pk(&subscription.staff_id);
        Ok(
            match self
                .write_under_cap(&set, limit, ttl, &count, &items)
                .await?
            {
                None => Registration::Full,
                Some(true) => Registration::Renewed,
                Some(false) => Registration::New,
            },
        )
    }

    async fn delete_push_subscription(
        &self,
        staff_id: &str,
        endpoint: &str,
    ) -> Result<bool, StoreError> {
        let output = self
            .client
            .delete_item()
            .table_name(&self.tables.data)
            .key("pk", s(subscriptions_pk(staff_id)))
            .key("sk", s(sha256_hex(endpoint)))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(classify)?;
        let Some(old) = output.attributes.filter(|old| !old.is_empty()) else {
            return Ok(false);
        };
        // Its index item: the scope is the deleted subscription's. Not in
        // one transaction with the delete (a transaction cannot say whether
        // it deleted anything); should this fail, the person counts as
        // subscribed a while longer: their alert's receipt deadline then
        // says it (§18), as for a phone that does not confirm.
        let subscription = subscription_from_item(&old)?;
        self.client
            .delete_item()
            .table_name(&self.tables.data)
            .key("pk", s(roster_pk(&subscription.scope)))
            .key("sk", s(index_sk(staff_id, endpoint)))
            .send()
            .await
            .map_err(classify)?;
        Ok(true)
    }

    async fn push_subscriptions(
        &self,
        staff_id: &str,
    ) -> Result<Vec<PushSubscription>, StoreError> {
        let mut subscriptions = self
            .query_partition(&subscriptions_pk(staff_id))
            .await?
            .iter()
            .map(subscription_from_item)
            .collect::<Result<Vec<_>, _>>()?;
        subscriptions.sort_by(|a, b| {
            a.created_at
                .cmp(&b.created_at)
                .then(a.endpoint.cmp(&b.endpoint))
        });
        Ok(subscriptions)
    }

    async fn push_devices(&self, staff_id: &str) -> Result<Vec<Device>, StoreError> {
        self.devices_of(staff_id).await
    }

    async fn record_device_push(
        &self,
        staff_id: &str,
        endpoint: &str,
        at: DateTime<Utc>,
        test: bool,
    ) -> Result<bool, StoreError> {
        self.device_pushed(staff_id, endpoint, at, test).await
    }

    async fn record_device_receipt(
        &self,
        staff_id: &str,
        endpoint: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.device_received(staff_id, endpoint, at).await
    }

    async fn hand_on_device_test(
        &self,
        scope: &Scope,
        staff_id: &str,
        at: DateTime<Utc>,
        device: Option<&str>,
    ) -> Result<bool, StoreError> {
        self.put_device_test(&DeviceTest {
            scope: scope.clone(),
            staff_id: staff_id.to_string(),
            at,
            device: device.map(str::to_string),
        })
        .await?;
        Ok(true)
    }
}
