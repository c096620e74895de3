//! The Web Push service of the push tests: `web-push-testing` (npm, pinned
//! in tests/push/package.json, installed by scripts/test), a stand-in that
//! nobody here wrote. It makes subscriptions like a browser's push service
//! (`POST /subscribe`), takes pushes at `/notify/<client hash>`, checks
//! their VAPID signature and **decrypts** them (RFC 8291), and hands the
//! plain texts back (`POST /get-notifications`); `POST
//! /expire-subscription/<hash>` makes it answer 410 from then on.
//!
//! It keeps neither the headers of a push nor can it answer 429, so a small
//! recording proxy sits in front of it ([`Recorder`]): the subscriptions'
//! endpoints point at the proxy, which notes each push's `TTL`, `Urgency`
//! and `Topic`, answers 429 when told to, and otherwise forwards the push
//! unchanged and returns the stand-in's answer.
//!
//! And a staff member's browser registering with the service: the push key,
//! a subscription at the stand-in, its registration and the sign-on test it
//! gets ([`register`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use blackbox_tests::Server;
use serde_json::{Value, json};

use crate::alarms_support::{Member, as_staff};

pub(crate) const PUSH_KEY: &str = "/api/v1/staff/push-key";
pub(crate) const SUBSCRIPTIONS: &str = "/api/v1/staff/push-subscriptions";
/// The `Topic` of the sign-on tests (DECISIONS §18: about no call, id 0).
pub(crate) const TEST_TOPIC: &str = "call-0";
/// How long the registration's sign-on test may take to arrive.
const TEST_WAIT: Duration = Duration::from_secs(10);

/// `web-push-testing`'s own server, in the foreground (its `start` command
/// detaches a process the test could not stop).
pub(crate) struct PushService {
    child: tokio::process::Child,
    url: String,
    client: reqwest::Client,
}

impl Drop for PushService {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

fn package_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("push/node_modules/web-push-testing")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

/// A browser's subscription as the stand-in made it.
#[derive(Debug, Clone)]
pub(crate) struct Subscription {
    /// The stand-in's name of it: its endpoint is
    /// `http://localhost:P/notify/<hash>` (the tests point theirs at the
    /// recorder instead).
    pub client_hash: String,
    pub p256dh: String,
    pub auth: String,
}

impl PushService {
    pub(crate) async fn start() -> PushService {
        let server = package_dir().join("src/bin/server.js");
        assert!(
            server.exists(),
            "{} is missing: run `npm ci` in tests/push (scripts/test does)",
            server.display()
        );
        let port = free_port();
        let child = tokio::process::Command::new("node")
            .arg(&server)
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs web-push-testing");
        let service = PushService {
            child,
            url: format!("http://localhost:{port}"),
            client: reqwest::Client::new(),
        };
        let started = Instant::now();
        while service.post("/status", json!({})).await.is_none() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "web-push-testing did not start on port {port}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        service
    }

    async fn post(&self, path: &str, body: Value) -> Option<(u16, Value)> {
        let response = self
            .client
            .post(format!("{}{path}", self.url))
            .json(&body)
            .send()
            .await
            .ok()?;
        let status = response.status().as_u16();
        let body = response.json().await.unwrap_or(Value::Null);
        Some((status, body))
    }

    /// A browser subscribing with the service's VAPID public key.
    pub(crate) async fn subscribe(&self, application_server_key: &str) -> Subscription {
        // web-push-testing takes `userVisibleOnly` as the string "true".
        let (status, body) = self
            .post(
                "/subscribe",
                json!({"userVisibleOnly": "true", "applicationServerKey": application_server_key}),
            )
            .await
            .expect("the stand-in answers");
        assert_eq!(status, 200, "subscribe: {body}");
        let data = &body["data"];
        Subscription {
            client_hash: data["clientHash"].as_str().expect("clientHash").into(),
            p256dh: data["keys"]["p256dh"].as_str().expect("p256dh").into(),
            auth: data["keys"]["auth"].as_str().expect("auth").into(),
        }
    }

    /// From now on the stand-in answers pushes to this subscription 410.
    pub(crate) async fn expire(&self, subscription: &Subscription) {
        let (status, _) = self
            .post(
                &format!("/expire-subscription/{}", subscription.client_hash),
                json!({}),
            )
            .await
            .expect("the stand-in answers");
        assert_eq!(status, 200);
    }

    /// The pushes it decrypted for this subscription, in arrival order, as JSON.
    pub(crate) async fn decrypted(&self, subscription: &Subscription) -> Vec<Value> {
        let (status, body) = self
            .post(
                "/get-notifications",
                json!({"clientHash": subscription.client_hash}),
            )
            .await
            .expect("the stand-in answers");
        assert_eq!(status, 200, "get-notifications: {body}");
        body["data"]["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|text| {
                serde_json::from_str(text.as_str().expect("a text"))
                    .unwrap_or_else(|e| panic!("a push that is no JSON ({e}): {text}"))
            })
            .collect()
    }

    /// Waits (up to `within`) until `count` of the alarm's pushes (alerts
    /// and cancels: not the sign-on tests, [`PushService::wait_for_tests`])
    /// were decrypted.
    pub(crate) async fn wait_for(
        &self,
        subscription: &Subscription,
        count: usize,
        within: Duration,
    ) -> Vec<Value> {
        self.wait_for_kind(subscription, count, within, false).await
    }

    /// Waits (up to `within`) until `count` sign-on tests (`staff.test`,
    /// DECISIONS §18) were decrypted.
    pub(crate) async fn wait_for_tests(
        &self,
        subscription: &Subscription,
        count: usize,
        within: Duration,
    ) -> Vec<Value> {
        self.wait_for_kind(subscription, count, within, true).await
    }

    async fn wait_for_kind(
        &self,
        subscription: &Subscription,
        count: usize,
        within: Duration,
        tests: bool,
    ) -> Vec<Value> {
        let started = Instant::now();
        loop {
            let messages: Vec<Value> = self
                .decrypted(subscription)
                .await
                .into_iter()
                .filter(|message| (message["type"] == "staff.test") == tests)
                .collect();
            if messages.len() >= count || started.elapsed() > within {
                return messages;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

/// One push as the proxy saw it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub client_hash: String,
    pub at: Instant,
    pub ttl: Option<String>,
    pub urgency: Option<String>,
    pub topic: Option<String>,
    /// What the sender got back.
    pub status: u16,
}

#[derive(Default)]
struct Shared {
    seen: Mutex<Vec<Seen>>,
    /// Pushes still to be answered 429 (Too Many Requests).
    throttle: Mutex<usize>,
}

/// The recording proxy in front of the stand-in.
pub(crate) struct Recorder {
    address: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.server.abort();
    }
}

#[derive(Clone)]
struct Forward {
    shared: Arc<Shared>,
    target: String,
    client: reqwest::Client,
}

async fn notify(
    State(forward): State<Forward>,
    Path(client_hash): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, Bytes) {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let mut seen = Seen {
        client_hash: client_hash.clone(),
        at: Instant::now(),
        ttl: header("ttl"),
        urgency: header("urgency"),
        topic: header("topic"),
        status: 429,
    };
    let throttled = {
        let mut throttle = forward.shared.throttle.lock().unwrap();
        let throttled = *throttle > 0;
        *throttle = throttle.saturating_sub(1);
        throttled
    };
    let answer = if throttled {
        (StatusCode::TOO_MANY_REQUESTS, Bytes::new())
    } else {
        let mut request = forward
            .client
            .post(format!("{}/notify/{client_hash}", forward.target));
        for name in [
            "ttl",
            "content-encoding",
            "content-type",
            "authorization",
            "urgency",
            "topic",
        ] {
            if let Some(value) = headers.get(name) {
                request = request.header(name, value.clone());
            }
        }
        match request.body(body).send().await {
            Ok(response) => {
                let status = StatusCode::from_u16(response.status().as_u16())
                    .unwrap_or(StatusCode::BAD_GATEWAY);
                (status, response.bytes().await.unwrap_or_default())
            }
            Err(_) => (StatusCode::BAD_GATEWAY, Bytes::new()),
        }
    };
    seen.status = answer.0.as_u16();
    forward.shared.seen.lock().unwrap().push(seen);
    answer
}

impl Recorder {
    pub(crate) async fn start(service: &PushService) -> Recorder {
        let shared = Arc::new(Shared::default());
        let forward = Forward {
            shared: shared.clone(),
            target: service.url.clone(),
            client: reqwest::Client::new(),
        };
        let app = Router::new()
            .route("/notify/{hash}", post(notify))
            .with_state(forward);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port for the recorder");
        let address = listener.local_addr().expect("its address");
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Recorder {
            address,
            shared,
            server,
        }
    }

    /// The subscription's endpoint, pointed at this proxy: by the name
    /// `localhost`, the loopback host the tests' `PUSH_SERVICES` lists
    /// (`TEST_PUSH_SERVICES`).
    pub(crate) fn endpoint_of(&self, subscription: &Subscription) -> String {
        format!(
            "http://localhost:{}/notify/{}",
            self.address.port(),
            subscription.client_hash
        )
    }

    /// The next `count` pushes are answered 429.
    pub(crate) fn throttle(&self, count: usize) {
        *self.shared.throttle.lock().unwrap() = count;
    }

    /// The alarm's pushes to this subscription as the proxy saw them (the
    /// sign-on tests, `Topic: call-0`, left out).
    pub(crate) fn seen(&self, subscription: &Subscription) -> Vec<Seen> {
        self.shared
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|seen| seen.client_hash == subscription.client_hash)
            .filter(|seen| seen.topic.as_deref() != Some(TEST_TOPIC))
            .cloned()
            .collect()
    }
}

/// `GET /api/v1/staff/push-key` as `member`: the VAPID public key.
pub(crate) async fn push_key(server: &Server, member: &Member) -> String {
    let response = as_staff(server, reqwest::Method::GET, PUSH_KEY, &member.token, None).await;
    response.expect_status(200);
    response.data()["public_key"]
        .as_str()
        .expect("public_key")
        .to_string()
}

/// A browser of `member` subscribes at the stand-in and registers the
/// subscription (its endpoint pointed at the recorder) with the service.
pub(crate) async fn register(
    server: &Server,
    service: &PushService,
    recorder: &Recorder,
    member: &Member,
) -> Subscription {
    let subscription = service.subscribe(&push_key(server, member).await).await;
    // What a browser's `PushSubscription.toJSON()` gives.
    let body = json!({
        "endpoint": recorder.endpoint_of(&subscription),
        "expirationTime": null,
        "keys": {"p256dh": subscription.p256dh, "auth": subscription.auth},
    })
    .to_string();
    let response = as_staff(
        server,
        reqwest::Method::POST,
        SUBSCRIPTIONS,
        &member.token,
        Some(&body),
    )
    .await;
    response.expect_status(201);
    assert_eq!(
        response.data()["endpoint"].as_str(),
        Some(recorder.endpoint_of(&subscription).as_str())
    );
    subscription
}

/// [`register`], then the sign-on test the new phone gets at once (DECISIONS
/// §18) waited for, so that what a test pushes next comes after it (the
/// local server's sender; in AWS the test leaves by another path).
pub(crate) async fn register_tested(
    server: &Server,
    service: &PushService,
    recorder: &Recorder,
    member: &Member,
) -> Subscription {
    let subscription = register(server, service, recorder, member).await;
    let tests = service.wait_for_tests(&subscription, 1, TEST_WAIT).await;
    assert_eq!(tests.len(), 1, "the registration's sign-on test: {tests:?}");
    subscription
}
