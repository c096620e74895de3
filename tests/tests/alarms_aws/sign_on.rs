//! The sign-on test as it runs in AWS (DECISIONS §18 on §17's path), end to
//! end on moto: the `staff` function (and the local server with
//! `ALARM_STEPS=none`, which like it sends no pushes) records the test on
//! the person's devices and puts a test item; its stream record makes the
//! real `alarm` binary queue the test's push job, the real `deliver` binary
//! sends it, and `web-push-testing` decrypts a `staff.test` with that
//! phone's receipt, which the phone posts to the `staff` function.
//!
//! Asserted: a new phone's registration is tested; the receipt confirms it
//! (200, `call` null; `GET /api/v1/staff/me` says `confirmed`); signing on
//! through the `staff` function answers the phone `waiting` and tests it
//! again; without its receipt it is `silent` after `RECEIPT_SECONDS`;
//! "Erneut testen" tests it a third time, and its receipt confirms it.

use std::time::Duration;

use blackbox_tests::*;

use crate::alarms_aws::event_sources::MotoStack;
use crate::alarms_aws::receipts::{post_receipt, staff_request};
use crate::alarms_support::*;
use crate::live_aws::runtime_api::Function;
use crate::stand_in::{PushService, Recorder, Subscription, register};
use crate::stored_item;

/// `RECEIPT_SECONDS` of this test: a phone that does not answer is silent
/// this soon.
const RECEIPT_SECONDS: u64 = 3;

/// The sign-on tests decrypted on `phone`, in arrival order.
async fn tests_on(service: &PushService, phone: &Subscription) -> Vec<Value> {
    service
        .decrypted(phone)
        .await
        .into_iter()
        .filter(|message| message["type"] == "staff.test")
        .collect()
}

/// The one device's state as the `staff` function's `GET /api/v1/staff/me`
/// says.
async fn state(staff: &mut Function, member: &Member) -> String {
    let (status, body) = staff_request(staff, member, "GET", "/api/v1/staff/me", None).await;
    assert_eq!(status, 200, "{body}");
    let devices = body["data"]["devices"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(devices.len(), 1, "{body}");
    devices[0]["state"].as_str().expect("a state").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_on_test_goes_from_the_staff_function_through_alarm_and_deliver_to_the_phone() {
    let Some(stack) = MotoStack::with_receipt_seconds(RECEIPT_SECONDS).await else {
        return;
    };
    let MotoStack {
        server, moto, data, ..
    } = &stack;
    let queues = stack.queues().await;
    let visitor = server.new_consumer().await;
    let anna = staff(server, &visitor, "Anna", &[]).await;
    let env = stack.env(&queues);
    let mut aws = stack.event_sources(&queues, &env).await;
    let mut staff_function = Function::start("staff", &workspace_binary("staff"), &env).await;
    aws.until("the VAPID key pair made by deliver", WAIT, || async move {
        stored_item(moto, data, "push#vapid", "key").await.is_some()
    })
    .await;
    let service = PushService::start().await;
    let recorder = Recorder::start(&service).await;

    // --- A new phone: its registration's test arrives by the alarm's path.
    let phone = register(server, &service, &recorder, &anna).await;
    let (service, phone_ref) = (&service, &phone);
    aws.until(
        "the registration's test on the phone",
        WAIT,
        || async move { !tests_on(service, phone_ref).await.is_empty() },
    )
    .await;
    let first = tests_on(service, &phone).await;
    assert_eq!(first.len(), 1, "{first:?}");
    let receipt = first[0]["receipt"]
        .as_str()
        .unwrap_or_else(|| panic!("the test carries a receipt: {}", first[0]))
        .to_string();
    assert!(
        receipt.starts_with("t.") && receipt.contains(&anna.id),
        "{receipt}"
    );
    assert!(recorder.seen(&phone).is_empty(), "a test is no alarm push");
    let (status, body) = post_receipt(&mut staff_function, &anna, &receipt).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["receipt"], receipt.as_str());
    assert_eq!(body["data"]["call"], Value::Null, "{body}");
    assert_eq!(state(&mut staff_function, &anna).await, "confirmed");

    // --- Signing on through the staff function: waiting, tested again.
    let duty = json!({ "sections": ["1"] }).to_string();
    let (status, body) = staff_request(
        &mut staff_function,
        &anna,
        "PUT",
        "/api/v1/staff/duty",
        Some(&duty),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["devices"][0]["state"], "waiting", "{body}");
    aws.until("the sign-on's test on the phone", WAIT, || async move {
        tests_on(service, phone_ref).await.len() >= 2
    })
    .await;
    let second = tests_on(service, &phone).await[1]["receipt"]
        .as_str()
        .expect("a receipt")
        .to_string();
    assert_ne!(second, receipt, "one receipt per test");
    // Not posted: silent once RECEIPT_SECONDS passed.
    aws.run_for(Duration::from_secs(RECEIPT_SECONDS) + Duration::from_millis(500))
        .await;
    assert_eq!(state(&mut staff_function, &anna).await, "silent");

    // --- "Erneut testen": a third test, and its receipt confirms the phone.
    let (status, body) = staff_request(
        &mut staff_function,
        &anna,
        "POST",
        "/api/v1/staff/device-tests",
        Some("{}"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["devices"][0]["state"], "waiting", "{body}");
    aws.until("the third test on the phone", WAIT, || async move {
        tests_on(service, phone_ref).await.len() >= 3
    })
    .await;
    let third = tests_on(service, &phone).await[2]["receipt"]
        .as_str()
        .expect("a receipt")
        .to_string();
    let (status, body) = post_receipt(&mut staff_function, &anna, &third).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(state(&mut staff_function, &anna).await, "confirmed");
    eprintln!(
        "alarms_aws: three sign-on tests went from the staff function through alarm and deliver to the phone ({} push jobs in all)",
        aws.push_jobs
    );
}
