//! What the alarm function builds once per cold start, from the stack's
//! environment: the settings, one SDK configuration shared by both clients
//! (credentials, retries, timeouts, HTTPS), the store behind the state and
//! the timer queue; both connections opened during init, side by side.

use std::sync::Arc;

use nurse_call_core::{Mode, Settings, env_value};
use nurse_call_dynamodb::DynamoStore;
use nurse_call_wiring::lambda_state;
use nurse_call_wiring::warm_up::{WARM_UP_LIMIT, warm_store, warm_up};

use crate::handler::AlarmHandler;
use crate::queues::{DELIVERY_QUEUE_URL_VAR, Queue, TIMER_QUEUE_URL_VAR, WEBHOOK_QUEUE_URL_VAR};

/// Points the queue client at moto in tests (as `DYNAMODB_ENDPOINT` does
/// the store's).
pub const SQS_ENDPOINT_VAR: &str = "SQS_ENDPOINT";

/// From `SERVICE_MODE` (production when unset, as the other functions),
/// `SERVICE_TIME_ZONE`, the table variables, `ALARM_TIMER_QUEUE_URL`,
/// `DELIVERY_QUEUE_URL` and `WEBHOOK_QUEUE_URL`.
pub async fn alarm_handler_from_env() -> Result<AlarmHandler, String> {
    let settings = Settings::from_env(Mode::Production)?;
    let required = |name: &str| env_value(name).ok_or_else(|| format!("{name} is not set"));
    let timer_url = required(TIMER_QUEUE_URL_VAR)?;
    let delivery_url = required(DELIVERY_QUEUE_URL_VAR)?;
    let webhook_url = required(WEBHOOK_QUEUE_URL_VAR)?;
    let sqs_endpoint = env_value(SQS_ENDPOINT_VAR);
    let (config, store) = DynamoStore::from_env().await;
    let store = store.with_call_retention(settings.call_retention);
    tracing::info!(sqs_endpoint = ?sqs_endpoint, mode = %settings.mode, "using the queues");
    let timers = Queue::new(&config, &timer_url, sqs_endpoint.as_deref());
    let deliveries = Queue::new(&config, &delivery_url, sqs_endpoint.as_deref());
    let webhooks = Queue::new(&config, &webhook_url, sqs_endpoint.as_deref());
    let state = lambda_state(Arc::new(store), settings);
    let warm_queue = timers.clone();
    futures_util::future::join(
        warm_store(&state),
        // One connection serves both queues (one client configuration).
        warm_up("SQS", WARM_UP_LIMIT, async move {
            warm_queue.open_connection().await
        }),
    )
    .await;
    Ok(AlarmHandler::new(state, timers, deliveries, webhooks))
}
