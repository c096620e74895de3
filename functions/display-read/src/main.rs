//! Lambda function behind the displays' reads (DECISIONS §11, §12):
//! `GET /api/v1/display/calls`, `GET /api/v1/display/elements` and the page
//! `GET /display` (its API Gateway route is issue 13's).

use nurse_call_core::Endpoint;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_support::run(&[
        Endpoint::DisplayCalls,
        Endpoint::DisplayElements,
        Endpoint::DisplayPage,
    ])
    .await
}
