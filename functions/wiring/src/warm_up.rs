//! Opening a Lambda function's connections during its init (issue 30).
//!
//! A cold start's first request to DynamoDB (or to the WebSocket API's
//! management API) opens the connection: DNS, TCP and the TLS handshake,
//! whose CPU work Lambda pays at the function's share of a vCPU (7 % at
//! 128 MB: the published lambda-perf figure for a Rust function's first SDK
//! request is ~745 ms cold, ~21 ms on a warmed connection). During init
//! Lambda gives the process a full burst of CPU, so each function sends a
//! request it needs anyway there, on the very client its handlers use: the
//! connection then sits in that client's pool for the first request.
//!
//! The warm-up never fails init and never holds it longer than its limit:
//! the request runs as a task of its own, init waits for it at most
//! [`WARM_UP_LIMIT`] and then goes on; a request still under way finishes in
//! the background (its connection still lands in the pool), one that fails
//! is logged and the first request connects as it would without a warm-up.
//!
//! Every function that talks to a service over HTTPS warms its client with
//! [`warm_up`]: the HTTP functions (`lambda-support`), `broadcast` and
//! `live-connect` (`nurse-call-live-aws`); the alarm functions
//! (docs/alarms.md) must do the same for SQS and the push and webhook
//! clients.

use std::fmt::Display;
use std::future::Future;
use std::time::{Duration, Instant};

use nurse_call_core::AppState;

/// How long init waits for a warm-up. In AWS the request takes a DNS
/// lookup, two or three round trips in the region and a handshake at full
/// CPU: some tens of milliseconds; more means something is wrong, and the
/// first request is then better off connecting itself than the function
/// waiting longer before it can take it.
pub const WARM_UP_LIMIT: Duration = Duration::from_millis(500);

/// What became of a warm-up by its limit (logged; returned for tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarmUp {
    /// The request was answered: the connection is open and pooled.
    Warmed,
    /// It failed (or its task panicked): the first request connects.
    Failed,
    /// Still under way at the limit: init went on without it.
    Pending,
}

/// Runs `request` (a request on the client to warm, `what` naming it in the
/// logs) and waits for it at most `limit`. Never fails: see the module.
pub async fn warm_up<T, E>(
    what: &'static str,
    limit: Duration,
    request: impl Future<Output = Result<T, E>> + Send + 'static,
) -> WarmUp
where
    T: Send + 'static,
    E: Display + Send + 'static,
{
    let started = Instant::now();
    let task = tokio::spawn(async move {
        let result = request.await.map(|_| ()).map_err(|e| e.to_string());
        let ms = started.elapsed().as_millis() as u64;
        // Within the limit the waiting side logs; after it only the task
        // knows how it ended.
        if started.elapsed() >= limit {
            match &result {
                Ok(()) => tracing::info!(what, ms, "warm-up done after init"),
                Err(error) => tracing::warn!(what, ms, %error, "warm-up failed after init"),
            }
        }
        result
    });
    let outcome = tokio::time::timeout(limit, task).await;
    let ms = started.elapsed().as_millis() as u64;
    match outcome {
        Ok(Ok(Ok(()))) => {
            tracing::info!(what, ms, "connection warmed");
            WarmUp::Warmed
        }
        Ok(Ok(Err(error))) => {
            tracing::warn!(what, ms, %error, "warm-up failed: the first request connects");
            WarmUp::Failed
        }
        Ok(Err(error)) => {
            tracing::warn!(what, ms, %error, "warm-up task failed: the first request connects");
            WarmUp::Failed
        }
        Err(_) => {
            tracing::warn!(
                what,
                ms,
                "warm-up still under way at its limit: init goes on"
            );
            WarmUp::Pending
        }
    }
}

/// Warms the state's store with the call types, which every function reads
/// (they land in the state's cache, so the first request that needs them
/// does not read them again).
pub async fn warm_store(state: &AppState) -> WarmUp {
    let state = state.clone();
    warm_up("DynamoDB", WARM_UP_LIMIT, async move {
        state.call_types().await
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failed_or_slow_request_never_holds_init_past_the_limit() {
        let limit = Duration::from_millis(100);
        let failed = warm_up("test", limit, async { Err::<(), _>("refused") }).await;
        assert_eq!(failed, WarmUp::Failed);

        let started = Instant::now();
        let slow = warm_up("test", limit, async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok::<_, String>(())
        })
        .await;
        assert_eq!(slow, WarmUp::Pending);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "waited for the request"
        );

        let panicked = warm_up("test", limit, async move {
            if limit > Duration::ZERO {
                panic!("a bug in the request");
            }
            Ok::<_, String>(())
        })
        .await;
        assert_eq!(panicked, WarmUp::Failed);

        let warmed = warm_up("test", limit, async { Ok::<_, String>(1) }).await;
        assert_eq!(warmed, WarmUp::Warmed);
    }
}
