//! Alarms as they run in AWS (issue 28, DECISIONS §17), end to end on moto:
//! the local server writes to DynamoDB (moto) and steps no alarm itself
//! (`ALARM_STEPS=none`: no timers, no look after a write, as a Lambda
//! function frozen after its answer); the data table's stream, read from
//! moto as Lambda's event source mapping reads it, goes to the real `alarm`
//! binary through a Lambda Runtime API; the timers it sends wait in moto's
//! SQS with their per-message delay, and come back to the same binary as
//! Lambda's SQS event source mapping hands them over (deleted unless
//! reported failed); the push jobs go through moto's SQS to the real
//! `deliver` binary and on to `web-push-testing`, which decrypts them.
//! Asserted: escalation at the policy's times (shortened: the house after
//! 2 s, the group after 4 s), an accept stops it, a duplicated timer
//! changes nothing, a close ends the alarm and cancels the alert on the
//! phone, a presence on the address stops its call's alarm, a sign-on
//! alerts the new person for an unattended call, a redeploy of the function
//! between a timer's schedule and its time loses nothing, an alert after
//! the accept or older than its TTL is not pushed, and a poison message
//! ends in the dead-letter queue. And the webhooks: the outbox's records
//! wake the `forward` function through the (FIFO) webhook queue; a
//! receiver (Standard Webhooks, from PyPI) answering 503 four times gets
//! the event at the fifth attempt, the same `webhook-id` each time, after
//! §16's 1, 2, 4 s (waited for in the invocation) and 8 s (a wake-up item
//! in the table, whose stream record the `alarm` function turns into a
//! message delayed on its timer queue, passed on to the webhook queue when
//! it comes). And `element.attention` in a quiet house: an element's low
//! battery wakes nothing until the stack's minute schedule puts its wake-up
//! on the timer queue, after which `forward` sweeps and announces it.
//!
//! Receipts and their deadline (DECISIONS §18) on the same path:
//! tests/tests/alarms_aws/receipts.rs; the sign-on test:
//! tests/tests/alarms_aws/sign_on.rs; an accept's timeout (§19):
//! tests/tests/alarms_aws/accept_timeout.rs; a lost timer's step taken by
//! the minute's wake-up (§19): tests/tests/alarms_aws/overdue.rs; a silent
//! central system found by it: tests/tests/alarms_aws/silence.rs.
//!
//! Runs with `BLACKBOX_STORE=dynamodb` (scripts/test runs the suite a second
//! time so); on SQLite there is no stream nor queue, and it says that it is
//! skipped.

mod alarms_support;
mod webhooks_support;

// Shared with tests/tests/live_aws.rs, which uses the rest.
#[allow(dead_code)]
mod live_aws {
    #[path = "../live_aws/moto_api.rs"]
    pub(crate) mod moto_api;
    #[path = "../live_aws/runtime_api.rs"]
    pub(crate) mod runtime_api;
}

mod alarms_aws {
    /// An accept is not an arrival (DECISIONS §19): its timeout through the
    /// timer queue.
    mod accept_timeout;
    pub(crate) mod event_sources;
    /// No alarm step lost (DECISIONS §19): a lost timer's step taken by
    /// the minute's wake-up.
    mod overdue;
    pub(crate) mod queues;
    /// Receipts (DECISIONS §18): through the `staff` function, and their
    /// deadline through the timer queue.
    pub(crate) mod receipts;
    /// The sign-on test (DECISIONS §18): from the `staff` function through
    /// the stream, `alarm` and `deliver` to the phone.
    mod sign_on;
    /// A silent central system found by the minute's wake-up (§19).
    mod silence;
}

#[path = "push/stand_in.rs"]
#[allow(dead_code)]
mod stand_in;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use alarms_support::*;
use blackbox_tests::*;

use alarms_aws::event_sources::MotoStack;
use live_aws::moto_api::Moto;
use live_aws::runtime_api::Function;
use stand_in::{PushService, Recorder, register};
use webhooks_support::{
    Receiver, central, endpoint, forwarding_of, open_notruf, production_options, room,
};

/// How late a level may be shown after its time: the timer's delay is
/// rounded up to whole seconds (DECISIONS §17), then this harness's polling
/// and moto's answers.
const LATE: Duration = Duration::from_millis(1500);

/// The level of call `id`'s alarm on the displays (0 when not shown).
async fn level(server: &Server, visitor: &Consumer, id: i64) -> i64 {
    displayed(server, visitor, id)
        .await
        .and_then(|call| call["alarm"]["level"].as_i64())
        .unwrap_or(0)
}

/// The call item of `id` as stored (moto).
/// The item `pk`/`sk` of the data table as moto has it, if there is one.
async fn stored_item(moto: &Moto, table: &str, pk: &str, sk: &str) -> Option<Value> {
    moto.items(table)
        .await
        .into_iter()
        .find(|item| item["pk"]["S"].as_str() == Some(pk) && item["sk"]["S"].as_str() == Some(sk))
}

async fn stored_call(moto: &Moto, table: &str, id: i64) -> Value {
    moto.call(
        "DynamoDB_20120810.GetItem",
        json!({
            "TableName": table,
            "Key": {"pk": {"S": format!("call#{id}")}, "sk": {"S": "call"}},
            "ConsistentRead": true
        }),
    )
    .await["Item"]
        .clone()
}

/// The stored alarm's version (one more with every write) and status.
async fn stored_alarm(moto: &Moto, table: &str, id: i64) -> (i64, String) {
    let item = stored_call(moto, table, id).await;
    let version = item["alarm_version"]["N"]
        .as_str()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let alarm: Value =
        serde_json::from_str(item["alarm"]["S"].as_str().expect("the call's alarm")).unwrap();
    (
        version,
        alarm["status"].as_str().unwrap_or_default().to_string(),
    )
}

/// When level `level` (1-based) of call `id`'s alarm started, after the
/// call's open, as stored: the engine counts the policy's times from the
/// open's time and keeps each level's start, both in whole seconds (as
/// every time of the wire), and never starts a level before its time.
async fn level_started(moto: &Moto, table: &str, id: i64, level: usize) -> Duration {
    let item = stored_call(moto, table, id).await;
    let opened: chrono::DateTime<chrono::Utc> = item["opened_at"]["S"]
        .as_str()
        .and_then(|text| text.parse().ok())
        .expect("the call's opened_at");
    let alarm: Value =
        serde_json::from_str(item["alarm"]["S"].as_str().expect("the call's alarm")).unwrap();
    let started: chrono::DateTime<chrono::Utc> = alarm["level_started_at"][level - 1]
        .as_str()
        .and_then(|text| text.parse().ok())
        .unwrap_or_else(|| panic!("level {level} started: {alarm}"));
    (started - opened).to_std().unwrap_or_default()
}

/// Level `level` of call `id` started in the second of the policy's time
/// or the next, and was seen on the displays `seen` after the open's
/// answer: not before its time (less the open's sub-second, which the
/// stored time drops), and at most [`LATE`] after it.
async fn assert_started(
    moto: &Moto,
    table: &str,
    id: i64,
    level: usize,
    policy: Duration,
    seen: Duration,
) {
    let due = level_started(moto, table, id, level).await;
    eprintln!(
        "alarms_aws: call {id}'s level {level}: started {:.0} s after the open (policy {} s), shown {:.2} s after the open's answer",
        due.as_secs_f64(),
        policy.as_secs(),
        seen.as_secs_f64()
    );
    assert!(
        (policy..=policy + Duration::from_secs(1)).contains(&due),
        "level {level} started {due:?} after the open, the policy says {policy:?}"
    );
    let earliest = policy.saturating_sub(Duration::from_secs(1));
    assert!(
        (earliest..=policy + LATE).contains(&seen),
        "level {level} shown {seen:?} after the open's answer, the policy says {policy:?} (−1 s/+{LATE:?})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alarms_escalate_through_the_stream_the_timer_queue_and_the_alarm_function() {
    let Some(stack) = MotoStack::start(Options::sandbox(), &[]).await else {
        return;
    };
    let MotoStack {
        server, moto, data, ..
    } = &stack;
    set_escalation(server, "Notruf", SHORT_POLICY);
    // WC: its section only (nobody on duty for section 3 is reachable).
    set_escalation(server, "WC", r#"[{"after":0,"to":"section"}]"#);
    let queues = stack.queues().await;

    let visitor = server.new_consumer().await;
    let anna = staff(server, &visitor, "Anna", &[]).await;
    let ben = staff(server, &visitor, "Ben", &[]).await;
    let cem = staff(server, &visitor, "Cem", &["Leitung"]).await;
    sign_on(server, &anna, &["1"]).await;
    sign_on(server, &ben, &["2"]).await;
    let env = stack.env(&queues);
    let mut aws = stack.event_sources(&queues, &env).await;

    // The VAPID key pair: made by `deliver` on its cold start (the local
    // server, which pushes nothing here, makes none), its private key
    // stored sealed with the installation's key.
    aws.until("the VAPID key pair made by deliver", WAIT, || async move {
        stored_item(moto, data, "push#vapid", "key").await.is_some()
    })
    .await;
    let keys = stored_item(moto, data, "push#vapid", "key")
        .await
        .expect("the VAPID item");
    let private_key = keys["private_key"]["S"].as_str().expect("private_key");
    assert!(
        private_key.starts_with("kms:"),
        "sealed: {private_key:.12}…"
    );

    // Anna's phone (the push service stand-in decrypts what it gets: the
    // pushes below are signed with the sealed key, opened by `deliver`).
    let push_service = PushService::start().await;
    let recorder = Recorder::start(&push_service).await;
    let phone = register(server, &push_service, &recorder, &anna).await;
    let (timers, deliveries, dead_letters) =
        (&queues.timers, &queues.deliveries, &queues.dead_letters);
    let (visitor, data) = (&visitor, data.as_str());

    // --- Escalation at the policy's times: section 1 (Anna) at once, the
    // --- house after 2 s, the group after 4 s. (On DynamoDB the open
    // --- stores its alarm pending, due at once: the stream's timer of delay
    // --- 0 takes the first level.)
    let first = open(server, visitor, "Z1", "Notruf", Some("1")).await;
    let opened = Instant::now();
    aws.until("level 1", WAIT, || async move {
        level(server, visitor, first).await >= 1
    })
    .await;
    assert_started(moto, data, first, 1, Duration::ZERO, opened.elapsed()).await;
    aws.until("level 2", WAIT, || async move {
        level(server, visitor, first).await >= 2
    })
    .await;
    assert_started(
        moto,
        data,
        first,
        2,
        Duration::from_secs(2),
        opened.elapsed(),
    )
    .await;
    aws.until("level 3", WAIT, || async move {
        level(server, visitor, first).await >= 3
    })
    .await;
    assert_started(
        moto,
        data,
        first,
        3,
        Duration::from_secs(4),
        opened.elapsed(),
    )
    .await;

    // --- A duplicated timer changes nothing: the level-2 timer again.
    let before = stored_alarm(moto, data, first).await;
    let level_2_timer = aws
        .taken
        .iter()
        .find(|timer| timer["call"] == first)
        .expect("call 1's first timer was taken")
        .clone();
    timers.send(&level_2_timer.to_string(), 0).await;
    aws.until_taken(aws.taken.len() + 1, WAIT).await;
    assert_eq!(
        stored_alarm(moto, data, first).await,
        before,
        "nothing written"
    );
    assert_eq!(level(server, visitor, first).await, 3);

    // --- An accept stops the escalation: no level 2 after its time.
    let accepted = open(server, visitor, "Z2", "Notruf", Some("1")).await;
    aws.until("level 1 of the second call", WAIT, || async move {
        level(server, visitor, accepted).await >= 1
    })
    .await;
    respond(server, &anna, accepted, "accepted")
        .await
        .expect_status(200);
    aws.run_for(Duration::from_secs(4)).await;
    let shown = displayed(server, visitor, accepted)
        .await
        .expect("still open");
    assert_eq!(shown["alarm"]["state"], "accepted");
    assert_eq!(shown["alarm"]["level"], 1, "no level after the accept");

    // --- What a phone must not ring for: an alert that comes after the
    // --- accept (a standard queue keeps no order) and one older than the
    // --- push's TTL (a message given again after a crash).
    let of_call = |messages: Vec<Value>, id: i64| {
        messages
            .into_iter()
            .filter(|message| message["call"]["id"] == id)
            .count()
    };
    let phone_before = of_call(push_service.decrypted(&phone).await, accepted);
    let jobs_before = aws.push_jobs;
    let scope = stored_call(moto, data, accepted).await["scope"]["S"].clone();
    let job = |call: i64, made_at: chrono::DateTime<chrono::Utc>| {
        json!({
            "scope": scope, "staff_id": anna.id, "call_id": call, "kind": "alert",
            "payload": json!({"type": "call.alert", "call": {"id": call}}).to_string(),
            "made_at": made_at,
        })
        .to_string()
    };
    let now = chrono::Utc::now();
    deliveries.send(&job(accepted, now), 0).await;
    deliveries
        .send(&job(first, now - chrono::Duration::seconds(120)), 0)
        .await;
    let deadline = Instant::now() + WAIT;
    while aws.push_jobs < jobs_before + 2 {
        assert!(
            Instant::now() < deadline,
            "the two push jobs never handed over"
        );
        aws.round().await;
    }
    assert_eq!(
        of_call(push_service.decrypted(&phone).await, accepted),
        phone_before,
        "no alert after the accept"
    );
    let logs = aws.deliver.logs().join("\n");
    assert!(
        logs.contains("alert not pushed: it rings no more"),
        "{logs}"
    );
    assert!(
        logs.contains("push not delivered: older than its TTL when taken"),
        "{logs}"
    );

    // --- A redeploy between a timer's schedule and its time: the timer
    // --- waits in the queue and the new function takes it.
    let redeployed = Instant::now();
    let third = open(server, visitor, "Z3", "Notruf", Some("1")).await;
    let third_opened = Instant::now();
    aws.until("level 1 of the third call", WAIT, || async move {
        level(server, visitor, third).await >= 1
    })
    .await;
    let records = aws.records;
    while aws.records == records {
        // The level-1 write's stream record: its level-2 timer is sent.
        assert!(redeployed.elapsed() < WAIT, "the level's record never came");
        aws.round().await;
    }
    assert_eq!(
        level(server, visitor, third).await,
        1,
        "level 2 not due yet"
    );
    aws.alarm.stop();
    let new_binary = redeploy(&workspace_binary("alarm"));
    aws.alarm = Function::start("alarm", &new_binary, &env).await;
    aws.until("level 2 after the redeploy", WAIT, || async move {
        level(server, visitor, third).await >= 2
    })
    .await;
    assert_started(
        moto,
        data,
        third,
        2,
        Duration::from_secs(2),
        third_opened.elapsed(),
    )
    .await;

    // --- A close ends the alarm (the central system closes; the function
    // --- only looks): its ringing alerts stop.
    close(server, visitor, "Z1").await;
    aws.until("the closed call's alarm ended", WAIT, || async move {
        stored_alarm(moto, data, first).await.1 == "ended"
    })
    .await;

    // --- Anna's phone got the first call's alert and, with the close, its
    // --- cancel: decrypted, the staff page's own messages.
    let (push_service, phone) = (&push_service, &phone);
    let of_first = |messages: Vec<Value>| -> Vec<Value> {
        messages
            .into_iter()
            .filter(|message| message["call"]["id"] == first)
            .collect()
    };
    aws.until("Anna's cancel on her phone", WAIT, || async move {
        of_first(push_service.decrypted(phone).await)
            .last()
            .is_some_and(|last| last["type"] == "call.cancelled")
    })
    .await;
    let pushed = of_first(push_service.decrypted(phone).await);
    assert_eq!(pushed[0]["type"], "call.alert", "{pushed:?}");
    assert_eq!(pushed[0]["level"], 1);
    assert_eq!(pushed.last().unwrap()["reason"], "ended", "{pushed:?}");
    assert!(
        recorder
            .seen(phone)
            .iter()
            .all(|seen| seen.ttl.as_deref() == Some("60")),
        "each push lives 60 s"
    );

    // --- A presence on the address (staff in the room) stops its call's
    // --- alarm and cancels the alert: the presence's record wakes the
    // --- address's other open calls.
    let fourth = open(server, visitor, "Z4", "Notruf", Some("1")).await;
    aws.until("level 1 of the fourth call", WAIT, || async move {
        level(server, visitor, fourth).await >= 1
    })
    .await;
    open(server, visitor, "Z4", "Anwesenheit", None).await;
    aws.until("the presence stopped the alarm", WAIT, || async move {
        displayed(server, visitor, fourth)
            .await
            .is_some_and(|call| call["alarm"]["state"] == "present")
    })
    .await;
    aws.until("Anna's cancel for the presence", WAIT, || async move {
        push_service.decrypted(phone).await.iter().any(|message| {
            message["call"]["id"] == fourth
                && message["type"] == "call.cancelled"
                && message["reason"] == "present"
        })
    })
    .await;

    // --- A sign-on: the duty's record wakes the scope's running alarms,
    // --- and Cem, on duty for section 3 now, is alerted for the WC there
    // --- that nobody could take.
    let fifth = open(server, visitor, "Z5", "WC", Some("3")).await;
    aws.until("the WC unattended", WAIT, || async move {
        displayed(server, visitor, fifth)
            .await
            .is_some_and(|call| call["alarm"]["state"] == "unattended")
    })
    .await;
    sign_on(server, &cem, &["3"]).await;
    let cem = &cem;
    aws.until("Cem alerted after his sign-on", WAIT, || async move {
        staff_calls(server, cem)
            .await
            .iter()
            .any(|call| call["id"] == fifth && call["alerting"] == true)
    })
    .await;

    // --- A poison message: reported failed on each receive, then in the
    // --- dead-letter queue.
    timers.send("not a timer", 0).await;
    aws.until(
        "the poison message in the dead-letter queue",
        WAIT,
        || async move {
            dead_letters
                .receive()
                .await
                .iter()
                .any(|message| message["Body"] == "not a timer")
        },
    )
    .await;
    assert!(aws.failed.iter().any(|body| body == "not a timer"));
    let logs = aws.alarm.logs().join("\n");
    assert!(
        logs.contains("a timer message that is no timer"),
        "the function says so: {logs}"
    );
    assert!(
        !logs.contains(&anna.token) && !logs.contains(&visitor.secret),
        "no secret logged"
    );
}

/// The §16 backoff after the first four failures: the first three are
/// waited for in the `forward` invocation, the fourth (8 s) is a wake-up
/// item, then a message delayed on the timer queue (the `alarm` function's).
const BACKOFF: [f64; 4] = [1.0, 2.0, 4.0, 8.0];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_go_out_through_the_webhook_queue_and_the_forward_function() {
    let _serial = webhooks_support::SERIAL.lock().await;
    let Some(stack) = MotoStack::start(production_options(2), &[]).await else {
        return;
    };
    let MotoStack {
        server,
        moto,
        data,
        key,
        ..
    } = &stack;
    let queues = stack.queues().await;
    let env = stack.env(&queues);
    let mut aws = stack.event_sources(&queues, &env).await;

    // A receiver (Standard Webhooks, from PyPI). Its endpoint made by the
    // admin command with the installation's key: the secret is stored
    // sealed, and `forward` opens it to sign (every delivery below
    // verifies with the secret).
    let receiver = Receiver::start(None);
    let (endpoint_id, secret) = endpoint(server, &receiver, &["--secrets-key", key.as_str()]).await;

    // --- element.attention in a quiet house: an element's battery runs
    // --- low, which is no event; nothing wakes `forward` until the
    // --- stack's EventBridge schedule sends its minute's wake-up to the
    // --- timer queue (infra/lib/webhooks.ts), sent here by hand.
    server
        .element(&central(), &room(2), r#"{"battery":12}"#)
        .await
        .expect_status(200);
    aws.run_for(Duration::from_secs(3)).await;
    assert_eq!(aws.webhook_wakes, 0, "an element's report wakes nothing");
    assert!(receiver.received().await.is_empty());
    // The schedule rule's input: the alarm function's WEBHOOK_WAKE (the
    // CDK test checks they are the same).
    queues.timers.send(r#"{"webhooks":"wake"}"#, 0).await;
    {
        let receiver = &receiver;
        aws.until(
            "element.attention after the schedule's wake-up",
            Duration::from_secs(20),
            || async move { !receiver.received().await.is_empty() },
        )
        .await;
    }
    let announced = receiver.received().await;
    assert_eq!(announced[0].kind.as_deref(), Some("element.attention"));
    assert_eq!(announced[0].body["data"]["element"]["address"], room(2));
    assert_eq!(
        announced[0].body["data"]["element"]["reasons"],
        json!(["battery_low"])
    );
    assert!(announced[0].verified && announced[0].status == 200);
    assert!(aws.webhook_wakes > 0, "woken through the webhook queue");

    // --- A call's events: the receiver answers 503 four times, then 200.
    receiver.answers(&[503, 503, 503, 503]).await;
    let stored = stored_item(moto, data, "webhook#endpoints", &endpoint_id)
        .await
        .expect("the endpoint's item");
    let stored_secrets = stored["secrets"]["L"].as_array().expect("secrets");
    assert_eq!(stored_secrets.len(), 1);
    let sealed = stored_secrets[0]["S"].as_str().expect("a secret");
    assert!(
        sealed.starts_with("kms:") && !sealed.contains(&secret[6..]),
        "sealed: {sealed:.12}…"
    );
    let call = open_notruf(server, &room(1), "1").await;
    let receiver = &receiver;
    aws.until(
        "the first event delivered at its fifth attempt",
        Duration::from_secs(30),
        || async move {
            let received = receiver.received().await;
            received
                .iter()
                .find(|d| d.call_id() == Some(call))
                .is_some_and(|first| received.iter().any(|d| d.id == first.id && d.status == 200))
        },
    )
    .await;
    let received = receiver.received().await;
    let first = received
        .iter()
        .find(|d| d.call_id() == Some(call))
        .expect("the call's first event");
    let attempts: Vec<_> = received.iter().filter(|d| d.id == first.id).collect();
    assert_eq!(
        attempts.iter().map(|d| d.status).collect::<Vec<_>>(),
        [503, 503, 503, 503, 200],
        "the same webhook-id each time"
    );
    assert!(
        attempts.iter().all(|d| d.verified),
        "every attempt verifies"
    );
    for (n, pair) in attempts.windows(2).enumerate() {
        let interval = pair[1].received_at - pair[0].received_at;
        eprintln!(
            "alarms_aws: retry {} after {interval:.2} s (backoff {} s)",
            n + 1,
            BACKOFF[n]
        );
        assert!(
            (BACKOFF[n] * 0.8..=BACKOFF[n] + 1.5).contains(&interval),
            "retry {} after {interval:.2} s, the backoff is {} s",
            n + 1,
            BACKOFF[n]
        );
    }
    // The call's later events follow, each delivered.
    aws.run_for(Duration::from_secs(2)).await;
    let received = receiver.received().await;
    let ids: std::collections::BTreeSet<&str> = received.iter().map(|d| d.id.as_str()).collect();
    for id in &ids {
        assert!(
            received
                .iter()
                .any(|d| d.id == *id && d.status == 200 && d.verified),
            "{id} delivered: {received:#?}"
        );
    }

    // --- "Weiterleitung gestört" from what `forward` stores: an endpoint
    // --- failing for a minute (its `failing_since` moved back by hand, as
    // --- the minute is not waited for) shows on displays and staff pages,
    // --- read from the store as the display-read and staff functions do.
    let display = server
        .admin(&["displays", "create", "--name", "Flur", "--json"])
        .success()
        .json();
    let display_token = display["token"].as_str().expect("token");
    let (_, anna) = webhooks_support::staff_member(server, "Anna", "DECT-101");
    let on_displays = || forwarding_of(server, "/api/v1/display/calls", display_token);
    let failing_since = |ago: chrono::Duration| {
        let (moto, data, endpoint_id) = (moto, data.as_str(), endpoint_id.as_str());
        async move {
            let since =
                (chrono::Utc::now() - ago).to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
            moto.call(
                "DynamoDB_20120810.UpdateItem",
                json!({
                    "TableName": data,
                    "Key": {"pk": {"S": "webhook#endpoints"}, "sk": {"S": endpoint_id}},
                    "UpdateExpression": "SET failing_since = :since",
                    "ExpressionAttributeValues": {":since": {"S": since}}
                }),
            )
            .await;
        }
    };
    failing_since(chrono::Duration::seconds(5)).await;
    assert_eq!(
        on_displays().await,
        json!([]),
        "not before a minute of failing"
    );
    failing_since(chrono::Duration::minutes(2)).await;
    // Read from the store at most every 10 s.
    let deadline = Instant::now() + Duration::from_secs(15);
    let shown = loop {
        let shown = on_displays().await;
        if shown != json!([]) {
            break shown;
        }
        assert!(Instant::now() < deadline, "never shown");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(shown.as_array().map(Vec::len), Some(1), "{shown}");
    assert!(shown[0]["name"].is_string(), "{shown}");
    let deadline = Instant::now() + Duration::from_secs(15);
    while forwarding_of(server, "/api/v1/staff/calls", &anna).await != shown {
        assert!(Instant::now() < deadline, "the staff page never says it");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A copy of `binary` in a folder of its own, as a redeploy replaces the
/// function's code.
fn redeploy(binary: &std::path::Path) -> PathBuf {
    let folder = tempfile::tempdir().expect("a folder").keep();
    let copy = folder.join("bootstrap");
    std::fs::copy(binary, &copy).expect("the binary copied");
    copy
}
