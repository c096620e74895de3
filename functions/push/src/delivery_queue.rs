//! The `deliver` function's handler in AWS (DECISIONS §17): a batch of the
//! delivery queue's messages in, each a [`PushJob`] the alarm function
//! made from an alarm write's audit lines; every job sent by the same
//! [`Pusher`] as on the local server, and Lambda's partial batch response
//! out.
//!
//! A job is sent within the invocation, with the Pusher's retries inside
//! the push's 60 s `TTL` (a push later than that is worth nothing, so a
//! message delay could not help it); the function's timeout leaves room
//! for that. Of several jobs of one person about one call in a batch only
//! the newest is sent: the phone would replace the older one anyway (same
//! `Topic` and tag), as the local server's lanes do. A message that is no
//! push job is reported failed: the queue gives it again and then moves it
//! to the dead-letter queue, whose alarm an operator sees. If the function
//! dies while sending, the queue gives the message again after its
//! visibility timeout: at least once.

use std::collections::HashMap;
use std::time::Instant;

use futures_util::future::join_all;
use serde_json::{Value, json};

use nurse_call_core::app::push::PushJob;

use crate::Pusher;

pub struct DeliveryHandler {
    pusher: Pusher,
}

impl DeliveryHandler {
    pub fn new(pusher: Pusher) -> Self {
        DeliveryHandler { pusher }
    }

    /// One SQS event (`{"Records":[…]}`) in, `{"batchItemFailures":[…]}` out.
    pub async fn handle(&self, event: &Value) -> Value {
        let started = Instant::now();
        let records = event
            .get("Records")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut failures = Vec::new();
        // The newest job of each person and call, in the batch's order.
        let mut lanes: Vec<(String, i64)> = Vec::new();
        let mut newest: HashMap<(String, i64), PushJob> = HashMap::new();
        let mut superseded = 0;
        for record in records {
            let id = record["messageId"].as_str().unwrap_or_default().to_string();
            let job = record["body"]
                .as_str()
                .and_then(|body| serde_json::from_str::<PushJob>(body).ok());
            let Some(job) = job else {
                tracing::error!(
                    message_id = id,
                    "a delivery message that is no push job: left to the dead-letter queue"
                );
                failures.push(id);
                continue;
            };
            let lane = (job.staff_id.clone(), job.call_id);
            if newest.insert(lane.clone(), job).is_some() {
                superseded += 1;
            } else {
                lanes.push(lane);
            }
        }
        let jobs: Vec<PushJob> = lanes
            .iter()
            .filter_map(|lane| newest.remove(lane))
            .collect();
        // Side by side; the Pusher bounds its attempts at once itself.
        join_all(jobs.iter().map(|job| self.pusher.deliver_now(job))).await;
        tracing::info!(
            records = records.len(),
            sent = jobs.len(),
            superseded,
            unreadable = failures.len(),
            ms = started.elapsed().as_millis() as u64,
            "delivery batch handled"
        );
        json!({
            "batchItemFailures": failures
                .into_iter()
                .map(|id| json!({"itemIdentifier": id}))
                .collect::<Vec<_>>()
        })
    }
}
