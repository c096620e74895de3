//! The timer queue (DECISIONS §17): an SQS queue whose messages are
//! [`Timer`]s, each delayed until its alarm's next step is due (at most
//! [`MAX_DELAY_SECONDS`]; the taker sends a longer wait on). The queue is a
//! standard one: a message may come twice, which the conditional write
//! makes harmless, and ordering does not matter (each timer names its own
//! due time).

use aws_config::SdkConfig;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;

use nurse_call_core::domain::alarm::timer::{MAX_DELAY_SECONDS, Timer};

/// The queue's URL variable of the stack (CDK sets it).
pub const QUEUE_URL_VAR: &str = "ALARM_TIMER_QUEUE_URL";

/// Entries of one `SendMessageBatch` (SQS's limit).
const BATCH_LIMIT: usize = 10;

#[derive(Clone)]
pub struct TimerQueue {
    client: Client,
    url: String,
}

impl TimerQueue {
    /// The queue at `url`, through `config`'s credentials, retries and
    /// timeouts; `endpoint` points it at moto in tests.
    pub fn new(config: &SdkConfig, url: &str, endpoint: Option<&str>) -> TimerQueue {
        let mut builder = aws_sdk_sqs::config::Builder::from(config);
        if let Some(endpoint) = endpoint {
            builder = builder.endpoint_url(endpoint);
        }
        TimerQueue {
            client: Client::from_conf(builder.build()),
            url: url.to_string(),
        }
    }

    /// Sends each timer with its delay (capped at the queue's limit). `Err`
    /// when any of them was not taken: the caller has it sent again (the
    /// stream's record or the timer's own message is retried), and one
    /// that went twice is a duplicate the engine ignores.
    pub async fn send(&self, timers: &[(Timer, u32)]) -> Result<(), String> {
        for chunk in timers.chunks(BATCH_LIMIT) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(index, (timer, delay))| {
                    SendMessageBatchRequestEntry::builder()
                        .id(index.to_string())
                        .message_body(serde_json::to_string(timer).unwrap_or_default())
                        .delay_seconds(i32::try_from((*delay).min(MAX_DELAY_SECONDS)).unwrap_or(0))
                        .build()
                        .map_err(|error| format!("timer message not built: {error}"))
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
                        "timer queue not reached: {}",
                        aws_sdk_sqs::error::DisplayErrorContext(&error)
                    )
                })?;
            if let Some(failed) = sent.failed().first() {
                return Err(format!(
                    "{} of {} timers refused by the queue (first: {} {})",
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
