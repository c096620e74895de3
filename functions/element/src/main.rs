//! Lambda function behind `POST /api/v1/element`.

use nurse_call_core::routes;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_support::run(&[routes::ELEMENT]).await
}
