//! The load benchmark's webhook receiver (`bench/load/run` with
//! `WEBHOOK=1`): an alarm server that costs as little CPU as an HTTP server
//! can, so that the benchmark measures the service's own cost of sending
//! (the Python receivers of `bench/webhooks` cost a core at a few thousand
//! deliveries a second, on the two cores the server and wrk share).
//!
//! `webhook-sink PORTS_FILE`: listens on a free loopback port, writes it to
//! `PORTS_FILE`, answers every `POST` with 200 and counts it; `GET /count`
//! answers the count. Verifying deliveries is the test suite's job
//! (tests/receivers/webhook_receiver.py), not this one's.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::extract::State;
use axum::routing::{get, post};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let Some(ports_file) = std::env::args().nth(1) else {
        eprintln!("usage: webhook-sink PORTS_FILE");
        std::process::exit(2);
    };
    let received = Arc::new(AtomicU64::new(0));
    let app = Router::new()
        .route("/count", get(count))
        .fallback(post(receive))
        .with_state(received);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    std::fs::write(&ports_file, format!("{}\n", listener.local_addr()?.port()))?;
    axum::serve(listener, app).await
}

async fn receive(State(received): State<Arc<AtomicU64>>) -> &'static str {
    received.fetch_add(1, Ordering::Relaxed);
    "{}"
}

async fn count(State(received): State<Arc<AtomicU64>>) -> String {
    format!("{{\"received\":{}}}\n", received.load(Ordering::Relaxed))
}
