//! Lambda function on the data table's DynamoDB stream (CONTRACT-13): turns
//! each record into the displays' live message and posts it to the
//! connections of its scope through the WebSocket API. The work is
//! `nurse_call_live_aws::broadcast`; this is the runtime glue.

use std::time::{Duration, UNIX_EPOCH};

use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::Value;

use nurse_call_core::logging;
use nurse_call_live_aws::setup::Setup;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    logging::init();
    let broadcaster = async { Setup::from_env().await?.broadcaster().await }
        .await
        .inspect_err(|error| tracing::error!(%error, "cold start failed"))?;
    tracing::info!("function ready");
    let broadcaster = &broadcaster;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        let deadline = UNIX_EPOCH + Duration::from_millis(event.context.deadline);
        let deadline = (event.context.deadline > 0).then_some(deadline);
        Ok::<_, std::convert::Infallible>(broadcaster.handle(&event.payload, deadline).await)
    }))
    .await
}
