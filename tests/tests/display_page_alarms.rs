//! The alarm on the display page's tiles (DECISIONS §14) and the test page's
//! staff (§8), in headless Chromium against the real local server, as an
//! integrator tries it: on the test page a visitor creates a staff member
//! (the token and the staff page's link shown once), opens the display page,
//! opens a Notruf with nobody on duty ("Kein Personal erreichbar", loud),
//! signs the person on with the staff API ("Stufe 3": every level had
//! started), and accepts ("Anna kommt · 3 s", running). Each change shows
//! within 1 s of the answer that caused it (the times are printed).
//!
//! Receipts (DECISIONS §18), at 1920×1080 with `RECEIPT_SECONDS` 2: an
//! alert nobody confirms makes the tile say "Nicht zugestellt" at the
//! deadline; the person's late receipt turns it into "Anna ✓".

mod alarms_support;
mod common;

use std::time::{Duration, Instant};

use blackbox_tests::*;
use common::*;
use fantoccini::{Client, Locator};
use reqwest::Method;

/// A change of the alarm reaches the page within this of the answer that
/// caused it (the engine looks at once; the live feed within 1 s), plus the
/// test's polling.
const LIVE: Duration = Duration::from_millis(1500);

/// The tile of call `id`: its alarm line's text, and how the unattended
/// warning looks (font size in px against the tile's small print, its colours).
async fn alarm_line(browser: &Client, id: i64) -> Value {
    run(
        browser,
        &format!(
            "const t = document.querySelector('#calls .tile[data-call-id=\"{id}\"]');
             if (!t) return null;
             const line = t.querySelector('.tile-alarm');
             const loud = t.querySelector('.alarm-unattended');
             const size = (e) => e ? parseFloat(getComputedStyle(e).fontSize) : null;
             return {{ text: line ? line.innerText : '', loudSize: size(loud),
                       metaSize: size(t.querySelector('.tile-meta')),
                       loudColors: loud ? [getComputedStyle(loud).color, getComputedStyle(loud).backgroundColor] : null,
                       since: (t.querySelector('[data-role=accepted-since]') || {{}}).textContent || null }};"
        ),
    )
    .await
}

/// Polls until call `id`'s alarm line satisfies `check`; prints and returns it.
async fn shown(
    browser: &Client,
    id: i64,
    what: &str,
    since: Instant,
    check: impl Fn(&str) -> bool,
) -> Value {
    let line = shows(what, since, LIVE, || async {
        let line = alarm_line(browser, id).await;
        check(line["text"].as_str().unwrap_or_default()).then_some(line)
    })
    .await;
    eprintln!(
        "display page: {what} after {} ms",
        since.elapsed().as_millis()
    );
    line
}

async fn as_staff(
    server: &Server,
    method: Method,
    path: &str,
    token: &str,
    body: &str,
) -> Response {
    let bearer = format!("Bearer {token}");
    let content_type = (!body.is_empty()).then_some("application/json");
    server
        .request(
            method,
            path,
            content_type,
            &[("Authorization", &bearer)],
            body,
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_test_page_s_staff_and_the_alarm_on_the_tiles() {
    if skip_browser_tests("the_test_page_s_staff_and_the_alarm_on_the_tiles") {
        return;
    }
    let server = Server::sandbox();
    let base = server.base_url().to_string();
    let driver = Chromedriver::start().await;
    let browser = driver.browser("display-alarms", 1280, 900).await;

    // The test page: a staff member of the visitor's own, token and link once.
    let me = test_page_consumer(&browser, &base).await;
    browser
        .find(Locator::Css("#staff-name"))
        .await
        .expect("the staff form")
        .send_keys("Anna")
        .await
        .expect("typed");
    browser
        .find(Locator::Css("#new-staff button[type=submit]"))
        .await
        .expect("the button")
        .click()
        .await
        .expect("clicked");
    let token = shows("the new staff member's token", Instant::now(), LOAD_TIMEOUT, || async {
        let token = run(&browser, "const t = document.querySelector('#staff-issued [data-role=token]'); return t ? t.textContent : null").await;
        token.as_str().map(str::to_string)
    })
    .await;
    assert!(
        token.len() == 64 && token.bytes().all(|b| b.is_ascii_hexdigit()),
        "{token}"
    );
    let link = browser
        .find(Locator::Css("#staff-issued [data-role=staff-page]"))
        .await
        .expect("the staff page's link");
    assert_eq!(
        link.attr("href").await.expect("href").as_deref(),
        Some(format!("/staff#token={token}").as_str())
    );
    let curl = text(&browser, "#staff-issued [data-role=curl]").await;
    assert!(
        curl.contains("/api/v1/staff/duty") && curl.contains(&format!("Bearer {token}")),
        "{curl}"
    );
    // The list (polled from the state) keeps the link in this browser.
    shows("Anna in the staff list", Instant::now(), Duration::from_secs(5), || async {
        let row = run(&browser, "const r = document.querySelector('#staff tr[data-staff-id]'); return r ? r.innerText : null").await;
        row.as_str().filter(|r| r.contains("Anna") && r.contains("Staff-Seite öffnen")).map(str::to_string)
    })
    .await;

    // The display page of the visitor's calls.
    browser
        .find(Locator::Css("#display-link"))
        .await
        .expect("link")
        .click()
        .await
        .expect("followed");
    shows(
        "the connected display page",
        Instant::now(),
        LOAD_TIMEOUT,
        || async {
            let quiet = run(
                &browser,
                "const q = document.getElementById('quiet'); return q.hidden ? null : q.innerText",
            )
            .await;
            quiet
                .as_str()
                .filter(|q| q.starts_with("Keine offenen Rufe"))
                .map(str::to_string)
        },
    )
    .await;

    // Nobody on duty: every level starts at once, nobody to alert.
    let opened = server
        .display_query(
            "include=type",
            &me,
            "Zimmer-7",
            r#"{"event":"Notruf","position":"Zimmer 7","section":"A"}"#,
        )
        .await;
    opened.expect_status(201);
    let id = opened.data()["id"].as_i64().expect("id");
    let line = shown(
        &browser,
        id,
        "Kein Personal erreichbar",
        Instant::now(),
        |t| t == "Kein Personal erreichbar",
    )
    .await;
    let (loud, small_print) = (
        line["loudSize"].as_f64().unwrap_or_default(),
        line["metaSize"].as_f64().unwrap_or_default(),
    );
    assert!(
        loud >= 1.2 * small_print,
        "the warning is larger than the tile's small print: {line}"
    );
    // Yellow on black, blinking to black on yellow.
    let (yellow, black) = (rgb("#ffd54f"), rgb("#000000"));
    assert!(
        line["loudColors"] == json!([yellow, black])
            || line["loudColors"] == json!([black, yellow]),
        "{line}"
    );

    // Anna, her staff page open (a channel to her, §18), signs on for
    // section A: the call alerts her; its tile says how far it escalated.
    let _anna_page = alarms_support::connect_staff_token(&server, &token).await;
    as_staff(
        &server,
        Method::PUT,
        "/api/v1/staff/duty",
        &token,
        r#"{"sections":["A"]}"#,
    )
    .await
    .expect_status(200);
    let line = shown(
        &browser,
        id,
        "Stufe 3 without the warning",
        Instant::now(),
        |t| t.contains("Stufe 3") && !t.to_lowercase().contains("kein personal"),
    )
    .await;
    assert_eq!(line["loudSize"], Value::Null, "{line}");

    // "Ich komme": who comes, and for how long already, running.
    as_staff(
        &server,
        Method::POST,
        &format!("/api/v1/staff/calls/{id}/responses"),
        &token,
        r#"{"response":"accepted"}"#,
    )
    .await
    .expect_status(200);
    let line = shown(&browser, id, "Anna kommt", Instant::now(), |t| {
        t.starts_with("Anna kommt · ") && t.ends_with(" s")
    })
    .await;
    assert!(
        !line["text"].as_str().unwrap_or_default().contains("Stufe"),
        "{line}"
    );
    let seconds = |line: &Value| {
        line["since"]
            .as_str()
            .unwrap_or_default()
            .strip_suffix(" s")
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or_default()
    };
    save_screenshot(
        &browser,
        &std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("display-accepted.png"),
    )
    .await;
    let before = seconds(&line);
    // As the call's own duration: whole seconds, counted on from each read.
    tokio::time::sleep(Duration::from_millis(3100)).await;
    let after = seconds(&alarm_line(&browser, id).await);
    assert!(
        after >= before + 2,
        "the time since acceptance runs: {before} s, then {after} s"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alert_nobody_confirms_is_not_delivered_on_the_tile_until_a_receipt() {
    if skip_browser_tests("an_alert_nobody_confirms_is_not_delivered_on_the_tile_until_a_receipt") {
        return;
    }
    let server = Server::start(Options::sandbox().env("RECEIPT_SECONDS", "2"));
    let base = server.base_url().to_string();
    let driver = Chromedriver::start().await;
    let browser = driver.browser("display-receipts", 1920, 1080).await;
    let me = display_via_test_page(&browser, &base).await;
    // Anna on duty for A, her page open (it confirms nothing by itself
    // here); Ben of Leitung off duty, his page open too (a channel: he is
    // not "not reached" at once, §18): the Notruf's last level.
    let anna = alarms_support::staff(&server, &me, "Anna", &[]).await;
    let ben = alarms_support::staff(&server, &me, "Ben", &["Leitung"]).await;
    alarms_support::sign_on(&server, &anna, &["A"]).await;
    let mut anna_page = alarms_support::connect_staff(&server, &anna).await;
    let _ben_page = alarms_support::connect_staff(&server, &ben).await;

    let opened = Instant::now();
    let id = alarms_support::open(&server, &me, "Zimmer-7", "Notruf", Some("A")).await;
    let alert = alarms_support::message(&mut anna_page, "call.alert", id).await;
    // Not confirmed: at the deadline the next levels start (Ben), and the
    // tile says loudly that nobody got it.
    let line = shows(
        "Nicht zugestellt",
        opened,
        Duration::from_secs(5),
        || async {
            let line = alarm_line(&browser, id).await;
            line["text"]
                .as_str()
                .is_some_and(|t| t.contains("Nicht zugestellt"))
                .then_some(line)
        },
    )
    .await;
    let at = opened.elapsed().as_secs_f64();
    eprintln!("display page: \"Nicht zugestellt\" {at:.2} s after the open (RECEIPT_SECONDS 2)");
    assert!(
        (1.5..=3.5).contains(&at),
        "{at:.2} s after the open: {line}"
    );
    let loud = run(
        &browser,
        &format!(
            "const e = document.querySelector('#calls .tile[data-call-id=\"{id}\"] .alarm-undelivered');
             return e ? [getComputedStyle(e).color, getComputedStyle(e).backgroundColor] : null;"
        ),
    )
    .await;
    let (yellow, black) = (rgb("#ffd54f"), rgb("#000000"));
    assert!(
        loud == json!([yellow, black]) || loud == json!([black, yellow]),
        "yellow on black, blinking: {loud}"
    );

    // Anna's page confirms late: she got it.
    let receipt = alert["receipt"].as_str().expect("a receipt").to_string();
    let posted = Instant::now();
    alarms_support::as_staff(
        &server,
        Method::POST,
        "/api/v1/staff/receipts",
        &anna.token,
        Some(&json!({ "receipt": receipt }).to_string()),
    )
    .await
    .expect_status(200);
    let line = shown(&browser, id, "Anna ✓", posted, |t| {
        t.contains("Anna ✓") && !t.contains("Nicht zugestellt")
    })
    .await;
    save_screenshot(
        &browser,
        &std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("display-receipts.png"),
    )
    .await;
    eprintln!("display page: after the receipt: {line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accept_that_times_out_says_who_did_not_come() {
    if skip_browser_tests("an_accept_that_times_out_says_who_did_not_come") {
        return;
    }
    let server = Server::sandbox();
    // An accept must be followed by a presence within 2 s (DECISIONS §19).
    server
        .admin(&["call-types", "set", "Notruf", "--accept-timeout", "2"])
        .success();
    let base = server.base_url().to_string();
    let driver = Chromedriver::start().await;
    let browser = driver.browser("display-not-arrived", 1280, 900).await;
    let me = display_via_test_page(&browser, &base).await;
    let anna = alarms_support::staff(&server, &me, "Anna", &[]).await;
    alarms_support::sign_on(&server, &anna, &["A"]).await;
    let mut anna_page = alarms_support::connect_staff(&server, &anna).await;
    let id = alarms_support::open(&server, &me, "Zimmer-8", "Notruf", Some("A")).await;
    alarms_support::message(&mut anna_page, "call.alert", id).await;
    let accepted = Instant::now();
    alarms_support::respond(&server, &anna, id, "accepted")
        .await
        .expect_status(200);
    shown(&browser, id, "Anna kommt", accepted, |t| {
        t.starts_with("Anna kommt")
    })
    .await;
    // Nobody arrives: at the timeout the tile says so, loudly.
    let line = shows(
        "Anna kam nicht",
        accepted,
        Duration::from_secs(5),
        || async {
            let line = alarm_line(&browser, id).await;
            line["text"]
                .as_str()
                .is_some_and(|t| t.contains("Anna kam nicht") && !t.contains("kommt"))
                .then_some(line)
        },
    )
    .await;
    let at = accepted.elapsed().as_secs_f64();
    eprintln!("display page: \"Anna kam nicht\" {at:.2} s after the accept (accept timeout 2 s)");
    assert!(
        (1.0..=3.5).contains(&at),
        "{at:.2} s after the accept: {line}"
    );
    save_screenshot(
        &browser,
        &std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("display-not-arrived.png"),
    )
    .await;
}
