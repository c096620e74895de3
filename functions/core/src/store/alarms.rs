//! What alarm routing keeps (DECISIONS §14): staff, their duties, each
//! call's alarm with its audit, and the index of alarms due.
//!
//! Every open stores the new call's alarm beside it in the same atomic step
//! ([`crate::store::Store::open_call`]): [`Alarm::pending`], due at its
//! `opened_at`, so a committed open always gets its alarm looked at, even
//! when the process dies right after the commit (the timers find it due).
//! Where the store can ([`crate::store::Store::open_call_with_alarm`], the
//! embedded store), the request takes the first step itself and the open
//! writes it; a close likewise may end an alarm that rings for nobody in its
//! own write. Both spare a look after the write. The engine's results are
//! written with [`AlarmStore::write_alarm`], only if nobody wrote the alarm
//! since it was read: that conditional write is what makes a level fire once
//! when two workers look, and the first accept win.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::domain::alarm::audit::AuditEvent;
use crate::domain::alarm::{Alarm, Duty, Staff};
use crate::domain::model::{Call, Scope};
use crate::store::{AddressSnapshot, Store, StoreError};

/// A new call's alarm as its open writes it ([`Store::open_call_with_alarm`]).
#[derive(Debug, Clone, PartialEq)]
pub struct FirstAlarm {
    /// The alarm stored beside the call: pending, or after its first step.
    pub alarm: Alarm,
    /// The audit lines of the step that made `alarm` (none when pending).
    pub audit: Vec<AuditEvent>,
}

impl FirstAlarm {
    /// The alarm not yet stepped, due at `opened_at`: the first look (or
    /// the timers, should the process die after the commit) steps it.
    pub fn pending(opened_at: DateTime<Utc>) -> Self {
        FirstAlarm {
            alarm: Alarm::pending(opened_at),
            audit: Vec::new(),
        }
    }
}

/// A call with its alarm as kept, and the alarm's version (0 when the open
/// stored it; one more with every [`AlarmStore::write_alarm`]).
#[derive(Debug, Clone, PartialEq)]
pub struct KeptAlarm {
    /// Whose call it is.
    pub scope: Scope,
    /// The call as kept (open or closed), with `alarm` set.
    pub call: Call,
    /// The alarm as read (the same as `call.alarm`): what the engine steps.
    pub alarm: Alarm,
    /// The alarm's version as read: [`AlarmStore::write_alarm`] writes only
    /// while it is still this.
    pub version: i64,
}

/// The result of [`AlarmStore::write_alarm`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlarmWrite {
    /// Written; the alarm's version is now `expected + 1`.
    Written,
    /// Somebody wrote it since it was read (or it is gone): nothing was
    /// written; read it again and step again.
    Conflict,
}

/// An alarm due at `next_at` (a level or a re-alert), as the index lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueAlarm {
    /// Whose call it is.
    pub scope: Scope,
    /// The call whose alarm is due.
    pub call_id: i64,
    /// When its next step falls due (UTC).
    pub next_at: DateTime<Utc>,
}

/// A scope's people as an alarm needs them (§14, §18).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RosterRead {
    /// Every staff member of the scope.
    pub staff: Vec<Staff>,
    /// Their duties not ended.
    pub duties: Vec<Duty>,
    /// The staff (ids) with a channel the store knows of (§18): a push
    /// subscription, or (DynamoDB, written by the WebSocket API's
    /// `$connect`) a staff page connected now. The local server's open pages
    /// are its live hub's, added by [`crate::app::alarm::step::People::of`].
    pub with_channel: Vec<String>,
}

/// What alarm routing keeps (see the module): staff, duties, each call's
/// alarm and audit, and the index of alarms due.
#[async_trait]
pub trait AlarmStore: Store {
    /// Stores a new staff member (admin, sandbox).
    async fn create_staff(&self, staff: &Staff) -> Result<(), StoreError>;

    /// Stores a new staff member unless their scope has `limit` (revoked
    /// ones counted) already: counted inside the write (DECISIONS §20), so
    /// that creations at once never pass it (the sandbox's visitors).
    /// `false`: full, nothing stored.
    async fn create_staff_within(&self, staff: &Staff, limit: usize) -> Result<bool, StoreError>;

    /// The staff member whose token hashes to `token_hash`, revoked or not.
    async fn staff_by_token_hash(&self, token_hash: &str) -> Result<Option<Staff>, StoreError>;

    /// The staff member of `id`, in any scope, revoked or not.
    async fn staff_member(&self, id: &str) -> Result<Option<Staff>, StoreError>;

    /// Every staff member of `scope`, revoked or not, ordered by name, then id.
    async fn staff_of(&self, scope: &Scope) -> Result<Vec<Staff>, StoreError>;

    /// Replaces a staff member's token hash (rotate) and deletes their push
    /// subscriptions in the same write (§20: a lost phone gets no further
    /// alert); `false`: no such id.
    async fn replace_staff_token(&self, id: &str, token_hash: &str) -> Result<bool, StoreError>;

    /// Revokes a staff member (their token stops working, their duty ends);
    /// `false`: no such id.
    async fn revoke_staff(&self, id: &str) -> Result<bool, StoreError>;

    /// Deletes a staff member and their duty (erasure of personal data);
    /// `false`: no such id.
    async fn erase_staff(&self, id: &str) -> Result<bool, StoreError>;

    /// Signs a staff member on: replaces their duty.
    async fn put_duty(&self, duty: &Duty) -> Result<(), StoreError>;

    /// Signs a staff member off; `false`: they had no duty.
    async fn end_duty(&self, scope: &Scope, staff_id: &str) -> Result<bool, StoreError>;

    /// The duties of `scope` that have not ended by `now` (a duty ends by
    /// itself at `until`; a store may keep expired ones, never returns them).
    async fn duties(&self, scope: &Scope, now: DateTime<Utc>) -> Result<Vec<Duty>, StoreError>;

    /// The scope's staff, their duties not ended by `now` and who of them
    /// has a channel (each once): who a level can reach, and whether it
    /// can. A scope without staff reads nothing else. Every look at an
    /// alarm reads it, so each store reads it in as few requests as it can
    /// (the embedded store: one read; DynamoDB: the roster's partition,
    /// channels included, then the duties).
    async fn roster(&self, scope: &Scope, now: DateTime<Utc>) -> Result<RosterRead, StoreError>;

    /// The snapshot of `address` and the scope's roster ([`AlarmStore::roster`])
    /// at `now`, for an open's first alarm step
    /// ([`crate::app::alarm::start`]). The roster is `None` when it could not
    /// be read (logged): the open then stores the pending alarm. A store may
    /// read all of it in one go (the embedded store: one read).
    async fn snapshot_and_roster(
        &self,
        scope: &Scope,
        address: &str,
        now: DateTime<Utc>,
    ) -> Result<(AddressSnapshot, Option<RosterRead>), StoreError> {
        let (snapshot, roster) =
            tokio::join!(self.snapshot(scope, address), self.roster(scope, now));
        let roster = roster
            .inspect_err(|error| {
                tracing::warn!(
                    scope = scope.as_str(),
                    %error,
                    "roster not read for an open: its alarm is looked at after the write"
                );
            })
            .ok();
        Ok((snapshot?, roster))
    }

    /// The call `call_id` of `scope` with its alarm (consistent read), or
    /// `None`: no such call, or one stored before alarms existed.
    async fn alarm(&self, scope: &Scope, call_id: i64) -> Result<Option<KeptAlarm>, StoreError>;

    /// Writes `alarm` for `kept`'s call and appends `audit` to its audit,
    /// atomically, if the alarm's version is still `kept.version`; its
    /// `next_at` becomes the call's key in the due index (`None`: out of it).
    async fn write_alarm(
        &self,
        kept: &KeptAlarm,
        alarm: &Alarm,
        audit: &[AuditEvent],
    ) -> Result<AlarmWrite, StoreError>;

    /// Alarms with `next_at` at or before `now`, earliest first, at most
    /// `limit`, in every scope.
    async fn due_alarms(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<DueAlarm>, StoreError>;

    /// The audit of a call's alarm, in the order written.
    async fn alarm_audit(&self, scope: &Scope, call_id: i64)
    -> Result<Vec<AuditEvent>, StoreError>;
}
