//! A read-through cache in front of any store for what changes rarely and is
//! read on every request: the call types and the consumers. A warm Lambda
//! function then spends its DynamoDB round trips on calls and elements only.
//! Admin edits become visible when an entry expires (DECISIONS §7: within 60 s).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::model::{
    Call, CallType, Consumer, Display, Element, ElementChange, ElementPolicy, HashMismatch,
    NewCall, Scope,
};
use crate::store::{AddressSnapshot, ElementsOutcome, OpenOutcome, Store, StoreError};

/// How long an entry is trusted: admin edits are seen within this time.
pub const DEFAULT_TTL: Duration = Duration::from_secs(60);
/// Beyond this many cached consumers the cache starts over (bounded memory).
const MAX_CONSUMERS: usize = 10_000;

pub struct CachingStore {
    inner: Arc<dyn Store>,
    ttl: Duration,
    call_types: Mutex<Option<(Instant, Vec<CallType>)>>,
    /// Known consumers only: an unknown id is asked again next time, so a
    /// consumer created elsewhere works at once.
    consumers: Mutex<HashMap<String, (Instant, Consumer)>>,
}

impl CachingStore {
    pub fn new(inner: Arc<dyn Store>, ttl: Duration) -> Self {
        CachingStore {
            inner,
            ttl,
            call_types: Mutex::new(None),
            consumers: Mutex::new(HashMap::new()),
        }
    }

    fn fresh(&self, at: Instant) -> bool {
        at.elapsed() < self.ttl
    }

    fn remember(&self, consumer: &Consumer) {
        let mut consumers = self.consumers.lock().unwrap_or_else(|e| e.into_inner());
        if consumers.len() >= MAX_CONSUMERS {
            consumers.clear();
        }
        consumers.insert(consumer.id.clone(), (Instant::now(), consumer.clone()));
    }
}

#[async_trait]
impl Store for CachingStore {
    async fn consumer(&self, id: &str) -> Result<Option<Consumer>, StoreError> {
        {
            let consumers = self.consumers.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((at, consumer)) = consumers.get(id)
                && self.fresh(*at)
            {
                return Ok(Some(consumer.clone()));
            }
        }
        let consumer = self.inner.consumer(id).await?;
        if let Some(consumer) = &consumer {
            self.remember(consumer);
        }
        Ok(consumer)
    }

    async fn create_consumer(&self, consumer: &Consumer) -> Result<(), StoreError> {
        self.inner.create_consumer(consumer).await?;
        self.remember(consumer);
        Ok(())
    }

    async fn call_types(&self) -> Result<Vec<CallType>, StoreError> {
        {
            let cached = self.call_types.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((at, types)) = cached.as_ref()
                && self.fresh(*at)
            {
                return Ok(types.clone());
            }
        }
        let types = self.inner.call_types().await?;
        *self.call_types.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((Instant::now(), types.clone()));
        Ok(types)
    }

    async fn seed_call_types(&self, call_types: &[CallType]) -> Result<(), StoreError> {
        self.inner.seed_call_types(call_types).await?;
        *self.call_types.lock().unwrap_or_else(|e| e.into_inner()) = None;
        Ok(())
    }

    async fn register_element(
        &self,
        scope: &Scope,
        address: &str,
        code: &str,
        name: &str,
        at: DateTime<Utc>,
    ) -> Result<Element, StoreError> {
        self.inner
            .register_element(scope, address, code, name, at)
            .await
    }

    async fn snapshot(&self, scope: &Scope, address: &str) -> Result<AddressSnapshot, StoreError> {
        self.inner.snapshot(scope, address).await
    }

    async fn open_call(
        &self,
        scope: &Scope,
        call: &NewCall,
        element: &ElementChange,
        policy: ElementPolicy,
    ) -> Result<OpenOutcome, StoreError> {
        self.inner.open_call(scope, call, element, policy).await
    }

    async fn close_calls(
        &self,
        scope: &Scope,
        address: &str,
        call_ids: &[i64],
        closed_at: DateTime<Utc>,
        element: &ElementChange,
        policy: ElementPolicy,
    ) -> Result<Vec<Call>, StoreError> {
        self.inner
            .close_calls(scope, address, call_ids, closed_at, element, policy)
            .await
    }

    async fn update_elements(
        &self,
        scope: &Scope,
        changes: &[ElementChange],
        policy: ElementPolicy,
    ) -> Result<ElementsOutcome, StoreError> {
        self.inner.update_elements(scope, changes, policy).await
    }

    async fn open_calls(&self, scope: &Scope) -> Result<Vec<Call>, StoreError> {
        self.inner.open_calls(scope).await
    }

    async fn elements(&self, scope: &Scope) -> Result<Vec<Element>, StoreError> {
        self.inner.elements(scope).await
    }

    /// Not cached: a revoked or rotated-away token stops working at once.
    async fn display_by_token_hash(&self, token_hash: &str) -> Result<Option<Display>, StoreError> {
        self.inner.display_by_token_hash(token_hash).await
    }

    async fn recent_calls(&self, scope: &Scope, limit: usize) -> Result<Vec<Call>, StoreError> {
        self.inner.recent_calls(scope, limit).await
    }

    async fn recent_elements(
        &self,
        scope: &Scope,
        limit: usize,
    ) -> Result<Vec<Element>, StoreError> {
        self.inner.recent_elements(scope, limit).await
    }

    async fn purge_expired(&self, now: DateTime<Utc>) -> Result<u64, StoreError> {
        self.inner.purge_expired(now).await
    }

    async fn record_hash_mismatch(
        &self,
        scope: &Scope,
        mismatch: &HashMismatch,
    ) -> Result<(), StoreError> {
        self.inner.record_hash_mismatch(scope, mismatch).await
    }

    async fn recent_hash_mismatches(
        &self,
        scope: &Scope,
        limit: usize,
    ) -> Result<Vec<HashMismatch>, StoreError> {
        self.inner.recent_hash_mismatches(scope, limit).await
    }
}
