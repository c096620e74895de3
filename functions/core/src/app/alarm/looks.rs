//! Who looks at alarms when (DECISIONS §14), each look one
//! [`AlarmRunner::step_alarm`]:
//! - right after a committed open (the new call; for a presence also the
//!   other open calls of its address), a close (the closed calls: their
//!   ringing alerts are cancelled) and a duty's sign-on or sign-off (the
//!   scope's open calls that alert or are unattended), in the background,
//!   so that the API's answer never waits for it ([`AlarmRunner::look_later`],
//!   [`AlarmRunner::look_at_scope_later`]); one that lost every race for the
//!   alarm's write to other looks is handed on to a fresh look
//!   ([`HAND_ONS`]): it may be the one that alerts somebody;
//! - the timers: whatever the due index lists ([`AlarmRunner::run_due_alarms`],
//!   polled by the local server), so a look that never ran (the process died
//!   after the commit) or a level that falls due later is not lost. A round
//!   reads the call types and each scope's people once and steps up to
//!   [`STEPS_AT_ONCE`] alarms at a time, so that the store's writer commits
//!   their writes together.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::task::JoinSet;

use crate::app::alarm::AlarmRunner;
use crate::app::alarm::step::{Known, Looked, People, Prefetched, is_presence};
use crate::domain::alarm::Alarm;
use crate::domain::alarm::timer::OVERDUE_AFTER_SECONDS;
use crate::domain::model::{Call, CallType, Scope};
use crate::store::StoreError;
use crate::store::alarms::DueAlarm;

/// Alarms a round of the timers steps at the same time.
pub(crate) const STEPS_AT_ONCE: usize = 16;

/// How often a look in the background that lost every race for the alarm's
/// write ([`StoreError::Contended`]) is handed on to a fresh look, after
/// [`HAND_ON_PAUSE`] each time. The look that won its last race read the
/// alarm after this one first did, and most read the roster after the
/// alarm, so it rarely missed what this one saw; but one that read its
/// roster first (a round of the timers, an open's request) may have missed
/// the sign-on this one was looking for.
const HAND_ONS: usize = 3;
const HAND_ON_PAUSE: Duration = Duration::from_secs(1);

impl AlarmRunner<'_> {
    /// Looks at the alarms of `call_ids` of `scope` in the background, after
    /// the caller's commit, so that its answer does not wait. Each failure
    /// is logged; the timers look again when the alarm is due.
    ///
    /// In a Lambda function a task spawned here may be frozen with the
    /// invocation once the answer is sent and never finish. That is
    /// accepted: in AWS the durable path is the timers (a call's first
    /// timer comes from the table's stream, DECISIONS §17), and this
    /// look only makes the first alert quicker where it runs.
    pub fn look_later(self, scope: &Scope, call_ids: Vec<i64>, types: &[CallType]) {
        self.spawn_looks(scope, None, call_ids, types, None);
    }

    /// [`AlarmRunner::look_later`] at a call just opened (`open_before`: the
    /// calls open on its address before it), which reads neither its alarm
    /// nor its address again ([`Known::opened`]); for a presence also at
    /// the calls it stops.
    /// `people`: the scope's roster, when the request read it already.
    pub fn look_after_open(
        self,
        scope: &Scope,
        call: &Call,
        open_before: &[Call],
        types: &[CallType],
        people: Option<Arc<People>>,
    ) {
        let mut others = Vec::new();
        if is_presence(types, &call.event) {
            others.extend(open_before.iter().map(|open| open.id));
        }
        let known = Known::opened(scope, call, open_before, types);
        self.spawn_looks(scope, Some((call.id, known)), others, types, people);
    }

    /// The looks of [`AlarmRunner::look_later`], the call types the caller
    /// read handed on.
    fn spawn_looks(
        self,
        scope: &Scope,
        first: Option<(i64, Known)>,
        call_ids: Vec<i64>,
        types: &[CallType],
        people: Option<Arc<People>>,
    ) {
        if self.state.alarms.is_none()
            || !self.state.looks_after_writes
            || (first.is_none() && call_ids.is_empty())
        {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("no runtime to look at alarms on: the timers will");
            return;
        };
        let state = self.state.clone();
        let scope = scope.clone();
        let read = Prefetched {
            types: Arc::new(types.to_vec()),
            rosters: people
                .map(|people| (scope.clone(), people))
                .into_iter()
                .collect(),
        };
        runtime.spawn(async move {
            let looks = first
                .map(|(call_id, known)| (call_id, Some(known)))
                .into_iter()
                .chain(call_ids.into_iter().map(|call_id| (call_id, None)));
            for (call_id, known) in looks {
                state
                    .alarm_runner()
                    .look_in_background(&scope, call_id, Some(&read), known)
                    .await;
            }
        });
    }

    /// After a duty changed: looks, in the background, at the open calls of
    /// `scope` whose alarm is alerting or unattended (somebody came on duty
    /// for them, or went off duty and is alerted no more). One round per
    /// scope at a time: a change during a round has it go once more
    /// ([`super::scope_rounds`]).
    pub fn look_at_scope_later(self, scope: &Scope) {
        if self.state.alarms.is_none() || !self.state.looks_after_writes {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("no runtime to look at alarms on: the timers will");
            return;
        };
        let Some(mut round) = self.state.scope_rounds.ask(scope) else {
            return;
        };
        let state = self.state.clone();
        let scope = scope.clone();
        runtime.spawn(async move {
            loop {
                state.alarm_runner().scope_round(&scope).await;
                if !round.again() {
                    break;
                }
            }
        });
    }

    /// One round of [`AlarmRunner::look_at_scope_later`]: a look at each
    /// running alarm of the scope's open calls.
    async fn scope_round(self, scope: &Scope) {
        let calls = match self.state.store.open_calls(scope).await {
            Ok(calls) => calls,
            Err(error) => {
                tracing::warn!(scope = scope.as_str(), %error, "open calls not read for a duty change");
                return;
            }
        };
        for call in calls.iter().filter(|call| is_running(call.alarm.as_ref())) {
            self.look_in_background(scope, call.id, None, None).await;
        }
    }

    /// One look of [`AlarmRunner::look_later`] and the like: a failure is
    /// logged (the timers look again when the alarm is due), a look that
    /// lost to other looks' writes is handed on to a fresh one, which reads
    /// everything again, at most [`HAND_ONS`] times.
    async fn look_in_background(
        self,
        scope: &Scope,
        call_id: i64,
        read: Option<&Prefetched>,
        known: Option<Known>,
    ) {
        let mut looked = self.step_alarm_with(scope, call_id, read, known).await;
        for _ in 0..HAND_ONS {
            let Err(StoreError::Contended(detail)) = &looked else {
                break;
            };
            tracing::warn!(
                scope = scope.as_str(),
                call_id,
                error = %detail,
                "alarm look lost to contention: handed on to a fresh look"
            );
            tokio::time::sleep(HAND_ON_PAUSE).await;
            looked = self.step_alarm(scope, call_id).await;
        }
        if let Err(error) = looked {
            tracing::warn!(scope = scope.as_str(), call_id, %error, "alarm not looked at");
        }
    }

    /// Steps every alarm due by `now` (at most `limit`, earliest first) and
    /// returns how many it looked at. The local server's timers call it
    /// again and again; a failure of one alarm is logged and the others go
    /// on (it stays due, so the next round tries it again).
    pub async fn run_due_alarms(
        self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<usize, StoreError> {
        let store = self.state.alarm_store()?;
        let due = store.due_alarms(now, limit).await?;
        if due.is_empty() {
            return Ok(0);
        }
        let count = due.len();
        self.step_all(due, now).await?;
        Ok(count)
    }

    /// The overdue sweep of the minute's wake-up in AWS (DECISIONS §19):
    /// steps every alarm whose next step (a level, a re-alert, a receipt
    /// deadline, an accept's timeout) is more than [`OVERDUE_AFTER_SECONDS`]
    /// late at `now` (at most `limit`, the most overdue first), each with
    /// an error line: only a lost stream record or timer leaves one so late,
    /// and the stack counts these lines (a metric alarm). Returns the
    /// alarms found. Stepping is the timers' conditional write, so a timer
    /// that arrives after all finds nothing left to do.
    pub async fn run_overdue_alarms(
        self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<DueAlarm>, StoreError> {
        let store = self.state.alarm_store()?;
        let overdue = store
            .due_alarms(
                now - chrono::Duration::seconds(OVERDUE_AFTER_SECONDS),
                limit,
            )
            .await?;
        if overdue.is_empty() {
            return Ok(overdue);
        }
        for alarm in &overdue {
            tracing::error!(
                scope = alarm.scope.as_str(),
                call_id = alarm.call_id,
                due_at = %alarm.next_at.to_rfc3339(),
                late_s = (now - alarm.next_at).num_seconds(),
                "alarm step overdue: its timer was lost; stepped by the minute's wake-up"
            );
        }
        self.step_all(overdue.clone(), now).await?;
        Ok(overdue)
    }

    /// Steps `due` (alarms due by `now`), reading the call types and each
    /// scope's people once.
    async fn step_all(self, due: Vec<DueAlarm>, now: DateTime<Utc>) -> Result<(), StoreError> {
        let store = self.state.alarm_store()?;
        let mut read = Prefetched {
            types: Arc::new(self.state.call_types().await?),
            rosters: HashMap::new(),
        };
        for alarm in &due {
            if !read.rosters.contains_key(&alarm.scope) {
                let people =
                    People::read(store.as_ref(), &alarm.scope, now, self.state.live.as_ref())
                        .await?;
                read.rosters.insert(alarm.scope.clone(), Arc::new(people));
            }
        }
        let read = Arc::new(read);
        let mut steps = JoinSet::new();
        for alarm in due {
            if steps.len() >= STEPS_AT_ONCE {
                steps.join_next().await;
            }
            let (state, read) = (self.state.clone(), Arc::clone(&read));
            steps.spawn(async move { state.alarm_runner().step_due(&alarm, &read).await });
        }
        while steps.join_next().await.is_some() {}
        Ok(())
    }

    /// One due alarm of a round, logged with how late it was written.
    async fn step_due(self, alarm: &DueAlarm, read: &Prefetched) {
        match self
            .step_alarm_with(&alarm.scope, alarm.call_id, Some(read), None)
            .await
        {
            Ok(Looked::Call {
                changed: true,
                call,
            }) => {
                // How long after its time the level or re-alert was written
                // (bench/alarms measures it; the clock's own sub-seconds,
                // which wire times drop).
                let late_ms = (Utc::now() - alarm.next_at).num_milliseconds();
                tracing::debug!(
                    call_id = alarm.call_id,
                    // Not `level`: that key is the line's severity.
                    alarm_level = call.alarm.as_ref().map_or(0, |a| a.level),
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
}

/// Whether an alarm still alerts or waits for somebody to come on duty.
fn is_running(alarm: Option<&Alarm>) -> bool {
    alarm.is_some_and(|alarm| !alarm.status.is_stopped())
}
