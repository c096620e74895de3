//! The supervised links (DECISIONS §19, [`LinkStore`]) in DynamoDB: a
//! consumer's interval, last sign of life and silence are attributes of
//! its item in the consumers table (`heartbeat_seconds`, `last_seen_at`,
//! `silence_since`, `silence_detected_at`, `silence_alerts`,
//! `silence_last_alert_at`), so that a sign of life is one `UpdateItem`
//! and the links one scan of that small table; the silences' history is a
//! partition of the data table of its own (`pk` `silence`, `sk`
//! `<since>#<consumer>`), read in order of `since` with one `Query`, no
//! index. Times are whole seconds (`to_stored`, fixed width, so that text
//! order is time order in conditions).

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{Put, TransactWriteItem, Update};
use chrono::{DateTime, Utc};
use nurse_call_core::{
    LinkStore, StoreError, credentials,
    links::{Link, Silence, SilenceRecord},
    wire_time::{from_stored, to_stored},
};

use crate::DynamoStore;
use crate::alarm_items::is_staff_item;
use crate::error::{build_error, classify, condition_failed, existed};
use crate::item::{Item, get_n, get_s, is_display_item, n, raw, s};
use crate::transaction::{TRANSACTION_ATTEMPTS, Transaction};

/// Partition of the silences' history in the data table (its stream
/// records are the AWS broadcast's `consumer.silent` and `consumer.back`).
pub const SILENCE_PK: &str = "silence";

/// A silence's history item read back: `None` for an item that is not one
/// (no consumer or no `since`).
pub fn silence_from_item(item: &Item) -> Option<SilenceRecord> {
    Some(SilenceRecord {
        consumer: get_s(item, "consumer")?,
        name: get_s(item, "name").unwrap_or_default(),
        since: time(item, "since")?,
        ended_at: time(item, "ended_at"),
    })
}

/// The silence attributes a consumer item loses when its silence ends.
const SILENCE_ATTRIBUTES: &str =
    "silence_since, silence_detected_at, silence_alerts, silence_last_alert_at";

/// Sort key of a silence's history item: in order of `since`.
fn silence_sk(consumer: &str, since: DateTime<Utc>) -> String {
    format!("{}#{consumer}", to_stored(since))
}

fn time(item: &Item, key: &str) -> Option<DateTime<Utc>> {
    get_s(item, key).and_then(|text| from_stored(&text))
}

/// A consumer item's link: `None` when it is not a consumer with a
/// heartbeat. One without `last_seen_at` (an interval set in the console)
/// was last seen when it was created: when in doubt, it is silent.
fn link_of(item: &Item) -> Option<Link> {
    if is_display_item(item) || is_staff_item(item) {
        return None;
    }
    let heartbeat_seconds = credentials::heartbeat(&raw(item.get("heartbeat_seconds")))?;
    let silence = time(item, "silence_since").map(|since| Silence {
        since,
        detected_at: time(item, "silence_detected_at").unwrap_or(since),
        alerts: get_n(item, "silence_alerts").unwrap_or(0),
        last_alert_at: time(item, "silence_last_alert_at"),
    });
    Some(Link {
        consumer: get_s(item, "id")?,
        name: get_s(item, "name").unwrap_or_default(),
        heartbeat_seconds,
        last_seen_at: time(item, "last_seen_at")
            .or_else(|| time(item, "created_at"))
            .unwrap_or_default(),
        silence,
    })
}

impl DynamoStore {
    /// The consumer item of `id` (consistent), if any.
    async fn consumer_item(&self, id: &str) -> Result<Option<Item>, StoreError> {
        Ok(self
            .client
            .get_item()
            .table_name(&self.tables.consumers)
            .key("id", s(id))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?
            .item)
    }

    /// The transaction item that ends `consumer`'s silence since `since`
    /// in the history at `at`.
    fn end_in_history(
        &self,
        consumer: &str,
        since: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> Result<TransactWriteItem, StoreError> {
        let update = Update::builder()
            .table_name(&self.tables.data)
            .key("pk", s(SILENCE_PK))
            .key("sk", s(silence_sk(consumer, since)))
            .update_expression("SET ended_at = :at, consumer = :consumer, since = :since")
            .expression_attribute_values(":at", s(to_stored(at)))
            .expression_attribute_values(":consumer", s(consumer))
            .expression_attribute_values(":since", s(to_stored(since)))
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// Ends `silence` of `consumer` at `at`, in one transaction with
    /// `consumer_update` (whose condition is that the silence is still
    /// kept). `false`: the silence changed meanwhile.
    async fn end_silence(
        &self,
        consumer: &str,
        silence: &Silence,
        at: DateTime<Utc>,
        consumer_update: Update,
    ) -> Result<bool, StoreError> {
        let items = vec![
            TransactWriteItem::builder().update(consumer_update).build(),
            self.end_in_history(consumer, silence.since, at)?,
        ];
        Ok(matches!(
            self.transact(items).await?,
            Transaction::Committed
        ))
    }

    /// Sets the interval of consumer `id` (`AdminStore::set_heartbeat`).
    pub(crate) async fn set_link_heartbeat(
        &self,
        id: &str,
        seconds: Option<i64>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        if let Some(seconds) = seconds {
            let result = self
                .client
                .update_item()
                .table_name(&self.tables.consumers)
                .key("id", s(id))
                .update_expression(
                    "SET heartbeat_seconds = :seconds, last_seen_at = if_not_exists(last_seen_at, :now)",
                )
                .expression_attribute_values(":seconds", n(seconds))
                .expression_attribute_values(":now", s(to_stored(now)))
                .condition_expression("attribute_exists(id)")
                .send()
                .await;
            return existed!(result);
        }
        for _ in 0..TRANSACTION_ATTEMPTS {
            let Some(item) = self.consumer_item(id).await? else {
                return Ok(false);
            };
            let remove = format!("REMOVE heartbeat_seconds, last_seen_at, {SILENCE_ATTRIBUTES}");
            match link_of(&item).and_then(|link| link.silence) {
                Some(silence) => {
                    let update = Update::builder()
                        .table_name(&self.tables.consumers)
                        .key("id", s(id))
                        .update_expression(remove)
                        .condition_expression("silence_since = :since")
                        .expression_attribute_values(":since", s(to_stored(silence.since)))
                        .build()
                        .map_err(build_error)?;
                    if self.end_silence(id, &silence, now, update).await? {
                        return Ok(true);
                    }
                }
                None => {
                    let result = self
                        .client
                        .update_item()
                        .table_name(&self.tables.consumers)
                        .key("id", s(id))
                        .update_expression(remove)
                        .condition_expression(
                            "attribute_exists(id) AND attribute_not_exists(silence_since)",
                        )
                        .send()
                        .await;
                    if existed!(result)? {
                        return Ok(true);
                    }
                }
            }
        }
        Err(StoreError::Contended(format!(
            "the heartbeat of consumer {id} changed at every attempt"
        )))
    }
}

#[async_trait]
impl LinkStore for DynamoStore {
    async fn links(&self) -> Result<Vec<Link>, StoreError> {
        let mut links: Vec<Link> = self
            .scan_table(&self.tables.consumers)
            .await?
            .iter()
            .filter_map(link_of)
            .collect();
        links.sort_by(|a, b| a.consumer.cmp(&b.consumer));
        Ok(links)
    }

    async fn sign_of_life(
        &self,
        consumer: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<Silence>, StoreError> {
        for _ in 0..TRANSACTION_ATTEMPTS {
            // The common case, one write: supervised, not silent, and this
            // request later than the kept one.
            let result = self
                .client
                .update_item()
                .table_name(&self.tables.consumers)
                .key("id", s(consumer))
                .update_expression("SET last_seen_at = :at")
                .condition_expression(
                    "attribute_exists(heartbeat_seconds) AND attribute_not_exists(silence_since) \
                     AND (attribute_not_exists(last_seen_at) OR last_seen_at < :at)",
                )
                .expression_attribute_values(":at", s(to_stored(at)))
                .send()
                .await;
            match result {
                Ok(_) => return Ok(None),
                Err(error) if condition_failed!(error) => {}
                Err(error) => return Err(classify(error)),
            }
            // Why not: no heartbeat, a later request kept, or silent.
            let Some(link) = self
                .consumer_item(consumer)
                .await?
                .as_ref()
                .and_then(link_of)
            else {
                return Ok(None);
            };
            let Some(silence) = link.silence else {
                if link.last_seen_at >= at {
                    return Ok(None);
                }
                continue;
            };
            let update = Update::builder()
                .table_name(&self.tables.consumers)
                .key("id", s(consumer))
                .update_expression(format!(
                    "SET last_seen_at = :last REMOVE {SILENCE_ATTRIBUTES}"
                ))
                .condition_expression("silence_since = :since")
                .expression_attribute_values(":since", s(to_stored(silence.since)))
                .expression_attribute_values(":last", s(to_stored(link.last_seen_at.max(at))))
                .build()
                .map_err(build_error)?;
            if self.end_silence(consumer, &silence, at, update).await? {
                return Ok(Some(silence));
            }
        }
        Err(StoreError::Contended(format!(
            "the sign of life of consumer {consumer} lost every attempt"
        )))
    }

    async fn mark_silent(
        &self,
        consumer: &str,
        seen: DateTime<Utc>,
        silence: &Silence,
    ) -> Result<bool, StoreError> {
        // Read for the name the history keeps (once per silence).
        let Some(link) = self
            .consumer_item(consumer)
            .await?
            .as_ref()
            .and_then(link_of)
        else {
            return Ok(false);
        };
        if link.silence.is_some() || link.last_seen_at != seen {
            return Ok(false);
        }
        let mut sets = "SET last_seen_at = if_not_exists(last_seen_at, :seen), \
                        silence_since = :since, silence_detected_at = :detected, \
                        silence_alerts = :alerts"
            .to_string();
        if silence.last_alert_at.is_some() {
            sets.push_str(", silence_last_alert_at = :last_alert");
        }
        let mut update = Update::builder()
            .table_name(&self.tables.consumers)
            .key("id", s(consumer))
            .update_expression(sets)
            .condition_expression(
                "attribute_exists(heartbeat_seconds) AND attribute_not_exists(silence_since) \
                 AND (last_seen_at = :seen \
                      OR (attribute_not_exists(last_seen_at) AND created_at = :seen))",
            )
            .expression_attribute_values(":seen", s(to_stored(seen)))
            .expression_attribute_values(":since", s(to_stored(silence.since)))
            .expression_attribute_values(":detected", s(to_stored(silence.detected_at)))
            .expression_attribute_values(":alerts", n(silence.alerts));
        if let Some(last_alert_at) = silence.last_alert_at {
            update = update.expression_attribute_values(":last_alert", s(to_stored(last_alert_at)));
        }
        let history: Item = [
            ("pk", s(SILENCE_PK)),
            ("sk", s(silence_sk(consumer, silence.since))),
            ("consumer", s(consumer)),
            ("name", s(&link.name)),
            ("since", s(to_stored(silence.since))),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_string(), value))
        .collect();
        let put = Put::builder()
            .table_name(&self.tables.data)
            .set_item(Some(history))
            .build()
            .map_err(build_error)?;
        let items = vec![
            TransactWriteItem::builder()
                .update(update.build().map_err(build_error)?)
                .build(),
            TransactWriteItem::builder().put(put).build(),
        ];
        Ok(matches!(
            self.transact(items).await?,
            Transaction::Committed
        ))
    }

    async fn mark_silence_alerted(
        &self,
        consumer: &str,
        alerts: i64,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.tables.consumers)
            .key("id", s(consumer))
            .update_expression("SET silence_alerts = :alerts, silence_last_alert_at = :at")
            .condition_expression("attribute_exists(silence_since) AND silence_alerts = :previous")
            .expression_attribute_values(":alerts", n(alerts))
            .expression_attribute_values(":previous", n(alerts - 1))
            .expression_attribute_values(":at", s(to_stored(at)))
            .send()
            .await;
        existed!(result)
    }

    async fn silences(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<SilenceRecord>, StoreError> {
        // Every silence that began before `to` (the sort key starts with
        // `since`); those that ended by `from` are left out here.
        let items: Vec<Item> = self
            .client
            .query()
            .table_name(&self.tables.data)
            .key_condition_expression("pk = :pk AND sk < :to")
            .expression_attribute_values(":pk", s(SILENCE_PK))
            .expression_attribute_values(":to", s(to_stored(to)))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(classify)?;
        Ok(items
            .iter()
            .filter_map(silence_from_item)
            .filter(|silence| silence.ended_at.is_none_or(|ended| ended > from))
            .collect())
    }
}
