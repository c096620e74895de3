//! The supervised links (DECISIONS §19, [`LinkStore`]).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use nurse_call_core::{
    LinkStore, StoreError,
    links::{Link, Silence, SilenceRecord},
};

use crate::SqliteStore;

#[async_trait]
impl LinkStore for SqliteStore {
    async fn links(&self) -> Result<Vec<Link>, StoreError> {
        todo!()
    }

    async fn sign_of_life(
        &self,
        consumer: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<Silence>, StoreError> {
        todo!("{consumer} {at}")
    }

    async fn mark_silent(
        &self,
        consumer: &str,
        seen: DateTime<Utc>,
        silence: &Silence,
    ) -> Result<bool, StoreError> {
        todo!("{consumer} {seen} {silence:?}")
    }

    async fn mark_silence_alerted(
        &self,
        consumer: &str,
        alerts: i64,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        todo!("{consumer} {alerts} {at}")
    }

    async fn silences(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<SilenceRecord>, StoreError> {
        todo!("{from} {to}")
    }
}
