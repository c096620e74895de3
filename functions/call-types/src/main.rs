//! Lambda function behind the reads without credentials: `GET
//! /api/v1/display/call-types`, the interface document `GET
//! /api/v1/openapi.json`, and the staff page (DECISIONS §15): `GET /staff`,
//! its manifest and its service worker. The page is here rather than in the
//! `staff` function, whose zip it would take over the 3 MB budget (issue
//! 45): it reads nothing but the settings. And, for the same reason (issue
//! 47), the staff's phones' Web Push registration (DECISIONS §15): `GET
//! /api/v1/staff/push-key`, `POST`/`DELETE /api/v1/staff/push-subscriptions`,
//! with the staff token (the one door decides, as in every function).

use nurse_call_core::routes;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_support::run(&[
        routes::CALL_TYPES,
        routes::OPEN_API,
        routes::STAFF_PAGE,
        routes::STAFF_MANIFEST,
        routes::STAFF_SERVICE_WORKER,
        routes::STAFF_PUSH_KEY,
        routes::STAFF_PUSH_SUBSCRIPTIONS,
    ])
    .await
}
