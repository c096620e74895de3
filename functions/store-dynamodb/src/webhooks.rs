//! Outbound webhooks on DynamoDB ([`WebhookStore`], DECISIONS §16;
//! docs/data-model.md "Webhooks"): endpoints (`webhook#endpoints` / id),
//! the outbox (`webhook#outbox` / stamp, place, id) and the delivery log
//! (`webhook#attempts#<event>` / endpoint, number; listed by time through
//! `by_scope`'s `webhook#deliveries`). The items: `webhook_items`.
//!
//! The outbox's events are put by the writes that cause them, in their own
//! transaction ([`DynamoStore::outbox_puts`]: `write_alarm` in `alarms`,
//! the close in `calls`), so a committed write has its events and a
//! cancelled one none. Like the embedded store, it keeps them only while
//! an endpoint is enabled; a transaction cannot ask that, so the writer
//! knows it from a read at most a second old (`webhook_gate`). The
//! dispatcher drops an event nobody wants, and the outbox's TTL bounds an
//! outbox nobody reads.
//!
//! Round trips: endpoints 1 each (`PutItem`, `UpdateItem`, `DeleteItem`,
//! consistent `Query`); `outbox` 1 (consistent `Query`, per 1 MB page);
//! `finish_events` a consistent `Query` of the outbox's keys (until every
//! id is found) and a `BatchWriteItem` per 25; `log_attempts` a
//! `BatchWriteItem` per 25; `attempts_of` one consistent `Query` per event;
//! `deliveries` and `prune_deliveries` a `Query` of `by_scope` per 1 MB
//! page (eventually consistent), the prune a `BatchWriteItem` per 25.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{Put, TransactWriteItem};
use chrono::{DateTime, Utc};

use nurse_call_core::{
    Attempt, StoreError, WebhookStore,
    webhooks::{AttentionChange, Endpoint, outbox::OutboxEvent},
};

use crate::DynamoStore;
use crate::error::{build_error, classify, condition_failed, existed};
use crate::item::{Item, get_s, s};
use crate::tables::BY_SCOPE_INDEX;
use crate::webhook_items::{
    DELIVERIES_LIST, ENDPOINTS_PK, OUTBOX_PK, attempt_from_item, attempt_item, attempts_pk,
    delivery_list_from, endpoint_from_item, endpoint_item, endpoint_settings, outbox_from_item,
    outbox_item, write_stamp,
};

impl DynamoStore {
    /// The transaction items that keep `events` in the outbox, numbered
    /// from `first` within their write (a close numbers the events of all
    /// its calls in one row), under one stamp taken now.
    pub(crate) fn outbox_puts(
        &self,
        events: &[OutboxEvent],
        stamp: DateTime<Utc>,
        first: usize,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        events
            .iter()
            .enumerate()
            .map(|(index, event)| {
                let put = Put::builder()
                    .table_name(&self.tables.data)
                    .set_item(Some(outbox_item(event, stamp, first + index)))
                    .build()
                    .map_err(build_error)?;
                Ok(TransactWriteItem::builder().put(put).build())
            })
            .collect()
    }

    /// A stamp for the outbox items of a write about to be sent.
    pub(crate) fn outbox_stamp(&self) -> DateTime<Utc> {
        write_stamp(Utc::now())
    }

    /// The `by_scope` listing of the delivery log, newest first, within
    /// `condition` on `list_sk` (its `:bound` given), only the attempts that
    /// did not deliver when `failed_only`, paged until `limit`.
    async fn delivery_listing(
        &self,
        condition: (&str, String),
        failed_only: bool,
        limit: usize,
    ) -> Result<Vec<Item>, StoreError> {
        let mut found = Vec::new();
        let mut start = None;
        while found.len() < limit {
            let mut query = self
                .client
                .query()
                .table_name(&self.tables.data)
                .index_name(BY_SCOPE_INDEX)
                .key_condition_expression(format!("list_pk = :list_pk AND {}", condition.0))
                .expression_attribute_values(":list_pk", s(DELIVERIES_LIST))
                .expression_attribute_values(":bound", s(condition.1.clone()))
                .scan_index_forward(false)
                .limit(i32::try_from(limit - found.len()).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start);
            if failed_only {
                query = query
                    .filter_expression("end_kind <> :delivered")
                    .expression_attribute_values(":delivered", s("delivered"));
            }
            let page = query.send().await.map_err(classify)?;
            found.extend(page.items().iter().cloned());
            start = page.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        found.truncate(limit);
        Ok(found)
    }
}

#[async_trait]
impl WebhookStore for DynamoStore {
    /// One `PutItem`, only where no endpoint has the id.
    async fn create_endpoint(&self, endpoint: &Endpoint) -> Result<(), StoreError> {
        let result = self
            .client
            .put_item()
            .table_name(&self.tables.data)
            .set_item(Some(endpoint_item(endpoint)))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        match result {
            Ok(_) => {
                self.webhook_endpoints_changed((!endpoint.disabled).then_some(true));
                Ok(())
            }
            Err(error) if condition_failed!(error) => Err(StoreError::Internal(format!(
                "an endpoint with id {} exists already",
                endpoint.id
            ))),
            Err(error) => Err(classify(error)),
        }
    }

    /// One consistent `Query` of `webhook#endpoints`, sorted here; what
    /// it says is what this process's writes go by for a second.
    async fn endpoints(&self) -> Result<Vec<Endpoint>, StoreError> {
        let mut endpoints = self
            .query_partition(ENDPOINTS_PK)
            .await?
            .iter()
            .map(endpoint_from_item)
            .collect::<Result<Vec<_>, _>>()?;
        endpoints.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        // The writers' gate learns from every read (the local server's
        // dispatcher reads each second, so its writes rarely read again).
        self.webhook_endpoints_changed(Some(endpoints.iter().any(|e| !e.disabled)));
        Ok(endpoints)
    }

    /// One `UpdateItem` of the settings (not `created_at`, not
    /// `failing_since`), only where the endpoint exists.
    async fn update_endpoint(&self, endpoint: &Endpoint) -> Result<bool, StoreError> {
        let mut update = self
            .client
            .update_item()
            .table_name(&self.tables.data)
            .key("pk", s(ENDPOINTS_PK))
            .key("sk", s(&endpoint.id))
            .condition_expression("attribute_exists(pk)");
        let mut sets = Vec::new();
        for (name, value) in endpoint_settings(endpoint) {
            sets.push(format!("#{name} = :{name}"));
            update = update
                .expression_attribute_names(format!("#{name}"), name)
                .expression_attribute_values(format!(":{name}"), value);
        }
        let result = update
            .update_expression(format!("SET {}", sets.join(", ")))
            .send()
            .await;
        self.webhook_endpoints_changed((!endpoint.disabled).then_some(true));
        existed!(result)
    }

    /// One `UpdateItem` (`SET` or `REMOVE failing_since`), only where the
    /// endpoint exists.
    async fn set_endpoint_failing(
        &self,
        id: &str,
        since: Option<DateTime<Utc>>,
    ) -> Result<bool, StoreError> {
        let update = self
            .client
            .update_item()
            .table_name(&self.tables.data)
            .key("pk", s(ENDPOINTS_PK))
            .key("sk", s(id))
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_names("#failing", "failing_since");
        let update = match since {
            Some(since) => update
                .update_expression("SET #failing = :since")
                .expression_attribute_values(":since", s(crate::alarm_items::precise(since))),
            None => update.update_expression("REMOVE #failing"),
        };
        existed!(update.send().await)
    }

    /// One `DeleteItem`, only where the endpoint exists (so the answer
    /// says whether it did).
    async fn delete_endpoint(&self, id: &str) -> Result<bool, StoreError> {
        let result = self
            .client
            .delete_item()
            .table_name(&self.tables.data)
            .key("pk", s(ENDPOINTS_PK))
            .key("sk", s(id))
            .condition_expression("attribute_exists(pk)")
            .send()
            .await;
        self.webhook_endpoints_changed(None);
        existed!(result)
    }

    /// A consistent `Query` of `webhook#outbox` in sort-key order: by the
    /// stamp of each write, then the event's place in it. Paged until
    /// `limit`. A write is stamped before its transaction commits, so one
    /// stamped earlier may commit after a later one was read: the reader
    /// reads again from an earlier position now and then (the trait says
    /// so).
    async fn outbox_after(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<OutboxEvent>, StoreError> {
        let mut events = Vec::new();
        let mut start = None;
        let from = after.map(str::to_string);
        while events.len() < limit {
            let mut query = self
                .client
                .query()
                .table_name(&self.tables.data)
                .expression_attribute_values(":pk", s(OUTBOX_PK));
            query = match &from {
                Some(from) => query
                    .key_condition_expression("pk = :pk AND sk > :from")
                    .expression_attribute_values(":from", s(from.clone())),
                None => query.key_condition_expression("pk = :pk"),
            };
            let page = query
                .consistent_read(true)
                .limit(i32::try_from(limit - events.len()).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            for item in page.items() {
                events.push(outbox_from_item(item)?);
            }
            start = page.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        Ok(events)
    }

    /// A batch delete: a position is the outbox item's `sk`, so no event is
    /// looked up first. Each key once: one `BatchWriteItem` may not name a
    /// key twice.
    async fn finish_events(&self, positions: &[String]) -> Result<(), StoreError> {
        if positions.is_empty() {
            return Ok(());
        }
        let unique: std::collections::BTreeSet<&String> = positions.iter().collect();
        let keys = unique
            .into_iter()
            .map(|sk| (OUTBOX_PK.to_string(), sk.clone()))
            .collect();
        self.delete_keys(keys, "the events are finished again in the next round")
            .await
    }

    /// Puts, 25 per `BatchWriteItem`; an attempt logged again (same event,
    /// endpoint and number) replaces the line, as in the embedded store.
    async fn log_attempts(&self, attempts: &[Attempt]) -> Result<(), StoreError> {
        // One request may not put one key twice: the last of each wins.
        let mut last: HashMap<(&str, &str, u32), usize> = HashMap::new();
        for (index, attempt) in attempts.iter().enumerate() {
            last.insert(
                (
                    attempt.event_id.as_str(),
                    attempt.endpoint_id.as_str(),
                    attempt.number,
                ),
                index,
            );
        }
        let mut kept: Vec<usize> = last.into_values().collect();
        kept.sort_unstable();
        let items = kept.iter().map(|&i| attempt_item(&attempts[i])).collect();
        self.put_items(items, "the attempts are logged again with the next ones")
            .await
    }

    /// One consistent `Query` per event (its attempts are its partition),
    /// sorted by time and number.
    async fn attempts_of(&self, event_ids: &[String]) -> Result<Vec<Attempt>, StoreError> {
        let mut found = Vec::new();
        let mut seen = HashSet::new();
        for id in event_ids {
            if !seen.insert(id.as_str()) {
                continue;
            }
            for item in self.query_partition(&attempts_pk(id)).await? {
                found.push(attempt_from_item(&item)?);
            }
        }
        found.sort_by(|a, b| a.at.cmp(&b.at).then(a.number.cmp(&b.number)));
        Ok(found)
    }

    /// A `Query` of `by_scope` (`webhook#deliveries`, `list_sk >= since`),
    /// newest first; `failed_only` filters in DynamoDB (read units are
    /// spent on the delivered lines too).
    async fn deliveries(
        &self,
        since: DateTime<Utc>,
        failed_only: bool,
        limit: usize,
    ) -> Result<Vec<Attempt>, StoreError> {
        self.delivery_listing(
            ("list_sk >= :bound", delivery_list_from(since)),
            failed_only,
            limit,
        )
        .await?
        .iter()
        .map(attempt_from_item)
        .collect()
    }

    /// The lines before `before` from `by_scope`, deleted 25 per
    /// `BatchWriteItem`. The TTL removes them 30 days after their attempt
    /// anyway; this is for a caller that wants them gone sooner.
    async fn prune_deliveries(&self, before: DateTime<Utc>) -> Result<usize, StoreError> {
        let keys: Vec<(String, String)> = self
            .delivery_listing(
                ("list_sk < :bound", delivery_list_from(before)),
                false,
                usize::MAX,
            )
            .await?
            .iter()
            .filter_map(|item| Some((get_s(item, "pk")?, get_s(item, "sk")?)))
            .collect();
        let pruned = keys.len();
        self.delete_keys(keys, "pruning again is safe").await?;
        Ok(pruned)
    }

    async fn attention_marks(&self) -> Result<HashMap<String, Vec<String>>, StoreError> {
        self.read_attention_marks().await
    }

    async fn mark_attention(&self, change: &AttentionChange) -> Result<bool, StoreError> {
        self.write_attention_mark(change).await
    }
}
