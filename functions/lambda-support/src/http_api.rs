//! The glue between `lambda_http` and the shared handlers: each HTTP
//! function's `main` is one call to [`run`] with its routes (only those
//! handlers are linked into the function: [`nurse_call_core::routes`]).
//!
//! State (store and settings) is built once per cold start, its DynamoDB
//! connection opened during init, and shared by reference across
//! invocations. The handler always returns a response:
//! `lambda_http` would turn an `Err` into a bare 500 without our error body.

use std::future::Future;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use lambda_http::{Body, Error, Request, RequestExt, Response, service_fn};

use nurse_call_core::{
    ApiError, ApiResponse, AppState, Mode, Route, Settings, error_response, logging, serve_only,
};
use nurse_call_wiring::warm_up::{WarmUp, warm_store};
use nurse_call_wiring::{StoreChoice, lambda_state};

/// How long before the invocation's deadline a request still in the works
/// is answered 503 with `Retry-After` (DECISIONS §3): Lambda would end it at
/// the function's timeout, and API Gateway would answer a bare error of its
/// own instead. Enough to send the answer back.
pub const ANSWER_MARGIN: Duration = Duration::from_millis(500);

/// Serves `routes` (by path) until the Lambda runtime stops the process.
/// A path that is none of theirs gets the documented 404, a wrong method 405.
pub async fn run(routes: &'static [Route]) -> Result<(), Error> {
    logging::init();
    let state = build_state().await.inspect_err(|error| {
        tracing::error!(%error, "cold start failed");
    })?;
    let endpoints: Vec<_> = routes.iter().map(|route| route.endpoint).collect();
    tracing::info!(?endpoints, mode = %state.settings.mode, "function ready");
    let state = &state;
    lambda_http::run(service_fn(move |request: Request| async move {
        Ok::<_, std::convert::Infallible>(handle(state, routes, request).await)
    }))
    .await
}

/// One invocation: the API Gateway request in, the documented response out,
/// at the latest [`ANSWER_MARGIN`] before the invocation's deadline.
pub async fn handle(state: &AppState, routes: &[Route], request: Request) -> Response<Body> {
    let deadline = request
        .lambda_context_ref()
        .map(|context| context.deadline())
        .filter(|deadline| is_ahead(*deadline));
    let (method, path) = (request.method().clone(), request.uri().path().to_string());
    let (parts, body) = request.into_parts();
    let body = match body {
        Body::Empty => Bytes::new(),
        Body::Text(text) => Bytes::from(text),
        Body::Binary(bytes) => Bytes::from(bytes),
        // `Body` is non-exhaustive upstream; anything new is treated as empty.
        #[allow(unreachable_patterns)]
        _ => Bytes::new(),
    };
    let request = http::Request::from_parts(parts, body);
    let response = within(deadline, serve_only(state, routes, request)).await;
    if let Err(had) = &response {
        // The request's own log line never comes: its future was dropped.
        tracing::error!(
            method = %method,
            path,
            status = 503,
            had_ms = had.as_millis(),
            "request out of time: answered 503 before the function's timeout"
        );
    }
    response
        .unwrap_or_else(|_| error_response(&ApiError::ServiceUnavailable))
        .map(Body::from)
}

/// Whether an invocation's deadline leaves it time to work, as Lambda's
/// always does (its timeout, 10 s). An emulator may send something else:
/// `cargo lambda watch` 1.9.2 sends 600000 (ten minutes as a duration, where
/// Lambda sends epoch milliseconds), a time long past; such an invocation
/// is served without a deadline.
fn is_ahead(deadline: SystemTime) -> bool {
    deadline
        .duration_since(SystemTime::now())
        .is_ok_and(|left| left > ANSWER_MARGIN)
}

/// `serve`'s response, or, when it was given up [`ANSWER_MARGIN`] before
/// `deadline`, `Err` with the time it had from its start to the deadline. Whatever `serve` was
/// waiting for is dropped: a write under way may or may not land, like one
/// whose DynamoDB request timed out, and the client's retry is safe
/// (DECISIONS §1).
async fn within(
    deadline: Option<SystemTime>,
    serve: impl Future<Output = ApiResponse>,
) -> Result<ApiResponse, Duration> {
    let Some(deadline) = deadline else {
        return Ok(serve.await);
    };
    let left = deadline
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    tokio::time::timeout(left.saturating_sub(ANSWER_MARGIN), serve)
        .await
        .map_err(|_| left)
}

/// The store and settings from the environment (DECISIONS §10; closed calls
/// expire by TTL after `CALL_RETENTION_DAYS`). In AWS the
/// stack sets `SERVICE_MODE` and the table names; the default mode here is
/// production so that a function deployed without it never hands out sandbox
/// credentials. `DYNAMODB_ENDPOINT` points a function at moto in tests.
/// Call types and consumers are cached for 60 s (admin edits visible within it).
async fn build_state() -> Result<AppState, Error> {
    let settings = Settings::from_env(Mode::Production)?;
    Ok(ready_state(settings, StoreChoice::lambda_from_env())
        .await?
        .0)
}

/// The state on `choice`, its store's connection opened by a warm-up
/// request (bounded, never failing: [`nurse_call_wiring::warm_up`]), so that
/// the first request does not pay the TLS handshake at the function's CPU
/// share. Returns what became of the warm-up as well.
pub async fn ready_state(
    settings: Settings,
    choice: StoreChoice,
) -> Result<(AppState, WarmUp), Error> {
    let store = choice.open_service(settings.call_retention).await?;
    let state = lambda_state(store, settings);
    let warmed = warm_store(&state).await;
    Ok((state, warmed))
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[tokio::test]
    async fn a_request_out_of_time_is_503_with_retry_after_before_the_deadline() {
        let started = Instant::now();
        let work = Duration::from_millis(1000);
        let deadline = SystemTime::now() + ANSWER_MARGIN + work;
        let had = within(Some(deadline), std::future::pending())
            .await
            .expect_err("a request that never ends is given up");
        assert!(had <= ANSWER_MARGIN + work);
        // Given up when its time is spent, and before the deadline: the
        // margin is the tolerance a busy machine's late wake-up may take.
        let waited = started.elapsed();
        assert!(
            (work - Duration::from_millis(100)..ANSWER_MARGIN + work).contains(&waited),
            "given up after {waited:?}"
        );
        let response = error_response(&ApiError::ServiceUnavailable);
        assert_eq!(response.status(), 503);
        assert!(response.headers().contains_key("retry-after"));
    }

    #[test]
    fn only_a_deadline_ahead_is_one() {
        let now = SystemTime::now();
        assert!(is_ahead(now + Duration::from_secs(10)));
        assert!(!is_ahead(now + ANSWER_MARGIN / 2));
        // What `cargo lambda watch` sends.
        assert!(!is_ahead(
            SystemTime::UNIX_EPOCH + Duration::from_millis(600_000)
        ));
    }

    #[tokio::test]
    async fn a_request_in_time_and_one_without_a_deadline_are_served() {
        let deadline = SystemTime::now() + Duration::from_secs(5);
        let answer = || async { error_response(&ApiError::NotFound) };
        let served = within(Some(deadline), answer()).await.expect("in time");
        assert_eq!(served.status(), 404);
        let served = within(None, answer()).await.expect("no deadline");
        assert_eq!(served.status(), 404);
    }
}
