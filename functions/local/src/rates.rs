//! Rates (DECISIONS §20): the local server limits, per client address, the
//! requests that no secret or token authenticates, so that a flood of them
//! costs little and never answers a central system's signed call with 429.
//!
//! - **Open requests** (the pages, their files, the interface document,
//!   the call types, the sandbox's consumer creation, unknown paths) need
//!   nothing to be answered: each takes one from its address's budget
//!   before it is served, and over it gets 429 at once.
//! - **Every other request** (signed ingestion, a token's or the sandbox
//!   visitor's reads) is served first: only the door knows whether its
//!   signature or token is good (checking an HMAC costs microseconds). One
//!   it let in ([`Authenticated`]) costs nothing, whatever it is answered;
//!   one it refused (a wrong hash, an unknown token, a body that never got
//!   to the signature) takes one from the budget, and over it its answer
//!   becomes the 429. A valid signed request is never limited, also not
//!   from an address that floods.
//!
//! The budget is GCRA (`governor`): [`Rates::per_second`] a second, bursts of
//! [`Rates::burst`]; the 429 says in `Retry-After` (whole seconds, at least 1)
//! when the next is taken. Addresses not seen for a minute are forgotten.

use std::future::Future;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use nurse_call_core::{ApiError, Authenticated, Endpoint, error_response};

/// The budget of a client address (see the module).
pub(crate) struct Rates {
    limiter: DefaultKeyedRateLimiter<IpAddr>,
    clock: DefaultClock,
    pub(crate) per_second: NonZeroU32,
    pub(crate) burst: NonZeroU32,
}

impl Rates {
    pub(crate) const DEFAULT_PER_SECOND: &'static str = "20";
    pub(crate) const DEFAULT_BURST: &'static str = "40";

    pub(crate) fn new(per_second: NonZeroU32, burst: NonZeroU32) -> Arc<Self> {
        let quota = Quota::per_second(per_second).allow_burst(burst);
        Arc::new(Rates {
            limiter: RateLimiter::keyed(quota),
            clock: DefaultClock::default(),
            per_second,
            burst,
        })
    }

    /// Takes one request from `client`'s budget; over it, the whole
    /// seconds until one is taken again (at least 1).
    pub(crate) fn charge(&self, client: IpAddr) -> Result<(), u64> {
        self.limiter.check_key(&client).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
        })
    }

    /// Forgets, once a minute, the addresses whose budget is whole again:
    /// a flood from many addresses leaves no map behind.
    pub(crate) async fn forget_idle(self: Arc<Self>) {
        let mut tick = tokio::time::interval(Duration::from_secs(60));
        loop {
            tick.tick().await;
            self.limiter.retain_recent();
            self.limiter.shrink_to_fit();
        }
    }
}

/// `serve`s `request` within `client`'s rate (see the module): an open
/// request is charged before it is served, any other after, unless the
/// door let it in by its secret or token; over the rate, 429
/// `too_many_requests` with `Retry-After`.
pub(crate) async fn within<F>(
    rates: Arc<Rates>,
    client: IpAddr,
    mut request: Request,
    serve: impl FnOnce(Request) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    let open = is_open(request.uri().path());
    if open && let Err(seconds) = rates.charge(client) {
        return too_many(seconds);
    }
    let authenticated = Authenticated::default();
    request.extensions_mut().insert(authenticated.clone());
    let response = serve(request).await;
    if !open
        && !authenticated.is_set()
        && let Err(seconds) = rates.charge(client)
    {
        return too_many(seconds);
    }
    response
}

/// The 429 of a client over its rate; logged at debug only (a flood must
/// not flood the log).
fn too_many(seconds: u64) -> Response {
    tracing::debug!(retry_after = seconds, "request over its address's rate");
    error_response(&ApiError::TooManyRequests(seconds)).map(Body::from)
}

/// Whether a request to `path` is answered without any secret or token
/// (see the module): charged before it is served.
pub(crate) fn is_open(path: &str) -> bool {
    match Endpoint::from_path(path) {
        None => true,
        Some(endpoint) => matches!(
            endpoint,
            Endpoint::TestPage
                | Endpoint::DisplayPage
                | Endpoint::StaffPage
                | Endpoint::StaffManifest
                | Endpoint::StaffServiceWorker
                | Endpoint::OpenApi
                | Endpoint::CallTypes
                | Endpoint::SandboxConsumers
        ),
    }
}

/// A rate of 1 or more (`RATE_PER_SECOND`, `RATE_BURST`).
pub(crate) fn parse_rate(text: &str) -> Result<NonZeroU32, String> {
    text.trim()
        .parse::<NonZeroU32>()
        .ok()
        .filter(|n| n.get() <= 1_000_000)
        .ok_or_else(|| format!("a whole number from 1 to 1000000, not {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_429_with_the_seconds_to_wait() {
        let rates = Rates::new(parse_rate("1").unwrap(), parse_rate("3").unwrap());
        let (me, other) = (IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2]));
        for _ in 0..3 {
            assert_eq!(rates.charge(me), Ok(()));
        }
        assert_eq!(rates.charge(me), Err(1), "over the burst");
        assert_eq!(rates.charge(other), Ok(()), "another address has its own");
    }

    #[test]
    fn pages_and_unknown_paths_are_open_signed_and_token_routes_are_not() {
        for path in [
            "/",
            "/display",
            "/staff",
            "/staff/sw.js",
            "/nowhere",
            "/api/v1/sandbox/consumers",
        ] {
            assert!(is_open(path), "{path}");
        }
        for path in [
            "/api/v1/display",
            "/api/v1/element",
            "/api/v1/response",
            "/api/v1/staff/me",
            "/api/v1/display/calls",
        ] {
            assert!(!is_open(path), "{path}");
        }
    }

    #[test]
    fn rates_are_whole_and_positive() {
        assert_eq!(parse_rate("20").unwrap().get(), 20);
        for text in ["0", "-1", "1.5", "viele", ""] {
            assert!(parse_rate(text).is_err(), "{text}");
        }
    }
}
