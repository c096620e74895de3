//! Events kept in the outbox on their own (DECISIONS §16, §19): a silent
//! central system's `consumer.silent` and `consumer.back`, whose change (the
//! silence) the link store keeps ([`crate::store::links`]). Kept right
//! after that change: a process that stops between the two loses the
//! event, never the silence, which the displays, staff pages and Technik
//! still learn of from the store.

use async_trait::async_trait;

use crate::domain::webhooks::outbox::OutboxEvent;
use crate::store::StoreError;

/// Keeps events that belong to no call's or element's write.
#[async_trait]
pub trait EventOutbox: Send + Sync {
    /// Keeps `events` in the outbox, in their order, in one write; a store
    /// may leave them out while no endpoint is enabled, as it does a
    /// write's events.
    async fn keep_events(&self, events: &[OutboxEvent]) -> Result<(), StoreError>;
}
