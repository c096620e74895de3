//! The staff page's sign-on test (DECISIONS §18) in headless Chromium at a
//! phone's 390×844 against the real local server, both outcomes: after
//! "Dienst beginnen" the page says either "Alarme kommen auf diesem
//! Telefon an" or, over the full width, that this phone did not get the
//! test, what to check, and "Erneut testen".
//!
//! Headless Chromium cannot subscribe to a push service, so the phone's
//! subscription is registered over HTTP at the Web Push stand-in of the
//! push tests (push/stand_in.rs), and its device id goes where the page
//! keeps the id its own registration would answer (`nurse-call-staff-device`
//! in the browser's storage). The server pushes the test to the stand-in,
//! which decrypts it; the test delivers exactly that message to the page's
//! service worker through the DevTools protocol
//! (`ServiceWorker.deliverPushMessage`, as tests/tests/staff_page.rs), and
//! the worker shows it and posts its receipt. For the failure the push is
//! not delivered and `RECEIPT_SECONDS` is short; "Erneut testen" then tests
//! again, and that test delivered turns the notice into the confirmation.
//! Meanwhile a colleague on duty opens their page and reads "Telefon
//! stumm: Anna".

mod alarms_support;
mod common;
#[path = "push/stand_in.rs"]
#[allow(dead_code)]
mod stand_in;

use std::time::{Duration, Instant};

use alarms_support::{Member, as_staff, staff};
use blackbox_tests::*;
use common::*;
use fantoccini::{Client, Locator};
use stand_in::{PushService, Recorder, Subscription, register_tested};

/// A phone in portrait.
const PHONE: (u32, u32) = (390, 844);
/// Where the page keeps which device is itself (staff_test.js).
const DEVICE_KEY: &str = "nurse-call-staff-device";
const CONFIRMED: &str = "Alarme kommen auf diesem Telefon an.";
const FAILED: &str = "Dieses Telefon hat den Testalarm nicht bekommen.";

/// `member`'s staff page in a browser of its own, connected, its worker in
/// control, notifications allowed, and `device` as this phone's device.
async fn staff_page(driver: &Chromedriver, base: &str, member: &Member, device: &str) -> Client {
    let browser = driver.browser(&member.name, PHONE.0, PHONE.1).await;
    set_viewport(&browser, PHONE.0, PHONE.1).await;
    browser
        .goto(&format!("{base}/staff#token={}", member.token))
        .await
        .expect("staff page loads");
    shows(
        "the connected page",
        Instant::now(),
        LOAD_TIMEOUT,
        || async { (text(&browser, "#live-status").await == "Live").then_some(()) },
    )
    .await;
    shows(
        "the active service worker",
        Instant::now(),
        LOAD_TIMEOUT,
        || async {
            run(
                &browser,
                "return Boolean(navigator.serviceWorker.controller \
               && navigator.serviceWorker.controller.state === 'activated')",
            )
            .await
            .as_bool()
            .filter(|active| *active)
        },
    )
    .await;
    driver
        .cdp(
            &browser,
            "Browser.grantPermissions",
            json!({ "origin": base, "permissions": ["notifications"] }),
        )
        .await
        .expect("permission granted");
    run(
        &browser,
        &format!("localStorage.setItem('{DEVICE_KEY}', '{device}'); return true"),
    )
    .await;
    browser
}

/// A phone registered over HTTP for `member` at the stand-in (its
/// registration's test waited for), and its device id.
async fn phone_of(
    server: &Server,
    service: &PushService,
    recorder: &Recorder,
    member: &Member,
) -> (Subscription, String) {
    let phone = register_tested(server, service, recorder, member).await;
    let me = as_staff(
        server,
        reqwest::Method::GET,
        "/api/v1/staff/me",
        &member.token,
        None,
    )
    .await;
    me.expect_status(200);
    let id = me.data()["devices"][0]["id"]
        .as_str()
        .expect("the device's id")
        .to_string();
    (phone, id)
}

/// What the sign-on box shows: its state, its visible text, its width and
/// the viewport's, and its buttons' sizes ("Erneut testen", "OK") when shown.
async fn test_box(browser: &Client) -> Value {
    run(
        browser,
        "const box = document.getElementById('signon-test');
         const visible = (e) => e.getClientRects().length > 0 && !e.closest('[hidden]');
         const again = document.getElementById('test-again'), close = document.getElementById('test-close');
         const r = box.getBoundingClientRect(), a = again.getBoundingClientRect(), c = close.getBoundingClientRect();
         return { state: box.hidden ? null : box.dataset.state, text: visible(box) ? box.innerText : '',
                  role: box.getAttribute('role'), width: Math.round(r.width), viewport: innerWidth,
                  again: visible(again) ? [Math.round(a.width), Math.round(a.height)] : null,
                  close: visible(close) ? [Math.round(c.width), Math.round(c.height)] : null,
                  items: [...box.querySelectorAll('#test-failed li')].filter(visible).length,
                  overflowX: document.documentElement.scrollWidth > innerWidth };",
    )
    .await
}

/// Waits until the box is in `state`; what it shows then.
async fn until_state(browser: &Client, state: &str, within: Duration) -> Value {
    shows(
        &format!("the sign-on test {state}"),
        Instant::now(),
        within,
        || async {
            let shown = test_box(browser).await;
            (shown["state"] == state).then_some(shown)
        },
    )
    .await
}

/// The `count`th sign-on test the stand-in decrypted for `phone`.
async fn nth_test(service: &PushService, phone: &Subscription, count: usize) -> Value {
    let tests = service
        .wait_for_tests(phone, count, Duration::from_secs(10))
        .await;
    assert!(tests.len() >= count, "{tests:?}");
    tests[count - 1].clone()
}

/// Delivers `message` to the page's worker as a push (DevTools protocol;
/// see tests/tests/staff_page.rs `push` for why each of the first ids).
async fn push(driver: &Chromedriver, browser: &Client, origin: &str, message: &Value) {
    driver
        .cdp(browser, "ServiceWorker.enable", json!({}))
        .await
        .expect("the ServiceWorker domain");
    let mut taken = 0;
    for id in 0..4 {
        let delivered = driver
            .cdp(
                browser,
                "ServiceWorker.deliverPushMessage",
                json!({ "origin": origin, "registrationId": id.to_string(), "data": message.to_string() }),
            )
            .await;
        taken += usize::from(delivered.is_ok());
    }
    assert!(taken > 0, "no registration took the push");
}

/// Taps "Dienst beginnen" (the whole house).
async fn sign_on_from_the_page(browser: &Client) {
    browser
        .find(Locator::Css("#duty-on"))
        .await
        .expect("Dienst beginnen")
        .click()
        .await
        .expect("tapped");
}

fn assert_confirmed(shown: &Value) {
    eprintln!("staff page sign-on test (confirmed): {shown}");
    assert!(
        shown["text"]
            .as_str()
            .unwrap_or_default()
            .contains(CONFIRMED),
        "{shown}"
    );
    assert_eq!(shown["again"], Value::Null, "{shown}");
    let close = shown["close"].as_array().cloned().unwrap_or_default();
    assert!(
        close.len() == 2 && close.iter().all(|side| side.as_i64() >= Some(48)),
        "its \"OK\" for gloves: {shown}"
    );
    assert_eq!(shown["overflowX"], false, "{shown}");
}

#[tokio::test]
async fn a_phone_that_gets_the_test_says_alarms_come_here() {
    if skip_browser_tests("a_phone_that_gets_the_test_says_alarms_come_here") {
        return;
    }
    let service = PushService::start().await;
    let recorder = Recorder::start(&service).await;
    let server = Server::sandbox();
    let base = server.base_url().to_string();
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let (phone, device) = phone_of(&server, &service, &recorder, &anna).await;
    let driver = Chromedriver::start().await;
    let page = staff_page(&driver, &base, &anna, &device).await;

    sign_on_from_the_page(&page).await;
    let waiting = until_state(&page, "waiting", Duration::from_secs(5)).await;
    assert!(
        waiting["text"]
            .as_str()
            .unwrap_or_default()
            .contains("Testalarm"),
        "{waiting}"
    );
    // The sign-on's test, as the push service carries it, to the worker.
    let test = nth_test(&service, &phone, 2).await;
    assert_eq!(test["type"], "staff.test", "{test}");
    let pushed = Instant::now();
    push(&driver, &page, &base, &test).await;
    let shown = until_state(&page, "confirmed", Duration::from_secs(10)).await;
    eprintln!(
        "staff page: confirmed {} ms after the test was pushed to the worker",
        pushed.elapsed().as_millis()
    );
    assert_confirmed(&shown);
}

#[tokio::test]
async fn a_phone_that_does_not_get_the_test_says_so_full_width_and_tests_again() {
    if skip_browser_tests("a_phone_that_does_not_get_the_test_says_so_full_width_and_tests_again") {
        return;
    }
    let service = PushService::start().await;
    let recorder = Recorder::start(&service).await;
    let server = Server::start(Options::sandbox().env("RECEIPT_SECONDS", "2"));
    let base = server.base_url().to_string();
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let (phone, device) = phone_of(&server, &service, &recorder, &anna).await;
    let driver = Chromedriver::start().await;
    let page = staff_page(&driver, &base, &anna, &device).await;

    // The sign-on's test reaches the push service but never the worker.
    sign_on_from_the_page(&page).await;
    let signed_on = Instant::now();
    nth_test(&service, &phone, 2).await;
    let failed = until_state(&page, "silent", Duration::from_secs(10)).await;
    eprintln!(
        "staff page sign-on test (not received), {} ms after signing on: {failed}",
        signed_on.elapsed().as_millis()
    );
    let text = failed["text"].as_str().unwrap_or_default();
    assert!(text.contains(FAILED), "{failed}");
    for check in ["Benachrichtigungen", "Akku-Optimierung", "Home-Bildschirm"] {
        assert!(
            text.contains(check),
            "the checklist names {check}: {failed}"
        );
    }
    assert_eq!(failed["items"], 3, "{failed}");
    assert_eq!(failed["role"], "alert", "{failed}");
    // Full width: the page's column at 390 px, its margins apart.
    let (width, viewport) = (
        failed["width"].as_i64().unwrap_or_default(),
        failed["viewport"].as_i64().unwrap_or_default(),
    );
    assert!(width >= viewport - 40, "{failed}");
    let again = failed["again"].as_array().cloned().unwrap_or_default();
    assert!(
        again.len() == 2 && again.iter().all(|side| side.as_i64() >= Some(48)),
        "\"Erneut testen\" for gloves: {failed}"
    );
    assert_eq!(failed["overflowX"], false, "{failed}");

    // A colleague on duty beside her sees it on their own page: "Telefon
    // stumm: Anna", loud, on the phone's width.
    let ben = staff(&server, &visitor, "Ben", &[]).await;
    alarms_support::sign_on(&server, &ben, &[]).await;
    let bens_page = staff_page(&driver, &base, &ben, "none").await;
    let stumm = shows(
        "\"Telefon stumm\" on the colleague's page",
        Instant::now(),
        Duration::from_secs(10),
        || async {
            let shown = run(
                &bens_page,
                "const line = document.getElementById('silent-colleagues');
                 return { text: line.hidden ? '' : line.innerText, role: line.getAttribute('role'),
                          overflowX: document.documentElement.scrollWidth > innerWidth };",
            )
            .await;
            (shown["text"] != "").then_some(shown)
        },
    )
    .await;
    eprintln!("colleague's page: {stumm}");
    assert_eq!(stumm["text"], "Telefon stumm: Anna", "{stumm}");
    assert_eq!(stumm["role"], "alert", "{stumm}");
    assert_eq!(stumm["overflowX"], false, "{stumm}");

    // "Erneut testen": waiting again; this test delivered confirms the phone.
    page.find(Locator::Css("#test-again"))
        .await
        .expect("Erneut testen")
        .click()
        .await
        .expect("tapped");
    until_state(&page, "waiting", Duration::from_secs(5)).await;
    let test = nth_test(&service, &phone, 3).await;
    push(&driver, &page, &base, &test).await;
    let shown = until_state(&page, "confirmed", Duration::from_secs(10)).await;
    assert_confirmed(&shown);
}
