//! Lambda function of the pushes in AWS (DECISIONS §17): the delivery
//! queue's push jobs (made by the `alarm` function from each alarm write's
//! alerts and cancels) to the staff's phones, by the same Pusher as the
//! local server's. The work is `nurse_call_push::delivery_queue`; this is
//! the runtime glue. The installation's VAPID key pair is made here on the
//! first cold start if there is none (DECISIONS §15: by the push sender).
//! The webhooks have a function of their own, `forward`.

use std::sync::Arc;

use lambda_support::LambdaEvent;
use nurse_call_core::{Mode, Settings};
use nurse_call_dynamodb::DynamoStore;
use nurse_call_push::Pusher;
use nurse_call_push::delivery_queue::{DeliveryBatch, DeliveryHandler};

#[tokio::main]
async fn main() -> Result<(), lambda_support::Error> {
    lambda_support::run_events(
        deliver_from_env(),
        |deliver, event: LambdaEvent<DeliveryBatch>| deliver.handle(event.payload),
    )
    .await
}

/// From `SERVICE_MODE`, `SERVICE_TIME_ZONE`, the table variables,
/// `VAPID_SUBJECT`, `PUSH_SERVICES` and `SECRETS_KEY_ID`; `DYNAMODB_ENDPOINT` and
/// `KMS_ENDPOINT` point it at moto in tests.
async fn deliver_from_env() -> Result<DeliveryHandler, String> {
    let settings = Settings::from_env(Mode::Production)?;
    let (config, store) = DynamoStore::from_env().await;
    let store = Arc::new(store);
    // The VAPID private key is sealed with the installation's key where
    // the stack has one (`SECRETS_KEY_ID`).
    let sealer = nurse_call_kms::sealer_from_env(&config);
    let pusher = Pusher::new(store.clone(), sealer, &settings.staff)?;
    // Also opens the store's connection during init.
    if let Err(error) = pusher.prepare().await {
        tracing::error!(%error, "web push: no VAPID key pair yet; tried again with the first push");
    }
    Ok(DeliveryHandler::new(pusher, store))
}
