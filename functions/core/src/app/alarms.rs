//! The alarm runner (DECISIONS §14): the pure engine
//! ([`crate::domain::alarm::engine`]) against the store. One look at a call
//! reads its alarm with its version, builds the situation now (the call
//! type's policy, the scope's staff and duties, a presence on the address),
//! steps the engine (or applies a staff member's response), and writes the
//! result with its audit lines only if nobody wrote the alarm meanwhile; on a
//! conflict it reads and steps again, at most [`MAX_ATTEMPTS`] times. What
//! changed then goes to the live feed: the displays' messages and each
//! person's `call.alert` / `call.cancelled`.
//!
//! Who looks when:
//! - right after a committed open (the new call; for a presence also the
//!   other open calls of its address), a close (the closed calls: their
//!   ringing alerts are cancelled) and a duty's sign-on or sign-off (the
//!   scope's open calls that alert or are unattended), in the background,
//!   so that the API's answer never waits for it ([`AppState::look_later`]);
//! - the timers: whatever the due index lists ([`AppState::run_due_alarms`],
//!   polled by the local server), so a look that never ran (the process died
//!   after the commit) or a level that falls due later is not lost.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::app::AppState;
use crate::domain::alarm::audit::AuditEvent;
use crate::domain::alarm::{
    Alarm, Effect, Policy, Refusal, Response, Roster, Situation, Staff, Step, respond, step,
};
use crate::domain::model::{Call, CallType, Scope};
use crate::domain::wire_time;
use crate::store::StoreError;
use crate::store::alarms::{AlarmStore, AlarmWrite, KeptAlarm};
use crate::wire::live::{AlarmNews, LiveAudience, LiveEvent, LiveMessage};

/// How often one look reads and steps again after a conflicting write
/// before it gives up (the next look, or the timers, try again).
pub const MAX_ATTEMPTS: usize = 5;

/// The `type` of a call type whose calls are staff present in the room.
pub const PRESENCE: &str = "PRESENCE";

/// Re-alert interval and most alerts of a call whose type an admin removed
/// (DECISIONS §7's fallbacks for those fields).
const FALLBACK_INTERVAL: i64 = 60;
const FALLBACK_MAXLOOPS: i64 = 0;

/// What a look reads besides the call and its alarm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Needs {
    /// The roster and a presence on the address (a step).
    Roster,
    /// The same, for a response: a call of a type without alarm is missing.
    AlarmAndRoster,
    /// Nothing else: a response that alerts nobody (an accept).
    AlarmOnly,
}

/// What one look found.
#[derive(Debug, Clone, PartialEq)]
pub enum Looked {
    /// No such call in the scope, or one without an alarm (stored before
    /// alarms existed, or, for a response, of a type without one).
    Missing,
    /// The call as it is now, with its alarm; `changed`: this look wrote.
    Call { call: Box<Call>, changed: bool },
}

impl AppState {
    /// Steps the alarm of call `call_id` of `scope` to now.
    pub async fn step_alarm(&self, scope: &Scope, call_id: i64) -> Result<Looked, StoreError> {
        let looked = self
            .advance_alarm(scope, call_id, Needs::Roster, |prior, situation| {
                Ok(step(prior, situation))
            })
            .await?;
        // `step` never refuses.
        Ok(looked.unwrap_or(Looked::Missing))
    }

    /// `staff`'s response to call `call_id` of their scope, then a step.
    /// `Err(Refusal)`: the 409s of DECISIONS §14.
    pub async fn respond_to_alarm(
        &self,
        staff: &Staff,
        call_id: i64,
        response: Response,
    ) -> Result<Result<Looked, Refusal>, StoreError> {
        // An accept stops the escalation (or is refused): it alerts nobody,
        // so it reads no roster. Declines and reads may start a level.
        let needs = match response {
            Response::Accepted => Needs::AlarmOnly,
            Response::Declined | Response::Read => Needs::AlarmAndRoster,
        };
        self.advance_alarm(&staff.scope, call_id, needs, |prior, situation| {
            respond(prior, situation, staff, response)
        })
        .await
    }

    /// Reads, acts, writes if unchanged since the read (else again), then
    /// publishes. What it reads besides the alarm: see [`Needs`].
    async fn advance_alarm<F>(
        &self,
        scope: &Scope,
        call_id: i64,
        needs: Needs,
        act: F,
    ) -> Result<Result<Looked, Refusal>, StoreError>
    where
        F: Fn(&Alarm, &Situation<'_>) -> Result<Step, Refusal>,
    {
        let store = self.alarm_store()?;
        for _ in 0..MAX_ATTEMPTS {
            let Some(kept) = store.alarm(scope, call_id).await? else {
                return Ok(Ok(Looked::Missing));
            };
            let types = self.call_types().await?;
            let (policy, interval, maxloops) = policy_of(&types, &kept.call.event);
            if needs != Needs::Roster && policy.is_none() {
                return Ok(Ok(Looked::Missing));
            }
            let now = wire_time::now();
            // Only a running alarm of an open call alerts anybody: a closed
            // call's ends, a stopped one stays, a type without alarm ends.
            let running = kept.call.closed_at.is_none()
                && !kept.alarm.status.is_stopped()
                && !policy.is_none()
                && needs != Needs::AlarmOnly;
            let (staff, duties, presence_at) = if running {
                (
                    store.staff_of(scope).await?,
                    store.duties(scope, now).await?,
                    self.presence_at(scope, &kept.call, &types).await?,
                )
            } else {
                (Vec::new(), Vec::new(), None)
            };
            let situation = Situation {
                call: &kept.call,
                policy: &policy,
                interval,
                maxloops,
                roster: Roster {
                    staff: &staff,
                    duties: &duties,
                    now,
                },
                presence_at,
            };
            let next = match act(&kept.alarm, &situation) {
                Ok(next) => next,
                Err(refusal) => return Ok(Err(refusal)),
            };
            if !next.changed {
                let mut call = kept.call.clone();
                call.alarm = Some(kept.alarm.clone());
                return Ok(Ok(Looked::Call {
                    call: Box::new(call),
                    changed: false,
                }));
            }
            let audit = AuditEvent::all(&next.effects, now);
            match store.write_alarm(&kept, &next.alarm, &audit).await? {
                AlarmWrite::Written => {
                    let mut call = kept.call.clone();
                    call.alarm = Some(next.alarm.clone());
                    self.publish_alarm(scope, &call, &kept, &next, &types, now);
                    tracing::info!(
                        scope = scope.as_str(),
                        call_id,
                        status = next.alarm.status.as_str(),
                        level = next.alarm.level,
                        effects = next.effects.len(),
                        next_at = ?next.alarm.next_at,
                        "alarm stepped"
                    );
                    return Ok(Ok(Looked::Call {
                        call: Box::new(call),
                        changed: true,
                    }));
                }
                AlarmWrite::Conflict => {
                    tracing::debug!(
                        scope = scope.as_str(),
                        call_id,
                        "alarm written meanwhile: again"
                    );
                }
            }
        }
        Err(StoreError::Unavailable(format!(
            "the alarm of call {call_id} changed under {MAX_ATTEMPTS} looks in a row"
        )))
    }

    fn alarm_store(&self) -> Result<&Arc<dyn AlarmStore>, StoreError> {
        self.alarms
            .as_ref()
            .ok_or_else(|| StoreError::Internal("this service has no alarm store".into()))
    }

    /// When a presence opened on `call`'s address at or after it: the
    /// earliest open call of a presence type there.
    async fn presence_at(
        &self,
        scope: &Scope,
        call: &Call,
        types: &[CallType],
    ) -> Result<Option<DateTime<Utc>>, StoreError> {
        let snapshot = self.store.snapshot(scope, &call.address).await?;
        Ok(snapshot
            .open_calls
            .iter()
            .filter(|other| other.id != call.id && other.opened_at >= call.opened_at)
            .filter(|other| is_presence(types, &other.event))
            .map(|other| other.opened_at)
            .min())
    }

    /// Tells displays and staff pages what a written step changed.
    fn publish_alarm(
        &self,
        scope: &Scope,
        call: &Call,
        prior: &KeptAlarm,
        next: &Step,
        types: &[CallType],
        now: DateTime<Utc>,
    ) {
        let Some(hub) = self.listened_hub() else {
            return;
        };
        let zone = self.settings.time_zone;
        let event = |message: LiveMessage<'_>| LiveEvent {
            scope: scope.clone(),
            section: call.section.clone(),
            message: message.to_json(),
        };
        let has = |wanted: fn(&Effect) -> bool| next.effects.iter().any(wanted);
        // A closed call's end was told by `call.closed`; displays see the
        // rest of an alarm's changes (those that grow its version).
        if call.closed_at.is_none() && next.alarm.changes != prior.alarm.changes {
            let news = if has(|e| matches!(e, Effect::Accepted { .. })) {
                AlarmNews::Accepted
            } else if has(|e| matches!(e, Effect::Unattended)) {
                AlarmNews::Unattended
            } else {
                AlarmNews::Escalated
            };
            hub.publish(event(LiveMessage::alarm(news, call, types, zone, now)));
        }
        if has(|e| matches!(e, Effect::Declined { .. })) {
            let message = LiveMessage::alarm(AlarmNews::Declined, call, types, zone, now);
            hub.publish_to(event(message), LiveAudience::StaffPages);
        }
        for effect in &next.effects {
            let (staff, message) = match effect {
                Effect::Alert {
                    staff,
                    level,
                    repeat,
                } => (
                    staff,
                    LiveMessage::alert(call, *level, *repeat, types, zone, now),
                ),
                Effect::Cancel { staff, reason } => (
                    staff,
                    LiveMessage::cancelled(call, reason, types, zone, now),
                ),
                _ => continue,
            };
            hub.publish_to(event(message), LiveAudience::Person(staff.id.clone()));
        }
    }

    /// Looks at the alarms of `call_ids` of `scope` in the background, after
    /// the caller's commit, so that its answer does not wait. Each failure
    /// is logged; the timers look again when the alarm is due.
    ///
    /// In a Lambda function a task spawned here may be frozen with the
    /// invocation once the answer is sent and never finish. That is
    /// accepted: in AWS the durable path is the timers (issue 28: a call's
    /// first timer comes from the table's stream, DECISIONS §17), and this
    /// look only makes the first alert quicker where it runs.
    pub fn look_later(&self, scope: &Scope, call_ids: Vec<i64>) {
        if self.alarms.is_none() || call_ids.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("no runtime to look at alarms on: the timers will");
            return;
        };
        let state = self.clone();
        let scope = scope.clone();
        runtime.spawn(async move {
            for call_id in call_ids {
                if let Err(error) = state.step_alarm(&scope, call_id).await {
                    tracing::warn!(scope = scope.as_str(), call_id, %error, "alarm not looked at");
                }
            }
        });
    }

    /// After a duty changed: looks, in the background, at the open calls of
    /// `scope` whose alarm is alerting or unattended (somebody came on duty
    /// for them, or went off duty and is alerted no more).
    pub fn look_at_scope_later(&self, scope: &Scope) {
        if self.alarms.is_none() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("no runtime to look at alarms on: the timers will");
            return;
        };
        let state = self.clone();
        let scope = scope.clone();
        runtime.spawn(async move {
            let calls = match state.store.open_calls(&scope).await {
                Ok(calls) => calls,
                Err(error) => {
                    tracing::warn!(scope = scope.as_str(), %error, "open calls not read for a duty change");
                    return;
                }
            };
            for call in calls.iter().filter(|call| is_running(call.alarm.as_ref())) {
                if let Err(error) = state.step_alarm(&scope, call.id).await {
                    tracing::warn!(scope = scope.as_str(), call_id = call.id, %error, "alarm not looked at");
                }
            }
        });
    }

    /// Steps every alarm due by `now` (at most `limit`, earliest first) and
    /// returns how many it looked at. The local server's timers call it
    /// again and again; a failure of one alarm is logged and the others go
    /// on (it stays due, so the next round tries it again).
    pub async fn run_due_alarms(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<usize, StoreError> {
        let due = self.alarm_store()?.due_alarms(now, limit).await?;
        for alarm in &due {
            match self.step_alarm(&alarm.scope, alarm.call_id).await {
                Ok(Looked::Call {
                    changed: true,
                    call,
                }) => {
                    // How long after its time the level or re-alert was
                    // written (bench/alarms measures it; the clock's own
                    // sub-seconds, which wire times drop).
                    let late_ms = (Utc::now() - alarm.next_at).num_milliseconds();
                    tracing::debug!(
                        call_id = alarm.call_id,
                        level = call.alarm.as_ref().map_or(0, |a| a.level),
                        late_ms,
                        "due alarm stepped"
                    );
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(
                    scope = alarm.scope.as_str(),
                    call_id = alarm.call_id,
                    %error,
                    "due alarm not stepped"
                ),
            }
        }
        Ok(due.len())
    }
}

/// The policy, re-alert interval and most alerts of a call's type; a type
/// an admin removed alarms with [`Policy::fallback`], never silence.
fn policy_of(types: &[CallType], event: &str) -> (Policy, i64, i64) {
    match types.iter().find(|t| t.name == event) {
        Some(t) => (
            t.escalation.clone(),
            t.notification_interval,
            t.notification_maxloops,
        ),
        None => (Policy::fallback(), FALLBACK_INTERVAL, FALLBACK_MAXLOOPS),
    }
}

/// Whether calls of `event` are staff present in the room.
pub fn is_presence(types: &[CallType], event: &str) -> bool {
    types.iter().any(|t| t.name == event && t.kind == PRESENCE)
}

/// Whether an alarm still alerts or waits for somebody to come on duty.
fn is_running(alarm: Option<&Alarm>) -> bool {
    alarm.is_some_and(|alarm| !alarm.status.is_stopped())
}
