//! What the service is about, in plain data and pure functions: calls,
//! elements, call types, consumers and displays ([`model`]), the seeded call
//! types ([`call_types`]), times as the wire shows them and the clock
//! ([`wire_time`]), elements that need a technician ([`supervision`]), the
//! quality report ([`report`]) and what a line of kept text may be, as the
//! API and the admin command check it ([`text`]); hand-edited items as stored
//! ([`raw`]) and what the service makes of them: call types with their
//! fail-safe fallbacks ([`call_type_items`]), consumers and displays
//! ([`credentials`]); alarm routing ([`alarm`]) and the outbound webhooks'
//! events, endpoints, retries and signatures ([`webhooks`]); the staff's
//! browsers' Web Push subscriptions and the installation's VAPID keys
//! ([`push`]), the push services they may point at ([`push_services`]) and
//! what their receipts tell of each of them ([`device`]); the supervised
//! links of central systems, their heartbeats and silences ([`links`]). Nothing here
//! reads a store or speaks HTTP.

pub(crate) mod alarm;
pub(crate) mod call_type_items;
pub(crate) mod call_types;
pub mod credentials;
pub(crate) mod device;
pub(crate) mod links;
pub(crate) mod model;
pub(crate) mod push;
pub(crate) mod push_services;
pub(crate) mod raw;
pub mod report;
pub(crate) mod silence;
pub(crate) mod supervision;
pub(crate) mod text;
pub(crate) mod webhooks;
pub mod wire_time;
