//! Lambda function of the webhook deliveries in AWS (DECISIONS §16, §17):
//! each wake-up of the webhook queue (a FIFO queue of one message group:
//! one invocation at a time) runs the local server's webhook dispatcher in
//! rounds ([`webhook_rounds`]) until the deliveries rest. A function of its
//! own beside `deliver` (the pushes): the dispatcher, its store operations
//! and the pushes' encryption together made a zip over the 3 MB budget.
//! An alarm server's 2xx to a `call.alert` is its handsets' receipt
//! (DECISIONS §16, §18), applied here by the alarm engine.
//! This is the runtime glue.

mod webhook_rounds;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_lambda_events::sqs::SqsBatchResponse;
use lambda_support::LambdaEvent;
use lambda_support::batch::Batch;
use serde::de::IgnoredAny;

use nurse_call_core::{AppState, Dispatcher, Mode, Settings, WebhookStore};
use nurse_call_dynamodb::DynamoStore;
use nurse_call_push::webhook_sender::HttpSender;

use webhook_rounds::WebhookRounds;

/// Webhook attempts on their way at once (as the local server's).
const CONCURRENCY: usize = 32;

/// An invocation without a deadline (an emulator): this long.
const DEFAULT_TIME: Duration = Duration::from_secs(60);

/// The webhook queue's wake-ups: only how many there are matters.
type Wakes = Batch<IgnoredAny>;

#[tokio::main]
async fn main() -> Result<(), lambda_support::Error> {
    lambda_support::run_events(rounds_from_env(), |rounds, event: LambdaEvent<Wakes>| {
        let (deadline_ms, wakes) = (event.context.deadline, event.payload.len());
        async move {
            let deadline = deadline_of(deadline_ms);
            if wakes > 0 {
                rounds.run(deadline).await;
            }
            // A wake-up is never reported failed: the rounds schedule their
            // own next one.
            SqsBatchResponse::default()
        }
    })
    .await
}

/// The invocation's deadline (Lambda's, epoch milliseconds), as an instant.
fn deadline_of(deadline_ms: u64) -> Instant {
    let deadline = UNIX_EPOCH + Duration::from_millis(deadline_ms);
    let left = deadline
        .duration_since(SystemTime::now())
        .ok()
        .filter(|left| !left.is_zero() && deadline_ms > 0)
        .unwrap_or(DEFAULT_TIME);
    Instant::now() + left
}

/// From `SERVICE_MODE`, `SERVICE_TIME_ZONE`, the supervision thresholds,
/// the table variables and `SECRETS_KEY_ID`; `DYNAMODB_ENDPOINT` and
/// `KMS_ENDPOINT` point it at moto in tests.
/// The store's connection is opened during init by a read of the
/// endpoints, which the first round needs anyway.
async fn rounds_from_env() -> Result<WebhookRounds, String> {
    let settings = Settings::from_env(Mode::Production)?;
    let (config, store) = DynamoStore::from_env().await;
    let store = Arc::new(store);
    if let Err(error) = store.endpoints().await {
        tracing::warn!(%error, "webhook endpoints not read during init: the first round reads them");
    }
    let dispatcher = Dispatcher::new(
        store.clone(),
        Arc::new(HttpSender::new()?),
        // The endpoints' secrets, sealed with the installation's key where
        // the stack has one (`SECRETS_KEY_ID`), opened as they are used.
        nurse_call_kms::sealer_from_env(&config),
        settings.time_zone,
        CONCURRENCY,
        settings.supervision,
    );
    // An alarm server's 2xx to a `call.alert` is its handsets' receipt
    // unless it confirms delivery itself (DECISIONS §16, §18): the alarm
    // written here as the staff function writes a phone's receipt; the
    // stream tells displays and pages, and the alarm function takes the
    // step's alerts on (no look after the write, no push from here).
    let receipts = AppState::new(store.clone(), settings.clone())
        .with_alarms(store.clone())
        .without_alarm_looks();
    dispatcher.take_receipts_with(receipts);
    Ok(WebhookRounds::new(dispatcher, store))
}
