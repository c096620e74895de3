//! Web Push for the staff's phones (DECISIONS §15): the adapter around the
//! alarm engine that brings each alert, re-alert and cancel to the
//! browsers a staff member registered, even with the page closed and the
//! screen locked.
//!
//! - [`keys`]: the installation's VAPID key pair, made once and kept;
//! - [`request`]: one push as an HTTP request, encrypted for the browser
//!   (RFC 8291) and signed with the installation's VAPID key (RFC 8292) by
//!   `web-push-native`, with `TTL` 60, `Urgency: high` and the call as
//!   `Topic`;
//! - [`queue`]: the [`Pusher`], which takes the engine's push jobs without
//!   waiting (`PushSink`), keeps each person's pushes about a call in order,
//!   retries and removes gone subscriptions;
//! - [`delivery_queue`]: the same Pusher behind the AWS `deliver`
//!   function, fed by the delivery queue (DECISIONS §17);
//! - [`webhook_sender`]: the webhooks' HTTP client (DECISIONS §16), which
//!   the local server's dispatcher and the `forward` function share, and
//!   its [`public_resolver`], which keeps it off the home's network unless
//!   an endpoint may go there (DECISIONS §20).
//!
//! The jobs come from `nurse_call_core` after a step is written;
//! the subscriptions and the key pair from the store
//! (`nurse_call_core::PushStore`).

pub mod delivery_queue;
pub mod keys;
pub mod public_resolver;
pub mod queue;
pub mod request;
pub mod tls;
pub mod webhook_sender;

pub use queue::Pusher;
