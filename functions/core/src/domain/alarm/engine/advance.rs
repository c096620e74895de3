//! What a step does after a response (if any): brings the alarm up to the
//! roster's now, section by section: stops, levels due, who is reached,
//! their alerts and re-alerts, unattended, and when to look again.

use chrono::{DateTime, Duration, Utc};

use super::{CancelReason, Effect, Situation, UNATTENDED_RECHECK_SECONDS};
use crate::domain::alarm::staff::Staff;
use crate::domain::alarm::state::{Alarm, AlarmStatus, Recipient, StaffRef};

/// Brings `alarm` up to now (see [`step`]), the sections in this order:
/// stops, levels due, who is reached, their alerts, and what comes next.
pub(super) fn advance(alarm: &mut Alarm, situation: &Situation<'_>, effects: &mut Vec<Effect>) {
    let levels = situation.policy.levels();
    if alarm.is_pending() && levels.is_empty() {
        // No alarm for this type: kept as stopped, never shown.
        alarm.status = AlarmStatus::Ended;
        alarm.next_at = None;
        return;
    }
    alarm.levels = alarm.levels.max(levels.len()).max(alarm.level);

    if let Some((status, reason)) = stop_due(alarm, situation) {
        stop(alarm, status, reason, effects);
    }
    let mut resumed = false;
    if alarm.status == AlarmStatus::Accepted && alarm.present_at.is_none() {
        match arrival(alarm, situation) {
            Arrival::Present(at) => alarm.present_at = Some(at),
            Arrival::Awaited(due) => {
                alarm.next_at = Some(due);
                alarm.next_level_at = None;
                return;
            }
            Arrival::Expired => {
                resume(alarm, effects);
                resumed = true;
            }
        }
    }
    if alarm.status.is_stopped() {
        alarm.next_at = None;
        alarm.next_level_at = None;
        return;
    }

    if resumed {
        start_next_level(alarm, situation, effects);
    }
    start_due_levels(alarm, situation, effects);
    let reach = reachable(alarm, situation);
    cancel_unreached(alarm, &reach, effects);
    let next_alert = alert_reached(alarm, situation, &reach, effects);
    // Nobody left who may still get it: none reachable, or none of them
    // reached (§18: the not reached are still alerted meanwhile).
    let unattended = reach
        .iter()
        .all(|(staff, _)| not_reached(alarm, situation, &staff.id));
    let next_deadline = next_receipt_deadline(alarm, situation, &reach);
    settle(
        alarm,
        situation,
        unattended,
        [next_alert, next_deadline].into_iter().flatten().min(),
        effects,
    );
}

/// The stop the alarm comes to now, if it is not there yet: the close ends
/// it (even a stopped one), else the first accept or a presence at or after
/// the call's opening (whose time is kept) stops a running one.
fn stop_due(alarm: &mut Alarm, situation: &Situation<'_>) -> Option<(AlarmStatus, CancelReason)> {
    let call = situation.call;
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
    stop.filter(|(status, _)| alarm.status != *status)
}

/// What became of an accept (DECISIONS §19: an accept is not an arrival).
enum Arrival {
    /// A presence opened on the call's address at or after the call (when):
    /// staff is in the room, the alarm stays accepted.
    Present(DateTime<Utc>),
    /// Neither yet: the timeout ends then.
    Awaited(DateTime<Utc>),
    /// Neither came within the timeout: the alarm resumes.
    Expired,
}

/// When the accept of an accepted alarm (not closed, not present yet)
/// times out.
fn accept_due_at(alarm: &Alarm, situation: &Situation<'_>) -> Option<DateTime<Utc>> {
    let accepted = alarm.accepted.as_ref()?;
    Some(accepted.at + Duration::seconds(situation.accept_timeout))
}

fn arrival(alarm: &Alarm, situation: &Situation<'_>) -> Arrival {
    let call = situation.call;
    if let Some(at) = situation.presence_at.filter(|at| *at >= call.opened_at) {
        return Arrival::Present(at);
    }
    match accept_due_at(alarm, situation) {
        Some(due) if due > situation.roster.now => Arrival::Awaited(due),
        Some(_) => Arrival::Expired,
        // Accepted without an accept kept: nothing to wait for (never
        // written so; read as an arrival rather than a silent alarm).
        None => Arrival::Expired,
    }
}

/// Whether `alarm` is accepted and its accept timed out by now, with no
/// presence and no close: the next step resumes it (§19).
pub(super) fn accept_expired(alarm: &Alarm, situation: &Situation<'_>) -> bool {
    alarm.status == AlarmStatus::Accepted
        && alarm.present_at.is_none()
        && situation.call.closed_at.is_none()
        && matches!(arrival(alarm, situation), Arrival::Expired)
}

/// The accept expired: it is kept as "kam nicht", the alarm alerts again.
/// Everyone whose alert the accept cancelled is back (see [`is_back`]) and
/// alerted again in this step, the one who accepted too ([`reachable`]
/// adds them).
fn resume(alarm: &mut Alarm, effects: &mut Vec<Effect>) {
    if let Some(accepted) = alarm.accepted.take() {
        effects.push(Effect::AcceptExpired {
            by: accepted.staff.clone(),
        });
        alarm.not_arrived.push(accepted);
    }
    alarm.status = AlarmStatus::Alerting;
}

/// The next level at once after an accept expired (§19); at the last level
/// nothing starts, and its recipients are alerted again as they are back.
/// An alarm accepted before its first level starts that level as usual.
fn start_next_level(alarm: &mut Alarm, situation: &Situation<'_>, effects: &mut Vec<Effect>) {
    if alarm.level == 0 || alarm.level >= situation.policy.levels().len() {
        return;
    }
    alarm.level += 1;
    alarm.level_started_at.push(situation.roster.now);
    effects.push(Effect::Escalated { level: alarm.level });
}

/// Stops the alarm at `status`: every ringing alert cancelled for `reason`,
/// and the stop audited (an accept is audited by the response itself).
fn stop(alarm: &mut Alarm, status: AlarmStatus, reason: CancelReason, effects: &mut Vec<Effect>) {
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

/// When level `index` (0-based) is due by time.
fn level_due_at(situation: &Situation<'_>, index: usize) -> DateTime<Utc> {
    situation.call.opened_at + Duration::seconds(situation.policy.levels()[index].after)
}

/// Starts the levels due: by time, or at once when the newest level's
/// audience is empty or nobody reachable is left (everyone declined or is
/// not reached, §18).
fn start_due_levels(alarm: &mut Alarm, situation: &Situation<'_>, effects: &mut Vec<Effect>) {
    let levels = situation.policy.levels();
    let now = situation.roster.now;
    let section = situation.call.section.as_deref();
    loop {
        if alarm.level >= levels.len() {
            break;
        }
        let due_by_time = level_due_at(situation, alarm.level) <= now;
        let newest_empty = alarm.level > 0
            && situation
                .roster
                .audience(&levels[alarm.level - 1].to, section)
                .is_empty();
        let nobody_left = reachable(alarm, situation)
            .iter()
            .all(|(staff, _)| not_reached(alarm, situation, &staff.id));
        if !(alarm.level == 0 || due_by_time || newest_empty || nobody_left) {
            break;
        }
        alarm.level += 1;
        alarm.level_started_at.push(now);
        if alarm.level > 1 {
            effects.push(Effect::Escalated { level: alarm.level });
        }
    }
}

/// Whoever left the audience is no longer alerted.
fn cancel_unreached(alarm: &mut Alarm, reach: &[(&Staff, usize)], effects: &mut Vec<Effect>) {
    for r in alarm.recipients.iter_mut() {
        if r.ringing && !reach.iter().any(|(s, _)| s.id == r.staff.id) {
            r.ringing = false;
            effects.push(Effect::Cancel {
                staff: r.staff.clone(),
                reason: CancelReason::OffDuty,
            });
        }
    }
}

/// Alerts whoever is reached for the first time or is back (see
/// [`is_back`]), and re-alerts those whose interval has passed (at most
/// `maxloops` alerts each); returns when the earliest re-alert is due, if
/// any is left.
fn alert_reached(
    alarm: &mut Alarm,
    situation: &Situation<'_>,
    reach: &[(&Staff, usize)],
    effects: &mut Vec<Effect>,
) -> Option<DateTime<Utc>> {
    let now = situation.roster.now;
    let (interval, maxloops) = (situation.interval, situation.maxloops);
    let mut next_alert: Option<DateTime<Utc>> = None;
    for (staff, level) in reach {
        let r = recipient(alarm, staff, *level, now);
        let loops_left = maxloops == 0 || r.alerts < maxloops;
        let realert_at = r.last_alert_at + Duration::seconds(interval);
        let first = r.alerts == 0;
        let back = is_back(r);
        let again = !first && interval > 0 && loops_left && realert_at <= now;
        if first || back || again {
            r.alerts += 1;
            r.last_alert_at = now;
            // Someone back gets a receipt deadline from now (§18): the
            // alert missed while away is no sign of a silent phone.
            if back && r.received_at.is_none() {
                r.alerted_at = Some(now);
            } else {
                r.alerted_at.get_or_insert(now);
            }
            r.ringing = true;
            effects.push(Effect::Alert {
                staff: r.staff.clone(),
                level: *level,
                repeat: !first,
                alert: r.alerts,
            });
        }
        let more = interval > 0 && (maxloops == 0 || r.alerts < maxloops);
        if more {
            let at = r.last_alert_at + Duration::seconds(interval);
            next_alert = Some(next_alert.map_or(at, |n| n.min(at)));
        }
    }
    next_alert
}

/// Whether a recipient the started levels reach is back: alerted before,
/// their alert cancelled when they left the audience (signed off, or
/// signed on for other sections), and in it again. Nothing else silences a
/// recipient of a running alarm: a decline takes them out of the reach for
/// good, an accept stops the alarm. Someone back is alerted at once, as a
/// newcomer is, and not at their old re-alert time (DECISIONS §14): their
/// count goes on, and the alert is theirs even when it passes `maxloops`
/// (never silence for somebody who came back on duty for the call), but no
/// re-alert follows one that did.
fn is_back(r: &Recipient) -> bool {
    r.alerts > 0 && !r.ringing
}

/// `staff`'s recipient entry, added (not alerted yet) the first time a
/// level reaches them.
fn recipient<'a>(
    alarm: &'a mut Alarm,
    staff: &Staff,
    level: usize,
    now: DateTime<Utc>,
) -> &'a mut Recipient {
    let index = match alarm.recipients.iter().position(|r| r.staff.id == staff.id) {
        Some(index) => index,
        None => {
            alarm.recipients.push(Recipient {
                staff: StaffRef {
                    id: staff.id.clone(),
                    name: staff.name.clone(),
                },
                level,
                alerts: 0,
                last_alert_at: now,
                ringing: false,
                alerted_at: None,
                received_at: None,
            });
            alarm.recipients.len() - 1
        }
    };
    &mut alarm.recipients[index]
}

/// The running alarm's status (unattended when nobody is reached, audited
/// when it becomes so) and when to look again: the next level, the next
/// re-alert or receipt deadline (`next_alert`), or the unattended recheck,
/// whichever comes first.
fn settle(
    alarm: &mut Alarm,
    situation: &Situation<'_>,
    unattended: bool,
    next_alert: Option<DateTime<Utc>>,
    effects: &mut Vec<Effect>,
) {
    if unattended && alarm.status != AlarmStatus::Unattended {
        effects.push(Effect::Unattended);
    }
    alarm.status = if unattended {
        alarm.was_unattended = true;
        AlarmStatus::Unattended
    } else {
        AlarmStatus::Alerting
    };
    alarm.next_level_at = (alarm.level < situation.policy.levels().len())
        .then(|| level_due_at(situation, alarm.level));
    let now = situation.roster.now;
    let recheck = unattended.then(|| now + Duration::seconds(UNATTENDED_RECHECK_SECONDS));
    alarm.next_at = [alarm.next_level_at, next_alert, recheck]
        .into_iter()
        .flatten()
        .min();
}

/// Whether `staff_id` is not reached (§18): they have no channel at all,
/// or an alert of theirs went out at least `receipt_seconds` ago and
/// neither a receipt nor any response of theirs came. Someone not alerted
/// yet, or still within their deadline, may still be reached.
pub(super) fn not_reached(alarm: &Alarm, situation: &Situation<'_>, staff_id: &str) -> bool {
    let recipient = alarm.recipient(staff_id);
    if recipient.is_some_and(|r| r.received_at.is_some())
        || alarm.answers.iter().any(|a| a.staff.id == staff_id)
    {
        return false;
    }
    if situation.without_channel.iter().any(|id| id == staff_id) {
        return true;
    }
    // Only a ringing alert has a deadline: someone whose alert was
    // cancelled when they left and who is back is alerted again in this
    // step, with a deadline from now ([`is_back`]).
    recipient.is_some_and(|r| {
        r.alerts > 0
            && r.ringing
            && r.first_alert_at() + Duration::seconds(situation.receipt_seconds)
                <= situation.roster.now
    })
}

/// The earliest receipt deadline still to come among those reached: when
/// it passes, the not reached may start the next level (a due time like a
/// level's, §18).
fn next_receipt_deadline(
    alarm: &Alarm,
    situation: &Situation<'_>,
    reach: &[(&Staff, usize)],
) -> Option<DateTime<Utc>> {
    let now = situation.roster.now;
    reach
        .iter()
        .filter(|(staff, _)| !not_reached(alarm, situation, &staff.id))
        .filter_map(|(staff, _)| alarm.recipient(&staff.id))
        .filter(|r| r.alerts > 0 && r.received_at.is_none())
        .filter(|r| !alarm.answers.iter().any(|a| a.staff.id == r.staff.id))
        .map(|r| r.first_alert_at() + Duration::seconds(situation.receipt_seconds))
        .filter(|deadline| *deadline > now)
        .min()
}

/// Who the started levels reach now, each with the first level that reaches
/// them, in level order: their audiences today, without those who declined;
/// then whoever accepted and did not come (§19), in the audience or not
/// (their own level, or the newest), unless they declined since.
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
    for gone in &alarm.not_arrived {
        let Some(staff) = situation
            .roster
            .staff
            .iter()
            .find(|s| s.id == gone.staff.id && !s.revoked)
        else {
            continue;
        };
        if !alarm.declined_by(&staff.id) && !reach.iter().any(|(s, _)| s.id == staff.id) {
            let level = alarm
                .recipient(&staff.id)
                .map_or(alarm.level.max(1), |r| r.level);
            reach.push((staff, level));
        }
    }
    reach
}
