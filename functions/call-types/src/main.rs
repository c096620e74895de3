//! Lambda function behind `GET /api/v1/display/call-types`, and the interface
//! document `GET /api/v1/openapi.json`: the two reads without credentials.

use nurse_call_core::routes;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_support::run(&[routes::CALL_TYPES, routes::OPEN_API]).await
}
