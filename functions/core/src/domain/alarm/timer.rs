//! An alarm's timer where no process keeps one (DECISIONS §17): a message
//! on a queue whose delivery is delayed until the alarm's next step is due.
//! A queue delays a message by at most [`MAX_DELAY_SECONDS`]; a longer
//! wait is sent on with the remainder when the message arrives early.
//!
//! The message names the call and the time it was due for; whoever takes it
//! steps the call's alarm to now with a conditional write, so a duplicate,
//! early or late timer does nothing wrong: early is sent on, late steps
//! what is due, a duplicate finds nothing left to do.
//!
//! Who schedules: the table's stream, for every write that changes an
//! alarm's next step ([`timer_of_change`]), never the request path nor the
//! timer's own taker. A committed open always gets its timer (its stream
//! record comes even when the request's function died after the commit),
//! and a timer that steps the alarm schedules the next one through its own
//! write. A duplicate timer writes nothing, so it schedules nothing: timers
//! never multiply. The one case the stream cannot see is a timer taken a
//! moment before the engine finds its step due (the clocks differ): it
//! wrote nothing either, so its taker sends it on ([`after_step`]).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::model::Scope;

/// The longest delay of one message (Amazon SQS: 15 minutes).
pub const MAX_DELAY_SECONDS: u32 = 900;

/// How late a step may be before the minute's wake-up takes it as lost
/// (DECISIONS §19): a timer's delay is whole seconds and its taker's
/// answer takes a moment, so a step a few seconds late is still the
/// timer's own; one later than this only a lost stream record or timer
/// explains.
pub const OVERDUE_AFTER_SECONDS: i64 = 5;

/// How early a timer may arrive and still count as due: a queue's delay is
/// whole seconds, and its clock is not ours.
pub(crate) const EARLY_TOLERANCE_MS: i64 = 500;

/// A timer: step the alarm of `call` in `scope` at `due`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timer {
    /// The call's scope in its stored form ([`Scope::as_str`]).
    pub scope: String,
    /// The id of the call whose alarm is to be stepped.
    pub call: i64,
    /// When the alarm's next step falls due (its `next_at` when scheduled).
    pub due: DateTime<Utc>,
}

impl Timer {
    /// A timer for the alarm of call `call` in `scope`, due at `due`.
    pub fn new(scope: &Scope, call: i64, due: DateTime<Utc>) -> Self {
        Timer {
            scope: scope.as_str().to_string(),
            call,
            due,
        }
    }
}

/// What to do with a timer at `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimerAction {
    /// Due (or late): step the alarm now.
    Step,
    /// Not due yet: send it on, delayed by this many seconds (at most
    /// [`MAX_DELAY_SECONDS`]; 1 at least, so that it never spins).
    SendOn { delay_seconds: u32 },
}

/// Whether `timer` is due at `now`, or how long to send it on for.
pub(crate) fn action(timer: &Timer, now: DateTime<Utc>) -> TimerAction {
    let left_ms = (timer.due - now).num_milliseconds();
    if left_ms <= EARLY_TOLERANCE_MS {
        return TimerAction::Step;
    }
    TimerAction::SendOn {
        delay_seconds: delay_for(left_ms),
    }
}

/// The delay of a new timer for an alarm due at `due`, scheduled at `now`:
/// 0 when already due.
pub fn first_delay(due: DateTime<Utc>, now: DateTime<Utc>) -> u32 {
    let left_ms = (due - now).num_milliseconds();
    if left_ms <= 0 { 0 } else { delay_for(left_ms) }
}

/// The timer a change of an alarm's next step needs, with its delay: one
/// when the next step is set and differs from what it was (the stream's
/// old and new image); none when the alarm stopped or its time stayed.
pub fn timer_of_change(
    scope: &Scope,
    call: i64,
    before: Option<DateTime<Utc>>,
    after: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<(Timer, u32)> {
    let due = after.filter(|due| before != Some(*due))?;
    Some((Timer::new(scope, call, due), first_delay(due, now)))
}

/// After a timer was stepped: `Some(delay)` when it must be sent on
/// because the step wrote nothing and the alarm still waits for this very
/// timer's time (taken a moment early); `None` when the step wrote (its
/// stream record schedules the next) or the alarm moved on or stopped (a
/// duplicate or stale timer).
pub(crate) fn after_step(
    timer: &Timer,
    wrote: bool,
    next_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<u32> {
    if wrote || next_at != Some(timer.due) {
        return None;
    }
    Some(first_delay(timer.due, now).max(1))
}

/// Whole seconds for `left_ms`, rounded up (never early by a fraction),
/// within the queue's limit.
fn delay_for(left_ms: i64) -> u32 {
    let seconds = (left_ms + 999) / 1000;
    u32::try_from(seconds.clamp(1, i64::from(MAX_DELAY_SECONDS))).unwrap_or(MAX_DELAY_SECONDS)
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone};
    use proptest::prelude::*;

    use super::*;

    /// `ms` milliseconds after a fixed instant.
    fn at(ms: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000, 0).unwrap() + Duration::milliseconds(ms)
    }

    fn timer(due_ms: i64) -> Timer {
        Timer::new(&Scope::installation(), 7, at(due_ms))
    }

    #[test]
    fn due_late_or_barely_early_steps() {
        assert_eq!(action(&timer(10_000), at(10_000)), TimerAction::Step);
        assert_eq!(action(&timer(10_000), at(70_000)), TimerAction::Step);
        assert_eq!(action(&timer(10_000), at(9_600)), TimerAction::Step);
    }

    #[test]
    fn early_is_sent_on_for_the_rest_rounded_up() {
        assert_eq!(
            action(&timer(10_000), at(8_200)),
            TimerAction::SendOn { delay_seconds: 2 }
        );
        assert_eq!(
            action(&timer(10_000), at(9_000)),
            TimerAction::SendOn { delay_seconds: 1 }
        );
    }

    #[test]
    fn a_wait_past_fifteen_minutes_goes_in_legs_of_at_most_900_s() {
        let due = 3_600_000; // an hour
        assert_eq!(
            action(&timer(due), at(0)),
            TimerAction::SendOn { delay_seconds: 900 }
        );
        assert_eq!(first_delay(at(due), at(0)), 900);
        assert_eq!(first_delay(at(due), at(due)), 0);
        assert_eq!(first_delay(at(due), at(due + 1)), 0);
    }

    #[test]
    fn the_message_round_trips_as_json() {
        let original = timer(1_234);
        let json = serde_json::to_string(&original).unwrap();
        assert_eq!(serde_json::from_str::<Timer>(&json).unwrap(), original);
    }

    #[test]
    fn the_stream_schedules_a_new_or_moved_next_step_only() {
        let scope = Scope::installation();
        let (t0, t30, t60) = (at(0), at(30_000), at(60_000));
        // The open: no alarm before, due at once.
        assert_eq!(
            timer_of_change(&scope, 7, None, Some(t0), t0),
            Some((Timer::new(&scope, 7, t0), 0))
        );
        // A level started: the next one in 30 s.
        assert_eq!(
            timer_of_change(&scope, 7, Some(t0), Some(t30), t0),
            Some((Timer::new(&scope, 7, t30), 30))
        );
        // A write that left the time (a decline, a presence's look): none.
        assert_eq!(timer_of_change(&scope, 7, Some(t30), Some(t30), t0), None);
        // Accepted or ended: no next step.
        assert_eq!(timer_of_change(&scope, 7, Some(t30), None, t0), None);
        // Due long after: the first leg.
        assert_eq!(
            timer_of_change(&scope, 7, Some(t30), Some(at(3_600_000)), t60).map(|(_, d)| d),
            Some(900)
        );
    }

    #[test]
    fn only_a_timer_taken_early_is_sent_on_after_its_step() {
        let t = timer(10_000);
        // Its step wrote: the stream schedules the next.
        assert_eq!(after_step(&t, true, Some(at(40_000)), at(10_000)), None);
        // A duplicate: the alarm moved on (or stopped) without it.
        assert_eq!(after_step(&t, false, Some(at(40_000)), at(10_000)), None);
        assert_eq!(after_step(&t, false, None, at(10_000)), None);
        // Taken 0.3 s early, the engine found nothing due: again in 1 s.
        assert_eq!(after_step(&t, false, Some(at(10_000)), at(9_700)), Some(1));
        // Its time has come and still nothing written (the engine's clock
        // behind ours): again in 1 s, never at once (no spinning).
        assert_eq!(after_step(&t, false, Some(at(10_000)), at(10_200)), Some(1));
    }

    proptest! {
        /// Following the sends on, a timer is stepped never before its due
        /// time less the tolerance, and at most one second after it (the
        /// queue delivering exactly on time), whatever the wait.
        #[test]
        fn sent_on_until_due_never_early_at_most_a_second_late(
            due_ms in 0i64..20_000_000,
            start_ms in 0i64..20_000_000,
        ) {
            let t = timer(due_ms);
            let mut now = start_ms;
            let mut legs = 0;
            loop {
                match action(&t, at(now)) {
                    TimerAction::Step => break,
                    TimerAction::SendOn { delay_seconds } => {
                        prop_assert!((1..=MAX_DELAY_SECONDS).contains(&delay_seconds));
                        now += i64::from(delay_seconds) * 1000;
                        legs += 1;
                        prop_assert!(legs < 30_000, "it ends");
                    }
                }
            }
            prop_assert!(now >= due_ms - EARLY_TOLERANCE_MS);
            prop_assert!(now <= start_ms.max(due_ms) + 1000);
        }
    }
}
