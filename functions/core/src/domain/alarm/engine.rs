//! The alarm engine (DECISIONS §14): a pure function from a call's alarm as
//! kept, the situation now (the call, its type's policy, who is on duty,
//! whether a presence came) to the alarm as it must be kept and the
//! messages to send. No store and no clock: `now` is the roster's, so every
//! rule is tested with plain values and property tests (`engine/properties.rs`).
//!
//! Whoever runs it (the local server's timers and handlers, the AWS alarm
//! function) reads the alarm with its version, calls [`step`] or
//! [`respond`], and writes the result only if the version is unchanged;
//! on a conflict it reads again and steps again. That conditional write is
//! what makes a level fire once when two workers look at it, and the first
//! accept win.

use chrono::{DateTime, Utc};

use crate::domain::alarm::policy::Policy;
use crate::domain::alarm::staff::{Duty, Roster, Staff};
use crate::domain::alarm::state::{Alarm, AlarmStatus, Answer, Response, StaffRef};
use crate::domain::model::Call;

mod advance;

use advance::advance;

/// How often an unattended call is looked at again for somebody who came
/// on duty meanwhile (a duty's sign-on also looks at once).
pub(crate) const UNATTENDED_RECHECK_SECONDS: i64 = 30;

/// What the engine knows about one call now.
#[derive(Debug, Clone, Copy)]
pub struct Situation<'a> {
    /// The call as it stands now; once it has a `closed_at`, the alarm ends.
    pub call: &'a Call,
    /// The call type's policy (an unknown type: [`Policy::fallback`]).
    pub policy: &'a Policy,
    /// Re-alert every this many seconds (0: never again).
    pub interval: i64,
    /// At most this many alerts per person (0: until answered).
    pub maxloops: i64,
    /// The staff, their duties and now.
    pub roster: Roster<'a>,
    /// When a presence opened on the call's address, if one did at or after it.
    pub presence_at: Option<DateTime<Utc>>,
    /// A recipient without a receipt this many seconds after their first
    /// alert is not reached (`RECEIPT_SECONDS`, §18).
    pub receipt_seconds: i64,
    /// The staff (ids) who have no channel at all now (no push
    /// subscription, no open page, no device an alarm server serves): not
    /// reached at once when alerted (§18).
    pub without_channel: &'a [String],
    /// An accept followed by neither a presence nor the close within this
    /// many seconds resumes the alarm (the call type's `accept_timeout`,
    /// DECISIONS §19).
    pub accept_timeout: i64,
}

/// Why a recipient's alert stops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelReason {
    /// Someone (named) accepted the call.
    Accepted(StaffRef),
    /// A presence opened on the call's address: staff are in the room.
    Present,
    /// The central system closed the call.
    Ended,
    /// They went off duty or left the audience.
    OffDuty,
}

/// A message to send, and a line of the call's audit (DECISIONS §14).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Alert `staff` (on their phone, handset or pager); `repeat` for a re-alert.
    Alert {
        /// Who to alert.
        staff: StaffRef,
        /// The first level (1-based) whose audience includes them.
        level: usize,
        /// Not their first alert: a re-alert after `interval` seconds, or
        /// at once as they are back in the audience.
        repeat: bool,
        /// Which alert of theirs for this call it is (1 = the first): their
        /// receipt names it (§18).
        alert: i64,
    },
    /// Stop `staff`'s ringing alert.
    Cancel {
        /// Whose alert stops.
        staff: StaffRef,
        /// Why it stops (the audit line's `detail`).
        reason: CancelReason,
    },
    /// A level after the first started.
    Escalated {
        /// The level (1-based) that started: 2 or more.
        level: usize,
    },
    /// Somebody accepted ("Ich komme"); the others' alerts are cancelled in the
    /// same step.
    Accepted {
        /// Who accepted.
        by: StaffRef,
    },
    /// Somebody declined: they are not alerted again for this call.
    Declined {
        /// Who declined.
        by: StaffRef,
    },
    /// Somebody marked the call as seen (kept for the report); it stops nothing.
    Read {
        /// Who read it.
        by: StaffRef,
    },
    /// Somebody's phone (or page, or alarm server) confirmed that they got
    /// the alert (§18); it stops nothing.
    Received {
        /// Whose receipt it is.
        by: StaffRef,
    },
    /// An accept was followed by neither a presence nor the close within
    /// the call type's `accept_timeout` (§19): the alarm resumes ("<Name>
    /// kam nicht").
    AcceptExpired {
        /// Who accepted and did not come.
        by: StaffRef,
    },
    /// Nobody can be reached.
    Unattended,
    /// A presence or the close stopped the escalation.
    Stopped {
        /// Where it stopped: `present` or `ended` (an accept is [`Effect::Accepted`]).
        status: AlarmStatus,
    },
}

impl Effect {
    /// Whether it is a message to one person (an alert or its cancel: their
    /// live message and their push), not news for everyone.
    pub fn is_for_a_person(&self) -> bool {
        matches!(self, Effect::Alert { .. } | Effect::Cancel { .. })
    }
}

/// The alarm to keep and what to send. `changed`: whether anything must be
/// written (else the caller writes nothing and sends nothing).
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The alarm as it must be kept; the same as the prior one when nothing
    /// changed.
    pub alarm: Alarm,
    /// The messages to send and audit lines to keep, in the order they happened.
    pub effects: Vec<Effect>,
    /// Whether `alarm` differs from the one stepped.
    pub changed: bool,
}

/// Why a response is refused (403, 409).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The person was never alerted for the call and is not on duty for
    /// its section: `not_responsible` (403, §20).
    NotResponsible,
    /// Someone else (named) accepted first: `already_accepted`.
    AlreadyAccepted(StaffRef),
    /// The call is closed: `call_closed`.
    CallClosed,
}

/// Whether `staff` may answer the call (§20): they were alerted for it, or
/// `duty` (theirs, as far as the caller read it) covers its section now.
/// Anyone else's response changes nothing: a lost or misused phone cannot
/// stop the escalations of calls that are none of its owner's.
fn may_answer(
    prior: &Alarm,
    call: &Call,
    staff: &Staff,
    duty: Option<&Duty>,
    now: DateTime<Utc>,
) -> bool {
    prior.recipient(&staff.id).is_some()
        || duty.is_some_and(|duty| {
            duty.staff_id == staff.id && duty.is_active(now) && duty.covers(call.section.as_deref())
        })
}

/// The alarm of `prior` brought up to `situation.roster.now`: stops, levels
/// due (by time, or at once when nobody is left to alert), alerts and
/// re-alerts, unattended, and when to look again.
pub fn step(prior: &Alarm, situation: &Situation<'_>) -> Step {
    let mut alarm = prior.clone();
    let mut effects = Vec::new();
    advance(&mut alarm, situation, &mut effects);
    finish(prior, alarm, effects)
}

/// The end of `prior` at its call's close, when that end cancels nobody:
/// exactly the step a look after the close would take (status `ended`,
/// nothing due, the `ended` audit line), so that the store writes it with
/// the close itself and the close needs no look of its own. `None` when
/// there is something a look must do: a ringing alert to cancel (the look
/// sends the cancels), an alarm never stepped (pending: whether its end is
/// audited depends on the policy), or nothing to change (ended already).
///
/// A closed call's step reads neither the policy nor the roster once the
/// alarm has been stepped (the property tests check it against [`step`]).
pub fn quiet_end(prior: &Alarm, closed: &Call, now: DateTime<Utc>) -> Option<Step> {
    if closed.closed_at.is_none()
        || prior.is_pending()
        || prior.recipients.iter().any(|r| r.ringing)
    {
        return None;
    }
    let situation = Situation {
        call: closed,
        policy: &Policy::none(),
        interval: 0,
        maxloops: 0,
        roster: Roster {
            staff: &[],
            duties: &[],
            now,
        },
        presence_at: None,
        receipt_seconds: 0,
        without_channel: &[],
        accept_timeout: 0,
    };
    let ended = step(prior, &situation);
    ended.changed.then_some(ended)
}

/// `staff`'s response, then [`step`]. A second identical response changes
/// nothing (and is no refusal). `duty`: the person's duty now where the
/// caller read it (else their duty in the situation's roster, if any);
/// without either, only a person alerted for the call may answer.
pub fn respond(
    prior: &Alarm,
    situation: &Situation<'_>,
    staff: &Staff,
    duty: Option<&Duty>,
    response: Response,
) -> Result<Step, Refusal> {
    let now = situation.roster.now;
    let duty = duty.or_else(|| {
        situation
            .roster
            .duties
            .iter()
            .find(|d| d.staff_id == staff.id && d.is_active(now))
    });
    if !may_answer(prior, situation.call, staff, duty, now) {
        return Err(Refusal::NotResponsible);
    }
    if situation.call.closed_at.is_some() {
        return Err(Refusal::CallClosed);
    }
    let by = StaffRef {
        id: staff.id.clone(),
        name: staff.name.clone(),
    };
    let mut alarm = prior.clone();
    let mut effects = Vec::new();
    // An accept whose timeout passed before any look expired it is over
    // before this response is weighed (§19): its timer may be a moment late.
    if advance::accept_expired(&alarm, situation) {
        advance(&mut alarm, situation, &mut effects);
    }
    let answer = Answer {
        staff: by.clone(),
        response,
        at: now,
    };
    let repeated = alarm
        .answers
        .iter()
        .any(|a| a.staff.id == by.id && a.response == response);
    match response {
        Response::Accepted => match &alarm.accepted {
            Some(first) if first.staff.id == by.id => {}
            Some(first) => return Err(Refusal::AlreadyAccepted(first.staff.clone())),
            None => {
                // A new accept after one that expired (§19) starts its own
                // timeout; the answers keep each person's first.
                alarm.accepted = Some(answer.clone());
                if !repeated {
                    alarm.answers.push(answer);
                }
                silence(&mut alarm, &by.id);
                effects.push(Effect::Accepted { by });
            }
        },
        // Declining after accepting would take back an "Ich komme" others
        // were cancelled for: it changes nothing.
        Response::Declined if alarm.declined_by(&by.id) || alarm.accepted.is_some() => {}
        Response::Declined => {
            alarm.answers.push(answer);
            silence(&mut alarm, &by.id);
            effects.push(Effect::Declined { by });
        }
        Response::Read if repeated => {}
        Response::Read => {
            alarm.answers.push(answer);
            effects.push(Effect::Read { by });
        }
    }
    advance(&mut alarm, situation, &mut effects);
    Ok(finish(prior, alarm, effects))
}

/// `staff_id`'s receipt for their alert number `alert` of this call
/// (§18), then [`step`]: the first receipt is kept with its time (they are
/// reached from now on), a later one changes nothing. `None` when the call
/// never alerted them that often: an unknown receipt.
pub fn receive(
    prior: &Alarm,
    situation: &Situation<'_>,
    staff_id: &str,
    alert: i64,
) -> Option<Step> {
    let known = prior
        .recipient(staff_id)
        .is_some_and(|r| (1..=r.alerts).contains(&alert));
    if !known {
        return None;
    }
    let mut alarm = prior.clone();
    let mut effects = Vec::new();
    if let Some(r) = alarm
        .recipients
        .iter_mut()
        .find(|r| r.staff.id == staff_id && r.received_at.is_none())
    {
        r.received_at = Some(situation.roster.now);
        effects.push(Effect::Received {
            by: r.staff.clone(),
        });
    }
    advance(&mut alarm, situation, &mut effects);
    Some(finish(prior, alarm, effects))
}

fn silence(alarm: &mut Alarm, staff_id: &str) {
    if let Some(r) = alarm.recipients.iter_mut().find(|r| r.staff.id == staff_id) {
        r.ringing = false;
    }
}

fn finish(prior: &Alarm, mut alarm: Alarm, effects: Vec<Effect>) -> Step {
    if wire_view(&alarm) != wire_view(prior) {
        alarm.changes = prior.changes + 1;
    }
    let changed = alarm != *prior;
    Step {
        alarm,
        effects,
        changed,
    }
}

/// What displays are shown of an alarm: a change of it grows the version.
/// A receipt is in it (§18: the tile says who got the alert, and says
/// "Nicht zugestellt" after `RECEIPT_SECONDS` when nobody did), so that it
/// reaches the displays at once.
fn wire_view(alarm: &Alarm) -> WireView<'_> {
    (
        alarm.status,
        alarm.level,
        alarm.levels,
        alarm.accepted.as_ref().map(|a| a.staff.id.as_str()),
        alarm.next_level_at,
        alarm
            .recipients
            .iter()
            .filter(|r| r.received_at.is_some())
            .map(|r| r.staff.id.as_str())
            .collect(),
        alarm.not_arrived.len(),
    )
}

/// Status, level, levels, who accepted, the next level's time, who
/// received, how many accepts expired ("kam nicht", §19).
type WireView<'a> = (
    AlarmStatus,
    usize,
    usize,
    Option<&'a str>,
    Option<DateTime<Utc>>,
    Vec<&'a str>,
    usize,
);

#[cfg(test)]
mod accept_timeout_tests;
#[cfg(test)]
mod answer_tests;
#[cfg(test)]
mod properties;
#[cfg(test)]
mod receipt_tests;
#[cfg(test)]
mod tests;
