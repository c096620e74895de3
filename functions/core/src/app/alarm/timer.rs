//! Taking an alarm's timer where no process keeps one (DECISIONS §17; the
//! rules are `domain::alarm::timer`): a timer due is stepped with the
//! store's conditional write, one that came early is sent on. What sends
//! and receives the messages (SQS in AWS) is the caller's: this is the
//! adapter between a timer message and the alarm engine, as
//! [`AlarmRunner::run_due_alarms`] is for the local server's due index.

use chrono::{DateTime, Utc};

use crate::app::alarm::AlarmRunner;
use crate::app::alarm::step::Looked;
use crate::domain::alarm::timer::{self, Timer, TimerAction};
use crate::domain::model::Scope;
use crate::store::StoreError;

/// What became of a timer taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimerTaken {
    /// Done with: the alarm was stepped (its write's stream record
    /// schedules the next timer), or the timer was a duplicate or stale.
    Done {
        /// Whether this take wrote a step; `false` for a call gone, or a
        /// duplicate or stale timer.
        stepped: bool,
    },
    /// Not due yet: send `timer` again, delayed by `delay_seconds`.
    SendOn {
        /// The timer taken, unchanged.
        timer: Timer,
        /// Seconds to delay it by, 1 to
        /// [`MAX_DELAY_SECONDS`](crate::alarm::MAX_DELAY_SECONDS).
        delay_seconds: u32,
    },
}

impl AlarmRunner<'_> {
    /// Takes `timer` at `now`: steps the call's alarm when it is due, else
    /// says how long to send it on for. An error leaves the timer to the
    /// queue's own retry (the message is not deleted).
    pub async fn take_timer(
        self,
        timer: &Timer,
        now: DateTime<Utc>,
    ) -> Result<TimerTaken, StoreError> {
        if let TimerAction::SendOn { delay_seconds } = timer::action(timer, now) {
            return Ok(TimerTaken::SendOn {
                timer: timer.clone(),
                delay_seconds,
            });
        }
        let scope = Scope::from_key(&timer.scope);
        let (wrote, next_at) = match self.step_alarm(&scope, timer.call).await? {
            Looked::Missing => return Ok(TimerTaken::Done { stepped: false }),
            Looked::Call { call, changed } => {
                (changed, call.alarm.as_ref().and_then(|alarm| alarm.next_at))
            }
        };
        Ok(match timer::after_step(timer, wrote, next_at, now) {
            Some(delay_seconds) => TimerTaken::SendOn {
                timer: timer.clone(),
                delay_seconds,
            },
            None => TimerTaken::Done { stepped: wrote },
        })
    }
}
