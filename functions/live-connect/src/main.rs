//! Lambda function of the WebSocket API's `$connect` and `$disconnect`
//! routes (CONTRACT-13): authenticates a display (or the sandbox visitor)
//! and records its connection, forgets it on disconnect. The work is
//! `nurse_call_live_aws::connect`; this is the runtime glue.

use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::Value;

use nurse_call_core::logging;
use nurse_call_live_aws::setup::Setup;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    logging::init();
    let handler = Setup::from_env()
        .await
        .inspect_err(|error| tracing::error!(%error, "cold start failed"))?
        .connect_handler()
        .await;
    tracing::info!("function ready");
    let handler = &handler;
    // The event as JSON: the handler reads it itself, so that no error
    // message of the runtime ever quotes the query string (the token).
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        Ok::<_, std::convert::Infallible>(handler.handle(event.payload).await)
    }))
    .await
}
