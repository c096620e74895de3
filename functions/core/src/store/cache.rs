//! A read-through cache for what changes rarely and is read on every
//! request: the call types and the consumers. A warm Lambda function then
//! spends its DynamoDB round trips on calls and elements only. Admin edits
//! become visible when an entry expires (DECISIONS §7: within 60 s).
//!
//! It sits in the state ([`crate::app::AppState::with_cache`]), where the
//! request path asks for the two, not in front of the store: nothing else
//! passes through it, so nothing has to be forwarded.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::domain::model::{CallType, Consumer};
use crate::store::fallbacks::FallbackLog;
use crate::store::{Store, StoreError};

/// How long an entry is trusted: admin edits are seen within this time.
pub const DEFAULT_TTL: Duration = Duration::from_secs(60);
/// Beyond this many cached consumers the cache starts over (bounded memory).
const MAX_CONSUMERS: usize = 10_000;

pub(crate) struct Cache {
    ttl: Duration,
    call_types: Mutex<Option<(Instant, Vec<CallType>)>>,
    /// Known consumers only: an unknown id is asked again next time, so a
    /// consumer created elsewhere works at once.
    consumers: Mutex<HashMap<String, (Instant, Consumer)>>,
}

impl Cache {
    pub(crate) fn new(ttl: Duration) -> Self {
        Cache {
            ttl,
            call_types: Mutex::new(None),
            consumers: Mutex::new(HashMap::new()),
        }
    }

    fn fresh(&self, at: Instant) -> bool {
        at.elapsed() < self.ttl
    }

    /// The consumer `id`, from the cache while fresh, else from `store`.
    pub(crate) async fn consumer(
        &self,
        store: &dyn Store,
        id: &str,
    ) -> Result<Option<Consumer>, StoreError> {
        {
            let consumers = self.consumers.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((at, consumer)) = consumers.get(id)
                && self.fresh(*at)
            {
                return Ok(Some(consumer.clone()));
            }
        }
        let consumer = store.consumer(id).await?;
        if let Some(consumer) = &consumer {
            let mut consumers = self.consumers.lock().unwrap_or_else(|e| e.into_inner());
            if consumers.len() >= MAX_CONSUMERS {
                consumers.clear();
            }
            consumers.insert(consumer.id.clone(), (Instant::now(), consumer.clone()));
        }
        Ok(consumer)
    }

    /// The call types, from the cache while fresh, else from `store` through
    /// `log`, which logs their fallbacks (once per refresh).
    pub(crate) async fn call_types(
        &self,
        store: &dyn Store,
        log: &FallbackLog,
    ) -> Result<Vec<CallType>, StoreError> {
        {
            let cached = self.call_types.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((at, types)) = cached.as_ref()
                && self.fresh(*at)
            {
                return Ok(types.clone());
            }
        }
        let types = log.read(store).await?;
        *self.call_types.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((Instant::now(), types.clone()));
        Ok(types)
    }
}
