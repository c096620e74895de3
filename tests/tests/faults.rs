//! Faults on the way to DynamoDB lose nothing (issue 24, DECISIONS §1: no
//! 2xx before the write is durable, every operation safe to repeat).
//!
//! The local server in production mode talks to moto through a
//! fault-injecting proxy ([`faults::proxy`]). First each kind of fault alone,
//! on every request, shows how the SDK and the store take it (a retry by the
//! SDK, by the store, and in the end a 503 with `Retry-After`, never a 500);
//! an open and a close whose transaction lands while no answer gets back,
//! sent again after their 503, find their own first try's write.
//! Then 16 writers, each with its own addresses and elements, open, close
//! and send element batches for half a minute while 10 % of all DynamoDB
//! requests meet a fault of any kind, retrying on 5xx and on no answer as
//! central systems do (the same request, the same body). Then the faults
//! stop, and every answer is normal again: the requests then in flight end
//! within one operation timeout beyond the slowest answer without faults,
//! every later one is 2xx at its first try. Last, the data table
//! is read from moto itself and held against what was acknowledged:
//!
//! - every acknowledged open is stored, with its event, once: a call record
//!   that no answer named is only allowed for an open that was never
//!   answered (none, in practice), so a retried open that stored a second
//!   call is caught;
//! - no acknowledged close is undone: each call opened before a close that
//!   was answered 2xx, and each call that answer named, is closed;
//! - at most one open call per address and event, each with its lock;
//! - every element batch is all or nothing: each answer shows the whole
//!   batch, and each writer's elements all show one batch, its last
//!   acknowledged one (or a later one whose answer never came).
//!
//! DynamoDB only: on SQLite it says that it is skipped.

mod faults {
    pub(crate) mod proxy;
}

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use blackbox_tests::*;
use faults::proxy::{Fault, FaultProxy, Plan, Tally};
use tokio::task::JoinSet;

const CONSUMER: &str = "3b0f8a52-9c41-4e7d-8d25-6f0e4b1a7c93";
const SECRET: &str = "faults-secret";

/// Concurrent writers, each with its own addresses and elements.
const WRITERS: usize = 16;
/// Call addresses of a writer: an open on one while the other is open.
const CALL_ADDRESSES: usize = 2;
/// Elements of a writer's batches.
const BATCH_ELEMENTS: usize = 3;
/// The events the writers open, by turns.
const EVENTS: [&str; 3] = ["Notruf", "WC", "Normalruf"];

/// How long the writers work under faults.
const LOAD: Duration = Duration::from_secs(30);
/// The share of DynamoDB requests that meet a fault during the load.
const FAULT_RATE: f64 = 0.10;
/// The seed of the proxy's draws: the same sequence of draws every run
/// (which of the concurrent requests meets which one is not).
const SEED: u64 = 24;
/// The writers go on this long after the faults stop: every one of them
/// sends requests after the stop, whatever its request in flight then.
const WRITE_ON: Duration = Duration::from_secs(12);

/// The SDK's timeouts the server runs with: the production values
/// (`Timeouts::AWS`, functions/store-dynamodb/src/client.rs). moto, serving
/// one request at a time, answers this load within a few hundred ms
/// (printed as "moto's answers"), so mostly the injected stalls time out.
const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(1500);
const OPERATION_TIMEOUT: Duration = Duration::from_secs(4);
/// A stall holds a request this long: past the attempt timeout.
const STALL: Duration = Duration::from_millis(2500);
/// The SDK's attempts per operation (`MAX_ATTEMPTS`) and the store's
/// transactions per request after a conflict (`TRANSACTION_ATTEMPTS`).
const SDK_ATTEMPTS: u64 = 3;
const STORE_TRANSACTIONS: u64 = 6;

/// A writer's pause before each request: without it the 16 writers keep
/// moto, which serves one request at a time, so busy that its own answers
/// come near the SDK's attempt timeout (median 0.11 s, slowest 1.5 s
/// measured flat out), and the faults would no longer be the test's alone.
const PACE: Duration = Duration::from_millis(1000);
/// A writer's tries of one request before it gives up on it.
const MAX_TRIES: u32 = 8;
/// A writer's wait for an answer, and its pause after none.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(15);
const PAUSE_AFTER_NO_ANSWER: Duration = Duration::from_secs(1);

/// The kinds' shares of the faults under load: a conflict can only meet a
/// transaction (a quarter of the requests), so it weighs more, to come up
/// some 10 to 15 times a run instead of 5.
fn weight_under_load(kind: Fault) -> u32 {
    if kind == Fault::TransactionConflict {
        3
    } else {
        1
    }
}

fn consumer() -> Consumer {
    Consumer::new(CONSUMER, SECRET)
}

fn call_address(writer: usize, index: usize) -> String {
    format!("F{writer}-C{index}")
}

fn batch_address(writer: usize, index: usize) -> String {
    format!("F{writer}-E{index}")
}

/// The elements the first phase writes (one kind of fault at a time), and
/// the address of its opens and closes in doubt.
const PROBE_ELEMENTS: [&str; 2] = ["FP-E0", "FP-E1"];
const PROBE_CALL: &str = "FP-C0";

// ---------------------------------------------------------------------------
// What the writers saw
// ---------------------------------------------------------------------------

/// Every answer the writers got, and the tries that got none.
#[derive(Debug, Default)]
struct Answers {
    /// HTTP requests sent (every try).
    sent: u64,
    by_status: BTreeMap<u16, u64>,
    /// 503s without a `Retry-After` header (must stay 0).
    unavailable_without_retry_after: u64,
    /// Tries without an answer (client timeout, connection error).
    no_answer: u64,
    /// Requests tried more than once.
    retried: u64,
    /// Requests given up after [`MAX_TRIES`].
    given_up: u64,
}

/// One request of a writer, from its first try to its last.
#[derive(Debug, Clone)]
struct Sent {
    /// The final status; `None` when the writer gave up.
    status: Option<u16>,
    body: Value,
    tries: u32,
    first_sent: Instant,
    answered: Instant,
}

impl Sent {
    fn acknowledged(&self) -> bool {
        self.status
            .is_some_and(|status| (200..300).contains(&status))
    }
}

/// What a writer did, in order.
#[derive(Debug, Clone)]
enum Step {
    Open {
        address: String,
        event: &'static str,
        sent: Sent,
    },
    Close {
        address: String,
        sent: Sent,
    },
    Batch {
        marker: String,
        sent: Sent,
    },
}

impl Step {
    fn sent(&self) -> &Sent {
        match self {
            Step::Open { sent, .. } | Step::Close { sent, .. } | Step::Batch { sent, .. } => sent,
        }
    }
}

struct Writer {
    index: usize,
    consumer: Consumer,
    client: reqwest::Client,
    base: String,
    answers: Arc<Mutex<Answers>>,
}

impl Writer {
    /// Sends `body` to `path` until it gets an answer that is not a 5xx,
    /// as a central system does: after a 503 it waits `Retry-After`, after
    /// another 5xx or no answer a second, and sends the same bytes again.
    async fn send(&self, path: &str, body: String) -> Sent {
        let first_sent = Instant::now();
        for tries in 1..=MAX_TRIES {
            {
                let mut answers = self.answers.lock().unwrap();
                answers.sent += 1;
                if tries == 2 {
                    answers.retried += 1;
                }
            }
            let result = self
                .client
                .post(format!("{}{path}", self.base))
                .header("Content-Type", "application/json")
                .body(body.clone())
                .send()
                .await;
            let answer = match result {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let retry_after = response
                        .headers()
                        .get("retry-after")
                        .and_then(|value| value.to_str().ok())
                        .and_then(|value| value.trim().parse::<u64>().ok());
                    response
                        .text()
                        .await
                        .ok()
                        .map(|text| (status, retry_after, text))
                }
                Err(_) => None,
            };
            let Some((status, retry_after, text)) = answer else {
                self.answers.lock().unwrap().no_answer += 1;
                tokio::time::sleep(PAUSE_AFTER_NO_ANSWER).await;
                continue;
            };
            {
                let mut answers = self.answers.lock().unwrap();
                *answers.by_status.entry(status).or_default() += 1;
                if status == 503 && retry_after.is_none() {
                    answers.unavailable_without_retry_after += 1;
                }
            }
            if status >= 500 {
                tokio::time::sleep(Duration::from_secs(retry_after.unwrap_or(1))).await;
                continue;
            }
            let body = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{path} answered {status} without JSON ({e}): {text}"));
            return Sent {
                status: Some(status),
                body,
                tries,
                first_sent,
                answered: Instant::now(),
            };
        }
        self.answers.lock().unwrap().given_up += 1;
        Sent {
            status: None,
            body: Value::Null,
            tries: MAX_TRIES,
            first_sent,
            answered: Instant::now(),
        }
    }

    async fn open(&self, address: &str, event: &'static str) -> Step {
        let body = self
            .consumer
            .body(address, &format!(r#"{{"event":"{event}"}}"#));
        let sent = self.send(DISPLAY, body).await;
        Step::Open {
            address: address.to_string(),
            event,
            sent,
        }
    }

    async fn close(&self, address: &str) -> Step {
        let body = self.consumer.body(address, r#"{"closed":true}"#);
        let sent = self.send(DISPLAY, body).await;
        Step::Close {
            address: address.to_string(),
            sent,
        }
    }

    /// A multi-form element request: every element of the writer gets the
    /// batch's marker as its position.
    async fn batch(&self, number: u64) -> Step {
        let marker = format!("w{}-b{number}", self.index);
        let items: Vec<String> = (0..BATCH_ELEMENTS)
            .map(|element| {
                format!(
                    r#"{{"target":"{}","position":"{marker}","battery":{}}}"#,
                    batch_address(self.index, element),
                    number % 101
                )
            })
            .collect();
        let body = self.consumer.multi_body(&format!("[{}]", items.join(",")));
        let sent = self.send(ELEMENT, body).await;
        if sent.acknowledged() {
            // The answer shows the whole batch.
            let elements = sent.body["data"].as_array().expect("the elements");
            assert_eq!(elements.len(), BATCH_ELEMENTS, "{}", sent.body);
            for element in elements {
                assert_eq!(element["position"], marker.as_str(), "{}", sent.body);
            }
        }
        Step::Batch { marker, sent }
    }

    /// Opens, closes and batches by turns until `until`.
    async fn work(self, until: Instant) -> Vec<Step> {
        let mut steps = Vec::new();
        let mut batches = 0;
        // Staggered starts: the writers' requests spread over the pace
        // instead of arriving together.
        let offset = PACE.mul_f64(self.index as f64 / WRITERS as f64);
        tokio::time::sleep(offset).await;
        for cycle in 0usize.. {
            let event = EVENTS[(self.index + cycle) % EVENTS.len()];
            for step in 0..6 {
                if Instant::now() >= until {
                    return steps;
                }
                tokio::time::sleep(PACE).await;
                steps.push(match step {
                    0 => self.open(&call_address(self.index, 0), event).await,
                    3 => self.close(&call_address(self.index, 0)).await,
                    2 => self.open(&call_address(self.index, 1), event).await,
                    5 => self.close(&call_address(self.index, 1)).await,
                    _ => {
                        batches += 1;
                        self.batch(batches).await
                    }
                });
            }
        }
        unreachable!("the cycles end with the time")
    }
}

// ---------------------------------------------------------------------------
// The data table, read from moto itself
// ---------------------------------------------------------------------------

/// Every item of `table`, from moto's JSON API (paged) without the proxy.
/// The service's own reads in production show open calls only; the call
/// records, locks and elements are read where docs/data-model.md puts them.
async fn scan(table: &str) -> Vec<Value> {
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("HTTP client");
    let region = ["AWS_REGION", "AWS_DEFAULT_REGION"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|value| !value.is_empty()))
        .unwrap_or_else(|| "eu-central-1".to_string());
    // moto reads the region from the credential scope; it checks no signature.
    let authorization = format!(
        "AWS4-HMAC-SHA256 Credential=local/20260105/{region}/dynamodb/aws4_request, \
         SignedHeaders=host;x-amz-target, Signature=0"
    );
    let mut items = Vec::new();
    let mut start: Option<Value> = None;
    loop {
        let mut request = json!({"TableName": table, "ConsistentRead": true});
        if let Some(key) = start.take() {
            request["ExclusiveStartKey"] = key;
        }
        let response = client
            .post(store_conformance::moto::endpoint())
            .header("content-type", "application/x-amz-json-1.0")
            .header("x-amz-target", "DynamoDB_20120810.Scan")
            .header("authorization", &authorization)
            .body(request.to_string())
            .send()
            .await
            .expect("moto answers");
        let status = response.status();
        let text = response.text().await.expect("moto's answer");
        assert!(status.is_success(), "Scan {table}: {status} {text}");
        let page: Value = serde_json::from_str(&text).expect("JSON");
        items.extend(page["Items"].as_array().cloned().unwrap_or_default());
        match page.get("LastEvaluatedKey") {
            Some(key) if !key.is_null() => start = Some(key.clone()),
            _ => return items,
        }
    }
}

/// Waits until call `id`'s first alarm look is stored: the call record no
/// longer due (a look in doubt is done again by the server's timer).
async fn wait_for_first_look(table: &str, id: i64) {
    let key = format!("call#{id}");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let looked = scan(table).await.iter().any(|item| {
            text_of(item, "pk").as_deref() == Some(key.as_str())
                && text_of(item, "sk").as_deref() == Some("call")
                && item.get("due_pk").is_none()
        });
        if looked {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "call {id}: its first alarm look was not stored within 15 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn text_of(item: &Value, key: &str) -> Option<String> {
    item[key]["S"].as_str().map(str::to_string)
}

fn number_of(item: &Value, key: &str) -> Option<i64> {
    item[key]["N"].as_str().and_then(|n| n.parse().ok())
}

#[derive(Debug)]
struct StoredCall {
    address: String,
    event: String,
    closed: bool,
}

/// The call records (by id), the open-call locks (address, event → id) and
/// the elements' positions (address → position) of the data table.
struct Stored {
    calls: HashMap<i64, StoredCall>,
    locks: Vec<(String, String, i64)>,
    positions: HashMap<String, Option<String>>,
}

async fn read_store(table: &str) -> Stored {
    let mut stored = Stored {
        calls: HashMap::new(),
        locks: Vec::new(),
        positions: HashMap::new(),
    };
    for item in scan(table).await {
        let (Some(pk), Some(sk)) = (text_of(&item, "pk"), text_of(&item, "sk")) else {
            continue;
        };
        let address = text_of(&item, "address").unwrap_or_default();
        if pk.starts_with("call#") && sk == "call" {
            let id = number_of(&item, "id").expect("a call's id");
            let call = StoredCall {
                address,
                event: text_of(&item, "event").expect("a call's event"),
                closed: text_of(&item, "closed_at").is_some(),
            };
            assert!(stored.calls.insert(id, call).is_none(), "call {id} twice");
        } else if let Some(event) = sk.strip_prefix("open#")
            && !pk.starts_with("open#")
        {
            let id = number_of(&item, "id").expect("a lock's call id");
            stored.locks.push((address, event.to_string(), id));
        } else if sk == "element" {
            stored.positions.insert(address, text_of(&item, "position"));
        }
    }
    stored
}

// ---------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn faults_on_the_way_to_dynamodb_lose_nothing() {
    if skip_unless_dynamodb(
        "faults",
        "it puts a fault-injecting proxy between the server and moto",
    ) {
        return;
    }
    let started = Instant::now();
    let proxy = FaultProxy::start(&store_conformance::moto::endpoint()).await;
    let mut seed = Seed::new().consumer(CONSUMER, &[SECRET], false);
    for writer in 0..WRITERS {
        for index in 0..CALL_ADDRESSES {
            seed = seed.element(&call_address(writer, index), "RC", "Ruf");
        }
        for index in 0..BATCH_ELEMENTS {
            seed = seed.element(&batch_address(writer, index), "EL", "Element");
        }
    }
    for address in PROBE_ELEMENTS.into_iter().chain([PROBE_CALL]) {
        seed = seed.element(address, "PR", "Probe");
    }
    let server = Server::start(
        Options::production(seed)
            .dynamodb_endpoint(&proxy.endpoint())
            .env(
                "DYNAMODB_ATTEMPT_TIMEOUT_MS",
                &ATTEMPT_TIMEOUT.as_millis().to_string(),
            )
            .env(
                "DYNAMODB_OPERATION_TIMEOUT_MS",
                &OPERATION_TIMEOUT.as_millis().to_string(),
            ),
    );
    let c = consumer();

    // Phase 1: each kind alone, on every request.
    let probe = |battery: u32| {
        let items: Vec<String> = PROBE_ELEMENTS
            .iter()
            .map(|address| format!(r#"{{"target":"{address}","battery":{battery}}}"#))
            .collect();
        format!("[{}]", items.join(","))
    };
    server.element_multi(&c, &probe(1)).await.expect_status(200);
    println!("each kind of fault alone, on every DynamoDB request, to one element batch:");
    for (number, kind) in Fault::ALL.into_iter().enumerate() {
        proxy.inject(Some(Plan {
            rate: 1.0,
            kinds: vec![(kind, 1)],
            stall: STALL,
            seed: SEED,
            only: None,
        }));
        let before = proxy.tally();
        let took = Instant::now();
        let response = server
            .element_multi(&c, &probe(u32::try_from(number).unwrap() + 2))
            .await;
        let took = took.elapsed();
        proxy.inject(None);
        let mut during = subtract(&proxy.tally(), &before);
        // The local server's alarm timers ask the due index (a `Query`)
        // every 250 ms, and its sweep of the central systems' links
        // (DECISIONS §19) reads the consumers (a `Scan`) every 2 s,
        // whatever the test does: not this request's.
        during.requests.remove("Query");
        during.requests.remove("Scan");
        let timers_faulted = during.faults_by_operation.remove("Query").unwrap_or(0)
            + during.faults_by_operation.remove("Scan").unwrap_or(0);
        let (requests, faulted) = (
            during.requests_total(),
            during.faults_total() - timers_faulted,
        );
        println!(
            "  {kind:?}: {} (Retry-After {:?}) after {} ({faulted} faulted) in {:.1} s",
            response.status,
            response.header("retry-after"),
            join(&during.requests),
            took.as_secs_f64()
        );
        assert_eq!(response.status, 503, "{kind:?}: {}", response.text);
        assert!(response.header("retry-after").is_some(), "{kind:?}");
        match kind {
            // Only a transaction meets it: the store reads the cancellation
            // reasons and tries again itself (the SDK does not retry a
            // cancellation), then gives up with a 503.
            Fault::TransactionConflict => {
                assert_eq!(
                    during.requests.get("TransactWriteItems"),
                    Some(&STORE_TRANSACTIONS),
                    "{kind:?}"
                );
                assert_eq!(faulted, STORE_TRANSACTIONS, "{kind:?}");
            }
            // The request's first DynamoDB request (the consumer's GetItem:
            // the local server caches nothing) is tried by the SDK until the
            // operation timeout ends a stalled attempt, early in the third
            // or before it.
            Fault::StallBeforeForwarding | Fault::StallAfterForwarding => {
                assert!((2..=SDK_ATTEMPTS).contains(&requests), "{kind:?}");
                assert_eq!(faulted, requests, "{kind:?}");
                assert!(
                    took < OPERATION_TIMEOUT + Duration::from_secs(2),
                    "{kind:?}"
                );
            }
            // Throttling, a 500 and a reset: the SDK's three attempts.
            _ => {
                assert_eq!(requests, SDK_ATTEMPTS, "{kind:?}");
                assert_eq!(faulted, SDK_ATTEMPTS, "{kind:?}");
            }
        }
    }

    // Writes in doubt: the transaction reaches moto, its answer never
    // reaches the server, on every try; then the client sends the request
    // again, as it does after a 503.
    let mut probe_calls = Vec::new();
    for kind in [Fault::ResetAfterForwarding, Fault::InternalServerError] {
        let in_doubt = Plan {
            rate: 1.0,
            kinds: vec![(kind, 1)],
            stall: STALL,
            seed: SEED,
            only: Some("TransactWriteItems"),
        };
        // A presence: a type without alarm, whose first look (a
        // transaction of its own, in doubt too, then done again by the
        // timer) only ends the alarm it was opened with. The close waits
        // for it: a look landing between the close's read and its write
        // cancels the close (it checks the alarm's changes), and the
        // second close would do it instead of finding it done.
        let open = c.body(PROBE_CALL, r#"{"event":"Anwesenheit"}"#);
        proxy.inject(Some(in_doubt.clone()));
        let first = server.post(DISPLAY, open.clone()).await;
        proxy.inject(None);
        first.expect_status(503);
        let again = server.post(DISPLAY, open).await;
        // The first try's call, open: its lock stopped the retried
        // transactions and now answers the repeated request.
        again.expect_status(200);
        let id = again.data()["id"].as_i64().expect("the call's id");
        wait_for_first_look(&format!("{}data", server.table_prefix()), id).await;
        let close = c.body(PROBE_CALL, r#"{"closed":true}"#);
        proxy.inject(Some(in_doubt));
        let first = server.post(DISPLAY, close.clone()).await;
        proxy.inject(None);
        first.expect_status(503);
        let again = server.post(DISPLAY, close).await;
        // Closed by the first try: the repeated close finds nothing open.
        again.expect_status(200);
        assert_eq!(again.data(), json!([]), "{kind:?}");
        println!(
            "  {kind:?} on every transaction: an open 503, sent again 200 with call {id}; \
             its close 503, sent again 200 []"
        );
        probe_calls.push(id);
    }

    // Phase 2: the writers, under faults of every kind.
    let answers: Arc<Mutex<Answers>> = Arc::default();
    let tally_before_load = proxy.tally();
    proxy.inject(Some(Plan {
        rate: FAULT_RATE,
        kinds: Fault::ALL
            .iter()
            .map(|kind| (*kind, weight_under_load(*kind)))
            .collect(),
        stall: STALL,
        seed: SEED,
        only: None,
    }));
    let load_started = Instant::now();
    let faults_stop = load_started + LOAD;
    // The writers go on after the faults stop, for the recovery's figures.
    let writers_stop = faults_stop + WRITE_ON;
    let mut writers = JoinSet::new();
    for index in 0..WRITERS {
        let writer = Writer {
            index,
            consumer: c.clone(),
            client: reqwest::Client::builder()
                .no_proxy()
                .timeout(CLIENT_TIMEOUT)
                .build()
                .expect("HTTP client"),
            base: server.base_url().to_string(),
            answers: Arc::clone(&answers),
        };
        writers.spawn(async move { (index, writer.work(writers_stop).await) });
    }
    tokio::time::sleep_until(faults_stop.into()).await;
    proxy.inject(None);
    let faults_stopped = Instant::now();
    let tally_at_stop = proxy.tally();
    let mut steps: Vec<Vec<Step>> = vec![Vec::new(); WRITERS];
    while let Some(finished) = writers.join_next().await {
        let (index, done) = finished.expect("writer finished");
        steps[index] = done;
    }
    let load_took = faults_stopped - load_started;

    // Recovery: the requests in flight when the faults stopped end (their
    // last try answered) within `recovery_bound`, and every request sent after the
    // stop is answered 2xx on its first try: from then on every answer is
    // normal. Every writer sends some.
    let mut recovered_after = Duration::ZERO;
    let mut after_stop: Vec<Duration> = Vec::new();
    for (index, writer_steps) in steps.iter().enumerate() {
        let mut sent_after_stop = false;
        for sent in writer_steps.iter().map(Step::sent) {
            if sent.first_sent < faults_stopped {
                recovered_after =
                    recovered_after.max(sent.answered.saturating_duration_since(faults_stopped));
                continue;
            }
            sent_after_stop = true;
            after_stop.push(sent.answered - sent.first_sent);
            assert!(
                sent.acknowledged() && sent.tries == 1,
                "writer {index}: a request sent after the faults stopped got {:?} after {} tries",
                sent.status,
                sent.tries
            );
        }
        assert!(
            sent_after_stop,
            "writer {index} sent nothing after the faults stopped"
        );
    }
    after_stop.sort();
    // A request in flight at the stop ends within one operation timeout (a
    // stalled attempt, a Retry-After) beyond what a request takes without
    // faults. The latter is measured, not assumed: moto answers one request
    // at a time, a second or more apart under these 16 writers, and slower
    // still when the machine is busy; a server that stayed broken after the
    // faults (a stuck connection, an exhausted retry quota) exceeds it.
    let recovery_bound = OPERATION_TIMEOUT + after_stop.last().copied().unwrap_or_default();

    // The store, read from moto itself.
    let stored = read_store(&format!("{}data", server.table_prefix())).await;
    let figures = check_store(&steps, &stored);
    // The opens in doubt stored one call each, closed.
    let mut on_probe: Vec<(i64, bool)> = stored
        .calls
        .iter()
        .filter(|(_, call)| call.address == PROBE_CALL)
        .map(|(id, call)| (*id, call.closed))
        .collect();
    on_probe.sort();
    probe_calls.sort();
    assert_eq!(
        on_probe,
        probe_calls.iter().map(|id| (*id, true)).collect::<Vec<_>>(),
        "the opens in doubt and their closes"
    );

    let answers = answers.lock().unwrap();
    let load_tally = subtract(&tally_at_stop, &tally_before_load);
    let requests = load_tally.requests_total();
    let injected = load_tally.faults_total();
    println!(
        "{WRITERS} writers, {:.1} s of load with faults at {:.0} % of DynamoDB requests \
         (attempt timeout {:.1} s, operation {:.1} s, stalls {:.1} s), then {:.1} s without",
        load_took.as_secs_f64(),
        FAULT_RATE * 100.0,
        ATTEMPT_TIMEOUT.as_secs_f64(),
        OPERATION_TIMEOUT.as_secs_f64(),
        STALL.as_secs_f64(),
        (Instant::now() - faults_stopped).as_secs_f64(),
    );
    println!(
        "  API requests sent: {} ({} opens, {} closes, {} element batches; {} retried, {} given up)",
        answers.sent,
        figures.opens,
        figures.closes,
        figures.batches,
        answers.retried,
        answers.given_up
    );
    println!(
        "  answers by status: {:?}; 503 without Retry-After: {}; no answer: {}",
        answers.by_status, answers.unavailable_without_retry_after, answers.no_answer
    );
    println!(
        "  DynamoDB requests under faults: {requests} ({}), faults injected: {injected} ({:.1} %)",
        join(&load_tally.requests),
        100.0 * injected as f64 / requests.max(1) as f64
    );
    println!(
        "  faults by kind: {}",
        load_tally
            .faults
            .iter()
            .map(|(kind, count)| format!("{kind:?} {count}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  faults by operation: {}",
        join(&load_tally.faults_by_operation)
    );
    println!(
        "  moto's answers: median {:.3} s, 99th percentile {:.3} s, slowest {:.3} s",
        load_tally.upstream_quantile(0.5).as_secs_f64(),
        load_tally.upstream_quantile(0.99).as_secs_f64(),
        load_tally.upstream_quantile(1.0).as_secs_f64()
    );
    println!(
        "  store: {} calls; {} opens acknowledged ({} as already open: an earlier try had \
         stored it), {} closes acknowledged, {} batches acknowledged; no duplicate, no close \
         undone, no half batch",
        stored.calls.len(),
        figures.acknowledged_opens,
        figures.reopened,
        figures.acknowledged_closes,
        figures.acknowledged_batches
    );
    println!(
        "  normal answers again {:.2} s after the faults stopped (bound {:.2} s): by then the \
         requests in flight had been answered, and the {} sent after the stop all got 2xx on \
         the first try (median {:.3} s, slowest {:.3} s); whole test {:.1} s",
        recovered_after.as_secs_f64(),
        recovery_bound.as_secs_f64(),
        after_stop.len(),
        after_stop[after_stop.len() / 2].as_secs_f64(),
        after_stop.last().copied().unwrap_or_default().as_secs_f64(),
        started.elapsed().as_secs_f64()
    );

    let unexpected: Vec<u16> = answers
        .by_status
        .keys()
        .copied()
        .filter(|status| !matches!(status, 200 | 201 | 422 | 503))
        .collect();
    assert!(
        unexpected.is_empty(),
        "answers other than 2xx, 422 and 503: {:?}",
        answers.by_status
    );
    assert_eq!(answers.unavailable_without_retry_after, 0);
    for kind in Fault::ALL {
        assert!(
            load_tally.faults.get(&kind).copied().unwrap_or(0) > 0,
            "no {kind:?} was injected"
        );
    }
    let rate = injected as f64 / requests as f64;
    assert!(
        (FAULT_RATE * 0.7..FAULT_RATE * 1.3).contains(&rate),
        "{injected} faults in {requests} requests"
    );
    assert!(
        recovered_after <= recovery_bound,
        "normal answers only {recovered_after:?} after the faults stopped \
         (bound {recovery_bound:?}: one operation timeout beyond the slowest \
         answer to a request sent after the stop)"
    );
}

/// What `later` counted since `earlier`.
fn subtract(later: &Tally, earlier: &Tally) -> Tally {
    let minus = |a: &BTreeMap<String, u64>, b: &BTreeMap<String, u64>| {
        a.iter()
            .map(|(key, count)| (key.clone(), count - b.get(key).copied().unwrap_or(0)))
            .filter(|(_, count)| *count > 0)
            .collect()
    };
    Tally {
        requests: minus(&later.requests, &earlier.requests),
        forwarded: later.forwarded - earlier.forwarded,
        faults: later
            .faults
            .iter()
            .map(|(kind, count)| {
                (
                    *kind,
                    count - earlier.faults.get(kind).copied().unwrap_or(0),
                )
            })
            .filter(|(_, count)| *count > 0)
            .collect(),
        faults_by_operation: minus(&later.faults_by_operation, &earlier.faults_by_operation),
        upstream_times: later.upstream_times[earlier.upstream_times.len()..].to_vec(),
    }
}

fn join(counts: &BTreeMap<String, u64>) -> String {
    counts
        .iter()
        .map(|(key, count)| format!("{key} {count}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Debug, Default)]
struct Figures {
    opens: usize,
    closes: usize,
    batches: usize,
    acknowledged_opens: usize,
    reopened: usize,
    acknowledged_closes: usize,
    acknowledged_batches: usize,
}

/// Holds the store against what the writers were told (see the module's
/// comment); panics on the first difference.
fn check_store(steps: &[Vec<Step>], stored: &Stored) -> Figures {
    let mut figures = Figures::default();
    for (writer, writer_steps) in steps.iter().enumerate() {
        // Per address: the opens acknowledged since its last acknowledged
        // close, and the opens never answered.
        let mut acknowledged: HashSet<i64> = HashSet::new();
        let mut unanswered_opens: HashMap<&str, usize> = HashMap::new();
        let mut open_since_close: HashMap<&str, Vec<i64>> = HashMap::new();
        let mut last_batch: Option<&str> = None;
        let mut batches_since: Vec<&str> = Vec::new();
        for step in writer_steps {
            match step {
                Step::Open {
                    address,
                    event,
                    sent,
                } => {
                    figures.opens += 1;
                    match sent.status {
                        // Never answered: stored or not.
                        None => {
                            *unanswered_opens.entry(address).or_default() += 1;
                            continue;
                        }
                        // Refused (a 422): nothing written.
                        Some(status) if !(200..300).contains(&status) => continue,
                        Some(_) => {}
                    }
                    assert!(
                        matches!(sent.status, Some(200 | 201)),
                        "open on {address}: {:?} {}",
                        sent.status,
                        sent.body
                    );
                    figures.acknowledged_opens += 1;
                    if sent.status == Some(200) {
                        figures.reopened += 1;
                    }
                    let id = sent.body["data"]["id"].as_i64().expect("the call's id");
                    let call = stored
                        .calls
                        .get(&id)
                        .unwrap_or_else(|| panic!("acknowledged open {id} on {address} is lost"));
                    assert_eq!(
                        (call.address.as_str(), call.event.as_str()),
                        (address.as_str(), *event),
                        "call {id}"
                    );
                    acknowledged.insert(id);
                    open_since_close.entry(address).or_default().push(id);
                }
                Step::Close { address, sent } => {
                    figures.closes += 1;
                    if !sent.acknowledged() {
                        continue;
                    }
                    figures.acknowledged_closes += 1;
                    let named = sent.body["data"]
                        .as_array()
                        .expect("the closed calls")
                        .iter()
                        .map(|call| call["id"].as_i64().expect("an id"));
                    let before = open_since_close
                        .remove(address.as_str())
                        .unwrap_or_default();
                    for id in named.chain(before) {
                        let call = stored.calls.get(&id).unwrap_or_else(|| {
                            panic!("call {id}, closed on {address}, is not stored")
                        });
                        assert!(
                            call.closed,
                            "call {id} on {address}: its close was acknowledged, it is open"
                        );
                    }
                }
                Step::Batch { marker, sent } => {
                    figures.batches += 1;
                    if sent.acknowledged() {
                        figures.acknowledged_batches += 1;
                        last_batch = Some(marker);
                        batches_since.clear();
                    } else if sent.status.is_none() {
                        // Never answered: applied or not.
                        batches_since.push(marker);
                    }
                }
            }
        }

        // No call that no answer named, beyond the opens never answered.
        for index in 0..CALL_ADDRESSES {
            let address = call_address(writer, index);
            let unnamed: Vec<i64> = stored
                .calls
                .iter()
                .filter(|(id, call)| call.address == address && !acknowledged.contains(id))
                .map(|(id, _)| *id)
                .collect();
            let allowed = unanswered_opens.get(address.as_str()).copied().unwrap_or(0);
            assert!(
                unnamed.len() <= allowed,
                "{address}: calls {unnamed:?} were stored but never acknowledged \
                 ({allowed} opens were never answered): a retried open stored a second call"
            );
        }

        // All or nothing: the writer's elements show one batch, its last
        // acknowledged one or a later one that was never answered.
        let positions: HashSet<Option<&str>> = (0..BATCH_ELEMENTS)
            .map(|index| {
                stored
                    .positions
                    .get(&batch_address(writer, index))
                    .unwrap_or_else(|| panic!("element {} is gone", batch_address(writer, index)))
                    .as_deref()
            })
            .collect();
        assert_eq!(
            positions.len(),
            1,
            "writer {writer}'s elements show parts of several batches: {positions:?}"
        );
        let shown = positions.into_iter().next().flatten();
        if let Some(last) = last_batch {
            assert!(
                shown == Some(last) || batches_since.iter().any(|later| shown == Some(*later)),
                "writer {writer}'s elements show {shown:?}, its last acknowledged batch was {last}"
            );
        }
    }

    // At most one open call per address and event, each with its lock.
    let mut open: HashMap<(&str, &str), Vec<i64>> = HashMap::new();
    for (id, call) in &stored.calls {
        if !call.closed {
            open.entry((&call.address, &call.event))
                .or_default()
                .push(*id);
        }
    }
    for ((address, event), ids) in &open {
        assert_eq!(
            ids.len(),
            1,
            "{address}: several open {event} calls {ids:?}"
        );
    }
    let mut locked: HashMap<(&str, &str), i64> = HashMap::new();
    for (address, event, id) in &stored.locks {
        assert!(
            locked.insert((address, event), *id).is_none(),
            "{address}: two {event} locks"
        );
        assert_eq!(
            open.get(&(address.as_str(), event.as_str())),
            Some(&vec![*id]),
            "{address}: the {event} lock names call {id}, which is not the open call"
        );
    }
    assert_eq!(locked.len(), open.len(), "an open call without its lock");
    figures
}
