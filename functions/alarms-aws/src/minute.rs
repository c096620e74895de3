//! The stack's minute wake-up (`{"minute":"wake"}` on the timer queue, an
//! EventBridge schedule's: infra/lib/webhooks.ts), which the alarm function
//! takes for everything that must happen even when no write wakes anything
//! (DECISIONS §17, §19):
//!
//! 1. the alarms whose next step is more than 5 s overdue are stepped: only
//!    a lost stream record or timer leaves one so late, and each find is an
//!    error line the stack alarms on
//!    ([`nurse_call_core::AlarmRunner::run_overdue_alarms`]);
//! 2. the central systems' links are swept: one silent for 2 × its
//!    heartbeat + 10 s is kept silent and announced, and Technik's alerts
//!    are sent and repeated ([`nurse_call_core::AppState::sweep_links`]);
//!    the pushes of those alerts are collected here and put on the
//!    delivery queue, as an alarm write's are;
//! 3. a webhook wake-up is passed on, for the `forward` function's sweeps
//!    and the outbox's events (the silences' among them).
//!
//! A step that fails gives the wake-up again (the queue's visibility
//! timeout): a second sweep finds nothing left to do.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use nurse_call_core::{PushJob, PushSink};

use crate::handler::{AlarmHandler, Taken};

/// The overdue alarms one minute's wake-up steps at most: far more than a
/// minute can lose (one lost stream batch is at most 100 records); the
/// rest are the next minute's.
const OVERDUE_PER_WAKE: usize = 500;

/// The pushes a sweep hands over, kept until they are put on the delivery
/// queue.
#[derive(Default)]
struct CollectedPushes(Mutex<Vec<PushJob>>);

impl PushSink for CollectedPushes {
    fn send(&self, job: PushJob) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(job);
    }
}

impl CollectedPushes {
    fn take(&self) -> Vec<PushJob> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl AlarmHandler {
    /// The minute's wake-up of message `id` at `now` (see the module).
    pub(crate) async fn take_minute_wake(&self, id: &str, now: DateTime<Utc>) -> Taken {
        let mut taken = Taken::Nothing;
        match self
            .state
            .alarm_runner()
            .run_overdue_alarms(now, OVERDUE_PER_WAKE)
            .await
        {
            Ok(overdue) if !overdue.is_empty() => taken = Taken::Stepped,
            Ok(_) => {}
            Err(error) => {
                tracing::error!(message_id = id, %error, "overdue alarms not swept: the wake-up is given again");
                taken = Taken::Failed;
            }
        }
        if !self.sweep_links(id, now).await {
            taken = Taken::Failed;
        }
        if let Err(error) = self.webhooks.send_webhook_wake(id).await {
            tracing::warn!(message_id = id, %error, "webhook wake-up not passed on: given again");
            taken = Taken::Failed;
        }
        taken
    }

    /// The links' sweep, its alerts' pushes put on the delivery queue;
    /// `false` when the sweep or the sending failed.
    async fn sweep_links(&self, id: &str, now: DateTime<Utc>) -> bool {
        let pushes = Arc::new(CollectedPushes::default());
        let state = self.state.clone().with_pushes(pushes.clone());
        let swept = state.sweep_links(now).await;
        // The pushes of the alerts counted before any failure are sent
        // all the same: their count is kept, no later sweep sends them.
        let jobs = pushes.take();
        let sent = if jobs.is_empty() {
            Ok(())
        } else {
            self.deliveries.send_pushes(&jobs).await
        };
        match (swept, sent) {
            (Ok(swept), Ok(())) => {
                if swept.silent > 0 || swept.alerts > 0 {
                    tracing::info!(
                        silent = swept.silent,
                        alerts = swept.alerts,
                        pushes = jobs.len(),
                        "links swept"
                    );
                }
                true
            }
            (Err(error), _) => {
                tracing::error!(message_id = id, %error, "links not swept: the wake-up is given again");
                false
            }
            (Ok(_), Err(error)) => {
                tracing::error!(message_id = id, %error, pushes = jobs.len(), "silence alerts not put on the delivery queue");
                false
            }
        }
    }
}
