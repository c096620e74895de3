//! What the Lambda functions share, each part behind the feature of the
//! functions that use it (so that a zip links only its own runner):
//!
//! - [`batch`]: the records of a stream's or a queue's batch event, each
//!   read on its own (no feature: the libraries that handle the events use
//!   it, and need nothing else from here);
//! - `http`: the HTTP functions' runner ([`run`]) and request glue;
//! - `events`: the event functions' runner ([`run_events`]).

pub mod batch;
#[cfg(feature = "events")]
mod events;
#[cfg(feature = "http")]
mod http_api;

#[cfg(feature = "events")]
pub use events::{Error, LambdaEvent, run_events};
#[cfg(feature = "http")]
pub use http_api::{ANSWER_MARGIN, handle, ready_state, run};
