//! Lambda function behind the staff endpoints (DECISIONS §14):
//! `GET /api/v1/staff/me`, `PUT`/`DELETE /api/v1/staff/duty`,
//! `GET /api/v1/staff/calls` and `POST /api/v1/staff/calls/{id}/responses`
//! (the alarm servers' signed responses, `POST /api/v1/response`, are the
//! `display` function's: a signed request, and this zip has no room). The receipts of the staff's
//! phones and pages, `POST /api/v1/staff/receipts` (DECISIONS §18): the
//! same alarm, read and written as a response. (The staff page itself and
//! the phones' Web Push registration are the `call-types` function's: this
//! zip has no room for them.)

use nurse_call_core::routes;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_support::run(&[
        routes::STAFF_ME,
        routes::STAFF_DUTY,
        routes::STAFF_CALLS,
        routes::STAFF_RESPONSES,
        routes::STAFF_RECEIPTS,
        routes::STAFF_DEVICE_TESTS,
    ])
    .await
}
