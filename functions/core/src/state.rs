//! What every handler needs: the store and the installation's settings.

use std::sync::Arc;

use crate::config::{Mode, Settings};
use crate::model::{CallType, Consumer, Scope};
use crate::store::{Store, StoreError};

#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    pub settings: Settings,
}

impl AppState {
    pub fn new(store: Arc<dyn Store>, settings: Settings) -> Self {
        AppState { store, settings }
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
