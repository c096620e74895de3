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

use chrono::{DateTime, Duration, Utc};

use crate::domain::alarm::policy::Policy;
use crate::domain::alarm::staff::{Roster, Staff};
use crate::domain::alarm::state::{Alarm, AlarmStatus, Answer, Recipient, Response, StaffRef};
use crate::domain::model::Call;

/// How often an unattended call is looked at again for somebody who came
/// on duty meanwhile (a duty's sign-on also looks at once).
pub const UNATTENDED_RECHECK_SECONDS: i64 = 30;

/// What the engine knows about one call now.
#[derive(Debug, Clone, Copy)]
pub struct Situation<'a> {
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
}

/// Why a recipient's alert stops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelReason {
    Accepted(StaffRef),
    Present,
    Ended,
    /// They went off duty or left the audience.
    OffDuty,
}

/// A message to send, and a line of the call's audit (DECISIONS §14).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Alert `staff` (on their phone, handset or pager); `repeat` for a re-alert.
    Alert {
        staff: StaffRef,
        level: usize,
        repeat: bool,
    },
    /// Stop `staff`'s ringing alert.
    Cancel {
        staff: StaffRef,
        reason: CancelReason,
    },
    /// A level after the first started.
    Escalated {
        level: usize,
    },
    Accepted {
        by: StaffRef,
    },
    Declined {
        by: StaffRef,
    },
    Read {
        by: StaffRef,
    },
    /// Nobody can be reached.
    Unattended,
    /// A presence or the close stopped the escalation.
    Stopped {
        status: AlarmStatus,
    },
}

/// The alarm to keep and what to send. `changed`: whether anything must be
/// written (else the caller writes nothing and sends nothing).
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub alarm: Alarm,
    pub effects: Vec<Effect>,
    pub changed: bool,
}

/// Why a response is refused (409).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    AlreadyAccepted(StaffRef),
    CallClosed,
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
    };
    let ended = step(prior, &situation);
    ended.changed.then_some(ended)
}

/// `staff`'s response, then [`step`]. A second identical response changes
/// nothing (and is no refusal).
pub fn respond(
    prior: &Alarm,
    situation: &Situation<'_>,
    staff: &Staff,
    response: Response,
) -> Result<Step, Refusal> {
    if situation.call.closed_at.is_some() {
        return Err(Refusal::CallClosed);
    }
    let now = situation.roster.now;
    let by = StaffRef {
        id: staff.id.clone(),
        name: staff.name.clone(),
    };
    let mut alarm = prior.clone();
    let mut effects = Vec::new();
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
                alarm.accepted = Some(answer.clone());
                alarm.answers.push(answer);
                silence(&mut alarm, &by.id);
                effects.push(Effect::Accepted { by });
            }
        },
        // Declining after accepting would take back an "Ich komme" others
        // were cancelled for: it changes nothing.
        Response::Declined if repeated || alarm.accepted.is_some() => {}
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
fn wire_view(
    alarm: &Alarm,
) -> (
    AlarmStatus,
    usize,
    usize,
    Option<String>,
    Option<DateTime<Utc>>,
) {
    (
        alarm.status,
        alarm.level,
        alarm.levels,
        alarm.accepted.as_ref().map(|a| a.staff.id.clone()),
        alarm.next_level_at,
    )
}

fn advance(alarm: &mut Alarm, situation: &Situation<'_>, effects: &mut Vec<Effect>) {
    let call = situation.call;
    let now = situation.roster.now;
    let levels = situation.policy.levels();

    if alarm.is_pending() && levels.is_empty() {
        // No alarm for this type: kept as stopped, never shown.
        alarm.status = AlarmStatus::Ended;
        alarm.next_at = None;
        return;
    }
    alarm.levels = alarm.levels.max(levels.len()).max(alarm.level);

    let stop = if call.closed_at.is_some() {
        Some((AlarmStatus::Ended, CancelReason::Ended))
    } else if alarm.status.is_stopped() {
        None
    } else if let Some(accepted) = &alarm.accepted {
        Some((
            AlarmStatus::Accepted,
            CancelReason::Accepted(accepted.staff.clone()),
        ))
    } else if let Some(present_at) = situation.presence_at.filter(|at| *at >= call.opened_at) {
        alarm.present_at = Some(present_at);
        Some((AlarmStatus::Present, CancelReason::Present))
    } else {
        None
    };
    if let Some((status, reason)) = stop.filter(|(status, _)| alarm.status != *status) {
        for r in alarm.recipients.iter_mut().filter(|r| r.ringing) {
            r.ringing = false;
            effects.push(Effect::Cancel {
                staff: r.staff.clone(),
                reason: reason.clone(),
            });
        }
        if status != AlarmStatus::Accepted {
            effects.push(Effect::Stopped { status });
        }
        alarm.status = status;
    }
    if alarm.status.is_stopped() {
        alarm.next_at = None;
        alarm.next_level_at = None;
        return;
    }

    // Levels due: by time, or at once when the newest level's audience is
    // empty or nobody reachable is left (everyone declined).
    let level_time = |index: usize| call.opened_at + Duration::seconds(levels[index].after);
    loop {
        if alarm.level >= levels.len() {
            break;
        }
        let due_by_time = level_time(alarm.level) <= now;
        let newest_empty = alarm.level > 0
            && situation
                .roster
                .audience(&levels[alarm.level - 1].to, call.section.as_deref())
                .is_empty();
        let nobody_left = reachable(alarm, situation).is_empty();
        if !(alarm.level == 0 || due_by_time || newest_empty || nobody_left) {
            break;
        }
        alarm.level += 1;
        alarm.level_started_at.push(now);
        if alarm.level > 1 {
            effects.push(Effect::Escalated { level: alarm.level });
        }
    }

    let reach = reachable(alarm, situation);
    // Whoever left the audience is no longer alerted.
    for r in alarm.recipients.iter_mut() {
        if r.ringing && !reach.iter().any(|(s, _)| s.id == r.staff.id) {
            r.ringing = false;
            effects.push(Effect::Cancel {
                staff: r.staff.clone(),
                reason: CancelReason::OffDuty,
            });
        }
    }
    let mut next_alert: Option<DateTime<Utc>> = None;
    for (staff, level) in &reach {
        let index = match alarm.recipients.iter().position(|r| r.staff.id == staff.id) {
            Some(index) => index,
            None => {
                alarm.recipients.push(Recipient {
                    staff: StaffRef {
                        id: staff.id.clone(),
                        name: staff.name.clone(),
                    },
                    level: *level,
                    alerts: 0,
                    last_alert_at: now,
                    ringing: false,
                });
                alarm.recipients.len() - 1
            }
        };
        let r = &mut alarm.recipients[index];
        let loops_left = situation.maxloops == 0 || r.alerts < situation.maxloops;
        let realert_at = r.last_alert_at + Duration::seconds(situation.interval);
        let first = r.alerts == 0;
        let again = !first && situation.interval > 0 && loops_left && realert_at <= now;
        if first || again {
            r.alerts += 1;
            r.last_alert_at = now;
            r.ringing = true;
            effects.push(Effect::Alert {
                staff: r.staff.clone(),
                level: *level,
                repeat: again,
            });
        }
        let more =
            situation.interval > 0 && (situation.maxloops == 0 || r.alerts < situation.maxloops);
        if more {
            let at = r.last_alert_at + Duration::seconds(situation.interval);
            next_alert = Some(next_alert.map_or(at, |n| n.min(at)));
        }
    }

    let unattended = reach.is_empty();
    if unattended && alarm.status != AlarmStatus::Unattended {
        effects.push(Effect::Unattended);
    }
    alarm.status = if unattended {
        alarm.was_unattended = true;
        AlarmStatus::Unattended
    } else {
        AlarmStatus::Alerting
    };
    alarm.next_level_at = (alarm.level < levels.len()).then(|| level_time(alarm.level));
    let recheck = unattended.then(|| now + Duration::seconds(UNATTENDED_RECHECK_SECONDS));
    alarm.next_at = [alarm.next_level_at, next_alert, recheck]
        .into_iter()
        .flatten()
        .min();
}

/// Who the started levels reach now, each with the first level that reaches
/// them, in level order: their audiences today, without those who declined.
fn reachable<'a>(alarm: &Alarm, situation: &Situation<'a>) -> Vec<(&'a Staff, usize)> {
    let levels = situation.policy.levels();
    let mut reach: Vec<(&Staff, usize)> = Vec::new();
    for (index, level) in levels.iter().enumerate().take(alarm.level) {
        for staff in situation
            .roster
            .audience(&level.to, situation.call.section.as_deref())
        {
            if !alarm.declined_by(&staff.id) && !reach.iter().any(|(s, _)| s.id == staff.id) {
                reach.push((staff, index + 1));
            }
        }
    }
    reach
}

#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;
