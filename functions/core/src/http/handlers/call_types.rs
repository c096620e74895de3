//! `GET /api/v1/display/call-types` (spec 4.3): name → internal name.

use http::header;

use crate::app::AppState;
use crate::http::error::ApiError;
use crate::http::io::{ApiResponse, json_response};
use crate::wire::{CallTypeNames, success};

/// How long clients and caches may keep the list (DECISIONS §4).
const CACHE_CONTROL: &str = "max-age=60";

pub(crate) async fn list(state: &AppState) -> Result<ApiResponse, ApiError> {
    let types = state.call_types().await?;
    let mut response = json_response(200, success(&CallTypeNames(&types)));
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static(CACHE_CONTROL),
    );
    Ok(response)
}
