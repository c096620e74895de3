//! What each push subscription's pushes and receipts tell (DECISIONS §18):
//! attributes of the subscription's own item (`pushed_at`, `tested_at`,
//! `received_at`, `unanswered`), each write an `UpdateItem` conditioned on
//! the item being there, so that a subscription deleted meanwhile stays
//! deleted. A subscription registered again keeps them (its write sets the
//! subscription's own attributes only, push.rs).

use chrono::{DateTime, Utc};

use nurse_call_core::{StoreError, push::Device, tokens::token_hash as sha256_hex};

use crate::DynamoStore;
use crate::alarm_items::{get_precise, precise};
use crate::error::existed;
use crate::item::{Item, get_n, get_s, n, required, s};
use crate::push::subscriptions_pk;

fn device_from_item(item: &Item) -> Result<Device, StoreError> {
    Ok(Device {
        endpoint: required(get_s(item, "endpoint"), "push subscription", "endpoint")?,
        created_at: required(
            get_precise(item, "created_at"),
            "push subscription",
            "created_at",
        )?,
        pushed_at: get_precise(item, "pushed_at"),
        tested_at: get_precise(item, "tested_at"),
        received_at: get_precise(item, "received_at"),
        unanswered: get_n(item, "unanswered").unwrap_or(0),
    })
}

impl DynamoStore {
    /// One consistent `Query` of the person's subscriptions.
    pub(crate) async fn devices_of(&self, staff_id: &str) -> Result<Vec<Device>, StoreError> {
        let mut devices = self
            .query_partition(&subscriptions_pk(staff_id))
            .await?
            .iter()
            .map(device_from_item)
            .collect::<Result<Vec<_>, _>>()?;
        devices.sort_by(|a, b| {
            a.created_at
                .cmp(&b.created_at)
                .then(a.endpoint.cmp(&b.endpoint))
        });
        Ok(devices)
    }

    pub(crate) async fn device_pushed(
        &self,
        staff_id: &str,
        endpoint: &str,
        at: DateTime<Utc>,
        test: bool,
    ) -> Result<bool, StoreError> {
        let expression = if test {
            "SET pushed_at = :at, tested_at = :at, unanswered = if_not_exists(unanswered, :zero) + :one"
        } else {
            "SET pushed_at = :at, unanswered = if_not_exists(unanswered, :zero) + :one"
        };
        let result = self
            .client
            .update_item()
            .table_name(&self.tables.data)
            .key("pk", s(subscriptions_pk(staff_id)))
            .key("sk", s(sha256_hex(endpoint)))
            .condition_expression("attribute_exists(pk)")
            .update_expression(expression)
            .expression_attribute_values(":at", s(precise(at)))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            .send()
            .await;
        existed!(result)
    }

    pub(crate) async fn device_received(
        &self,
        staff_id: &str,
        endpoint: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        // Only where a push awaits its receipt (or none ever came): a
        // receipt posted again changes nothing.
        let result = self
            .client
            .update_item()
            .table_name(&self.tables.data)
            .key("pk", s(subscriptions_pk(staff_id)))
            .key("sk", s(sha256_hex(endpoint)))
            .condition_expression(
                "attribute_exists(pk) AND (unanswered > :zero OR attribute_not_exists(received_at))",
            )
            .update_expression("SET received_at = :at, unanswered = :zero")
            .expression_attribute_values(":at", s(precise(at)))
            .expression_attribute_values(":zero", n(0))
            .send()
            .await;
        existed!(result)
    }
}
