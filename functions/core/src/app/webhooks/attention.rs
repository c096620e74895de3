//! The dispatcher's sweep for `element.attention` (DECISIONS §12, §16):
//! every [`ATTENTION_EVERY`], while an enabled endpoint wants that event,
//! the installation's elements are compared with what was last announced
//! for each (`domain::webhooks::attention`); news is kept in the outbox
//! with the element's new mark in one atomic step, and goes out with the
//! next round like any event. A sweep that fails is tried again at the
//! next round: what it did not write is still news then.

use chrono::{DateTime, Utc};

use super::*;
use crate::clock;
use crate::domain::model::Scope;
use crate::domain::webhooks::EventType;
use crate::domain::webhooks::attention::attention_changes;

/// How often the elements are looked at: a battery going low is a
/// technician's matter of hours, and silence (`stale`) of a day.
pub(crate) const ATTENTION_EVERY: chrono::Duration = chrono::Duration::seconds(10);

impl Dispatcher {
    /// Sweeps when due and wanted.
    pub(super) async fn sweep_attention_when_due(
        &self,
        endpoints: &[Endpoint],
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let wanted = endpoints
            .iter()
            .any(|e| e.wants_kind(EventType::ElementAttention, None));
        {
            let mut memory = self.memory.lock().expect("dispatcher memory");
            let due = memory
                .attention_swept_at
                .is_none_or(|at| now - at >= ATTENTION_EVERY || now < at);
            if !wanted || !due {
                return Ok(());
            }
            memory.attention_swept_at = Some(now);
        }
        let result = self.sweep_attention(now).await;
        if result.is_err() {
            // Again at the next round.
            self.memory
                .lock()
                .expect("dispatcher memory")
                .attention_swept_at = None;
        }
        result
    }

    async fn sweep_attention(&self, now: DateTime<Utc>) -> Result<(), StoreError> {
        let elements = self.store.elements(&Scope::installation()).await?;
        let marks = self.store.attention_marks().await?;
        for change in attention_changes(
            &elements,
            &marks,
            now,
            &self.supervision,
            clock::new_event_id,
        ) {
            let moved = self.store.mark_attention(&change).await?;
            match (&change.event, moved) {
                (Some(event), true) => tracing::info!(
                    event_id = %event.id,
                    address = %change.address,
                    reasons = ?change.after,
                    "element needs attention: element.attention kept for the endpoints"
                ),
                (None, true) => tracing::info!(
                    address = %change.address,
                    reasons = ?change.after,
                    "element needs less attention than announced"
                ),
                (_, false) => tracing::debug!(
                    address = %change.address,
                    "attention mark moved by another process first"
                ),
            }
        }
        Ok(())
    }
}
