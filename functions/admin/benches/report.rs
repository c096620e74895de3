//! Benchmark of the quality report (issue 14): 30 days of a 200-bed care home
//! (300 calls a day, most answered by a presence), generated with a fixed
//! seed, stored through the store API; then the release `nurse-call-admin
//! report` is timed end to end on the embedded store (budget: under 1 s for
//! the HTML report), and on DynamoDB (moto) the requests its read takes are
//! counted. Prints a table (lines starting with `|`) for scripts/bench.
//!
//!   cargo bench -p nurse-call-admin --bench report               # both stores
//!   cargo bench -p nurse-call-admin --bench report -- --sqlite-only
//!
//! The DynamoDB part needs moto on PATH (scripts/test installs it). moto
//! copies a whole table on every transaction, so the month is not replayed
//! through the store's transactions there: the calls the embedded store holds
//! are written to moto as the call items of docs/data-model.md with
//! `BatchWriteItem`, and the report's read of them is counted.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration as Elapsed, Instant};

use chrono::{DateTime, Duration, NaiveDate, TimeZone, Utc};

use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use nurse_call_core::{
    AddressSnapshot, AdminStore, Call, ElementChange, ElementPolicy, ElementWrite, NewCall,
    OpenOutcome, Scope, Store, default_call_types, report::Period, wire_time::to_stored,
};

use nurse_call_dynamodb::{DynamoStore, TableNames, Timeouts};
use nurse_call_sqlite::SqliteStore;

const DAYS: u32 = 30;
const CALLS_PER_DAY: usize = 300;
const BEDS: usize = 200;
const BUDGET: Elapsed = Elapsed::from_secs(1);
const FIRST_DAY: (i32, u32, u32) = (2026, 3, 1);
const CENTRAL: &str = "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f";

/// splitmix64: a fixed, dependency-free sequence; the data is the same on
/// every run and machine.
struct Sequence(u64);

impl Sequence {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// An index into `weights`, chosen in proportion to them.
    fn weighted(&mut self, weights: &[u64]) -> usize {
        let mut pick = self.below(weights.iter().sum());
        for (i, weight) in weights.iter().enumerate() {
            if pick < *weight {
                return i;
            }
            pick -= weight;
        }
        weights.len() - 1
    }
}

/// One step of the generated month, applied in time order.
enum Step {
    Open {
        key: usize,
        call: NewCall,
    },
    Close {
        keys: Vec<usize>,
        address: String,
        at: DateTime<Utc>,
    },
}

fn zone() -> chrono_tz::Tz {
    chrono_tz::Europe::Berlin
}

fn first_day() -> NaiveDate {
    NaiveDate::from_ymd_opt(FIRST_DAY.0, FIRST_DAY.1, FIRST_DAY.2).unwrap()
}

fn last_day() -> NaiveDate {
    first_day() + Duration::days(i64::from(DAYS) - 1)
}

/// The month: calls over the day (busier mornings and evenings), three in
/// four answered by a presence after 30 s to 10 min.
fn month() -> Vec<(DateTime<Utc>, Step)> {
    const EVENTS: [(&str, u64); 6] = [
        ("Normalruf", 55),
        ("WC", 20),
        ("Funkelement-Ruf", 10),
        ("Notruf", 5),
        ("Hotelruf", 5),
        ("Geräteruf", 5),
    ];
    const HOURS: [u64; 24] = [
        3, 2, 2, 2, 3, 5, 9, 10, 9, 7, 6, 6, 7, 6, 5, 5, 6, 7, 9, 9, 8, 6, 5, 4,
    ];
    let weights = EVENTS.map(|(_, weight)| weight);
    let mut random = Sequence(14);
    let mut steps = Vec::new();
    let mut key = 0;
    for day in 0..DAYS {
        let date = first_day() + Duration::days(i64::from(day));
        let midnight = zone()
            .from_local_datetime(&date.and_hms_opt(0, 0, 0).unwrap())
            .earliest()
            .unwrap()
            .with_timezone(&Utc);
        for _ in 0..CALLS_PER_DAY {
            let bed = random.below(BEDS as u64) as usize + 1;
            let address = format!("Zimmer-{bed:03}");
            let hour = random.weighted(&HOURS) as i64;
            let opened_at = midnight + Duration::seconds(hour * 3600 + random.below(3600) as i64);
            let event = EVENTS[random.weighted(&weights)].0;
            let call = |event: &str, at: DateTime<Utc>| NewCall {
                address: address.clone(),
                event: event.to_string(),
                position: Some(format!("Bett {}", 1 + bed % 2)),
                section: Some(format!("Wohnbereich {}", 1 + (bed - 1) / 50)),
                attribute: None,
                element_code: format!("Z{bed:03}"),
                element_name: format!("Zimmer {bed:03}"),
                opened_at: at,
                opened_by: Some(CENTRAL.to_string()),
            };
            let mut keys = vec![key];
            steps.push((
                opened_at,
                Step::Open {
                    key,
                    call: call(event, opened_at),
                },
            ));
            key += 1;
            let closed_at = if random.below(4) < 3 {
                let presence_at = opened_at + Duration::seconds(30 + random.below(570) as i64);
                steps.push((
                    presence_at,
                    Step::Open {
                        key,
                        call: call("Anwesenheit", presence_at),
                    },
                ));
                keys.push(key);
                key += 1;
                presence_at + Duration::seconds(60 + random.below(840) as i64)
            } else {
                opened_at + Duration::seconds(60 + random.below(1140) as i64)
            };
            steps.push((
                closed_at,
                Step::Close {
                    keys,
                    address,
                    at: closed_at,
                },
            ));
        }
    }
    steps.sort_by_key(|(at, _)| *at);
    steps
}

/// Applies the month through the store API; returns (calls and presences
/// stored, generated calls skipped because the same event was still open on
/// the address).
async fn store_month(store: &dyn Store) -> (usize, usize) {
    let scope = Scope::installation();
    let mut opened_calls: HashMap<usize, Call> = HashMap::new();
    let mut skipped = 0;
    for (at, step) in month() {
        let change = |address: &str| ElementChange {
            address: address.to_string(),
            battery: None,
            position: None,
            reachable: None,
            at,
        };
        match step {
            Step::Open { key, call } => {
                let outcome = store
                    .open_call(
                        &call,
                        &AddressSnapshot::default(),
                        &ElementWrite::new(
                            &scope,
                            &change(&call.address),
                            ElementPolicy::CreateMissing,
                            &AddressSnapshot::default(),
                        ),
                    )
                    .await
                    .expect("open");
                match outcome {
                    OpenOutcome::Opened(opened) => {
                        opened_calls.insert(key, opened);
                    }
                    OpenOutcome::AlreadyOpen(_) => skipped += 1,
                    OpenOutcome::UnknownElement => panic!("CreateMissing answered UnknownElement"),
                }
            }
            Step::Close { keys, address, at } => {
                let close = AddressSnapshot {
                    element: None,
                    open_calls: keys
                        .iter()
                        .filter_map(|k| opened_calls.get(k).cloned())
                        .collect(),
                };
                store
                    .close_calls(
                        &close,
                        at,
                        Some(CENTRAL),
                        &ElementWrite::new(
                            &scope,
                            &change(&address),
                            ElementPolicy::CreateMissing,
                            &close,
                        ),
                    )
                    .await
                    .expect("close");
            }
        }
    }
    (opened_calls.len(), skipped)
}

/// The call item of docs/data-model.md (`call#<id>` / `call`, listed in
/// `by_scope` under `<scope>#call` by `<opened_at>#<id>`).
fn call_item(call: &Call) -> HashMap<String, AttributeValue> {
    let s = |text: &str| AttributeValue::S(text.to_string());
    let mut item = HashMap::from([
        ("pk".to_string(), s(&format!("call#{}", call.id))),
        ("sk".to_string(), s("call")),
        ("id".to_string(), AttributeValue::N(call.id.to_string())),
        ("scope".to_string(), s("installation")),
        ("address".to_string(), s(&call.address)),
        ("event".to_string(), s(&call.event)),
        ("element_code".to_string(), s(&call.element_code)),
        ("element_name".to_string(), s(&call.element_name)),
        ("opened_at".to_string(), s(&to_stored(call.opened_at))),
        ("list_pk".to_string(), s("installation#call")),
        (
            "list_sk".to_string(),
            s(&format!("{}#{:016}", to_stored(call.opened_at), call.id)),
        ),
    ]);
    let optional = [
        ("position", call.position.clone()),
        ("section", call.section.clone()),
        ("attribute", call.attribute.clone()),
        ("closed_at", call.closed_at.map(to_stored)),
        ("opened_by", call.opened_by.clone()),
        ("closed_by", call.closed_by.clone()),
    ];
    for (name, value) in optional {
        if let Some(value) = value {
            item.insert(name.to_string(), s(&value));
        }
    }
    item
}

/// Writes `calls` into the data table, 25 items per request.
async fn put_calls(store: &DynamoStore, calls: &[Call]) {
    for chunk in calls.chunks(25) {
        let mut requests: Vec<WriteRequest> = chunk
            .iter()
            .map(|call| {
                let put = PutRequest::builder()
                    .set_item(Some(call_item(call)))
                    .build()
                    .expect("an item");
                WriteRequest::builder().put_request(put).build()
            })
            .collect();
        while !requests.is_empty() {
            let output = store
                .client()
                .batch_write_item()
                .request_items(&store.tables().data, requests)
                .send()
                .await
                .expect("batch write");
            requests = output
                .unprocessed_items
                .and_then(|mut left| left.remove(&store.tables().data))
                .unwrap_or_default();
        }
    }
}

/// Runs the release admin command; returns the fastest wall time of `runs`.
fn time_admin(
    store_args: &[&str],
    envs: &[(&str, &str)],
    format: &str,
    out: &Path,
    runs: usize,
) -> Elapsed {
    let from = first_day().to_string();
    let to = last_day().to_string();
    (0..runs)
        .map(|_| {
            let started = Instant::now();
            let output = Command::new(env!("CARGO_BIN_EXE_nurse-call-admin"))
                .args(store_args)
                .envs(envs.iter().copied())
                .args([
                    "report", "--from", &from, "--to", &to, "--format", format, "--out",
                ])
                .arg(out)
                .output()
                .expect("nurse-call-admin runs");
            let elapsed = started.elapsed();
            assert!(output.status.success(), "report failed: {output:?}");
            elapsed
        })
        .min()
        .expect("at least one run")
}

fn ms(elapsed: Elapsed) -> String {
    format!("{:.0} ms", elapsed.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    let sqlite_only = std::env::args().any(|a| a == "--sqlite-only");
    let period = Period::days(first_day(), last_day(), zone()).unwrap();
    let mut failed = false;
    let mut rows = Vec::new();

    // The embedded store.
    let dir = tempfile::tempdir().expect("temporary folder");
    let store = SqliteStore::open_dir(dir.path()).expect("store");
    store.seed_call_types(&default_call_types()).await.unwrap();
    let started = Instant::now();
    let (stored, skipped) = store_month(&store).await;
    eprintln!(
        "embedded store: {stored} calls and presences stored ({skipped} skipped: same event \
         open) in {}",
        ms(started.elapsed())
    );
    let started = Instant::now();
    let read = store
        .calls_opened_between(&Scope::installation(), period.from, period.read_until())
        .await
        .unwrap();
    let read_time = started.elapsed();
    // Every stored call, for the DynamoDB half.
    let everything = store
        .calls_opened_between(
            &Scope::installation(),
            period.from - Duration::days(1),
            period.read_until() + Duration::days(2),
        )
        .await
        .unwrap();
    drop(store);
    let data_dir = dir.path().to_str().unwrap().to_string();
    let store_args = ["--data-dir", data_dir.as_str()];
    let envs = [("SERVICE_TIME_ZONE", "Europe/Berlin")];
    for format in ["html", "csv", "json"] {
        let out = dir.path().join(format!("report.{format}"));
        let elapsed = time_admin(&store_args, &envs, format, &out, 5);
        let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
        let verdict = match (format, elapsed < BUDGET) {
            ("html", true) => "< 1 s: met",
            ("html", false) => {
                failed = true;
                "< 1 s: MISSED"
            }
            _ => "",
        };
        rows.push(format!(
            "| embedded store, `report --format {format}` (process, best of 5) | {} | {} kB | {verdict} |",
            ms(elapsed),
            size / 1024,
        ));
    }
    rows.push(format!(
        "| embedded store, read of {} calls and presences (in process) | {} | | |",
        read.len(),
        ms(read_time)
    ));

    if !sqlite_only {
        let endpoint = store_conformance::moto::endpoint();
        let prefix = store_conformance::moto::unique_prefix();
        let store = DynamoStore::connect_with(
            Some(&endpoint),
            TableNames::with_prefix(&prefix),
            Timeouts::SLOW_STAND_IN,
        )
        .await;
        store.create_missing_tables().await.unwrap();
        store.seed_call_types(&default_call_types()).await.unwrap();
        let started = Instant::now();
        put_calls(&store, &everything).await;
        eprintln!(
            "moto: {} call items written in {}",
            everything.len(),
            ms(started.elapsed())
        );
        let before = store.requests_sent();
        let started = Instant::now();
        let read = store
            .calls_opened_between(&Scope::installation(), period.from, period.read_until())
            .await
            .unwrap();
        let requests = store.requests_sent() - before;
        rows.push(format!(
            "| DynamoDB (moto), read of {} calls and presences: `Query` pages on `by_scope` | {} | {requests} requests | |",
            read.len(),
            ms(started.elapsed())
        ));
        let out = dir.path().join("report-dynamodb.html");
        let envs = [
            ("SERVICE_TIME_ZONE", "Europe/Berlin"),
            ("TABLE_PREFIX", prefix.as_str()),
            ("DYNAMODB_ATTEMPT_TIMEOUT_MS", "30000"),
            ("DYNAMODB_OPERATION_TIMEOUT_MS", "60000"),
        ];
        let elapsed = time_admin(
            &["--dynamodb-endpoint", endpoint.as_str()],
            &envs,
            "html",
            &out,
            1,
        );
        rows.push(format!(
            "| DynamoDB (moto), `report --format html` (process) | {} | | moto, not AWS |",
            ms(elapsed)
        ));
    }

    println!();
    println!(
        "| report of {DAYS} days, {BEDS} beds, {CALLS_PER_DAY} calls a day | time | size / requests | budget |"
    );
    println!("|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
    if failed {
        eprintln!("the HTML report missed its budget of 1 s");
        std::process::exit(1);
    }
}
