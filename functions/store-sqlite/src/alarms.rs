//! PLACEHOLDER until the SQLite tables exist (the next commit on wt-stores
//! replaces it): every operation fails.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use nurse_call_core::domain::alarm::audit::AuditEvent;
use nurse_call_core::domain::alarm::{Alarm, Duty, Staff};
use nurse_call_core::domain::model::Scope;
use nurse_call_core::store::StoreError;
use nurse_call_core::store::alarms::{AlarmStore, AlarmWrite, DueAlarm, KeptAlarm};

use crate::SqliteStore;

fn not_yet<T>() -> Result<T, StoreError> {
    Err(StoreError::Internal("not yet".into()))
}

#[async_trait]
impl AlarmStore for SqliteStore {
    async fn create_staff(&self, _staff: &Staff) -> Result<(), StoreError> {
        not_yet()
    }

    async fn staff_by_token_hash(&self, _token_hash: &str) -> Result<Option<Staff>, StoreError> {
        not_yet()
    }

    async fn staff_member(&self, _id: &str) -> Result<Option<Staff>, StoreError> {
        not_yet()
    }

    async fn staff_of(&self, _scope: &Scope) -> Result<Vec<Staff>, StoreError> {
        not_yet()
    }

    async fn replace_staff_token(&self, _id: &str, _token_hash: &str) -> Result<bool, StoreError> {
        not_yet()
    }

    async fn revoke_staff(&self, _id: &str) -> Result<bool, StoreError> {
        not_yet()
    }

    async fn erase_staff(&self, _id: &str) -> Result<bool, StoreError> {
        not_yet()
    }

    async fn put_duty(&self, _duty: &Duty) -> Result<(), StoreError> {
        not_yet()
    }

    async fn end_duty(&self, _scope: &Scope, _staff_id: &str) -> Result<bool, StoreError> {
        not_yet()
    }

    async fn duties(&self, _scope: &Scope, _now: DateTime<Utc>) -> Result<Vec<Duty>, StoreError> {
        not_yet()
    }

    async fn alarm(&self, _scope: &Scope, _call_id: i64) -> Result<Option<KeptAlarm>, StoreError> {
        not_yet()
    }

    async fn write_alarm(
        &self,
        _kept: &KeptAlarm,
        _alarm: &Alarm,
        _audit: &[AuditEvent],
    ) -> Result<AlarmWrite, StoreError> {
        not_yet()
    }

    async fn due_alarms(
        &self,
        _now: DateTime<Utc>,
        _limit: usize,
    ) -> Result<Vec<DueAlarm>, StoreError> {
        not_yet()
    }

    async fn alarm_audit(
        &self,
        _scope: &Scope,
        _call_id: i64,
    ) -> Result<Vec<AuditEvent>, StoreError> {
        not_yet()
    }
}
