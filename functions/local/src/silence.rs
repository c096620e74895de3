//! The supervision of central systems in the local server (DECISIONS §19):
//! a worker that sweeps the supervised links every [`EVERY`]
//! ([`AppState::sweep_links`]), so a silence is found within [`EVERY`] of
//! its time (§19 asks 10 s). The silences live in the store, so a restart
//! forgets none, and the first sweep after it finds what fell silent
//! meanwhile; two servers on one store announce each silence once (the
//! store's conditional write decides which).

use std::time::Duration;

use nurse_call_core::{AppState, clock};

/// How often the links are swept: within §19's 10 s, and seldom enough that a
/// server on DynamoDB scans its consumers table only every few seconds.
pub(crate) const EVERY: Duration = Duration::from_secs(5);

/// Runs until the process ends.
pub(crate) async fn run(state: AppState) {
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match state.sweep_links(clock::now()).await {
            Ok(swept) if swept.silent > 0 || swept.alerts > 0 => {
                tracing::debug!(silent = swept.silent, alerts = swept.alerts, "links swept");
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, "supervised links not read: swept again at the next tick")
            }
        }
    }
}
