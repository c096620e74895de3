//! Lambda function on the data table's DynamoDB stream (CONTRACT-13): turns
//! each record into the displays' live message and posts it to the
//! connections of its scope through the WebSocket API. The work is
//! `nurse_call_live_aws::broadcast`; this is the runtime glue.

use std::time::{Duration, UNIX_EPOCH};

use lambda_support::LambdaEvent;
use nurse_call_live_aws::broadcast::StreamBatch;
use nurse_call_live_aws::setup::Setup;

#[tokio::main]
async fn main() -> Result<(), lambda_support::Error> {
    lambda_support::run_events(
        async { Setup::from_env().await?.broadcaster().await },
        |broadcaster, event: LambdaEvent<StreamBatch>| {
            let deadline = UNIX_EPOCH + Duration::from_millis(event.context.deadline);
            let deadline = (event.context.deadline > 0).then_some(deadline);
            broadcaster.handle(event.payload, deadline)
        },
    )
    .await
}
