//! A fault-injecting HTTP proxy between the service and moto: what the
//! network and DynamoDB do to a request now and then, at a chosen rate.
//!
//! Every DynamoDB request the service sends (plain HTTP/1.1, JSON protocol,
//! the operation in `X-Amz-Target`) is read whole, then either forwarded to
//! moto as it is, or given one [`Fault`]: answered with DynamoDB's own error
//! (the wire format the SDK parses: status, `Content-Type:
//! application/x-amz-json-1.0`, `__type` and `message` in the body), its
//! connection reset before or after moto saw it, or held past the SDK's
//! attempt timeout. The choice is a seeded random draw per request, so a
//! run's sequence of faults is the same every time (which request of the
//! concurrent load meets it is not).
//!
//! Each accepted socket has `SO_LINGER` 0: closing it sends a TCP reset, as a
//! load balancer dropping a connection does, instead of an orderly close. A
//! reset is the service future's error: hyper then drops the connection
//! without writing an answer.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// What the proxy does to a request instead of simply forwarding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Fault {
    /// 400 `ThrottlingException`, not forwarded.
    Throttling,
    /// 400 `ProvisionedThroughputExceededException`, not forwarded.
    ThroughputExceeded,
    /// 500 `InternalServerError` after forwarding: DynamoDB's 500 says the
    /// request may have succeeded, and here it did.
    InternalServerError,
    /// 400 `TransactionCanceledException`, every item's reason
    /// `TransactionConflict` (another transaction held an item), not
    /// forwarded. `TransactWriteItems` only.
    TransactionConflict,
    /// The connection reset before moto saw the request.
    ResetBeforeForwarding,
    /// Forwarded, moto's answer dropped and the connection reset: the write
    /// happened, the service does not know.
    ResetAfterForwarding,
    /// Held past the SDK's attempt timeout, never forwarded.
    StallBeforeForwarding,
    /// Forwarded at once, the answer held past the SDK's attempt timeout and
    /// then dropped: the write happened, the answer came too late.
    StallAfterForwarding,
}

impl Fault {
    pub(crate) const ALL: [Fault; 8] = [
        Fault::Throttling,
        Fault::ThroughputExceeded,
        Fault::InternalServerError,
        Fault::TransactionConflict,
        Fault::ResetBeforeForwarding,
        Fault::ResetAfterForwarding,
        Fault::StallBeforeForwarding,
        Fault::StallAfterForwarding,
    ];

    /// Whether the fault can happen to `operation` (`TransactWriteItems`, …).
    fn applies_to(self, operation: &str) -> bool {
        self != Fault::TransactionConflict || operation == "TransactWriteItems"
    }
}

/// Which requests get a fault: each with probability `rate`, its kind drawn
/// from `kinds` by their weights (among those that apply to the operation).
/// A plan of one kind injects it at `rate`.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub rate: f64,
    pub kinds: Vec<(Fault, u32)>,
    /// How long a stall holds a request: longer than the SDK's attempt timeout.
    pub stall: Duration,
    pub seed: u64,
    /// Only requests of this operation (`TransactWriteItems`) meet faults.
    pub only: Option<&'static str>,
}

/// What the proxy saw and did so far.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tally {
    /// DynamoDB requests received, by operation.
    pub requests: BTreeMap<String, u64>,
    /// Requests forwarded to moto (those answered by a fault included).
    pub forwarded: u64,
    /// Faults injected, by kind.
    pub faults: BTreeMap<Fault, u64>,
    /// Faults injected, by operation.
    pub faults_by_operation: BTreeMap<String, u64>,
    /// How long moto took to answer each forwarded request, in order.
    pub upstream_times: Vec<Duration>,
}

impl Tally {
    pub(crate) fn requests_total(&self) -> u64 {
        self.requests.values().sum()
    }

    pub(crate) fn faults_total(&self) -> u64 {
        self.faults.values().sum()
    }

    /// The `share` quantile (0.5, 0.99, 1.0) of moto's answer times.
    pub(crate) fn upstream_quantile(&self, share: f64) -> Duration {
        let mut times = self.upstream_times.clone();
        times.sort();
        let last = times.len().saturating_sub(1);
        times
            .get(((last as f64) * share).round() as usize)
            .copied()
            .unwrap_or_default()
    }
}

struct Shared {
    upstream: String,
    client: reqwest::Client,
    plan: Mutex<Option<(Plan, StdRng)>>,
    tally: Mutex<Tally>,
}

/// The proxy, listening on a free loopback port until dropped.
pub(crate) struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

/// The service future's error: the connection is dropped without an answer.
#[derive(Debug)]
struct Reset;

impl std::fmt::Display for Reset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection reset by the fault proxy")
    }
}

impl std::error::Error for Reset {}

impl FaultProxy {
    /// A proxy in front of `upstream` (moto's URL), forwarding everything
    /// until [`FaultProxy::inject`] is called.
    pub(crate) async fn start(upstream: &str) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port for the proxy");
        let addr = listener.local_addr().expect("the proxy's address");
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_string(),
            client: reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(60))
                .build()
                .expect("HTTP client"),
            plan: Mutex::new(None),
            tally: Mutex::new(Tally::default()),
        });
        let accept = {
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    // A reset, not an orderly close, whenever the proxy drops
                    // a connection (see the module's comment).
                    let _ = stream.set_zero_linger();
                    let shared = Arc::clone(&shared);
                    tokio::spawn(async move {
                        let service = service_fn(move |request| {
                            let shared = Arc::clone(&shared);
                            async move { shared.handle(request).await }
                        });
                        // An error is a reset of ours or the client going
                        // away: either way the connection is over.
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            })
        };
        FaultProxy {
            addr,
            shared,
            accept,
        }
    }

    /// `http://127.0.0.1:PORT`, the endpoint to give the service.
    pub(crate) fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Injects faults by `plan` from now on; `None` forwards everything.
    pub(crate) fn inject(&self, plan: Option<Plan>) {
        *self.shared.plan.lock().expect("plan lock") = plan.map(|plan| {
            let rng = StdRng::seed_from_u64(plan.seed);
            (plan, rng)
        });
    }

    pub(crate) fn tally(&self) -> Tally {
        self.shared.tally.lock().expect("tally lock").clone()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Shared {
    async fn handle(&self, request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Reset> {
        let (parts, body) = request.into_parts();
        let body = body.collect().await.map_err(|_| Reset)?.to_bytes();
        let operation = parts
            .headers
            .get("x-amz-target")
            .and_then(|target| target.to_str().ok())
            .and_then(|target| target.rsplit('.').next())
            .unwrap_or("(none)")
            .to_string();
        let (fault, stall) = self.draw(&operation);
        let Some(fault) = fault else {
            return self.forward(&parts, body).await;
        };
        match fault {
            Fault::Throttling => Ok(error(
                StatusCode::BAD_REQUEST,
                "ThrottlingException",
                json!({"message": "Rate of requests exceeds the allowed throughput."}),
            )),
            Fault::ThroughputExceeded => Ok(error(
                StatusCode::BAD_REQUEST,
                "ProvisionedThroughputExceededException",
                json!({"message": "The level of configured provisioned throughput for the \
                                   table was exceeded. Consider increasing your provisioning \
                                   level with the UpdateTable API."}),
            )),
            Fault::InternalServerError => {
                self.forward(&parts, body).await?;
                Ok(error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "InternalServerError",
                    json!({"message": "Internal server error"}),
                ))
            }
            Fault::TransactionConflict => {
                // One reason per item of the request, as DynamoDB answers.
                let items = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|request| request["TransactItems"].as_array().map(Vec::len))
                    .unwrap_or(1);
                let reasons = vec![
                    json!({
                        "Code": "TransactionConflict",
                        "Message": "Transaction is ongoing for the item"
                    });
                    items
                ];
                let codes = vec!["TransactionConflict"; items].join(", ");
                Ok(error(
                    StatusCode::BAD_REQUEST,
                    "TransactionCanceledException",
                    json!({
                        "Message": format!(
                            "Transaction cancelled, please refer cancellation reasons for \
                             specific reasons [{codes}]"
                        ),
                        "CancellationReasons": reasons,
                    }),
                ))
            }
            Fault::ResetBeforeForwarding => Err(Reset),
            Fault::ResetAfterForwarding => {
                self.forward(&parts, body).await?;
                Err(Reset)
            }
            Fault::StallBeforeForwarding => {
                tokio::time::sleep(stall).await;
                Err(Reset)
            }
            Fault::StallAfterForwarding => {
                self.forward(&parts, body).await?;
                tokio::time::sleep(stall).await;
                Err(Reset)
            }
        }
    }

    /// Counts the request and draws its fault, if any, with the stall time.
    fn draw(&self, operation: &str) -> (Option<Fault>, Duration) {
        let mut plan = self.plan.lock().expect("plan lock");
        let drawn = plan.as_mut().and_then(|(plan, rng)| {
            if plan.only.is_some_and(|only| only != operation) || !rng.random_bool(plan.rate) {
                return None;
            }
            let kinds: Vec<(Fault, u32)> = plan
                .kinds
                .iter()
                .copied()
                .filter(|(kind, _)| kind.applies_to(operation))
                .collect();
            kinds
                .choose_weighted(rng, |(_, weight)| *weight)
                .ok()
                .map(|(kind, _)| (*kind, plan.stall))
        });
        drop(plan);
        let mut tally = self.tally.lock().expect("tally lock");
        *tally.requests.entry(operation.to_string()).or_default() += 1;
        if let Some((fault, _)) = drawn {
            *tally.faults.entry(fault).or_default() += 1;
            *tally
                .faults_by_operation
                .entry(operation.to_string())
                .or_default() += 1;
        }
        (
            drawn.map(|(fault, _)| fault),
            drawn.map_or(Duration::ZERO, |(_, stall)| stall),
        )
    }

    /// Sends the request to moto and returns its answer as it came. moto
    /// unreachable is a reset too.
    async fn forward(
        &self,
        parts: &hyper::http::request::Parts,
        body: Bytes,
    ) -> Result<Response<Full<Bytes>>, Reset> {
        let path = parts.uri.path_and_query().map_or("/", |path| path.as_str());
        let mut request = self
            .client
            .request(parts.method.clone(), format!("{}{path}", self.upstream))
            .body(body);
        for (name, value) in &parts.headers {
            // The client sets these itself for its own connection.
            if !matches!(
                name.as_str(),
                "host" | "content-length" | "connection" | "transfer-encoding"
            ) {
                request = request.header(name, value);
            }
        }
        let started = Instant::now();
        let answer = request.send().await.map_err(|_| Reset)?;
        let status = answer.status();
        let headers = answer.headers().clone();
        let body = answer.bytes().await.map_err(|_| Reset)?;
        {
            let mut tally = self.tally.lock().expect("tally lock");
            tally.forwarded += 1;
            tally.upstream_times.push(started.elapsed());
        }
        let mut response = Response::new(Full::new(body));
        *response.status_mut() = status;
        for (name, value) in &headers {
            if !matches!(
                name.as_str(),
                "content-length" | "connection" | "transfer-encoding"
            ) {
                response.headers_mut().append(name, value.clone());
            }
        }
        Ok(response)
    }
}

/// A DynamoDB error answer: the code in `__type` with DynamoDB's namespace,
/// the rest of `fields` beside it.
fn error(status: StatusCode, code: &str, mut fields: Value) -> Response<Full<Bytes>> {
    fields["__type"] = json!(format!("com.amazonaws.dynamodb.v20120810#{code}"));
    let mut response = Response::new(Full::new(Bytes::from(fields.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        "content-type",
        "application/x-amz-json-1.0"
            .parse()
            .expect("a header value"),
    );
    response.headers_mut().insert(
        "x-amzn-requestid",
        "FAULTPROXY0000000000000000000000000000000000000000"
            .parse()
            .expect("a header value"),
    );
    response
}
