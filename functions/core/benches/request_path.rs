//! The in-process request path of each endpoint (issue 7), without a real
//! store: [`serve_endpoint`] as the Lambda functions call it (body checks,
//! envelope parse, compaction, HMAC verification, validation, the handler,
//! response serialisation), on the state they build (the 60 s cache in front
//! of the store), with a small in-memory [`Store`] below that answers at once.
//!
//! `bench/request-path/run` runs this at the release opt-level and at 3 and
//! checks the medians against the budgets. By hand:
//!
//! ```sh
//! cargo bench -p nurse-call-core --bench request_path
//! ```
//!
//! The async handlers are driven by a current-thread tokio runtime through
//! criterion's `to_async`, which enters the runtime once per sample. Each
//! iteration is timed on its own (`BatchSize::PerIteration`): the request is
//! built before the clock starts, and the answer is dropped after it stops,
//! at once, so answers do not pile up in memory as in batched timing. Two
//! `overhead/` cases show what runtime and timing cost: the same open polled
//! once without any runtime, and a request that is only handed through.
//!
//! No tracing subscriber is installed, so the two log lines of a request cost
//! next to nothing here; `context/display_open_logged` adds the JSON
//! subscriber of the functions writing to a sink, to show what logging adds.

use std::collections::{HashMap, VecDeque};
use std::hint::black_box;
use std::pin::pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Duration, Utc};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use http::{Method, header};

use nurse_call_core::{
    AddressSnapshot, ApiRequest, ApiResponse, AppState, Call, CallType, CallTypeItem, CloseOutcome,
    Consumer, DEFAULT_TTL, Element, ElementBatch, ElementChange, ElementPolicy, ElementWrite,
    ElementsOutcome, Endpoint, HashMismatch, Mode, NewCall, OpenOutcome, SandboxStore, Scope,
    Settings, Store, StoreError, credentials::Stored, default_call_types, parse_time_zone,
    serve_endpoint, signature::sign_sha256,
};

const CONSUMER_ID: &str = "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f";
const SECRET: &str = "my-secret";
const ADDRESS: &str = "Zimmer-101";
/// Items of the multi-form element request (the most the API accepts).
const MULTI_ITEMS: usize = 100;

/// A store that keeps everything in memory and never waits: one consumer,
/// the default call types, registered elements, and one call (`Notruf`) open
/// on [`ADDRESS`]. Reads and writes follow the trait's contract, but writes
/// are not kept (every request sees the same state), so that each iteration
/// does the same work.
struct MemoryStore {
    consumer: Consumer,
    call_types: Vec<CallType>,
    elements: HashMap<String, Element>,
    open_calls: Vec<Call>,
    next_id: AtomicI64,
    mismatches: Mutex<VecDeque<HashMismatch>>,
}

impl MemoryStore {
    fn new(consumer: Consumer, now: DateTime<Utc>) -> Self {
        let mut elements = HashMap::new();
        let mut register = |address: String, code: String, name: String| {
            let element = Element {
                address: address.clone(),
                code,
                name,
                battery: Some(100.0),
                position: None,
                reachable: Some(true),
                updated_at: now - Duration::hours(2),
                version: 1,
            };
            elements.insert(address, element);
        };
        register(ADDRESS.into(), "Z101".into(), "Zimmer 101, Bett 1".into());
        for n in 1..=MULTI_ITEMS {
            register(multi_address(n), format!("Z{n:03}"), format!("Zimmer {n}"));
        }
        let open_calls = vec![Call {
            id: 1,
            address: ADDRESS.into(),
            event: "Notruf".into(),
            position: Some("Bett 1".into()),
            section: None,
            attribute: None,
            element_code: "Z101".into(),
            element_name: "Zimmer 101, Bett 1".into(),
            opened_at: now - Duration::minutes(5),
            closed_at: None,
            opened_by: Some(CONSUMER_ID.into()),
            closed_by: None,
            alarm: None,
        }];
        MemoryStore {
            consumer,
            call_types: default_call_types(),
            elements,
            open_calls,
            next_id: AtomicI64::new(2),
            mismatches: Mutex::new(VecDeque::new()),
        }
    }

    /// The element after `change`, or `None` when it is unknown and must exist.
    fn changed(&self, change: &ElementChange, policy: ElementPolicy) -> Option<Element> {
        let mut element = match (self.elements.get(&change.address), policy) {
            (Some(element), _) => element.clone(),
            (None, ElementPolicy::CreateMissing) => {
                Element::unregistered(&change.address, change.at)
            }
            (None, ElementPolicy::MustExist) => return None,
        };
        element.apply(change);
        Some(element)
    }
}

fn read_only() -> StoreError {
    StoreError::Internal("the benchmark store is read-only here".into())
}

#[async_trait]
impl Store for MemoryStore {
    async fn stored_consumer(&self, id: &str) -> Result<Option<Stored<Consumer>>, StoreError> {
        Ok((id == self.consumer.id).then(|| Stored::Usable(self.consumer.clone())))
    }

    async fn call_type_items(&self) -> Result<Vec<CallTypeItem>, StoreError> {
        Ok(self.call_types.iter().map(CallTypeItem::from).collect())
    }

    async fn snapshot(&self, _scope: &Scope, address: &str) -> Result<AddressSnapshot, StoreError> {
        Ok(AddressSnapshot {
            element: self.elements.get(address).cloned(),
            open_calls: self
                .open_calls
                .iter()
                .filter(|call| call.address == address)
                .cloned()
                .collect(),
        })
    }

    async fn open_call(
        &self,
        call: &NewCall,
        snapshot: &AddressSnapshot,
        element: &ElementWrite,
    ) -> Result<OpenOutcome, StoreError> {
        if self.changed(&element.change, element.policy).is_none() {
            return Ok(OpenOutcome::UnknownElement);
        }
        if let Some(open) = snapshot.open_call_of(&call.event) {
            return Ok(OpenOutcome::AlreadyOpen(open.clone()));
        }
        if let Some(open) = self
            .open_calls
            .iter()
            .find(|open| open.address == call.address && open.event == call.event)
        {
            return Ok(OpenOutcome::AlreadyOpen(open.clone()));
        }
        Ok(OpenOutcome::Opened(
            call.opened(self.next_id.fetch_add(1, Ordering::Relaxed)),
        ))
    }

    async fn close_calls(
        &self,
        snapshot: &AddressSnapshot,
        closed_at: DateTime<Utc>,
        closed_by: Option<&str>,
        element: &ElementWrite,
    ) -> Result<CloseOutcome, StoreError> {
        let address = element.address();
        if self.changed(&element.change, element.policy).is_none() {
            return Ok(CloseOutcome::UnknownElement);
        }
        Ok(CloseOutcome::Closed(
            snapshot
                .closable(closed_at)
                .filter(|call| call.address == address)
                .map(|call| Call {
                    closed_at: Some(closed_at),
                    closed_by: closed_by.map(str::to_string),
                    ..call.clone()
                })
                .collect(),
        ))
    }

    async fn update_elements(&self, batch: &ElementBatch) -> Result<ElementsOutcome, StoreError> {
        let mut updated = Vec::with_capacity(batch.changes.len());
        let mut unknown = Vec::new();
        for change in &batch.changes {
            match self.changed(change, batch.policy) {
                Some(element) => updated.push(element),
                None => unknown.push(change.address.clone()),
            }
        }
        Ok(if unknown.is_empty() {
            ElementsOutcome::Updated(updated)
        } else {
            ElementsOutcome::Unknown(unknown)
        })
    }

    async fn open_calls(&self, _scope: &Scope) -> Result<Vec<Call>, StoreError> {
        Ok(self.open_calls.to_vec())
    }

    async fn elements(&self, _scope: &Scope) -> Result<Vec<Element>, StoreError> {
        Ok(self.elements.values().cloned().collect())
    }

    async fn stored_display(
        &self,
        _token_hash: &str,
    ) -> Result<Option<Stored<nurse_call_core::Display>>, StoreError> {
        Ok(None)
    }
}

#[async_trait]
impl SandboxStore for MemoryStore {
    async fn create_consumer(&self, _consumer: &Consumer) -> Result<(), StoreError> {
        Err(read_only())
    }

    async fn recent_calls(&self, _scope: &Scope, limit: usize) -> Result<Vec<Call>, StoreError> {
        Ok(self.open_calls.iter().take(limit).cloned().collect())
    }

    async fn recent_elements(
        &self,
        _scope: &Scope,
        limit: usize,
    ) -> Result<Vec<Element>, StoreError> {
        Ok(self.elements.values().take(limit).cloned().collect())
    }

    async fn purge_expired(&self, _now: DateTime<Utc>) -> Result<u64, StoreError> {
        Ok(0)
    }

    async fn record_hash_mismatch(
        &self,
        _scope: &Scope,
        mismatch: &HashMismatch,
    ) -> Result<(), StoreError> {
        let mut kept = self.mismatches.lock().unwrap_or_else(|e| e.into_inner());
        kept.push_front(mismatch.clone());
        kept.truncate(HashMismatch::KEPT);
        Ok(())
    }

    async fn recent_hash_mismatches(
        &self,
        _scope: &Scope,
        limit: usize,
    ) -> Result<Vec<HashMismatch>, StoreError> {
        let kept = self.mismatches.lock().unwrap_or_else(|e| e.into_inner());
        Ok(kept.iter().take(limit).cloned().collect())
    }
}

fn multi_address(n: usize) -> String {
    format!("Zimmer-{n:03}")
}

/// The benchmark's consumer: a fixed id and secret, no expiry in production.
fn consumer(mode: Mode) -> Consumer {
    let mut consumer = nurse_call_core::new_sandbox_consumer();
    consumer.id = CONSUMER_ID.into();
    consumer.name = "Zentrale Station 1".into();
    consumer.secrets = vec![SECRET.into()];
    if mode == Mode::Production {
        consumer.expires_at = None;
    }
    consumer
}

/// The state a Lambda function builds at a cold start, on the memory store.
fn state(mode: Mode) -> AppState {
    let store = MemoryStore::new(consumer(mode), Utc::now());
    let store = Arc::new(store);
    let settings = Settings {
        mode,
        time_zone: parse_time_zone(Settings::DEFAULT_TIME_ZONE).expect("a known zone"),
        call_retention: Default::default(),
        supervision: nurse_call_core::Thresholds::default(),
        live_url: None,
        staff: Default::default(),
    };
    AppState::new(store, settings).with_cache(DEFAULT_TTL)
}

/// A signed body: `data` is the compact JSON text the client signed.
fn signed_body(target: Option<&str>, data: &str) -> String {
    let message = format!("{}.{CONSUMER_ID}.{data}", target.unwrap_or(""));
    let hash = sign_sha256(SECRET, &message);
    match target {
        Some(target) => format!(
            r#"{{"target":"{target}","consumer":"{CONSUMER_ID}","hash":"{hash}","data":{data}}}"#
        ),
        None => format!(r#"{{"consumer":"{CONSUMER_ID}","hash":"{hash}","data":{data}}}"#),
    }
}

/// One request of a case; built outside the timed part.
#[derive(Clone)]
struct Case {
    endpoint: Endpoint,
    method: Method,
    uri: &'static str,
    body: Bytes,
    /// The status the case must answer with.
    status: u16,
}

impl Case {
    fn post(endpoint: Endpoint, uri: &'static str, body: String, status: u16) -> Self {
        Case {
            endpoint,
            method: Method::POST,
            uri,
            body: Bytes::from(body),
            status,
        }
    }

    fn request(&self) -> ApiRequest {
        let mut builder = http::Request::builder()
            .method(self.method.clone())
            .uri(self.uri);
        if self.method == Method::POST {
            builder = builder.header(header::CONTENT_TYPE, "application/json");
        }
        builder.body(self.body.clone()).expect("a valid request")
    }
}

/// (a) Open a Normalruf with battery and position, as in the README.
fn display_open() -> Case {
    let data = r#"{"event":"Normalruf","battery":80.0,"position":"Bett 1"}"#;
    Case::post(
        Endpoint::Display,
        "/api/v1/display?include=type",
        signed_body(Some(ADDRESS), data),
        201,
    )
}

/// (b) Close every call on the address (one is open).
fn display_close() -> Case {
    Case::post(
        Endpoint::Display,
        "/api/v1/display",
        signed_body(Some(ADDRESS), r#"{"closed":true}"#),
        200,
    )
}

/// (c) One element, every status field.
fn element_single() -> Case {
    let data = r#"{"battery":75.5,"position":"Station 3, Flur B","reachable":true}"#;
    Case::post(
        Endpoint::Element,
        "/api/v1/element",
        signed_body(Some(ADDRESS), data),
        200,
    )
}

/// (d) The multi form with the most items allowed, each a different element.
fn element_multi() -> Case {
    let items: Vec<String> = (1..=MULTI_ITEMS)
        .map(|n| {
            format!(
                r#"{{"target":"{}","battery":{}.5,"position":"Station {}, Flur A","reachable":{}}}"#,
                multi_address(n),
                n % 100,
                n % 7,
                n % 5 != 0
            )
        })
        .collect();
    let data = format!("[{}]", items.join(","));
    Case::post(
        Endpoint::Element,
        "/api/v1/element",
        signed_body(None, &data),
        200,
    )
}

/// (e) The call type list.
fn call_types() -> Case {
    Case {
        endpoint: Endpoint::CallTypes,
        method: Method::GET,
        uri: "/api/v1/display/call-types",
        body: Bytes::new(),
        status: 200,
    }
}

/// (f) An open signed over another serialisation than the body carries (a
/// space after each colon): the sandbox answers 400 with `debug` and keeps
/// the mismatch for the test page.
fn invalid_hash() -> Case {
    let signed = r#"{"event": "Normalruf","battery": 80.0,"position": "Bett 1"}"#;
    let sent = r#"{"event":"Normalruf","battery":80.0,"position":"Bett 1"}"#;
    let hash = sign_sha256(SECRET, &format!("{ADDRESS}.{CONSUMER_ID}.{signed}"));
    let body = format!(
        r#"{{"target":"{ADDRESS}","consumer":"{CONSUMER_ID}","hash":"{hash}","data":{sent}}}"#
    );
    Case::post(Endpoint::Display, "/api/v1/display", body, 400)
}

/// Polls a future once with a waker that does nothing: the in-memory path
/// never waits, so this drives a request without any runtime.
fn poll_once<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the in-memory request path never waits"),
    }
}

/// Serves a case once and checks its answer, so a broken case fails loudly
/// instead of timing an error path.
fn check(state: &AppState, name: &str, case: &Case) {
    let response: ApiResponse = poll_once(serve_endpoint(state, case.endpoint, case.request()));
    let body: serde_json::Value =
        serde_json::from_str(response.body()).expect("the answer is JSON");
    assert_eq!(
        response.status().as_u16(),
        case.status,
        "{name}: unexpected answer {body}"
    );
    let ok = match name {
        "display_open" => body["data"]["type"]["name"] == "Normalruf",
        "display_close" => body["data"]
            .as_array()
            .is_some_and(|calls| calls.len() == 1),
        "element_single" => body["data"]["battery"] == 75.5,
        "element_multi_100" => body["data"]
            .as_array()
            .is_some_and(|items| items.len() == MULTI_ITEMS),
        "call_types" => body["data"].as_object().is_some_and(|m| m.len() == 10),
        "display_invalid_hash_sandbox" => body["debug"].is_object(),
        _ => true,
    };
    assert!(ok, "{name}: unexpected body {body}");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
}

fn request_path(c: &mut Criterion) {
    let production = state(Mode::Production);
    let sandbox = state(Mode::Sandbox);
    let cases = [
        ("display_open", &production, display_open()),
        ("display_close", &production, display_close()),
        ("element_single", &production, element_single()),
        ("element_multi_100", &production, element_multi()),
        ("call_types", &production, call_types()),
        ("display_invalid_hash_sandbox", &sandbox, invalid_hash()),
    ];
    let rt = runtime();
    let mut group = c.benchmark_group("request_path");
    for (name, state, case) in &cases {
        check(state, name, case);
        group.bench_function(*name, |b| {
            b.to_async(&rt).iter_batched(
                || case.request(),
                |request| serve_endpoint(state, case.endpoint, request),
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();
}

/// What driving the handlers through the runtime costs: the signed open
/// polled once without a runtime (compare with `request_path/display_open`),
/// and the runtime and harness alone with a request that is only handed back.
fn overhead(c: &mut Criterion) {
    let production = state(Mode::Production);
    let case = display_open();
    let rt = runtime();
    let mut group = c.benchmark_group("overhead");
    group.bench_function("display_open_polled_without_runtime", |b| {
        b.iter_batched(
            || case.request(),
            |request| poll_once(serve_endpoint(&production, case.endpoint, request)),
            BatchSize::PerIteration,
        );
    });
    group.bench_function("runtime_only", |b| {
        b.to_async(&rt).iter_batched(
            || case.request(),
            |request| async move { black_box(request) },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

/// The signed open with the functions' JSON log subscriber (RUST_LOG=info)
/// writing its two lines to a sink: what logging adds in-process.
fn context(c: &mut Criterion) {
    let production = state(Mode::Production);
    let case = display_open();
    let rt = runtime();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(false)
        .with_target(true)
        .with_ansi(false)
        .with_writer(std::io::sink)
        .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);
    let mut group = c.benchmark_group("context");
    group.bench_function("display_open_logged", |b| {
        b.to_async(&rt).iter_batched(
            || case.request(),
            |request| serve_endpoint(&production, case.endpoint, request),
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

criterion_group!(benches, request_path, overhead, context);
criterion_main!(benches);
