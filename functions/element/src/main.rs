//! Lambda function behind `POST /api/v1/element` and `POST /api/v1/heartbeat`
//! (DECISIONS §19: a central system's sign of life; its zip has room).

use nurse_call_core::routes;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_support::run(&[routes::ELEMENT, routes::HEARTBEAT]).await
}
