//! Lambda function behind the displays' reads (DECISIONS §11, §12):
//! `GET /api/v1/display/calls`, `GET /api/v1/display/elements` and the page
//! `GET /display` (its API Gateway route is issue 13's).

use nurse_call_core::routes;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_support::run(&[
        routes::DISPLAY_CALLS,
        routes::DISPLAY_ELEMENTS,
        routes::DISPLAY_PAGE,
    ])
    .await
}
