//! Write-to-display latency of the live feed (issue "Displays", bench/live/run):
//! DISPLAYS live clients connected to a running local server in sandbox mode,
//! then CALLS signed opens and closes, paced; for every change and every
//! display, the time from sending the write to the display receiving its
//! message. Prints a markdown table; exits 1 when p99 exceeds the budget or a
//! display missed a change.
//!
//!   live_latency BASE_URL [DISPLAYS] [CALLS] [BUDGET_P99_MS]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use blackbox_tests::Consumer;
use futures_util::StreamExt;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// When each change was sent: `(type, address)` → instant.
type Sent = Arc<Mutex<HashMap<(String, String), Instant>>>;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let base = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "http://127.0.0.1:3000".into());
    let displays: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(100);
    let calls: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(100);
    let budget_ms: f64 = args.get(4).and_then(|a| a.parse().ok()).unwrap_or(250.0);

    let http = reqwest::Client::new();
    let pair: Value = http
        .post(format!("{base}/api/v1/sandbox/consumers"))
        .send()
        .await
        .expect("sandbox consumer")
        .json()
        .await
        .expect("JSON");
    let consumer = Consumer::new(
        pair["data"]["consumer"].as_str().expect("consumer"),
        pair["data"]["secret"].as_str().expect("secret"),
    );

    let sent: Sent = Arc::default();
    let ws = base.replacen("http://", "ws://", 1);
    let mut readers = Vec::new();
    for _ in 0..displays {
        let mut request = format!("{ws}/api/v1/display/live")
            .into_client_request()
            .expect("request");
        request
            .headers_mut()
            .insert("Cookie", consumer.cookie().parse().expect("cookie"));
        let (mut socket, _) = tokio_tungstenite::connect_async(request)
            .await
            .expect("live socket");
        let sent = Arc::clone(&sent);
        readers.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(2 * calls);
            while latencies.len() < 2 * calls {
                let Ok(Some(Ok(frame))) =
                    tokio::time::timeout(Duration::from_secs(30), socket.next()).await
                else {
                    break;
                };
                let arrived = Instant::now();
                let Message::Text(text) = frame else { continue };
                let message: Value = serde_json::from_str(text.as_str()).expect("JSON");
                let kind = message["type"].as_str().unwrap_or_default();
                if !kind.starts_with("call.") {
                    continue;
                }
                let key = (
                    kind.to_string(),
                    message["call"]["address"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                );
                if let Some(at) = sent.lock().expect("sent").get(&key) {
                    latencies.push(arrived - *at);
                }
            }
            latencies
        }));
    }

    // Paced like a busy ward: 20 changes a second.
    let mut pace = tokio::time::interval(Duration::from_millis(50));
    for i in 0..calls {
        let address = format!("Zimmer-{i}");
        for (kind, data) in [
            ("call.opened", r#"{"event":"Normalruf"}"#),
            ("call.closed", r#"{"closed":true}"#),
        ] {
            pace.tick().await;
            sent.lock()
                .expect("sent")
                .insert((kind.to_string(), address.clone()), Instant::now());
            let status = http
                .post(format!("{base}/api/v1/display"))
                .header("Content-Type", "application/json")
                .body(consumer.body(&address, data))
                .send()
                .await
                .expect("write")
                .status();
            assert!(status.is_success(), "write answered {status}");
        }
    }

    let mut all = Vec::new();
    let mut incomplete = 0;
    for reader in readers {
        let latencies = reader.await.expect("reader");
        if latencies.len() < 2 * calls {
            incomplete += 1;
        }
        all.extend(latencies);
    }
    all.sort();
    let at = |q: f64| all[((all.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1000.0;
    let (p50, p99, max) = (at(0.5), at(0.99), at(1.0));
    let met = p99 <= budget_ms && incomplete == 0;
    println!(
        "| displays | changes | messages | p50 ms | p99 ms | max ms | budget p99 | displays missing a change | |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {displays} | {} | {} | {p50:.1} | {p99:.1} | {max:.1} | ≤ {budget_ms} ms | {incomplete} | {} |",
        2 * calls,
        all.len(),
        if met { "met" } else { "MISSED" }
    );
    if met {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}
