//! The alarm timers of the local server (DECISIONS §14 "Timing"): a worker
//! that asks the store's due index every [`POLL`] for the alarms whose level
//! or re-alert has come, and steps each through the alarm runner
//! ([`AlarmRunner::run_due_alarms`]). A level starts within [`POLL`] plus the
//! step of its time.
//!
//! Durable by construction: what is due lives in the store (every open
//! stores its alarm due at once, in the same transaction), so after a crash
//! or a restart the first round finds whatever fell due meanwhile. Two
//! workers (two servers on one store) may step the same alarm: the store's
//! conditional write lets one of them write it, the other reads it again
//! and finds nothing left to do, so a level fires once.

use std::time::Duration;

use nurse_call_core::{AppState, clock};

/// How often the due index is asked.
pub(crate) const POLL: Duration = Duration::from_millis(250);

/// Alarms stepped per round; a full round is followed by another at once.
pub(crate) const BATCH: usize = 200;

/// Full rounds in a row before the worker waits for the next tick anyway
/// (an alarm the runner cannot step stays due and must not spin it).
const ROUNDS_PER_TICK: usize = 20;

/// Runs until the process ends.
pub(crate) async fn run(state: AppState) {
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        for _ in 0..ROUNDS_PER_TICK {
            match state
                .alarm_runner()
                .run_due_alarms(clock::now(), BATCH)
                .await
            {
                Ok(stepped) if stepped == BATCH => continue,
                Ok(_) => break,
                Err(error) => {
                    tracing::warn!(%error, "due alarms not read");
                    break;
                }
            }
        }
    }
}
