//! The staff page (`GET /staff`, DECISIONS §15) in headless Chromium at a
//! phone's 390×844 against the real local server: its token in the URL
//! fragment goes to the browser's storage and out of the address bar; duty
//! on (whole house) and on for a chosen section, and off again, from the
//! page; a call alerting two people shows on both pages with "Annehmen" and
//! "Ablehnen"; a decline and an accept change the call's tile within 1 s of
//! the tap, and the colleague's page says "Anna kommt" within 1 s; the
//! watchdog banner comes at once when the socket drops and goes when it is
//! back; every tap target is at least 48 px and all text at least 18 px
//! (measured in the browser); the page is installable (Chromium's own
//! check) and loads nothing from another host.
//!
//! The service worker: registered with scope `/staff`; a push delivered to
//! it through the DevTools protocol (`ServiceWorker.deliverPushMessage`, sent
//! through chromedriver's `goog/cdp/execute`) shows a notification (read
//! back with `registration.getNotifications()`) with the call's id as its
//! tag, "Annehmen" and "Ablehnen", and `requireInteraction`; a pushed
//! `call.cancelled` closes it. Its "Annehmen" is driven through the worker's
//! `notification-action` message, which runs the very function of its
//! `notificationclick` handler: headless Chromium has no notification
//! centre to click in, and the DevTools protocol has no command that clicks
//! a notification (its domains `ServiceWorker`, `Browser` and `Page` can
//! deliver a push and grant the permission, nothing more); the outcome is
//! checked on the server (the call accepted by this person) and on the page.
//! The worker posts the pushed alert's receipt once the notification shows,
//! and the open page the receipt of the alert it shows from its socket
//! (DECISIONS §18): both read back from the server's log.
//! Web Push's subscription needs a push service, which headless Chromium
//! without a network does not reach: the page says so and keeps its sound.
//!
//! `cargo test -p blackbox-tests --test staff_page -- --ignored screenshot`
//! renews `docs/staff-page.png` (the README's picture).

mod alarms_support;
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use alarms_support::{Member, sign_on, staff, staff_calls};
use blackbox_tests::*;
use common::*;
use fantoccini::{Client, Locator};

/// A change shows within this of the tap or answer that caused it (the
/// contract's 1 s); asserted with [`PROMISE_TOLERANCE`] as the display
/// page's are (`measure`).
const LIVE: Duration = Duration::from_millis(1_000);
/// The page's policy: the display page's plus its manifest and worker.
const POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
    style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; form-action 'self'; \
    base-uri 'none'; frame-ancestors 'none'; manifest-src 'self'; worker-src 'self'";
/// Every way the page says push is unavailable ends with this.
const OPEN_ONLY: &str = "Alarm nur, solange diese Seite offen ist";
const TOKEN_KEY: &str = "nurse-call-staff-token";
/// A phone in portrait.
const PHONE: (u32, u32) = (390, 844);

// ---------------------------------------------------------------------------
// The page
// ---------------------------------------------------------------------------

/// `member`'s staff page in a browser of its own, connected and read.
async fn staff_page(driver: &Chromedriver, base: &str, member: &Member) -> Client {
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
        || async {
            let state = run(
                &browser,
                "return document.getElementById('live-status').textContent === 'Live' \
               && document.getElementById('who').textContent",
            )
            .await;
            state.as_str().map(str::to_string)
        },
    )
    .await;
    browser
}

/// The tiles of list `#mine` or `#others`: id, text, and the answers' buttons.
async fn tiles(browser: &Client, list: &str) -> Vec<Value> {
    let found = run(
        browser,
        &format!(
            "return [...document.querySelectorAll('#{list} .call')].map((t) => ({{
               id: Number(t.dataset.callId), text: t.innerText,
               buttons: [...t.querySelectorAll('button[data-action]')].map((b) => b.textContent),
               accepted: (t.querySelector('[data-role=accepted-name]') || {{}}).textContent || null }}))"
        ),
    )
    .await;
    found.as_array().cloned().unwrap_or_default()
}

fn tile_of(tiles: &[Value], id: i64) -> Option<Value> {
    tiles.iter().find(|t| t["id"] == id).cloned()
}

/// Taps the element of `css`. A live message may redraw a tile between
/// the find and the tap (a receipt grows the call's version, §18): the
/// button is then found again, as a finger would find it.
async fn click(browser: &Client, css: &str) {
    for attempt in 1..=5 {
        let element = browser
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css}: {e}"));
        match element.click().await {
            Ok(_) => return,
            Err(e) if attempt < 5 && e.to_string().contains("stale element") => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{css} not clicked: {e}"),
        }
    }
}

/// Polls until `check` holds, at most `within` (the promise) and
/// [`PROMISE_TOLERANCE`] after `since`; the time it took, printed, and
/// marked when over the promise. Measured by polling, so the test's own
/// WebDriver round trips and pauses count against the page (the display
/// page measures on the page's clock: `page_met`).
async fn measure<F, Fut>(what: &str, since: Instant, within: Duration, check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<()>>,
{
    shows(what, since, within + PROMISE_TOLERANCE, check).await;
    let took = since.elapsed();
    eprintln!(
        "staff page: {what} after {} ms{}",
        took.as_millis(),
        over_the_promise(took, within)
    );
    took
}

/// Gloves: every visible tap target at least 48 × 48 px, every visible text
/// at least 18 px; the smallest of each, and what is under the limits.
async fn glove_check(browser: &Client) -> Value {
    run(
        browser,
        "const visible = (e) => e.getClientRects().length > 0 && !e.closest('[hidden]');
         const targets = [...document.querySelectorAll('button, a, input, select, label')]
           .filter(visible)
           // A checkbox's target is its label, which the list holds.
           .filter((e) => !(e.matches('input[type=checkbox]') && e.closest('label')))
           .map((e) => { const r = e.getBoundingClientRect();
                         return { what: e.id || e.textContent.trim().slice(0, 30) || e.outerHTML.slice(0, 60),
                                  w: Math.round(r.width), h: Math.round(r.height) }; });
         const small = targets.filter((t) => t.w < 48 || t.h < 48);
         let minFont = Infinity, minWhere = null;
         const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
         while (walker.nextNode()) {
           const node = walker.currentNode;
           if (!node.textContent.trim()) continue;
           const parent = node.parentElement;
           if (!parent || parent.closest('script, style') || !visible(parent)) continue;
           const size = parseFloat(getComputedStyle(parent).fontSize);
           if (size < minFont) { minFont = size; minWhere = node.textContent.trim().slice(0, 40); }
         }
         const minTarget = Math.min(...targets.map((t) => Math.min(t.w, t.h)));
         return { targets: targets.length, small, minTarget, minFont, minWhere,
                  overflowX: document.documentElement.scrollWidth > innerWidth };",
    )
    .await
}

fn assert_gloves(check: &Value, when: &str) {
    eprintln!("staff page ({when}): {check}");
    assert_eq!(
        check["small"],
        json!([]),
        "tap targets under 48 px ({when})"
    );
    assert!(
        check["minFont"].as_f64().unwrap_or_default() >= 18.0,
        "text under 18 px ({when}): {check}"
    );
    assert_eq!(check["overflowX"], false, "no sideways scrolling ({when})");
}

// ---------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------

/// The page, its manifest and its worker without a browser: served in both
/// modes, the page's policy, no other host, the worker's scope allowed.
#[tokio::test]
async fn the_page_its_manifest_and_its_worker_are_served_in_both_modes() {
    for server in [Server::sandbox(), Server::production(Seed::new())] {
        let page = server.get("/staff").await;
        page.expect_status(200);
        assert_eq!(
            page.header("content-type"),
            Some("text/html; charset=utf-8")
        );
        assert_eq!(page.header("content-security-policy"), Some(POLICY));
        assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
        assert_eq!(page.header("cache-control"), Some("no-store"));
        assert!(
            page.text
                .contains(r#"<link rel="manifest" href="/staff/manifest.webmanifest">"#)
        );

        let manifest = server.get("/staff/manifest.webmanifest").await;
        manifest.expect_status(200);
        assert_eq!(
            manifest.header("content-type"),
            Some("application/manifest+json")
        );
        let parsed: Value = serde_json::from_str(&manifest.text).expect("the manifest is JSON");
        assert_eq!(parsed["start_url"], "/staff");
        assert_eq!(parsed["scope"], "/staff");
        assert_eq!(parsed["display"], "standalone");

        let worker = server.get("/staff/sw.js").await;
        worker.expect_status(200);
        assert_eq!(
            worker.header("content-type"),
            Some("text/javascript; charset=utf-8")
        );
        assert_eq!(worker.header("service-worker-allowed"), Some("/staff"));

        for (what, text) in [
            ("page", &page.text),
            ("manifest", &manifest.text),
            ("worker", &worker.text),
        ] {
            for external in ["http://", "https://", "src=\"//", "href=\"//"] {
                assert!(
                    !text.contains(external),
                    "the {what} names another host: {external}"
                );
            }
        }
        let post = server.post("/staff", "{}").await;
        post.expect_status(405);
        assert_eq!(post.header("allow"), Some("GET"));
        assert_eq!(server.get("/staff/").await.status, 404);
    }
}

/// Duty, accept, decline and the colleague's view at 390×844, measured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duty_accept_and_decline_from_the_phone_and_the_colleague_sees_who_comes() {
    if skip_browser_tests("duty_accept_and_decline_from_the_phone_and_the_colleague_sees_who_comes")
    {
        return;
    }
    let server = Server::sandbox();
    let base = server.base_url().to_string();
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let ben = staff(&server, &visitor, "Ben", &[]).await;
    let driver = Chromedriver::start().await;

    // Anna: the token from the fragment into the storage, out of the address bar.
    let a = staff_page(&driver, &base, &anna).await;
    let kept = run(
        &a,
        &format!("return [location.href, localStorage.getItem('{TOKEN_KEY}')]"),
    )
    .await;
    assert_eq!(kept[0], format!("{base}/staff"), "the token left the URL");
    assert_eq!(kept[1], anna.token.as_str(), "the token is kept");
    assert_eq!(text(&a, "#who").await, "Anna");
    assert_eq!(text(&a, "#duty-state").await, "Nicht im Dienst");

    // Duty on, nothing chosen: the whole house.
    let tapped = Instant::now();
    click(&a, "#duty-on").await;
    measure("Anna on duty for the whole house", tapped, LIVE, || async {
        text(&a, "#duty-state")
            .await
            .starts_with("Im Dienst: ganzes Haus")
            .then_some(())
    })
    .await;
    let me = alarms_support::as_staff(
        &server,
        reqwest::Method::GET,
        alarms_support::STAFF_ME,
        &anna.token,
        None,
    )
    .await;
    assert_eq!(me.data()["duty"]["sections"], json!([]), "{}", me.text);

    // Ben: section A, added with the chooser.
    let b = staff_page(&driver, &base, &ben).await;
    b.find(Locator::Css("#section-new"))
        .await
        .expect("the section field")
        .send_keys("A")
        .await
        .expect("typed");
    click(&b, "#section-add").await;
    assert_eq!(
        run(
            &b,
            "return [...document.querySelectorAll('#sections input:checked')].map((i) => i.value)"
        )
        .await,
        json!(["A"]),
        "the new section is chosen"
    );
    let tapped = Instant::now();
    click(&b, "#duty-on").await;
    measure("Ben on duty for section A", tapped, LIVE, || async {
        (text(&b, "#duty-state")
            .await
            .starts_with("Im Dienst: Bereich A"))
        .then_some(())
    })
    .await;
    let me = alarms_support::as_staff(
        &server,
        reqwest::Method::GET,
        alarms_support::STAFF_ME,
        &ben.token,
        None,
    )
    .await;
    assert_eq!(me.data()["duty"]["sections"], json!(["A"]), "{}", me.text);

    // A Notruf in section A alerts both: largest and first, with both answers.
    let id = alarms_support::open(&server, &visitor, "Zimmer-7", "Notruf", Some("A")).await;
    let opened = Instant::now();
    for (who, page) in [("Anna", &a), ("Ben", &b)] {
        measure(
            &format!("the alert on {who}'s page"),
            opened,
            LIVE + LIVE,
            || async {
                let tile = tile_of(&tiles(page, "mine").await, id)?;
                (tile["buttons"] == json!(["Annehmen", "Ablehnen"])).then_some(())
            },
        )
        .await;
    }
    let tile = tile_of(&tiles(&a, "mine").await, id).expect("Anna's tile");
    let shown = tile["text"].as_str().unwrap_or_default();
    assert!(
        shown.contains("NOTRUF") && shown.contains("Bereich A"),
        "{shown}"
    );
    assert!(
        shown
            .split('\n')
            .any(|line| line.ends_with(" s") && line.trim_end_matches(" s").parse::<u32>().is_ok()),
        "a running duration: {shown}"
    );
    let first = run(
        &a,
        "return document.querySelector('main > section:not([hidden])').id",
    )
    .await;
    assert_eq!(first, "mine-box", "the calls alerting her come first");
    let sizes = run(
        &a,
        "const size = (css) => parseFloat(getComputedStyle(document.querySelector(css)).fontSize);
         return [size('#mine .call-type'), size('#duty-title')]",
    )
    .await;
    assert!(
        sizes[0].as_f64().unwrap_or_default() >= 1.5 * sizes[1].as_f64().unwrap_or_default(),
        "the alerting call is the largest thing: {sizes}"
    );

    // "Annehmen" in green, "Ablehnen" in white: colour and word, never colour alone.
    let colours = run(
        &a,
        "return [...document.querySelectorAll('#mine .call-actions button')].map((b) => getComputedStyle(b).backgroundColor)",
    )
    .await;
    assert_eq!(colours, json!([rgb("#14532d"), rgb("#ffffff")]));

    // Gloves, with the calls and their buttons on the page, at two phone sizes.
    assert_gloves(&glove_check(&a).await, "390×844");
    // Below Chromium's smallest window: the phone's viewport emulated.
    driver
        .cdp(
            &b,
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 360, "height": 640, "deviceScaleFactor": 2, "mobile": true}),
        )
        .await
        .expect("a 360×640 phone");
    shows(
        "the 360 px viewport",
        Instant::now(),
        Duration::from_secs(5),
        || async { (run(&b, "return innerWidth").await == 360).then_some(()) },
    )
    .await;
    assert_gloves(&glove_check(&b).await, "360×640");
    driver
        .cdp(&b, "Emulation.clearDeviceMetricsOverride", json!({}))
        .await
        .expect("back to the window");

    // Ben declines: his tile is no longer an alert, at once.
    let tapped = Instant::now();
    click(
        &b,
        &format!("#mine .call[data-call-id=\"{id}\"] button[data-action=declined]"),
    )
    .await;
    let declined = measure("Ben's tile after Ablehnen", tapped, LIVE, || async {
        (tile_of(&tiles(&b, "mine").await, id).is_none()
            && tile_of(&tiles(&b, "others").await, id).is_some())
        .then_some(())
    })
    .await;
    assert!(declined <= LIVE + PROMISE_TOLERANCE);

    // Anna accepts: her tile says she comes; Ben's page says who comes.
    let tapped = Instant::now();
    click(
        &a,
        &format!("#mine .call[data-call-id=\"{id}\"] button[data-action=accepted]"),
    )
    .await;
    let accepted = measure("Anna's tile after Annehmen", tapped, LIVE, || async {
        let tile = tile_of(&tiles(&a, "others").await, id)?;
        (tile["accepted"] == "Anna kommt (Sie)" && tile_of(&tiles(&a, "mine").await, id).is_none())
            .then_some(())
    })
    .await;
    let colleague = measure("\"Anna kommt\" on Ben's page", tapped, LIVE, || async {
        let tile = tile_of(&tiles(&b, "others").await, id)?;
        (tile["accepted"] == "Anna kommt").then_some(())
    })
    .await;
    assert!(accepted <= LIVE + PROMISE_TOLERANCE && colleague <= LIVE + PROMISE_TOLERANCE);
    let calls = staff_calls(&server, &anna).await;
    let call = calls.iter().find(|c| c["id"] == id).expect("the call");
    assert_eq!(call["alarm"]["state"], "accepted");
    assert_eq!(call["alarm"]["accepted_by"]["name"], "Anna");

    // The watchdog: the socket drops, the banner at once; back, it goes.
    run(&b, "connection.socket.close(); return true").await;
    let dropped = Instant::now();
    measure(
        "the banner after the socket dropped",
        dropped,
        LIVE,
        || async {
            run(&b, "return !document.getElementById('banner').hidden")
                .await
                .as_bool()
                .filter(|shown| *shown)
                .map(|_| ())
        },
    )
    .await;
    assert!(
        text(&b, "#banner")
            .await
            .starts_with("Verbindung unterbrochen"),
        "the banner's words"
    );
    assert!(
        tile_of(&tiles(&b, "others").await, id).is_some(),
        "the last known calls stay"
    );
    measure(
        "the banner gone after the reconnect",
        dropped,
        Duration::from_secs(5),
        || async {
            run(&b, "return document.getElementById('banner').hidden")
                .await
                .as_bool()
                .filter(|hidden| *hidden)
                .map(|_| ())
        },
    )
    .await;

    // Duty off.
    let tapped = Instant::now();
    click(&b, "#duty-off").await;
    measure("Ben off duty", tapped, LIVE, || async {
        (text(&b, "#duty-state").await == "Nicht im Dienst").then_some(())
    })
    .await;
    let me = alarms_support::as_staff(
        &server,
        reqwest::Method::GET,
        alarms_support::STAFF_ME,
        &ben.token,
        None,
    )
    .await;
    assert_eq!(me.data()["duty"], Value::Null, "{}", me.text);

    // Installable, by Chromium's own check; nothing loaded from elsewhere.
    let errors = driver
        .cdp(&a, "Page.getInstallabilityErrors", json!({}))
        .await
        .expect("installability");
    eprintln!("staff page: installability {errors}");
    assert_eq!(errors["installabilityErrors"], json!([]), "{errors}");
    let foreign = run(
        &a,
        "return performance.getEntriesByType('resource').map((e) => e.name)
           .filter((name) => !name.startsWith(location.origin + '/') && !name.startsWith('data:'))",
    )
    .await;
    assert_eq!(foreign, json!([]), "loaded from another host");
}

/// The service worker: a pushed alert as a notification, its "Annehmen",
/// a pushed cancel closing it (see the module comment for the click).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pushed_alert_is_a_notification_whose_action_answers_and_a_cancel_closes_it() {
    if skip_browser_tests(
        "a_pushed_alert_is_a_notification_whose_action_answers_and_a_cancel_closes_it",
    ) {
        return;
    }
    let server = Server::sandbox();
    let base = server.base_url().to_string();
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    sign_on(&server, &anna, &[]).await;
    let driver = Chromedriver::start().await;
    let a = staff_page(&driver, &base, &anna).await;

    // The worker, registered for the page's scope and in control.
    let scope = shows("the active service worker", Instant::now(), LOAD_TIMEOUT, || async {
        run(
            &a,
            "return navigator.serviceWorker.controller && navigator.serviceWorker.controller.state === 'activated'
               ? navigator.serviceWorker.getRegistration('/staff').then((r) => r && r.scope) : null",
        )
        .await
        .as_str()
        .map(str::to_string)
    })
    .await;
    assert_eq!(scope, format!("{base}/staff"));

    // Notifications allowed (the tap's permission prompt, granted).
    driver
        .cdp(
            &a,
            "Browser.grantPermissions",
            json!({ "origin": base, "permissions": ["notifications"] }),
        )
        .await
        .expect("permission granted");
    click(&a, "#push-on").await;
    let status = shows(
        "the push status",
        Instant::now(),
        Duration::from_secs(10),
        || async {
            let status = text(&a, "#push-status").await;
            (status.contains(OPEN_ONLY) || status.starts_with("Benachrichtigungen an"))
                .then_some(status)
        },
    )
    .await;
    eprintln!("staff page: after \"Benachrichtigungen einschalten\": {status}");

    // An alert pushed to the worker: a notification with the call's id as tag.
    let id = alarms_support::open(&server, &visitor, "Zimmer-12", "Notruf", Some("A")).await;
    let (_, alert) = alert_message(&server, &anna, id).await;
    // The open page showed it from its socket and confirmed it (§18).
    receipt_logged(&server, id, "page");
    let tag = id.to_string();
    // Delivered again when it did not show: under load (the other browser
    // test beside this one) the first delivery was seen to go missing.
    let mut registrations = Vec::new();
    let mut pushed = Instant::now();
    let mut notification = None;
    for _ in 0..3 {
        registrations = push(&driver, &a, &base, &alert, None).await;
        pushed = Instant::now();
        while notification.is_none() && pushed.elapsed() < Duration::from_secs(3) {
            notification = notifications(&a)
                .await
                .into_iter()
                .find(|n| n["tag"] == tag.as_str());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if notification.is_some() {
            break;
        }
        eprintln!("staff page: the push showed nothing within 3 s; delivered again");
    }
    let notification = notification.expect("the pushed alert's notification");
    eprintln!("staff page: the push taken by registration ids {registrations:?}");
    // The worker posted the push's receipt once it showed the notification.
    receipt_logged(&server, id, "push");
    eprintln!(
        "staff page: notification after {} ms: {notification}",
        pushed.elapsed().as_millis()
    );
    assert_eq!(notification["title"], "Notruf – Zimmer-12");
    assert!(
        notification["body"]
            .as_str()
            .unwrap_or_default()
            .contains("Bereich A · Stufe 1"),
        "{notification}"
    );
    assert_eq!(notification["actions"], json!(["Annehmen", "Ablehnen"]));
    assert_eq!(notification["requireInteraction"], true);
    assert!(
        notification["vibrate"]
            .as_array()
            .is_some_and(|v| v.len() >= 5),
        "an emergency's long pattern: {notification}"
    );

    // "Annehmen": the worker posts the response with its stored token.
    let tapped = Instant::now();
    let done = run(
        &a,
        &format!(
            "return new Promise((resolve) => {{
               navigator.serviceWorker.addEventListener('message', (event) => {{
                 if (event.data && event.data.type === 'notification-action-done') resolve(event.data.result);
               }});
               navigator.serviceWorker.controller.postMessage({{ type: 'notification-action', tag: '{id}', action: 'accept' }});
             }})"
        ),
    )
    .await;
    eprintln!(
        "staff page: the action answered {} after {} ms",
        done["status"],
        tapped.elapsed().as_millis()
    );
    assert_eq!(done["status"], 200, "{done}");
    let call = staff_calls(&server, &anna)
        .await
        .into_iter()
        .find(|c| c["id"] == id)
        .expect("the call");
    assert_eq!(call["alarm"]["state"], "accepted", "{call}");
    assert_eq!(call["alarm"]["accepted_by"]["id"], anna.id.as_str());
    measure(
        "the page after the notification's Annehmen",
        tapped,
        LIVE,
        || async {
            let tile = tile_of(&tiles(&a, "others").await, id)?;
            (tile["accepted"] == "Anna kommt (Sie)").then_some(())
        },
    )
    .await;
    assert!(
        notifications(&a)
            .await
            .iter()
            .all(|n| n["tag"] != tag.as_str()),
        "the answered notification is closed"
    );

    // A cancel pushed for another alert closes its notification.
    let other = alarms_support::open(&server, &visitor, "Zimmer-14", "WC", Some("A")).await;
    let other_tag = other.to_string();
    let (record, alert) = alert_message(&server, &anna, other).await;
    push(&driver, &a, &base, &alert, Some(&registrations)).await;
    shows(
        "the second notification",
        Instant::now(),
        Duration::from_secs(5),
        || async {
            notifications(&a)
                .await
                .into_iter()
                .find(|n| n["tag"] == other_tag.as_str())
                .map(|_| ())
        },
    )
    .await;
    let cancel = json!({"type": "call.cancelled", "version": record["version"], "reason": "ended", "accepted_by": null, "call": record});
    push(&driver, &a, &base, &cancel, Some(&registrations)).await;
    measure(
        "the notification closed by the cancel",
        Instant::now(),
        LIVE,
        || async {
            notifications(&a)
                .await
                .iter()
                .all(|n| n["tag"] != other_tag.as_str())
                .then_some(())
        },
    )
    .await;
}

/// Asserts that the server took a receipt for call `id` that came by `path`
/// (`page`: the open page's; `push`: the service worker's), from its log.
fn receipt_logged(server: &Server, id: i64, path: &str) {
    let taken = |line: &String| {
        let line: Value = serde_json::from_str(line).unwrap_or_default();
        line["message"] == "receipt" && line["call_id"] == id && line["path"] == path
    };
    let lines = server.logs_once(|lines| lines.iter().any(taken));
    assert!(
        lines.iter().any(taken),
        "no receipt by {path} for call {id} in the server's log"
    );
}

/// The notifications of the page's worker, as the page reads them.
async fn notifications(browser: &Client) -> Vec<Value> {
    run(
        browser,
        "return navigator.serviceWorker.getRegistration('/staff')
           .then((r) => r ? r.getNotifications() : [])
           .then((list) => list.map((n) => ({ title: n.title, body: n.body, tag: n.tag,
              requireInteraction: n.requireInteraction, vibrate: [...(n.vibrate || [])],
              actions: (n.actions || []).map((a) => a.title) })))",
    )
    .await
    .as_array()
    .cloned()
    .unwrap_or_default()
}

/// Call `id` as `member`'s staff read shows it once it alerts them (without
/// the read's own `alerting`), and the `call.alert` the push service would
/// carry for it.
async fn alert_message(server: &Server, member: &Member, id: i64) -> (Value, Value) {
    let mut call = shows(
        "the alert in the staff read",
        Instant::now(),
        Duration::from_secs(5),
        || async {
            staff_calls(server, member)
                .await
                .into_iter()
                .find(|c| c["id"] == id && c["alerting"] == true)
        },
    )
    .await;
    call.as_object_mut().expect("a call").remove("alerting");
    // The receipt the push service would carry: this person's first alert
    // of the call, by a device (§18: `<call>.<alert>.<person>.<device>`).
    let receipt = format!("{id}.1.{}.0123abcd", member.id);
    let alert = json!({"type": "call.alert", "version": call["version"], "level": 1, "repeat": false, "receipt": receipt, "call": call});
    (call, alert)
}

/// Delivers `message` to the page's worker as a push, through the DevTools
/// protocol. The registration's id is not readable without the protocol's
/// events, which chromedriver does not pass on; a fresh profile numbers its
/// registrations from 0, and an id without a registration delivers to
/// nobody: the push goes to each of the first ids the browser takes. Those
/// ids, for the next push.
async fn push(
    driver: &Chromedriver,
    browser: &Client,
    origin: &str,
    message: &Value,
    registrations: Option<&[String]>,
) -> Vec<String> {
    let data = message.to_string();
    driver
        .cdp(browser, "ServiceWorker.enable", json!({}))
        .await
        .expect("the ServiceWorker domain");
    let candidates: Vec<String> = match registrations {
        Some(ids) => ids.to_vec(),
        None => (0..4).map(|i| i.to_string()).collect(),
    };
    let mut taken = Vec::new();
    let mut refused = Vec::new();
    for id in candidates {
        match driver
            .cdp(
                browser,
                "ServiceWorker.deliverPushMessage",
                json!({ "origin": origin, "registrationId": id, "data": data }),
            )
            .await
        {
            Ok(_) => taken.push(id),
            Err(error) => refused.push(format!("{id}: {}", &error[..error.len().min(160)])),
        }
    }
    assert!(
        !taken.is_empty(),
        "no registration took the push: {refused:?}"
    );
    taken
}

/// Renews the README's picture: the staff page at 390×844 with a call
/// alerting this person and another one accepted by a colleague. Run on
/// demand (see the module comment).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/staff-page.png; run on demand"]
async fn screenshot() {
    if skip_browser_tests("screenshot") {
        return;
    }
    let server = Server::sandbox();
    let base = server.base_url().to_string();
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let ben = staff(&server, &visitor, "Ben", &[]).await;
    sign_on(&server, &anna, &["A"]).await;
    sign_on(&server, &ben, &["A"]).await;
    let wc = alarms_support::open(&server, &visitor, "Bad-102", "WC", Some("A")).await;
    alarms_support::respond(&server, &anna, wc, "accepted")
        .await
        .expect_status(200);
    alarms_support::open(&server, &visitor, "Zimmer-103", "Notruf", Some("A")).await;
    let driver = Chromedriver::start().await;
    let b = staff_page(&driver, &base, &ben).await;
    shows("the calls", Instant::now(), LOAD_TIMEOUT, || async {
        (tiles(&b, "mine").await.len() == 1 && tiles(&b, "others").await.len() == 1).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs");
    save_screenshot(&b, &docs.join("staff-page.png")).await;
    eprintln!("wrote {}", docs.join("staff-page.png").display());
}
