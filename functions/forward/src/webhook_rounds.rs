//! The webhook dispatcher where nothing polls (DECISIONS §16, §17): the
//! local server's dispatcher (`nurse_call_core`) run in
//! rounds while an invocation lasts, woken by the webhook queue (a FIFO
//! queue of one message group: one dispatcher at a time, so each call's
//! events keep their order per endpoint).
//!
//! An invocation runs rounds until no attempt is on its way and every
//! attempt made is in the delivery log; a retry due within
//! [`WAIT_IN_INVOCATION`] is waited for, a later one gets a wake-up item in
//! the table due at its time, whose stream record the `alarm` function
//! turns into a message delayed on its timer queue and, when that comes,
//! a wake-up on the webhook queue (so this function needs no queue client:
//! its zip stays under 3 MB). The dispatcher's memory (each delivery's attempts)
//! lives as long as the function's environment and is rebuilt from the
//! outbox and the delivery log after a cold start, as after a restart of
//! the local server: at least once, the same `webhook-id`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;

use nurse_call_core::Dispatcher;
use nurse_call_dynamodb::DynamoStore;

/// A retry due within this is waited for in the invocation (the backoff's
/// first steps: 1, 2, 4 s); a later one is woken by the timer queue.
pub(crate) const WAIT_IN_INVOCATION: Duration = Duration::from_secs(5);

/// Time kept back before the invocation's deadline: a round and its
/// attempts (5 s each at most) end before it.
const DEADLINE_MARGIN: Duration = Duration::from_secs(8);

/// Rounds of one invocation at most (a store that keeps refusing the
/// delivery log must not spin it).
const MAX_ROUNDS: usize = 200;

/// When the store cannot be read: the next try.
const AFTER_A_FAILED_ROUND_SECONDS: u32 = 5;

pub(crate) struct WebhookRounds {
    dispatcher: Arc<Dispatcher>,
    store: Arc<DynamoStore>,
}

impl WebhookRounds {
    /// `store`: where wake-ups are put (the dispatcher's store).
    pub(crate) fn new(dispatcher: Arc<Dispatcher>, store: Arc<DynamoStore>) -> Self {
        WebhookRounds { dispatcher, store }
    }

    /// Rounds until the deliveries rest, within `deadline`.
    pub(crate) async fn run(&self, deadline: Instant) {
        let stop = deadline.checked_sub(DEADLINE_MARGIN).unwrap_or(deadline);
        let mut attempts = 0;
        for _ in 0..MAX_ROUNDS {
            match self.dispatcher.round(Utc::now()).await {
                Ok(started) => attempts += started,
                Err(error) => {
                    tracing::warn!(%error, "webhook outbox not read: tried again in 5 s");
                    self.wake_later(AFTER_A_FAILED_ROUND_SECONDS).await;
                    return;
                }
            }
            while self.dispatcher.in_flight() {
                if Instant::now() >= stop {
                    tracing::warn!(
                        "webhook attempts still on their way at the invocation's end: woken again"
                    );
                    self.wake_later(1).await;
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            if self.dispatcher.has_unlogged() {
                // The next round writes them first.
                continue;
            }
            let Some(at) = self.dispatcher.next_retry() else {
                tracing::info!(attempts, "webhook deliveries at rest");
                return;
            };
            let wait = (at - Utc::now()).to_std().unwrap_or_default();
            if wait <= WAIT_IN_INVOCATION && Instant::now() + wait < stop {
                tokio::time::sleep(wait).await;
                continue;
            }
            let seconds = u32::try_from(wait.as_millis().div_ceil(1000)).unwrap_or(u32::MAX);
            tracing::info!(
                attempts,
                retry_in_s = seconds,
                "webhook deliveries wait for a retry"
            );
            self.wake_later(seconds.max(1)).await;
            return;
        }
        tracing::warn!(attempts, "webhook rounds at their limit: woken again");
        self.wake_later(1).await;
    }

    /// A wake-up in `seconds` (a retry's time); loudly when it cannot be
    /// put: the events wait in the outbox until the next one comes.
    async fn wake_later(&self, seconds: u32) {
        let due = Utc::now() + chrono::Duration::seconds(i64::from(seconds));
        if let Err(error) = self.store.schedule_webhook_wake(due).await {
            tracing::error!(%error, "webhook wake-up not scheduled: waiting events go with the next event's");
        }
    }
}
