//! `POST /api/v1/heartbeat` (DECISIONS §19): a central system with nothing
//! to send says it is alive. Every signed request is a sign of life
//! ([`crate::app::signs_of_life`]); this one is the request for when there
//! is nothing else.
//!
//! The answer's `next_before`: the time (wire time, the installation's
//! zone) before which the next request must come so that the consumer is
//! not silent: its last sign of life this process kept, plus 2 × its
//! interval and 10 s (this request's time, unless one of the last third of
//! the interval was kept already). `null` for a consumer without a heartbeat,
//! which may post it all the same.

use serde::Serialize;

use crate::app::{AppState, signs_of_life};
use crate::clock;
use crate::domain::wire_time::format_local;
use crate::http::auth;
use crate::http::error::ApiError;
use crate::http::io::{ApiRequest, ApiResponse, json_response};
use crate::request::heartbeat::parse_heartbeat;
use crate::wire::success;

#[derive(Serialize)]
struct Heartbeat {
    consumer: String,
    next_before: Option<String>,
}

pub(crate) async fn handle(
    state: &AppState,
    request: &ApiRequest,
) -> Result<ApiResponse, ApiError> {
    let envelope = super::envelope(request)?;
    let parsed = parse_heartbeat(&envelope)?;
    let consumer = auth::consumer(state, request, &parsed.credentials).await?;
    let now = clock::now();
    let next_before = signs_of_life::keep(state, &consumer, now).await;
    tracing::info!(
        consumer = %consumer.id,
        supervised = next_before.is_some(),
        "heartbeat"
    );
    let body = success(&Heartbeat {
        consumer: consumer.id.clone(),
        next_before: next_before.map(|at| format_local(at, state.settings.time_zone)),
    });
    Ok(json_response(200, body))
}
