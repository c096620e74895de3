//! Lambda function of the alarms in AWS (DECISIONS §17), on two event
//! sources: the data table's stream, whose writes schedule each call's
//! timers, and the timer queue, whose due messages step the alarm engine.
//! The work is `nurse_call_alarms_aws::handler`; this is the runtime glue.

use lambda_support::LambdaEvent;
use nurse_call_alarms_aws::event::AlarmEvent;
use nurse_call_alarms_aws::setup::alarm_handler_from_env;

#[tokio::main]
async fn main() -> Result<(), lambda_support::Error> {
    lambda_support::run_events(
        alarm_handler_from_env(),
        |handler, event: LambdaEvent<AlarmEvent>| handler.handle(event.payload),
    )
    .await
}
