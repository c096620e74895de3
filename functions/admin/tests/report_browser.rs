//! The HTML report in a real browser: headless Chromium renders the file a
//! `nurse-call-admin report` wrote, and its screenshot must show both charts
//! (the bars of the hour chart in their colour, the median bars of the call
//! types in theirs), not just contain SVG markup.
//!
//! Needs Debian's `chromium` (`scripts/test` installs it); `CHROMIUM`
//! overrides the path, `SKIP_BROWSER_TESTS=1` skips with a note.
//!
//! `cargo test -p nurse-call-admin --test report_browser -- --ignored sample_picture`
//! renews `docs/report-sample.png` (the picture in docs/report.md).

use std::path::{Path, PathBuf};
use std::process::Command;

use chrono::{Duration, TimeZone, Utc};

use nurse_call_core::{
    AddressSnapshot, AdminStore, ElementChange, ElementPolicy, ElementWrite, NewCall, OpenOutcome,
    Scope, Store, default_call_types,
};
use nurse_call_sqlite::SqliteStore;

/// The hour chart's bar colour (report.css `--bar`).
const BAR: [u8; 3] = [0x2f, 0x6f, 0xae];
/// Normalruf's colour in the seeded call types: its median bar.
const NORMALRUF: [u8; 3] = [0xf1, 0xc4, 0x0f];

fn chromium() -> PathBuf {
    std::env::var_os("CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

fn skipped(test: &str) -> bool {
    if std::env::var("SKIP_BROWSER_TESTS").is_ok_and(|v| v == "1") {
        eprintln!("{test}: skipped (SKIP_BROWSER_TESTS=1)");
        return true;
    }
    assert!(
        chromium().is_file(),
        "{} not found: install Debian's chromium (as scripts/test does), set CHROMIUM, \
         or SKIP_BROWSER_TESTS=1",
        chromium().display()
    );
    false
}

/// A week of calls (2026-11-02 to 2026-11-08) in a fresh embedded store:
/// every room calls a few times a day, most calls answered by a presence.
async fn a_week(dir: &Path) {
    let store = SqliteStore::open_dir(dir).expect("store");
    store.seed_call_types(&default_call_types()).await.unwrap();
    let scope = Scope::installation();
    let events = [
        "Normalruf",
        "Normalruf",
        "WC",
        "Normalruf",
        "Notruf",
        "Funkelement-Ruf",
    ];
    let start = Utc.with_ymd_and_hms(2026, 11, 1, 23, 0, 0).unwrap();
    let mut n: i64 = 0;
    for day in 0..7 {
        for slot in 0..60 {
            n += 1;
            let room = 1 + (n * 37) % 120;
            let address = format!("Zimmer-{room:03}");
            // Busier mornings and evenings: slots bunch around 7:00 and 19:00.
            let hour = [1, 6, 7, 7, 8, 9, 11, 13, 15, 18, 19, 19, 20, 22][(n % 14) as usize];
            let opened_at = start
                + Duration::days(day)
                + Duration::hours(hour)
                + Duration::minutes((slot * 7) % 60);
            let event = events[(n % 6) as usize];
            let call = |event: &str, at| NewCall {
                address: address.clone(),
                event: event.into(),
                position: None,
                section: Some(format!("Wohnbereich {}", 1 + room / 40)),
                attribute: None,
                element_code: format!("Z{room:03}"),
                element_name: format!("Zimmer {room:03}"),
                opened_at: at,
                opened_by: Some("6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f".into()),
            };
            let change = |at| ElementChange {
                address: address.clone(),
                battery: None,
                position: None,
                reachable: None,
                at,
            };
            let mut opened_calls = Vec::new();
            let waited = Duration::seconds(40 + (n * 53) % 560);
            for (event, at) in [(event, opened_at), ("Anwesenheit", opened_at + waited)] {
                if event == "Anwesenheit" && n % 4 == 0 {
                    continue; // closed without a presence
                }
                if let OpenOutcome::Opened(opened) = store
                    .open_call(
                        &call(event, at),
                        &AddressSnapshot::default(),
                        &ElementWrite::new(
                            &scope,
                            &change(at),
                            ElementPolicy::CreateMissing,
                            &AddressSnapshot::default(),
                        ),
                    )
                    .await
                    .unwrap()
                {
                    opened_calls.push(opened);
                }
            }
            let closed_at = opened_at + waited + Duration::seconds(60 + (n * 31) % 600);
            let snapshot = AddressSnapshot {
                element: None,
                open_calls: opened_calls,
            };
            store
                .close_calls(
                    &snapshot,
                    closed_at,
                    Some("6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f"),
                    &ElementWrite::new(
                        &scope,
                        &change(closed_at),
                        ElementPolicy::CreateMissing,
                        &snapshot,
                    ),
                )
                .await
                .unwrap();
        }
    }
}

/// Writes the week's HTML report and has Chromium render it to `png`.
async fn render(png: &Path) {
    let dir = tempfile::tempdir().unwrap();
    a_week(dir.path()).await;
    let html = dir.path().join("bericht.html");
    let output = Command::new(env!("CARGO_BIN_EXE_nurse-call-admin"))
        .env_remove("DYNAMODB_ENDPOINT")
        .env("SERVICE_TIME_ZONE", "Europe/Berlin")
        .arg("--data-dir")
        .arg(dir.path())
        .args([
            "report",
            "--from",
            "2026-11-02",
            "--to",
            "2026-11-08",
            "--format",
            "html",
            "--out",
        ])
        .arg(&html)
        .output()
        .expect("nurse-call-admin runs");
    assert!(output.status.success(), "{output:?}");

    let profile = dir.path().join("profile");
    let mut browser = Command::new(chromium());
    browser.args([
        "--headless",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        "--window-size=1100,2000",
    ]);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // Chromium refuses to run its sandbox as root.
        browser.arg("--no-sandbox");
    }
    let output = browser
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium runs");
    assert!(
        png.is_file(),
        "chromium wrote no screenshot: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// How many pixels of the screenshot have colour `rgb` (±2 per channel).
fn pixels_of(png: &Path, rgb: [u8; 3]) -> usize {
    let mut decoder = png::Decoder::new(std::fs::File::open(png).unwrap());
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buffer = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut buffer).expect("one frame");
    let samples = frame.color_type.samples();
    buffer[..frame.buffer_size()]
        .chunks_exact(samples)
        .filter(|pixel| {
            pixel[..3]
                .iter()
                .zip(rgb)
                .all(|(have, want)| have.abs_diff(want) <= 2)
        })
        .count()
}

#[tokio::test]
async fn chromium_shows_both_charts() {
    if skipped("chromium_shows_both_charts") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("bericht.png");
    render(&png).await;
    // 24 columns of which most have calls; each at least some 20 × 5 px.
    let bars = pixels_of(&png, BAR);
    assert!(bars > 2_000, "the hour chart's bars: {bars} pixels");
    let median = pixels_of(&png, NORMALRUF);
    assert!(median > 300, "Normalruf's median bar: {median} pixels");
}

#[tokio::test]
#[ignore = "renews docs/report-sample.png"]
async fn sample_picture() {
    if skipped("sample_picture") {
        return;
    }
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/report-sample.png");
    render(&docs).await;
    eprintln!("wrote {}", docs.display());
}
