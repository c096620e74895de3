//! The local server's webhook deliveries (DECISIONS §16): the dispatcher of
//! core (`app::webhooks`) asked every [`POLL`] for what may go, sending with
//! the HTTP client the AWS `forward` function uses too
//! ([`HttpSender`], `nurse_call_push::webhook_sender`).
//!
//! Deliveries run on a thread of their own at the lowest CPU priority
//! ([`start`]): when requests keep both cores busy, they come first and the
//! deliveries wait (a write is never slowed by them; issue 27's load
//! benchmark). A round reads the outbox on the store's reader, so writes
//! never wait for it either; the first attempt of an event starts within [`POLL`] of its commit
//! (the budget is 1 s), and a retry within a few milliseconds of its time.
//! Each day the delivery log loses what is older than [`LOG_KEPT_DAYS`].

use std::sync::Arc;
use std::time::Duration;

use nurse_call_core::{Dispatcher, WebhookStore, clock};
pub(crate) use nurse_call_push::webhook_sender::HttpSender;

/// How often the outbox is read.
pub(crate) const POLL: Duration = Duration::from_millis(250);

/// Attempts on their way at once.
pub(crate) const CONCURRENCY: usize = 32;

/// How long the delivery log keeps an attempt.
pub(crate) const LOG_KEPT_DAYS: i64 = 30;

/// How often memory is asked whether a retry has come due.
const RETRY_CHECK: Duration = Duration::from_millis(20);

/// Runs until the process ends (on [`start`]'s thread): a round every [`POLL`] (new events), and
/// one as soon as a retry comes due (within [`RETRY_CHECK`]).
pub(crate) async fn run(dispatcher: Arc<Dispatcher>) {
    let mut tick = tokio::time::interval(RETRY_CHECK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_round: Option<std::time::Instant> = None;
    loop {
        tick.tick().await;
        // Not `clock::now()`, which is whole seconds: the backoff of 1,
        // 2, 4 s is kept to the millisecond.
        let now = chrono::Utc::now();
        let polled = last_round.is_some_and(|at| at.elapsed() < POLL);
        if polled && !dispatcher.retry_due(now) {
            continue;
        }
        last_round = Some(std::time::Instant::now());
        if let Err(error) = dispatcher.round(now).await {
            tracing::warn!(%error, "webhook outbox not read");
        }
    }
}

/// Starts the deliveries and the daily pruning of their log on a thread of
/// their own, at the lowest priority (nice 19) where the OS allows, with a
/// runtime of its own: its tasks never share a worker with a request.
pub(crate) fn start(
    dispatcher: Arc<Dispatcher>,
    store: Arc<dyn WebhookStore>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("webhooks".into())
        .spawn(move || {
            lower_priority();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the webhook deliveries");
            runtime.block_on(async move {
                tokio::spawn(prune(store));
                run(dispatcher).await;
            });
        })?;
    Ok(())
}

/// Nice 19 for the calling thread (Linux: `setpriority` on its thread id).
#[cfg(target_os = "linux")]
fn lower_priority() {
    // SAFETY: two plain system calls about this thread; no memory is shared.
    let result = unsafe {
        let thread = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, thread, 19)
    };
    if result != 0 {
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            "webhook deliveries run at normal priority"
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority() {}

/// Once a day: the delivery log's lines older than [`LOG_KEPT_DAYS`] go.
pub(crate) async fn prune(store: Arc<dyn WebhookStore>) {
    let mut tick = tokio::time::interval(Duration::from_secs(24 * 3600));
    loop {
        tick.tick().await;
        let before = clock::now() - chrono::Duration::days(LOG_KEPT_DAYS);
        match store.prune_deliveries(before).await {
            Ok(0) => {}
            Ok(pruned) => tracing::info!(pruned, "old delivery log lines deleted"),
            Err(error) => tracing::warn!(%error, "delivery log not pruned"),
        }
    }
}
