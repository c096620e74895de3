//! Events kept on their own (`nurse_call_core::EventOutbox`): a silent
//! central system's `consumer.silent` and `consumer.back` (DECISIONS §19),
//! one transaction of their outbox items, only while an endpoint is enabled
//! ([`crate::webhook_gate`]), as a write's events.

use async_trait::async_trait;

use nurse_call_core::{EventOutbox, StoreError, webhooks::outbox::OutboxEvent};

use crate::DynamoStore;
use crate::transaction::Transaction;

#[async_trait]
impl EventOutbox for DynamoStore {
    async fn keep_events(&self, events: &[OutboxEvent]) -> Result<(), StoreError> {
        let events = self.webhook_events_to_keep(events.to_vec()).await;
        if events.is_empty() {
            return Ok(());
        }
        let items = self.outbox_puts(&events, self.outbox_stamp(), 0)?;
        match self.transact(items).await? {
            Transaction::Committed => Ok(()),
            Transaction::Cancelled(reasons) => Err(StoreError::Internal(format!(
                "outbox events not kept: {reasons:?}"
            ))),
        }
    }
}
