//! An alarm's first step and its end, taken with the writes that cause them
//! (DECISIONS §14), where the store can: the open of a call writes its
//! alarm already stepped ([`crate::store::Store::open_call_with_alarm`]) and
//! its close ends an alarm that rings for nobody
//! ([`crate::store::Store::close_calls`]). Neither then needs a look of its
//! own after the write (a read and a write each, [`crate::app::alarm::looks`]),
//! and the first level is committed with the call itself.
//!
//! The request reads the scope's roster with the address's snapshot (on
//! the embedded store in the same read), so the answer waits for no extra
//! round trip. A sign-on committed between
//! that read and the open's commit is seen by the next look (an unattended
//! call is looked at again every 30 s, and each sign-on looks at the
//! scope's open calls), as it would be with a look right after the commit.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::app::alarm::AlarmRunner;
use crate::app::alarm::step::{Known, People, is_presence, policy_of};
use crate::domain::alarm::audit::AuditEvent;
use crate::domain::alarm::{Alarm, AlarmStatus, Roster, Situation, Step, step};
use crate::domain::model::{Call, CallType, NewCall, Scope};
use crate::store::{AddressSnapshot, FirstAlarm, StoreError};

/// The first step of `call`'s alarm (`open_before`: the calls open on its
/// address before it; a presence among them stops it at once), with the
/// roster read for it; without one, the pending alarm for a look to step.
pub(crate) fn first_step(
    call: &NewCall,
    open_before: &[Call],
    types: &[CallType],
    people: Option<People>,
    receipt_seconds: i64,
    now: DateTime<Utc>,
) -> FirstStep {
    let Some(people) = people else {
        return FirstStep {
            first: FirstAlarm::pending(call.opened_at),
            step: None,
            people: None,
        };
    };
    // The id is the store's to give; the engine reads none.
    let opened = call.opened(0);
    let rules = policy_of(types, &call.event);
    let situation = Situation {
        call: &opened,
        policy: &rules.policy,
        interval: rules.interval,
        maxloops: rules.maxloops,
        accept_timeout: rules.accept_timeout,
        roster: Roster {
            staff: &people.staff,
            duties: &people.duties,
            now,
        },
        presence_at: Known::presence_since(&opened, open_before, types),
        receipt_seconds,
        without_channel: &people.without_channel,
    };
    let step = step(&Alarm::pending(call.opened_at), &situation);
    FirstStep {
        first: FirstAlarm {
            alarm: step.alarm.clone(),
            audit: AuditEvent::all(&step.effects, now),
        },
        step: Some(step),
        people: Some(Arc::new(people)),
    }
}

/// A new call's alarm as the request stepped it, before the open's write.
#[derive(Debug)]
pub struct FirstStep {
    /// What the open writes (the pending alarm when no step was taken).
    pub first: FirstAlarm,
    /// The step taken, to publish once the open committed; `None`: the
    /// roster could not be read, and a look steps the pending alarm.
    step: Option<Step>,
    /// The roster it was taken with, for the look at a store that kept the
    /// pending alarm instead ([`crate::store::Store::open_call_with_alarm`]).
    people: Option<Arc<People>>,
}

impl AlarmRunner<'_> {
    /// The snapshot of `address` and, where alarms are routed, the scope's
    /// roster for the open's first step, read together
    /// ([`crate::store::alarms::AlarmStore::snapshot_and_roster`]); no
    /// roster: the open stores the pending alarm for a look to step.
    pub async fn snapshot_for_open(
        self,
        scope: &Scope,
        address: &str,
        now: DateTime<Utc>,
    ) -> Result<(AddressSnapshot, Option<People>), StoreError> {
        let Some(store) = self.state.alarms.as_ref() else {
            return Ok((self.state.store.snapshot(scope, address).await?, None));
        };
        let (snapshot, roster) = store.snapshot_and_roster(scope, address, now).await?;
        let people = roster.map(|roster| People::of(roster, self.state.live.as_ref()));
        Ok((snapshot, people))
    }

    /// After an open committed `call`: `call.opened` to displays, then,
    /// when the store wrote the first step, that step's news and alerts,
    /// else a look (the store kept the pending alarm); and a presence's
    /// stop of the calls open before it on its address.
    ///
    /// Displays are told the open with the pending alarm and then the
    /// step, each with its own version, as when a look stepped it after
    /// the write: the same messages whichever store runs.
    pub fn after_open(
        self,
        scope: &Scope,
        call: &Call,
        first: FirstStep,
        open_before: &[Call],
        types: &[CallType],
        now: DateTime<Utc>,
    ) {
        let pending = Alarm::pending(call.opened_at);
        let stepped = first
            .step
            .filter(|_| call.alarm.as_ref() == Some(&first.first.alarm))
            .filter(|_| call.alarm.as_ref() != Some(&pending));
        let Some(step) = stepped else {
            self.state
                .publish_calls(scope, std::slice::from_ref(call), types);
            self.look_after_open(scope, call, open_before, types, first.people);
            return;
        };
        let as_opened = Call {
            alarm: Some(pending.clone()),
            ..call.clone()
        };
        self.state
            .publish_calls(scope, std::slice::from_ref(&as_opened), types);
        self.publish_alarm(scope, call, &pending, &step, types, now);
        if is_presence(types, &call.event) {
            let others = open_before.iter().map(|open| open.id).collect();
            self.look_later(scope, others, types);
        }
    }

    /// After a close committed `closed`: a look at each whose alarm the
    /// store did not end (its ringing alerts are to be cancelled).
    pub fn after_close(self, scope: &Scope, closed: &[Call], types: &[CallType]) {
        let to_look = closed
            .iter()
            .filter(|call| {
                call.alarm
                    .as_ref()
                    .is_some_and(|alarm| alarm.status != AlarmStatus::Ended)
            })
            .map(|call| call.id)
            .collect();
        self.look_later(scope, to_look, types);
    }
}
