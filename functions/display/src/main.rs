//! Lambda function behind `POST /api/v1/display`, and the alarm servers'
//! signed responses, `POST /api/v1/response` (DECISIONS §16): a signed
//! request like the display's, answered with the same alarm engine and the
//! same store access (issue 47 moved it here from the `staff` function,
//! whose zip had no room left: the staff API takes only tokens).

use nurse_call_core::routes;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_support::run(&[routes::DISPLAY, routes::ALARM_RESPONSE]).await
}
