//! Many concurrent opens and closes on one address (DECISIONS §1, §5): nothing
//! lost, nothing duplicated, nothing closed before it was opened, every close
//! answered is stored.

use std::collections::{HashMap, HashSet};

use blackbox_tests::*;
use tokio::task::JoinSet;

const REQUESTS: usize = 72;
const EVENTS: [&str; 3] = ["Notruf", "WC", "Normalruf"];

#[derive(Debug)]
enum Sent {
    Open(&'static str),
    Close,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_opens_and_closes_on_one_address_stay_consistent() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let target = "00:de:ad:be:ef:00";
    // All requests at once queue behind each other at the store (moto
    // serialises every request; under cargo lambda watch each one is also an
    // invocation), so the last may wait longer than the suite's usual 30 s
    // (it once did, on a busy machine). This test is about what is stored,
    // not how fast: each request may take up to two minutes.
    let patient_client = http_client_waiting(std::time::Duration::from_secs(120));

    let mut tasks = JoinSet::new();
    for i in 0..REQUESTS {
        let sent = if i % 4 == 3 {
            Sent::Close
        } else {
            Sent::Open(EVENTS[i % EVENTS.len()])
        };
        let data = match &sent {
            Sent::Open(event) => format!(r#"{{"event":"{event}","battery":{}}}"#, i % 100),
            Sent::Close => r#"{"closed":true}"#.to_string(),
        };
        let body = c.body(target, &data);
        let client = patient_client.clone();
        let url = format!("{}{DISPLAY}", server.base_url());
        tasks.spawn(async move {
            let response = client
                .post(url)
                .header("Content-Type", "application/json")
                .body(body)
                .send()
                .await
                .expect("request reaches the server");
            let status = response.status().as_u16();
            let text = response.text().await.expect("body");
            (sent, status, text)
        });
    }

    let mut opened: Vec<(i64, &'static str)> = Vec::new();
    let mut reopened: Vec<(i64, &'static str)> = Vec::new();
    let mut closed_by_response: HashMap<i64, String> = HashMap::new();
    while let Some(result) = tasks.join_next().await {
        let (sent, status, text) = result.expect("task finished");
        let body: Value = serde_json::from_str(&text).expect("JSON body");
        match sent {
            Sent::Open(event) => {
                assert!(
                    matches!(status, 200 | 201),
                    "open answered {status}: {text}"
                );
                let id = body["data"]["id"].as_i64().expect("call id");
                assert_eq!(body["data"]["closed_at"], Value::Null, "{text}");
                match status {
                    201 => opened.push((id, event)),
                    _ => reopened.push((id, event)),
                }
            }
            Sent::Close => {
                assert_eq!(status, 200, "close answered {status}: {text}");
                for call in body["data"].as_array().expect("closed calls") {
                    let id = call["id"].as_i64().unwrap();
                    let closed_at = call["closed_at"].as_str().unwrap().to_string();
                    let previous = closed_by_response.insert(id, closed_at);
                    assert!(previous.is_none(), "call {id} closed by two requests");
                }
            }
        }
    }
    assert!(!opened.is_empty());
    eprintln!(
        "{} opened, {} re-opened, {} closed by close responses",
        opened.len(),
        reopened.len(),
        closed_by_response.len()
    );

    let state = server.state(&c).await;
    let calls = state["calls"].as_array().expect("calls");
    let stored: HashMap<i64, &Value> = calls
        .iter()
        .map(|call| (call["id"].as_i64().unwrap(), call))
        .collect();
    assert_eq!(stored.len(), calls.len(), "ids are unique in the store");

    // None lost: every 201 is stored with its event; every 200 names a stored
    // call of the same event.
    let opened_ids: HashSet<i64> = opened.iter().map(|(id, _)| *id).collect();
    assert_eq!(opened_ids.len(), opened.len(), "every 201 has its own id");
    for (id, event) in opened.iter().chain(&reopened) {
        let call = stored
            .get(id)
            .unwrap_or_else(|| panic!("call {id} answered but not stored"));
        assert_eq!(call["type"]["name"], *event);
        assert_eq!(call["address"], target);
    }
    // Nothing stored that no 201 announced.
    let stored_ids: HashSet<i64> = stored.keys().copied().collect();
    assert_eq!(stored_ids, opened_ids);

    // None duplicated: at most one open call per event.
    for event in EVENTS {
        let open = calls
            .iter()
            .filter(|call| call["type"]["name"] == event && call["closed_at"].is_null())
            .count();
        assert!(open <= 1, "{open} open {event} calls");
    }

    for call in calls {
        let id = call["id"].as_i64().unwrap();
        match call["closed_at"].as_str() {
            Some(closed_at) => {
                // Never closed before it was opened.
                let opened_at = wire_time(call["opened_at"].as_str().unwrap());
                assert!(wire_time(closed_at) >= opened_at, "{call}");
                // Only a close request closes, and it said so.
                assert_eq!(
                    closed_by_response.get(&id).map(String::as_str),
                    Some(closed_at),
                    "call {id} closed in the store but by no close response"
                );
            }
            None => assert!(
                !closed_by_response.contains_key(&id),
                "call {id} reported closed but open in the store"
            ),
        }
    }

    // The address is still usable: one close closes whatever is open.
    let open_now = calls.iter().filter(|c| c["closed_at"].is_null()).count();
    let response = server.display(&c, target, r#"{"closed":true}"#).await;
    response.expect_status(200);
    assert_eq!(response.data().as_array().unwrap().len(), open_now);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_reopens_of_one_event_store_one_call() {
    let server = Server::sandbox();
    let c = server.new_consumer().await;
    let mut tasks = JoinSet::new();
    for i in 0..50 {
        let body = c.body("same", &format!(r#"{{"event":"Notruf","battery":{i}}}"#));
        let client = server.client().clone();
        let url = format!("{}{DISPLAY}", server.base_url());
        tasks.spawn(async move {
            let response = client
                .post(url)
                .header("Content-Type", "application/json")
                .body(body)
                .send()
                .await
                .expect("request reaches the server");
            let status = response.status().as_u16();
            let body: Value = response.json().await.expect("JSON body");
            assert!(
                matches!(status, 200 | 201),
                "open answered {status}: {body}"
            );
            (status, body["data"]["id"].as_i64().expect("call id"))
        });
    }
    let mut created = 0;
    let mut ids = HashSet::new();
    while let Some(result) = tasks.join_next().await {
        let (status, id) = result.expect("task finished");
        if status == 201 {
            created += 1;
        }
        ids.insert(id);
    }
    assert_eq!(created, 1, "exactly one request opened the call");
    assert_eq!(ids.len(), 1, "every answer names the same call");
    let state = server.state(&c).await;
    assert_eq!(state["calls"].as_array().unwrap().len(), 1);
}
