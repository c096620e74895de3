//! Builders and checks of the alarm cases: staff, duties, alarms as the
//! engine would write them, audit lines, and reads that insist.

use chrono::{DateTime, Utc};

use nurse_call_core::{
    AlarmWrite, Backend, DueAlarm, KeptAlarm, Scope,
    alarm::{Alarm, AlarmStatus, Answer, AuditEvent, Duty, Recipient, Response, Staff, StaffRef},
    tokens::token_hash,
};

use crate::support::t;

/// A staff id of UUID shape, distinct for every `n`.
pub fn staff_id(n: u32) -> String {
    format!("{n:08x}-5af5-4000-8000-000000000000")
}

/// The token of staff member `n` (only its hash is stored).
pub fn staff_token(n: u32) -> String {
    format!("the token of staff member {n}")
}

/// Staff member `n` of `scope`, named `name`, in `groups`.
pub fn staff(n: u32, scope: &Scope, name: &str, groups: &[&str]) -> Staff {
    Staff {
        id: staff_id(n),
        scope: scope.clone(),
        name: name.to_string(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        device: Some(format!("DECT-{n}")),
        token_hash: token_hash(&staff_token(n)),
        created_at: t(i64::from(n)),
        revoked: false,
    }
}

/// `member` on duty for `sections` of their scope from `since` until `until`.
pub fn duty(member: &Staff, sections: &[&str], since: DateTime<Utc>, until: DateTime<Utc>) -> Duty {
    Duty {
        staff_id: member.id.clone(),
        scope: member.scope.clone(),
        sections: sections.iter().map(|s| s.to_string()).collect(),
        since,
        until,
    }
}

/// How an alarm names `member` (id and name) in its recipients, answers and
/// audit lines.
pub fn staff_ref(member: &Staff) -> StaffRef {
    StaffRef {
        id: member.id.clone(),
        name: member.name.clone(),
    }
}

/// An alarm as the engine writes it when level `level` of two has alerted
/// `by` (once), due again at `next_at`: every field set, so a store that
/// drops one is caught.
pub fn alerting(
    level: usize,
    by: &Staff,
    at: DateTime<Utc>,
    next_at: Option<DateTime<Utc>>,
) -> Alarm {
    let mut alarm = Alarm::pending(at);
    alarm.level = level;
    alarm.levels = 2;
    alarm.next_level_at = Some(at + chrono::Duration::seconds(60));
    alarm.next_at = next_at;
    alarm.recipients = vec![Recipient {
        staff: staff_ref(by),
        level,
        alerts: 1,
        last_alert_at: at,
        ringing: true,
        alerted_at: Some(at),
        received_at: None,
    }];
    alarm.answers = vec![Answer {
        staff: staff_ref(by),
        response: Response::Read,
        at,
    }];
    alarm.level_started_at = (0..level).map(|_| at).collect();
    alarm.changes = level as i64;
    alarm
}

/// The alarm after `by` accepted at `at`: stopped, due never again.
pub fn accepted(prior: &Alarm, by: &Staff, at: DateTime<Utc>) -> Alarm {
    let answer = Answer {
        staff: staff_ref(by),
        response: Response::Accepted,
        at,
    };
    let mut alarm = prior.clone();
    alarm.status = AlarmStatus::Accepted;
    alarm.accepted = Some(answer.clone());
    alarm.answers.push(answer);
    alarm.next_at = None;
    alarm.next_level_at = None;
    alarm.changes += 1;
    alarm
}

/// An audit line of `kind` at `at`, naming `by` when given.
pub fn line(kind: &str, level: usize, by: Option<&Staff>, at: DateTime<Utc>) -> AuditEvent {
    AuditEvent {
        at,
        kind: kind.to_string(),
        level,
        staff: by.map(staff_ref),
        detail: (kind == "cancel").then(|| "ended".to_string()),
    }
}

/// The kept alarm of a call that must have one.
pub async fn kept(store: &dyn Backend, scope: &Scope, call_id: i64) -> KeptAlarm {
    store
        .alarm(scope, call_id)
        .await
        .unwrap_or_else(|e| panic!("alarm({call_id}) failed: {e}"))
        .unwrap_or_else(|| panic!("alarm({call_id}): the call has no alarm"))
}

/// Writes `alarm` and appends `audit` over `kept` (conditional on its
/// version); panics only when the store fails: a conflict is the answer.
pub async fn write(
    store: &dyn Backend,
    kept: &KeptAlarm,
    alarm: &Alarm,
    audit: &[AuditEvent],
) -> AlarmWrite {
    store
        .write_alarm(kept, alarm, audit)
        .await
        .unwrap_or_else(|e| panic!("write_alarm({}) failed: {e}", kept.call.id))
}

/// The audit of call `call_id`'s alarm, in written order; panics when the
/// store fails.
pub async fn audit(store: &dyn Backend, scope: &Scope, call_id: i64) -> Vec<AuditEvent> {
    store
        .alarm_audit(scope, call_id)
        .await
        .unwrap_or_else(|e| panic!("alarm_audit({call_id}) failed: {e}"))
}

/// At most `limit` alarms due at `now`, in every scope, earliest first;
/// panics when the store fails.
pub async fn due(store: &dyn Backend, now: DateTime<Utc>, limit: usize) -> Vec<DueAlarm> {
    store
        .due_alarms(now, limit)
        .await
        .unwrap_or_else(|e| panic!("due_alarms({now}, {limit}) failed: {e}"))
}

/// The call ids `due_alarms` lists at `now` (every one of them).
pub async fn due_ids(store: &dyn Backend, now: DateTime<Utc>) -> Vec<i64> {
    due(store, now, crate::support::ALL)
        .await
        .iter()
        .map(|d| d.call_id)
        .collect()
}

/// Stores staff member `member`; panics when the store refuses.
pub async fn create(store: &dyn Backend, member: &Staff) {
    store
        .create_staff(member)
        .await
        .unwrap_or_else(|e| panic!("create_staff({}) failed: {e}", member.name));
}

/// The duties of `scope` not ended by `now`, sorted by staff id so that every
/// store's answer compares alike; panics when the store fails.
pub async fn duties(store: &dyn Backend, scope: &Scope, now: DateTime<Utc>) -> Vec<Duty> {
    let mut duties = store
        .duties(scope, now)
        .await
        .unwrap_or_else(|e| panic!("duties({}) failed: {e}", scope.as_str()));
    duties.sort_by(|a, b| a.staff_id.cmp(&b.staff_id));
    duties
}
