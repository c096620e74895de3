//! Lambda function of the alarms in AWS (DECISIONS §17), on two event
//! sources: the data table's stream, whose writes schedule each call's
//! timers, and the timer queue, whose due messages step the alarm engine.
//! The work is `nurse_call_alarms_aws::handler`; this is the runtime glue.

use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::Value;

use nurse_call_alarms_aws::setup::alarm_handler_from_env;
use nurse_call_core::logging;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    logging::init();
    let handler = alarm_handler_from_env()
        .await
        .inspect_err(|error| tracing::error!(%error, "cold start failed"))?;
    tracing::info!("function ready");
    let handler = &handler;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        Ok::<_, std::convert::Infallible>(handler.handle(&event.payload).await)
    }))
    .await
}
