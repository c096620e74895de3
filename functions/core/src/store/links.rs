//! What the supervision of central systems keeps (DECISIONS §19): each
//! consumer's heartbeat, its last sign of life and the silence it is in,
//! and the history of silences for the report.
//!
//! A consumer's heartbeat, `last_seen_at` and silence are kept with the
//! consumer (its row, its item), so that a sign of life is one write and
//! the list of links one read; the history is kept apart (one row or item
//! per silence). The interval itself is an admin's
//! ([`crate::store::admin::AdminStore::set_heartbeat`]).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::domain::links::{Link, Silence, SilenceRecord};
use crate::store::StoreError;

/// The supervised links and their silences (see the module).
#[async_trait]
pub trait LinkStore: Send + Sync {
    /// Every consumer with a heartbeat, in any order: one read (an
    /// installation has few consumers).
    async fn links(&self) -> Result<Vec<Link>, StoreError>;

    /// A signed request of `consumer` came at `at`: its `last_seen_at`
    /// becomes the later of the kept one and `at`. If it was silent, the
    /// same write clears the silence and ends it in the history
    /// (`ended_at = at`), and the ended [`Silence`] is returned: the caller
    /// announces `consumer.back`. A consumer without a heartbeat (or
    /// unknown): `Ok(None)`, nothing written.
    async fn sign_of_life(
        &self,
        consumer: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<Silence>, StoreError>;

    /// Keeps `silence` on `consumer` (and opens its history entry) only if
    /// the consumer still has a heartbeat, is not silent and its
    /// `last_seen_at` is still `seen`: a request in between wins. `true`
    /// when written.
    async fn mark_silent(
        &self,
        consumer: &str,
        seen: DateTime<Utc>,
        silence: &Silence,
    ) -> Result<bool, StoreError>;

    /// Sets the kept silence's `alerts` and `last_alert_at = at` only if
    /// the consumer is still silent and its kept `alerts` is `alerts - 1`
    /// (so two watchers never count one alert twice). `true` when written.
    async fn mark_silence_alerted(
        &self,
        consumer: &str,
        alerts: i64,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// The silences that overlap `[from, to)` (began before `to`, ended
    /// after `from` or not yet), oldest `since` first: the report's table.
    async fn silences(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<SilenceRecord>, StoreError>;
}
