//! The test page in a real browser: headless Chromium driven over WebDriver
//! (chromedriver, `fantoccini`). A visitor gets a pair, the page shows it and
//! the signed examples, and shows the visitor's calls, elements and hash
//! mismatches live (within 2 s, without a reload); a second browser never sees
//! the first one's data.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`scripts/test` installs
//! them). `CHROMIUM` and `CHROMEDRIVER` override the paths; with
//! `SKIP_BROWSER_TESTS=1` the tests only say that they were skipped.
//!
//! `cargo test -p blackbox-tests --test browser -- --ignored screenshot`
//! renews `docs/test-page.png` (the README's picture).

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use blackbox_tests::*;
use common::*;
use fantoccini::{Client, Locator};

/// What the page promises: a change shows within 2 s.
const LIVE: Duration = Duration::from_secs(2);

/// The rows of the calls table the page shows now.
async fn calls_shown(browser: &Client) -> Vec<Value> {
    let rows = run(
        browser,
        "return [...document.querySelectorAll('#calls tbody tr[data-call-id]')].map(tr => ({
            id: tr.dataset.callId,
            class: tr.className,
            cells: [...tr.cells].map(td => td.textContent),
            color: tr.cells[1].querySelector('.badge') ?
                getComputedStyle(tr.cells[1].querySelector('.badge')).backgroundColor : null,
        }))",
    )
    .await;
    rows.as_array().cloned().unwrap_or_default()
}

/// The mismatches the page shows now, newest first.
async fn mismatches_shown(browser: &Client) -> Vec<Value> {
    let shown = run(
        browser,
        "return [...document.querySelectorAll('#mismatches details')].map(d => {
            const role = r => d.querySelector('[data-role=' + r + ']').textContent;
            return { summary: d.querySelector('summary').textContent, open: d.open,
                     string: role('string'), expected: role('expected'), provided: role('provided'),
                     difference: role('difference'), diagnosis: role('diagnosis') };
        })",
    )
    .await;
    shown.as_array().cloned().unwrap_or_default()
}

/// The curl example `#example-<key>` as (path, body), to send it as shown.
async fn example(browser: &Client, key: &str, base: &str) -> (String, String) {
    let curl = text(browser, &format!("#example-{key}")).await;
    let url = curl
        .split('\'')
        .nth(1)
        .unwrap_or_else(|| panic!("no URL in {curl}"));
    let path = url
        .strip_prefix(base)
        .unwrap_or_else(|| panic!("example {key} is not for {base}: {curl}"));
    let body = curl
        .split_once("-d '")
        .and_then(|(_, rest)| rest.strip_suffix('\''))
        .unwrap_or_else(|| panic!("no body in {curl}"));
    (path.to_string(), body.to_string())
}

/// `data` as Python's `json.dumps` writes it by default: `, ` and `: `.
fn python_spaced(data: &str) -> String {
    data.replace("\",\"", "\", \"").replace("\":", "\": ")
}

// ---------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_test_page_shows_a_visitors_data_live_and_only_theirs() {
    if skip_browser_tests("the_test_page_shows_a_visitors_data_live_and_only_theirs") {
        return;
    }
    let server = Server::sandbox();
    let base = server.base_url().to_string();
    let driver = Chromedriver::start().await;
    let a = driver.browser("a", 1280, 1000).await;

    // A first visit: a pair, kept in an HttpOnly cookie, shown on the page.
    a.goto(&format!("{base}/")).await.expect("page loads");
    let id = text(&a, "#consumer").await;
    let secret = text(&a, "#secret").await;
    assert!(is_uuid_v4(&id), "consumer {id:?}");
    assert_eq!(secret.len(), 64, "secret {secret:?}");
    assert_eq!(text(&a, "#base-url").await, base);
    let cookie = a.get_named_cookie("nc_sandbox").await.expect("cookie");
    assert_eq!(
        cookie.value(),
        format!("{id}.{}", hmac_sha256_hex(&secret, &id))
    );
    assert_eq!(cookie.http_only(), Some(true));
    assert_eq!(
        cookie.same_site().map(|s| s.to_string()),
        Some("Lax".to_string())
    );
    assert_eq!(
        run(&a, "return document.cookie.includes('nc_sandbox')").await,
        false,
        "scripts cannot read the cookie"
    );
    let me = Consumer::new(&id, &secret);

    // The call types in their colours, and the signing explained.
    let badges = run(
        &a,
        "return [...document.querySelectorAll('#call-types .badge')].map(b => b.textContent)",
    )
    .await;
    assert_eq!(badges, json!(CALL_TYPE_NAMES));
    let page = text(&a, "#sign-title + p + pre").await;
    assert_eq!(page, "<target>.<consumer>.<data_json>");
    let explanation = text(&a, "section[aria-labelledby=sign-title]").await;
    assert!(
        explanation.contains(".<consumer>.<data_json>") && explanation.contains("Mehrfachform"),
        "the multi form is explained: {explanation}"
    );
    assert!(
        text(&a, "#calls tbody").await.contains("Noch keine Rufe"),
        "an empty list says so"
    );

    // A signed open from outside shows up within 2 s, without a reload.
    let sent = Instant::now();
    let opened = server
        .display_query(
            "include=type",
            &me,
            "Zimmer-7",
            r#"{"event":"Notruf","position":"Bett 2"}"#,
        )
        .await;
    opened.expect_status(201);
    let call_id = opened.data()["id"].as_i64().expect("call id").to_string();
    let color = opened.data()["type"]["color"]
        .as_str()
        .expect("colour")
        .to_string();
    let row = shows("the opened call", sent, LIVE, || async {
        calls_shown(&a)
            .await
            .into_iter()
            .find(|row| row["id"] == call_id.as_str())
    })
    .await;
    assert_eq!(row["class"], "open", "{row}");
    assert_eq!(row["cells"][1], "Notruf");
    assert_eq!(row["cells"][2], "Zimmer-7");
    assert_eq!(row["cells"][4], "Bett 2");
    assert_eq!(row["cells"][6], "offen");
    assert_eq!(row["color"], rgb(&color), "the type in its colour");

    // The elements list follows too.
    shows("the element of the call", sent, LIVE, || async {
        run(&a, "return document.querySelector('#elements tbody tr[data-address=\"Zimmer-7\"]') !== null")
            .await
            .as_bool()
            .filter(|shown| *shown)
    })
    .await;

    // Close it: shown closed within 2 s.
    let sent = Instant::now();
    server
        .display(&me, "Zimmer-7", r#"{"closed":true}"#)
        .await
        .expect_status(200);
    let row = shows("the call closed", sent, LIVE, || async {
        calls_shown(&a)
            .await
            .into_iter()
            .find(|row| row["id"] == call_id.as_str() && row["class"] == "closed")
    })
    .await;
    assert_ne!(row["cells"][6], "offen", "{row}");

    // The page's examples run as shown: open, close, element, multi form.
    for (key, status) in [
        ("open", 201),
        ("close", 200),
        ("element", 200),
        ("multi", 200),
    ] {
        let (path, body) = example(&a, key, &base).await;
        server.post(&path, body).await.expect_status(status);
    }
    let sent = Instant::now();
    shows("the examples' elements", sent, LIVE, || async {
        let shown = run(
            &a,
            "return [...document.querySelectorAll('#elements tbody tr[data-address]')]
                .map(tr => [tr.dataset.address, tr.cells[1].textContent, tr.cells[3].textContent])",
        )
        .await;
        let shown = shown.as_array().cloned().unwrap_or_default();
        (shown.contains(&json!(["Zimmer-101", "75", "ja"]))
            && shown.contains(&json!(["Zimmer-102", "–", "nein"])))
        .then_some(())
    })
    .await;

    // A wrong hash: the page explains the debug object within 2 s.
    let data = r#"{"event":"WC"}"#;
    let wrong = "0".repeat(64);
    let sent = Instant::now();
    let rejected = server
        .post(DISPLAY, envelope(Some("Bad-1"), &id, &wrong, data))
        .await;
    rejected.expect_status(400);
    let debug = rejected.json()["debug"].clone();
    let shown = shows("the mismatch", sent, LIVE, || async {
        mismatches_shown(&a).await.into_iter().next()
    })
    .await;
    assert_eq!(shown["string"], debug["string"], "{shown}");
    assert_eq!(shown["string"], format!("Bad-1.{id}.{data}"));
    assert_eq!(shown["expected"], debug["hash"]["expected"]);
    assert_eq!(shown["provided"], wrong);
    assert_eq!(shown["open"], true, "the newest is unfolded");
    let expected = debug["hash"]["expected"].as_str().expect("expected hash");
    let first = expected.find(|c| c != '0').expect("not all zeros") + 1;
    let difference = shown["difference"].as_str().unwrap_or_default();
    assert!(
        difference.contains(&format!("ab Stelle {first} verschieden")),
        "where they differ: {difference}"
    );

    // The classic mistake: signed as Python's json.dumps writes it, sent the
    // same; the service removes the whitespace, and the page says so.
    let spaced = python_spaced(r#"{"event":"WC","position":"Bad"}"#);
    let hash = hmac_sha256_hex(&secret, &format!("Bad-2.{id}.{spaced}"));
    let sent = Instant::now();
    server
        .post(DISPLAY, envelope(Some("Bad-2"), &id, &hash, &spaced))
        .await
        .expect_status(400);
    let shown =
        shows("the whitespace mismatch explained", sent, LIVE, || async {
            mismatches_shown(&a).await.into_iter().next().filter(|m| {
                m["provided"] == hash.as_str() && m["diagnosis"] != "Suche die Ursache …"
            })
        })
        .await;
    let diagnosis = shown["diagnosis"].as_str().unwrap_or_default();
    assert!(
        diagnosis.starts_with("Gefundene Ursache") && diagnosis.contains("Leerraum"),
        "diagnosis: {diagnosis}"
    );
    assert_eq!(mismatches_shown(&a).await.len(), 2, "newest first, both");

    // A reload shows the same pair.
    a.refresh().await.expect("reload");
    assert_eq!(text(&a, "#consumer").await, id);
    assert_eq!(text(&a, "#secret").await, secret);
    save_screenshot(
        &a,
        &Path::new(env!("CARGO_TARGET_TMPDIR")).join("test-page-a.png"),
    )
    .await;

    // Readable on a phone: nothing wider than the screen.
    a.set_window_size(390, 844).await.expect("phone size");
    let overflow = run(
        &a,
        "const width = document.documentElement.clientWidth;
         return [...document.querySelectorAll('body *')]
            .filter(e => e.getBoundingClientRect().right > width + 1)
            .filter(e => !e.closest('.table-wrap, pre'))
            .map(e => e.tagName + (e.id ? '#' + e.id : '') + '.' + e.className + ' ' +
                      Math.round(e.getBoundingClientRect().right))",
    )
    .await;
    assert_eq!(overflow, json!([]), "wider than a phone's screen");
    let scroll = run(
        &a,
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth",
    )
    .await;
    assert_eq!(scroll, 0, "the page scrolls sideways on a phone");
    run(
        &a,
        "document.getElementById('calls-title').scrollIntoView()",
    )
    .await;
    save_screenshot(
        &a,
        &Path::new(env!("CARGO_TARGET_TMPDIR")).join("test-page-phone.png"),
    )
    .await;

    // A second visitor: another pair, none of the first one's data.
    let b = driver.browser("b", 1280, 1000).await;
    b.goto(&format!("{base}/")).await.expect("page loads");
    let b_id = text(&b, "#consumer").await;
    let b_secret = text(&b, "#secret").await;
    assert_ne!(b_id, id);
    assert_ne!(b_secret, secret);
    let b_me = Consumer::new(&b_id, &b_secret);
    let sent = Instant::now();
    let b_open = server.display(&b_me, "Zimmer-7", r#"{"event":"WC"}"#).await;
    b_open.expect_status(201);
    let b_call = b_open.data()["id"].as_i64().expect("id").to_string();
    shows("b's own call", sent, LIVE, || async {
        let rows = calls_shown(&b).await;
        (!rows.is_empty()).then_some(rows)
    })
    .await;
    let rows = calls_shown(&b).await;
    assert_eq!(rows.len(), 1, "b sees only its own call: {rows:?}");
    assert_eq!(rows[0]["id"], b_call.as_str());
    assert!(mismatches_shown(&b).await.is_empty(), "no mismatch of a's");
    let b_source = b.source().await.expect("page source");
    assert!(!b_source.contains(&id), "b's page names a's consumer");
    assert!(!b_source.contains(&secret), "b's page shows a's secret");
    let elements = text(&b, "#elements tbody").await;
    assert!(!elements.contains("Zimmer-101"), "a's elements: {elements}");
    // …and a never sees b's call.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(
        calls_shown(&a)
            .await
            .iter()
            .all(|row| row["id"] != b_call.as_str()),
        "a sees b's call"
    );

    // New credentials, by keyboard: Tab to the button, Enter.
    let mut reached = false;
    for _ in 0..20 {
        let active = b.active_element().await.expect("focus");
        if active.text().await.unwrap_or_default() == "Neue Zugangsdaten erzeugen" {
            active.send_keys("\u{E007}").await.expect("Enter");
            reached = true;
            break;
        }
        active.send_keys("\u{E004}").await.expect("Tab");
    }
    assert!(reached, "the button is reachable with Tab");
    let renewed = shows("new credentials", Instant::now(), LOAD_TIMEOUT, || async {
        let shown = b
            .find(Locator::Css("#consumer"))
            .await
            .ok()?
            .text()
            .await
            .ok()?;
        (is_uuid_v4(&shown) && shown != b_id).then_some(shown)
    })
    .await;
    assert_ne!(renewed, id);
    let cookie = b.get_named_cookie("nc_sandbox").await.expect("cookie");
    assert!(cookie.value().starts_with(&format!("{renewed}.")));
    let sent = Instant::now();
    shows("an empty list for the new pair", sent, LIVE, || async {
        calls_shown(&b).await.is_empty().then_some(())
    })
    .await;

    a.close().await.expect("browser a closes");
    b.close().await.expect("browser b closes");
}

/// Renews the README's picture: the page with a few calls, elements and one
/// explained mismatch. Run on demand (see the module comment).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/test-page.png; run on demand"]
async fn screenshot() {
    if skip_browser_tests("screenshot") {
        return;
    }
    let server = Server::sandbox();
    let base = server.base_url().to_string();
    let driver = Chromedriver::start().await;
    let browser = driver.browser("shot", 1280, 900).await;
    let me = test_page_consumer(&browser, &base).await;
    for (target, data) in [
        (
            "Zimmer-101",
            r#"{"event":"Normalruf","position":"Bett 1","battery":80}"#,
        ),
        ("Zimmer-102", r#"{"event":"WC","position":"Bad"}"#),
        ("Zimmer-104", r#"{"event":"Anwesenheit"}"#),
        (
            "Zimmer-103",
            r#"{"event":"Notruf","position":"Bett 2","battery":15,"reachable":true}"#,
        ),
    ] {
        server.display(&me, target, data).await.expect_status(201);
    }
    server
        .display(&me, "Zimmer-104", r#"{"closed":true}"#)
        .await
        .expect_status(200);
    let spaced = python_spaced(r#"{"event":"Notruf","position":"Flur"}"#);
    let hash = hmac_sha256_hex(&me.secret, &format!("Flur-1.{}.{spaced}", me.id));
    server
        .post(DISPLAY, envelope(Some("Flur-1"), &me.id, &hash, &spaced))
        .await
        .expect_status(400);
    shows(
        "the mismatch explained",
        Instant::now(),
        LOAD_TIMEOUT,
        || async {
            mismatches_shown(&browser)
                .await
                .into_iter()
                .next()
                .filter(|m| m["diagnosis"] != "Suche die Ursache …")
        },
    )
    .await;
    // The whole page in one picture.
    let height = run(&browser, "return document.documentElement.scrollHeight").await;
    let height = height.as_u64().unwrap_or(3000).min(6000) as u32;
    browser
        .set_window_size(1280, height + 100)
        .await
        .expect("window size");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mismatches = browser
        .find(Locator::Css("section[aria-labelledby=mismatches-title]"))
        .await
        .expect("mismatch section");
    let png = mismatches.screenshot().await.expect("section screenshot");
    std::fs::write(
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("test-page-mismatches.png"),
        png,
    )
    .expect("screenshot written");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/test-page.png");
    save_screenshot(&browser, &path).await;
    eprintln!("wrote {}", path.display());
    browser.close().await.expect("browser closes");
}
