//! The banner of a silent central system (DECISIONS §19) on the display
//! page and the staff page, in headless Chromium against the local server:
//! "Keine Verbindung zur Rufanlage <name> seit HH:MM – neue Rufe kommen
//! hier nicht an", full width, appears when the consumer (heartbeat 30 s,
//! the shortest, from the seed file) is silent, 2 × 30 s + 10 s after its
//! last sign of life (which the seed puts 45 s before the server's start:
//! silent 25 s after it) and found within the sweep's 5 s, and goes on its
//! next signed request; the page's own "Verbindung unterbrochen" stays
//! hidden meanwhile (its socket is fine). Times printed.

mod common;

use std::time::{Duration, Instant};

use blackbox_tests::*;
use common::*;
use fantoccini::Client;

const CENTRAL: &str = "6a0f7f0e-2b1c-4d3e-8f4a-5b6c7d8e9f01";
const SECRET: &str = "central-secret";
/// How long before the server's start the consumer was last heard.
const HEARD_AGO: Duration = Duration::from_secs(45);
/// Silent 2 × 30 s + 10 s after the last sign of life, found within 10 s,
/// read by the page at once (live) or within its re-read.
const SHOWN_WITHIN: Duration = Duration::from_secs(70 - 45 + 10 + 5);
/// A page's answer to `consumer.back`.
const GONE_WITHIN: Duration = Duration::from_secs(5);

/// The silence banner's lines and whether it and the page's own banner show.
async fn banners(browser: &Client) -> Value {
    run(
        browser,
        "const box = document.getElementById('silence');
         const own = document.getElementById('banner');
         const bounds = box.getBoundingClientRect();
         return { lines: [...box.querySelectorAll('p')].map(p => p.textContent),
                  shown: !box.hidden, role: box.getAttribute('role'),
                  full_width: bounds.width >= document.documentElement.clientWidth - 1,
                  width: [bounds.width, document.documentElement.clientWidth, innerWidth],
                  own_banner: !own.hidden };",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_banners_of_a_silent_central_system_appear_and_go() {
    if skip_browser_tests("the_banners_of_a_silent_central_system_appear_and_go") {
        return;
    }
    let started = Instant::now();
    let central = Consumer::new(CENTRAL, SECRET);
    let last_seen = chrono::Utc::now() - chrono::Duration::from_std(HEARD_AGO).expect("a duration");
    let server = Server::production(
        Seed::new()
            .consumer(CENTRAL, &[SECRET], false)
            .heartbeat_last_seen(CENTRAL, 30, last_seen)
            .element("Zimmer-1", "Z1", "Zimmer 1"),
    );
    let base = server.base_url().to_string();
    let display = server
        .admin(&["displays", "create", "--name", "Flur", "--json"])
        .success()
        .json()["token"]
        .as_str()
        .expect("token")
        .to_string();
    let staff = server
        .admin(&[
            "staff", "create", "--name", "Tessa", "--group", "Technik", "--json",
        ])
        .success()
        .json()["token"]
        .as_str()
        .expect("token")
        .to_string();

    let driver = Chromedriver::start().await;
    let display_page = driver.browser("display", 1280, 800).await;
    display_page
        .goto(&format!("{base}/display#token={display}"))
        .await
        .expect("display page loads");
    let staff_page = driver.browser("staff", 390, 844).await;
    staff_page
        .goto(&format!("{base}/staff#token={staff}"))
        .await
        .expect("staff page loads");

    let expected_start = format!("Keine Verbindung zur Rufanlage consumer {CENTRAL} seit ");
    for (page, browser) in [("display", &display_page), ("staff", &staff_page)] {
        let shown = shows(
            &format!("the {page} page's silence banner"),
            started,
            SHOWN_WITHIN,
            || async {
                let now = banners(browser).await;
                (now["shown"] == true).then_some(now)
            },
        )
        .await;
        println!(
            "{page} page: banner {:.1} s after the start (silent at {} s)",
            started.elapsed().as_secs_f64(),
            70 - HEARD_AGO.as_secs()
        );
        let line = shown["lines"][0].as_str().expect("a line").to_string();
        assert!(line.starts_with(&expected_start), "{line}");
        assert!(
            line.ends_with(" – neue Rufe kommen hier nicht an"),
            "{line}"
        );
        let time = &line[expected_start.len()..expected_start.len() + 5];
        assert!(
            time.as_bytes()[2] == b':' && time.replace(':', "").bytes().all(|b| b.is_ascii_digit()),
            "HH:MM in {line}"
        );
        assert_eq!(shown["role"], "alert");
        assert_eq!(shown["full_width"], true, "{shown}");
        assert_eq!(
            shown["own_banner"], false,
            "not 'Verbindung unterbrochen': {shown}"
        );
    }

    // Any signed request ends it.
    let back = Instant::now();
    let answer = server
        .element(&central, "Zimmer-1", r#"{"battery":80}"#)
        .await;
    answer.expect_status(200);
    for (page, browser) in [("display", &display_page), ("staff", &staff_page)] {
        shows(
            &format!("the {page} page without its silence banner"),
            back,
            GONE_WITHIN,
            || async { (banners(browser).await["shown"] == false).then_some(()) },
        )
        .await;
        println!(
            "{page} page: banner gone {:.2} s after the request",
            back.elapsed().as_secs_f64()
        );
    }
    display_page.close().await.expect("browser closes");
    staff_page.close().await.expect("browser closes");
}
