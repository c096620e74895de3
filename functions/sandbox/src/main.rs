//! Lambda function of the test server (sandbox stacks only): `GET /`,
//! `POST /api/v1/sandbox/consumers`, `GET /api/v1/sandbox/state` and
//! `POST /api/v1/sandbox/staff`.

use nurse_call_core::routes;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_support::run(&[
        routes::TEST_PAGE,
        routes::SANDBOX_CONSUMERS,
        routes::SANDBOX_STATE,
        routes::SANDBOX_STAFF,
    ])
    .await
}
