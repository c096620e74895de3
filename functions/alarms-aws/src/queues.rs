//! The alarm function's two SQS queues (DECISIONS §17), both standard
//! queues of JSON messages:
//!
//! - the **timer queue**: [`Timer`]s, each delayed until its alarm's next
//!   step is due (at most [`MAX_DELAY_SECONDS`]; the taker sends a longer
//!   wait on). A message may come twice, which the conditional write makes
//!   harmless, and ordering does not matter (each timer names its own due
//!   time);
//! - the **delivery queue**: [`PushJob`]s for the `deliver` function, sent
//!   at once (a push that comes twice shows the same notification, its
//!   `Topic` and tag replace it on the phone);
//! - the **webhook queue**, a FIFO queue of one message group: wake-ups of
//!   the `forward` function's webhook dispatcher ([`WEBHOOK_WAKE`]), so
//!   that one dispatcher runs at a time and keeps each call's events in
//!   order per endpoint. A FIFO queue has no per-message delay: a wake-up
//!   for a retry later waits on the timer queue and is passed on from there
//!   by the `alarm` function; so does the stack's EventBridge schedule's,
//!   every minute, which lets the dispatcher sweep the elements for
//!   `element.attention` in a house where no other event wakes it.

use aws_config::SdkConfig;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;

use nurse_call_core::{
    PushJob,
    alarm::{MAX_DELAY_SECONDS, Timer},
};

/// The queues' URL variables of the stack (CDK sets them).
pub const TIMER_QUEUE_URL_VAR: &str = "ALARM_TIMER_QUEUE_URL";
/// The delivery queue's: push jobs for the `deliver` function.
pub const DELIVERY_QUEUE_URL_VAR: &str = "DELIVERY_QUEUE_URL";
/// The webhook queue's: wake-ups of the `forward` function's dispatcher.
pub const WEBHOOK_QUEUE_URL_VAR: &str = "WEBHOOK_QUEUE_URL";

/// The body of a webhook wake-up, on the webhook queue and, delayed, on the
/// timer queue (sent there by the `forward` function's wake-up items and by
/// the stack's EventBridge schedule: infra/lib/webhooks.ts).
pub const WEBHOOK_WAKE: &str = r#"{"webhooks":"wake"}"#;

/// Whether a timer queue message's body is a webhook wake-up: the same
/// JSON, however it is spaced (EventBridge passes the rule's input on as
/// written, but a hand-sent wake-up need not be byte for byte ours).
pub fn is_webhook_wake(body: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(body)
        .is_ok_and(|value| value == serde_json::json!({"webhooks": "wake"}))
}

/// The body of the stack's minute wake-up on the timer queue (its
/// EventBridge schedule: infra/lib/webhooks.ts): the alarm function steps
/// the overdue alarms (DECISIONS §19) and passes a webhook wake-up on.
pub const MINUTE_WAKE: &str = r#"{"minute":"wake"}"#;

/// Whether a timer queue message's body is the minute's wake-up, however
/// it is spaced.
pub fn is_minute_wake(body: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(body)
        .is_ok_and(|value| value == serde_json::json!({"minute": "wake"}))
}

/// The webhook queue's one message group.
const WEBHOOK_GROUP: &str = "outbox";

/// Entries of one `SendMessageBatch` (SQS's limit).
const BATCH_LIMIT: usize = 10;

/// One of the function's SQS queues (timer, delivery or webhook), at its URL.
#[derive(Clone)]
pub struct Queue {
    client: Client,
    url: String,
}

impl Queue {
    /// The queue at `url`, through `config`'s credentials, retries and
    /// timeouts; `endpoint` points it at moto in tests.
    pub fn new(config: &SdkConfig, url: &str, endpoint: Option<&str>) -> Queue {
        let mut builder = aws_sdk_sqs::config::Builder::from(config);
        if let Some(endpoint) = endpoint {
            builder = builder.endpoint_url(endpoint);
        }
        Queue {
            client: Client::from_conf(builder.build()),
            url: url.to_string(),
        }
    }

    /// Sends each timer with its delay (capped at the queue's limit). `Err`
    /// when any of them was not taken: the caller has it sent again (the
    /// stream's record or the timer's own message is retried), and one
    /// that went twice is a duplicate the engine ignores.
    pub async fn send_timers(&self, timers: &[(Timer, u32)]) -> Result<(), String> {
        let messages: Vec<(String, u32)> = timers
            .iter()
            .map(|(timer, delay)| (to_json(timer), (*delay).min(MAX_DELAY_SECONDS)))
            .collect();
        self.send(&messages).await
    }

    /// Sends each push job at once; `Err` as for [`Queue::send_timers`].
    pub async fn send_pushes(&self, jobs: &[PushJob]) -> Result<(), String> {
        let messages: Vec<(String, u32)> = jobs.iter().map(|job| (to_json(job), 0)).collect();
        self.send(&messages).await
    }

    /// A webhook wake-up on the (FIFO) webhook queue; `dedup` names what
    /// caused it (SQS drops a second one of the same name within 5 minutes:
    /// a stream batch retried wakes once).
    pub async fn send_webhook_wake(&self, dedup: &str) -> Result<(), String> {
        self.client
            .send_message()
            .queue_url(&self.url)
            .message_body(WEBHOOK_WAKE)
            .message_group_id(WEBHOOK_GROUP)
            .message_deduplication_id(dedup_id(dedup))
            .send()
            .await
            .map(|_| ())
            .map_err(|error| {
                format!(
                    "webhook queue not reached: {}",
                    aws_sdk_sqs::error::DisplayErrorContext(&error)
                )
            })
    }

    /// A webhook wake-up on the timer queue, delayed by `delay_seconds`
    /// (at most the queue's limit): a retry's time.
    pub async fn send_webhook_wake_later(&self, delay_seconds: u32) -> Result<(), String> {
        self.send(&[(
            WEBHOOK_WAKE.to_string(),
            delay_seconds.min(MAX_DELAY_SECONDS),
        )])
        .await
    }

    async fn send(&self, messages: &[(String, u32)]) -> Result<(), String> {
        for chunk in messages.chunks(BATCH_LIMIT) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(index, (body, delay))| {
                    SendMessageBatchRequestEntry::builder()
                        .id(index.to_string())
                        .message_body(body)
                        .delay_seconds(i32::try_from(*delay).unwrap_or(0))
                        .build()
                        .map_err(|error| format!("message not built: {error}"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let sent = self
                .client
                .send_message_batch()
                .queue_url(&self.url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|error| {
                    format!(
                        "queue not reached: {}",
                        aws_sdk_sqs::error::DisplayErrorContext(&error)
                    )
                })?;
            if let Some(failed) = sent.failed().first() {
                return Err(format!(
                    "{} of {} messages refused by the queue (first: {} {})",
                    sent.failed().len(),
                    chunk.len(),
                    failed.code(),
                    failed.message().unwrap_or_default()
                ));
            }
        }
        Ok(())
    }

    /// Opens the connection during init (any answer will do).
    pub async fn open_connection(&self) -> Result<(), String> {
        self.client
            .get_queue_attributes()
            .queue_url(&self.url)
            .send()
            .await
            .map(|_| ())
            .map_err(|error| format!("{}", aws_sdk_sqs::error::DisplayErrorContext(&error)))
    }
}

fn to_json(message: &impl serde::Serialize) -> String {
    serde_json::to_string(message).expect("queue messages serialise")
}

/// A deduplication id SQS takes (at most 128 of `[A-Za-z0-9_-]` and some
/// punctuation): the cause's name with anything else replaced.
fn dedup_id(cause: &str) -> String {
    cause
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(128)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_sequence_number_or_a_message_id_is_a_deduplication_id() {
        assert_eq!(dedup_id("4000000000000123456789"), "4000000000000123456789");
        assert_eq!(dedup_id("a1b2-c3#d4"), "a1b2-c3_d4");
        assert_eq!(dedup_id(&"x".repeat(300)).len(), 128);
    }

    #[test]
    fn a_wake_up_is_the_same_json_however_spaced_and_nothing_else() {
        assert!(is_webhook_wake(WEBHOOK_WAKE));
        assert!(is_webhook_wake("{ \"webhooks\" : \"wake\" }\n"));
        for other in [
            "",
            "wake",
            r#"{"webhooks":"wake","call":1}"#,
            r#"{"webhooks":"sleep"}"#,
            r#"{"call":1,"level":2,"due":"2026-11-27T08:00:00Z"}"#,
        ] {
            assert!(!is_webhook_wake(other), "{other}");
        }
        assert!(!is_webhook_wake(MINUTE_WAKE));
    }

    #[test]
    fn the_minute_wake_up_is_its_own_json_however_spaced() {
        assert!(is_minute_wake(MINUTE_WAKE));
        assert!(is_minute_wake("{ \"minute\" : \"wake\" }\n"));
        for other in [
            "",
            WEBHOOK_WAKE,
            r#"{"minute":"wake","call":1}"#,
            r#"{"minute":1}"#,
        ] {
            assert!(!is_minute_wake(other), "{other}");
        }
    }
}
