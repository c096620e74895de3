//! Lambda function behind the staff endpoints (DECISIONS §14):
//! `GET /api/v1/staff/me`, `PUT`/`DELETE /api/v1/staff/duty`,
//! `GET /api/v1/staff/calls` and `POST /api/v1/staff/calls/{id}/responses`.

use nurse_call_core::Endpoint;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_support::run(&[
        Endpoint::StaffMe,
        Endpoint::StaffDuty,
        Endpoint::StaffCalls,
        Endpoint::StaffResponses,
    ])
    .await
}
