//! Serving a request by its endpoint ([`crate::http::endpoint`]), and the
//! one place where an [`ApiError`] becomes its documented response: also
//! the 404 of a path that is no endpoint (or not this function's) and the
//! 413 of a body too large to read. The Lambda functions call
//! [`serve_only`] with their own routes ([`crate::http::routes`]); the local
//! server calls [`serve`] for every path and [`unreadable_body`] when it
//! stopped reading a body.

use std::time::Instant;

use crate::app::AppState;
use crate::http::endpoint::Endpoint;
use crate::http::error::ApiError;
use crate::http::io::{ApiRequest, ApiResponse, MAX_BODY_BYTES, error_response};
use crate::http::routes::{self, Route};

/// Serves any path: 404 for unknown paths (and sandbox paths in production).
pub async fn serve(state: &AppState, request: ApiRequest) -> ApiResponse {
    serve_only(state, &routes::ALL, request).await
}

/// Serves `request` when its path is one of `routes`' endpoints (a Lambda
/// function's own); any other path is the documented 404, as if it did not
/// exist.
pub async fn serve_only(state: &AppState, routes: &[Route], request: ApiRequest) -> ApiResponse {
    // DECISIONS §3 step 1, before the path: a body over the limit is 413
    // whatever it was sent to. The local server stops reading such a body
    // ([`unreadable_body`]); API Gateway hands a Lambda function up to 10 MB.
    if request.body().len() > MAX_BODY_BYTES {
        return refuse(&request, &ApiError::PayloadTooLarge);
    }
    let endpoint = Endpoint::from_path(request.uri().path());
    match routes.iter().find(|route| Some(route.endpoint) == endpoint) {
        Some(route) => serve_route(state, *route, request).await,
        None => refuse(&request, &ApiError::NotFound),
    }
}

/// The answer to a request whose body the server stopped reading: 413 when
/// it was over [`crate::http::io::MAX_BODY_BYTES`], else 400 (it ended
/// before its announced length). `request` carries no body.
pub fn unreadable_body(request: &ApiRequest, too_large: bool) -> ApiResponse {
    let error = if too_large {
        ApiError::PayloadTooLarge
    } else {
        ApiError::Malformed(UNREADABLE_BODY.to_string())
    };
    refuse(request, &error)
}

/// The 400 for a body that could not be read to its end.
const UNREADABLE_BODY: &str = "Der Anfragekörper konnte nicht vollständig gelesen werden.";

/// Answers `error` before any handler ran, logged like every answer.
fn refuse(request: &ApiRequest, error: &ApiError) -> ApiResponse {
    let response = error_response(error);
    log(request, &response, Instant::now());
    response
}

/// Serves one endpoint whatever the path: what [`serve_route`] does with
/// the endpoint's route (for tests and benchmarks).
pub async fn serve_endpoint(
    state: &AppState,
    endpoint: Endpoint,
    request: ApiRequest,
) -> ApiResponse {
    serve_route(state, Route::of(endpoint), request).await
}

/// Serves one route: 405 for another method, else its handler; every error
/// becomes its documented body.
pub async fn serve_route(state: &AppState, route: Route, request: ApiRequest) -> ApiResponse {
    let started = Instant::now();
    let endpoint = route.endpoint;
    let result = if endpoint.sandbox_only() && !state.is_sandbox() {
        Err(ApiError::NotFound)
    } else if !endpoint.methods().contains(request.method()) {
        Err(ApiError::MethodNotAllowed(endpoint.allow_header()))
    } else {
        (route.handler)(state, &request).await
    };
    let response = result.unwrap_or_else(|error| error_response(&error));
    log(&request, &response, started);
    response
}

fn log(request: &ApiRequest, response: &ApiResponse, started: Instant) {
    let status = response.status().as_u16();
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    if status >= 500 {
        tracing::error!(method = %request.method(), path = request.uri().path(), status, elapsed_ms, "request");
    } else {
        tracing::info!(method = %request.method(), path = request.uri().path(), status, elapsed_ms, "request");
    }
}
