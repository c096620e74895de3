//! Lambda function behind the displays' reads (DECISIONS §11, §12):
//! `GET /api/v1/display/calls` and `GET /api/v1/display/elements`.

use nurse_call_core::Endpoint;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_support::run(&[Endpoint::DisplayCalls, Endpoint::DisplayElements]).await
}
