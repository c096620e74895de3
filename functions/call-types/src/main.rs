//! Lambda function behind `GET /api/v1/display/call-types`.

use nurse_call_core::Endpoint;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_support::run(&[Endpoint::CallTypes]).await
}
