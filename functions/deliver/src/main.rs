//! Lambda function of the pushes in AWS (DECISIONS §17): the delivery
//! queue's push jobs (made by the `alarm` function from each alarm write's
//! alerts and cancels) to the staff's phones, by the same Pusher as the
//! local server's. The work is `nurse_call_push::delivery_queue`; this is
//! the runtime glue. The installation's VAPID key pair is made here on the
//! first cold start if there is none (DECISIONS §15: by the push sender).
//! The webhooks have a function of their own, `forward`.

use std::sync::Arc;

use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::Value;

use nurse_call_core::{Mode, Settings, logging};
use nurse_call_dynamodb::{DynamoStore, TableNames, Timeouts, sdk_config};
use nurse_call_push::Pusher;
use nurse_call_push::delivery_queue::DeliveryHandler;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    logging::init();
    let deliver = deliver_from_env()
        .await
        .inspect_err(|error| tracing::error!(%error, "cold start failed"))?;
    tracing::info!("function ready");
    let deliver = &deliver;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        Ok::<_, std::convert::Infallible>(deliver.handle(&event.payload).await)
    }))
    .await
}

/// From `SERVICE_MODE`, `SERVICE_TIME_ZONE`, the table variables and
/// `VAPID_SUBJECT`; `DYNAMODB_ENDPOINT` points it at moto in tests.
async fn deliver_from_env() -> Result<DeliveryHandler, String> {
    let settings = Settings::from_env(Mode::Production)?;
    let endpoint = std::env::var("DYNAMODB_ENDPOINT")
        .ok()
        .filter(|endpoint| !endpoint.trim().is_empty());
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
    Ok(DeliveryHandler::new(pusher, store))
}
