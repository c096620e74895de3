//! One look at an alarm (DECISIONS §14): the pure engine
//! ([`crate::domain::alarm::engine`]) against the store. One look at a call
//! reads its alarm with its version, builds the situation now (the call
//! type's policy, the scope's staff and duties, a presence on the address),
//! steps the engine (or applies a staff member's response), and writes the
//! result with its audit lines only if nobody wrote the alarm meanwhile; on a
//! conflict it reads and steps again, after a short pause
//! ([`pause_before_retry`]), until done, at most [`MAX_ATTEMPTS`] times
//! ([`StoreError::Contended`] then). What changed then goes to the live
//! feed: the displays' messages and each person's `call.alert` /
//! `call.cancelled`.
//!
//! Who looks when: [`super::looks`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};

use crate::app::alarm::AlarmRunner;
use crate::clock;
use crate::domain::alarm::audit::AuditEvent;
use crate::domain::alarm::{
    Alarm, Duty, Effect, Policy, Refusal, Response, Roster, Situation, Staff, Step, respond, step,
};
use crate::domain::model::{Call, CallType, Scope};
use crate::store::StoreError;
use crate::store::alarms::{AlarmStore, AlarmWrite, KeptAlarm, RosterRead};
use crate::wire::live::{AlarmNews, LiveAudience, LiveEvent, LiveHub, LiveMessage, call_json};

/// How often one look reads and steps again after losing the race for the
/// alarm's write before it gives up. A lost race is another look's write,
/// so the retries end as soon as nobody else writes (a burst of sign-ons
/// makes dozens of looks at once, issue 45); the bound only keeps a look
/// from chasing writers for ever: with the pauses about 2 s.
pub(crate) const MAX_ATTEMPTS: usize = 24;

/// The first pause before a retry and the longest one (doubling between).
const FIRST_PAUSE_MS: u64 = 2;
const LONGEST_PAUSE_MS: u64 = 128;

/// Re-alert interval and most alerts of a call whose type an admin removed
/// (DECISIONS §7's fallbacks for those fields), and its accept timeout
/// (§19).
const FALLBACK_INTERVAL: i64 = 60;
const FALLBACK_MAXLOOPS: i64 = 0;
const FALLBACK_ACCEPT_TIMEOUT: i64 = crate::domain::call_types::FALLBACK_ACCEPT_TIMEOUT;

/// What a look reads besides the call and its alarm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Needs {
    /// The roster and a presence on the address (a step).
    Roster,
    /// The same, for a response: a call of a type without alarm is missing.
    AlarmAndRoster,
    /// Nothing else: a response that alerts nobody (an accept).
    AlarmOnly,
}

/// A scope's staff and their duties now: who a level can reach.
#[derive(Debug, Default)]
pub struct People {
    /// The staff (ids) without any channel now: not reached at once (§18).
    pub without_channel: Vec<String>,
    /// Every staff member of the scope.
    pub staff: Vec<Staff>,
    /// Their duties not ended.
    pub duties: Vec<Duty>,
}

impl People {
    /// The scope's people now, read from `store`; `pages`: the open staff
    /// pages where this process sees them (the local server's hub).
    pub async fn read(
        store: &dyn AlarmStore,
        scope: &Scope,
        now: DateTime<Utc>,
        pages: Option<&LiveHub>,
    ) -> Result<Self, StoreError> {
        Ok(People::of(store.roster(scope, now).await?, pages))
    }

    /// The people of a roster read. A person has a channel (§18) when a
    /// phone of theirs is subscribed for Web Push, a staff page of theirs is
    /// open (the store knows those of the WebSocket API in AWS; `pages`
    /// are the local server's, its live hub's), or they have a device for
    /// the alarm servers (DECT handset, pager). Without any, an alert
    /// cannot reach them: they are not reached at once.
    pub(crate) fn of(roster: RosterRead, pages: Option<&LiveHub>) -> Self {
        let without_channel = roster
            .staff
            .iter()
            .filter(|s| s.device.is_none())
            .filter(|s| !roster.with_channel.contains(&s.id))
            .filter(|s| !pages.is_some_and(|hub| hub.has_page(&s.id)))
            .map(|s| s.id.clone())
            .collect();
        People {
            without_channel,
            staff: roster.staff,
            duties: roster.duties,
        }
    }
}

/// What a round of the timers reads once for all of its alarms: the call
/// types and each scope's people (at most a round old, a quarter second,
/// when a step uses them).
#[derive(Debug, Default)]
pub(crate) struct Prefetched {
    pub types: Arc<Vec<CallType>>,
    pub rosters: HashMap<Scope, Arc<People>>,
}

/// What a caller already knows of a call, so that the first attempt of a
/// look reads neither its alarm nor its address: right after its open, its
/// alarm is the pending one the open stored (version 0; a conflict reads it
/// again), and a presence on its address is among the calls open before.
#[derive(Debug)]
pub(crate) struct Known {
    pub kept: KeptAlarm,
    pub presence_at: Option<DateTime<Utc>>,
}

impl Known {
    /// When a presence among `open_before` (the calls open on `call`'s
    /// address before it opened) opened at or after it.
    pub(crate) fn presence_since(
        call: &Call,
        open_before: &[Call],
        types: &[CallType],
    ) -> Option<DateTime<Utc>> {
        open_before
            .iter()
            .filter(|other| other.opened_at >= call.opened_at)
            .filter(|other| is_presence(types, &other.event))
            .map(|other| other.opened_at)
            .min()
    }

    /// A call just opened, with the calls open on its address before.
    pub(crate) fn opened(
        scope: &Scope,
        call: &Call,
        open_before: &[Call],
        types: &[CallType],
    ) -> Self {
        let alarm = Alarm::pending(call.opened_at);
        let mut call = call.clone();
        call.alarm = Some(alarm.clone());
        let presence_at = Known::presence_since(&call, open_before, types);
        Known {
            kept: KeptAlarm {
                scope: scope.clone(),
                call,
                alarm,
                version: 0,
            },
            presence_at,
        }
    }
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

impl AlarmRunner<'_> {
    /// Steps the alarm of call `call_id` of `scope` to now.
    pub async fn step_alarm(self, scope: &Scope, call_id: i64) -> Result<Looked, StoreError> {
        self.step_alarm_with(scope, call_id, None, None).await
    }

    /// [`AlarmRunner::step_alarm`] with what a round of the timers read once
    /// for all of its alarms.
    pub(crate) async fn step_alarm_with(
        self,
        scope: &Scope,
        call_id: i64,
        read: Option<&Prefetched>,
        known: Option<Known>,
    ) -> Result<Looked, StoreError> {
        let looked = self
            .advance_alarm(
                scope,
                call_id,
                Needs::Roster,
                read,
                known,
                |prior, situation| Ok(step(prior, situation)),
            )
            .await?;
        // `step` never refuses.
        Ok(looked.unwrap_or(Looked::Missing))
    }

    /// `staff`'s response to call `call_id` of their scope, then a step.
    /// `Err(Refusal)`: the 403 and 409s of DECISIONS §14 and §20. With
    /// `address` (an alarm server names the call by its id and its address,
    /// §16), a call on another address is [`Looked::Missing`] and is left as
    /// it is.
    ///
    /// Who may answer (§20) is the engine's: a person alerted for the call
    /// needs nothing more, so the first attempt reads no duty (an accept
    /// stays one read and one write). Only when the engine refuses a person
    /// it knows no duty of is their duty read and the response tried once
    /// more with it.
    pub async fn respond_to_alarm(
        self,
        staff: &Staff,
        call_id: i64,
        address: Option<&str>,
        response: Response,
    ) -> Result<Result<Looked, Refusal>, StoreError> {
        let first = self
            .respond_with_duty(staff, call_id, address, response, None)
            .await?;
        if !matches!(first, Err(Refusal::NotResponsible)) {
            return Ok(first);
        }
        let now = clock::now();
        let duty = self
            .state
            .alarm_store()?
            .duties(&staff.scope, now)
            .await?
            .into_iter()
            .find(|duty| duty.staff_id == staff.id && duty.is_active(now));
        match duty {
            Some(duty) => {
                self.respond_with_duty(staff, call_id, address, response, Some(&duty))
                    .await
            }
            None => Ok(first),
        }
    }

    async fn respond_with_duty(
        self,
        staff: &Staff,
        call_id: i64,
        address: Option<&str>,
        response: Response,
        duty: Option<&Duty>,
    ) -> Result<Result<Looked, Refusal>, StoreError> {
        // An accept stops the escalation (or is refused): it alerts nobody,
        // so it reads no roster. Declines and reads may start a level.
        let needs = match response {
            Response::Accepted => Needs::AlarmOnly,
            Response::Declined | Response::Read => Needs::AlarmAndRoster,
        };
        let elsewhere = |call: &Call| address.is_some_and(|address| call.address != address);
        let looked = self
            .advance_alarm(
                &staff.scope,
                call_id,
                needs,
                None,
                None,
                |prior, situation| {
                    if elsewhere(situation.call) {
                        // Not the call meant: nothing to write, nothing
                        // refused (a closed call elsewhere is no 409 either).
                        return Ok(Step {
                            alarm: prior.clone(),
                            effects: Vec::new(),
                            changed: false,
                        });
                    }
                    respond(prior, situation, staff, duty, response)
                },
            )
            .await?;
        Ok(looked.map(|looked| match looked {
            Looked::Call { call, .. } if elsewhere(&call) => Looked::Missing,
            looked => looked,
        }))
    }

    /// Reads, acts, writes if unchanged since the read (else again), then
    /// publishes. What it reads besides the alarm: see [`Needs`]; the call
    /// types and the scope's roster come from `read` when it has them, and
    /// the first attempt takes the alarm and the presence from `known`.
    pub(super) async fn advance_alarm<F>(
        self,
        scope: &Scope,
        call_id: i64,
        needs: Needs,
        read: Option<&Prefetched>,
        mut known: Option<Known>,
        act: F,
    ) -> Result<Result<Looked, Refusal>, StoreError>
    where
        F: Fn(&Alarm, &Situation<'_>) -> Result<Step, Refusal>,
    {
        let store = self.state.alarm_store()?;
        // The other looks of this process at this call wait meanwhile: they
        // would only lose the race for its write.
        let _held = self.state.call_locks.hold(scope, call_id).await;
        for attempt in 0..MAX_ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(pause_before_retry(attempt)).await;
            }
            let (kept, known_presence) = match known.take() {
                Some(known) => (known.kept, Some(known.presence_at)),
                None => match store.alarm(scope, call_id).await? {
                    Some(kept) => (kept, None),
                    None => return Ok(Ok(Looked::Missing)),
                },
            };
            let types = match read {
                Some(read) => Arc::clone(&read.types),
                None => Arc::new(self.state.call_types().await?),
            };
            let TypeRules {
                policy,
                interval,
                maxloops,
                accept_timeout,
            } = policy_of(&types, &kept.call.event);
            if needs != Needs::Roster && policy.is_none() {
                return Ok(Ok(Looked::Missing));
            }
            let now = clock::now();
            // Only a running alarm of an open call alerts anybody: a closed
            // call's ends, a stopped one stays, a type without alarm ends.
            // An accepted one waits for an arrival (§19): its look needs the
            // presence, and the roster once the accept times out; so does
            // an accept to it (which may come as its timeout passes).
            let running = kept.call.closed_at.is_none()
                && !policy.is_none()
                && match needs {
                    Needs::AlarmOnly => kept.alarm.awaits_arrival(),
                    Needs::Roster | Needs::AlarmAndRoster => kept.alarm.is_running(),
                };
            let (people, presence_at) = if running {
                self.roster_and_presence(scope, &kept.call, &types, read, known_presence, now)
                    .await?
            } else {
                (Arc::new(People::default()), None)
            };
            let situation = Situation {
                call: &kept.call,
                policy: &policy,
                interval,
                maxloops,
                roster: Roster {
                    staff: &people.staff,
                    duties: &people.duties,
                    now,
                },
                presence_at,
                receipt_seconds: self.state.settings.staff.receipt_seconds,
                without_channel: &people.without_channel,
                accept_timeout,
            };
            let next = match act(&kept.alarm, &situation) {
                Ok(next) => next,
                Err(refusal) => return Ok(Err(refusal)),
            };
            if !next.changed {
                return Ok(Ok(Looked::Call {
                    call: Box::new(with_alarm(&kept.call, &kept.alarm)),
                    changed: false,
                }));
            }
            if let Some(looked) = self.write_step(scope, &kept, &next, &types, now).await? {
                return Ok(Ok(looked));
            }
        }
        Err(StoreError::Contended(format!(
            "the alarm of call {call_id} was written by other looks under \
             {MAX_ATTEMPTS} attempts of this one in a row"
        )))
    }

    /// Who a running alarm can reach now and when a presence opened on its
    /// address: from what the caller read already where it did (a round of
    /// the timers, a call just opened), else from the store.
    async fn roster_and_presence(
        self,
        scope: &Scope,
        call: &Call,
        types: &[CallType],
        read: Option<&Prefetched>,
        known_presence: Option<Option<DateTime<Utc>>>,
        now: DateTime<Utc>,
    ) -> Result<(Arc<People>, Option<DateTime<Utc>>), StoreError> {
        let people = match read.and_then(|read| read.rosters.get(scope)) {
            Some(people) => Arc::clone(people),
            None => Arc::new(
                People::read(
                    self.state.alarm_store()?.as_ref(),
                    scope,
                    now,
                    self.state.live.as_ref(),
                )
                .await?,
            ),
        };
        let presence_at = match known_presence {
            Some(presence_at) => presence_at,
            None => self.presence_at(scope, call, types).await?,
        };
        Ok((people, presence_at))
    }

    /// Writes the step `next` of `kept` with its audit lines if nobody
    /// wrote the alarm meanwhile, then publishes it; `None` on a conflict
    /// (the caller reads and steps again).
    async fn write_step(
        self,
        scope: &Scope,
        kept: &KeptAlarm,
        next: &Step,
        types: &[CallType],
        now: DateTime<Utc>,
    ) -> Result<Option<Looked>, StoreError> {
        let audit = AuditEvent::all(&next.effects, now);
        let store = self.state.alarm_store()?;
        match store.write_alarm(kept, &next.alarm, &audit).await? {
            AlarmWrite::Written => {
                let call = with_alarm(&kept.call, &next.alarm);
                self.publish_alarm(scope, &call, &kept.alarm, next, types, now);
                tracing::info!(
                    scope = scope.as_str(),
                    call_id = kept.call.id,
                    status = next.alarm.status.as_str(),
                    // Not `level`: that key is the line's severity.
                    alarm_level = next.alarm.level,
                    effects = next.effects.len(),
                    next_at = next
                        .alarm
                        .next_at
                        .map(|at| at.to_rfc3339_opts(SecondsFormat::Millis, true))
                        .as_deref(),
                    "alarm stepped"
                );
                Ok(Some(Looked::Call {
                    call: Box::new(call),
                    changed: true,
                }))
            }
            AlarmWrite::Conflict => {
                tracing::debug!(
                    scope = scope.as_str(),
                    call_id = kept.call.id,
                    "alarm written meanwhile: again"
                );
                Ok(None)
            }
        }
    }

    /// When a presence opened on `call`'s address at or after it: the
    /// earliest open call of a presence type there.
    async fn presence_at(
        self,
        scope: &Scope,
        call: &Call,
        types: &[CallType],
    ) -> Result<Option<DateTime<Utc>>, StoreError> {
        let snapshot = self.state.store.snapshot(scope, &call.address).await?;
        Ok(snapshot
            .open_calls
            .iter()
            .filter(|other| other.id != call.id && other.opened_at >= call.opened_at)
            .filter(|other| is_presence(types, &other.event))
            .map(|other| other.opened_at)
            .min())
    }

    /// Tells displays and staff pages what a written step changed, and
    /// hands its alerts and cancels to the push adapter (phones whose page
    /// is closed).
    pub(crate) fn publish_alarm(
        self,
        scope: &Scope,
        call: &Call,
        prior: &Alarm,
        next: &Step,
        types: &[CallType],
        now: DateTime<Utc>,
    ) {
        self.state.push_alarm(scope, call, next, types, now);
        let Some(hub) = self.state.listened_hub() else {
            return;
        };
        let zone = self.state.settings.time_zone;
        let event = |message: LiveMessage<'_>| LiveEvent {
            scope: scope.clone(),
            section: call.section.clone(),
            message: message.to_json(),
        };
        let has = |wanted: fn(&Effect) -> bool| next.effects.iter().any(wanted);
        // A closed call's end was told by `call.closed`; displays see the
        // rest of an alarm's changes (those that grow its version).
        if call.closed_at.is_none() && next.alarm.changes != prior.changes {
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
        if next.effects.iter().any(Effect::is_for_a_person) {
            let record = call_json(call, types, zone, now);
            for effect in &next.effects {
                if let Some((staff, message)) = LiveMessage::for_person(effect, call, &record) {
                    hub.publish_to(event(message), LiveAudience::Person(staff.id.clone()));
                }
            }
        }
    }
}

/// The pause before attempt `attempt` (1 or more) of a look whose writes
/// lost: doubling from [`FIRST_PAUSE_MS`] up to [`LONGEST_PAUSE_MS`], each
/// drawn between half and all of it, so that the looks that lost together
/// do not read and write together again.
fn pause_before_retry(attempt: usize) -> Duration {
    let doublings = u32::try_from(attempt - 1).unwrap_or(u32::MAX).min(16);
    let longest = FIRST_PAUSE_MS
        .saturating_mul(1 << doublings)
        .min(LONGEST_PAUSE_MS);
    let jitter = u64::from(getrandom::u32().unwrap_or(u32::MAX)) % (longest / 2 + 1);
    Duration::from_millis(longest - jitter)
}

/// `call` with `alarm` as its alarm, as a look answers it.
fn with_alarm(call: &Call, alarm: &Alarm) -> Call {
    let mut call = call.clone();
    call.alarm = Some(alarm.clone());
    call
}

/// What a call's type tells the engine: its policy, re-alert interval, most
/// alerts and accept timeout; a type an admin removed alarms with
/// [`Policy::fallback`], never silence.
#[derive(Debug, Clone)]
pub(crate) struct TypeRules {
    pub policy: Policy,
    pub interval: i64,
    pub maxloops: i64,
    pub accept_timeout: i64,
}

/// The [`TypeRules`] of the call type named `event`.
pub(crate) fn policy_of(types: &[CallType], event: &str) -> TypeRules {
    match types.iter().find(|t| t.name == event) {
        Some(t) => TypeRules {
            policy: t.escalation.clone(),
            interval: t.notification_interval,
            maxloops: t.notification_maxloops,
            accept_timeout: t.accept_timeout,
        },
        None => TypeRules {
            policy: Policy::fallback(),
            interval: FALLBACK_INTERVAL,
            maxloops: FALLBACK_MAXLOOPS,
            accept_timeout: FALLBACK_ACCEPT_TIMEOUT,
        },
    }
}

/// Whether calls of `event` are staff present in the room.
pub fn is_presence(types: &[CallType], event: &str) -> bool {
    types.iter().any(|t| t.name == event && t.is_presence())
}
