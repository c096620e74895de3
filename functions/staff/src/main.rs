//! Lambda function behind the staff endpoints (DECISIONS §14):
//! `GET /api/v1/staff/me`, `PUT`/`DELETE /api/v1/staff/duty`,
//! `GET /api/v1/staff/calls` and `POST /api/v1/staff/calls/{id}/responses`;
//! and the alarm servers' signed responses, `POST /api/v1/response`
//! (DECISIONS §16): the same response path with another sender, so the
//! same function and the same store access. The receipts of the staff's
//! phones and pages, `POST /api/v1/staff/receipts` (DECISIONS §18): the
//! same alarm, read and written as a response. And the staff's phones'
//! Web Push registration (DECISIONS §15): `GET /api/v1/staff/push-key`,
//! `POST`/`DELETE /api/v1/staff/push-subscriptions`. (The staff page itself
//! is the `call-types` function's: this zip has no room for it.)

use nurse_call_core::routes;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_support::run(&[
        routes::STAFF_ME,
        routes::STAFF_DUTY,
        routes::STAFF_CALLS,
        routes::STAFF_RESPONSES,
        routes::ALARM_RESPONSE,
        routes::STAFF_RECEIPTS,
        routes::STAFF_DEVICE_TESTS,
        routes::STAFF_PUSH_KEY,
        routes::STAFF_PUSH_SUBSCRIPTIONS,
    ])
    .await
}
