//! The glue between `lambda_http` and the shared handlers: each Lambda
//! function's `main` is one call to [`run`] with its endpoints.
//!
//! State (store and settings) is built once per cold start and shared by
//! reference across invocations. The handler always returns a response:
//! `lambda_http` would turn an `Err` into a bare 500 without our error body.

use bytes::Bytes;
use lambda_http::{Body, Error, Request, Response, service_fn};

use nurse_call_core::{AppState, Endpoint, Mode, Settings, logging, serve_only};
use nurse_call_wiring::{StoreChoice, lambda_state};

/// Serves `endpoints` (by path) until the Lambda runtime stops the process.
/// A path that is none of them gets the documented 404, a wrong method 405.
pub async fn run(endpoints: &'static [Endpoint]) -> Result<(), Error> {
    logging::init();
    let state = build_state().await.inspect_err(|error| {
        tracing::error!(%error, "cold start failed");
    })?;
    tracing::info!(?endpoints, mode = %state.settings.mode, "function ready");
    let state = &state;
    lambda_http::run(service_fn(move |request: Request| async move {
        Ok::<_, std::convert::Infallible>(handle(state, endpoints, request).await)
    }))
    .await
}

/// One invocation: the API Gateway request in, the documented response out.
pub async fn handle(state: &AppState, endpoints: &[Endpoint], request: Request) -> Response<Body> {
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
    serve_only(state, endpoints, request).await.map(Body::from)
}

/// The store and settings from the environment (DECISIONS §10; closed calls
/// expire by TTL after `CALL_RETENTION_DAYS`). In AWS the
/// stack sets `SERVICE_MODE` and the table names; the default mode here is
/// production so that a function deployed without it never hands out sandbox
/// credentials. `DYNAMODB_ENDPOINT` points a function at moto in tests.
/// Call types and consumers are cached for 60 s (admin edits visible within it).
async fn build_state() -> Result<AppState, Error> {
    let settings = Settings::from_env(Mode::Production)?;
    let choice = StoreChoice::lambda_from_env();
    let store = choice.open_service(settings.call_retention).await?;
    Ok(lambda_state(store, settings))
}
