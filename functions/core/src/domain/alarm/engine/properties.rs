//! The engine's invariants (issue 25) under random policies, rosters and
//! sequences of time, responses, presences and closes.

use chrono::Duration;
use proptest::prelude::*;

use super::tests::{at, call, duty, person, t0};
use super::*;
use crate::domain::alarm::policy::{Audience, Level};
use crate::domain::alarm::staff::Duty;

#[derive(Debug, Clone)]
enum Action {
    Wait(i64),
    Respond(usize, Response),
    Presence,
    Close,
    SignOff(usize),
    /// The person signs on (again) for these sections (none: the house).
    SignOn(usize, Vec<&'static str>),
    /// The person's receipt of their latest alert (§18).
    Receive(usize),
}

fn audience() -> impl Strategy<Value = Audience> {
    prop_oneof![
        Just(Audience::Section),
        Just(Audience::House),
        Just(Audience::Group("Leitung".into())),
    ]
}

fn policy() -> impl Strategy<Value = Policy> {
    (
        audience(),
        prop::collection::vec((1i64..300, audience()), 0..4),
    )
        .prop_map(|(first, rest)| {
            let mut after = 0;
            let mut levels = vec![Level {
                after: 0,
                to: first,
            }];
            for (gap, to) in rest {
                after += gap;
                levels.push(Level { after, to });
            }
            Policy::new(levels).unwrap()
        })
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        4 => (0i64..200).prop_map(Action::Wait),
        3 => (0usize..5, prop_oneof![Just(Response::Accepted), Just(Response::Declined), Just(Response::Read)])
            .prop_map(|(who, r)| Action::Respond(who, r)),
        1 => Just(Action::Presence),
        1 => Just(Action::Close),
        1 => (0usize..5).prop_map(Action::SignOff),
        1 => (0usize..5, prop::sample::subsequence(vec!["1", "2"], 0..=2))
            .prop_map(|(who, sections)| Action::SignOn(who, sections)),
        2 => (0usize..5).prop_map(Action::Receive),
    ]
}

/// (on duty?, sections, in Leitung?) per person.
fn people() -> impl Strategy<Value = Vec<(bool, Vec<&'static str>, bool)>> {
    prop::collection::vec(
        (
            any::<bool>(),
            prop::sample::subsequence(vec!["1", "2"], 0..=2),
            any::<bool>(),
        ),
        0..5,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn invariants_hold(
        policy in policy(),
        roster in people(),
        section in prop_oneof![Just(None), Just(Some("1")), Just(Some("2"))],
        interval in prop_oneof![Just(0i64), 10i64..90],
        maxloops in 0i64..4,
        receipt_seconds in 5i64..120,
        accept_timeout in 1i64..400,
        without in prop::sample::subsequence(vec![0usize, 1, 2, 3, 4], 0..=2),
        actions in prop::collection::vec(action(), 1..40),
    ) {
        let without_channel: Vec<String> = without.iter().map(|i| format!("p{i}")).collect();
        let staff: Vec<Staff> = roster
            .iter()
            .enumerate()
            .map(|(i, (_, _, leitung))| person(&format!("p{i}"), if *leitung { &["Leitung"] } else { &[] }))
            .collect();
        let mut duties: Vec<Duty> = roster
            .iter()
            .enumerate()
            .filter(|(_, (on, _, _))| *on)
            .map(|(i, (_, sections, _))| duty(&format!("p{i}"), sections))
            .collect();
        let mut the_call = call(section);
        let mut presence_at = None;
        let mut now = t0();
        let mut alarm = Alarm::pending(t0());
        // Per person: alerts, and those of them that came as they were back.
        let mut alerts_of: std::collections::HashMap<String, (i64, i64)> = Default::default();
        // Whose alert was cancelled as they left the audience (and who got
        // none since).
        let mut left: std::collections::HashSet<String> = Default::default();

        for action in actions {
            let before = alarm.clone();
            let situation = |now, call, duties, presence_at| Situation {
                call,
                policy: &policy,
                interval,
                maxloops,
                roster: Roster { staff: &staff, duties, now },
                presence_at,
                receipt_seconds,
                without_channel: &without_channel,
                accept_timeout,
            };
            let mut responded = None;
            let result = match action {
                Action::Wait(seconds) => {
                    now += Duration::seconds(seconds);
                    step(&alarm, &situation(now, &the_call, &duties, presence_at))
                }
                Action::Respond(who, response) if who < staff.len() => {
                    responded = Some(response);
                    // §20: alerted for the call, or on duty for its section.
                    let id = format!("p{who}");
                    let responsible = alarm.recipient(&id).is_some()
                        || duties.iter().any(|d| d.staff_id == id && d.is_active(now) && d.covers(the_call.section.as_deref()));
                    match respond(&alarm, &situation(now, &the_call, &duties, presence_at), &staff[who], None, response) {
                        Ok(_) | Err(Refusal::AlreadyAccepted(_) | Refusal::CallClosed) if !responsible => {
                            prop_assert!(false, "{} answered a call they were not responsible for", id);
                            continue;
                        }
                        Err(Refusal::NotResponsible) => {
                            prop_assert!(!responsible, "{} refused though responsible", id);
                            continue;
                        }
                        Ok(step) => step,
                        Err(Refusal::CallClosed) => {
                            prop_assert!(the_call.closed_at.is_some());
                            continue;
                        }
                        Err(Refusal::AlreadyAccepted(by)) => {
                            prop_assert_eq!(response, Response::Accepted);
                            prop_assert_eq!(&alarm.accepted.as_ref().unwrap().staff, &by);
                            continue;
                        }
                    }
                }
                Action::Respond(..) => continue,
                Action::Presence => {
                    presence_at.get_or_insert(now);
                    step(&alarm, &situation(now, &the_call, &duties, presence_at))
                }
                Action::Close => {
                    the_call.closed_at.get_or_insert(now);
                    let looked = step(&alarm, &situation(now, &the_call, &duties, presence_at));
                    // The store's end with the close is the look's, or
                    // leaves it to the look.
                    match quiet_end(&alarm, &the_call, now) {
                        Some(quiet) => prop_assert_eq!(&quiet, &looked),
                        None => prop_assert!(
                            !looked.changed
                                || alarm.is_pending()
                                || alarm.recipients.iter().any(|r| r.ringing),
                            "a quiet end left to a look"
                        ),
                    }
                    looked
                }
                Action::SignOff(who) => {
                    duties.retain(|d| d.staff_id != format!("p{who}"));
                    step(&alarm, &situation(now, &the_call, &duties, presence_at))
                }
                Action::SignOn(who, sections) => {
                    duties.retain(|d| d.staff_id != format!("p{who}"));
                    duties.push(duty(&format!("p{who}"), &sections));
                    step(&alarm, &situation(now, &the_call, &duties, presence_at))
                }
                Action::Receive(who) => {
                    let id = format!("p{who}");
                    let latest = alarm.recipient(&id).map_or(0, |r| r.alerts);
                    match receive(&alarm, &situation(now, &the_call, &duties, presence_at), &id, latest) {
                        Some(step) => step,
                        None => {
                            prop_assert_eq!(latest, 0, "a receipt of an alert sent is known");
                            continue;
                        }
                    }
                }
            };
            let after = &result.alarm;

            // The level never goes down, nor does the version.
            prop_assert!(after.level >= before.level);
            prop_assert!(after.changes >= before.changes);
            let expired = result.effects.iter().find_map(|e| match e {
                Effect::AcceptExpired { by } => Some(by.id.clone()),
                _ => None,
            });
            // Accepted, present and ended stop everything: no alert, no
            // level; an accept waiting for its arrival until its timeout.
            if before.awaits_arrival() && expired.is_none() {
                prop_assert_eq!(after.level, before.level);
                let alerts = result.effects.iter().any(|e| matches!(e, Effect::Alert { .. }));
                prop_assert!(!alerts, "an alert while an accept waits");
            }
            if before.status.is_stopped() && !before.is_pending() && !before.awaits_arrival() {
                prop_assert!(after.status.is_stopped());
                prop_assert_eq!(after.level, before.level);
                let alerts = result.effects.iter().any(|e| matches!(e, Effect::Alert { .. }));
                prop_assert!(!alerts, "an alert after a stop");
                prop_assert_eq!(after.next_at, None);
            }
            if after.status.is_stopped() {
                let quiet = after.recipients.iter().all(|r| !r.ringing);
                prop_assert!(quiet, "ringing after a stop");
            }
            // An accepted alarm never stays silent past its timeout without
            // a presence or the close (§19): it is due at its timeout, and
            // a step at or after it resumes it.
            let present = presence_at.is_some_and(|p| p >= the_call.opened_at);
            if after.status == AlarmStatus::Accepted && the_call.closed_at.is_none() {
                if after.present_at.is_some() {
                    prop_assert_eq!(after.next_at, None);
                } else {
                    prop_assert!(!present, "a presence seen and not kept");
                    let due = after.accepted.as_ref().expect("accepted by someone").at
                        + Duration::seconds(accept_timeout);
                    prop_assert!(due > now, "accepted past its timeout at {}", now - t0());
                    prop_assert_eq!(after.next_at, Some(due));
                }
            }
            // An accept that expired: kept as "kam nicht", the alarm alerts
            // again, the one who accepted among the alerted (unless they
            // declined in the same answer).
            if let Some(by) = &expired {
                prop_assert_eq!(after.not_arrived.len(), before.not_arrived.len() + 1);
                prop_assert_eq!(&after.not_arrived.last().unwrap().staff.id, by);
                prop_assert!(after.status != AlarmStatus::Present && after.status != AlarmStatus::Ended);
                let alerted = result.effects.iter().any(|e| matches!(e, Effect::Alert { staff, .. } if &staff.id == by));
                prop_assert!(alerted || responded == Some(Response::Declined), "{} accepted, did not come, and was not alerted again", by);
                if before.level > 0 && before.level < policy.levels().len() {
                    prop_assert!(after.level > before.level, "the next level at once");
                }
            }
            // Back: their alert was cancelled when they left the audience,
            // none came since, and they are in it again.
            let left_before = left.clone();
            let was_cancelled = |id: &str| left_before.contains(id);
            // No recipient alerted more than maxloops times, but for one
            // alert each time they came back.
            for e in &result.effects {
                if let Effect::Alert { staff, .. } = e {
                    let counts = alerts_of.entry(staff.id.clone()).or_default();
                    counts.0 += 1;
                    if was_cancelled(&staff.id) {
                        counts.1 += 1;
                    }
                }
            }
            if maxloops > 0 {
                for (id, (count, returns)) in &alerts_of {
                    prop_assert!(*count <= maxloops + returns, "{} alerted {} times, back {} times", id, count, returns);
                }
            }
            for e in &result.effects {
                match e {
                    // An accept's cancels and the accepter's own silence:
                    // they are back when the accept expires (§19).
                    Effect::Cancel { staff, reason: CancelReason::OffDuty | CancelReason::Accepted(_) } => {
                        left.insert(staff.id.clone());
                    }
                    Effect::Accepted { by } => {
                        left.insert(by.id.clone());
                    }
                    Effect::Alert { staff, .. } => {
                        left.remove(&staff.id);
                    }
                    _ => {}
                }
            }
            // Someone back is alerted in the same step, whatever their
            // interval: as a newcomer is (issue 45, point 7).
            if !after.status.is_stopped() {
                for level in policy.levels().iter().take(after.level) {
                    for s in (Roster { staff: &staff, duties: &duties, now })
                        .audience(&level.to, the_call.section.as_deref())
                    {
                        if was_cancelled(&s.id) && !after.declined_by(&s.id) {
                            let alerted = result.effects.iter().any(|e| matches!(e, Effect::Alert { staff, .. } if staff.id == s.id));
                            prop_assert!(alerted, "{} back at {} and not alerted", s.id, now - t0());
                        }
                    }
                }
            }
            // Not reached (§18): no receipt and no response, and no channel
            // at all or the deadline after the first alert has passed.
            let not_reached = |alarm: &Alarm, id: &str| {
                let recipient = alarm.recipient(id);
                let got = recipient.is_some_and(|r| r.received_at.is_some())
                    || alarm.answers.iter().any(|a| a.staff.id == id);
                !got && (without_channel.iter().any(|w| w == id)
                    || recipient.is_some_and(|r| {
                        r.alerts > 0 && r.first_alert_at() + Duration::seconds(receipt_seconds) <= now
                    }))
            };
            // Who the first `levels` levels may still reach: in their
            // audience now, or accepted and did not come (§19), not
            // declined, not "not reached".
            let may_reach = |alarm: &Alarm, levels: usize| {
                policy.levels().iter().take(levels).any(|level| {
                    Roster { staff: &staff, duties: &duties, now }
                        .audience(&level.to, the_call.section.as_deref())
                        .iter()
                        .any(|s| !alarm.declined_by(&s.id) && !not_reached(alarm, &s.id))
                }) || alarm.not_arrived.iter().any(|a| {
                    !alarm.declined_by(&a.staff.id) && !not_reached(alarm, &a.staff.id)
                })
            };
            // A level never starts before its time, unless the level before
            // it has nobody, or everyone so far declined or is not reached.
            if !after.status.is_stopped() && expired.is_none() {
                for index in before.level.max(1)..after.level {
                    let due = the_call.opened_at + Duration::seconds(policy.levels()[index].after) <= now;
                    let newest_empty = Roster { staff: &staff, duties: &duties, now }
                        .audience(&policy.levels()[index - 1].to, the_call.section.as_deref())
                        .is_empty();
                    prop_assert!(
                        due || newest_empty || !may_reach(after, index),
                        "level {} started early at {}", index + 1, now - t0()
                    );
                }
            }
            // Unattended exactly when the alarm runs and nobody can be reached.
            if after.is_shown() && !after.status.is_stopped() {
                let reachable = may_reach(after, after.level);
                prop_assert_eq!(after.status == AlarmStatus::Unattended, !reachable);
                if !reachable {
                    prop_assert_eq!(after.level, policy.levels().len(), "every level was tried");
                }
            }
            // Declines by everyone so far start the next level at once.
            if responded == Some(Response::Declined) && !after.status.is_stopped() {
                let everyone_declined = after
                    .recipients
                    .iter()
                    .filter(|r| r.level <= before.level)
                    .all(|r| after.declined_by(&r.staff.id));
                if everyone_declined && before.level < policy.levels().len() && before.level > 0 {
                    prop_assert!(after.level > before.level, "next level at once");
                }
            }
            alarm = result.alarm;
        }
        let _ = at(0);
    }
}
