//! Lambda function behind `POST /api/v1/display`.

use nurse_call_core::Endpoint;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_support::run(&[Endpoint::Display]).await
}
