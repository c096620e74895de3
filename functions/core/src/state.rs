//! What every handler needs: the store and the installation's settings.

use std::sync::Arc;

use crate::config::{Mode, Settings};
use crate::live::LiveHub;
use crate::model::{Call, CallType, Consumer, Element, Scope};
use crate::store::{Store, StoreError};

#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    pub settings: Settings,
    /// The in-process live feed of the local server; `None` in the Lambda
    /// functions, where DynamoDB Streams feed the displays instead.
    pub live: Option<LiveHub>,
}

impl AppState {
    pub fn new(store: Arc<dyn Store>, settings: Settings) -> Self {
        AppState {
            store,
            settings,
            live: None,
        }
    }

    /// The same state, publishing every committed change to `hub`.
    pub fn with_live(self, hub: LiveHub) -> Self {
        AppState {
            live: Some(hub),
            ..self
        }
    }

    /// Tells connected displays about calls that were just written; `types`
    /// are the call types the handler already read for the request.
    pub fn publish_calls(&self, scope: &Scope, calls: &[Call], types: &[CallType]) {
        if let Some(hub) = &self.live {
            let now = crate::wire_time::now();
            for call in calls {
                hub.publish_call(scope, call, types, self.settings.time_zone, now);
            }
        }
    }

    /// Tells connected displays about elements that were just written.
    pub fn publish_elements(&self, scope: &Scope, elements: &[Element]) {
        if let Some(hub) = &self.live {
            for element in elements {
                hub.publish_element(scope, element, self.settings.time_zone);
            }
        }
    }

    /// After a display request changed its element: reads the element back
    /// (the open and close transactions return no element) and publishes it.
    /// Only with a live feed, so the Lambda functions pay no extra read.
    pub async fn publish_element_of(&self, scope: &Scope, address: &str) {
        if self.live.is_none() {
            return;
        }
        match self.store.snapshot(scope, address).await {
            Ok(snapshot) => {
                if let Some(element) = snapshot.element {
                    self.publish_elements(scope, std::slice::from_ref(&element));
                }
            }
            Err(error) => tracing::warn!(%error, "live feed: element not re-read"),
        }
    }

    /// Whose data an authenticated consumer works on (see [`Scope`]).
    pub fn scope_for(&self, consumer: &Consumer) -> Scope {
        match self.settings.mode {
            Mode::Production => Scope::installation(),
            Mode::Sandbox => Scope::consumer(&consumer.id),
        }
    }

    pub fn is_sandbox(&self) -> bool {
        self.settings.mode == Mode::Sandbox
    }

    pub async fn call_types(&self) -> Result<Vec<CallType>, StoreError> {
        self.store.call_types().await
    }
}
