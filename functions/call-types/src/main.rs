//! Lambda function behind the reads without credentials: `GET
//! /api/v1/display/call-types`, the interface document `GET
//! /api/v1/openapi.json`, and the staff page (DECISIONS §15): `GET /staff`,
//! its manifest and its service worker. The page is here rather than in the
//! `staff` function, whose zip it would take over the 3 MB budget (issue
//! 45): it reads nothing but the settings.

use nurse_call_core::routes;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_support::run(&[
        routes::CALL_TYPES,
        routes::OPEN_API,
        routes::STAFF_PAGE,
        routes::STAFF_MANIFEST,
        routes::STAFF_SERVICE_WORKER,
    ])
    .await
}
