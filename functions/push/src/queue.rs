//! The pushes' queue: takes the alarm's [`PushJob`]s without waiting
//! ([`PushSink::send`]), and sends each to every subscription of its
//! person, off the request path.
//!
//! One *lane* per person and call keeps that call's pushes to that person
//! in order (an alert is never overtaken by its own cancel), and a newer
//! push supersedes an older one still waiting for a retry: the phone would
//! replace it anyway (same `Topic` and notification tag). Lanes of
//! different people or calls run side by side, at most [`CONCURRENCY`]
//! attempts at once, of which one person's or one push service's hold a
//! quarter at most (DECISIONS §20, [`FairPermits`]): ten slow phones of
//! one person never hold up everyone else's alarms. A lane lives while it
//! has work and ends when idle.
//!
//! Per subscription: one whose endpoint is of no push service in
//! `PUSH_SERVICES` (stored before the list changed; DECISIONS §20) is
//! deleted unsent, with a warning naming the person and the host; 2xx
//! delivered; 404 or 410 the subscription is gone and deleted; a network error, a timeout, 408, 429 or 5xx tried again
//! with DECISIONS §16's backoff while the push's `TTL` lasts; any other
//! answer given up. What is not delivered is logged as an error: an alarm
//! that may not have reached a phone must be visible to the operator.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use tokio::sync::{OnceCell, mpsc};
use tokio::task::JoinSet;

use nurse_call_core::{
    FairPermits, PushJob, PushKind, PushServices, PushSink, PushStore, StaffSettings, host_key,
    host_of,
    push::{PushNext, PushSubscription, after_push},
    sealing::Sealer,
    webhooks::{ATTEMPT_TIMEOUT, CONNECT_TIMEOUT, Outcome},
};

use crate::request::Signer;

/// Attempts on their way at once.
pub const CONCURRENCY: usize = 32;

/// A person's pushes about one call (a test's: to one device, or all;
/// [`PushJob::lane`]).
type LaneKey = (String, i64, Option<String>);

/// The local server's push sender.
pub struct Pusher {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn PushStore>,
    /// Opens (and, for a new pair, seals) the VAPID private key.
    sealer: Arc<dyn Sealer>,
    client: reqwest::Client,
    signer: OnceCell<Arc<Signer>>,
    vapid_subject: String,
    /// Where a subscription may point (`PUSH_SERVICES`).
    services: PushServices,
    lanes: Mutex<HashMap<LaneKey, mpsc::UnboundedSender<PushJob>>>,
    permits: FairPermits,
    runtime: tokio::runtime::Handle,
}

impl Pusher {
    /// A sender over `store`'s subscriptions and VAPID keys (the private
    /// key opened by `sealer`), signing with `staff`'s `VAPID_SUBJECT` as
    /// the VAPID `sub`, sending only to its `PUSH_SERVICES`, its lanes on
    /// the current runtime.
    pub fn new(
        store: Arc<dyn PushStore>,
        sealer: Arc<dyn Sealer>,
        staff: &StaffSettings,
    ) -> Result<Self, String> {
        crate::tls::use_aws_lc();
        let client = reqwest::Client::builder()
            .timeout(ATTEMPT_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("nurse-call-push/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("push client: {e}"))?;
        Ok(Pusher {
            inner: Arc::new(Inner {
                store,
                sealer,
                client,
                signer: OnceCell::new(),
                vapid_subject: staff.vapid_subject.clone(),
                services: staff.push_services.clone(),
                lanes: Mutex::new(HashMap::new()),
                permits: FairPermits::new(CONCURRENCY),
                runtime: tokio::runtime::Handle::try_current()
                    .map_err(|_| "the push sender needs a running tokio runtime".to_string())?,
            }),
        })
    }

    /// Makes the installation's VAPID key pair now if there is none yet
    /// (DECISIONS §15: on first start), so that the first alert does not
    /// wait for it. A failure is retried with the first push.
    pub async fn prepare(&self) -> Result<(), String> {
        self.inner.signer().await.map(|_| ())
    }

    /// Sends `job` to every subscription of its person now and returns
    /// when it is delivered or given up (with the same retries, logs and
    /// removals as a lane), for a caller that must not end before (a Lambda
    /// invocation, [`crate::delivery_queue`]).
    pub async fn deliver_now(&self, job: &PushJob) {
        // Kept open while it runs: nothing supersedes a job sent so.
        let (_open, mut nothing_newer) = mpsc::unbounded_channel();
        self.inner.deliver(job, &mut nothing_newer).await;
    }
}

impl PushSink for Pusher {
    fn send(&self, job: PushJob) {
        let key = job.lane();
        let mut lanes = self.inner.lanes.lock().expect("lanes lock");
        let job = match lanes.get(&key) {
            Some(lane) => match lane.send(job) {
                Ok(()) => return,
                // Its task ended after the check below: a new lane.
                Err(mpsc::error::SendError(job)) => job,
            },
            None => job,
        };
        let (sender, receiver) = mpsc::unbounded_channel();
        lanes.insert(key.clone(), sender);
        drop(lanes);
        let inner = self.inner.clone();
        self.inner
            .runtime
            .spawn(async move { inner.run_lane(key, job, receiver).await });
    }
}

/// One subscription's attempts so far.
struct Pending {
    subscription: PushSubscription,
    failed: u32,
    due: DateTime<Utc>,
}

impl Inner {
    async fn signer(&self) -> Result<Arc<Signer>, String> {
        self.signer
            .get_or_try_init(|| async {
                let keys = crate::keys::kept_or_made(
                    self.store.as_ref(),
                    self.sealer.as_ref(),
                    Utc::now(),
                )
                .await
                .map_err(|error| format!("VAPID keys not read: {error}"))?;
                Signer::new(&keys, &self.vapid_subject).map(Arc::new)
            })
            .await
            .cloned()
    }

    /// Sends `job`, then whatever comes for this lane, until it is idle.
    async fn run_lane(
        self: Arc<Self>,
        key: LaneKey,
        mut job: PushJob,
        mut receiver: mpsc::UnboundedReceiver<PushJob>,
    ) {
        loop {
            if let Some(newer) = self.deliver(&job, &mut receiver).await {
                job = newer;
                continue;
            }
            job = match receiver.try_recv() {
                Ok(next) => next,
                Err(_) => {
                    // Idle: leave, unless a job came while the lock was free.
                    let mut lanes = self.lanes.lock().expect("lanes lock");
                    match receiver.try_recv() {
                        Ok(next) => next,
                        Err(_) => {
                            lanes.remove(&key);
                            return;
                        }
                    }
                }
            };
            // Several waiting (the sends took a while): the newest is the
            // call's state for this person; the older ones it replaces.
            while let Ok(newer) = receiver.try_recv() {
                job = newer;
            }
        }
    }

    /// Every subscription of the job's person, retried as the schedule
    /// says. Returns a newer job of the lane that superseded this one while
    /// it waited for a retry.
    async fn deliver(
        self: &Arc<Self>,
        job: &PushJob,
        receiver: &mut mpsc::UnboundedReceiver<PushJob>,
    ) -> Option<PushJob> {
        let mut failed_reads = 0;
        let mut pending: Vec<Pending> = loop {
            match self.store.push_subscriptions(&job.staff_id).await {
                Ok(subscriptions) => {
                    let now = Utc::now();
                    let subscriptions = self.of_push_services(job, subscriptions).await;
                    break subscriptions
                        .into_iter()
                        .filter(|subscription| job.goes_to(&subscription.endpoint))
                        .map(|subscription| Pending {
                            subscription,
                            failed: 0,
                            due: now,
                        })
                        .collect();
                }
                Err(error) => {
                    failed_reads += 1;
                    match after_push(Outcome::NetworkError, failed_reads, job.made_at, Utc::now()) {
                        PushNext::RetryAt(at) => {
                            tracing::warn!(staff_id = %job.staff_id, call_id = job.call_id, %error, "push subscriptions not read; trying again");
                            if let Some(newer) = wait_until(at, receiver).await {
                                return Some(newer);
                            }
                        }
                        _ => {
                            tracing::error!(staff_id = %job.staff_id, call_id = job.call_id, %error, "push not sent: the subscriptions could not be read");
                            return None;
                        }
                    }
                }
            }
        };
        if pending.is_empty() {
            tracing::debug!(staff_id = %job.staff_id, call_id = job.call_id, "no phone registered for pushes");
            return None;
        }
        self.record_alert_pushes(job, &pending).await;
        let signer = match self.signer().await {
            Ok(signer) => signer,
            Err(error) => {
                tracing::error!(staff_id = %job.staff_id, call_id = job.call_id, %error, "push not sent");
                return None;
            }
        };
        loop {
            let now = Utc::now();
            let (due, waiting): (Vec<_>, Vec<_>) = pending.into_iter().partition(|p| p.due <= now);
            pending = waiting;
            let mut attempts = JoinSet::new();
            for entry in due {
                let inner = self.clone();
                let signer = signer.clone();
                let job = job.clone();
                attempts.spawn(async move {
                    let outcome = inner.attempt(&signer, &entry.subscription, &job).await;
                    (entry, outcome)
                });
            }
            while let Some(result) = attempts.join_next().await {
                let Ok((mut entry, outcome)) = result else {
                    continue;
                };
                if let Some(retry) = self.settle(job, &mut entry, outcome).await {
                    pending.push(Pending {
                        due: retry,
                        ..entry
                    });
                }
            }
            let next = pending.iter().map(|p| p.due).min()?;
            if let Some(newer) = wait_until(next, receiver).await {
                tracing::info!(staff_id = %job.staff_id, call_id = job.call_id, waiting = pending.len(), "push superseded by a newer one before its retry");
                return Some(newer);
            }
        }
    }

    /// `subscriptions` whose endpoint `PUSH_SERVICES` allows; the others
    /// (stored before the list changed, or before the check) are deleted
    /// unsent: the host logged, never the endpoint, whose path is the
    /// subscription's capability at its push service.
    async fn of_push_services(
        &self,
        job: &PushJob,
        subscriptions: Vec<PushSubscription>,
    ) -> Vec<PushSubscription> {
        let (allowed, refused): (Vec<_>, Vec<_>) = subscriptions
            .into_iter()
            .partition(|subscription| self.services.allows(&subscription.endpoint));
        for subscription in refused {
            let push_service = host_of(&subscription.endpoint);
            match self
                .store
                .delete_push_subscription(&job.staff_id, &subscription.endpoint)
                .await
            {
                Ok(_) => {
                    tracing::warn!(staff_id = %job.staff_id, push_service, "push subscription of no listed push service (PUSH_SERVICES): removed, nothing sent");
                }
                Err(error) => {
                    tracing::warn!(staff_id = %job.staff_id, push_service, %error, "push subscription of no listed push service (PUSH_SERVICES): nothing sent, not removed; tried again with the next push");
                }
            }
        }
        allowed
    }

    /// An alert is a push each of its devices owes a receipt for (DECISIONS
    /// §18): recorded before it is sent, so that the receipt finds it. (A
    /// test is recorded where it is made.) A failed write costs the
    /// device's state one push, never the alert.
    async fn record_alert_pushes(&self, job: &PushJob, pending: &[Pending]) {
        if job.kind != PushKind::Alert {
            return;
        }
        let at = Utc::now();
        for entry in pending {
            let endpoint = &entry.subscription.endpoint;
            if let Err(error) = self
                .store
                .record_device_push(&job.staff_id, endpoint, at, false)
                .await
            {
                tracing::warn!(staff_id = %job.staff_id, call_id = job.call_id, push_service = host_of(endpoint), %error, "alert push not recorded on its device");
            }
        }
    }

    /// One attempt at one subscription.
    async fn attempt(
        &self,
        signer: &Signer,
        subscription: &PushSubscription,
        job: &PushJob,
    ) -> Result<Outcome, String> {
        let payload = job.payload_for(&subscription.endpoint);
        let request = signer.request(subscription, job.call_id, &payload)?;
        // Errors without the URL: a push endpoint is a capability.
        let request = reqwest::Request::try_from(request).map_err(|error| {
            format!(
                "the push request could not be made: {}",
                error.without_url()
            )
        })?;
        let person = format!("staff:{}", job.staff_id);
        let host = host_key(&subscription.endpoint);
        let _permit = self.permits.acquire(&[&person, &host]).await;
        Ok(match self.client.execute(request).await {
            Ok(response) => Outcome::Status(response.status().as_u16()),
            Err(error) if error.is_timeout() => Outcome::TimedOut,
            Err(error) => {
                let error = error.without_url();
                tracing::debug!(staff_id = %job.staff_id, push_service = host_of(&subscription.endpoint), %error, "push attempt found no push service");
                Outcome::NetworkError
            }
        })
    }

    /// Logs and keeps what an attempt came to; the time of its retry, if any.
    async fn settle(
        &self,
        job: &PushJob,
        entry: &mut Pending,
        outcome: Result<Outcome, String>,
    ) -> Option<DateTime<Utc>> {
        let push_service = host_of(&entry.subscription.endpoint);
        let kind = format!("{:?}", job.kind).to_lowercase();
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(error) => {
                tracing::error!(staff_id = %job.staff_id, call_id = job.call_id, push_service, kind, %error, "push not delivered");
                return None;
            }
        };
        let status = match outcome {
            Outcome::Status(status) => Some(status),
            _ => None,
        };
        let failed = entry.failed + u32::from(!outcome.delivered());
        let next = after_push(outcome, failed, job.made_at, Utc::now());
        let elapsed_ms = (Utc::now() - job.made_at).num_milliseconds();
        match next {
            PushNext::Delivered => {
                tracing::info!(staff_id = %job.staff_id, call_id = job.call_id, push_service, kind, status, attempt = failed + 1, elapsed_ms, "push delivered");
                None
            }
            PushNext::Gone => {
                tracing::warn!(staff_id = %job.staff_id, call_id = job.call_id, push_service, status, "push subscription gone: removed");
                if let Err(error) = self
                    .store
                    .delete_push_subscription(&job.staff_id, &entry.subscription.endpoint)
                    .await
                {
                    tracing::warn!(staff_id = %job.staff_id, %error, "gone push subscription not removed; tried again with the next push");
                }
                None
            }
            PushNext::RetryAt(at) => {
                tracing::warn!(staff_id = %job.staff_id, call_id = job.call_id, push_service, kind, status, ?outcome, attempt = failed, "push failed; trying again");
                entry.failed = failed;
                Some(at)
            }
            PushNext::GiveUp(reason) => {
                tracing::error!(staff_id = %job.staff_id, call_id = job.call_id, push_service, kind, status, ?outcome, attempts = failed, reason, "push not delivered");
                None
            }
        }
    }
}

/// Waits until `at`; a job arriving meanwhile ends the wait and is returned.
async fn wait_until(
    at: DateTime<Utc>,
    receiver: &mut mpsc::UnboundedReceiver<PushJob>,
) -> Option<PushJob> {
    let wait = (at - Utc::now()).to_std().unwrap_or_default();
    tokio::select! {
        () = tokio::time::sleep(wait) => None,
        newer = receiver.recv() => newer,
    }
}
