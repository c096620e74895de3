//! The embedded store on a crash (issue 16): every write the server answered
//! is still there after a kill -9 under load and a restart on the same data
//! folder (DECISIONS §1: no 2xx before the write is durable). SQLite only:
//! on DynamoDB durability is the service's, and the local server holds
//! nothing of its own to lose.
//!
//! A kill shows that no answer runs ahead of its commit (the store thread's
//! group commit answers a batch only after it committed) and that the file
//! recovers; what `synchronous=FULL` adds, surviving a power loss, needs the
//! machine to go down and is checked by the pragma itself
//! (functions/store-sqlite/src/schema.rs).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use blackbox_tests::*;
use tokio::task::JoinSet;

/// Clients sending at once, each its own addresses.
const SENDERS: usize = 16;
/// Kill once this many opens were answered (well into the load).
const ACKNOWLEDGED_BEFORE_KILL: usize = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_answered_open_survives_a_kill_under_load() {
    if skip_unless_sqlite("every_answered_open_survives_a_kill_under_load") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp folder");
    let options = Options::sandbox().data_dir(dir.path());
    let mut server = Server::start(options.clone());
    let c = server.new_consumer().await;

    // Each sender opens a call on a new address, again and again, until the
    // server is gone; it keeps every open answered with 201.
    let answered: Arc<Mutex<Vec<(String, i64)>>> = Arc::default();
    let mut senders = JoinSet::new();
    for sender in 0..SENDERS {
        let client = server.client().clone();
        let url = format!("{}{DISPLAY}", server.base_url());
        let (c, answered) = (c.clone(), Arc::clone(&answered));
        senders.spawn(async move {
            for i in 0.. {
                let address = format!("K{sender}-{i}");
                let body = c.body(&address, r#"{"event":"Notruf"}"#);
                let sent = client
                    .post(&url)
                    .header("Content-Type", "application/json")
                    .body(body)
                    .send()
                    .await;
                // No answer (or no whole one): the server is gone.
                let Ok(response) = sent else { return };
                let status = response.status().as_u16();
                let Ok(text) = response.text().await else {
                    return;
                };
                assert_eq!(status, 201, "open on {address} answered {status}: {text}");
                let id = serde_json::from_str::<Value>(&text).expect("JSON body")["data"]["id"]
                    .as_i64()
                    .expect("call id");
                answered.lock().unwrap().push((address, id));
            }
        });
    }
    let started = Instant::now();
    while answered.lock().unwrap().len() < ACKNOWLEDGED_BEFORE_KILL {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the load did not get {ACKNOWLEDGED_BEFORE_KILL} opens answered within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let killed_after = started.elapsed();
    let status = server.kill();
    assert_eq!(status.code(), None, "killed by a signal, not exited");
    while let Some(sender) = senders.join_next().await {
        sender.expect("sender finished");
    }
    let answered = answered.lock().unwrap().clone();
    assert!(answered.len() >= ACKNOWLEDGED_BEFORE_KILL);

    // Restarted on the same file: each answered call is there, still open
    // (opening it again answers 200 with the same call).
    let server = Server::start(options);
    let mut missing = Vec::new();
    for (address, id) in &answered {
        let again = server.display(&c, address, r#"{"event":"Notruf"}"#).await;
        if again.status != 200 || again.data()["id"] != *id {
            missing.push((address.clone(), *id, again.status, again.text.clone()));
        }
    }
    assert!(
        missing.is_empty(),
        "{} of {} answered opens are lost after the kill: {missing:?}",
        missing.len(),
        answered.len()
    );
    // The figures docs/security.md shows beside the fault test's.
    println!(
        "{SENDERS} senders, kill -9 after {:.1} s: {} opens answered 201 before it, all {} \
         there after the restart",
        killed_after.as_secs_f64(),
        answered.len(),
        answered.len()
    );
}
