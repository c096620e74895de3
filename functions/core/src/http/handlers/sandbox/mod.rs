//! The test server (spec 5.3, DECISIONS §8): visitors get a consumer and secret,
//! kept in a cookie, and watch their own calls and elements live; they may
//! create staff of their own scope to try alarm routing
//! ([`super::sandbox_staff`], DECISIONS §14).
//!
//! The cookie holds the consumer id and a proof, HMAC-SHA256 of the id keyed by
//! the secret: the same proof `GET /api/v1/sandbox/state?consumer=…&hash=…`
//! takes. The secret itself never travels in a cookie.
//!
//! Who a visitor's request is from is decided at the one door
//! ([`crate::http::auth`]). Three files here: a new visitor ([`identity`]:
//! the consumer made on the first visit, its cookie), the sandbox's endpoints ([`endpoints`]: a new pair, the
//! state, the page's answer) and the page itself ([`test_page`]: its examples,
//! rendered for the visitor).

mod endpoints;
mod identity;
mod test_page;

pub(crate) use endpoints::{create_consumer, page, state};
pub use identity::new_sandbox_consumer;
