//! Retention of closed calls (issue 16, docs/security.md): the local server
//! reads `CALL_RETENTION_DAYS` (a whole number of days from 1), and its purge
//! (at start, then hourly) deletes the calls closed longer ago than that on
//! the embedded store; open calls stay, however old.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use blackbox_tests::*;

#[test]
fn an_invalid_retention_stops_the_server_with_an_error() {
    for bad in ["0", "30d", "1.5"] {
        let dir = tempfile::tempdir().expect("temp folder");
        let output = Command::new(server_binary())
            .args(["--listen", "127.0.0.1:0", "--mode", "sandbox"])
            .arg("--data-dir")
            .arg(dir.path())
            .env("CALL_RETENTION_DAYS", bad)
            .stdin(Stdio::null())
            .output()
            .expect("server runs");
        assert!(!output.status.success(), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&format!(
                "invalid CALL_RETENTION_DAYS \"{bad}\": expected a whole number of days"
            )),
            "{stderr}"
        );
    }
}

/// A wire time `days` days before now, in the server's zone (Europe/Berlin).
fn days_ago(days: i64) -> String {
    (now_in("Europe/Berlin") - chrono::Duration::days(days))
        .format("%Y-%m-%d %H:%M:%S")
        .to_string()
}

#[tokio::test]
async fn closed_calls_past_retention_are_purged_and_open_ones_stay() {
    if skip_unless_sqlite("closed_calls_past_retention_are_purged_and_open_ones_stay") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp folder");
    let options = Options::sandbox()
        .data_dir(dir.path())
        .env("CALL_RETENTION_DAYS", "1");
    let mut first = Server::start(options.clone());
    let c = first.new_consumer().await;
    let open = |created_at: &str| format!(r#"{{"event":"Notruf","created_at":"{created_at}"}}"#);
    // Opened 3 days ago, closed 2 days ago: past a retention of 1 day.
    let old = first.display(&c, "OLD", &open(&days_ago(3))).await;
    old.expect_status(201);
    first
        .display(
            &c,
            "OLD",
            &format!(r#"{{"closed":true,"closed_at":"{}"}}"#, days_ago(2)),
        )
        .await
        .expect_status(200);
    // Opened 3 days ago and still open: never purged.
    let still_open = first.display(&c, "OPEN", &open(&days_ago(3))).await;
    still_open.expect_status(201);
    // Closed just now: within retention.
    let recent = first.display(&c, "NEW", r#"{"event":"WC"}"#).await;
    recent.expect_status(201);
    first
        .display(&c, "NEW", r#"{"closed":true}"#)
        .await
        .expect_status(200);
    assert_eq!(first.terminate().code(), Some(0));

    // The purge runs at start.
    let server = Server::start(options);
    let ids = |state: &Value| -> Vec<i64> {
        state["calls"]
            .as_array()
            .expect("calls")
            .iter()
            .map(|call| call["id"].as_i64().expect("id"))
            .collect()
    };
    let old_id = old.data()["id"].as_i64().unwrap();
    let started = Instant::now();
    let state = loop {
        let state = server.state(&c).await;
        if !ids(&state).contains(&old_id) {
            break state;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the call closed 2 days ago is still there: {state}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut left = ids(&state);
    left.sort();
    let mut expected = vec![
        still_open.data()["id"].as_i64().unwrap(),
        recent.data()["id"].as_i64().unwrap(),
    ];
    expected.sort();
    assert_eq!(left, expected, "{state}");
    while !server
        .logs()
        .iter()
        .any(|line| line.contains(r#""message":"closed calls past retention removed""#))
    {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no log line of the purge: {:?}",
            server.logs()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
