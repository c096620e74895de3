//! Whether this store's writes keep webhook events (DECISIONS §16): only
//! while an endpoint is enabled, as this process last read the endpoints,
//! at most [`SEEN_WITHIN`] ago.
//!
//! Why not always: every event is an item of the size of its call record,
//! put in the write's own transaction and deleted again; an installation
//! without an alarm server (most of them) would pay those writes on every
//! alarm step for nothing, and an outbox nobody reads grows until its TTL.
//! Why not per write: a transaction cannot read, and a read before every
//! alarm write would add a round trip to it. So a writer learns of another
//! process's new or re-enabled endpoint within [`SEEN_WITHIN`] (this
//! process's own edits at once); changes in that moment may not reach it
//! (docs/webhooks.md says so). When the endpoints cannot be read, the
//! events are kept: rather one too many than an alarm server left out.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use nurse_call_core::{WebhookStore, webhooks::outbox::OutboxEvent};

use crate::DynamoStore;

/// How old the answer "is any endpoint enabled?" may be.
pub const SEEN_WITHIN: Duration = Duration::from_secs(1);

/// The last answer and when it was read (shared by a store's clones).
#[derive(Debug, Default)]
pub(crate) struct WebhookGate {
    last: Mutex<Option<(Instant, bool)>>,
}

impl WebhookGate {
    fn known(&self) -> Option<bool> {
        let last = *self.last.lock().expect("webhook gate");
        last.filter(|(at, _)| at.elapsed() < SEEN_WITHIN)
            .map(|(_, enabled)| enabled)
    }

    fn remember(&self, enabled: Option<bool>) {
        *self.last.lock().expect("webhook gate") = enabled.map(|enabled| (Instant::now(), enabled));
    }
}

impl DynamoStore {
    /// Whether a write now keeps its webhook events (see the module).
    async fn webhook_events_wanted(&self) -> bool {
        if let Some(enabled) = self.webhook_gate.known() {
            return enabled;
        }
        // `endpoints` remembers what it read.
        match self.endpoints().await {
            Ok(endpoints) => endpoints.iter().any(|endpoint| !endpoint.disabled),
            Err(error) => {
                tracing::warn!(
                    %error,
                    "webhook endpoints unreadable: this write keeps its webhook events"
                );
                true
            }
        }
    }

    /// `events` if a write now keeps them (see the module), else none; the
    /// endpoints are asked only when there is something to keep.
    pub(crate) async fn webhook_events_to_keep(
        &self,
        events: Vec<OutboxEvent>,
    ) -> Vec<OutboxEvent> {
        if events.is_empty() || !self.webhook_events_wanted().await {
            return Vec::new();
        }
        events
    }

    /// This process read or changed the endpoints: `Some(enabled)` what
    /// holds now, `None` read them again before the next write.
    pub(crate) fn webhook_endpoints_changed(&self, enabled: Option<bool>) {
        self.webhook_gate.remember(enabled);
    }
}
