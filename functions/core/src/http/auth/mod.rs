//! Who is asking: the one door every request passes before a handler acts
//! (DECISIONS §2, §8, §11, §14). Each function here takes what a request
//! presents and returns who it is, or the documented refusal; no handler
//! decides identity on its own.
//!
//! - [`consumer`]: a central system, by its signature (step 3 of §2's
//!   checks) and the replay rule; the sandbox explains a hash mismatch.
//! - [`display_reader`] and [`live_reader`]: a display by its bearer token,
//!   on the live socket also a staff member by theirs, and in sandbox mode
//!   the test page's visitor ([`Reader`]).
//! - [`staff`]: a staff member by their bearer token (the staff API).
//! - [`sandbox_visitor`]: the test page's visitor, by the cookie or the
//!   proof in the query (the sandbox's own endpoints).
//!
//! Tokens are looked up by their SHA-256 ([`crate::signing::tokens`]) and
//! never reach a log: refusals are logged by the id of whom they name.
//! Missing, unknown and revoked tokens are all the same 401.

mod consumer;
mod reader;
mod staff;
mod visitor;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use http::{HeaderMap, header};

use crate::http::io::ApiRequest;

pub(crate) use consumer::consumer;
pub(crate) use reader::display_reader;
pub use reader::{Reader, SandboxProof, live_reader, live_token_holds};
pub(crate) use staff::staff;
pub use visitor::proof;
pub(crate) use visitor::{COOKIE_NAME, consumer_from_cookie, sandbox_visitor};

/// Whether the door let a request in by its secret or token: a server that
/// limits the requests nobody authenticates (the local server, DECISIONS
/// §20) puts one into the request's extensions before serving it and reads
/// it after. Where there is none (Lambda), marking does nothing.
#[derive(Debug, Clone, Default)]
pub struct Authenticated(Arc<AtomicBool>);

impl Authenticated {
    /// Whether the request's secret or token was good.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Marks `request` as let in by its secret or token.
    pub(crate) fn mark(request: &ApiRequest) {
        if let Some(flag) = request.extensions().get::<Authenticated>() {
            flag.0.store(true, Ordering::Relaxed);
        }
    }
}

/// The bearer token of `Authorization: Bearer <token>`, if any.
pub(crate) fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|token| !token.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_token_is_read_case_insensitively_and_never_empty() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer_token(&headers), None);
        headers.insert(header::AUTHORIZATION, "bearer abc".parse().unwrap());
        assert_eq!(bearer_token(&headers), Some("abc"));
        headers.insert(header::AUTHORIZATION, "Bearer ".parse().unwrap());
        assert_eq!(bearer_token(&headers), None);
        headers.insert(header::AUTHORIZATION, "Basic abc".parse().unwrap());
        assert_eq!(bearer_token(&headers), None);
    }
}
