//! The nurse-call service without any cloud types: what a request is, how it is
//! validated and signed, what calls and elements are, the `Store` trait that
//! persists them, and the HTTP handlers that every entry point (the Lambda
//! functions and the local server) shares.
//!
//! Read in this order: [`model`] (calls, elements, call types, consumers),
//! [`wire`] (the JSON the service speaks), [`compact`] and [`signature`]
//! (what is signed and how), [`validation`] (the 422 catalogue), [`store`]
//! (persistence), [`handlers`] (one module per endpoint) and [`router`].
//! The read side: [`displays`] (who may read), [`live`] (the messages of the
//! live feed) and [`supervision`] (elements that need attention).

pub mod admin;
pub mod cache;
pub mod call_types;
pub mod compact;
pub mod config;
pub mod display_page;
pub mod displays;
pub mod envelope;
pub mod error;
pub mod handlers;
pub mod http_io;
pub mod live;
pub mod logging;
pub mod model;
pub mod replay;
pub mod report;
pub mod requests;
pub mod router;
pub mod sandbox;
pub mod signature;
pub mod state;
pub mod store;
pub mod supervision;
pub mod validation;
pub mod wire;
pub mod wire_time;

pub use config::{Mode, Settings};
pub use router::{Endpoint, serve, serve_endpoint};
pub use state::AppState;
pub use store::{Store, StoreError};
