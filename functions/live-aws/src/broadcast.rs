//! The broadcast handler: a batch of the data table's stream records in,
//! the §11 messages out to every connection of each record's scope (and
//! sections), and the partial batch response Lambda reads back.
//!
//! Order: the records of a batch are handled one after the other, and a
//! record's posts all finish before the next record's start, so every
//! connection gets a shard's messages in the order of the writes. (A stream
//! keeps each item's changes in order in one shard; changes of different
//! items may sit in different shards, whose batches Lambda hands over in
//! parallel: the per-item versions of DECISIONS §11 make that harmless.)
//! A record's posts run concurrently, at most [`POSTS_AT_ONCE`] at a time.
//!
//! Failures, from the least to the most serious:
//!
//! - a post that fails after the SDK's retries is logged and dropped: the
//!   display re-reads its snapshot every 60 s (DECISIONS §11), and holding
//!   up every other display for one is worse;
//! - a gone connection (410) has its item deleted;
//! - a record that cannot be read (a poison record) is logged, without its
//!   content, and skipped: it would fail every retry and hold up the shard;
//! - when the connections or the call types cannot be read (DynamoDB
//!   throttled or unreachable), that record's `SequenceNumber` is reported
//!   in `batchItemFailures` and the handler stops: Lambda retries from that
//!   record, and sending later records now would break the order;
//! - the same when the invocation's time is nearly up, so that Lambda
//!   retries the rest rather than the whole batch after a timeout.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

use aws_lambda_events::dynamodb::EventRecord;
use aws_lambda_events::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use futures_util::StreamExt;
use lambda_support::batch::Batch;

use nurse_call_core::{AppState, Scope, clock, live::LiveEvent, sections_show};

use crate::change::Change;
use crate::connections::{Connection, Connections};
use crate::poster::{Delivery, Poster};
use nurse_call_dynamodb::credentials_gone::{CredentialGone, Holder};

/// Posts of one record in flight at once: enough for the displays of a
/// large installation in one round, few enough for API Gateway's limits.
pub const POSTS_AT_ONCE: usize = 32;

/// Time left at which the handler stops taking records: one record's reads
/// and posts (each post at most 4 s with its retries) fit in it.
pub const TIME_RESERVE: Duration = Duration::from_secs(6);

/// The function's event: the stream's records, each read on its own (a
/// record that is none is a poison record, skipped).
pub type StreamBatch = Batch<EventRecord>;

/// Everything a batch needs, built once per cold start.
pub struct Broadcaster {
    state: AppState,
    connections: Connections,
    poster: Poster,
}

/// What one batch did, for the log line and the tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Stream records looked at (those after a stop are left uncounted).
    pub records: usize,
    /// Records that were a change a display shows.
    pub changes: usize,
    /// Records skipped as unreadable (poison records).
    pub poison: usize,
    /// Messages API Gateway took for a connection.
    pub delivered: usize,
    /// Posts that found their connection gone (410); its item is then deleted.
    pub gone: usize,
    /// Posts that failed after the SDK's retries: logged and dropped.
    pub failed_posts: usize,
    /// Connections closed because their credential was rotated or revoked.
    pub closed: usize,
}

impl Broadcaster {
    /// `state` gives the call types (cached 60 s) and the time zone.
    pub fn new(state: AppState, connections: Connections, poster: Poster) -> Self {
        Broadcaster {
            state,
            connections,
            poster,
        }
    }

    /// Handles one DynamoDB stream event (`{"Records":[…]}`), with the
    /// invocation's `deadline` when Lambda gave one.
    pub async fn handle(
        &self,
        event: StreamBatch,
        deadline: Option<SystemTime>,
    ) -> DynamoDbEventResponse {
        let started = Instant::now();
        let (response, tally) = self.broadcast(event, deadline).await;
        tracing::info!(
            records = tally.records,
            changes = tally.changes,
            poison = tally.poison,
            delivered = tally.delivered,
            gone = tally.gone,
            failed_posts = tally.failed_posts,
            closed = tally.closed,
            retry_from = response
                .batch_item_failures
                .first()
                .and_then(|failure| failure.item_identifier.as_deref()),
            ms = started.elapsed().as_millis() as u64,
            "stream batch broadcast"
        );
        response
    }

    /// [`Broadcaster::handle`] with what it did.
    pub async fn broadcast(
        &self,
        event: StreamBatch,
        deadline: Option<SystemTime>,
    ) -> (DynamoDbEventResponse, Tally) {
        let mut response = DynamoDbEventResponse::default();
        let mut tally = Tally::default();
        let Some(records) = event.records else {
            tracing::error!("not a DynamoDB stream event: no Records");
            return (response, tally);
        };
        let mut scopes = Scopes::default();
        for (index, read) in records.into_iter().enumerate() {
            tally.records += 1;
            let record = match read {
                Ok(record) => record,
                Err(error) => {
                    // Where, not what: the serde message may quote a value.
                    tracing::warn!(
                        index,
                        category = ?error.classify(),
                        "poison record skipped: not a DynamoDB stream record"
                    );
                    tally.poison += 1;
                    continue;
                }
            };
            let sequence = record.change.sequence_number.clone().unwrap_or_default();
            if index > 0 && nearly_out_of_time(deadline) {
                tracing::warn!(sequence, "time nearly up: the rest of the batch is retried");
                retry_from(&mut response, sequence);
                break;
            }
            let change = match Change::from_record(&record) {
                Ok(Some(change)) => change,
                Ok(None) => continue,
                Err(poison) => {
                    tracing::warn!(
                        event_id = record.event_id,
                        sequence,
                        reason = %poison,
                        "poison record skipped"
                    );
                    tally.poison += 1;
                    continue;
                }
            };
            tally.changes += 1;
            match self.deliver(change, &mut scopes, &mut tally).await {
                Ok(()) => {}
                Err(error) => {
                    tracing::warn!(
                        sequence,
                        %error,
                        "record not delivered: retried by Lambda from here"
                    );
                    retry_from(&mut response, sequence);
                    break;
                }
            }
        }
        (response, tally)
    }

    /// Sends one change to the connections of its scope that see its section.
    async fn deliver(
        &self,
        change: Change,
        scopes: &mut Scopes,
        tally: &mut Tally,
    ) -> Result<(), nurse_call_core::StoreError> {
        if let Change::CredentialGone(gone) = change {
            return self.close_connections(&gone, scopes, tally).await;
        }
        // The state caches the call types (60 s): a batch reads them once.
        let types = if change.needs_call_types() {
            self.state.call_types().await?
        } else {
            Vec::new()
        };
        let Some(event) = change.into_event(&types, &self.state.settings, clock::now()) else {
            return Ok(());
        };
        let connections = scopes.connections(&self.connections, &event.scope).await?;
        let receivers: Vec<Connection> = connections
            .iter()
            .filter(|connection| sections_show(&connection.sections, event.section.as_deref()))
            .cloned()
            .collect();
        let outcomes: Vec<(Connection, Delivery)> = futures_util::stream::iter(receivers)
            .map(|connection| self.post(connection, &event))
            .buffer_unordered(POSTS_AT_ONCE)
            .collect()
            .await;
        for (connection, delivery) in outcomes {
            match delivery {
                Delivery::Delivered => tally.delivered += 1,
                Delivery::Gone => {
                    tally.gone += 1;
                    scopes.forget(&event.scope, &connection.id);
                }
                Delivery::Failed(_) => tally.failed_posts += 1,
            }
        }
        Ok(())
    }

    /// Closes the open connections of a credential that stopped working
    /// (DECISIONS §20: within 5 s of `staff rotate`/`revoke`, `displays
    /// rotate`/`revoke`), and forgets them. A close that fails after the
    /// SDK's retries is logged loudly: the page keeps its socket until API
    /// Gateway's 2 h limit, though its token is refused everywhere else.
    async fn close_connections(
        &self,
        gone: &CredentialGone,
        scopes: &mut Scopes,
        tally: &mut Tally,
    ) -> Result<(), nurse_call_core::StoreError> {
        let held: Vec<Connection> = scopes
            .connections(&self.connections, &gone.scope)
            .await?
            .iter()
            .filter(|connection| match &gone.holder {
                Holder::Staff(id) => connection.staff_id.as_ref() == Some(id),
                Holder::Display(id) => connection.display_id.as_ref() == Some(id),
            })
            .cloned()
            .collect();
        for connection in held {
            match self.poster.close(&connection.id).await {
                Delivery::Delivered | Delivery::Gone => {
                    tally.closed += 1;
                    tracing::info!(connection_id = connection.id, staff_id = ?connection.staff_id,
                        display_id = ?connection.display_id, "connection closed: its credential was rotated or revoked");
                }
                Delivery::Failed(error) => {
                    tracing::error!(connection_id = connection.id, staff_id = ?connection.staff_id,
                        display_id = ?connection.display_id, error, "connection of a rotated or revoked credential not closed");
                    continue;
                }
            }
            scopes.forget(&gone.scope, &connection.id);
            if let Err(error) = self.connections.delete(&gone.scope, &connection.id).await {
                tracing::warn!(connection_id = connection.id, %error, "closed connection not deleted");
            }
        }
        Ok(())
    }

    /// One post; a gone connection's item is deleted at once.
    async fn post(&self, connection: Connection, event: &LiveEvent) -> (Connection, Delivery) {
        let delivery = self.poster.post(&connection.id, &event.message).await;
        match &delivery {
            Delivery::Delivered => {}
            Delivery::Gone => {
                tracing::info!(connection_id = connection.id, display_id = ?connection.display_id, "connection gone: forgotten");
                if let Err(error) = self
                    .connections
                    .delete(&connection.scope, &connection.id)
                    .await
                {
                    // Its TTL removes it; until then posts find it gone again.
                    tracing::warn!(connection_id = connection.id, %error, "gone connection not deleted");
                }
            }
            Delivery::Failed(error) => {
                tracing::warn!(connection_id = connection.id, display_id = ?connection.display_id, error, "message not delivered");
            }
        }
        (connection, delivery)
    }
}

/// What one batch reads once: each scope's connections.
///
/// Reading a scope's connections once per batch is enough: every record of
/// the batch was written before Lambda handed the batch over, and a display
/// that connects after the read reads its snapshot after connecting, which
/// already holds those writes (DECISIONS §11: connect, then read).
#[derive(Default)]
struct Scopes {
    connections: HashMap<Scope, Vec<Connection>>,
}

impl Scopes {
    async fn connections(
        &mut self,
        table: &Connections,
        scope: &Scope,
    ) -> Result<&[Connection], nurse_call_core::StoreError> {
        if !self.connections.contains_key(scope) {
            let connections = table.of_scope(scope).await?;
            self.connections.insert(scope.clone(), connections);
        }
        Ok(self
            .connections
            .get(scope)
            .map(Vec::as_slice)
            .unwrap_or_default())
    }

    /// A gone connection gets no more posts in this batch.
    fn forget(&mut self, scope: &Scope, id: &str) {
        if let Some(connections) = self.connections.get_mut(scope) {
            connections.retain(|connection| connection.id != id);
        }
    }
}

fn nearly_out_of_time(deadline: Option<SystemTime>) -> bool {
    deadline.is_some_and(|deadline| {
        deadline
            .duration_since(SystemTime::now())
            .map_or(true, |left| left < TIME_RESERVE)
    })
}

/// Reports `sequence` as failed: Lambda retries the batch from that record.
/// (A record without a sequence number, which Lambda never sends, reports an
/// empty one, and Lambda retries the whole batch.)
fn retry_from(response: &mut DynamoDbEventResponse, sequence: String) {
    let mut failure = DynamoDbBatchItemFailure::default();
    failure.item_identifier = Some(sequence);
    response.batch_item_failures.push(failure);
}
