//! The sign-on test (DECISIONS §18), end to end against the Web Push
//! stand-in of the push tests (push/stand_in.rs): registering a phone and
//! signing on push a `staff.test` that the stand-in **decrypts**, with a
//! receipt for that phone; `POST /api/v1/staff/receipts` takes it (200,
//! `call` null) and refuses another person's (404); `GET /api/v1/staff/me`
//! lists the phone `waiting`, then `confirmed` after the receipt, `silent`
//! `RECEIPT_SECONDS` after a test without one, and `silent` at once after
//! three pushes in a row without a receipt (alerts count); "Erneut testen"
//! (`POST /api/v1/staff/device-tests`) tests again.
//!
//! Needs the local server's push sender (skipped under cargo lambda watch,
//! tests/lambda-watch-skips.txt); runs on SQLite and on moto.

mod alarms_support;
#[path = "push/stand_in.rs"]
#[allow(dead_code)]
mod stand_in;

use std::time::Duration;

use alarms_support::*;
use blackbox_tests::*;
use reqwest::Method;
use stand_in::{PushService, Recorder, Subscription, register_tested};

const RECEIPTS: &str = "/api/v1/staff/receipts";
const ME: &str = "/api/v1/staff/me";
const DEVICE_TESTS: &str = "/api/v1/staff/device-tests";

async fn post_receipt(server: &Server, member: &Member, receipt: &str) -> Response {
    let body = json!({ "receipt": receipt }).to_string();
    as_staff(server, Method::POST, RECEIPTS, &member.token, Some(&body)).await
}

/// `member`'s devices as `GET /api/v1/staff/me` lists them.
async fn devices(server: &Server, member: &Member) -> Vec<Value> {
    let me = as_staff(server, Method::GET, ME, &member.token, None).await;
    me.expect_status(200);
    me.data()["devices"]
        .as_array()
        .cloned()
        .expect("devices: a list")
}

/// The one device's state, checked to have exactly the documented fields.
async fn state(server: &Server, member: &Member) -> String {
    let devices = devices(server, member).await;
    assert_eq!(devices.len(), 1, "{devices:?}");
    let mut keys: Vec<&str> = devices[0]
        .as_object()
        .expect("a device")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["created_at", "id", "last_receipt_at", "state"]);
    devices[0]["state"].as_str().expect("state").to_string()
}

/// The newest sign-on test's receipt the phone got.
async fn test_receipt(service: &PushService, phone: &Subscription, count: usize) -> String {
    let tests = service
        .wait_for_tests(phone, count, Duration::from_secs(10))
        .await;
    assert_eq!(tests.len(), count, "{tests:?}");
    let last = tests.last().expect("a test");
    assert_eq!(last["type"], "staff.test", "{last}");
    last["receipt"].as_str().expect("a receipt").to_string()
}

#[tokio::test]
async fn a_phones_sign_on_test_is_confirmed_by_its_receipt_or_found_silent() {
    let service = PushService::start().await;
    let recorder = Recorder::start(&service).await;
    let server = Server::start(Options::sandbox().env("RECEIPT_SECONDS", "2"));
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let ben = staff(&server, &visitor, "Ben", &[]).await;

    // Registering: the test arrives, decrypted, with a receipt naming the phone.
    let phone = register_tested(&server, &service, &recorder, &anna).await;
    let receipt = test_receipt(&service, &phone, 1).await;
    let device_id = devices(&server, &anna).await[0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    assert!(
        receipt.starts_with("t.") && receipt.ends_with(&format!(".{}.{device_id}", anna.id)),
        "{receipt}"
    );
    assert!(receipt.len() <= 64, "{receipt}");
    assert_eq!(recorder.seen(&phone).len(), 0, "the test is no alarm push");
    // Another person's post of it is as unknown as any other id.
    post_receipt(&server, &ben, &receipt)
        .await
        .expect_status(404);
    let taken = post_receipt(&server, &anna, &receipt).await;
    taken.expect_status(200);
    assert_eq!(taken.data()["receipt"], receipt.as_str());
    assert_eq!(taken.data()["call"], Value::Null);
    let received_at = taken.data()["received_at"]
        .as_str()
        .expect("received_at")
        .to_string();
    assert_eq!(state(&server, &anna).await, "confirmed");
    let listed = devices(&server, &anna).await;
    assert_eq!(listed[0]["last_receipt_at"], received_at.as_str());
    // Again: 200, nothing new.
    let again = post_receipt(&server, &anna, &receipt).await;
    again.expect_status(200);
    assert_eq!(again.data()["received_at"], received_at.as_str());

    // Signing on tests again; without a receipt it is silent after 2 s.
    let on = sign_on(&server, &anna, &["1"]).await;
    assert_eq!(on["devices"][0]["state"], "waiting", "{on}");
    let second = test_receipt(&service, &phone, 2).await;
    assert_ne!(second, receipt, "one receipt per test");
    assert_eq!(state(&server, &anna).await, "waiting");
    tokio::time::sleep(Duration::from_millis(2200)).await;
    assert_eq!(state(&server, &anna).await, "silent");
    // A late receipt confirms it.
    post_receipt(&server, &anna, &second)
        .await
        .expect_status(200);
    assert_eq!(state(&server, &anna).await, "confirmed");

    // "Erneut testen": a third test, waiting again.
    let retest = as_staff(&server, Method::POST, DEVICE_TESTS, &anna.token, Some("{}")).await;
    retest.expect_status(200);
    assert_eq!(retest.data()["devices"][0]["state"], "waiting");
    test_receipt(&service, &phone, 3).await;
    as_staff(
        &server,
        Method::POST,
        DEVICE_TESTS,
        "0".repeat(64).as_str(),
        Some("{}"),
    )
    .await
    .expect_status(401);
    // Unknown test receipts: another device, a time never tested.
    let other_device = receipt.replace(&device_id, "0123abcd");
    post_receipt(&server, &anna, &other_device)
        .await
        .expect_status(404);
    post_receipt(
        &server,
        &anna,
        &format!("t.99999999999.{}.{device_id}", anna.id),
    )
    .await
    .expect_status(404);
}

#[tokio::test]
async fn three_pushes_in_a_row_without_a_receipt_make_a_phone_silent() {
    let service = PushService::start().await;
    let recorder = Recorder::start(&service).await;
    // A long deadline: only the count can make it silent this soon.
    let server = Server::start(Options::sandbox().env("RECEIPT_SECONDS", "600"));
    set_escalation(&server, "Notruf", r#"[{"after":0,"to":"section"}]"#);
    server
        .admin(&[
            "call-types",
            "set",
            "Notruf",
            "--notification-interval",
            "2",
            // Three alerts, no fourth: one pushed after the receipt below
            // would make the phone owe a receipt again (waiting).
            "--notification-maxloops",
            "3",
        ])
        .success();
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    sign_on(&server, &anna, &["1"]).await;
    let phone = register_tested(&server, &service, &recorder, &anna).await;
    let receipt = test_receipt(&service, &phone, 1).await;
    post_receipt(&server, &anna, &receipt)
        .await
        .expect_status(200);
    assert_eq!(state(&server, &anna).await, "confirmed");

    // The alert and two re-alerts reach the push service; the phone posts nothing.
    open(&server, &visitor, "Z1", "Notruf", Some("1")).await;
    let two = service.wait_for(&phone, 2, WAIT).await;
    assert_eq!(two.len(), 2, "{two:#?}");
    assert_eq!(
        state(&server, &anna).await,
        "waiting",
        "two pushes unanswered"
    );
    let three = service.wait_for(&phone, 3, WAIT).await;
    assert_eq!(three.len(), 3, "{three:#?}");
    assert_eq!(state(&server, &anna).await, "silent", "three in a row");

    // The third alert's receipt, posted by the phone: confirmed again.
    let alert_receipt = three[2]["receipt"].as_str().expect("a receipt");
    post_receipt(&server, &anna, alert_receipt)
        .await
        .expect_status(200);
    assert_eq!(state(&server, &anna).await, "confirmed");
}

/// The names `member`'s `GET /api/v1/staff/me` lists as "Telefon stumm".
async fn silent_colleagues(server: &Server, member: &Member) -> Vec<String> {
    let me = as_staff(server, Method::GET, ME, &member.token, None).await;
    me.expect_status(200);
    me.data()["silent_colleagues"]
        .as_array()
        .expect("silent_colleagues: a list")
        .iter()
        .map(|colleague| {
            let mut keys: Vec<&str> = colleague
                .as_object()
                .expect("a colleague")
                .keys()
                .map(String::as_str)
                .collect();
            keys.sort_unstable();
            assert_eq!(keys, ["id", "name", "sections"], "{colleague}");
            colleague["name"].as_str().expect("name").to_string()
        })
        .collect()
}

#[tokio::test]
async fn a_colleague_on_duty_whose_phones_are_all_silent_is_telefon_stumm_beside_them() {
    let service = PushService::start().await;
    let recorder = Recorder::start(&service).await;
    let server = Server::start(Options::sandbox().env("RECEIPT_SECONDS", "2"));
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let ben = staff(&server, &visitor, "Ben", &[]).await;
    let carl = staff(&server, &visitor, "Carl", &[]).await;
    let dora = staff(&server, &visitor, "Dora", &[]).await;

    // Ben (section 1) and Carl (section 2) sign on with phones that post
    // no receipt; Dora has no phone at all (nothing of hers went silent).
    let bens = register_tested(&server, &service, &recorder, &ben).await;
    let _carls = register_tested(&server, &service, &recorder, &carl).await;
    sign_on(&server, &ben, &["1"]).await;
    sign_on(&server, &carl, &["2"]).await;
    sign_on(&server, &dora, &["1"]).await;
    sign_on(&server, &anna, &["1"]).await;
    assert_eq!(
        silent_colleagues(&server, &anna).await,
        Vec::<String>::new(),
        "waiting is not silent"
    );
    tokio::time::sleep(Duration::from_millis(2300)).await;
    // Anna (section 1) sees Ben, not Carl of section 2, not Dora without phone.
    assert_eq!(silent_colleagues(&server, &anna).await, ["Ben"]);
    let me = as_staff(&server, Method::GET, ME, &anna.token, None).await;
    assert_eq!(me.data()["silent_colleagues"][0]["id"], ben.id.as_str());
    assert_eq!(me.data()["silent_colleagues"][0]["sections"], json!(["1"]));
    // Ben is not told about himself (his own page has the sign-on test).
    assert_eq!(silent_colleagues(&server, &ben).await, Vec::<String>::new());
    // The whole house sees both, in the roster's order (by name).
    sign_on(&server, &anna, &[]).await;
    assert_eq!(silent_colleagues(&server, &anna).await, ["Ben", "Carl"]);

    // Ben's phone posts its receipt (late): he is no longer silent.
    let receipt = test_receipt(&service, &bens, 2).await;
    post_receipt(&server, &ben, &receipt)
        .await
        .expect_status(200);
    assert_eq!(silent_colleagues(&server, &anna).await, ["Carl"]);
    // Off duty, Carl's silence is nobody's concern; Anna off duty sees none.
    as_staff(
        &server,
        Method::DELETE,
        "/api/v1/staff/duty",
        &carl.token,
        None,
    )
    .await
    .expect_status(200);
    assert_eq!(
        silent_colleagues(&server, &anna).await,
        Vec::<String>::new()
    );
    sign_on(&server, &carl, &["2"]).await;
    as_staff(
        &server,
        Method::DELETE,
        "/api/v1/staff/duty",
        &anna.token,
        None,
    )
    .await
    .expect_status(200);
    assert_eq!(
        silent_colleagues(&server, &anna).await,
        Vec::<String>::new()
    );
}
