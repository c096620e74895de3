//! The event functions' runner (alarm, deliver, forward, broadcast): each
//! `main` is one call to [`run_events`] with how its handler is built and
//! how it takes one invocation's typed event.

use std::convert::Infallible;
use std::fmt::Display;
use std::future::Future;

use lambda_runtime::service_fn;
pub use lambda_runtime::{Error, LambdaEvent};
use serde::Serialize;
use serde::de::DeserializeOwned;

use nurse_call_core::logging;

/// Starts the logs, builds the function's handler once per cold start
/// (logging `cold start failed` and failing the init when it cannot be
/// built), and hands every invocation's event `E` to `handle` until the
/// Lambda runtime stops the process. The answer `R` is the invocation's
/// response (for a batch, Lambda's partial batch response): `handle` never
/// fails an invocation, so that Lambda never retries a whole batch for one
/// record (a record the handler could not take is in its answer).
pub async fn run_events<H, E, R, B, Fut>(
    build: impl Future<Output = Result<H, B>>,
    handle: impl Fn(&'static H, LambdaEvent<E>) -> Fut,
) -> Result<(), Error>
where
    H: 'static,
    E: DeserializeOwned,
    R: Serialize,
    B: Display + Into<Error>,
    Fut: Future<Output = R>,
{
    logging::init();
    let handler = build
        .await
        .inspect_err(|error| tracing::error!(%error, "cold start failed"))
        .map_err(Into::into)?;
    tracing::info!("function ready");
    // Every invocation borrows the handler; it lives as long as the
    // process, which ends with the runtime's loop.
    let handler: &'static H = Box::leak(Box::new(handler));
    lambda_runtime::run(service_fn(move |event: LambdaEvent<E>| {
        let answer = handle(handler, event);
        async move { Ok::<R, Infallible>(answer.await) }
    }))
    .await
}
