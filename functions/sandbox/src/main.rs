//! Lambda function of the test server (sandbox stacks only): `GET /`,
//! `POST /api/v1/sandbox/consumers`, `GET /api/v1/sandbox/state` and
//! `POST /api/v1/sandbox/staff`.

use nurse_call_core::Endpoint;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_support::run(&[
        Endpoint::TestPage,
        Endpoint::SandboxConsumers,
        Endpoint::SandboxState,
        Endpoint::SandboxStaff,
    ])
    .await
}
