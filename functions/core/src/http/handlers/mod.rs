//! One module per endpoint. Each handler takes the request and the state and
//! returns a response or an [`ApiError`]; the router turns the error into its
//! documented body, so no caller ever sees a bare 500. Who is asking is
//! decided by [`crate::http::auth`] before a handler acts.
//!
//! Beside the API's endpoints, the three pages' (each with endpoints of its
//! own): the sandbox's test page ([`sandbox`], its visitors' staff in
//! [`sandbox_staff`]), the corridor display ([`display_page`]) and the
//! staff's phone app ([`staff_page`]).

pub(crate) mod alarm_response;
pub(crate) mod call_types;
pub(crate) mod display;
pub(crate) mod display_page;
pub(crate) mod display_read;
pub(crate) mod element;
pub(crate) mod heartbeat;
pub(crate) mod openapi;
pub(crate) mod sandbox;
pub(crate) mod sandbox_staff;
pub(crate) mod staff;
pub(crate) mod staff_calls;
pub(crate) mod staff_devices;
pub(crate) mod staff_page;
pub(crate) mod staff_push;
pub(crate) mod staff_receipts;

use crate::app::{AppState, signs_of_life};
use crate::clock;
use crate::domain::model::Consumer;
use crate::http::auth;
use crate::http::error::ApiError;
use crate::http::io::{ApiRequest, json_body};
use crate::request::envelope::Envelope;
use crate::signing::credentials::Credentials;

/// Step 3 of the checks for a central system's request, and its sign of
/// life once verified (DECISIONS §19, [`signs_of_life`]): a consumer
/// with a heartbeat is alive, whatever its request then asks.
pub(crate) async fn signed_consumer(
    state: &AppState,
    request: &ApiRequest,
    credentials: &Credentials,
) -> Result<Consumer, ApiError> {
    let consumer = auth::consumer(state, request, credentials).await?;
    signs_of_life::keep(state, &consumer, clock::now()).await;
    Ok(consumer)
}

/// Step 1 of the checks: size, content type, UTF-8, a JSON object.
pub(crate) fn envelope(request: &ApiRequest) -> Result<Envelope, ApiError> {
    let body = json_body(request)?;
    Envelope::parse(body).map_err(|malformed| ApiError::Malformed(malformed.0))
}
