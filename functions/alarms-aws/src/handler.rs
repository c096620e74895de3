//! The alarm function's handler (DECISIONS §17). One function, two event
//! sources, told apart by the records' `eventSource`:
//!
//! - **the data table's stream** (`aws:dynamodb`): each record's wakes
//!   ([`crate::wakes`]) become timers on the timer queue (a call's next
//!   step, a close, the open calls of a presence's address, the running
//!   alarms of a scope whose duties changed) and pushes on the delivery
//!   queue (an alarm write's alerts and cancels, from its audit lines). A
//!   read the wakes need that fails (call types, an address, a scope's
//!   calls) reports that record's `SequenceNumber`, after the messages of
//!   the records before it were sent: Lambda retries from it. A timer sent
//!   twice is harmless; a push sent twice replaces itself on the phone. A
//!   batch with webhook events in the outbox wakes the webhook deliveries.
//! - **the timer queue** (`aws:sqs`): each message is a [`Timer`] (or a
//!   webhook wake-up delayed to a retry's time, passed on to the webhook
//!   queue), taken
//!   with [`AlarmRunner::take_timer`]: due, the alarm is stepped with the
//!   conditional write (its stream record schedules the next timer); early,
//!   it is sent on. A message that is no timer, or whose step or sending on
//!   fails, is reported in `batchItemFailures`: the queue gives it again
//!   after its visibility timeout, and after the redrive policy's receives
//!   it lands in the dead-letter queue, whose alarm says so.
//!
//! Nothing here ever closes a call: only the central system does.

use std::collections::HashMap;
use std::time::Instant;

use aws_lambda_events::dynamodb::EventRecord;
use aws_lambda_events::sqs::SqsMessage;
use chrono::{DateTime, Utc};
use futures_util::future::join_all;

use nurse_call_core::{
    AppState, Call, PushJob, Scope, TimerTaken,
    alarm::{AuditEvent, Effect, Timer, first_delay, is_presence},
    jobs_of_effects,
};

use crate::event::{AlarmEvent, AlarmResponse};
use crate::queues::{Queue, is_minute_wake, is_webhook_wake};
use crate::wakes::{Wake, calls_in, wakes_of_record};

/// Everything an invocation needs, built once per cold start.
pub struct AlarmHandler {
    pub(crate) state: AppState,
    timers: Queue,
    pub(crate) deliveries: Queue,
    pub(crate) webhooks: Queue,
}

/// What a batch did, for its log line and the tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Records (stream) or messages (queue) in the batch, readable or not.
    pub records: usize,
    /// Records (or messages) that could not be read and were skipped
    /// (stream) or reported (queue).
    pub unreadable: usize,
    /// Timers sent to the timer queue (stream batches).
    pub timers_sent: usize,
    /// Push jobs sent to the delivery queue (stream batches).
    pub pushes_sent: usize,
    /// Timers that found their alarm due and stepped it (queue batches).
    pub stepped: usize,
    /// Early timers sent back to the timer queue to wait on (queue batches).
    pub sent_on: usize,
    /// Messages given again because their step or their sending on failed; 1
    /// when a stream batch's messages could not be sent (it is retried whole).
    pub failed: usize,
}

impl AlarmHandler {
    /// `timers`, `deliveries` and `webhooks`: the timer, delivery and webhook
    /// queues ([`crate::queues`]).
    pub fn new(state: AppState, timers: Queue, deliveries: Queue, webhooks: Queue) -> Self {
        AlarmHandler {
            state,
            timers,
            deliveries,
            webhooks,
        }
    }

    /// One invocation: a stream batch or a queue batch in, Lambda's partial
    /// batch response (`{"batchItemFailures":[…]}`) out.
    pub async fn handle(&self, event: AlarmEvent) -> AlarmResponse {
        let started = Instant::now();
        let source = event.source().to_owned();
        // To the millisecond: a timer's delay and whether it came early
        // are sub-second questions (stored times are whole seconds).
        let now = Utc::now();
        let (response, tally) = match event {
            AlarmEvent::Stream(records) => {
                let (retry_from, tally) = self.schedule(records, now).await;
                (AlarmResponse::stream(retry_from), tally)
            }
            AlarmEvent::Queue(messages) => {
                let (given_again, tally) = self.take(&messages, now).await;
                (AlarmResponse::queue(given_again), tally)
            }
            // No failures: the same answer for either source.
            AlarmEvent::Empty => (AlarmResponse::queue(Vec::new()), Tally::default()),
            AlarmEvent::Other { source } => {
                tracing::error!(source, "neither a stream nor a timer queue event: ignored");
                (AlarmResponse::queue(Vec::new()), Tally::default())
            }
        };
        tracing::info!(
            source,
            records = tally.records,
            unreadable = tally.unreadable,
            timers_sent = tally.timers_sent,
            pushes_sent = tally.pushes_sent,
            stepped = tally.stepped,
            sent_on = tally.sent_on,
            failed = tally.failed,
            ms = started.elapsed().as_millis() as u64,
            "alarm batch handled"
        );
        response
    }

    /// The stream's records, in order: their timers and pushes, sent.
    /// Returns the sequence number to retry from, if any.
    pub async fn schedule(
        &self,
        read_records: Vec<Result<EventRecord, serde_json::Error>>,
        now: DateTime<Utc>,
    ) -> (Vec<String>, Tally) {
        let mut tally = Tally {
            records: read_records.len(),
            ..Tally::default()
        };
        let mut records = Vec::new();
        for (index, read) in read_records.into_iter().enumerate() {
            match read {
                Ok(record) => records.push(record),
                Err(error) => {
                    // Where, not what: the serde message may quote a value.
                    tracing::error!(index, category = ?error.classify(), "unreadable stream record skipped");
                    tally.unreadable += 1;
                }
            }
        }
        let calls = calls_in(&records);
        let mut timers = Vec::new();
        let mut pushes = Vec::new();
        let mut outbox = None;
        let mut webhook_retries = Vec::new();
        let mut retry_from = None;
        for record in &records {
            let sequence = record.change.sequence_number.clone().unwrap_or_default();
            let wakes = match wakes_of_record(record, now) {
                Ok(wakes) => wakes,
                Err(reason) => {
                    tracing::error!(sequence, %reason, "unreadable stream record skipped: its alarm gets nothing from it");
                    tally.unreadable += 1;
                    continue;
                }
            };
            if wakes.contains(&Wake::Outbox) && outbox.is_none() {
                outbox = Some(sequence.clone());
            }
            for wake in &wakes {
                if let Wake::WebhookRetry { due } = wake {
                    webhook_retries.push((sequence.clone(), *due));
                }
            }
            match self.messages_of(wakes, &calls, now).await {
                Ok((more_timers, more_pushes)) => {
                    timers.extend(more_timers);
                    pushes.extend(more_pushes);
                }
                Err(error) => {
                    tracing::warn!(sequence, %error, "stream record not scheduled: retried from it");
                    retry_from = Some(sequence);
                    break;
                }
            }
        }
        let sent = match self.timers.send_timers(&timers).await {
            Ok(()) => self.deliveries.send_pushes(&pushes).await,
            Err(error) => Err(error),
        };
        let sent = match (sent, &outbox) {
            (Ok(()), Some(sequence)) => self.webhooks.send_webhook_wake(sequence).await,
            (sent, _) => sent,
        };
        let sent = match sent {
            Ok(()) => self.schedule_webhook_retries(&webhook_retries, now).await,
            error => error,
        };
        if let Err(error) = sent {
            tracing::error!(%error, timers = timers.len(), pushes = pushes.len(), "stream batch not sent on: retried whole");
            tally.failed += 1;
            let first = records
                .first()
                .and_then(|record| record.change.sequence_number.clone())
                .unwrap_or_default();
            return (vec![first], tally);
        }
        tally.timers_sent = timers.len();
        tally.pushes_sent = pushes.len();
        (retry_from.into_iter().collect(), tally)
    }

    /// The timers and pushes `wakes` ask for.
    async fn messages_of(
        &self,
        wakes: Vec<Wake>,
        calls: &HashMap<i64, Call>,
        now: DateTime<Utc>,
    ) -> Result<(Vec<(Timer, u32)>, Vec<PushJob>), String> {
        let mut pushes = Vec::new();
        let mut looks = Vec::new();
        for wake in wakes {
            match wake {
                Wake::Audit {
                    scope,
                    call,
                    events,
                } => pushes.extend(self.pushes_of(&scope, call, &events, calls).await?),
                Wake::DeviceTest(test) => pushes.push(PushJob::test(
                    &test.scope,
                    &test.staff_id,
                    test.at,
                    test.device,
                )),
                other => looks.push(other),
            }
        }
        Ok((self.timers_of(looks, now).await?, pushes))
    }

    /// The pushes of an alarm write's audit lines: its alerts and cancels,
    /// with the call as the write left it.
    async fn pushes_of(
        &self,
        scope: &Scope,
        call_id: i64,
        events: &[AuditEvent],
        calls: &HashMap<i64, Call>,
    ) -> Result<Vec<PushJob>, String> {
        let Some(made_at) = events.iter().map(|event| event.at).max() else {
            return Ok(Vec::new());
        };
        if !events
            .iter()
            .any(|event| event.personal_effect(None).is_some())
        {
            return Ok(Vec::new());
        }
        let call = match calls.get(&call_id) {
            Some(call) => call.clone(),
            None => {
                let alarms = self.state.alarms.as_ref().ok_or("no alarm store")?;
                match alarms
                    .alarm(scope, call_id)
                    .await
                    .map_err(|e| e.to_string())?
                {
                    Some(kept) => kept.call,
                    None => return Ok(Vec::new()),
                }
            }
        };
        let accepted_by = call
            .alarm
            .as_ref()
            .and_then(|alarm| alarm.accepted.as_ref())
            .map(|answer| &answer.staff);
        let effects: Vec<Effect> = events
            .iter()
            .filter_map(|event| event.personal_effect(accepted_by))
            .collect();
        let types = self.state.call_types().await.map_err(|e| e.to_string())?;
        Ok(jobs_of_effects(
            scope,
            &call,
            &effects,
            &types,
            self.state.settings.time_zone,
            made_at,
        ))
    }

    /// The timers `wakes` ask for: those a record names itself, and those
    /// of the calls a presence or a duty change looks at now.
    async fn timers_of(
        &self,
        wakes: Vec<Wake>,
        now: DateTime<Utc>,
    ) -> Result<Vec<(Timer, u32)>, String> {
        let mut timers = Vec::new();
        for wake in wakes {
            match wake {
                Wake::Timer(timer, delay) => timers.push((timer, delay)),
                Wake::Opened {
                    scope,
                    call,
                    event,
                    address,
                } => {
                    let types = self.state.call_types().await.map_err(|e| e.to_string())?;
                    if !is_presence(&types, &event) {
                        continue;
                    }
                    let snapshot = self
                        .state
                        .store
                        .snapshot(&scope, &address)
                        .await
                        .map_err(|e| e.to_string())?;
                    let others = snapshot.open_calls.iter().filter(|other| other.id != call);
                    timers.extend(others.map(|other| now_timer(&scope, other.id, now)));
                }
                Wake::Audit { .. }
                | Wake::DeviceTest(_)
                | Wake::Outbox
                | Wake::WebhookRetry { .. } => {}
                Wake::DutyChanged { scope } => {
                    let calls = self
                        .state
                        .store
                        .open_calls(&scope)
                        .await
                        .map_err(|e| e.to_string())?;
                    let running = calls.iter().filter(|call| {
                        call.alarm
                            .as_ref()
                            .is_some_and(|alarm| !alarm.status.is_stopped())
                    });
                    timers.extend(running.map(|call| now_timer(&scope, call.id, now)));
                }
            }
        }
        Ok(timers)
    }

    /// The webhook wake-ups the `forward` function asked for: delayed on
    /// the timer queue until their time (passed on to the webhook queue
    /// when they come), or on the webhook queue at once when due.
    async fn schedule_webhook_retries(
        &self,
        retries: &[(String, DateTime<Utc>)],
        now: DateTime<Utc>,
    ) -> Result<(), String> {
        for (sequence, due) in retries {
            match first_delay(*due, now) {
                0 => self.webhooks.send_webhook_wake(sequence).await?,
                delay => self.timers.send_webhook_wake_later(delay).await?,
            }
        }
        Ok(())
    }

    /// The queue's messages, taken side by side. Returns the ids of those
    /// the queue must give again.
    pub async fn take(&self, messages: &[SqsMessage], now: DateTime<Utc>) -> (Vec<String>, Tally) {
        let outcomes = join_all(messages.iter().map(|message| self.take_one(message, now))).await;
        let mut tally = Tally {
            records: messages.len(),
            ..Tally::default()
        };
        let mut failures = Vec::new();
        for (id, outcome) in outcomes {
            match outcome {
                Taken::Stepped => tally.stepped += 1,
                Taken::Nothing => {}
                Taken::SentOn => tally.sent_on += 1,
                Taken::Unreadable => {
                    tally.unreadable += 1;
                    failures.push(id);
                }
                Taken::Failed => {
                    tally.failed += 1;
                    failures.push(id);
                }
            }
        }
        (failures, tally)
    }

    async fn take_one(&self, message: &SqsMessage, now: DateTime<Utc>) -> (String, Taken) {
        let id = message.message_id.clone().unwrap_or_default();
        if message.body.as_deref().is_some_and(is_minute_wake) {
            return (id.clone(), self.take_minute_wake(&id, now).await);
        }
        if message.body.as_deref().is_some_and(is_webhook_wake) {
            // A webhook retry's time: passed on to the webhook queue.
            return match self.webhooks.send_webhook_wake(&id).await {
                Ok(()) => (id, Taken::Nothing),
                Err(error) => {
                    tracing::warn!(message_id = id, %error, "webhook wake-up not passed on: given again");
                    (id, Taken::Failed)
                }
            };
        }
        let Some(timer) = message
            .body
            .as_deref()
            .and_then(|body| serde_json::from_str::<Timer>(body).ok())
        else {
            // Loudly: after the queue's receives it lands in the dead-letter
            // queue, whose alarm an operator sees.
            tracing::error!(
                message_id = id,
                "a timer message that is no timer: left to the dead-letter queue"
            );
            return (id, Taken::Unreadable);
        };
        let outcome = match self.state.alarm_runner().take_timer(&timer, now).await {
            Ok(TimerTaken::Done { stepped: true }) => Taken::Stepped,
            Ok(TimerTaken::Done { stepped: false }) => Taken::Nothing,
            Ok(TimerTaken::SendOn {
                timer: later,
                delay_seconds,
            }) => match self.timers.send_timers(&[(later, delay_seconds)]).await {
                Ok(()) => Taken::SentOn,
                Err(error) => {
                    tracing::warn!(message_id = id, call_id = timer.call, %error, "early timer not sent on: given again");
                    Taken::Failed
                }
            },
            Err(error) => {
                tracing::warn!(message_id = id, call_id = timer.call, %error, "timer not taken: given again");
                Taken::Failed
            }
        };
        (id, outcome)
    }
}

/// What became of one message.
pub(crate) enum Taken {
    Stepped,
    Nothing,
    SentOn,
    Unreadable,
    Failed,
}

/// A timer due at once: a look now.
fn now_timer(scope: &Scope, call: i64, now: DateTime<Utc>) -> (Timer, u32) {
    (Timer::new(scope, call, now), 0)
}
