//! The `deliver` function's handler in AWS (DECISIONS §17): a batch of the
//! delivery queue's messages in, each a [`PushJob`] the alarm function
//! made from an alarm write's audit lines; every job sent by the same
//! [`Pusher`] as on the local server, and Lambda's partial batch response
//! out.
//!
//! A job is sent within the invocation, with the Pusher's retries inside
//! the push's 60 s `TTL` (a push later than that is worth nothing, so a
//! message delay could not help it); the function's timeout leaves room
//! for that. If the function dies while sending, the queue gives the
//! message again after its visibility timeout: at least once.
//!
//! What is not sent, because the phone must not ring for it:
//! - a job older than the push's `TTL` (given again after a crash), logged
//!   as an error as any push not delivered;
//! - of several jobs of one person about one call in a batch, all but the
//!   newest (by the time of the write that made it, then the batch's
//!   order): the phone would replace them anyway (same `Topic` and tag), as
//!   the local server's lanes do (a sign-on test's lane is also its device's,
//!   [`PushJob::lane`]);
//! - an alert whose person's alert no longer rings when it is sent (the
//!   call was accepted, closed or the person answered meanwhile): a
//!   standard queue keeps no order, so an alert may come after its own
//!   cancel. One read of the call's alarm per alert; when that read fails
//!   the alert is sent (rather once too often than silent).
//!
//! A message that is no push job is reported failed: the queue gives it
//! again and then moves it to the dead-letter queue, whose alarm an
//! operator sees.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use aws_lambda_events::sqs::SqsBatchResponse;
use chrono::{DateTime, Duration, Utc};
use futures_util::future::join_all;
use lambda_support::batch::Batch;
use serde::Deserialize;
use serde_json::Value;

use nurse_call_core::{AlarmStore, PushJob, PushKind, push::PUSH_TTL_SECONDS};

use crate::Pusher;

/// The function's event: the delivery queue's messages.
pub type DeliveryBatch = Batch<DeliveryMessage>;

/// What the handler reads of a delivery queue message: its id (empty when
/// it has none) and its push job (`None` when the body is none). Read field
/// by field from any JSON value, so that a message with a field of another
/// shape still has its id and job.
#[derive(Debug, Default, Deserialize)]
#[serde(from = "Value")]
pub struct DeliveryMessage {
    /// SQS's id of the message, reported back when it fails (empty when it has
    /// none).
    pub message_id: String,
    /// The push job in the body; `None` when the body is none (the message is
    /// then reported failed).
    pub job: Option<PushJob>,
}

impl From<Value> for DeliveryMessage {
    fn from(record: Value) -> Self {
        DeliveryMessage {
            message_id: record["messageId"].as_str().unwrap_or_default().to_string(),
            job: record["body"]
                .as_str()
                .and_then(|body| serde_json::from_str::<PushJob>(body).ok()),
        }
    }
}

/// The `deliver` function's handler, built once per cold start: the
/// [`Pusher`], and the store whose alarms say whether an alert still rings.
pub struct DeliveryHandler {
    pusher: Pusher,
    alarms: Arc<dyn AlarmStore>,
}

impl DeliveryHandler {
    /// `alarms`: the store the calls' alarms are read from (whether an
    /// alert still rings).
    pub fn new(pusher: Pusher, alarms: Arc<dyn AlarmStore>) -> Self {
        DeliveryHandler { pusher, alarms }
    }

    /// One SQS event (`{"Records":[…]}`) in, `{"batchItemFailures":[…]}` out.
    pub async fn handle(&self, event: DeliveryBatch) -> SqsBatchResponse {
        let started = Instant::now();
        let records = event.len();
        let mut failures = Vec::new();
        // The newest job of each person and call, in the batch's order.
        let mut lanes: Vec<(String, i64, Option<String>)> = Vec::new();
        let mut newest: HashMap<(String, i64, Option<String>), PushJob> = HashMap::new();
        let mut superseded = 0;
        for message in event.into_records() {
            // Never an error: any JSON value is a message.
            let DeliveryMessage {
                message_id: id,
                job,
            } = message.unwrap_or_default();
            let Some(job) = job else {
                tracing::error!(
                    message_id = id,
                    "a delivery message that is no push job: left to the dead-letter queue"
                );
                failures.push(id);
                continue;
            };
            let lane = job.lane();
            match newest.get(&lane) {
                None => {
                    lanes.push(lane.clone());
                    newest.insert(lane, job);
                }
                Some(kept) => {
                    superseded += 1;
                    if job.made_at >= kept.made_at {
                        newest.insert(lane, job);
                    }
                }
            }
        }
        let jobs: Vec<PushJob> = lanes
            .iter()
            .filter_map(|lane| newest.remove(lane))
            .collect();
        // Side by side; the Pusher bounds its attempts at once itself.
        let sent = join_all(jobs.iter().map(|job| self.deliver(job, Utc::now()))).await;
        let sent = sent.into_iter().filter(|sent| *sent).count();
        tracing::info!(
            records,
            sent,
            not_sent = jobs.len() - sent,
            superseded,
            unreadable = failures.len(),
            ms = started.elapsed().as_millis() as u64,
            "delivery batch handled"
        );
        answer(failures)
    }
}

/// Lambda's partial batch response: the ids of the messages the queue
/// gives again.
fn answer(given_again: Vec<String>) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    response.set_failures(given_again);
    response
}

impl DeliveryHandler {
    /// Sends `job` unless it is too old or an alert that rings no more;
    /// whether it was sent.
    async fn deliver(&self, job: &PushJob, now: DateTime<Utc>) -> bool {
        if now - job.made_at > Duration::seconds(PUSH_TTL_SECONDS as i64) {
            tracing::error!(
                staff_id = %job.staff_id,
                call_id = job.call_id,
                age_s = (now - job.made_at).num_seconds(),
                "push not delivered: older than its TTL when taken"
            );
            return false;
        }
        if job.kind == PushKind::Alert && !self.still_rings(job).await {
            tracing::info!(staff_id = %job.staff_id, call_id = job.call_id, "alert not pushed: it rings no more");
            return false;
        }
        self.pusher.deliver_now(job).await;
        true
    }

    /// Whether the job's person's alert of its call still rings (also when
    /// that cannot be read).
    async fn still_rings(&self, job: &PushJob) -> bool {
        match self.alarms.alarm(&job.scope, job.call_id).await {
            Ok(Some(kept)) => kept.call.closed_at.is_none() && kept.alarm.alerts(&job.staff_id),
            Ok(None) => false,
            Err(error) => {
                tracing::warn!(staff_id = %job.staff_id, call_id = job.call_id, %error, "alarm not read: the alert is pushed");
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_message_is_read_field_by_field() {
        let batch: DeliveryBatch = serde_json::from_value(json!({"Records": [
            {"messageId": "m1", "body": "no job", "attributes": 5},
            {"body": 7},
            "no message",
        ]}))
        .expect("any JSON value is a batch");
        let messages: Vec<DeliveryMessage> = batch
            .into_records()
            .into_iter()
            .map(Result::unwrap_or_default)
            .collect();
        assert_eq!(
            messages[0].message_id, "m1",
            "a field of another shape keeps its id"
        );
        assert!(messages.iter().all(|message| message.job.is_none()));
        assert_eq!(messages[1].message_id, "");
        assert_eq!(messages[2].message_id, "");
    }

    #[test]
    fn the_answer_is_lambdas_partial_batch_shape() {
        assert_eq!(
            serde_json::to_value(answer(vec!["m1".to_string()])).unwrap(),
            json!({"batchItemFailures": [{"itemIdentifier": "m1"}]})
        );
        assert_eq!(
            serde_json::to_value(answer(Vec::new())).unwrap(),
            json!({"batchItemFailures": []})
        );
    }
}
