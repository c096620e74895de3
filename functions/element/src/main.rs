//! Lambda function behind `POST /api/v1/element`.

use nurse_call_core::Endpoint;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_support::run(&[Endpoint::Element]).await
}
