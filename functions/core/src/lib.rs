//! The nurse-call service without any cloud types: what a request is, how it is
//! validated and signed, what calls and elements are, the `Store` trait that
//! persists them, and the HTTP handlers that every entry point (the Lambda
//! functions and the local server) shares.
//!
//! One folder per concern, each using only the ones listed before it:
//!
//! 1. [`domain`]: calls, elements, call types, consumers, displays and the
//!    sections they show, wire times, element supervision, the quality report
//!    and what a line of kept text may be; plain data and pure functions.
//! 2. [`config`]: the installation's settings (DECISIONS §10).
//! 3. [`wire`]: the JSON the service answers with, and the messages of the
//!    displays' live feed ([`wire::live`]).
//! 4. [`signing`]: what is signed and how it is checked; consumer secrets and
//!    the readers' bearer tokens (minted here, only their hash is stored).
//! 5. [`request`]: from a body to a validated request (the 422 catalogue).
//! 6. [`store`]: the `Store` trait the request path uses, the admin's and the
//!    sandbox's own traits, and the caching decorator.
//! 7. [`app`]: the state every handler gets (store, settings, live feed),
//!    whose data a consumer works on, and the element policy.
//! 8. [`http`]: who is asking (the one door, [`http::auth`]), errors and
//!    their bodies, the router and the routes (which handler serves which
//!    endpoint; a Lambda function links only its own), one handler per
//!    endpoint, the three pages' among them.
//!
//! [`logging`] sets up the structured JSON logs of every binary; [`clock`]
//! is where the time and fresh event ids come from (the domain takes them
//! as parameters).

pub mod app;
pub mod clock;
pub mod config;
pub mod domain;
pub mod http;
pub mod logging;
pub mod request;
pub mod signing;
pub mod store;
pub mod wire;

pub use app::AppState;
pub use config::{Mode, Settings};
pub use http::endpoint::Endpoint;
pub use http::router::{serve, serve_endpoint, serve_only, serve_route};
pub use http::routes::{self, Route};
pub use store::{Store, StoreError};
