//! The display page readable across a corridor (issue 29, docs/displays.md),
//! measured in headless Chromium at true viewports of 1920×1080 and 800×480
//! against the real local server: the call-type names' rendered cap height
//! with 1, 4, 9 and 12 open calls (beyond 9 the rest are counted), no name
//! wider than its tile or broken inside a word, the longest seeded name
//! included; durations in words; with the connection lost, the stale mark
//! on a line of its own, overlapping nothing (nor live, nor after the
//! maintenance strip took its line); and the header clock in the
//! installation's zone (Europe/Berlin) while the browser runs on UTC.
//!
//! One browser session for every measurement: the viewport and the number
//! of calls change between them (the suite's time matters).
//!
//! `render_cost` (ignored) is a benchmark, not a test: what drawing a new
//! call costs the page (`bench/display-page/run`).

// The browser helpers shared with the other page tests; this file needs
// only some of them.
#[allow(dead_code)]
mod common;

use std::time::Instant;

use blackbox_tests::*;
use chrono::Utc;
use common::*;
use fantoccini::Client;

/// The smallest cap height (px) of a call type's name of up to 9 letters:
/// (viewport, up to this many calls, minimum).
const MINIMA: [((u32, u32), usize, f64); 4] = [
    ((1920, 1080), 4, 90.0),
    ((1920, 1080), 9, 60.0),
    ((800, 480), 4, 32.0),
    ((800, 480), 9, 24.0),
];
const VIEWPORTS: [(u32, u32); 2] = [(1920, 1080), (800, 480)];
/// The calls, opened in steps of 1, 4, 9 and 12 (the read endpoint's order
/// puts the longest seeded name, Pneumatischer Ruf (REA), among the nine shown).
const CALLS: [(&str, &str); 12] = [
    ("Zimmer-501", "Normalruf"),
    ("Zimmer-502", "Geräteruf"),
    ("Zimmer-503", "Störung"),
    ("Zimmer-504", "Pneumatischer Ruf (REA)"),
    ("Zimmer-505", "WC"),
    ("Zimmer-506", "Notruf"),
    ("Zimmer-507", "Hotelruf"),
    ("Zimmer-508", "Funkelement-Ruf"),
    ("Zimmer-509", "Flucht"),
    ("Zimmer-510", "Normalruf"),
    ("Zimmer-511", "Störung"),
    ("Zimmer-512", "Hotelruf"),
];

/// Every shown tile's call-type name, measured where it is drawn.
///
/// The cap height is the rendered height of a capital `H` in the name's
/// computed font (style, weight, stretch, size and family list, so the same
/// face the browser picked for the name, fallbacks included): a canvas's
/// `measureText('H').actualBoundingBoxAscent` is the glyph's ink above the
/// baseline, read from the font's outlines, not from CSS metrics. Should the
/// canvas not take the font, it measures its 10 px default and the test
/// fails rather than passes.
///
/// Per name also: its text's box (a Range over it) against its tile's box,
/// its scroll width against its width, and the words that the browser
/// broke across lines (a word's Range with client rects on two lines).
const MEASURE: &str = r#"
const canvas = document.createElement('canvas').getContext('2d');
const STRETCH = { '50%': 'ultra-condensed', '62.5%': 'extra-condensed', '75%': 'condensed', '87.5%': 'semi-condensed', '100%': 'normal' };
return [...document.querySelectorAll('#calls .tile')].map(tile => {
  const name = tile.querySelector('.tile-type');
  const style = getComputedStyle(name);
  canvas.font = [style.fontStyle, style.fontWeight, style.fontSize, style.fontFamily].join(' ');
  canvas.fontStretch = STRETCH[style.fontStretch] || 'normal';
  const cap = canvas.measureText('H').actualBoundingBoxAscent;
  const text = name.firstChild;
  const range = document.createRange();
  range.selectNodeContents(name);
  const ink = range.getBoundingClientRect();
  const box = tile.getBoundingClientRect();
  const broken = [...text.data.matchAll(/[^\s-]+/g)].filter(word => {
    const r = document.createRange();
    r.setStart(text, word.index);
    r.setEnd(text, word.index + word[0].length);
    return new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top))).size > 1;
  }).map(word => word[0]);
  return { name: text.data, cap, fontSize: parseFloat(style.fontSize), broken,
           inside: ink.left >= box.left - 1 && ink.right <= box.right + 1 && ink.top >= box.top - 1 && ink.bottom <= box.bottom + 1,
           scroll: name.scrollWidth - name.clientWidth, duration: tile.querySelector('.tile-duration').textContent,
           tile: [box.left, box.top, box.right, box.bottom], ink: [ink.left, ink.top, ink.right, ink.bottom] };
});
"#;

/// Pairs of visible boxes that overlap: the page's blocks (banner, header,
/// tiles, the overflow count, the presence strip, footer) among each other,
/// and within each tile its parts (name, duration, place, details, alarm,
/// presence, stale mark) among each other and against the tile's edges; and
/// a part whose text spills out of its box sideways. Border boxes: a text's
/// own box (a Range) is the font's whole ascent and descent, taller than the
/// line and than any glyph, and would overlap the line below on paper only.
const OVERLAPS: &str = r#"
const visible = (e) => { const r = e.getBoundingClientRect(); return !e.closest('[hidden]') && r.width > 0 && r.height > 0; };
const label = (e) => e.id || e.className || e.tagName;
const found = [];
const pairwise = (nodes, where) => {
  const boxes = nodes.filter(visible).map(e => [label(e), e.getBoundingClientRect(), e]);
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const [a, ra] = boxes[i], [b, rb] = boxes[j];
    const w = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left), h = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
    if (w > 0.5 && h > 0.5) found.push(where + ': ' + a + ' overlaps ' + b);
  }
  return boxes;
};
pairwise([...document.querySelectorAll('#banner, header, #calls .tile, #overflow, #presence, #maintenance, footer')], 'page');
for (const tile of document.querySelectorAll('#calls .tile')) {
  const edge = tile.getBoundingClientRect();
  for (const [name, r, e] of pairwise([...tile.children], 'tile ' + tile.dataset.address)) {
    if (r.left < edge.left - 0.5 || r.right > edge.right + 0.5 || r.top < edge.top - 0.5 || r.bottom > edge.bottom + 0.5)
      found.push('tile ' + tile.dataset.address + ': ' + name + ' outside the tile');
    if (e.scrollWidth > e.clientWidth + 1) found.push('tile ' + tile.dataset.address + ': ' + name + ' spills sideways');
  }
}
return found;
"#;

/// Opens the `calls`-th call (room `target`, type `event`, section 2A);
/// with `wait`, until the page shows it (at most 9 tiles).
async fn open_and_wait(
    server: &Server,
    me: &Consumer,
    browser: &Client,
    target: &str,
    event: &str,
    calls: usize,
    wait: bool,
) {
    let room = target.trim_start_matches("Zimmer-");
    let data =
        json!({"event": event, "position": format!("Zimmer {room}, Bett 1"), "section": "2A"});
    server
        .display_query("include=type", me, target, &data.to_string())
        .await
        .expect_status(201);
    if !wait {
        return;
    }
    shows(
        &format!("{calls} calls"),
        Instant::now(),
        LOAD_TIMEOUT,
        || async {
            let shown = run(
                browser,
                "return document.querySelectorAll('#calls .tile').length",
            )
            .await;
            (shown == calls.min(9)).then_some(())
        },
    )
    .await;
}

/// Measures the names at every viewport with `calls` open (at most 9
/// shown); `minima`: the cap heights are checked too (not while the page is
/// stale: banner and stale marks take room of their own).
async fn names_are_large_and_whole(browser: &Client, calls: usize, minima: bool) {
    let shown = calls.min(9);
    for (width, height) in VIEWPORTS {
        set_viewport(browser, width, height).await;
        let names = run(browser, MEASURE).await;
        let names = names.as_array().cloned().unwrap_or_default();
        // Stale, a small screen may show fewer (the rest counted); live, all up to 9.
        if minima {
            assert_eq!(names.len(), shown, "tiles with {calls} calls: {names:#?}");
        } else {
            assert!(
                (1..=shown).contains(&names.len()),
                "tiles with {calls} calls: {names:#?}"
            );
        }
        let minimum = MINIMA
            .iter()
            .find(|((w, h), most, _)| (*w, *h) == (width, height) && shown <= *most)
            .map(|(_, _, minimum)| *minimum)
            .expect("a minimum for this count");
        let figures: Vec<String> = names
            .iter()
            .map(|n| format!("{} {:.0}", n["name"], n["cap"].as_f64().unwrap_or_default()))
            .collect();
        eprintln!(
            "display page: {calls} calls at {width}×{height}: cap heights (px) {}",
            figures.join(", ")
        );
        for name in &names {
            let text = name["name"].as_str().unwrap_or_default();
            let cap = name["cap"].as_f64().unwrap_or_default();
            if minima && text.chars().count() <= 9 {
                assert!(
                    cap >= minimum,
                    "{text}: cap height {cap:.1} px < {minimum} px with {calls} calls at {width}×{height}: {name}"
                );
            }
            assert_eq!(name["inside"], true, "{text} leaves its tile: {name}");
            assert!(
                name["scroll"].as_f64().unwrap_or(f64::MAX) <= 1.0,
                "{text} wider than its tile: {name}"
            );
            assert_eq!(name["broken"], json!([]), "{text} broken inside a word");
        }
        let overlaps = run(browser, OVERLAPS).await;
        assert_eq!(overlaps, json!([]), "{calls} calls at {width}×{height}");
        let overflow = run(
            browser,
            "const o = document.getElementById('overflow'); return o.hidden ? null : o.textContent",
        )
        .await;
        let expected = match calls - names.len() {
            0 => None,
            1 => Some("+ 1 weiterer Ruf (nicht angezeigt)".to_string()),
            more => Some(format!("+ {more} weitere Rufe (nicht angezeigt)")),
        };
        assert_eq!(overflow.as_str(), expected.as_deref(), "with {calls} calls");
    }
}

/// The header clock against "Stand" (the server's `at`, the installation's
/// local time) and against the time in Berlin; the browser is on UTC, an
/// hour or two off.
async fn the_clock_is_the_installations(browser: &Client) {
    let zone = run(
        browser,
        "return [new Date().getTimezoneOffset(), Intl.DateTimeFormat().resolvedOptions().timeZone]",
    )
    .await;
    assert_eq!(zone[0], 0, "the browser runs on UTC: {zone}");
    let berlin = |at: chrono::DateTime<Utc>| {
        at.with_timezone(&chrono_tz::Europe::Berlin)
            .format("%H:%M")
            .to_string()
    };
    // The page counts on from the server's `at` (whole seconds) and draws
    // every 250 ms: its clock may show the minute before for over a second
    // after the minute turns (a fresh machine's run read 09:06 at 09:07:00).
    let before = berlin(Utc::now() - chrono::Duration::seconds(3));
    let clock = text(browser, "#clock").await;
    let stand = text(browser, "#snapshot-at").await;
    let after = berlin(Utc::now());
    eprintln!("display page: clock {clock}, {stand}, Berlin {after}, browser on UTC");
    assert!(
        clock == before || clock == after,
        "the header clock {clock} is not Berlin's {before}–{after}"
    );
    // "Stand 2026-11-26 15:17:03": the same zone as the clock (the read was
    // at most a minute before).
    let stand_minute = stand.get(17..22).unwrap_or_default();
    let stand_then =
        chrono::NaiveTime::parse_from_str(stand_minute, "%H:%M").expect("Stand's time");
    let clock_now = chrono::NaiveTime::parse_from_str(&clock, "%H:%M").expect("the clock's time");
    let apart = (clock_now - stand_then).num_minutes().rem_euclid(24 * 60);
    assert!(
        apart <= 1,
        "clock {clock} and {stand} are {apart} min apart"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_fill_the_screen_durations_read_as_words_and_the_stale_mark_covers_nothing() {
    if skip_browser_tests(
        "names_fill_the_screen_durations_read_as_words_and_the_stale_mark_covers_nothing",
    ) {
        return;
    }
    let server = Server::start(Options::sandbox().time_zone("Europe/Berlin"));
    let driver = Chromedriver::start_with_env(&[("TZ", "UTC")]).await;
    let browser = driver.browser("layout", 1920, 1080).await;
    let me = display_via_test_page(&browser, server.base_url()).await;
    the_clock_is_the_installations(&browser).await;

    for (count, (target, event)) in CALLS.iter().enumerate() {
        let calls = count + 1;
        // The layout is checked at these counts; the calls between are
        // only opened.
        let checked = [1, 4, 9, 12].contains(&calls);
        open_and_wait(&server, &me, &browser, target, event, calls, checked).await;
        if !checked {
            continue;
        }
        names_are_large_and_whole(&browser, calls, true).await;
        if calls == 1 {
            // A fresh call counts seconds; one stored long ago counts days
            // (a call dated 1970 showed "498783:22:04"): two such calls as
            // a live message would bring them.
            let durations = run(
                &browser,
                "const call = [...calls.values()][0].call;
                 applyEvent({ type: 'call.opened', version: 1e12, call: { ...call, id: 1e9, address: 'Zimmer-1970', duration: 1700000000 } });
                 applyEvent({ type: 'call.opened', version: 1e12, call: { ...call, id: 1e9 + 1, address: 'Zimmer-3T', duration: 3 * 86400 + 5000 } });
                 render();
                 return [...document.querySelectorAll('#calls .tile')].map(t => [t.dataset.address, t.querySelector('.tile-duration').textContent]);",
            )
            .await;
            let duration = |address: &str| {
                durations
                    .as_array()
                    .and_then(|all| all.iter().find(|d| d[0] == address))
                    .map(|d| d[1].as_str().unwrap_or_default().to_string())
                    .unwrap_or_default()
            };
            assert_eq!(duration("Zimmer-1970"), "19675 Tage", "{durations}");
            assert_eq!(duration("Zimmer-3T"), "3 Tage", "{durations}");
            assert!(
                duration("Zimmer-501").ends_with(" s"),
                "a new call in seconds: {durations}"
            );
            names_are_large_and_whole(&browser, 3, true).await;
            run(
                &browser,
                "for (const id of [1e9, 1e9 + 1]) applyEvent({ type: 'call.closed', version: 2e12, call: { id, closed_at: 'x' } }); render(); return true",
            )
            .await;
        }
    }

    // The maintenance strip comes after the tiles were laid out, and staff
    // in the Notruf's room: the tiles fitted again to the room left. Then
    // the connection lost: the kept calls are marked stale on a line of
    // their own, overlapping nothing.
    server
        .element(&me, "Zimmer-520", r#"{"battery":10}"#)
        .await
        .expect_status(200);
    shows(
        "the maintenance strip",
        Instant::now(),
        LOAD_TIMEOUT,
        || async {
            let strip = run(
                &browser,
                "return document.getElementById('maintenance').hidden",
            )
            .await;
            (strip == false).then_some(())
        },
    )
    .await;
    names_are_large_and_whole(&browser, 12, false).await;
    server
        .display(&me, "Zimmer-506", r#"{"event":"Anwesenheit"}"#)
        .await
        .expect_status(201);
    shows("the presence", Instant::now(), LOAD_TIMEOUT, || async {
        let chip = run(
            &browser,
            "return document.querySelector('#calls .tile-presence') !== null",
        )
        .await;
        (chip == true).then_some(())
    })
    .await;
    drop(server);
    shows("the stale mark", Instant::now(), LOAD_TIMEOUT, || async {
        let marked = run(
            &browser,
            "const tiles = document.querySelectorAll('#calls .tile');
             return tiles.length > 0 && [...tiles].every(t => t.querySelector('.tile-stale'))",
        )
        .await;
        (marked == true).then_some(())
    })
    .await;
    for (width, height) in VIEWPORTS {
        set_viewport(&browser, width, height).await;
        let overlaps = run(&browser, OVERLAPS).await;
        save_screenshot(
            &browser,
            &std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("display-stale-{width}x{height}.png")),
        )
        .await;
        assert_eq!(overlaps, json!([]), "stale at {width}×{height}");
        let mark = text(&browser, "#calls .tile-stale").await;
        assert!(mark.starts_with("Stand 20"), "{mark}");
        let shown = run(
            &browser,
            "return document.querySelectorAll('#calls .tile').length",
        )
        .await;
        eprintln!("display page: stale at {width}×{height}: {shown} tiles of 12 calls");
    }
    names_are_large_and_whole(&browser, 12, false).await;
    browser.close().await.expect("browser closes");
}

/// Draws the tiles again `RENDERS` times as a new call does (`render()`
/// with nothing drawn yet): the median and longest time and the layouts
/// tried per draw (`tilesFitAt`, each a layout of the page at a new size).
const RENDER_COST: &str = r#"
const RENDERS = 15;
const original = tilesFitAt;
let layouts = 0;
window.tilesFitAt = (...args) => { layouts++; return original(...args); };
const times = [];
try {
    for (let i = 0; i < RENDERS; i++) {
        lastDrawn = "";
        const start = performance.now();
        render();
        times.push(performance.now() - start);
    }
} finally {
    window.tilesFitAt = original;
}
times.sort((a, b) => a - b);
return { median: times[Math.floor(RENDERS / 2)], max: times[RENDERS - 1], layouts: layouts / RENDERS };
"#;

/// Not a test: what a new call's drawing costs the page, with 1 to 9 tiles
/// at both viewports (`bench/display-page/run`, docs/performance.md). A
/// call is on the screen only after it: on a display's slower processor it
/// is a share of the promised second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: bench/display-page/run"]
async fn render_cost() {
    if skip_browser_tests("render_cost") {
        return;
    }
    let server = Server::start(Options::sandbox().time_zone("Europe/Berlin"));
    let driver = Chromedriver::start().await;
    let browser = driver.browser("render-cost", 1920, 1080).await;
    let me = display_via_test_page(&browser, server.base_url()).await;
    println!("| tiles | viewport | median ms | max ms | layouts per draw |");
    println!("|--:|---|--:|--:|--:|");
    for (count, (target, event)) in CALLS.iter().take(9).enumerate() {
        let calls = count + 1;
        open_and_wait(&server, &me, &browser, target, event, calls, true).await;
        for (width, height) in VIEWPORTS {
            set_viewport(&browser, width, height).await;
            let cost = run(&browser, RENDER_COST).await;
            let ms = |key: &str| cost[key].as_f64().unwrap_or(f64::NAN);
            println!(
                "| {calls} | {width}×{height} | {:.1} | {:.1} | {:.0} |",
                ms("median"),
                ms("max"),
                ms("layouts")
            );
        }
    }
}
