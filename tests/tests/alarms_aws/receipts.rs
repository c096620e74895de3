//! Receipts and reachability as they run in AWS (DECISIONS §18 on §17's
//! path), end to end on moto, beside the levels of tests/tests/alarms_aws.rs:
//! the alarm write's audit lines become push jobs (the real `alarm`
//! binary), the real `deliver` binary puts into each phone's payload that
//! phone's own `receipt`, `web-push-testing` decrypts it, and the phone
//! posts it to the real `staff` binary (`POST /api/v1/staff/receipts`, as
//! API Gateway's HTTP API hands it over). `RECEIPT_SECONDS` is 3 in every
//! function's environment (and the local server's), the Notruf alerts its
//! section at once and the house after 60 s.
//!
//! Asserted: (1) Anna's phone confirms her alert: 200 from the staff
//! function, her `received_at` on the displays, and when her receipt
//! deadline's timer comes through the timer queue her call stays at
//! level 1 (still [`LATE`] past the deadline); (2) Ben's phone gets his alert and does not confirm: the
//! house level (Anna) starts at his receipt deadline, a due time of the
//! alarm sent through the table's stream and the timer queue like a
//! level's: stored `RECEIPT_SECONDS` (+1 s, whole seconds) after his first
//! alert, and Anna's phone rings −1 s/+[`LATE`] around `RECEIPT_SECONDS`
//! after Ben's phone did (the tolerance of the suite's levels on moto:
//! the first alert's time is kept in whole seconds, the timer's delay is
//! rounded up to whole seconds). Every push decrypted carries a receipt of
//! its own.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use blackbox_tests::*;

use crate::alarms_aws::event_sources::{EventSources, MotoStack};
use crate::alarms_support::*;
use crate::live_aws::moto_api::Moto;
use crate::live_aws::runtime_api::Function;
use crate::stand_in::{PushService, Recorder, Subscription, register};
use crate::{LATE, level, stored_call, stored_item};

/// `RECEIPT_SECONDS` of this test: short, and long enough for a phone's
/// receipt to come back through moto before it (the first alert's time is
/// kept in whole seconds, so a receipt has from 2 to 3 s).
const RECEIPT_SECONDS: u64 = 3;

/// The Notruf: its section at once, the house after 60 s (far beyond this
/// test: a level 2 within seconds is the receipt deadline's).
const POLICY: &str = r#"[{"after":0,"to":"section"},{"after":60,"to":"house"}]"#;

const RECEIPTS: &str = "/api/v1/staff/receipts";

/// The decrypted alerts of call `id` on a phone, in arrival order.
fn alerts_of(messages: Vec<Value>, id: i64) -> Vec<Value> {
    messages
        .into_iter()
        .filter(|message| message["type"] == "call.alert" && message["call"]["id"] == id)
        .collect()
}

/// When the first push about call `id` reached `phone` (the recorder in
/// front of the push service saw it).
fn first_push_at(recorder: &Recorder, phone: &Subscription, id: i64) -> Instant {
    let topic = format!("call-{id}");
    recorder
        .seen(phone)
        .iter()
        .find(|seen| seen.topic.as_deref() == Some(topic.as_str()))
        .map(|seen| seen.at)
        .unwrap_or_else(|| panic!("no push about call {id} reached the phone"))
}

/// The staff function's answer to `POST /api/v1/staff/receipts` of
/// `receipt` with `member`'s token: status and body.
pub(crate) async fn post_receipt(
    staff: &mut Function,
    member: &Member,
    receipt: &str,
) -> (u64, Value) {
    let body = json!({ "receipt": receipt }).to_string();
    staff_request(staff, member, "POST", RECEIPTS, Some(&body)).await
}

/// The staff function's answer to `method` `path` with `member`'s token
/// and `body`, as API Gateway's HTTP API (payload 2.0) hands the request
/// over and takes the answer: status and body.
pub(crate) async fn staff_request(
    staff: &mut Function,
    member: &Member,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u64, Value) {
    let domain = "a1b2c3d4e5.execute-api.eu-central-1.amazonaws.com";
    let now = Utc::now();
    let mut headers = json!({
        "authorization": format!("Bearer {}", member.token),
        "host": domain,
        "user-agent": "nurse-call-tests",
        "x-forwarded-for": "203.0.113.7",
        "x-forwarded-proto": "https",
    });
    if let Some(body) = body {
        headers["content-type"] = json!("application/json");
        headers["content-length"] = json!(body.len().to_string());
    }
    let event = json!({
        "version": "2.0",
        "routeKey": format!("ANY {path}"),
        "rawPath": path,
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "a1b2c3d4e5",
            "domainName": domain,
            "domainPrefix": "a1b2c3d4e5",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "nurse-call-tests",
            },
            "requestId": format!("request-{}", now.timestamp_nanos_opt().unwrap_or_default()),
            "routeKey": format!("ANY {path}"),
            "stage": "$default",
            "time": now.format("%d/%b/%Y:%H:%M:%S +0000").to_string(),
            "timeEpoch": now.timestamp_millis(),
        },
        "body": body,
        "isBase64Encoded": false,
    });
    let answer = staff.invoke(event).await;
    let status = answer["statusCode"]
        .as_u64()
        .unwrap_or_else(|| panic!("an HTTP answer: {answer}"));
    assert_eq!(answer["isBase64Encoded"], false, "{answer}");
    let body = answer["body"]
        .as_str()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or(Value::Null);
    (status, body)
}

/// The stored alarm of call `id` (moto).
async fn stored_alarm_json(moto: &Moto, table: &str, id: i64) -> Value {
    let item = stored_call(moto, table, id).await;
    serde_json::from_str(item["alarm"]["S"].as_str().expect("the call's alarm")).unwrap()
}

/// A UTC time of the stored alarm.
fn utc(value: &Value) -> DateTime<Utc> {
    value
        .as_str()
        .and_then(|text| text.parse().ok())
        .unwrap_or_else(|| panic!("a stored time: {value}"))
}

/// `member`'s entry among the stored alarm's recipients.
fn recipient<'a>(alarm: &'a Value, member: &Member) -> &'a Value {
    alarm["recipients"]
        .as_array()
        .and_then(|all| all.iter().find(|r| r["staff"]["id"] == member.id.as_str()))
        .unwrap_or_else(|| panic!("{} among the recipients: {alarm}", member.name))
}

/// `member`'s entry among the call's recipients on the displays.
fn shown_recipient(call: &Value, member: &Member) -> Value {
    call["alarm"]["recipients"]
        .as_array()
        .and_then(|all| all.iter().find(|r| r["id"] == member.id.as_str()))
        .cloned()
        .unwrap_or_else(|| panic!("{} among the recipients: {call}", member.name))
}

/// Polls until a timer of call `id` due at `due` was handed to the alarm
/// function (and so was taken: stepped, or sent on when not due).
async fn until_timer_taken(aws: &mut EventSources<'_>, id: i64, due: DateTime<Utc>) {
    let deadline = Instant::now() + WAIT + Duration::from_secs(RECEIPT_SECONDS);
    while !aws.taken.iter().any(|timer| is_timer(timer, id, due)) {
        assert!(
            Instant::now() < deadline,
            "no timer of call {id} due at {due} came: {:?}",
            aws.taken
        );
        aws.round().await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether `timer` (a timer message as taken) is call `id`'s, due at `due`.
fn is_timer(timer: &Value, id: i64, due: DateTime<Utc>) -> bool {
    timer["call"] == id
        && timer["due"]
            .as_str()
            .and_then(|text| text.parse::<DateTime<Utc>>().ok())
            == Some(due)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receipts_go_to_the_staff_function_and_their_deadline_through_the_timer_queue() {
    let receipt_seconds = Duration::from_secs(RECEIPT_SECONDS);
    let Some(stack) = MotoStack::with_receipt_seconds(RECEIPT_SECONDS).await else {
        return;
    };
    let MotoStack {
        server, moto, data, ..
    } = &stack;
    set_escalation(server, "Notruf", POLICY);
    let queues = stack.queues().await;

    let visitor = server.new_consumer().await;
    let (anna, ben) = anna_and_ben_on_duty(server, &visitor).await;
    let env = stack.env(&queues);
    let mut aws = stack.event_sources(&queues, &env).await;
    let mut staff_function = Function::start("staff", &workspace_binary("staff"), &env).await;

    // The VAPID key pair, made by `deliver` on its cold start, before the
    // phones subscribe with its public key.
    aws.until("the VAPID key pair made by deliver", WAIT, || async move {
        stored_item(moto, data, "push#vapid", "key").await.is_some()
    })
    .await;
    let push_service = PushService::start().await;
    let recorder = Recorder::start(&push_service).await;
    let anna_phone = register(server, &push_service, &recorder, &anna).await;
    let ben_phone = register(server, &push_service, &recorder, &ben).await;
    let (visitor, data) = (&visitor, data.as_str());
    let (push_service, anna_phone, ben_phone) = (&push_service, &anna_phone, &ben_phone);

    // --- (1) Anna's phone confirms: her alert, decrypted, carries its
    // --- receipt, which the phone posts to the staff function.
    let confirmed = open(server, visitor, "Z1", "Notruf", Some("1")).await;
    aws.until("Anna's alert on her phone", WAIT, || async move {
        !alerts_of(push_service.decrypted(anna_phone).await, confirmed).is_empty()
    })
    .await;
    let pushed_at = first_push_at(&recorder, anna_phone, confirmed);
    let alert = alerts_of(push_service.decrypted(anna_phone).await, confirmed)[0].clone();
    assert_eq!(alert["level"], 1, "{alert}");
    let receipt = alert["receipt"]
        .as_str()
        .unwrap_or_else(|| panic!("the pushed alert carries a receipt: {alert}"))
        .to_string();
    let (status, body) = post_receipt(&mut staff_function, &anna, &receipt).await;
    let answered = pushed_at.elapsed();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true, "{body}");
    assert_eq!(body["data"]["receipt"], receipt.as_str());
    assert_eq!(body["data"]["call"], confirmed);
    let received_at = body["data"]["received_at"]
        .as_str()
        .expect("received_at")
        .to_string();
    assert_now_in(&received_at, "Europe/Berlin");
    // Its log reaches the test through a pipe and a reader thread: a line
    // may come just after the answer of the request that wrote it.
    let logged = || {
        staff_function
            .log_entries("receipt")
            .iter()
            .any(|line| line["call_id"] == confirmed && line["path"] == "push")
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !logged() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        logged(),
        "the staff function took it as a push's receipt: {:?}",
        staff_function.logs()
    );

    // Her receipt is kept with the alarm (by the staff function's write),
    // before her deadline.
    let alarm = stored_alarm_json(moto, data, confirmed).await;
    let anna_entry = recipient(&alarm, &anna);
    let alerted_at = utc(&anna_entry["alerted_at"]);
    let deadline = alerted_at + chrono::Duration::seconds(RECEIPT_SECONDS as i64);
    let kept_at = utc(&anna_entry["received_at"]);
    eprintln!(
        "alarms_aws: Anna's receipt for call {confirmed}: posted and answered {:.2} s after her phone got the push, kept {} s after her alert (deadline {RECEIPT_SECONDS} s)",
        answered.as_secs_f64(),
        (kept_at - alerted_at).num_seconds()
    );
    assert!(
        kept_at < deadline,
        "the receipt must come before the deadline for this test: kept at {kept_at}, the deadline {deadline}"
    );

    // Her receipt deadline's timer comes through the timer queue (the
    // level-1 write's `next_at`) and finds her reached: still level 1,
    // also [`LATE`] past the deadline (when a level 2 without her receipt
    // would have been shown, as (2) below shows).
    until_timer_taken(&mut aws, confirmed, deadline).await;
    let late = chrono::Duration::from_std(LATE).expect("LATE");
    aws.run_for((deadline + late - Utc::now()).to_std().unwrap_or_default())
        .await;
    let shown = displayed(server, visitor, confirmed)
        .await
        .expect("the call shown");
    assert_eq!(
        shown["alarm"]["level"], 1,
        "no level 2 at the deadline: {shown}"
    );
    assert_eq!(shown["alarm"]["state"], "alerting", "{shown}");
    let anna_shown = shown_recipient(&shown, &anna);
    assert_eq!(anna_shown["level"], 1);
    assert_eq!(anna_shown["received_at"], received_at.as_str());
    assert_eq!(anna_shown["response"], Value::Null);
    let alarm = stored_alarm_json(moto, data, confirmed).await;
    assert_eq!(
        alarm["level_started_at"].as_array().map(Vec::len),
        Some(1),
        "{alarm}"
    );
    eprintln!(
        "alarms_aws: call {confirmed}'s receipt deadline ({RECEIPT_SECONDS} s after the alert) came through the timer queue: still level 1 {LATE:?} after it (the house at 60 s)"
    );

    // --- (2) Ben's phone gets his alert and does not confirm: the house
    // --- (Anna) starts at his receipt deadline.
    let silent = open(server, visitor, "Z2", "Notruf", Some("2")).await;
    aws.until("Ben's alert on his phone", WAIT, || async move {
        !alerts_of(push_service.decrypted(ben_phone).await, silent).is_empty()
    })
    .await;
    let ben_alert = alerts_of(push_service.decrypted(ben_phone).await, silent)[0].clone();
    assert_eq!(ben_alert["level"], 1, "{ben_alert}");
    assert!(ben_alert["receipt"].is_string(), "{ben_alert}");
    aws.until(
        "Anna's alert at level 2 on her phone",
        WAIT + receipt_seconds,
        || async move {
            alerts_of(push_service.decrypted(anna_phone).await, silent)
                .iter()
                .any(|alert| alert["level"] == 2)
        },
    )
    .await;
    assert_eq!(level(server, visitor, silent).await, 2);

    // Stored: level 2 started at Ben's deadline (whole seconds), by the
    // deadline's timer from the timer queue.
    let alarm = stored_alarm_json(moto, data, silent).await;
    let ben_entry = recipient(&alarm, &ben);
    let ben_alerted_at = utc(&ben_entry["alerted_at"]);
    assert_eq!(ben_entry["received_at"], Value::Null, "{alarm}");
    let level_2_at = utc(&alarm["level_started_at"][1]);
    let after = (level_2_at - ben_alerted_at)
        .to_std()
        .expect("level 2 after the alert");
    let ben_deadline = ben_alerted_at + chrono::Duration::seconds(RECEIPT_SECONDS as i64);
    assert!(
        aws.taken
            .iter()
            .any(|timer| is_timer(timer, silent, ben_deadline)),
        "the deadline's timer came through the timer queue: {:?}",
        aws.taken
    );
    // Seen: from Ben's phone ringing to Anna's.
    let rang =
        first_push_at(&recorder, anna_phone, silent) - first_push_at(&recorder, ben_phone, silent);
    eprintln!(
        "alarms_aws: call {silent} without a receipt: level 2 stored {:.0} s after Ben's alert, Anna's phone rang {:.2} s after Ben's (RECEIPT_SECONDS {RECEIPT_SECONDS}; the policy's level 2 at 60 s)",
        after.as_secs_f64(),
        rang.as_secs_f64()
    );
    assert!(
        (receipt_seconds..=receipt_seconds + Duration::from_secs(1)).contains(&after),
        "level 2 started {after:?} after Ben's alert, RECEIPT_SECONDS is {receipt_seconds:?}"
    );
    let earliest = receipt_seconds.saturating_sub(Duration::from_secs(1));
    assert!(
        (earliest..=receipt_seconds + LATE).contains(&rang),
        "Anna's phone rang {rang:?} after Ben's, RECEIPT_SECONDS is {receipt_seconds:?} (−1 s/+{LATE:?})"
    );
    let shown = displayed(server, visitor, silent)
        .await
        .expect("the call shown");
    let ben_shown = shown_recipient(&shown, &ben);
    assert_eq!(ben_shown["level"], 1);
    assert_eq!(ben_shown["received_at"], Value::Null);
    assert_eq!(shown_recipient(&shown, &anna)["level"], 2);

    // Ben's receipt is his: Anna's token does not confirm it.
    let ben_receipt = ben_alert["receipt"].as_str().expect("a receipt");
    let (status, body) = post_receipt(&mut staff_function, &anna, ben_receipt).await;
    assert_eq!(status, 404, "{body}");

    // Every push decrypted carries a receipt of its own.
    let mut receipts = Vec::new();
    for phone in [anna_phone, ben_phone] {
        for message in push_service.decrypted(phone).await {
            let receipt = message["receipt"]
                .as_str()
                .unwrap_or_else(|| panic!("a push without a receipt: {message}"));
            assert!(receipt.len() <= 64, "{receipt}");
            receipts.push(receipt.to_string());
        }
    }
    let count = receipts.len();
    receipts.sort();
    receipts.dedup();
    assert_eq!(
        receipts.len(),
        count,
        "each push its own receipt: {receipts:?}"
    );
    assert!(count >= 3, "Anna's two alerts and Ben's: {receipts:?}");
}
