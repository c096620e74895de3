//! Outbound webhooks for alarm servers, DECT and pager gateways (DECISIONS
//! §16), as plain data and pure functions: which events there are and how
//! their bodies look ([`event`]), the endpoints an admin registers and which
//! events each one wants ([`endpoint`]), when a delivery is tried again or
//! given up, and which of a call's deliveries may go next ([`schedule`]),
//! the Standard Webhooks headers of an attempt ([`signing`]), which
//! addresses an endpoint reaches only with `--private-network`
//! ([`private_network`]), and the
//! events a write of an alarm or a close puts in the outbox ([`outbox`]),
//! and when an element's need of attention is news ([`attention`]), both
//! keeping the facts of [`facts`].
//!
//! Nothing here sends, stores or reads a clock: the outbox, the dispatcher
//! and the delivery log (issue 27) sit around these, as the alarm runner
//! sits around the alarm engine.

pub(crate) mod attention;
pub(crate) mod endpoint;
pub(crate) mod event;
pub(crate) mod facts;
pub mod outbox;
pub(crate) mod private_network;
pub(crate) mod schedule;
pub(crate) mod signing;

pub use endpoint::{Endpoint, alerts_reach_handsets, check_url};
pub(crate) use event::Event;
pub use event::EventType;
pub use private_network::{is_private_address, is_private_literal, names_private_host};
pub use schedule::Outcome;
