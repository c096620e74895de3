//! The test server (spec 5.3, DECISIONS §8): visitors get a consumer and secret,
//! kept in a cookie, and watch their own calls and elements live; they may
//! create staff of their own scope to try alarm routing (`sandbox_staff.rs`,
//! DECISIONS §14).
//!
//! The cookie holds the consumer id and a proof, HMAC-SHA256 of the id keyed by
//! the secret: the same proof `GET /api/v1/sandbox/state?consumer=…&hash=…`
//! takes. The secret itself never travels in a cookie.
//!
//! Three files: who the visitor is ([`identity`]: the consumer, its cookie
//! and proof), the sandbox's endpoints ([`endpoints`]: a new pair, the
//! state, the page's answer) and the page itself ([`test_page`]: its examples,
//! rendered for the visitor).

mod endpoints;
mod identity;
mod test_page;

pub use endpoints::{create_consumer, page, state};
pub use identity::{COOKIE_NAME, consumer_by_proof, new_consumer, proof};
pub(crate) use identity::{consumer_from_cookie, visitor};
pub(crate) use test_page::escape_html;
