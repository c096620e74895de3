//! Lambda function of the deliveries in AWS (DECISIONS §17), on two queues:
//! the delivery queue's push jobs (made by the `alarm` function from each
//! alarm write's alerts and cancels) go to the staff's phones by the same
//! Pusher as the local server's (`nurse_call_push::delivery_queue`); a
//! wake-up of the webhook queue runs the same webhook dispatcher as the
//! local server's ([`webhook_rounds`]). This is the runtime glue. The
//! installation's VAPID key pair is made here on the first cold start if
//! there is none (DECISIONS §15: by the push sender).

mod webhook_rounds;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::{Value, json};

use nurse_call_alarms_aws::queues::WEBHOOK_WAKE;
use nurse_call_alarms_aws::setup::env_var;
use nurse_call_core::app::webhooks::Dispatcher;
use nurse_call_core::{Mode, Settings, logging};
use nurse_call_dynamodb::{DynamoStore, TableNames, Timeouts, sdk_config};
use nurse_call_push::Pusher;
use nurse_call_push::delivery_queue::DeliveryHandler;
use nurse_call_push::webhook_sender::HttpSender;

use webhook_rounds::WebhookRounds;

/// Webhook attempts on their way at once (as the local server's).
const WEBHOOK_CONCURRENCY: usize = 32;

/// An invocation without a deadline (an emulator): this long.
const DEFAULT_TIME: Duration = Duration::from_secs(60);

struct Deliver {
    pushes: DeliveryHandler,
    webhooks: WebhookRounds,
}

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    logging::init();
    let deliver = deliver_from_env()
        .await
        .inspect_err(|error| tracing::error!(%error, "cold start failed"))?;
    tracing::info!("function ready");
    let deliver = &deliver;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        let deadline = deadline_of(event.context.deadline);
        Ok::<_, std::convert::Infallible>(deliver.handle(&event.payload, deadline).await)
    }))
    .await
}

impl Deliver {
    /// The push jobs of the batch, then, if a webhook wake-up was among
    /// them, the webhook rounds. A wake-up is never reported failed: the
    /// rounds schedule their own next one.
    async fn handle(&self, event: &Value, deadline: Instant) -> Value {
        let records = event
            .get("Records")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let (wakes, jobs): (Vec<Value>, Vec<Value>) = records
            .into_iter()
            .partition(|record| record["body"].as_str() == Some(WEBHOOK_WAKE));
        let answer = if jobs.is_empty() {
            json!({"batchItemFailures": []})
        } else {
            self.pushes.handle(&json!({ "Records": jobs })).await
        };
        if !wakes.is_empty() {
            self.webhooks.run(deadline).await;
        }
        answer
    }
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

/// From `SERVICE_MODE`, `SERVICE_TIME_ZONE`, the table variables and
/// `VAPID_SUBJECT`; `DYNAMODB_ENDPOINT` points it at moto in tests.
async fn deliver_from_env() -> Result<Deliver, String> {
    let settings = Settings::from_env(Mode::Production)?;
    let endpoint = env_var("DYNAMODB_ENDPOINT");
    let config = sdk_config(endpoint.as_deref(), Timeouts::from_env()).await;
    let store = Arc::new(DynamoStore::from_sdk_config(
        &config,
        TableNames::from_env(),
    ));
    tracing::info!(endpoint = ?endpoint, tables = ?store.tables(), "using DynamoDB");
    let pusher = Pusher::new(store.clone(), &settings.staff.vapid_subject)?;
    // Also opens the store's connection during init.
    if let Err(error) = pusher.prepare().await {
        tracing::error!(%error, "web push: no VAPID key pair yet; tried again with the first push");
    }
    let dispatcher = Dispatcher::new(
        store.clone(),
        Arc::new(HttpSender::new()?),
        settings.time_zone,
        WEBHOOK_CONCURRENCY,
        settings.supervision,
    );
    Ok(Deliver {
        pushes: DeliveryHandler::new(pusher, store.clone()),
        webhooks: WebhookRounds::new(dispatcher, store),
    })
}
