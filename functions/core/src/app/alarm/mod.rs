//! The alarm runner (DECISIONS §14, §17): the pure engine
//! ([`crate::domain::alarm`]) run against the store, the live feed and the
//! pushes. Every operation of it is a method of [`AlarmRunner`], which a
//! handler or a timer gets from [`AppState::alarm_runner`]; one file per
//! concern:
//!
//! - [`step`]: one look at an alarm: read, step the engine (or apply a
//!   response), write only if nobody wrote meanwhile, publish what changed
//!   ([`AlarmRunner::step_alarm`], [`AlarmRunner::respond_to_alarm`]);
//! - [`receipt`]: a person's receipt of an alert (§18), applied as a
//!   response is ([`AlarmRunner::receive`]);
//! - [`start`]: an alarm's first step and its end, taken with the open's
//!   and the close's writes ([`AlarmRunner::after_open`],
//!   [`AlarmRunner::after_close`]);
//! - [`looks`]: who looks when: after a write in the background, and the
//!   local server's timers over the due index ([`AlarmRunner::run_due_alarms`]);
//! - [`timer`]: a timer message where no process keeps timers (AWS,
//!   [`AlarmRunner::take_timer`]).
//!
//! The Web Push jobs of the alerts are [`super::push`]'s.

pub(crate) mod looks;
pub(crate) mod receipt;
pub(crate) mod scope_rounds;
pub(crate) mod start;
pub(crate) mod step;
pub(crate) mod timer;

use crate::app::AppState;

/// The alarm runner of a state: what it reads and writes (the alarm store,
/// the call types, the live feed, the pushes) is the state's, so it is a
/// view of it, made where it is used (`state.alarm_runner().after_open(…)`)
/// and cheap to make. Work that outlives a request (the looks in the
/// background) takes a clone of the state and makes its own.
#[derive(Clone, Copy)]
pub struct AlarmRunner<'a> {
    state: &'a AppState,
}

impl AppState {
    /// The alarm runner over this state.
    pub fn alarm_runner(&self) -> AlarmRunner<'_> {
        AlarmRunner { state: self }
    }
}
